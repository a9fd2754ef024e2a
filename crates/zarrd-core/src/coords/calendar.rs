//! CF time: stored numbers read as "<unit> since <date>" in one of the CF calendars, both
//! ways, as cftime (and so `xarray.decode_cf`) reads and writes them.
//!
//! Every date is a point on one integer timeline of microseconds (`i128`: no `i64` year
//! overflows it), so no float drift builds up: a stored value becomes microseconds once,
//! exactly rounded, and back once. Years are numbered astronomically (year 0 is 1 BC) in
//! every calendar. A leaf: it refers to no other module.

use std::fmt;

mod parse;
mod rounding;

use rounding::scaled_micros;

const DAY_US: i128 = 86_400_000_000;
const HOUR_US: i64 = 3_600_000_000;
const MINUTE_US: i64 = 60_000_000;
const SECOND_US: i64 = 1_000_000;
/// The month lengths of a common year.
const COMMON: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/// The first Gregorian day of the standard calendar, 1582-10-15, as a day number.
const GREGORIAN_START: i128 = -141_427;

/// A CF calendar (the `calendar` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Calendar {
    /// Julian up to 1582-10-04, Gregorian from the next day, 1582-10-15 (CF `standard`, `gregorian`).
    Standard,
    /// Gregorian rules in every year.
    ProlepticGregorian,
    /// 365 days every year (`365_day`).
    NoLeap,
    /// 366 days every year (`366_day`).
    AllLeap,
    /// Twelve 30-day months.
    Day360,
    /// A leap year every 4 years.
    Julian,
}

impl Calendar {
    pub const ALL: [Calendar; 6] =
        [Self::Standard, Self::ProlepticGregorian, Self::NoLeap, Self::AllLeap, Self::Day360, Self::Julian];

