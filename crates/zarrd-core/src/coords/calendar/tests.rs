//! Expected values come from calendar facts and hand counts, never from the code: day
//! counts are worked out in the comments, Gregorian ones agree with Python's `datetime`.
// Exact float comparisons are the point: values that are whole or exact binary fractions.
#![allow(clippy::float_cmp)]

use super::*;
use Calendar::{AllLeap, Day360, Julian, NoLeap, ProlepticGregorian, Standard};

fn at(year: i64, month: u32, day: u32, hour: u32, minute: u32, second: u32, micro: u32) -> DateTime {
    DateTime { year, month, day, hour, minute, second, micro }
}

fn date(year: i64, month: u32, day: u32) -> DateTime {
    DateTime::midnight(year, month, day)
}

fn cf(units: &str, calendar: Calendar) -> CfTime {
    CfTime::parse(units, Some(calendar.name())).unwrap()
}

#[test]
fn calendar_names() {
    for (name, calendar) in [
        ("standard", Standard),
        ("gregorian", Standard),
        ("Gregorian", Standard),
        ("proleptic_gregorian", ProlepticGregorian),
        ("noleap", NoLeap),
        ("365_day", NoLeap),
        ("NOLEAP", NoLeap),
        ("all_leap", AllLeap),
        ("366_day", AllLeap),
        ("360_day", Day360),
        ("julian", Julian),
    ] {
        assert_eq!(Calendar::parse(name), Some(calendar), "{name}");
    }
    for name in ["", "none", "360", "gregorian_proleptic", "365"] {
        assert_eq!(Calendar::parse(name), None, "{name}");
    }
    for calendar in Calendar::ALL {
        assert_eq!(Calendar::parse(calendar.name()), Some(calendar));
    }
    assert_eq!(Day360.to_string(), "360_day");
}

#[test]
fn month_lengths() {
    assert!((1..=12).all(|m| Day360.days_in_month(2000, m) == 30));
    assert_eq!(NoLeap.days_in_month(2000, 2), 28);
    assert_eq!(AllLeap.days_in_month(2001, 2), 29);
    assert_eq!(Julian.days_in_month(1900, 2), 29);
    assert_eq!(ProlepticGregorian.days_in_month(1900, 2), 28);
    assert_eq!(ProlepticGregorian.days_in_month(2000, 2), 29);
    assert_eq!(ProlepticGregorian.days_in_month(0, 2), 29); // year 0 is divisible by 400
    assert_eq!(Standard.days_in_month(1500, 2), 29); // Julian rules before 1582
    assert_eq!(Standard.days_in_month(1700, 2), 28);
    assert_eq!(Standard.days_in_month(1600, 2), 29);
    assert_eq!(Julian.days_in_month(-1, 2), 28);
    assert_eq!(Julian.days_in_month(-4, 2), 29);
    for calendar in Calendar::ALL {
        assert_eq!(calendar.days_in_month(2000, 0), 0);
        assert_eq!(calendar.days_in_month(2000, 13), 0);
        assert_eq!(calendar.days_in_month(2001, 1), if calendar == Day360 { 30 } else { 31 });
    }
}

/// The day after `d` by the calendar's month lengths (and the 1582 jump).
fn next(calendar: Calendar, (y, m, d): (i64, u32, u32)) -> (i64, u32, u32) {
    if calendar == Standard && (y, m, d) == (1582, 10, 4) {
        (1582, 10, 15)
    } else if d < calendar.days_in_month(y, m) {
        (y, m, d + 1)
    } else if m < 12 {
        (y, m + 1, 1)
    } else {
        (y + 1, 1, 1)
    }
}

#[test]
fn day_numbers_count_consecutive_days() {
    for calendar in Calendar::ALL {
        let mut day = (-401, 1, 1);
        let mut n = calendar.day_number(-401, 1, 1);
        while day.0 < 2401 {
            assert_eq!(calendar.from_day_number(n), day, "{calendar} {n}");
            assert_eq!(calendar.day_number(day.0, day.1, day.2), n, "{calendar} {day:?}");
            day = next(calendar, day);
            n += 1;
        }
    }
}

