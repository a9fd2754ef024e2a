//! Element types as numcodecs filters and Zarr v2 `dtype`s name them (`NumPy` typestrs such
//! as `<i4`, `>f8`, `|u1`), and the element reads, writes and casts the filters need. Not a
//! codec itself: the shared vocabulary of the v2 filters and the elementwise v3 codecs.

use crate::zarr::codec::error::CodecError;
use crate::zarr::data_type::DataType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int,
    UInt,
    Float,
    Complex,
}

/// A fixed-size numeric element type with its stored byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumType {
    pub kind: Kind,
    pub size: usize,
    pub big_endian: bool,
}

/// One element's value, wide enough for every type a filter reads.
#[derive(Debug, Clone, Copy)]
pub enum Scalar {
    Int(i128),
    Float(f64),
}

impl NumType {
    /// Parses a `NumPy` typestr: a byte-order character (`<`, `>`, `|`, `=`; missing means
    /// native, which is little-endian for every writer) and a numeric kind and size.
    pub fn parse(typestr: &str) -> Option<Self> {
        let (big_endian, rest) = match typestr.as_bytes().first()? {
            b'>' => (true, &typestr[1..]),
            b'<' | b'|' | b'=' => (false, &typestr[1..]),
            _ => (false, typestr),
        };
        let kind = match rest.as_bytes().first()? {
            b'b' => Kind::Bool,
            b'i' => Kind::Int,
            b'u' => Kind::UInt,
            b'f' => Kind::Float,
            b'c' => Kind::Complex,
            _ => return None,
        };
        let size: usize = rest[1..].parse().ok()?;
        let valid = match kind {
            Kind::Bool => size == 1,
            Kind::Int | Kind::UInt => matches!(size, 1 | 2 | 4 | 8),
            Kind::Float => matches!(size, 2 | 4 | 8),
            Kind::Complex => matches!(size, 8 | 16),
        };
        valid.then_some(Self { kind, size, big_endian: big_endian && size > 1 })
    }

    /// The little-endian numbers a `NumPy` type name (`int32`, `float64`, `bool`…) names.
    fn named(name: &str) -> Option<Self> {
        let data_type = DataType::from_json(&serde_json::Value::from(name)).ok()?;
        Self::of(data_type).filter(|_| data_type.name() == name)
    }

    /// The little-endian elements of a numeric or time data type (`None` for text and bytes).
    pub fn of(data_type: DataType) -> Option<Self> {
        let (kind, size) = match data_type {
            DataType::Bool => (Kind::Bool, 1),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => (Kind::Int, data_type.size()),
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => (Kind::UInt, data_type.size()),
            DataType::Float16 | DataType::Float32 | DataType::Float64 => (Kind::Float, data_type.size()),
            DataType::Complex64 | DataType::Complex128 => (Kind::Complex, data_type.size()),
            // Times are i64 counts to a filter (numcodecs sees their int64 view).
            DataType::DateTime64(_) | DataType::TimeDelta64(_) => (Kind::Int, 8),
            DataType::String | DataType::Bytes | DataType::FixedUtf32(_) | DataType::FixedBytes(_) => return None,
        };
        Some(Self { kind, size, big_endian: false })
    }

    /// The Zarr data type holding these elements.
    pub fn data_type(self) -> DataType {
        match (self.kind, self.size) {
            (Kind::Bool, _) => DataType::Bool,
            (Kind::Int, 1) => DataType::Int8,
            (Kind::Int, 2) => DataType::Int16,
            (Kind::Int, 4) => DataType::Int32,
            (Kind::Int, _) => DataType::Int64,
            (Kind::UInt, 1) => DataType::UInt8,
            (Kind::UInt, 2) => DataType::UInt16,
            (Kind::UInt, 4) => DataType::UInt32,
            (Kind::UInt, _) => DataType::UInt64,
            (Kind::Float, 2) => DataType::Float16,
            (Kind::Float, 4) => DataType::Float32,
            (Kind::Float, _) => DataType::Float64,
            (Kind::Complex, 8) => DataType::Complex64,
            (Kind::Complex, _) => DataType::Complex128,
        }
    }

