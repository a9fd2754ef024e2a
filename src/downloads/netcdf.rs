//! The NetCDF classic format (<https://docs.unidata.ucar.edu/netcdf-c/current/file_format_specifications.html>):
//! a header that says every dimension, attribute and variable with the byte offset of its
//! data, then each variable's values, big-endian, padded to 4 bytes, in header order. The
//! header is computed before any value is known, so the file streams: the small variables
//! (coordinates) first, the data variable last, as its bands arrive.
//!
//! 64-bit offset (CDF-2) when every type is a classic one (byte, char, short, int, float,
//! double), else CDF-5 (64-bit data: the unsigned and 64-bit integers), where every count
//! in the header is 8 bytes. No record (unlimited) dimension is written, so `numrecs` is 0
//! and every variable's data is contiguous.

/// The media type of a NetCDF file.
pub const MEDIA_TYPE: &str = "application/x-netcdf";

/// The external types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcType {
    Byte = 1,
    Char = 2,
    Short = 3,
    Int = 4,
    Float = 5,
    Double = 6,
    UByte = 7,
    UShort = 8,
    UInt = 9,
    Int64 = 10,
    UInt64 = 11,
}

impl NcType {
    pub fn size(self) -> usize {
        match self {
            Self::Byte | Self::Char | Self::UByte => 1,
            Self::Short | Self::UShort => 2,
            Self::Int | Self::Float | Self::UInt => 4,
            Self::Double | Self::Int64 | Self::UInt64 => 8,
        }
    }

    /// Whether CDF-1/2 holds it (else the file must be CDF-5).
    pub fn is_classic(self) -> bool {
        (self as u32) <= 6
    }

    /// The CDL name, for messages and docs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Byte => "byte",
            Self::Char => "char",
            Self::Short => "short",
            Self::Int => "int",
            Self::Float => "float",
            Self::Double => "double",
            Self::UByte => "ubyte",
            Self::UShort => "ushort",
            Self::UInt => "uint",
            Self::Int64 => "int64",
            Self::UInt64 => "uint64",
        }
    }
}

/// Values of one type, big-endian as the file holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct Values {
    pub nc_type: NcType,
    /// The big-endian bytes, unpadded.
    pub bytes: Vec<u8>,
}

impl Values {
    pub fn text(text: &str) -> Self {
        Self { nc_type: NcType::Char, bytes: text.as_bytes().to_vec() }
    }

    pub fn doubles(values: &[f64]) -> Self {
        Self { nc_type: NcType::Double, bytes: values.iter().flat_map(|v| v.to_be_bytes()).collect() }
    }

    pub fn ints(values: &[i32]) -> Self {
        Self { nc_type: NcType::Int, bytes: values.iter().flat_map(|v| v.to_be_bytes()).collect() }
    }

    /// Little-endian elements of `nc_type` (as zarrd decodes them), made big-endian.
    pub fn from_le(nc_type: NcType, mut le: Vec<u8>) -> Self {
        to_big_endian(&mut le, nc_type.size());
        Self { nc_type, bytes: le }
    }

    /// Elements held.
    pub fn len(&self) -> u64 {
        (self.bytes.len() / self.nc_type.size()) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Turns little-endian elements of `size` bytes into big-endian ones, in place: a loop
/// per width the compiler turns into vector byte shuffles (a download's data passes here).
pub fn to_big_endian(bytes: &mut [u8], size: usize) {
    match size {
        2 => swap_each::<2>(bytes, |b| u16::from_le_bytes(b).to_be_bytes()),
        4 => swap_each::<4>(bytes, |b| u32::from_le_bytes(b).to_be_bytes()),
        8 => swap_each::<8>(bytes, |b| u64::from_le_bytes(b).to_be_bytes()),
        _ => {}
    }
}

fn swap_each<const N: usize>(bytes: &mut [u8], swap: impl Fn([u8; N]) -> [u8; N]) {
    for element in bytes.as_chunks_mut::<N>().0 {
        *element = swap(*element);
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub name: String,
    pub len: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: String,
    /// Indices into the file's dimensions, outermost first (none: a scalar).
    pub dims: Vec<usize>,
    pub nc_type: NcType,
    pub attributes: Vec<(String, Values)>,
}

/// What a file holds, in header order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct File {
    pub dims: Vec<Dimension>,
    pub attributes: Vec<(String, Values)>,
    pub variables: Vec<Variable>,
}

/// A file being described, with the values of the variables given so far (written before
/// the ones whose values stream later), each padded to 4 bytes.
#[derive(Debug, Clone, Default)]
pub struct Leading {
    pub file: File,
    pub bytes: Vec<u8>,
}

impl Leading {
    /// Adds `variable` with its big-endian `values`.
    pub fn push(&mut self, variable: Variable, values: &[u8]) {
        self.file.variables.push(variable);
        self.bytes.extend_from_slice(values);
        self.bytes.resize(self.bytes.len() + Layout::padding(values.len() as u64), 0);
    }
}

/// Why a file cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NcError {
    #[error("NetCDF classic cannot hold a dimension of length 0 (`{0}`): select at least one element")]
    EmptyDimension(String),
    #[error("the NetCDF file would be {0} bytes, more than a file can address")]
    TooLarge(u128),
}

/// Where each variable's data lies in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The header, whole.
    pub header: Vec<u8>,
    /// Per variable: its bytes, padding included (a multiple of 4).
    pub sizes: Vec<u64>,
    /// The whole file's length.
    pub length: u64,
}