#[test]
fn day_number_anchors() {
    // 1970..2000: 30 years, 7 of them leap (1972 … 1996).
    assert_eq!(ProlepticGregorian.day_number(1970, 1, 1), 0);
    assert_eq!(ProlepticGregorian.day_number(2000, 1, 1), 30 * 365 + 7);
    assert_eq!(Standard.day_number(2000, 1, 1), 30 * 365 + 7);
    // 400 Gregorian years are 146097 days, 4 Julian ones 1461.
    assert_eq!(ProlepticGregorian.day_number(2400, 1, 1) - ProlepticGregorian.day_number(2000, 1, 1), 146_097);
    assert_eq!(Julian.day_number(2004, 1, 1) - Julian.day_number(2000, 1, 1), 1461);
    // Python: date(1, 1, 1) is 719162 days before 1970-01-01.
    assert_eq!(ProlepticGregorian.day_number(1, 1, 1), -719_162);
    assert_eq!(ProlepticGregorian.from_day_number(-719_162), (1, 1, 1));
    // The Julian calendar runs 13 days behind in 1900..2100: Julian 2000-01-01 is Gregorian 2000-01-14.
    assert_eq!(Julian.day_number(2000, 1, 1), ProlepticGregorian.day_number(2000, 1, 14));
    assert_eq!(Julian.day_number(1970, 1, 1), 13);
    // 10 days behind in 1582, none in 200-03-01..300-02-28, 2 ahead in year 1.
    assert_eq!(Julian.day_number(1582, 10, 5), ProlepticGregorian.day_number(1582, 10, 15));
    assert_eq!(Julian.day_number(250, 6, 1), ProlepticGregorian.day_number(250, 6, 1));
    assert_eq!(Julian.day_number(1, 1, 1), ProlepticGregorian.day_number(0, 12, 30));
    // The standard calendar is Julian, then Gregorian, without a gap between the two.
    assert_eq!(Standard.day_number(1582, 10, 15) - Standard.day_number(1582, 10, 4), 1);
    assert_eq!(Standard.day_number(1000, 3, 1), Julian.day_number(1000, 3, 1));
    assert_eq!(Standard.day_number(1582, 10, 15), ProlepticGregorian.day_number(1582, 10, 15));
    assert_eq!(Standard.from_day_number(Standard.day_number(1582, 10, 4) + 1), (1582, 10, 15));
    // Fixed calendars: whole years of 365, 366 or 360 days from 1970-01-01.
    assert_eq!(NoLeap.day_number(1971, 1, 1), 365);
    assert_eq!(NoLeap.day_number(1970, 3, 1), 59);
    assert_eq!(AllLeap.day_number(1971, 1, 1), 366);
    assert_eq!(AllLeap.day_number(1970, 3, 1), 60);
    assert_eq!(Day360.day_number(1971, 1, 1), 360);
    assert_eq!(Day360.day_number(1970, 2, 1), 30);
    assert_eq!(Day360.from_day_number(-1), (1969, 12, 30));
    assert_eq!(NoLeap.from_day_number(-365), (1969, 1, 1));
}

#[test]
fn extreme_day_numbers_do_not_panic() {
    for calendar in Calendar::ALL {
        assert_eq!(calendar.day_number(i64::MAX, 12, 31), i64::MAX);
        assert_eq!(calendar.day_number(i64::MIN, 1, 1), i64::MIN);
        let _ = calendar.day_number(2000, u32::MAX, u32::MAX);
        let _ = calendar.day_number(2000, 0, 0);
        let _ = calendar.from_day_number(i64::MIN);
        let _ = calendar.from_day_number(i64::MAX);
        let _ = calendar.micros(&at(i64::MAX, u32::MAX, u32::MAX, u32::MAX, u32::MAX, u32::MAX, u32::MAX));
        assert!(calendar.from_micros(i128::MAX).is_none());
        assert!(calendar.from_micros(i128::MIN).is_none());
    }
    // Month 13 runs on into the next year.
    assert_eq!(NoLeap.day_number(1970, 13, 1), 365);
}