    /// CF names, case-insensitive: `standard`|`gregorian`, `proleptic_gregorian`,
    /// `noleap`|`365_day`, `all_leap`|`366_day`, `360_day`, `julian`. None for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "standard" | "gregorian" => Self::Standard,
            "proleptic_gregorian" => Self::ProlepticGregorian,
            "noleap" | "365_day" => Self::NoLeap,
            "all_leap" | "366_day" => Self::AllLeap,
            "360_day" => Self::Day360,
            "julian" => Self::Julian,
            _ => return None,
        })
    }

    /// The canonical CF name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::ProlepticGregorian => "proleptic_gregorian",
            Self::NoLeap => "noleap",
            Self::AllLeap => "all_leap",
            Self::Day360 => "360_day",
            Self::Julian => "julian",
        }
    }

    /// Whether February of `year` has 29 days (never in `360_day`, whose months all have 30).
    pub fn is_leap(self, year: i64) -> bool {
        let julian = year.rem_euclid(4) == 0;
        let gregorian = julian && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0);
        match self {
            Self::Standard if year < 1582 => julian,
            Self::Standard | Self::ProlepticGregorian => gregorian,
            Self::Julian => julian,
            Self::NoLeap | Self::Day360 => false,
            Self::AllLeap => true,
        }
    }

    /// The number of the month's last day; 0 for a month outside 1..=12. October 1582 in
    /// the standard calendar ends on the 31st, though it has 21 days.
    pub fn days_in_month(self, year: i64, month: u32) -> u32 {
        match (self, month) {
            (_, 0 | 13..) => 0,
            (Self::Day360, _) => 30,
            (_, 2) if self.is_leap(year) => 29,
            _ => COMMON[month as usize - 1],
        }
    }

    /// A day number: consecutive days differ by 1, and day 0 is 1970-01-01 of the calendar,
    /// except in `julian`, which counts the same days as the Gregorian calendars (its
    /// 1970-01-01 is day 13, as in the standard calendar its dates before 1582-10-15 are).
    /// Months and days past their end run on (month 13 is the next January; the standard
    /// calendar's missing 1582-10-05..14 are Julian); the number saturates at the `i64`
    /// bounds for years no calendar reaches.
    pub fn day_number(self, year: i64, month: u32, day: u32) -> i64 {
        let n = self.days(i128::from(year), month, day);
        i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
    }

    /// The date of a [`day_number`](Self::day_number): (year, month, day).
    pub fn from_day_number(self, n: i64) -> (i64, u32, u32) {
        let (year, month, day) = self.date(i128::from(n));
        // A year is at least 360 days, so it fits in an i64 when the day number does.
        (year as i64, month, day)
    }

    /// Microseconds from 1970-01-01T00:00 (day 0 of [`day_number`](Self::day_number)) to `at`.
    pub fn micros(self, at: &DateTime) -> i128 {
        // In i128 too: the fields are public, and an hour of u32::MAX must not overflow.
        let time = i128::from(at.hour) * i128::from(HOUR_US)
            + i128::from(at.minute) * i128::from(MINUTE_US)
            + i128::from(at.second) * i128::from(SECOND_US)
            + i128::from(at.micro);
        self.days(i128::from(at.year), at.month, at.day) * DAY_US + time
    }

    /// The date and time `us` microseconds from 1970-01-01T00:00; None past the `i64` years.
    pub fn from_micros(self, us: i128) -> Option<DateTime> {
        let (year, month, day) = self.date(us.div_euclid(DAY_US));
        let time = us.rem_euclid(DAY_US) as i64;
        Some(DateTime {
            year: i64::try_from(year).ok()?,
            month,
            day,
            hour: (time / HOUR_US) as u32,
            minute: (time / MINUTE_US % 60) as u32,
            second: (time / SECOND_US % 60) as u32,
            micro: (time % SECOND_US) as u32,
        })
    }

    /// The days in a year of the fixed-length calendars.
    fn fixed_year(self) -> Option<i128> {
        match self {
            Self::NoLeap => Some(365),
            Self::AllLeap => Some(366),
            Self::Day360 => Some(360),
            _ => None,
        }
    }

    fn days(self, year: i128, month: u32, day: u32) -> i128 {
        // Months and days run on linearly, so that no input can make this fail.
        let month0 = i128::from(month) - 1;
        let year = year + month0.div_euclid(12);
        let month = month0.rem_euclid(12) as u32 + 1;
        let day0 = i128::from(day) - 1;
        if let Some(length) = self.fixed_year() {
            let before: u32 = (1..month).map(|m| self.days_in_month(0, m)).sum();
            return (year - 1970) * length + i128::from(before) + day0;
        }
        let gregorian = match self {
            Self::Standard => (year, month, day) >= (1582, 10, 15),
            _ => self == Self::ProlepticGregorian,
        };
        if gregorian { gregorian_days(year, month) + day0 } else { julian_days(year, month) + day0 }
    }

    fn date(self, n: i128) -> (i128, u32, u32) {
        if let Some(length) = self.fixed_year() {
            let year = n.div_euclid(length) + 1970;
            let mut day = n.rem_euclid(length) as u32;
            let mut month = 1;
            while day >= self.days_in_month(0, month) {
                day -= self.days_in_month(0, month);
                month += 1;
            }
            return (year, month, day + 1);
        }
        let gregorian = match self {
            Self::Standard => n >= GREGORIAN_START,
            _ => self == Self::ProlepticGregorian,
        };
        if gregorian { gregorian_date(n) } else { julian_date(n) }
    }
}

impl fmt::Display for Calendar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// Day counts after H. Hinnant's `days_from_civil`: years start on March 1st, so that the
// leap day comes last and a month's first day is a linear function of the month.

/// Days from March 1st to the first of `month`.
fn march_days(month: u32) -> i128 {
    (153 * ((i128::from(month) + 9) % 12) + 2) / 5
}

/// The (year, month, day) of day `day` of the March-based year `year`.
fn from_march(year: i128, day: i128) -> (i128, u32, u32) {
    let m = (5 * day + 2) / 153;
    let month = if m < 10 { m + 3 } else { m - 9 } as u32;
    (if month <= 2 { year + 1 } else { year }, month, (day - (153 * m + 2) / 5 + 1) as u32)
}

