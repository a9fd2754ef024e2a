//! `.npy` files read independently of the server's own encoder, and the expected values
//! of regions of them.

use std::path::Path;

/// A parsed `.npy` file with its data converted to little-endian.
#[derive(Debug)]
pub struct Npy {
    /// The little-endian descr, e.g. `<f4`.
    pub descr: String,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl Npy {
    /// Bytes per element (a `U{n}` element is n UTF-32 code units; `<M8[10ms]` is 8 bytes).
    pub fn item(&self) -> usize {
        let n: usize = self.descr[2..].split('[').next().unwrap().parse().unwrap();
        if self.is_text() { 4 * n } else { n }
    }

    /// Whether this is a `NumPy` `U` (text) array.
    pub fn is_text(&self) -> bool {
        self.descr.as_bytes()[1] == b'U'
    }

    /// The unit whose byte order flips (complex numbers swap each half, text each code unit).
    fn swap_unit(&self) -> usize {
        match self.descr.as_bytes()[1] {
            b'c' => self.item() / 2,
            b'U' => 4,
            _ => self.item(),
        }
    }

    /// The elements of a `U` array in C order: each its UTF-32LE code units up to the
    /// first of the trailing NULs that pad it (`NumPy`'s own reading of `U` data).
    pub fn texts(&self) -> Vec<String> {
        assert!(self.is_text(), "{} is not a text array", self.descr);
        self.data.chunks_exact(self.item().max(1)).map(utf32_text).collect()
    }
}

/// One `U` element: UTF-32LE code units, trailing NULs dropped.
pub fn utf32_text(unit_bytes: &[u8]) -> String {
    let mut units: Vec<u32> =
        unit_bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    while units.last() == Some(&0) {
        units.pop();
    }
    units.into_iter().map(|u| char::from_u32(u).unwrap_or_else(|| panic!("{u:#x} is not a code point"))).collect()
}

/// Reads a `.npy` file (v1/v2/v3 headers, C order), independently of zarrd's encoder.
pub fn parse_npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not an npy file");
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).unwrap();
    let field = |name: &str| -> &str {
        let at = header.find(&format!("'{name}': ")).unwrap() + name.len() + 4;
        &header[at..]
    };
    let descr = field("descr").trim_start_matches('\'').split('\'').next().unwrap().to_owned();
    let fortran = field("fortran_order").starts_with("True");
    let shape_text = field("shape");
    let shape: Vec<u64> = shape_text[1..shape_text.find(')').unwrap()]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let mut npy = Npy { descr: descr.clone(), shape, data: bytes[start + header_len..].to_vec() };
    if fortran {
        // NumPy saves a Fortran-ordered array (a v2 `order: "F"` array read back) as is;
        // the tests compare C order.
        npy.data = fortran_to_c(&npy.data, &npy.shape, npy.item());
    }
    let order = descr.as_bytes()[0];
    npy.descr = format!("{}{}", if npy.item() == 1 { '|' } else { '<' }, &descr[1..]);
    if order == b'>' {
        let unit = npy.swap_unit();
        for u in npy.data.chunks_exact_mut(unit) {
            u.reverse();
        }
    }
    npy
}

/// Reorders column-major elements of `shape` into row-major order.
fn fortran_to_c(data: &[u8], shape: &[u64], item: usize) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(data.len());
    for flat in 0..n {
        // The C-order index `flat` as coordinates, then their Fortran-order offset.
        let (mut rest, mut offset, mut stride) = (flat, 0u64, 1u64);
        let mut coords = vec![0u64; shape.len()];
        for d in (0..shape.len()).rev() {
            coords[d] = rest % shape[d];
            rest /= shape[d];
        }
        for d in 0..shape.len() {
            offset += coords[d] * stride;
            stride *= shape[d];
        }
        let at = offset as usize * item;
        out.extend_from_slice(&data[at..at + item]);
    }
    out
}

/// The expected values of array `path` of the fixture set in `dir`.
pub fn expected(dir: &Path, path: &str) -> Npy {
    let file = dir.join("expected").join(format!("{}.npy", path.replace('/', "__")));
    parse_npy(&std::fs::read(file).unwrap())
}

/// The coordinates of the `flat`-th cell (C order) of a grid of `grid` cells per dimension.
pub fn unravel(flat: u64, grid: &[u64]) -> Vec<u64> {
    let mut coords = vec![0u64; grid.len()];
    let mut rest = flat;
    for d in (0..grid.len()).rev() {
        coords[d] = rest % grid[d];
        rest /= grid[d];
    }
    coords
}

/// The flat (C-order) indices, in an array of `full_shape`, of the box at `origin` of
/// `shape`, in C order.
pub fn region_indices(full_shape: &[u64], origin: &[u64], shape: &[u64]) -> Vec<u64> {
    let n: u64 = shape.iter().product();
    (0..n)
        .map(|mut flat| {
            let (mut index, mut stride) = (0, 1);
            for d in (0..shape.len()).rev() {
                index += (origin[d] + flat % shape[d]) * stride;
                flat /= shape[d];
                stride *= full_shape[d];
            }
            index
        })
        .collect()
}

/// The elements of `full` at flat `indices`.
pub fn gather(full: &Npy, indices: &[u64]) -> Vec<u8> {
    let item = full.item();
    indices.iter().flat_map(|&i| full.data[i as usize * item..(i as usize + 1) * item].iter().copied()).collect()
}