#[test]
fn iso_labels() {
    assert_eq!(date(2021, 3, 1).iso(), "2021-03-01");
    assert_eq!(at(2021, 3, 1, 6, 0, 0, 0).iso(), "2021-03-01T06:00");
    assert_eq!(at(2021, 3, 1, 0, 0, 30, 0).iso(), "2021-03-01T00:00:30");
    assert_eq!(at(2021, 3, 1, 6, 0, 30, 250_000).iso(), "2021-03-01T06:00:30.250");
    assert_eq!(at(2021, 3, 1, 6, 0, 0, 1).iso(), "2021-03-01T06:00:00.000001");
    assert_eq!(at(2021, 3, 1, 6, 0, 0, 123_450).iso(), "2021-03-01T06:00:00.123450");
    assert_eq!(at(2021, 3, 1, 23, 59, 59, 999_999).iso(), "2021-03-01T23:59:59.999999");
    assert_eq!(date(0, 1, 1).iso(), "0000-01-01");
    assert_eq!(date(9999, 12, 31).iso(), "9999-12-31");
    assert_eq!(date(42, 1, 1).iso(), "0042-01-01");
    assert_eq!(date(-1, 1, 1).iso(), "-0001-01-01");
    assert_eq!(date(10000, 1, 1).iso(), "+10000-01-01");
    assert_eq!(date(-12345, 6, 7).iso(), "-12345-06-07");
}

#[test]
fn parse_dates() {
    let ok = |text: &str| DateTime::parse(text, ProlepticGregorian).unwrap();
    assert_eq!(ok("2021"), date(2021, 1, 1));
    assert_eq!(ok("2021-03"), date(2021, 3, 1));
    assert_eq!(ok("2021-03-01"), date(2021, 3, 1));
    assert_eq!(ok("2021-3-1"), date(2021, 3, 1));
    assert_eq!(ok("2021-03-01T06"), at(2021, 3, 1, 6, 0, 0, 0));
    assert_eq!(ok("2021-03-01T06:07"), at(2021, 3, 1, 6, 7, 0, 0));
    assert_eq!(ok("2021-03-01 06:07:08"), at(2021, 3, 1, 6, 7, 8, 0));
    assert_eq!(ok("2021-03-01T06:07:08.25"), at(2021, 3, 1, 6, 7, 8, 250_000));
    assert_eq!(ok("2021-03-01T06:07:08.0000019"), at(2021, 3, 1, 6, 7, 8, 1));
    assert_eq!(ok("2021-03-01T06:07:08Z"), at(2021, 3, 1, 6, 7, 8, 0));
    assert_eq!(ok("2021-03-01Z"), date(2021, 3, 1));
    assert_eq!(ok(" 2021-03-01t06:00 "), at(2021, 3, 1, 6, 0, 0, 0));
    assert_eq!(ok("2021-03-01T06:00+00:00"), at(2021, 3, 1, 6, 0, 0, 0));
    assert_eq!(ok("-0001-01-01"), date(-1, 1, 1));
    assert_eq!(ok("+10000-01-01"), date(10000, 1, 1));
    assert_eq!(ok("0000-02-29"), date(0, 2, 29));
    for label in [at(2021, 3, 1, 6, 0, 30, 250_000), at(-44, 3, 15, 12, 0, 0, 0), at(12345, 12, 31, 0, 0, 0, 7)] {
        assert_eq!(ok(&label.iso()), label);
    }
}

#[test]
fn parse_dates_per_calendar() {
    let valid = |text: &str, calendar| DateTime::parse(text, calendar).is_ok();
    assert!(valid("2021-02-30", Day360));
    for calendar in [Standard, ProlepticGregorian, NoLeap, AllLeap, Julian] {
        assert!(!valid("2021-02-30", calendar), "{calendar}");
    }
    assert!(!valid("2021-01-31", Day360));
    assert!(!valid("2000-02-29", NoLeap));
    assert!(valid("2001-02-29", AllLeap));
    assert!(valid("1900-02-29", Julian));
    assert!(!valid("1900-02-29", ProlepticGregorian));
    assert!(!valid("1900-02-29", Standard));
    assert!(valid("1500-02-29", Standard));
    assert!(!valid("1582-10-10", Standard));
    assert!(!valid("1582-10-05", Standard));
    assert!(!valid("1582-10-14", Standard));
    assert!(valid("1582-10-04", Standard));
    assert!(valid("1582-10-15", Standard));
    assert!(valid("1582-10-10", ProlepticGregorian));
    assert!(valid("1582-10-10", Julian));
    assert!(at(2000, 2, 30, 23, 59, 59, 999_999).is_valid(Day360));
    assert!(!at(2000, 1, 1, 0, 0, 0, 1_000_000).is_valid(Day360));
}

