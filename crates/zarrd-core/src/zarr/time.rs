//! The units of `numpy.datetime64` and `numpy.timedelta64` (zarr-extensions
//! `data-types/numpy.datetime64`, `numpy.timedelta64`; v2 `<M8[10ms]`, `<m8[W]`), and
//! datetimes written as `numpy.datetime_as_string` writes them.
//!
//! An element is an i64 count of `scale_factor` units since `1970-01-01T00:00` (datetime)
//! or a duration; `i64::MIN` is `NaT`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::zarr::json::MetadataError;

/// `NaT`, "not a time": the smallest i64.
pub const NAT: i64 = i64::MIN;

/// A `NumPy` time unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Years,
    Months,
    Weeks,
    Days,
    Hours,
    Minutes,
    Seconds,
    Millis,
    Micros,
    Nanos,
    Picos,
    Femtos,
    Attos,
    /// No unit: only `NaT` has a value.
    Generic,
}

const UNITS: [(&str, Unit); 14] = [
    ("Y", Unit::Years),
    ("M", Unit::Months),
    ("W", Unit::Weeks),
    ("D", Unit::Days),
    ("h", Unit::Hours),
    ("m", Unit::Minutes),
    ("s", Unit::Seconds),
    ("ms", Unit::Millis),
    ("us", Unit::Micros),
    ("ns", Unit::Nanos),
    ("ps", Unit::Picos),
    ("fs", Unit::Femtos),
    ("as", Unit::Attos),
    ("generic", Unit::Generic),
];

/// A unit and its scale factor (`10ms`): the time one stored count stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeUnit {
    pub unit: Unit,
    /// 1 ..= 2^31 - 1, as zarr-python allows.
    pub scale: u32,
}

impl Unit {
    pub fn name(self) -> &'static str {
        UNITS.iter().find(|(_, u)| *u == self).map_or("generic", |(n, _)| n)
    }

    fn parse(name: &str) -> Option<Self> {
        // `μs` is `NumPy`'s other spelling of microseconds.
        let name = if name == "μs" { "us" } else { name };
        UNITS.iter().find(|(n, _)| *n == name).map(|(_, u)| *u)
    }

    /// Units per day, for units of a day or less (weeks count as 7 days).
    fn per_day(self) -> Option<i128> {
        Some(match self {
            Self::Weeks | Self::Days => 1,
            Self::Hours => 24,
            Self::Minutes => 1_440,
            Self::Seconds => 86_400,
            Self::Millis => 86_400_000,
            Self::Micros => 86_400_000_000,
            Self::Nanos => 86_400_000_000_000,
            Self::Picos => 86_400_000_000_000_000,
            Self::Femtos => 86_400_000_000_000_000_000,
            Self::Attos => 86_400_000_000_000_000_000_000,
            Self::Years | Self::Months | Self::Generic => return None,
        })
    }

    /// Digits after the seconds' decimal point.
    fn fraction_digits(self) -> usize {
        match self {
            Self::Millis => 3,
            Self::Micros => 6,
            Self::Nanos => 9,
            Self::Picos => 12,
            Self::Femtos => 15,
            Self::Attos => 18,
            _ => 0,
        }
    }
}

impl TimeUnit {
    /// The v3 `configuration` `{"unit", "scale_factor"}` of a time data type.
    pub fn from_config(config: Option<&Map<String, Value>>, type_name: &str) -> Result<Self, MetadataError> {
        let config = config.ok_or_else(|| {
            MetadataError::invalid(
                "data_type",
                &format!("`{type_name}` needs a configuration with unit and scale_factor"),
            )
        })?;
        let unit = match config.get("unit") {
            Some(Value::String(u)) => Unit::parse(u).ok_or_else(|| {
                MetadataError::Unsupported(format!(
                    "{type_name} unit `{u}` (allowed: {})",
                    UNITS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ))
            })?,
            other => {
                return Err(MetadataError::Unsupported(format!("{type_name} unit {other:?} (not a unit name)")));
            }
        };
        let scale = match config.get("scale_factor") {
            Some(v) => v.as_u64().and_then(|s| u32::try_from(s).ok()).filter(|s| (1..1 << 31).contains(s)).ok_or_else(
                || {
                    MetadataError::Unsupported(format!(
                        "{type_name} scale_factor {v} (an integer from 1 to 2147483647)"
                    ))
                },
            )?,
            None => {
                return Err(MetadataError::Unsupported(format!("{type_name} without a scale_factor")));
            }
        };
        Ok(Self { unit, scale })
    }

    /// The unit inside a `NumPy` typestr's brackets: `10ms`, `W`, or nothing (generic).
    pub fn parse_numpy(text: &str) -> Option<Self> {
        if text.is_empty() {
            return Some(Self { unit: Unit::Generic, scale: 1 });
        }
        let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        let (digits, unit) = text.split_at(split);
        let scale = if digits.is_empty() { 1 } else { digits.parse::<u32>().ok()? };
        let unit = Unit::parse(unit).filter(|u| *u != Unit::Generic)?;
        ((1..1 << 31).contains(&scale)).then_some(Self { unit, scale })
    }

    /// The unit as `NumPy` writes it in a dtype: `10ms`, `ms`, and nothing for generic.
    pub fn numpy(self) -> String {
        match (self.unit, self.scale) {
            (Unit::Generic, _) => String::new(),
            (u, 1) => u.name().to_owned(),
            (u, s) => format!("{s}{}", u.name()),
        }
    }

    /// `[10ms]` for a `NumPy` typestr (`<M8[10ms]`); empty for generic (`<M8`).
    pub fn bracketed(self) -> String {
        if self.unit == Unit::Generic { String::new() } else { format!("[{}]", self.numpy()) }
    }
}

