//! A reduction as users ask for it — `op`, `over`, `weights=area`, `within`, `resample`,
//! `coarsen` on a selection — made into a [`Reduction`] on an array's labels, with the
//! labels of what comes out.

use std::sync::Arc;

use crate::coords::calendar::{Calendar, DateTime};
use crate::coords::labels::{Kind, Labels};
use crate::grid::{Grid, Kind as GridKind};
use crate::reduce::area::{self, AreaError};
use crate::reduce::op::Op;
use crate::reduce::polygon::Shape;
use crate::reduce::{Fate, Mask, Reduction};

/// The most output elements (periods, blocks, kept indices) along one dimension, and
/// the most lat × lon cells a polygon is tested on.
pub const MAX_GROUPS: usize = 1 << 24;

/// How `resample` groups times: every N days (from midnight of the first step's day),
/// calendar months or calendar years.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freq {
    Days(u32),
    Months(u32),
    Years(u32),
}

impl Freq {
    /// `1D`, `10d`, `1M`, `3M`, `1Y`.
    pub fn parse(text: &str) -> Option<Self> {
        let split = text.find(|c: char| !c.is_ascii_digit())?;
        let (n, unit) = text.split_at(split);
        let n: u32 = n.parse().ok().filter(|&n| n > 0)?;
        match unit {
            "D" | "d" => Some(Self::Days(n)),
            "M" => Some(Self::Months(n)),
            "Y" | "y" => Some(Self::Years(n)),
            _ => None,
        }
    }
}

/// What was asked.
#[derive(Debug, Clone)]
pub struct Request {
    pub op: Op,
    /// Dimension names to reduce (empty: every dimension not resampled or coarsened).
    pub over: Vec<String>,
    pub area_weights: bool,
    pub within: Option<Shape>,
    pub resample: Option<(String, Freq)>,
    pub coarsen: Vec<(String, u64)>,
}

/// The labels of an output dimension.
#[derive(Debug, Clone, PartialEq)]
pub enum OutLabels {
    /// The labels of these stored indices of array dimension `dim`.
    Selected { dim: usize, indices: Vec<u64> },
    /// The start of each period.
    Periods(Vec<DateTime>),
    /// Each block's mean label (of array dimension `dim`, as stored numbers; indices where
    /// it has no labels).
    Means { dim: usize, values: Vec<f64> },
}

/// A reduction and how to label its result.
#[derive(Debug, Clone)]
pub struct Built {
    pub reduction: Reduction,
    /// Per output dimension, its array dimension and labels.
    pub out: Vec<(usize, OutLabels)>,
}

/// Why a request cannot be made into a reduction.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// A malformed or contradictory request (400).
    #[error("{0}")]
    Invalid(String),
    /// What the array lacks for it, e.g. latitude/longitude labels (422).
    #[error("{0}")]
    Unsupported(String),
    /// A result too large to hold (413).
    #[error("{0}")]
    TooLarge(String),
}

impl From<AreaError> for RequestError {
    fn from(e: AreaError) -> Self {
        Self::Unsupported(e.to_string())
    }
}

/// The array's latitude and longitude dimensions (by their labels' kinds), or what the
/// request needs them for.
fn grid_dims(names: &[String], labels: &[Option<Arc<Labels>>], what: &str) -> Result<(usize, usize), RequestError> {
    let kind_dim = |want: fn(&Kind) -> bool| labels.iter().position(|l| l.as_ref().is_some_and(|l| want(&l.kind)));
    match (kind_dim(|k| matches!(k, Kind::Latitude)), kind_dim(|k| matches!(k, Kind::Longitude))) {
        (Some(lat), Some(lon)) => Ok((lat, lon)),
        _ => Err(RequestError::Unsupported(format!(
            "{what} needs the array's latitude and longitude dimensions with 1-D coordinate arrays (units degrees_north / degrees_east, or named lat / lon); this array's dimensions are {}",
            names.join(", ")
        ))),
    }
}

fn values(labels: &[Option<Arc<Labels>>], d: usize) -> &[f64] {
    labels[d].as_ref().map_or(&[][..], |l| &l.values)
}

/// Which dimensions are reduced, coarsened (by how much) and resampled.
struct Roles {
    reduced: Vec<bool>,
    coarsen: Vec<Option<u64>>,
    resample: Option<(usize, Freq)>,
}