    /// Reads one element (`bytes.len() == self.size`, a real type).
    pub fn read(self, bytes: &[u8]) -> Scalar {
        let mut le = [0u8; 8];
        le[..self.size].copy_from_slice(bytes);
        if self.big_endian {
            le[..self.size].reverse();
        }
        let bits = u64::from_le_bytes(le);
        match (self.kind, self.size) {
            (Kind::Int, n) => {
                let shift = 64 - 8 * n as u32;
                Scalar::Int(i128::from(((bits << shift) as i64) >> shift))
            }
            (Kind::Bool | Kind::UInt, _) => Scalar::Int(i128::from(bits)),
            (_, 2) => Scalar::Float(half::f16::from_bits(bits as u16).to_f64()),
            (_, 4) => Scalar::Float(f64::from(f32::from_bits(bits as u32))),
            _ => Scalar::Float(f64::from_bits(bits)),
        }
    }

    /// Writes one element, converting as `NumPy`'s `astype` does: integers wrap, floats
    /// round to the nearest representable value, floats become integers by truncation.
    pub fn write(self, value: Scalar, out: &mut [u8]) {
        let bits: u64 = match (self.kind, value) {
            (Kind::Bool, Scalar::Int(i)) => u64::from(i != 0),
            (Kind::Bool, Scalar::Float(f)) => u64::from(f != 0.0),
            (Kind::Int | Kind::UInt, Scalar::Int(i)) => i as u64,
            (Kind::Int | Kind::UInt, Scalar::Float(f)) => (f as i128) as u64,
            (_, v) => {
                let f = match v {
                    Scalar::Int(i) => i as f64,
                    Scalar::Float(f) => f,
                };
                match self.size {
                    2 => u64::from(half::f16::from_f64(f).to_bits()),
                    4 => u64::from((f as f32).to_bits()),
                    _ => f.to_bits(),
                }
            }
        };
        let le = bits.to_le_bytes();
        out.copy_from_slice(&le[..self.size]);
        if self.big_endian {
            out.reverse();
        }
    }

    /// The real element type a filter configuration names under `key` (`None` when
    /// absent or null): `codec` names the filter in errors.
    pub fn from_config(
        config: &serde_json::Map<String, serde_json::Value>,
        codec: &str,
        key: &str,
    ) -> Result<Option<Self>, crate::zarr::json::MetadataError> {
        use crate::zarr::json::MetadataError;
        use serde_json::Value;
        match config.get(key) {
            None | Some(Value::Null) => Ok(None),
            // A typestr (`<i4`) or, as zarr-python's v3 numcodecs configurations have it, a
            // `NumPy` type name (`int32`).
            Some(Value::String(s)) => Ok(Some(
                Self::parse(s)
                    .or_else(|| Self::named(s))
                    .ok_or_else(|| MetadataError::Unsupported(format!("{codec} `{key}` {s}")))?
                    .real(codec)?,
            )),
            Some(other) => Err(MetadataError::invalid(codec, &format!("`{key}` {other} is not a dtype string"))),
        }
    }

    /// A scalar of this (real) type as Zarr v3 metadata writes one: a JSON number, or for
    /// floats `"NaN"`, `"Infinity"`, `"-Infinity"` or a `0x` bit pattern (`None` when the
    /// value is not one of the type, or out of its range).
    pub fn scalar_of_json(self, value: &serde_json::Value) -> Option<Scalar> {
        let little = Self { big_endian: false, ..self };
        let bytes = little.data_type().parse_fill_value(value).ok()?;
        (bytes.len() == self.size).then(|| little.read(&bytes))
    }

    /// Requires a real (non-complex) type for a filter that does arithmetic.
    pub fn real(self, codec: &str) -> Result<Self, crate::zarr::json::MetadataError> {
        if self.kind == Kind::Complex {
            return Err(crate::zarr::json::MetadataError::Unsupported(format!("{codec} filter on complex values")));
        }
        Ok(self)
    }
}

/// A scalar of a codec configuration, in the element type it applies to (`f64` bits for
/// floats, so that codecs stay `Eq`): `scale_offset`'s parameters, `cast_value`'s map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Int(i128),
    Float(u64),
}