/// Floor division and its non-negative remainder.
fn div_floor(a: i128, b: i128) -> (i128, i128) {
    let (q, r) = (a.div_euclid(b), a.rem_euclid(b));
    (q, r)
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01 (proleptic Gregorian;
/// H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let (era, doe) = div_floor(z, 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

/// A datetime element as `numpy.datetime_as_string` writes it (`1970-01-01T00:00:00.010`
/// for `10ms`; the precision of the base unit; years as `%04d`: `-001`, `10000`); `None`
/// for `NaT`. A generic-unit value other than `NaT` (which `NumPy` refuses to print) is
/// written as its count.
pub fn datetime_string(value: i64, unit: TimeUnit) -> Option<String> {
    if value == NAT {
        return None;
    }
    let total = i128::from(value) * i128::from(unit.scale);
    let mut out = String::new();
    let year = |out: &mut String, y: i128| {
        let _ = write!(out, "{y:04}");
    };
    match unit.unit {
        Unit::Generic => {
            let _ = write!(out, "{value}");
        }
        Unit::Years => year(&mut out, 1970 + total),
        Unit::Months => {
            let (y, m) = div_floor(total, 12);
            year(&mut out, 1970 + y);
            let _ = write!(out, "-{:02}", m + 1);
        }
        base => {
            let per_day = base.per_day().unwrap_or(1);
            let total = if base == Unit::Weeks { total * 7 } else { total };
            let (days, rest) = div_floor(total, per_day);
            let (years, month, day) = civil_from_days(days);
            year(&mut out, years);
            let _ = write!(out, "-{month:02}-{day:02}");
            if !matches!(base, Unit::Weeks | Unit::Days) {
                push_time_of_day(&mut out, rest, per_day, base);
            }
        }
    }
    Some(out)
}

/// `T12`, `T12:30`, `T12:30:05` or `T12:30:05.010` for `rest` units since midnight.
fn push_time_of_day(out: &mut String, rest: i128, per_day: i128, base: Unit) {
    let per_hour = per_day / 24;
    let (hours, rest) = div_floor(rest, per_hour);
    let _ = write!(out, "T{hours:02}");
    if base == Unit::Hours {
        return;
    }
    let per_minute = per_hour / 60;
    let (minutes, rest) = div_floor(rest, per_minute);
    let _ = write!(out, ":{minutes:02}");
    if base == Unit::Minutes {
        return;
    }
    let (seconds, fraction) = div_floor(rest, per_minute / 60);
    let _ = write!(out, ":{seconds:02}");
    let digits = base.fraction_digits();
    if digits > 0 {
        let _ = write!(out, ".{fraction:0digits$}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unit(text: &str) -> TimeUnit {
        TimeUnit::parse_numpy(text).unwrap()
    }

    #[test]
    fn units_in_both_spellings() {
        assert_eq!(unit("10ms"), TimeUnit { unit: Unit::Millis, scale: 10 });
        assert_eq!(unit("W").numpy(), "W");
        assert_eq!(unit("25m").bracketed(), "[25m]");
        assert_eq!(unit("").bracketed(), "");
        for bad in ["0s", "10", "x", "3000000000s", "generic", "-1s"] {
            assert!(TimeUnit::parse_numpy(bad).is_none(), "{bad}");
        }
        let config = |v: Value| TimeUnit::from_config(v.as_object(), "numpy.datetime64");
        assert_eq!(config(json!({"unit": "ps", "scale_factor": 3})).unwrap(), TimeUnit { unit: Unit::Picos, scale: 3 });
        for bad in [
            json!({"unit": "fortnight", "scale_factor": 1}),
            json!({"unit": "s", "scale_factor": 0}),
            json!({"unit": "s", "scale_factor": 2_147_483_648u64}),
            json!({"unit": "s", "scale_factor": 1.5}),
            json!({"unit": "s"}),
        ] {
            let err = config(bad.clone()).unwrap_err().to_string();
            assert!(err.contains("unit") || err.contains("scale_factor"), "{bad}: {err}");
        }
    }

    #[test]
    fn datetimes_as_numpy_writes_them() {
        // Each checked with numpy 2.5.5's datetime_as_string.
        let s = |v: i64, u: &str| datetime_string(v, unit(u)).unwrap();
        assert_eq!(s(-1, "Y"), "1969");
        assert_eq!(s(-1971, "Y"), "-001");
        assert_eq!(s(-11970, "Y"), "-10000");
        assert_eq!(s(8030, "Y"), "10000");
        assert_eq!(s(10, "M"), "1970-11");
        assert_eq!(s(-1, "D"), "1969-12-31");
        assert_eq!(s(1, "10ms"), "1970-01-01T00:00:00.010");
        assert_eq!(s(-1, "ms"), "1969-12-31T23:59:59.999");
        assert_eq!(s(1 << 62, "as"), "1970-01-01T00:00:04.611686018427387904");
        assert_eq!(s(1 << 62, "s"), "146138514283-06-19T07:45:04");
        assert_eq!(s(-(1 << 62), "s"), "-146138510344-07-14T16:14:56");
        assert_eq!(s(1, "W"), "1970-01-08");
        assert_eq!(s(5, "h"), "1970-01-01T05");
        assert_eq!(s(3, "25m"), "1970-01-01T01:15");
        assert_eq!(s(123_456_789, "ps"), "1970-01-01T00:00:00.000123456789");
        assert_eq!(datetime_string(NAT, unit("s")), None);
        assert!(s(i64::MAX, "2147483647W").len() > 10);
    }
}
