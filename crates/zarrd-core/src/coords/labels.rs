//! The labels of one dimension: the values of its 1-D coordinate array, and the searches
//! label selection makes on them — exact, nearest and ranges — by binary search on sorted
//! labels (a linear scan only for labels in no order).
//!
//! Time labels (CF `units = "<unit> since <date>"`) are compared as stored numbers: a
//! user's date is converted once into the array's units and calendar. Longitudes are
//! compared modulo 360, so −75 finds 285 on a 0..360 grid, and a range may cross the
//! stored seam (then it is two runs of indices).

use crate::coords::calendar::{CalendarError, CfTime, DateTime};

/// What the labels of a dimension measure.
#[derive(Debug, Clone)]
pub enum Kind {
    Plain,
    /// Degrees north (compared as plain numbers; found by area weights and polygons).
    Latitude,
    /// Degrees east, compared modulo 360.
    Longitude,
    /// CF time: stored numbers of a unit since an epoch, in a calendar.
    Time(CfTime),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Ascending,
    Descending,
    /// Not strictly monotonic (or holding NaN): exact and nearest scan, ranges are refused.
    None,
}

/// The labels of one dimension.
#[derive(Debug, Clone)]
pub struct Labels {
    pub values: Vec<f64>,
    pub kind: Kind,
    order: Order,
}

/// A run of consecutive stored indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub count: u64,
}

