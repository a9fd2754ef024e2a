//! Reduction operations and their accumulators: one per output element, folded value by
//! value in float64 whatever the stored type, skipping missing values (NaN) as xarray's
//! `skipna=True` does.
//!
//! Mean, variance and standard deviation use West's weighted form of Welford's update
//! (D. H. D. West, "Updating mean and variance estimates", CACM 22(9), 1979), so memory
//! stays one accumulator per output element however many values fold in; sums are
//! Neumaier-compensated. Median and percentiles need every value of their group.

/// What to compute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Mean,
    Sum,
    Min,
    Max,
    /// Population standard deviation (ddof 0).
    Std,
    /// Population variance (ddof 0).
    Var,
    /// Valid (not missing) values.
    Count,
    Median,
    /// A percentile, 0 ..= 100, by `NumPy`'s default (linear) method.
    Percentile(f64),
}

/// Why an `op` is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown op `{0}`; allowed are mean, sum, min, max, std, var, count, median and pNN (a percentile 0 to 100, e.g. p90 or p99.9)"
)]
pub struct UnknownOp(pub String);

impl Op {
    pub fn parse(text: &str) -> Result<Self, UnknownOp> {
        Ok(match text {
            "mean" => Self::Mean,
            "sum" => Self::Sum,
            "min" => Self::Min,
            "max" => Self::Max,
            "std" => Self::Std,
            "var" => Self::Var,
            "count" => Self::Count,
            "median" => Self::Median,
            other => {
                let q = other.strip_prefix('p').and_then(|q| q.parse::<f64>().ok());
                match q {
                    Some(q) if (0.0..=100.0).contains(&q) => Self::Percentile(q),
                    _ => return Err(UnknownOp(other.to_owned())),
                }
            }
        })
    }

    pub fn name(self) -> String {
        match self {
            Self::Mean => "mean".into(),
            Self::Sum => "sum".into(),
            Self::Min => "min".into(),
            Self::Max => "max".into(),
            Self::Std => "std".into(),
            Self::Var => "var".into(),
            Self::Count => "count".into(),
            Self::Median => "median".into(),
            Self::Percentile(q) => format!("p{q}"),
        }
    }

    /// Whether the op needs every value of a group (not a running accumulator).
    pub fn holds_values(self) -> bool {
        matches!(self, Self::Median | Self::Percentile(_))
    }

    /// Whether area weights apply (xarray's weighted mean, sum, std and var).
    pub fn takes_weights(self) -> bool {
        matches!(self, Self::Mean | Self::Sum | Self::Std | Self::Var)
    }
}

/// The running state of one output element.
#[derive(Debug, Clone, Copy)]
pub struct Acc {
    count: u64,
    weight: f64,
    mean: f64,
    m2: f64,
    sum: f64,
    compensation: f64,
    min: f64,
    max: f64,
}

impl Default for Acc {
    fn default() -> Self {
        Self {
            count: 0,
            weight: 0.0,
            mean: 0.0,
            m2: 0.0,
            sum: 0.0,
            compensation: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Acc {
    /// Folds in `x` with weight `w` (1 unweighted); NaN is skipped.
    #[inline]
    pub fn add(&mut self, x: f64, w: f64) {
        if x.is_nan() {
            return;
        }
        self.count += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        // Neumaier's compensated sum of w·x.
        let term = w * x;
        let t = self.sum + term;
        self.compensation += if self.sum.abs() >= term.abs() { (self.sum - t) + term } else { (term - t) + self.sum };
        self.sum = t;
        if w > 0.0 {
            let weight = self.weight + w;
            let delta = x - self.mean;
            self.mean += delta * (w / weight);
            self.m2 += w * delta * (x - self.mean);
            self.weight = weight;
        }
    }

    /// The result of `op` (not median or a percentile); NaN where no value folded in,
    /// except `count` (0).
    pub fn finish(&self, op: Op) -> f64 {
        if self.count == 0 {
            return if op == Op::Count { 0.0 } else { f64::NAN };
        }
        let var = || if self.weight > 0.0 { (self.m2 / self.weight).max(0.0) } else { f64::NAN };
        match op {
            Op::Mean => {
                if self.weight > 0.0 {
                    self.mean
                } else {
                    f64::NAN
                }
            }
            Op::Sum => self.sum + self.compensation,
            Op::Min => self.min,
            Op::Max => self.max,
            Op::Var => var(),
            Op::Std => var().sqrt(),
            Op::Count => self.count as f64,
            Op::Median | Op::Percentile(_) => f64::NAN,
        }
    }
}

/// The `q`-th percentile (0 ..= 100) of `values` (NaN-free), `NumPy`'s linear method;
/// NaN when empty. Sorts `values`.
pub fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_unstable_by(f64::total_cmp);
    let rank = (values.len() - 1) as f64 * (q / 100.0);
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(values.len() - 1);
    let frac = rank - lo as f64;
    let (below, above) = (values[lo], values[hi]);
    // NumPy's `_lerp`: from the nearer end, so a fraction of 1 gives `above` exactly.
    if frac >= 0.5 { above - (above - below) * (1.0 - frac) } else { below + (above - below) * frac }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // small exact binary fractions
mod tests {
    use super::*;

    #[test]
    fn parses_ops_and_percentiles() {
        assert_eq!(Op::parse("p90"), Ok(Op::Percentile(90.0)));
        assert_eq!(Op::parse("p99.5"), Ok(Op::Percentile(99.5)));
        assert_eq!(Op::parse("median"), Ok(Op::Median));
        for bad in ["p101", "p-1", "average", "p", ""] {
            assert!(Op::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn accumulates_as_the_textbook_formulas() {
        let mut acc = Acc::default();
        for x in [2.0, 4.0, f64::NAN, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            acc.add(x, 1.0);
        }
        assert_eq!(acc.finish(Op::Count), 8.0);
        assert_eq!(acc.finish(Op::Sum), 40.0);
        assert_eq!(acc.finish(Op::Mean), 5.0);
        assert_eq!(acc.finish(Op::Var), 4.0);
        assert_eq!(acc.finish(Op::Std), 2.0);
        assert_eq!((acc.finish(Op::Min), acc.finish(Op::Max)), (2.0, 9.0));
        // Weighted: Σw·x / Σw = (1·1 + 3·3) / 4 and Σw(x − m)² / Σw = (1·2.25 + 3·0.25) / 4.
        let mut w = Acc::default();
        w.add(1.0, 1.0);
        w.add(3.0, 3.0);
        assert_eq!(w.finish(Op::Mean), 2.5);
        assert_eq!(w.finish(Op::Var), 0.75);
        assert_eq!(w.finish(Op::Sum), 10.0);
        let empty = Acc::default();
        assert!(empty.finish(Op::Sum).is_nan());
        assert_eq!(empty.finish(Op::Count), 0.0);
    }

    #[test]
    fn percentiles_interpolate_linearly() {
        // numpy.percentile([1, 2, 3, 4], 90) = 3.7; the median of 1..4 is 2.5.
        assert!((percentile(&mut [4.0, 1.0, 3.0, 2.0], 90.0) - 3.7).abs() < 1e-12);
        assert_eq!(percentile(&mut [4.0, 1.0, 3.0, 2.0], 50.0), 2.5);
        assert_eq!(percentile(&mut [7.0], 10.0), 7.0);
        assert_eq!(percentile(&mut [1.0, 5.0], 100.0), 5.0);
        assert!(percentile(&mut [], 50.0).is_nan());
    }
}
