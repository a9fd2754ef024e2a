//! The Zarr v3 core data types and their fill values.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/data-types/index.html>.
//! In memory, every decoded element is kept as little-endian bytes in C order; the
//! `bytes` codec is the only place that deals with stored byte order.
//!
//! `string` (zarr-extensions `data-types/string`) is the one variable-length type: its
//! elements are UTF-8 text, decoded by the `vlen-utf8` codec on a path of its own
//! ([`crate::read::strings`]); the fixed-size engine never sees it.
//!
//! Beyond the core types: `numpy.datetime64` and `numpy.timedelta64` (an i64 count of a
//! scaled unit, `NaT` the smallest i64), `fixed_length_utf32` (`NumPy` `U`: code points as
//! UTF-32, NUL-padded) and `null_terminated_bytes` (`NumPy` `S`: NUL-padded bytes), all of
//! fixed size, so they take the fixed-size engine like numbers.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::zarr::json::MetadataError;
use crate::zarr::time::{NAT, TimeUnit};

/// The longest fixed-size text or bytes element served, in bytes (`NumPy` allows more, but
/// no array of such elements is a sensible thing to slice over HTTP).
pub const MAX_FIXED_LENGTH: u32 = 1 << 20;

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
    /// `numpy.datetime64`: an i64 count of `unit`s since `1970-01-01T00:00`, `NaT` = `i64::MIN`.
    DateTime64(TimeUnit),
    /// `numpy.timedelta64`: an i64 count of `unit`s, `NaT` = `i64::MIN`.
    TimeDelta64(TimeUnit),
    /// `fixed_length_utf32` (`NumPy` `<U{n}`): n code points, UTF-32 LE in memory.
    FixedUtf32(u32),
    /// `null_terminated_bytes` (`NumPy` `|S{n}`): n bytes, trailing NULs not part of the value.
    FixedBytes(u32),
    /// `variable_length_bytes` (`vlen-bytes`): variable-length bytes, read like `string`.
    Bytes,
}

