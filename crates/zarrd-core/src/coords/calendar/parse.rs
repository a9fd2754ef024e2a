//! Dates as users and CF units write them, read into their fields; whether such a date
//! exists is the calendar's question (the parent module's). A leaf.

/// A date and time as written, with its time zone offset in minutes east of UTC. Missing
/// parts are the start: month 1, day 1, midnight.
pub(super) struct Written {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micro: u32,
    pub offset: i64,
}

/// Who wrote a date: CF units write years of any width (`days since 1-1-1`); a user's
/// date is ISO 8601, whose years have at least four digits, so that `45` is a number, not
/// the year 45.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    Units,
    User,
}

/// Reads `YYYY[-MM[-DD[(T| )HH[:MM[:SS[.f…]]]][ ][Z|UTC|±HH:MM]]]`, year optionally signed,
/// other fields of 1 or 2 digits.
pub(super) fn written(text: &str, writer: Writer) -> Result<Written, &'static str> {
    let mut c = Cursor { s: text.trim().as_bytes(), at: 0 };
    let negative = c.eat(b'-');
    if !negative {
        c.eat(b'+');
    }
    let digits = c.digits();
    if digits.is_empty() {
        return Err("it does not start with a year");
    }
    if digits.len() > 18 {
        return Err("the year has more than 18 digits");
    }
    if writer == Writer::User && digits.len() < 4 {
        return Err("the year has fewer than 4 digits");
    }
    let year = digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'));
    let year = if negative { -year } else { year };
    let mut at = Written { year, month: 1, day: 1, hour: 0, minute: 0, second: 0, micro: 0, offset: 0 };
    if c.eat(b'-') {
        at.month = c.field("the month needs 1 or 2 digits")?;
        if c.eat(b'-') {
            at.day = c.field("the day needs 1 or 2 digits")?;
            let spaced = c.spaces();
            if (!spaced && (c.eat(b'T') || c.eat(b't'))) || (spaced && c.peek().is_some_and(|b| b.is_ascii_digit())) {
                c.time(&mut at)?;
                c.spaces();
            }
            if c.at < c.s.len() {
                at.offset = c.zone()?;
                c.spaces();
            }
        }
    }
    if c.at < c.s.len() {
        return Err("unexpected text after the date");
    }
    Ok(at)
}

struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn digits(&mut self) -> &'a [u8] {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        &self.s[start..self.at]
    }

    fn spaces(&mut self) -> bool {
        let start = self.at;
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
        self.at > start
    }

    /// A field of 1 or 2 digits.
    fn field(&mut self, reason: &'static str) -> Result<u32, &'static str> {
        match self.digits() {
            digits @ ([_] | [_, _]) => Ok(digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0'))),
            _ => Err(reason),
        }
    }

    /// `HH[:MM[:SS[.f…]]]`; fractions past microseconds are dropped.
    fn time(&mut self, at: &mut Written) -> Result<(), &'static str> {
        at.hour = self.field("the hour needs 1 or 2 digits")?;
        if self.eat(b':') {
            at.minute = self.field("the minute needs 1 or 2 digits")?;
            if self.eat(b':') {
                at.second = self.field("the second needs 1 or 2 digits")?;
                if self.eat(b'.') || self.eat(b',') {
                    let digits = self.digits();
                    if digits.is_empty() {
                        return Err("a fraction of a second needs digits");
                    }
                    let padded = digits.iter().chain(std::iter::repeat(&b'0')).take(6);
                    at.micro = padded.fold(0, |n, d| n * 10 + u32::from(d - b'0'));
                }
            }
        }
        Ok(())
    }

    /// `Z`, `UTC`, `GMT` or `±HH[[:]MM]`, in minutes east of UTC.
    fn zone(&mut self) -> Result<i64, &'static str> {
        const REASON: &str = "the time zone must be Z, UTC or ±HH:MM";
        let rest = &self.s[self.at..];
        if rest.first().is_some_and(|b| b.eq_ignore_ascii_case(&b'z')) {
            self.at += 1;
            return Ok(0);
        }
        if rest.len() >= 3 && (rest[..3].eq_ignore_ascii_case(b"utc") || rest[..3].eq_ignore_ascii_case(b"gmt")) {
            self.at += 3;
            return Ok(0);
        }
        let sign = if self.eat(b'+') {
            1
        } else if self.eat(b'-') {
            -1
        } else {
            return Err(REASON);
        };
        let hours = self.digits();
        let (hours, minutes) = match hours {
            [h1, h2] if self.eat(b':') => (u32::from(h1 - b'0') * 10 + u32::from(h2 - b'0'), self.field(REASON)?),
            [h1, h2] => (u32::from(h1 - b'0') * 10 + u32::from(h2 - b'0'), 0),
            [h1, h2, m1, m2] => {
                (u32::from(h1 - b'0') * 10 + u32::from(h2 - b'0'), u32::from(m1 - b'0') * 10 + u32::from(m2 - b'0'))
            }
            _ => return Err(REASON),
        };
        if hours > 23 || minutes > 59 {
            return Err("the time zone offset is out of range");
        }
        Ok(sign * i64::from(hours * 60 + minutes))
    }
}
