//! The Zarr v3 core data types and their fill values.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/data-types/index.html>.
//! In memory, every decoded element is kept as little-endian bytes in C order; the
//! `bytes` codec is the only place that deals with stored byte order.
//!
//! `string` (zarr-extensions `data-types/string`) is the one variable-length type: its
//! elements are UTF-8 text, decoded by the `vlen-utf8` codec on a path of its own
//! ([`crate::read::strings`]); the fixed-size engine never sees it.

use serde_json::Value;

use crate::zarr::json::MetadataError;

/// A core Zarr v3 data type (`complex_float32`/`complex_float64` are accepted as aliases),
/// or the variable-length `string`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float16,
    Float32,
    Float64,
    Complex64,
    Complex128,
    /// Variable-length UTF-8 text (`vlen-utf8`); its fill value is kept as UTF-8 bytes.
    String,
}

impl DataType {
    /// Parses the `data_type` member of an array's `zarr.json`.
    pub fn from_json(value: &Value) -> Result<Self, MetadataError> {
        let name = match value {
            Value::String(s) => s.as_str(),
            Value::Object(o) => match o.get("name") {
                Some(Value::String(s)) => s.as_str(),
                _ => {
                    return Err(MetadataError::invalid("data_type", "an object without a string `name`"));
                }
            },
            _ => {
                return Err(MetadataError::invalid("data_type", "neither a string nor an object"));
            }
        };
        Ok(match name {
            "bool" => Self::Bool,
            "int8" => Self::Int8,
            "int16" => Self::Int16,
            "int32" => Self::Int32,
            "int64" => Self::Int64,
            "uint8" => Self::UInt8,
            "uint16" => Self::UInt16,
            "uint32" => Self::UInt32,
            "uint64" => Self::UInt64,
            "float16" => Self::Float16,
            "float32" => Self::Float32,
            "float64" => Self::Float64,
            "complex64" | "complex_float32" => Self::Complex64,
            "complex128" | "complex_float64" => Self::Complex128,
            "string" => Self::String,
            other => return Err(MetadataError::Unsupported(format!("data type `{other}`"))),
        })
    }