fn gregorian_days(year: i128, month: u32) -> i128 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let y = year - era * 400;
    era * 146_097 + y * 365 + y / 4 - y / 100 + march_days(month) - 719_468
}

fn gregorian_date(n: i128) -> (i128, u32, u32) {
    let z = n + 719_468;
    let era = z.div_euclid(146_097);
    let d = z - era * 146_097;
    let y = (d - d / 1460 + d / 36_524 - d / 146_096) / 365;
    from_march(era * 400 + y, d - (365 * y + y / 4 - y / 100))
}

/// The offset aligns Julian 1582-10-04 with the day before Gregorian 1582-10-15.
fn julian_days(year: i128, month: u32) -> i128 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(4);
    era * 1461 + (year - era * 4) * 365 + march_days(month) - 719_470
}

fn julian_date(n: i128) -> (i128, u32, u32) {
    let z = n + 719_470;
    let era = z.div_euclid(1461);
    let d = z - era * 1461;
    let y = (d - d / 1460) / 365;
    from_march(era * 4 + y, d - 365 * y)
}

/// A date and time of day in some calendar (no time zone: UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micro: u32,
}

impl DateTime {
    /// Midnight at the start of a day.
    pub const fn midnight(year: i64, month: u32, day: u32) -> Self {
        Self { year, month, day, hour: 0, minute: 0, second: 0, micro: 0 }
    }

    /// ISO 8601 as the API writes labels: `2021-03-01` at midnight; else `2021-03-01T06:00`,
    /// `2021-03-01T06:00:30`, `2021-03-01T06:00:30.250` (milliseconds, or microseconds
    /// where they are not whole). Years outside 0..=9999 with a sign and at least 4 digits
    /// (`-0001-01-01`, `+10000-01-01`).
    pub fn iso(&self) -> String {
        self.to_string()
    }

    /// Parses what users type: `2021`, `2021-03`, `2021-03-01`, `2021-03-01T06`,
    /// `2021-03-01T06:00`, `2021-03-01T06:00:30(.fff)`, also with a space instead of `T`,
    /// and an optional trailing `Z`. Missing parts are the start (month 1, day 1, midnight);
    /// fractions past microseconds are dropped. The date must exist in `calendar`.
    pub fn parse(text: &str, calendar: Calendar) -> Result<Self, CalendarError> {
        let (at, offset) = parse_parts(text, parse::Writer::User)
            .map_err(|reason| CalendarError::Syntax { text: text.to_owned(), reason })?;
        if offset != 0 {
            return Err(CalendarError::TimeZone { text: text.to_owned() });
        }
        match at.fault(calendar) {
            Some(reason) => Err(CalendarError::InvalidDate { text: text.to_owned(), calendar, reason }),
            None => Ok(at),
        }
    }

    /// Whether the date and time exist in `calendar`.
    pub fn is_valid(&self, calendar: Calendar) -> bool {
        self.fault(calendar).is_none()
    }

    /// What makes the date or time not exist in `calendar`.
    fn fault(&self, calendar: Calendar) -> Option<String> {
        let last = calendar.days_in_month(self.year, self.month);
        let (year, month, day) = (self.year, self.month, self.day);
        Some(if last == 0 {
            format!("month {month} is not in 1..=12")
        } else if !(1..=last).contains(&day) {
            let first = Self::midnight(year, month, 1).iso();
            format!("day {day} is not in 1..={last} in {}", &first[..first.len() - 3])
        } else if calendar == Calendar::Standard && (year, month) == (1582, 10) && (5..15).contains(&day) {
            "1582-10-05 to 1582-10-14 do not exist: Julian 1582-10-04 is followed by Gregorian 1582-10-15".into()
        } else if self.hour > 23 {
            format!("hour {} is not in 0..=23", self.hour)
        } else if self.minute > 59 {
            format!("minute {} is not in 0..=59", self.minute)
        } else if self.second > 59 {
            format!("second {} is not in 0..=59", self.second)
        } else if self.micro > 999_999 {
            format!("microsecond {} is not in 0..=999999", self.micro)
        } else {
            return None;
        })
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if (0..=9999).contains(&self.year) {
            write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)?;
        } else {
            write!(f, "{:+05}-{:02}-{:02}", self.year, self.month, self.day)?;
        }
        if (self.hour, self.minute, self.second, self.micro) == (0, 0, 0, 0) {
            return Ok(());
        }
        write!(f, "T{:02}:{:02}", self.hour, self.minute)?;
        if (self.second, self.micro) != (0, 0) {
            write!(f, ":{:02}", self.second)?;
        }
        match self.micro {
            0 => Ok(()),
            us if us % 1000 == 0 => write!(f, ".{:03}", us / 1000),
            us => write!(f, ".{us:06}"),
        }
    }
}