fn roles(request: &Request, names: &[String], scalar: &[bool]) -> Result<Roles, RequestError> {
    let dim_of = |name: &str, what: &str| {
        names.iter().position(|n| n == name).ok_or_else(|| {
            RequestError::Invalid(format!(
                "{what} names `{name}`, which is not a dimension; the dimensions are {}",
                names.join(", ")
            ))
        })
    };
    let rank = names.len();
    let mut reduced = vec![false; rank];
    for name in &request.over {
        reduced[dim_of(name, "over")?] = true;
    }
    let mut coarsen = vec![None; rank];
    for (name, n) in &request.coarsen {
        coarsen[dim_of(name, "coarsen")?] = Some(*n);
    }
    let resample = match &request.resample {
        Some((name, freq)) => Some((dim_of(name, "resample")?, *freq)),
        None => None,
    };
    for d in 0..rank {
        let resampled = resample.is_some_and(|(r, _)| r == d);
        if (coarsen[d].is_some() || resampled) && reduced[d] {
            return Err(RequestError::Invalid(format!(
                "`{}` is both reduced (over) and grouped (resample or coarsen); name it in one",
                names[d]
            )));
        }
        if coarsen[d].is_some() && resampled {
            return Err(RequestError::Invalid(format!("`{}` is both resampled and coarsened", names[d])));
        }
    }
    if request.over.is_empty() && request.resample.is_none() && request.coarsen.is_empty() {
        reduced = vec![true; rank];
    }
    // Scalar dimensions are gone from the result whatever `over` says.
    for (r, &s) in reduced.iter_mut().zip(scalar) {
        *r |= s;
    }
    Ok(Roles { reduced, coarsen, resample })
}

/// Area weights per selected latitude and longitude index.
fn area_weights(
    request: &Request,
    names: &[String],
    labels: &[Option<Arc<Labels>>],
    selected: &[Vec<u64>],
) -> Result<Vec<Option<Vec<f64>>>, RequestError> {
    let mut weights: Vec<Option<Vec<f64>>> = vec![None; names.len()];
    if !request.area_weights {
        return Ok(weights);
    }
    if !request.op.takes_weights() {
        return Err(RequestError::Invalid(format!(
            "weights=area applies to mean, sum, std and var, not {}",
            request.op.name()
        )));
    }
    let (lat, lon) = grid_dims(names, labels, "weights=area")?;
    let lat_f = area::latitude_factors(values(labels, lat))?;
    let lon_f = area::longitude_factors(values(labels, lon))?;
    weights[lat] = Some(selected[lat].iter().map(|&i| lat_f[i as usize]).collect());
    weights[lon] = Some(selected[lon].iter().map(|&i| lon_f[i as usize]).collect());
    Ok(weights)
}

/// The selected lat/lon cells whose centre `shape` holds.
fn polygon_mask(
    shape: &Shape,
    names: &[String],
    labels: &[Option<Arc<Labels>>],
    selected: &[Vec<u64>],
) -> Result<Mask, RequestError> {
    let (lat, lon) = grid_dims(names, labels, "within")?;
    let (nr, nc) = (selected[lat].len(), selected[lon].len());
    if nr.saturating_mul(nc) > MAX_GROUPS * 16 {
        return Err(RequestError::TooLarge(format!(
            "within is tested on {nr} × {nc} cells, more than {}; narrow the selection to the polygon's box",
            MAX_GROUPS * 16
        )));
    }
    if let Some(why) = shape.too_much_work((nr * nc) as u64) {
        return Err(RequestError::TooLarge(why));
    }
    let (lat_l, lon_l) = (values(labels, lat), values(labels, lon));
    let mut inside = Vec::with_capacity(nr * nc);
    for &r in &selected[lat] {
        for &c in &selected[lon] {
            inside.push(shape.contains(lon_l[c as usize], lat_l[r as usize]));
        }
    }
    Ok(Mask { rows: lat, cols: lon, inside, weights: None })
}

/// The most cells of a grid other than latitude/longitude that `within` or `weights=area`
/// look at in one request (each costs a projection of its centre or corners).
pub const MAX_GRID_CELLS: usize = 1 << 22;