#[test]
fn parse_errors_say_what_is_wrong() {
    let error = |text: &str, calendar| DateTime::parse(text, calendar).unwrap_err();
    let message = |text: &str, calendar| error(text, calendar).to_string();
    for text in ["", "abc", "2021-1x", "2021-003", "2021-03-01T", "2021-03-01T06:00:30.", "2021-03-01 foo", "2021-03x"]
    {
        assert!(matches!(error(text, Standard), CalendarError::Syntax { .. }), "{text}");
    }
    assert!(message("12345678901234567890", Standard).contains("more than 18 digits"));
    // A user's year has four digits (ISO 8601): `45` is a number, not the year 45; units
    // may write short years.
    for text in ["45", "45-01-01", "-3", "999-12-31"] {
        assert!(message(text, Standard).contains("fewer than 4 digits"), "{text}");
    }
    assert!(CfTime::parse("days since 1-1-1", Some("noleap")).is_ok());
    assert!(message("x", Standard).contains("YYYY[-MM[-DD"));
    assert!(matches!(error("2021-03-01T06:00+05:00", Standard), CalendarError::TimeZone { .. }));
    assert!(message("2021-02-30", NoLeap).contains("day 30 is not in 1..=28 in 2021-02"));
    assert!(message("2021-02-31", Day360).contains("1..=30"));
    assert!(message("2021-13", Standard).contains("month 13 is not in 1..=12"));
    assert!(message("2021-00", Standard).contains("month 0"));
    assert!(message("2021-01-00", Standard).contains("day 0"));
    assert!(message("2021-03-01T24:00", Standard).contains("hour 24 is not in 0..=23"));
    assert!(message("2021-03-01T06:60", Standard).contains("minute 60"));
    assert!(message("2021-03-01T06:00:60", Standard).contains("second 60"));
    assert!(message("1582-10-10", Standard).contains("1582-10-15"));
    assert!(message("+10000-02-30", Julian).contains("in +10000-02"));
    let e = error("2021-02-29", NoLeap);
    assert!(matches!(&e, CalendarError::InvalidDate { calendar: NoLeap, .. }), "{e:?}");
}

#[test]
fn parse_units() {
    let standard = CfTime::parse("days since 2000-01-01", None).unwrap();
    assert_eq!(
        (standard.calendar, standard.epoch(), standard.unit_micros()),
        (Standard, date(2000, 1, 1), DAY_US as i64)
    );
    for (units, epoch) in [
        ("hours since 1900-01-01 00:00:00", date(1900, 1, 1)),
        ("seconds since 1970-01-01T00:00:00Z", date(1970, 1, 1)),
        ("minutes since 2000-1-1 0:0:0", date(2000, 1, 1)),
        ("days since 2000-01-01 00:00:00.0", date(2000, 1, 1)),
        ("Days Since 2000-01-01", date(2000, 1, 1)),
        ("  days   since   2000-01-01  ", date(2000, 1, 1)),
        ("seconds since 1970-01-01 00:00:00 UTC", date(1970, 1, 1)),
        ("seconds since 1970-01-01 00:00:00 +0000", date(1970, 1, 1)),
        ("hours since 2000-01-01 12:30", at(2000, 1, 1, 12, 30, 0, 0)),
        // An offset east of UTC puts the epoch earlier in UTC, west later.
        ("hours since 2000-01-01 00:00:00 +05:00", at(1999, 12, 31, 19, 0, 0, 0)),
        ("hours since 2000-01-01 00:00:00 -0530", at(2000, 1, 1, 5, 30, 0, 0)),
        ("days since -4713-01-01", date(-4713, 1, 1)),
    ] {
        assert_eq!(cf(units, ProlepticGregorian).epoch(), epoch, "{units}");
    }
    let day = DAY_US as i64;
    for (unit, us) in [
        ("days", day),
        ("day", day),
        ("d", day),
        ("hours", 3_600_000_000),
        ("hour", 3_600_000_000),
        ("hrs", 3_600_000_000),
        ("hr", 3_600_000_000),
        ("h", 3_600_000_000),
        ("minutes", 60_000_000),
        ("minute", 60_000_000),
        ("mins", 60_000_000),
        ("min", 60_000_000),
        ("seconds", 1_000_000),
        ("second", 1_000_000),
        ("secs", 1_000_000),
        ("sec", 1_000_000),
        ("s", 1_000_000),
        ("milliseconds", 1000),
        ("msec", 1000),
        ("ms", 1000),
        ("microseconds", 1),
        ("usec", 1),
        ("us", 1),
    ] {
        assert_eq!(cf(&format!("{unit} since 2000-01-01"), Standard).unit_micros(), us, "{unit}");
    }
}