impl Param {
    /// The parameter `value` as a scalar of `ty` (zarr-python's `from_json_scalar`).
    pub fn of_json(
        value: &serde_json::Value,
        ty: NumType,
        what: &str,
        codec: &str,
    ) -> Result<Self, crate::zarr::json::MetadataError> {
        match ty.scalar_of_json(value) {
            Some(Scalar::Int(i)) => Ok(Self::Int(i)),
            Some(Scalar::Float(f)) => Ok(Self::Float(f.to_bits())),
            None => Err(crate::zarr::json::MetadataError::invalid(
                codec,
                &format!("`{what}` {value} is not a value of the array's type {}", ty.data_type().name()),
            )),
        }
    }

    pub fn scalar(self) -> Scalar {
        match self {
            Self::Int(i) => Scalar::Int(i),
            Self::Float(bits) => Scalar::Float(f64::from_bits(bits)),
        }
    }

    pub fn float(self) -> f64 {
        match self.scalar() {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
}

/// The smallest and largest values of an integer type.
pub fn int_range(ty: NumType) -> (i128, i128) {
    let bits = 8 * ty.size as u32;
    match ty.kind {
        Kind::Int => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        _ => (0, (1i128 << bits) - 1),
    }
}

/// Maps each element of `input` (of type `from`) through `f` into elements of type `to`,
/// refusing to produce more than `max_len` bytes.
pub fn map_elements(
    input: &[u8],
    from: NumType,
    to: NumType,
    max_len: usize,
    codec: &'static str,
    mut f: impl FnMut(Scalar) -> Scalar,
) -> Result<Vec<u8>, CodecError> {
    try_map_elements(input, from, to, max_len, codec, |v| Ok(f(v)))
}

/// [`map_elements`] through an `f` that may find a stored element it cannot decode (the
/// reason becomes the codec's error).
pub fn try_map_elements(
    input: &[u8],
    from: NumType,
    to: NumType,
    max_len: usize,
    codec: &'static str,
    mut f: impl FnMut(Scalar) -> Result<Scalar, String>,
) -> Result<Vec<u8>, CodecError> {
    if !input.len().is_multiple_of(from.size) {
        return Err(CodecError::corrupt(codec, format!("{} bytes is not a whole number of elements", input.len())));
    }
    let n = input.len() / from.size;
    let len = n.checked_mul(to.size).filter(|&l| l <= max_len);
    let Some(len) = len else { return Err(CodecError::TooLarge { codec, limit: max_len }) };
    let mut out = vec![0u8; len];
    for (src, dst) in input.chunks_exact(from.size).zip(out.chunks_exact_mut(to.size)) {
        to.write(f(from.read(src)).map_err(|why| CodecError::corrupt(codec, why))?, dst);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_typestrs() {
        let t = |s| NumType::parse(s).unwrap();
        assert_eq!(t("<f4"), NumType { kind: Kind::Float, size: 4, big_endian: false });
        assert_eq!(t(">i2"), NumType { kind: Kind::Int, size: 2, big_endian: true });
        assert_eq!(t("|u1").data_type(), DataType::UInt8);
        assert_eq!(t("|b1").data_type(), DataType::Bool);
        assert_eq!(t("<c8").data_type(), DataType::Complex64);
        assert_eq!(t(">c16").data_type(), DataType::Complex128);
        assert_eq!(t("<f2").data_type(), DataType::Float16);
        assert!(!t(">u1").big_endian);
        assert_eq!(NumType::named("int32"), NumType::parse("<i4"));
        assert_eq!(NumType::named("float64"), NumType::parse("<f8"));
        assert_eq!(NumType::named("string"), None);
        for bad in ["|O", "<U12", "|S4", "<M8[ns]", "<f3", "<i16", "", ">", "<x4"] {
            assert!(NumType::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn reads_and_casts_like_numpy() {
        let i2 = NumType::parse(">i2").unwrap();
        let Scalar::Int(v) = i2.read(&[0xff, 0xfe]) else { panic!() };
        assert_eq!(v, -2);
        let mut out = [0u8; 1];
        NumType::parse("|u1").unwrap().write(Scalar::Int(300), &mut out);
        assert_eq!(out, [44]);
        NumType::parse("|i1").unwrap().write(Scalar::Float(-3.9), &mut out);
        assert_eq!(out, [0xfd]);
        let mut f = [0u8; 4];
        NumType::parse("<f4").unwrap().write(Scalar::Int(3), &mut f);
        assert_eq!(f, 3f32.to_le_bytes());
    }
}
