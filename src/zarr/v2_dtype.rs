//! Zarr v2 `dtype`s beyond numbers, and their `fill_value`s as zarr-python 3.4.2 reads them.

use serde_json::Value;

use crate::zarr::json::MetadataError;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