#[test]
fn parse_unit_errors() {
    let message = |units: &str, calendar: Option<&str>| CfTime::parse(units, calendar).unwrap_err().to_string();
    assert!(message("days since 2000-01-01", Some("none")).contains("unknown calendar \"none\""));
    assert!(message("days since 2000-01-01", Some("")).contains("360_day"));
    assert!(message("months since 2000-01-01", Some("360_day")).contains("no fixed length"));
    assert!(message("years since 2000-01-01", None).contains("no fixed length"));
    assert!(message("fortnights since 2000-01-01", None).contains("expected days, hours"));
    assert!(message("days", None).contains("<unit> since <date>"));
    assert!(message("days after 2000-01-01", None).contains("<unit> since <date>"));
    assert!(message("days since", None).contains("reference date"));
    assert!(message("days since yesterday", None).contains("reference date \"yesterday\""));
    assert!(message("days since 2001-02-29", Some("noleap")).contains("noleap calendar"));
    assert!(message("days since 1582-10-10", None).contains("standard calendar"));
    assert!(CfTime::parse("days since 2000-02-30", Some("360_day")).is_ok());
    assert!(CfTime::parse("days since 2000-02-30", Some("proleptic_gregorian")).is_err());
}

#[test]
fn a_year_of_days_in_each_calendar() {
    for (calendar, length) in [
        (NoLeap, 365.0),
        (Day360, 360.0),
        (AllLeap, 366.0),
        (ProlepticGregorian, 366.0),
        (Standard, 366.0),
        (Julian, 366.0),
    ] {
        let time = cf("days since 2000-01-01", calendar);
        assert_eq!(time.datetime(length), Some(date(2001, 1, 1)), "{calendar}");
        assert_eq!(time.value(&date(2001, 1, 1)), length, "{calendar}");
        // 31 days of January, then February's 28, 29 or 30.
        let march = match calendar {
            NoLeap => date(2000, 3, 1),
            Day360 => date(2000, 2, 30),
            _ => date(2000, 2, 29),
        };
        assert_eq!(time.datetime(59.0), Some(march), "{calendar}");
    }
    // 1900 is leap in the Julian calendar only: Jan (31) + Feb (29) = 60 days to March 1st.
    assert_eq!(cf("days since 1900-01-01", Julian).value(&date(1900, 3, 1)), 60.0);
    assert_eq!(cf("days since 1900-01-01", ProlepticGregorian).value(&date(1900, 3, 1)), 59.0);
}

#[test]
fn before_the_epoch() {
    let standard = cf("days since 2000-01-01", Standard);
    assert_eq!(standard.datetime(-1.0), Some(date(1999, 12, 31)));
    assert_eq!(standard.datetime(-365.0), Some(date(1999, 1, 1)));
    assert_eq!(cf("days since 2000-01-01", NoLeap).datetime(-365.0), Some(date(1999, 1, 1)));
    assert_eq!(cf("days since 2000-01-01", Day360).datetime(-1.0), Some(date(1999, 12, 30)));
    assert_eq!(cf("days since 2000-01-01", Day360).datetime(-360.0), Some(date(1999, 1, 1)));
    assert_eq!(cf("days since 2000-03-01", AllLeap).datetime(-1.0), Some(date(2000, 2, 29)));
    assert_eq!(cf("hours since 2000-01-01", Julian).datetime(-0.5), Some(at(1999, 12, 31, 23, 30, 0, 0)));
    assert_eq!(cf("hours since 2000-01-01", Julian).value(&at(1999, 12, 31, 23, 30, 0, 0)), -0.5);
}