/// On a grid other than 1-D latitude/longitude, the cells `within` and `weights=area`
/// take: those whose centre (lon/lat) the polygon holds, each weighed by its area on the
/// sphere; `None` on latitude/longitude grids (their rules are separable) or when neither
/// is asked.
fn grid_mask(request: &Request, grid: Option<&Grid>, selected: &[Vec<u64>]) -> Result<Option<Mask>, RequestError> {
    let Some(grid) = grid.filter(|g| g.kind != GridKind::Geographic) else { return Ok(None) };
    if request.within.is_none() && !request.area_weights {
        return Ok(None);
    }
    if request.area_weights && !request.op.takes_weights() {
        return Err(RequestError::Invalid(format!(
            "weights=area applies to mean, sum, std and var, not {}",
            request.op.name()
        )));
    }
    let [yd, xd] = grid.dims;
    let (rows, cols) = (&selected[yd], &selected[xd]);
    let n = rows.len().saturating_mul(cols.len());
    if n > MAX_GRID_CELLS {
        return Err(RequestError::TooLarge(format!(
            "within and weights=area look at {} × {} cells of this {} grid, more than {MAX_GRID_CELLS}; narrow the selection with sel= or s=",
            rows.len(),
            cols.len(),
            grid.names.join("/")
        )));
    }
    let mut inside = vec![true; n];
    if let Some(shape) = &request.within {
        if let Some(why) = shape.too_much_work(n as u64) {
            return Err(RequestError::TooLarge(why));
        }
        for (k, centre) in grid.centres(rows, cols).into_iter().enumerate() {
            inside[k] = centre.is_some_and(|(lon, lat)| shape.contains(lon, lat));
        }
    }
    let weights = request.area_weights.then(|| grid.areas(rows, cols));
    if let Some(w) = &weights {
        // A cell whose corners are not all on the Earth (a geostationary limb) has no area.
        for (k, a) in w.iter().enumerate() {
            inside[k] &= a.is_finite();
        }
    }
    let weights = weights.map(|w| w.into_iter().map(|a| if a.is_finite() { a } else { 0.0 }).collect());
    Ok(Some(Mask { rows: yd, cols: xd, inside, weights }))
}

/// The selected steps of time dimension `d` that have a date, each one's period and the
/// periods' starts.
fn resampled(
    d: usize,
    freq: Freq,
    names: &[String],
    labels: &[Option<Arc<Labels>>],
    selected: &[u64],
) -> Result<(Vec<u64>, Vec<u32>, Vec<DateTime>), RequestError> {
    let Some(Kind::Time(cf)) = labels[d].as_ref().map(|l| &l.kind) else {
        return Err(RequestError::Unsupported(format!(
            "resample needs `{}` to have CF time labels (a coordinate array with units \"<unit> since <date>\")",
            names[d]
        )));
    };
    let times = values(labels, d);
    let (mut kept, mut dates) = (Vec::new(), Vec::new());
    for &i in selected {
        if let Some(at) = cf.datetime(times[i as usize]) {
            kept.push(i);
            dates.push(at);
        }
    }
    let (ids, starts) = group_periods(&dates, freq, cf.calendar)?;
    Ok((kept, ids, starts))
}

/// Each coarsened block's mean label (of stored numbers; of indices without labels).
fn block_means(labels: Option<&Labels>, selected: &[u64], size: usize) -> Vec<f64> {
    let label = |i: usize| labels.map_or(selected[i] as f64, |l| l.values[selected[i] as usize]);
    (0..selected.len().div_ceil(size))
        .map(|b| {
            let members = b * size..((b + 1) * size).min(selected.len());
            let count = members.len() as f64;
            members.map(label).sum::<f64>() / count
        })
        .collect()
}

/// Builds the reduction of `request` over the cells `selected[d]` (stored indices per
/// dimension; `scalar[d]` when one label or index picked it; `taken`: which of the grid's
/// cells a latitude/longitude box took), on an array whose
/// dimensions are `names` with `labels` and whose grid is `grid` (when it has one).
pub fn build(
    request: &Request,
    names: &[String],
    labels: &[Option<Arc<Labels>>],
    (mut selected, taken): (Vec<Vec<u64>>, Option<Mask>),
    scalar: &[bool],
    grid: Option<&Grid>,
) -> Result<Built, RequestError> {
    let roles = roles(request, names, scalar)?;
    let (weights, mask) = match grid_mask(request, grid, &selected)? {
        Some(mask) => (vec![None; names.len()], Some(mask)),
        None => (
            area_weights(request, names, labels, &selected)?,
            request.within.as_ref().map(|shape| polygon_mask(shape, names, labels, &selected)).transpose()?,
        ),
    };
    // The cells a latitude/longitude box of `sel=` holds count, and only those.
    let mask = match (mask, taken) {
        (Some(mut m), Some(t)) if (m.rows, m.cols) == (t.rows, t.cols) => {
            m.inside.iter_mut().zip(&t.inside).for_each(|(a, b)| *a &= b);
            Some(m)
        }
        (m, t) => m.or(t),
    };
    let mut fates = Vec::with_capacity(names.len());
    let mut out = Vec::new();
    for d in 0..names.len() {
        if let Some((_, freq)) = roles.resample.filter(|(r, _)| *r == d) {
            let (kept, ids, starts) = resampled(d, freq, names, labels, &selected[d])?;
            selected[d] = kept;
            fates.push(Fate::Grouped { ids, len: starts.len() });
            out.push((d, OutLabels::Periods(starts)));
        } else if let Some(size) = roles.coarsen[d] {
            let size = usize::try_from(size).unwrap_or(usize::MAX).max(1);
            let n = selected[d].len();
            let ids = (0..n).map(|i| (i / size) as u32).collect();
            let values = block_means(labels[d].as_deref(), &selected[d], size);
            fates.push(Fate::Grouped { ids, len: values.len() });
            out.push((d, OutLabels::Means { dim: d, values }));
        } else if roles.reduced[d] {
            fates.push(Fate::Reduced);
        } else {
            let n = selected[d].len();
            if n > MAX_GROUPS {
                return Err(RequestError::TooLarge(format!(
                    "`{}` keeps {n} indices, more than {MAX_GROUPS}",
                    names[d]
                )));
            }
            fates.push(Fate::Grouped { ids: (0..n as u32).collect(), len: n });
            out.push((d, OutLabels::Selected { dim: d, indices: selected[d].clone() }));
        }
    }
    Ok(Built { reduction: Reduction { op: request.op, selected, fates, weights, mask }, out })
}