impl Layout {
    /// The padding after `bytes` of variable data.
    pub fn padding(bytes: u64) -> usize {
        (bytes.next_multiple_of(4) - bytes) as usize
    }
}

impl File {
    /// CDF-5 when a variable or attribute has a type CDF-2 lacks.
    pub fn version(&self) -> u8 {
        let classic = self
            .variables
            .iter()
            .all(|v| v.nc_type.is_classic() && v.attributes.iter().all(|(_, a)| a.nc_type.is_classic()))
            && self.attributes.iter().all(|(_, a)| a.nc_type.is_classic());
        if classic { 2 } else { 5 }
    }

    /// The bytes of variable `v`'s values, unpadded.
    pub fn data_bytes(&self, v: usize) -> u128 {
        let var = &self.variables[v];
        var.dims.iter().map(|&d| u128::from(self.dims[d].len)).product::<u128>() * var.nc_type.size() as u128
    }

    /// The header and the place of every variable's data.
    pub fn layout(&self) -> Result<Layout, NcError> {
        if let Some(empty) = self.dims.iter().find(|d| d.len == 0) {
            return Err(NcError::EmptyDimension(empty.name.clone()));
        }
        let sizes: Vec<u128> = (0..self.variables.len()).map(|v| self.data_bytes(v).next_multiple_of(4)).collect();
        let mut header = Header { version: self.version(), out: Vec::new() };
        // Written once with every `begin` 0 to learn the header's length (offsets are 8
        // bytes in both versions, so the length does not depend on them), then for real.
        header.file(self, &vec![0; sizes.len()], &sizes);
        let start = header.out.len() as u128;
        let begins: Vec<u128> = sizes
            .iter()
            .scan(start, |at, &size| {
                let begin = *at;
                *at += size;
                Some(begin)
            })
            .collect();
        let total = start + sizes.iter().sum::<u128>();
        let length = u64::try_from(total).ok().filter(|&l| l < i64::MAX as u64).ok_or(NcError::TooLarge(total))?;
        header.out.clear();
        header.file(self, &begins, &sizes);
        Ok(Layout { header: header.out, sizes: sizes.iter().map(|&s| s as u64).collect(), length })
    }
}

/// The header's writer: counts are 4 bytes in CDF-2 and 8 in CDF-5.
struct Header {
    version: u8,
    out: Vec<u8>,
}

const NC_DIMENSION: u32 = 10;
const NC_VARIABLE: u32 = 11;
const NC_ATTRIBUTE: u32 = 12;

impl Header {
    fn tag(&mut self, tag: u32) {
        self.out.extend_from_slice(&tag.to_be_bytes());
    }

    fn count(&mut self, n: u64) {
        if self.version == 5 {
            self.out.extend_from_slice(&n.to_be_bytes());
        } else {
            // CDF-2 holds counts below 2^31; larger sizes are capped by the caller.
            self.out.extend_from_slice(&(n.min(u64::from(u32::MAX)) as u32).to_be_bytes());
        }
    }

    fn padded(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
        self.out.resize(self.out.len() + Layout::padding(bytes.len() as u64), 0);
    }

    fn name(&mut self, name: &str) {
        self.count(name.len() as u64);
        self.padded(name.as_bytes());
    }

    fn attributes(&mut self, attributes: &[(String, Values)]) {
        if attributes.is_empty() {
            self.tag(0);
            self.count(0);
            return;
        }
        self.tag(NC_ATTRIBUTE);
        self.count(attributes.len() as u64);
        for (name, values) in attributes {
            self.name(name);
            self.tag(values.nc_type as u32);
            self.count(values.len());
            self.padded(&values.bytes);
        }
    }