#[test]
fn the_1582_reform() {
    let standard = cf("days since 1582-10-04", Standard);
    assert_eq!(standard.datetime(1.0), Some(date(1582, 10, 15)));
    assert_eq!(standard.value(&date(1582, 10, 15)), 1.0);
    assert_eq!(standard.datetime(-1.0), Some(date(1582, 10, 3)));
    assert_eq!(cf("days since 1582-10-15", Standard).datetime(-1.0), Some(date(1582, 10, 4)));
    assert_eq!(cf("days since 1582-10-04", ProlepticGregorian).datetime(1.0), Some(date(1582, 10, 5)));
    assert_eq!(cf("days since 1582-10-04", Julian).datetime(1.0), Some(date(1582, 10, 5)));
    assert_eq!(cf("days since 1582-10-01", Standard).value(&at(1582, 10, 4, 12, 0, 0, 0)), 3.5);
    // From Julian 0001-01-01 to 1582-10-04: 1581 years with 395 leap days, then 276 days
    // (Jan … Sep: 273, and 3 more); one day on to Gregorian 1582-10-15, then 152384 days to
    // 2000-01-01 (Python: 730119 - 577735). Proleptic: Python's 730119.
    let days = f64::from(1581 * 365 + 395 + 273 + 3 + 1 + 152_384);
    assert_eq!(cf("days since 0001-01-01", Standard).datetime(days), Some(date(2000, 1, 1)));
    assert_eq!(cf("days since 0001-01-01", Standard).value(&date(2000, 1, 1)), days);
    assert_eq!(cf("days since 0001-01-01", ProlepticGregorian).datetime(730_119.0), Some(date(2000, 1, 1)));
}

#[test]
fn fractions_and_units() {
    let hours = cf("hours since 2000-01-01", Standard);
    assert_eq!(hours.datetime(1.5), Some(at(2000, 1, 1, 1, 30, 0, 0)));
    assert_eq!(hours.datetime(0.25), Some(at(2000, 1, 1, 0, 15, 0, 0)));
    assert_eq!(hours.value(&at(2000, 1, 1, 1, 30, 0, 0)), 1.5);
    assert_eq!(hours.value(&at(2000, 1, 2, 0, 0, 0, 0)), 24.0);
    // Python: datetime(2021, 3, 1, 6) - datetime(1900, 1, 1) is 1062102 hours.
    let since_1900 = cf("hours since 1900-01-01 00:00:00", Standard);
    assert_eq!(since_1900.datetime(1_062_102.0), Some(at(2021, 3, 1, 6, 0, 0, 0)));
    // 10^9 Unix seconds: 2001-09-09T01:46:40Z.
    let unix = cf("seconds since 1970-01-01T00:00:00Z", ProlepticGregorian);
    assert_eq!(unix.datetime(1e9), Some(at(2001, 9, 9, 1, 46, 40, 0)));
    assert_eq!(unix.value(&at(2001, 9, 9, 1, 46, 40, 0)), 1e9);
    // 0.1 day is 2 h 24 min, although 0.1 is not exact in binary.
    assert_eq!(cf("days since 1970-01-01", Standard).datetime(0.1), Some(at(1970, 1, 1, 2, 24, 0, 0)));
    let days = cf("days since 2000-01-01", NoLeap);
    assert_eq!(days.value(&at(2000, 1, 1, 6, 0, 0, 0)), 0.25);
    assert_eq!(days.value(&at(2000, 1, 1, 0, 0, 0, 1)), 1.0 / 86_400_000_000.0);
    assert_eq!(cf("milliseconds since 2000-01-01", Day360).datetime(1500.0), Some(at(2000, 1, 1, 0, 0, 1, 500_000)));
    assert_eq!(cf("minutes since 2000-01-01", AllLeap).datetime(90.5), Some(at(2000, 1, 1, 1, 30, 30, 0)));
    // An epoch with an offset: 0 is the epoch in UTC.
    let east = cf("hours since 2000-01-01 00:00:00 +05:00", Standard);
    assert_eq!(east.datetime(0.0), Some(at(1999, 12, 31, 19, 0, 0, 0)));
    assert_eq!(east.value(&date(2000, 1, 1)), 5.0);
}