impl DataType {
    /// Parses the `data_type` member of an array's `zarr.json`.
    pub fn from_json(value: &Value) -> Result<Self, MetadataError> {
        let (name, config) = match value {
            Value::String(s) => (s.as_str(), None),
            Value::Object(o) => match o.get("name") {
                Some(Value::String(s)) => (s.as_str(), o.get("configuration").and_then(Value::as_object)),
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
            "numpy.datetime64" => Self::DateTime64(TimeUnit::from_config(config, name)?),
            "numpy.timedelta64" => Self::TimeDelta64(TimeUnit::from_config(config, name)?),
            "fixed_length_utf32" => {
                let bytes = length_bytes(config, name)?;
                if bytes % 4 != 0 {
                    return Err(MetadataError::Unsupported(format!(
                        "{name} length_bytes {bytes} (a multiple of 4: UTF-32 code points)"
                    )));
                }
                Self::FixedUtf32(bytes / 4)
            }
            "null_terminated_bytes" => Self::FixedBytes(length_bytes(config, name)?),
            "variable_length_bytes" => Self::Bytes,
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
            Self::DateTime64(_) => "numpy.datetime64",
            Self::TimeDelta64(_) => "numpy.timedelta64",
            Self::FixedUtf32(_) => "fixed_length_utf32",
            Self::FixedBytes(_) => "null_terminated_bytes",
            Self::Bytes => "variable_length_bytes",
        }
    }

    /// The `data_type` member of a v3 `zarr.json`: the name, with its configuration for
    /// the types that have one.
    pub fn to_v3_json(self) -> Value {
        match self {
            Self::DateTime64(u) | Self::TimeDelta64(u) => json!({"name": self.name(),
                "configuration": {"unit": u.unit.name(), "scale_factor": u.scale}}),
            Self::FixedUtf32(n) => json!({"name": self.name(), "configuration": {"length_bytes": u64::from(n) * 4}}),
            Self::FixedBytes(n) => json!({"name": self.name(), "configuration": {"length_bytes": n}}),
            _ => json!(self.name()),
        }
    }

    /// The time unit of a datetime or timedelta.
    pub fn time_unit(self) -> Option<TimeUnit> {
        match self {
            Self::DateTime64(u) | Self::TimeDelta64(u) => Some(u),
            _ => None,
        }
    }

    /// Whether elements are real numbers that can be drawn as pixels (not complex, times,
    /// text or bytes).
    pub fn is_real_number(self) -> bool {
        matches!(
            self,
            Self::Bool
                | Self::Int8
                | Self::Int16
                | Self::Int32
                | Self::Int64
                | Self::UInt8
                | Self::UInt16
                | Self::UInt32
                | Self::UInt64
                | Self::Float16
                | Self::Float32
                | Self::Float64
        )
    }

    /// Whether elements have no fixed size (and so go through [`crate::read::strings`]).
    pub fn is_variable(self) -> bool {
        matches!(self, Self::String | Self::Bytes)
    }

    /// Bytes per element; 0 for `string`, whose elements have no fixed size (callers of the
    /// fixed-size engine check [`Self::is_variable`] first).
    pub fn size(self) -> usize {
        match self {
            Self::String | Self::Bytes => 0,
            Self::Bool | Self::Int8 | Self::UInt8 => 1,
            Self::Int16 | Self::UInt16 | Self::Float16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64
            | Self::UInt64
            | Self::Float64
            | Self::Complex64
            | Self::DateTime64(_)
            | Self::TimeDelta64(_) => 8,
            Self::Complex128 => 16,
            Self::FixedUtf32(n) => n as usize * 4,
            Self::FixedBytes(n) => n as usize,
        }
    }

    /// The unit whose byte order the `bytes` codec swaps: a complex number is two floats.
    pub fn swap_unit(self) -> usize {
        match self {
            Self::Complex64 | Self::Complex128 => self.size() / 2,
            Self::FixedUtf32(_) => 4,
            Self::FixedBytes(_) => 1,
            _ => self.size(),
        }
    }

    /// The `NumPy` `descr` of the little-endian form (what `.npy` headers carry).
    pub fn npy_descr(self) -> String {
        match self {
            Self::DateTime64(u) => format!("<M8{}", u.bracketed()),
            Self::TimeDelta64(u) => format!("<m8{}", u.bracketed()),
            Self::FixedUtf32(n) => format!("<U{n}"),
            Self::FixedBytes(n) => format!("|S{n}"),
            other => other.npy_descr_static().to_owned(),
        }
    }

    fn npy_descr_static(self) -> &'static str {
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
            _ => "|O",
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
            Self::DateTime64(_) | Self::TimeDelta64(_) => match value {
                Value::String(s) if s == "NaT" => Ok(NAT.to_le_bytes().to_vec()),
                _ => {
                    let v = json_integer(value).ok_or_else(|| bad("expected an integer or \"NaT\""))?;
                    Ok(i64::try_from(v).map_err(|_| bad("out of range"))?.to_le_bytes().to_vec())
                }
            },
            Self::FixedUtf32(n) => match value {
                Value::String(s) => Ok(utf32_element(s, n)),
                _ => Err(bad("expected a JSON string")),
            },
            // Base64, as zarr-python writes it (`""` is no bytes).
            Self::Bytes => match value {
                Value::String(s) => base64::engine::general_purpose::STANDARD.decode(s).map_err(|_| bad("not base64")),
                _ => Err(bad("expected a base64 string")),
            },
            Self::FixedBytes(n) => match value {
                Value::String(s) => {
                    let bytes = base64::engine::general_purpose::STANDARD.decode(s).map_err(|_| bad("not base64"))?;
                    Ok(padded(bytes, n as usize))
                }
                _ => Err(bad("expected a base64 string")),
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

/// The `length_bytes` of a fixed-size text or bytes type's configuration.
fn length_bytes(config: Option<&serde_json::Map<String, Value>>, name: &str) -> Result<u32, MetadataError> {
    let value = config.and_then(|c| c.get("length_bytes")).ok_or_else(|| {
        MetadataError::invalid("data_type", &format!("`{name}` needs a configuration with length_bytes"))
    })?;
    value.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| (1..=MAX_FIXED_LENGTH).contains(n)).ok_or_else(|| {
        MetadataError::Unsupported(format!("{name} length_bytes {value} (an integer from 1 to {MAX_FIXED_LENGTH})"))
    })
}

/// `bytes` cut or NUL-padded to `n`, as `NumPy` casts into an `S{n}` element.
pub fn padded(mut bytes: Vec<u8>, n: usize) -> Vec<u8> {
    bytes.resize(n, 0);
    bytes
}

/// `text` as a `<U{n}` element: its first n code points, UTF-32 LE, NUL-padded.
pub fn utf32_element(text: &str, n: u32) -> Vec<u8> {
    let mut out: Vec<u8> = text.chars().take(n as usize).flat_map(|c| u32::from(c).to_le_bytes()).collect();
    out.resize(n as usize * 4, 0);
    out
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
        _ => return None,
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
        assert_eq!(DataType::from_json(&json!("variable_length_bytes")).unwrap(), DataType::Bytes);
        assert_eq!(DataType::Bytes.parse_fill_value(&json!("YWIA")).unwrap(), b"ab\0");
        assert!(DataType::Bytes.parse_fill_value(&json!("x")).is_err());
        assert!(matches!(DataType::from_json(&json!("raw_bytes")), Err(MetadataError::Unsupported(_))));
        assert_eq!(DataType::String.parse_fill_value(&json!("n/a")).unwrap(), b"n/a");
        assert!(DataType::String.parse_fill_value(&json!(0)).is_err());
    }

    #[test]
    fn times_and_fixed_size_text() {
        let t = |v: Value| DataType::from_json(&v);
        let dt = t(json!({"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 10}})).unwrap();
        assert_eq!(dt.npy_descr(), "<M8[10ms]");
        assert_eq!((dt.size(), dt.swap_unit(), dt.name()), (8, 8, "numpy.datetime64"));
        assert_eq!(dt.parse_fill_value(&json!("NaT")).unwrap(), i64::MIN.to_le_bytes());
        assert_eq!(dt.parse_fill_value(&json!(-9_223_372_036_854_775_808i64)).unwrap(), i64::MIN.to_le_bytes());
        assert_eq!(dt.parse_fill_value(&json!(11016)).unwrap(), 11016i64.to_le_bytes());
        assert!(dt.parse_fill_value(&json!("2000-01-01")).is_err());
        assert_eq!(t(dt.to_v3_json()).unwrap(), dt);
        let td = t(json!({"name": "numpy.timedelta64", "configuration": {"unit": "W", "scale_factor": 1}})).unwrap();
        assert_eq!(td.npy_descr(), "<m8[W]");
        let u = t(json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 24}})).unwrap();
        assert_eq!((u, u.size(), u.swap_unit(), u.npy_descr()), (DataType::FixedUtf32(6), 24, 4, "<U6".to_owned()));
        let fill = u.parse_fill_value(&json!("n/a")).unwrap();
        assert_eq!(fill.len(), 24);
        assert_eq!(&fill[..8], &[b'n', 0, 0, 0, b'/', 0, 0, 0]);
        assert_eq!(t(u.to_v3_json()).unwrap(), u);
        let s = t(json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 5}})).unwrap();
        assert_eq!((s.size(), s.swap_unit(), s.npy_descr()), (5, 1, "|S5".to_owned()));
        assert_eq!(s.parse_fill_value(&json!("eHk=")).unwrap(), b"xy\0\0\0");
        assert!(s.parse_fill_value(&json!("not base64!")).is_err());
        assert!(!s.is_real_number() && !dt.is_real_number() && DataType::Float32.is_real_number());
        // Bad configurations are unsupported (422), naming the field.
        for (bad, field) in [
            (json!({"name": "numpy.datetime64", "configuration": {"unit": "fortnight", "scale_factor": 1}}), "unit"),
            (json!({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 0}}), "scale_factor"),
            (json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}}), "length_bytes"),
            (json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 0}}), "length_bytes"),
            (json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 1u64 << 40}}), "length_bytes"),
        ] {
            let err = t(bad.clone()).unwrap_err();
            assert!(matches!(err, MetadataError::Unsupported(ref s) if s.contains(field)), "{bad}: {err}");
        }
        assert!(t(json!({"name": "null_terminated_bytes"})).is_err());
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