    fn file(&mut self, file: &File, begins: &[u128], sizes: &[u128]) {
        self.out.extend_from_slice(&[b'C', b'D', b'F', self.version]);
        self.count(0); // numrecs: no record dimension
        if file.dims.is_empty() {
            self.tag(0);
            self.count(0);
        } else {
            self.tag(NC_DIMENSION);
            self.count(file.dims.len() as u64);
            for d in &file.dims {
                self.name(&d.name);
                self.count(d.len);
            }
        }
        self.attributes(&file.attributes);
        if file.variables.is_empty() {
            self.tag(0);
            self.count(0);
            return;
        }
        self.tag(NC_VARIABLE);
        self.count(file.variables.len() as u64);
        for ((var, &begin), &size) in file.variables.iter().zip(begins).zip(sizes) {
            self.name(&var.name);
            self.count(var.dims.len() as u64);
            for &d in &var.dims {
                self.count(d as u64);
            }
            self.attributes(&var.attributes);
            self.tag(var.nc_type as u32);
            // The format's rule for a variable too large for a 32-bit vsize: 2^32 - 1.
            let vsize = if self.version != 5 && size > 4_294_967_292 { u64::from(u32::MAX) } else { size as u64 };
            self.count(vsize);
            self.out.extend_from_slice(&(begin as u64).to_be_bytes());
        }
    }
}

/// A name as NetCDF allows it: no `/`, no control characters, no trailing spaces, a first
/// character that is alphanumeric, `_` or multi-byte UTF-8 (else `_` is put in front).
pub fn name(text: &str) -> String {
    let mut out: String =
        text.chars().map(|c| if c == '/' || c.is_control() || c == '\u{7f}' { '_' } else { c }).collect();
    out.truncate(out.trim_end_matches(' ').len());
    match out.chars().next() {
        Some(c) if c.is_alphanumeric() || c == '_' => out,
        _ => format!("_{out}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(nc_type: NcType) -> File {
        File {
            dims: vec![Dimension { name: "x".into(), len: 3 }],
            attributes: vec![("title".into(), Values::text("ab"))],
            variables: vec![Variable {
                name: "v".into(),
                dims: vec![0],
                nc_type,
                attributes: vec![("scale".into(), Values::doubles(&[0.5]))],
            }],
        }
    }

    #[test]
    fn a_cdf2_header_is_laid_out_as_the_format_says() {
        let layout = file(NcType::Short).layout().unwrap();
        let mut want = b"CDF\x02".to_vec();
        let be = |n: u32| n.to_be_bytes();
        want.extend(be(0)); // numrecs
        want.extend(be(10));
        want.extend(be(1));
        want.extend(be(1));
        want.extend(b"x\0\0\0");
        want.extend(be(3));
        want.extend(be(12));
        want.extend(be(1));
        want.extend(be(5));
        want.extend(b"title\0\0\0");
        want.extend(be(2));
        want.extend(be(2));
        want.extend(b"ab\0\0");
        want.extend(be(11));
        want.extend(be(1));
        want.extend(be(1));
        want.extend(b"v\0\0\0");
        want.extend(be(1));
        want.extend(be(0)); // dimid
        want.extend(be(12));
        want.extend(be(1));
        want.extend(be(5));
        want.extend(b"scale\0\0\0");
        want.extend(be(6));
        want.extend(be(1));
        want.extend(0.5f64.to_be_bytes());
        want.extend(be(3)); // short
        want.extend(be(8)); // vsize: 6 bytes padded to 8
        let begin = (want.len() + 8) as u64;
        want.extend(begin.to_be_bytes());
        assert_eq!(layout.header, want);
        assert_eq!(layout.sizes, [8]);
        assert_eq!(layout.length, begin + 8);
    }

    #[test]
    fn a_64_bit_type_makes_cdf5_with_8_byte_counts() {
        let f = file(NcType::UInt64);
        assert_eq!(f.version(), 5);
        let layout = f.layout().unwrap();
        assert_eq!(&layout.header[..4], b"CDF\x05");
        // numrecs, then the dimension tag and an 8-byte count.
        assert_eq!(&layout.header[4..12], &[0; 8]);
        assert_eq!(&layout.header[12..16], &10u32.to_be_bytes());
        assert_eq!(&layout.header[16..24], &1u64.to_be_bytes());
        assert_eq!(layout.sizes, [24]);
    }

    #[test]
    fn empty_dimensions_and_odd_names_are_handled() {
        let mut f = file(NcType::Byte);
        f.dims[0].len = 0;
        assert_eq!(f.layout(), Err(NcError::EmptyDimension("x".into())));
        assert_eq!(name("a/b "), "a_b");
        assert_eq!(name(".hidden"), "_.hidden");
        assert_eq!(name("0"), "0");
        assert_eq!(name(""), "_");
    }

    #[test]
    fn values_are_made_big_endian() {
        let v = Values::from_le(NcType::Int, [1i32, -2].iter().flat_map(|v| v.to_le_bytes()).collect());
        assert_eq!(v.bytes, [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(v.len(), 2);
        let short = Values::from_le(NcType::Short, 0x0102i16.to_le_bytes().to_vec());
        assert_eq!(short.bytes, [1, 2]);
        let double = Values::from_le(NcType::Double, 1.5f64.to_le_bytes().to_vec());
        assert_eq!(double.bytes, 1.5f64.to_be_bytes());
    }
}