/// Each date's period, and the periods' starts: from the first date's day (days), month
/// (months) or year (years), every N of them, up to the last date's.
fn group_periods(
    dates: &[DateTime],
    freq: Freq,
    calendar: Calendar,
) -> Result<(Vec<u32>, Vec<DateTime>), RequestError> {
    const DAY_US: i128 = 86_400_000_000;
    let Some(first) = dates.first() else { return Ok((Vec::new(), Vec::new())) };
    let day0 = calendar.micros(&DateTime::midnight(first.year, first.month, first.day));
    let month = |at: &DateTime| i128::from(at.year) * 12 + i128::from(at.month) - 1;
    let key = |at: &DateTime| -> i128 {
        match freq {
            Freq::Days(n) => (calendar.micros(at) - day0).div_euclid(DAY_US * i128::from(n)),
            Freq::Months(n) => (month(at) - month(first)).div_euclid(i128::from(n)),
            Freq::Years(n) => (i128::from(at.year) - i128::from(first.year)).div_euclid(i128::from(n)),
        }
    };
    let keys: Vec<i128> = dates.iter().map(key).collect();
    let (lo, hi) = (keys.iter().copied().min().unwrap_or(0), keys.iter().copied().max().unwrap_or(0));
    let len = hi - lo + 1;
    if len > MAX_GROUPS as i128 {
        return Err(RequestError::TooLarge(format!(
            "resample gives {len} periods, more than {MAX_GROUPS}; choose a longer period or fewer steps"
        )));
    }
    let start = |k: i128| -> DateTime {
        match freq {
            Freq::Days(n) => calendar.from_micros(day0 + k * DAY_US * i128::from(n)).unwrap_or(DateTime::midnight(
                first.year,
                first.month,
                first.day,
            )),
            Freq::Months(n) => {
                let m = month(first) + k * i128::from(n);
                DateTime::midnight(m.div_euclid(12) as i64, (m.rem_euclid(12) + 1) as u32, 1)
            }
            Freq::Years(n) => DateTime::midnight(first.year + (k * i128::from(n)) as i64, 1, 1),
        }
    };
    let ids = keys.iter().map(|k| (k - lo) as u32).collect();
    let starts = (lo..=hi).map(start).collect();
    Ok((ids, starts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_parse() {
        assert_eq!(Freq::parse("1D"), Some(Freq::Days(1)));
        assert_eq!(Freq::parse("10d"), Some(Freq::Days(10)));
        assert_eq!(Freq::parse("3M"), Some(Freq::Months(3)));
        assert_eq!(Freq::parse("1Y"), Some(Freq::Years(1)));
        for bad in ["M", "0D", "1m", "1W", "1.5D", ""] {
            assert_eq!(Freq::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn periods_follow_the_calendar() {
        // 360_day: 2000-01-29 .. 2000-02-30 daily are months 0 and 1.
        let cal = Calendar::Day360;
        let dates: Vec<DateTime> = (0..32)
            .map(|k| cal.from_micros(cal.micros(&DateTime::midnight(2000, 1, 29)) + k * 86_400_000_000).unwrap())
            .collect();
        let (ids, starts) = group_periods(&dates, Freq::Months(1), cal).unwrap();
        assert_eq!(starts, vec![DateTime::midnight(2000, 1, 1), DateTime::midnight(2000, 2, 1)]);
        assert_eq!(ids.iter().filter(|&&i| i == 0).count(), 2, "Jan 29 and 30");
        // 10-day windows from the first day's midnight: a step at 06:00 on day 10 is in the second.
        let noleap = Calendar::NoLeap;
        let at = |d: u32, h: u32| DateTime { hour: h, ..DateTime::midnight(2001, 1, d) };
        let (ids, starts) = group_periods(&[at(1, 12), at(10, 23), at(11, 6)], Freq::Days(10), noleap).unwrap();
        assert_eq!(ids, vec![0, 0, 1]);
        assert_eq!(starts, vec![DateTime::midnight(2001, 1, 1), DateTime::midnight(2001, 1, 11)]);
    }
}