    /// The Zarr v3 name, as used in the `Zarr-Data-Type` header.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Int8 => "int8",
            Self::Int16 => "int16",
            Self::Int32 => "int32",
            Self::Int64 => "int64",
            Self::UInt8 => "uint8",
            Self::UInt16 => "uint16",
            Self::UInt32 => "uint32",
            Self::UInt64 => "uint64",
            Self::Float16 => "float16",
            Self::Float32 => "float32",
            Self::Float64 => "float64",
            Self::Complex64 => "complex64",
            Self::Complex128 => "complex128",
            Self::String => "string",
        }
    }

    /// Whether elements have no fixed size (and so go through [`crate::read::strings`]).
    pub fn is_variable(self) -> bool {
        self == Self::String
    }

    /// Bytes per element; 0 for `string`, whose elements have no fixed size (callers of the
    /// fixed-size engine check [`Self::is_variable`] first).
    pub fn size(self) -> usize {
        match self {
            Self::String => 0,
            Self::Bool | Self::Int8 | Self::UInt8 => 1,
            Self::Int16 | Self::UInt16 | Self::Float16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64 | Self::UInt64 | Self::Float64 | Self::Complex64 => 8,
            Self::Complex128 => 16,
        }
    }

    /// The unit whose byte order the `bytes` codec swaps: a complex number is two floats.
    pub fn swap_unit(self) -> usize {
        match self {
            Self::Complex64 | Self::Complex128 => self.size() / 2,
            _ => self.size(),
        }
    }

    /// The `NumPy` `descr` of the little-endian form (what `.npy` headers carry).
    pub fn npy_descr(self) -> &'static str {
        match self {
            Self::Bool => "|b1",
            Self::Int8 => "|i1",
            Self::Int16 => "<i2",
            Self::Int32 => "<i4",
            Self::Int64 => "<i8",
            Self::UInt8 => "|u1",
            Self::UInt16 => "<u2",
            Self::UInt32 => "<u4",
            Self::UInt64 => "<u8",
            Self::Float16 => "<f2",
            Self::Float32 => "<f4",
            Self::Float64 => "<f8",
            Self::Complex64 => "<c8",
            Self::Complex128 => "<c16",
            // Never written: a string result's descr depends on its longest element.
            Self::String => "|O",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Self::Float16 | Self::Float32 | Self::Float64)
    }

    pub fn is_complex(self) -> bool {
        matches!(self, Self::Complex64 | Self::Complex128)
    }

    /// Parses a `fill_value` into its little-endian element bytes.
    pub fn parse_fill_value(self, value: &Value) -> Result<Vec<u8>, MetadataError> {
        let bad = |why: &str| {
            MetadataError::invalid("fill_value", &format!("{value} is not a valid {} fill value: {why}", self.name()))
        };
        match self {
            Self::String => match value {
                Value::String(s) => Ok(s.as_bytes().to_vec()),
                _ => Err(bad("expected a JSON string")),
            },
            Self::Bool => match value {
                Value::Bool(b) => Ok(vec![u8::from(*b)]),
                _ => Err(bad("expected true or false")),
            },
            Self::Int8 | Self::Int16 | Self::Int32 | Self::Int64 => {
                let v = json_integer(value).ok_or_else(|| bad("expected an integer"))?;
                let v = i64::try_from(v).map_err(|_| bad("out of range"))?;
                let bits = self.size() * 8;
                if bits < 64 && (v < -(1i64 << (bits - 1)) || v >= (1i64 << (bits - 1))) {
                    return Err(bad("out of range"));
                }
                Ok(v.to_le_bytes()[..self.size()].to_vec())
            }
            Self::UInt8 | Self::UInt16 | Self::UInt32 | Self::UInt64 => {
                let v = json_integer(value).ok_or_else(|| bad("expected an integer"))?;
                let v = u64::try_from(v).map_err(|_| bad("out of range"))?;
                let bits = self.size() * 8;
                if bits < 64 && v >= (1u64 << bits) {
                    return Err(bad("out of range"));
                }
                Ok(v.to_le_bytes()[..self.size()].to_vec())
            }
            Self::Float16 | Self::Float32 | Self::Float64 => parse_float(value, self.size())
                .ok_or_else(|| bad("expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a 0x bit pattern")),
            Self::Complex64 | Self::Complex128 => {
                let part = self.size() / 2;
                match value {
                    Value::Array(items) if items.len() == 2 => {
                        let mut out = parse_float(&items[0], part).ok_or_else(|| bad("bad real part"))?;
                        out.extend(parse_float(&items[1], part).ok_or_else(|| bad("bad imaginary part"))?);
                        Ok(out)
                    }
                    _ => Err(bad("expected [re, im]")),
                }
            }
        }
    }
}

/// An integer fill value; zarr-python also writes integral floats such as `1.0`.
fn json_integer(value: &Value) -> Option<i128> {
    let Value::Number(n) = value else { return None };
    if let Some(v) = n.as_i64() {
        return Some(i128::from(v));
    }
    if let Some(v) = n.as_u64() {
        return Some(i128::from(v));
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 2f64.powi(63)).then_some(f as i128)
}

/// A float of `size` bytes from a JSON number, a special string, or a `0x` bit pattern.
fn parse_float(value: &Value, size: usize) -> Option<Vec<u8>> {
    let from_f64 = |f: f64| -> Vec<u8> {
        match size {
            2 => half::f16::from_f64(f).to_le_bytes().to_vec(),
            4 => (f as f32).to_le_bytes().to_vec(),
            _ => f.to_le_bytes().to_vec(),
        }
    };
    match value {
        Value::Number(n) => n.as_f64().map(from_f64),
        Value::String(s) => match s.as_str() {
            // The spec's NaN is the quiet NaN with only the mantissa's top bit set.
            "NaN" => Some(from_f64(f64::NAN)),
            "Infinity" => Some(from_f64(f64::INFINITY)),
            "-Infinity" => Some(from_f64(f64::NEG_INFINITY)),
            hex => {
                let digits = hex.strip_prefix("0x")?;
                if digits.len() != size * 2 {
                    return None;
                }
                let bits = u64::from_str_radix(digits, 16).ok()?;
                Some(bits.to_le_bytes()[..size].to_vec())
            }
        },
        _ => None,
    }
}