/// A date or time unit that cannot be read, or a date that is not in the calendar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalendarError {
    #[error(
        "unknown calendar {0:?}: the CF calendars are standard (or gregorian), proleptic_gregorian, \
         noleap (or 365_day), all_leap (or 366_day), 360_day and julian"
    )]
    UnknownCalendar(String),
    #[error(
        "cannot read {text:?} as a date: {reason}; dates are written YYYY[-MM[-DD[THH[:MM[:SS[.ffffff]]]]]], \
         with a space or T before the time and an optional Z at the end"
    )]
    Syntax { text: String, reason: &'static str },
    #[error("{text:?} is not a date in the {calendar} calendar: {reason}")]
    InvalidDate { text: String, calendar: Calendar, reason: String },
    #[error("{text:?} has a time zone offset: dates are in UTC, so only Z (or +00:00) is accepted")]
    TimeZone { text: String },
    #[error("time units {units:?}: {reason}")]
    Units { units: String, reason: String },
}

/// A CF time axis encoding: unit, epoch and calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfTime {
    pub calendar: Calendar,
    /// Microseconds in one unit.
    unit_us: i64,
    /// The reference date, in UTC, on the calendar's [`Calendar::micros`] timeline.
    epoch_us: i128,
    epoch: DateTime,
}

impl CfTime {
    /// `units` like "days since 2000-01-01", "hours since 1900-01-01 00:00:00",
    /// "seconds since 1970-01-01T00:00:00Z", "minutes since 2000-1-1 0:0:0", with the unit
    /// spelt as cftime accepts it (days, day, d; hours, hour, hrs, hr, h; minutes, minute,
    /// mins, min; seconds, second, secs, sec, s; milliseconds, msec, ms; microseconds, usec,
    /// us). `calendar` None is standard. A time zone offset after the date is applied (the
    /// epoch is kept in UTC), as cftime does. Months and years, which CF discourages (they
    /// have no fixed length), are refused.
    pub fn parse(units: &str, calendar: Option<&str>) -> Result<Self, CalendarError> {
        let calendar = match calendar {
            None => Calendar::Standard,
            Some(name) => Calendar::parse(name).ok_or_else(|| CalendarError::UnknownCalendar(name.to_owned()))?,
        };
        let error = |reason: String| CalendarError::Units { units: units.to_owned(), reason };
        let (unit, rest) = units.trim().split_once(char::is_whitespace).unwrap_or((units.trim(), ""));
        let (since, date) = rest.trim_start().split_once(char::is_whitespace).unwrap_or((rest.trim_start(), ""));
        if !since.eq_ignore_ascii_case("since") {
            return Err(error("expected \"<unit> since <date>\", such as \"days since 2000-01-01\"".into()));
        }
        let unit_us = unit_micros(&unit.to_ascii_lowercase()).map_err(error)?;
        let date = date.trim();
        let (epoch, offset) = parse_parts(date, parse::Writer::Units)
            .map_err(|reason| error(format!("reference date {date:?}: {reason}")))?;
        if let Some(reason) = epoch.fault(calendar) {
            return Err(error(format!("reference date {date:?} is not a date in the {calendar} calendar: {reason}")));
        }
        let epoch_us = calendar.micros(&epoch) - i128::from(offset) * i128::from(MINUTE_US);
        let epoch = calendar.from_micros(epoch_us).ok_or_else(|| error("the reference date is out of range".into()))?;
        Ok(Self { calendar, unit_us, epoch_us, epoch })
    }