#[test]
fn rounding_to_microseconds() {
    let us = cf("microseconds since 2000-01-01", ProlepticGregorian);
    // Half to even.
    for (value, micro) in [(0.5, 0), (1.5, 2), (2.5, 2), (0.4999, 0), (0.5001, 1)] {
        assert_eq!(us.datetime(value), Some(at(2000, 1, 1, 0, 0, 0, micro)), "{value}");
    }
    assert_eq!(us.datetime(-0.5), Some(date(2000, 1, 1)));
    assert_eq!(us.datetime(-1.5), Some(at(1999, 12, 31, 23, 59, 59, 999_998)));
    // In seconds and coarser, 1 µs from a whole second is taken for float error (cftime).
    let s = cf("seconds since 2000-01-01", ProlepticGregorian);
    assert_eq!(s.datetime(1.000_000_7), Some(at(2000, 1, 1, 0, 0, 1, 0)));
    assert_eq!(s.datetime(0.999_999_3), Some(at(2000, 1, 1, 0, 0, 1, 0)));
    assert_eq!(s.datetime(1.000_002), Some(at(2000, 1, 1, 0, 0, 1, 2)));
    let ms = cf("milliseconds since 2000-01-01", ProlepticGregorian);
    assert_eq!(ms.datetime(1_000.000_7), Some(at(2000, 1, 1, 0, 0, 1, 1)));
    assert_eq!(s.datetime(5e-324), Some(date(2000, 1, 1)));
    assert_eq!(s.datetime(-0.0), Some(date(2000, 1, 1)));
}

#[test]
fn out_of_range_values() {
    let days = cf("days since 2000-01-01", Standard);
    for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300, 1e14, f64::MAX] {
        assert_eq!(days.datetime(value), None, "{value}");
    }
    // i64 microseconds reach about 292471 years either side of the epoch.
    assert!(days.datetime(292_000.0 * 365.0).is_some());
    assert!(days.datetime(293_000.0 * 366.0).is_none());
    let us = cf("microseconds since 1970-01-01", ProlepticGregorian);
    assert!(us.datetime(9.2e18).is_some());
    assert!(us.datetime(9.3e18).is_none());
    assert!(us.datetime(-9.2e18).is_some());
    // Epochs far out: values near them work, no year overflows silently.
    let far = cf("days since 999999999999999999-12-31", ProlepticGregorian);
    assert_eq!(far.datetime(1.0), Some(date(1_000_000_000_000_000_000, 1, 1)));
    let early = cf("days since -999999999999999999-01-01", NoLeap);
    assert_eq!(early.datetime(-365.0), Some(date(-1_000_000_000_000_000_000, 1, 1)));
}

#[test]
fn round_trips() {
    // An f64 resolves 1 µs only within decades of the epoch (days since 2000 in year 1 are
    // ~7e5, whose last bit is ~10 µs), so far dates are on binary fractions of a day.
    let far = [date(2000, 2, 28), at(1999, 12, 30, 18, 0, 0, 0), at(1, 1, 1, 3, 0, 0, 0), date(-500, 6, 30)];
    for calendar in Calendar::ALL {
        for (units, near) in [
            ("days since 2000-01-01", at(2001, 12, 3, 4, 5, 6, 7)),
            ("hours since 1850-01-01 00:00:00", at(1851, 2, 3, 4, 5, 6, 123_456)),
            ("seconds since 1970-01-01", at(2021, 3, 1, 6, 7, 8, 250_001)),
            ("days since 1-1-1", at(3, 1, 1, 12, 0, 0, 5)),
        ] {
            let time = cf(units, calendar);
            // Exact binary fractions of the unit, on whole microseconds.
            for value in [0.0, 1.0, -1.0, 0.5, -0.25, 59.0, 365.0, 1234.125, -98_765.5, 1e6 + 0.0625, 3e7] {
                let dt = time.datetime(value).unwrap();
                assert_eq!(time.value(&dt), value, "{calendar} {units} {value}");
                assert!(dt.is_valid(calendar), "{calendar} {units} {value} {dt:?}");
            }
            for dt in far.into_iter().chain([near]) {
                assert_eq!(time.datetime(time.value(&dt)), Some(dt), "{calendar} {units} {dt:?}");
                assert_eq!(DateTime::parse(&dt.iso(), calendar).unwrap(), dt);
            }
        }
    }
}