/// One element as f64, for scaling to pixels (`None` for complex).
pub fn element_f64(b: &[u8], data_type: DataType) -> Option<f64> {
    let mut a = [0u8; 8];
    a[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    Some(match data_type {
        DataType::Bool | DataType::UInt8 => f64::from(b[0]),
        DataType::Int8 => f64::from(b[0] as i8),
        DataType::Int16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
        DataType::UInt16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
        DataType::Int32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DataType::UInt32 => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DataType::Int64 => i64::from_le_bytes(a) as f64,
        DataType::UInt64 => u64::from_le_bytes(a) as f64,
        DataType::Float16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
        DataType::Float32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DataType::Float64 => f64::from_le_bytes(a),
        DataType::Complex64 | DataType::Complex128 | DataType::String => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_names_and_aliases() {
        assert_eq!(DataType::from_json(&json!("complex_float32")).unwrap(), DataType::Complex64);
        assert_eq!(DataType::from_json(&json!({"name": "uint16"})).unwrap(), DataType::UInt16);
        assert_eq!(DataType::from_json(&json!("string")).unwrap(), DataType::String);
        assert!(matches!(DataType::from_json(&json!("variable_length_bytes")), Err(MetadataError::Unsupported(_))));
        assert_eq!(DataType::String.parse_fill_value(&json!("n/a")).unwrap(), b"n/a");
        assert!(DataType::String.parse_fill_value(&json!(0)).is_err());
    }

    #[test]
    fn float_fill_values_in_every_form() {
        let f32_bits =
            |v: &Value| u32::from_le_bytes(DataType::Float32.parse_fill_value(v).unwrap().try_into().unwrap());
        assert_eq!(f32_bits(&json!("NaN")), 0x7fc0_0000);
        assert_eq!(f32_bits(&json!("Infinity")), 0x7f80_0000);
        assert_eq!(f32_bits(&json!("-Infinity")), 0xff80_0000);
        assert_eq!(f32_bits(&json!("0x7fc00001")), 0x7fc0_0001);
        assert_eq!(f32_bits(&json!(1.5)), 1.5f32.to_bits());
        assert_eq!(DataType::Float16.parse_fill_value(&json!("0x3c00")).unwrap(), vec![0x00, 0x3c]);
        assert_eq!(DataType::Float64.parse_fill_value(&json!("NaN")).unwrap(), 0x7ff8_0000_0000_0000u64.to_le_bytes());
        // A bit pattern with the wrong width is rejected.
        assert!(DataType::Float32.parse_fill_value(&json!("0x3c00")).is_err());
    }

    #[test]
    fn integer_and_other_fill_values() {
        assert_eq!(DataType::UInt64.parse_fill_value(&json!(18_446_744_073_709_551_615u64)).unwrap(), vec![0xff; 8]);
        assert_eq!(DataType::Int16.parse_fill_value(&json!(-2)).unwrap(), vec![0xfe, 0xff]);
        assert_eq!(DataType::Int8.parse_fill_value(&json!(1.0)).unwrap(), vec![1]);
        assert!(DataType::Int8.parse_fill_value(&json!(128)).is_err());
        assert!(DataType::UInt8.parse_fill_value(&json!(-1)).is_err());
        assert!(DataType::Int8.parse_fill_value(&json!(1.5)).is_err());
        assert_eq!(DataType::Bool.parse_fill_value(&json!(true)).unwrap(), vec![1]);
        let c = DataType::Complex64.parse_fill_value(&json!([1.0, "Infinity"])).unwrap();
        assert_eq!(c[..4], 1f32.to_le_bytes());
        assert_eq!(c[4..], f32::INFINITY.to_le_bytes());
        assert!(DataType::Complex64.parse_fill_value(&json!(1.0)).is_err());
    }
}
