//! Zarr v2 `dtype`s beyond numbers, and their `fill_value`s as zarr-python 3.4.2 reads them.

use base64::Engine as _;
use serde_json::Value;

use crate::zarr::codec::numeric::{Kind, NumType};
use crate::zarr::data_type::{DataType, MAX_FIXED_LENGTH, padded, utf32_element};
use crate::zarr::json::MetadataError;
use crate::zarr::time::{NAT, TimeUnit};

/// A `|O` text array's `fill_value` as zarr-python 3.4.2 reads it: Python's `str()` of the
/// JSON value (`0` reads as `"0"`, `0.0` as `"0.0"`, `false` as `"False"`), `null` as `""`.
/// Lists and objects are refused.
pub fn text_fill(value: &Value) -> Result<String, MetadataError> {
    Ok(match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => python_float_repr(f),
            _ => return Err(MetadataError::invalid("fill_value", &format!("{n} is not a number Python reads"))),
        },
        other => {
            return Err(MetadataError::invalid(
                "fill_value",
                &format!("{other} is not a text fill value (a string, a number, a boolean or null)"),
            ));
        }
    })
}

/// Python's `repr()` of a finite float: the shortest digits that read back the same value,
/// in positional form with a `.0` for integral values, or in exponent form (`1e+16`,
/// `1.5e-05`) when the decimal point is more than 16 places right or 4 places left of them.
pub fn python_float_repr(f: f64) -> String {
    // `{:e}` gives the shortest round-trip digits: `-1.2345e-7`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let decpt = exp + 1;
    if !(-3..=16).contains(&decpt) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{exp_sign}{:02}", exp.unsigned_abs());
    }
    let n = digits.len() as i32;
    if decpt <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat(decpt.unsigned_abs() as usize))
    } else if decpt >= n {
        format!("{sign}{digits}{}.0", "0".repeat((decpt - n) as usize))
    } else {
        let (int, frac) = digits.split_at(decpt as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// A v2 `dtype` that is not a plain number: `<M8[10ms]`, `>m8` (generic), `|S5`, `<U5`,
/// `>U5`. Returns the data type, whether it is stored big-endian, and the element type the
/// numcodecs filters see (i8 for times, bytes for text). `None`: not such a dtype.
pub fn parse(typestr: &str) -> Result<Option<(DataType, bool, NumType)>, MetadataError> {
    let (big_endian, rest) = match typestr.as_bytes().first() {
        Some(b'>') => (true, &typestr[1..]),
        Some(b'<' | b'|' | b'=') => (false, &typestr[1..]),
        _ => (false, typestr),
    };
    let bytes = NumType { kind: Kind::UInt, size: 1, big_endian: false };
    let unsupported = |why: &str| MetadataError::Unsupported(format!("Zarr v2 dtype `{typestr}`: {why}"));
    if let Some(time) =
        rest.strip_prefix("M8").map(|t| (t, true)).or_else(|| rest.strip_prefix("m8").map(|t| (t, false)))
    {
        let (unit_text, datetime) = time;
        let unit = if unit_text.is_empty() {
            TimeUnit::parse_numpy("")
        } else {
            unit_text.strip_prefix('[').and_then(|u| u.strip_suffix(']')).and_then(TimeUnit::parse_numpy)
        }
        .ok_or_else(|| unsupported("unknown time unit (Y, M, W, D, h, m, s, ms, us, ns, ps, fs, as with a scale)"))?;
        let data_type = if datetime { DataType::DateTime64(unit) } else { DataType::TimeDelta64(unit) };
        return Ok(Some((data_type, big_endian, NumType { kind: Kind::Int, size: 8, big_endian })));
    }
    let (kind, count) = match rest.split_at_checked(1) {
        Some(("S", n)) => ('S', n),
        Some(("U", n)) => ('U', n),
        _ => return Ok(None),
    };
    let n: u32 = count.parse().map_err(|_| unsupported("the length is not a number"))?;
    let width = if kind == 'U' { u64::from(n) * 4 } else { u64::from(n) };
    if n == 0 || width > u64::from(MAX_FIXED_LENGTH) {
        return Err(unsupported(&format!("length {n} (1 to {MAX_FIXED_LENGTH} bytes per element)")));
    }
    let data_type = if kind == 'U' { DataType::FixedUtf32(n) } else { DataType::FixedBytes(n) };
    Ok(Some((data_type, big_endian && kind == 'U', bytes)))
}

/// The `fill_value` of a v2 array of one of [`parse`]'s types, as zarr-python 3.4.2 reads it:
/// times as an integer, `"NaT"` or `null` (`NaT`); `U` text as a string (`null`: empty), cut to
/// the length; `S` bytes as base64 (`null`: empty), cut or padded to the length.
pub fn special_fill(value: &Value, data_type: DataType) -> Result<Vec<u8>, MetadataError> {
    let bad = |why: &str| MetadataError::invalid("fill_value", &format!("{value} for {}: {why}", data_type.name()));
    match (data_type, value) {
        (DataType::DateTime64(_) | DataType::TimeDelta64(_), Value::Null) => Ok(NAT.to_le_bytes().to_vec()),
        (DataType::FixedUtf32(_) | DataType::FixedBytes(_), Value::Null) => Ok(vec![0; data_type.size()]),
        (DataType::FixedUtf32(n), Value::String(s)) => Ok(utf32_element(s, n)),
        (DataType::FixedBytes(n), Value::String(s)) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(s).map_err(|_| bad("not base64"))?;
            Ok(padded(bytes, n as usize))
        }
        (DataType::FixedUtf32(_), _) => Err(bad("expected a string")),
        (DataType::FixedBytes(_), _) => Err(bad("expected a base64 string")),
        _ => data_type.parse_fill_value(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typestrs_of_times_and_fixed_text() {
        let p = |s: &str| parse(s).unwrap().map(|(t, be, _)| (t.npy_descr(), be));
        assert_eq!(p("<M8[ns]"), Some(("<M8[ns]".to_owned(), false)));
        assert_eq!(p(">m8[10ms]"), Some(("<m8[10ms]".to_owned(), true)));
        assert_eq!(p("<M8"), Some(("<M8".to_owned(), false)));
        assert_eq!(p(">U5"), Some(("<U5".to_owned(), true)));
        assert_eq!(p("|S4"), Some(("|S4".to_owned(), false)));
        assert_eq!(p("<f4"), None);
        assert_eq!(p("|O"), None);
        for bad in ["<M8[fortnight]", "<m8[0s]", "<M8[ns", "|S0", "<U", "<Ux", "|S99999999999"] {
            assert!(matches!(parse(bad), Err(MetadataError::Unsupported(_))), "{bad}");
        }
        let (dt, ..) = parse("<M8[s]").unwrap().unwrap();
        assert_eq!(special_fill(&json!(null), dt).unwrap(), NAT.to_le_bytes());
        assert_eq!(special_fill(&json!(5), dt).unwrap(), 5i64.to_le_bytes());
        assert!(special_fill(&json!("AQAAAAAAAAA="), dt).is_err());
        let (u, ..) = parse("<U3").unwrap().unwrap();
        // zarr-python cuts a longer fill to the length.
        assert_eq!(special_fill(&json!("YQ=="), u).unwrap(), utf32_element("YQ=", 3));
        assert_eq!(special_fill(&json!(null), u).unwrap(), vec![0; 12]);
        assert!(special_fill(&json!(0), u).is_err());
        let (s, ..) = parse("|S3").unwrap().unwrap();
        assert_eq!(special_fill(&json!("YQ=="), s).unwrap(), b"a\0\0");
        assert!(special_fill(&json!("x"), s).is_err());
    }

    #[test]
    fn floats_read_as_python_writes_them() {
        // Each pair checked with Python 3.13's repr().
        for (f, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.5, "1.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (123.456, "123.456"),
            (1e300, "1e+300"),
            (0.1, "0.1"),
        ] {
            assert_eq!(python_float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn text_fill_values_as_zarr_python_reads_them() {
        assert_eq!(text_fill(&json!(0)).unwrap(), "0");
        assert_eq!(text_fill(&json!(null)).unwrap(), "");
        assert_eq!(text_fill(&json!("")).unwrap(), "");
        assert_eq!(text_fill(&json!(0.0)).unwrap(), "0.0");
        assert_eq!(text_fill(&json!(false)).unwrap(), "False");
        assert_eq!(text_fill(&json!(-3)).unwrap(), "-3");
        assert!(text_fill(&json!([1])).is_err());
    }
}