/// Why a label could not be found or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabelError {
    /// A label of the wrong kind for the dimension: a number where dates are, a date or
    /// a word where numbers are (a bad parameter, not an absent label).
    #[error("`{text}` is not {what}{why}; this dimension takes {takes}")]
    Form { text: String, what: &'static str, why: String, takes: String },
    #[error("{0}")]
    Date(#[from] CalendarError),
    #[error("there is no label {text}; the nearest is {nearest} (`~` selects the nearest label)")]
    Absent { text: String, nearest: String },
    #[error("the labels hold no value to compare with (all missing)")]
    Empty,
    #[error("a range needs labels in ascending or descending order; these are in no order")]
    Unordered,
}

impl Labels {
    pub fn new(values: Vec<f64>, kind: Kind) -> Self {
        let order = if values.len() < 2 || values.windows(2).all(|w| w[0] < w[1]) {
            Order::Ascending
        } else if values.windows(2).all(|w| w[0] > w[1]) {
            Order::Descending
        } else {
            Order::None
        };
        Self { values, kind, order }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether the labels are times.
    pub fn is_time(&self) -> bool {
        matches!(self.kind, Kind::Time(_))
    }

    /// The stored value a user's label stands for: a number, or a date in ISO 8601.
    pub fn parse(&self, text: &str) -> Result<f64, LabelError> {
        // The form is shown by the dimension's own first label where it has one.
        let example = |fallback: &str| (0..self.len()).find_map(|i| self.text(i)).unwrap_or_else(|| fallback.into());
        match &self.kind {
            Kind::Time(cf) => match DateTime::parse(text, cf.calendar) {
                Ok(at) => Ok(cf.value(&at)),
                Err(CalendarError::Syntax { reason, .. }) => Err(LabelError::Form {
                    text: text.to_owned(),
                    what: "a date",
                    why: format!(" ({reason})"),
                    takes: format!("ISO 8601 dates, e.g. `{}`", example("2021-03-01")),
                }),
                Err(e) => Err(e.into()),
            },
            _ => text.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| LabelError::Form {
                text: text.to_owned(),
                what: "a number",
                why: String::new(),
                takes: format!("numbers, e.g. `{}`", example("45.5")),
            }),
        }
    }

    /// Label `i` as text: a date in ISO 8601, or the number in its shortest form; `None`
    /// when missing.
    pub fn text(&self, i: usize) -> Option<String> {
        let v = *self.values.get(i)?;
        match &self.kind {
            Kind::Time(cf) => cf.datetime(v).map(|d| d.iso()),
            _ => v.is_finite().then(|| ryu::Buffer::new().format_finite(v).to_owned()),
        }
    }

    /// Longitudes are compared after bringing `v` within 360 of the lowest label.
    fn normalized(&self, v: f64) -> f64 {
        match self.kind {
            Kind::Longitude => {
                // The lowest label: an end of sorted labels (no scan per lookup).
                let west = match self.order {
                    Order::Ascending => self.values.first().copied().unwrap_or(f64::NAN),
                    Order::Descending => self.values.last().copied().unwrap_or(f64::NAN),
                    Order::None => self.values.iter().copied().fold(f64::INFINITY, f64::min),
                };
                if west.is_finite() { west + (v - west).rem_euclid(360.0) } else { v }
            }
            _ => v,
        }
    }

    /// The distance between a label and `v` (around the circle for longitudes).
    fn distance(&self, label: f64, v: f64) -> f64 {
        let d = (label - v).abs();
        match self.kind {
            Kind::Longitude => {
                let d = d.rem_euclid(360.0);
                d.min(360.0 - d)
            }
            _ => d,
        }
    }

    /// The index of the label equal to `v` (`text` is how the user wrote it).
    pub fn exact(&self, v: f64, text: &str) -> Result<usize, LabelError> {
        let nearest = self.nearest(v)?;
        if self.distance(self.values[nearest], v) == 0.0 {
            return Ok(nearest);
        }
        Err(LabelError::Absent { text: text.to_owned(), nearest: self.text(nearest).unwrap_or_default() })
    }

    /// The index of the label nearest to `v`; ties go to the lower index.
    pub fn nearest(&self, v: f64) -> Result<usize, LabelError> {
        let mut candidates: Vec<usize> = match self.order {
            Order::None => (0..self.len()).collect(),
            order => {
                let w = self.normalized(v);
                let k = match order {
                    Order::Ascending => self.values.partition_point(|&x| x < w),
                    _ => self.values.partition_point(|&x| x > w),
                };
                let mut c = vec![k.saturating_sub(1), k];
                if matches!(self.kind, Kind::Longitude) {
                    // Across the seam, the nearest may be at the other end.
                    c.extend([0, self.len().saturating_sub(1)]);
                }
                c
            }
        };
        candidates.retain(|&i| i < self.len() && !self.values[i].is_nan());
        candidates.sort_unstable();
        candidates.dedup();
        let mut best: Option<(f64, usize)> = None;
        for i in candidates {
            let d = self.distance(self.values[i], v);
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, i));
            }
        }
        best.map(|(_, i)| i).ok_or(LabelError::Empty)
    }

    /// The indices of every label within `[min(a, b), max(a, b)]` (an end `None` is open),
    /// in stored order: one run, or two for a longitude range across the stored seam (from
    /// `a` to `b` in that order).
    pub fn range(&self, a: Option<f64>, b: Option<f64>) -> Result<Vec<Run>, LabelError> {
        let (lo, hi) = match (a, b) {
            (Some(a), Some(b)) => (a.min(b), a.max(b)),
            (a, b) => (a.unwrap_or(f64::NEG_INFINITY), b.unwrap_or(f64::INFINITY)),
        };
        if matches!(self.kind, Kind::Longitude) && self.order == Order::Ascending && lo.is_finite() && hi.is_finite() {
            return Ok(self.longitude_range(lo, hi));
        }
        Ok(vec![self.plain_range(lo, hi)?])
    }

    fn plain_range(&self, lo: f64, hi: f64) -> Result<Run, LabelError> {
        let (start, end) = match self.order {
            Order::Ascending => (self.values.partition_point(|&x| x < lo), self.values.partition_point(|&x| x <= hi)),
            Order::Descending => (self.values.partition_point(|&x| x > hi), self.values.partition_point(|&x| x >= lo)),
            Order::None => return Err(LabelError::Unordered),
        };
        Ok(Run { start: start as u64, count: end.saturating_sub(start) as u64 })
    }

    /// Ascending longitudes: the labels in `[lo, hi]` taken modulo 360, from `lo` on. When
    /// `lo..hi` lies within the stored labels as they are, that is one plain run.
    fn longitude_range(&self, lo: f64, hi: f64) -> Vec<Run> {
        let (first, last) = (self.values[0], self.values[self.len() - 1]);
        if lo >= first && hi <= last || hi - lo >= 360.0 {
            let (lo, hi) = if hi - lo >= 360.0 { (first, last) } else { (lo, hi) };
            return vec![self.plain_range(lo, hi).unwrap_or(Run { start: 0, count: 0 })];
        }
        let lo2 = self.normalized(lo);
        let hi2 = lo2 + (hi - lo);
        let head = self.plain_range(lo2, hi2).unwrap_or(Run { start: 0, count: 0 });
        // The labels past the seam, taken one turn up.
        let tail = self.plain_range(lo2 - 360.0, hi2 - 360.0).unwrap_or(Run { start: 0, count: 0 });
        let mut runs = vec![head];
        if tail.count > 0 && tail.start + tail.count <= head.start {
            runs.push(tail);
        }
        runs.retain(|r| r.count > 0);
        if runs.is_empty() {
            runs.push(Run { start: 0, count: 0 });
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lon(values: Vec<f64>) -> Labels {
        Labels::new(values, Kind::Longitude)
    }

    #[test]
    fn nearest_and_exact_on_ascending_and_descending_labels() {
        let up = Labels::new(vec![0.0, 1.0, 2.0, 4.0], Kind::Plain);
        assert_eq!(up.nearest(2.9), Ok(2));
        assert_eq!(up.nearest(3.0), Ok(2), "a tie goes to the lower index");
        assert_eq!(up.nearest(-7.0), Ok(0));
        assert_eq!(up.nearest(70.0), Ok(3));
        assert_eq!(up.exact(4.0, "4"), Ok(3));
        assert_eq!(up.exact(3.0, "3"), Err(LabelError::Absent { text: "3".into(), nearest: "2.0".into() }));
        let down = Labels::new(vec![10.0, 5.0, 0.0, -5.0], Kind::Plain);
        assert_eq!(down.nearest(2.5), Ok(1), "a tie goes to the lower index");
        assert_eq!(down.nearest(-4.0), Ok(3));
        assert_eq!(down.range(Some(-1.0), Some(7.0)), Ok(vec![Run { start: 1, count: 2 }]));
        assert_eq!(down.range(None, Some(0.0)), Ok(vec![Run { start: 2, count: 2 }]));
        assert_eq!(up.range(Some(4.0), Some(1.0)), Ok(vec![Run { start: 1, count: 3 }]));
        assert_eq!(up.range(Some(2.5), Some(3.0)), Ok(vec![Run { start: 3, count: 0 }]));
        let none = Labels::new(vec![3.0, 1.0, 2.0], Kind::Plain);
        assert_eq!(none.nearest(1.1), Ok(1));
        assert_eq!(none.range(Some(0.0), Some(1.0)), Err(LabelError::Unordered));
    }

    #[test]
    fn a_label_of_the_wrong_kind_names_the_form_the_dimension_takes() {
        let cf = crate::coords::calendar::CfTime::parse("days since 2021-01-01", Some("standard")).unwrap();
        let time = Labels::new(vec![0.0, 1.0, 2.0], Kind::Time(cf));
        // A number is not a date: ISO 8601 years have four digits.
        for text in ["45", "45.5", "-3", "1e5", "abc"] {
            let err = time.parse(text).unwrap_err();
            assert!(matches!(err, LabelError::Form { what: "a date", .. }), "{text}: {err:?}");
            let message = err.to_string();
            assert!(message.contains("takes ISO 8601 dates, e.g. `2021-01-01`"), "{message}");
        }
        assert_eq!(time.parse("2021-01-03"), Ok(2.0));
        assert_eq!(time.parse("2021"), Ok(0.0), "a year alone is ISO 8601");
        // A date that is not in the calendar stays a date error.
        assert!(matches!(time.parse("2021-02-30"), Err(LabelError::Date(_))));
        let lat = Labels::new(vec![-88.75, 0.0], Kind::Latitude);
        for text in ["2021-03-01", "north", "NaN", "inf"] {
            let err = lat.parse(text).unwrap_err();
            assert!(matches!(err, LabelError::Form { what: "a number", .. }), "{text}: {err:?}");
            assert!(err.to_string().contains("takes numbers, e.g. `-88.75`"), "{err}");
        }
    }

    #[test]
    fn longitudes_compare_modulo_360_and_ranges_cross_the_seam() {
        let grid = lon((0..144).map(|i| f64::from(i) * 2.5).collect());
        assert_eq!(grid.exact(-75.0, "-75"), Ok(114)); // 285
        assert_eq!(grid.nearest(-1.0), Ok(0));
        assert_eq!(grid.nearest(-1.3), Ok(143), "357.5 is 1.2 away, 0 is 1.3");
        // −10..10 on 0..360: 350 .. 357.5, then 0 .. 10.
        assert_eq!(
            grid.range(Some(-10.0), Some(10.0)),
            Ok(vec![Run { start: 140, count: 4 }, Run { start: 0, count: 5 }])
        );
        assert_eq!(grid.range(Some(10.0), Some(20.0)), Ok(vec![Run { start: 4, count: 5 }]));
        assert_eq!(grid.range(Some(-80.0), Some(-75.0)), Ok(vec![Run { start: 112, count: 3 }]));
        // 170..190 on −180..180: 170 .. 180, then −180 .. −170.
        let centred = lon((0..36).map(|i| -180.0 + f64::from(i) * 10.0).collect());
        assert_eq!(
            centred.range(Some(170.0), Some(190.0)),
            Ok(vec![Run { start: 35, count: 1 }, Run { start: 0, count: 2 }])
        );
        assert_eq!(centred.range(Some(-400.0), Some(400.0)), Ok(vec![Run { start: 0, count: 36 }]));
    }
}