    /// The reference date (in UTC).
    pub fn epoch(&self) -> DateTime {
        self.epoch
    }

    /// The microseconds in one unit.
    pub fn unit_micros(&self) -> i64 {
        self.unit_us
    }

    /// The date of a stored value (NaN, infinite, or more microseconds from the epoch than
    /// an `i64` holds → None), rounded to the nearest microsecond (half to even) as cftime
    /// does, including its snap to the whole second 1 µs away for units of a second or
    /// more (where that microsecond is float error).
    pub fn datetime(&self, value: f64) -> Option<DateTime> {
        let us = scaled_micros(value, self.unit_us)?;
        self.calendar.from_micros(self.epoch_us + i128::from(us))
    }

    /// The value (in this encoding's units, possibly fractional) of a date.
    pub fn value(&self, at: &DateTime) -> f64 {
        self.value_of_micros(self.calendar.micros(at))
    }

    /// The value of a date as users write it, with a time zone offset applied (the
    /// timeline is UTC): `2021-03-01T06:00+02:00` is 04:00 UTC. No zone is UTC. The date
    /// must exist in the calendar.
    pub fn value_in_zone(&self, text: &str) -> Result<f64, CalendarError> {
        let (at, offset) = parse_parts(text, parse::Writer::User)
            .map_err(|reason| CalendarError::Syntax { text: text.to_owned(), reason })?;
        if let Some(reason) = at.fault(self.calendar) {
            return Err(CalendarError::InvalidDate { text: text.to_owned(), calendar: self.calendar, reason });
        }
        Ok(self.value_of_micros(self.calendar.micros(&at) - i128::from(offset) * i128::from(MINUTE_US)))
    }

    fn value_of_micros(&self, micros: i128) -> f64 {
        let us = micros - self.epoch_us;
        let unit = i128::from(self.unit_us);
        let (whole, part) = (us / unit, us % unit);
        if part == 0 {
            whole as f64
        } else if us.unsigned_abs() <= 1 << 53 {
            // Both exact in an f64, so the quotient is correctly rounded.
            us as f64 / unit as f64
        } else {
            whole as f64 + part as f64 / unit as f64
        }
    }
}

/// The microseconds in a CF time unit.
fn unit_micros(unit: &str) -> Result<i64, String> {
    Ok(match unit {
        "days" | "day" | "d" => DAY_US as i64,
        "hours" | "hour" | "hrs" | "hr" | "h" => HOUR_US,
        "minutes" | "minute" | "mins" | "min" => MINUTE_US,
        "seconds" | "second" | "secs" | "sec" | "s" => SECOND_US,
        "milliseconds" | "millisecond" | "millisecs" | "millisec" | "msecs" | "msec" | "ms" => 1000,
        "microseconds" | "microsecond" | "microsecs" | "microsec" | "usecs" | "usec" | "us" => 1,
        "months" | "month" | "years" | "year" | "common_years" | "common_year" => {
            return Err(format!(
                "{unit:?} have no fixed length (CF discourages them): use days, hours, minutes or seconds"
            ));
        }
        _ => {
            return Err(format!(
                "unknown unit {unit:?}: expected days, hours, minutes, seconds, milliseconds or microseconds"
            ));
        }
    })
}

/// Reads a date as [`DateTime::parse`] and CF units write it (not yet checked against a
/// calendar), with its time zone offset in minutes.
fn parse_parts(text: &str, writer: parse::Writer) -> Result<(DateTime, i64), &'static str> {
    let w = parse::written(text, writer)?;
    let at = DateTime {
        year: w.year,
        month: w.month,
        day: w.day,
        hour: w.hour,
        minute: w.minute,
        second: w.second,
        micro: w.micro,
    };
    Ok((at, w.offset))
}

#[cfg(test)]
mod tests;
