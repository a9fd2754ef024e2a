//! Points and cells on a latitude/longitude grid, as OGC EDR queries name them: WKT
//! `POINT` and `MULTIPOINT`, the cell that contains a point, the cells whose centres lie in
//! a box or within a great-circle distance, and the box that holds the cells taken (the
//! shorter way round on a grid that goes all the way round).

use crate::coords::cell_edges;
use crate::coords::labels::Labels;

/// The mean Earth radius (IUGG), in km: great-circle distances are on this sphere.
pub const EARTH_RADIUS_KM: f64 = 6371.0088;

/// The most points a `MULTIPOINT` may have.
pub const MAX_POINTS: usize = 10_000;

/// Why text is not a point or points.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "coords is not a point: {0}; allowed are WKT POINT(lon lat) and MULTIPOINT((lon lat), (lon lat), ...) in degrees, at most 10000 points"
)]
pub struct PointError(pub String);

/// Parses WKT `POINT(x y)`, `MULTIPOINT((x y), …)` or `MULTIPOINT(x y, …)` into (lon, lat)
/// pairs, and says whether it was a `MULTIPOINT`.
pub fn parse_points(wkt: &str) -> Result<(Vec<(f64, f64)>, bool), PointError> {
    points(wkt, true)
}

/// As [`parse_points`], for points in a projection's own x/y (no latitude range).
pub fn parse_native_points(wkt: &str) -> Result<(Vec<(f64, f64)>, bool), PointError> {
    points(wkt, false)
}

fn points(wkt: &str, degrees: bool) -> Result<(Vec<(f64, f64)>, bool), PointError> {
    let text = wkt.trim();
    let upper = text.get(..10).unwrap_or(text).to_ascii_uppercase();
    let (multi, body) = if upper.starts_with("MULTIPOINT") {
        (true, &text[10..])
    } else if upper.starts_with("POINT") {
        (false, &text[5..])
    } else {
        let start: String = text.chars().take(20).collect();
        return Err(PointError(format!("`{start}` is neither POINT nor MULTIPOINT")));
    };
    let inner = body
        .trim()
        .strip_prefix('(')
        .and_then(|b| b.strip_suffix(')'))
        .ok_or_else(|| PointError("the coordinates must be in parentheses".into()))?;
    let mut points = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        let pair = if multi { item.strip_prefix('(').and_then(|i| i.strip_suffix(')')).unwrap_or(item) } else { item };
        let mut parts = pair.split_whitespace();
        let number = |s: Option<&str>| s.and_then(|s| s.parse::<f64>().ok()).filter(|v| v.is_finite());
        let (Some(lon), Some(lat), None) = (number(parts.next()), number(parts.next()), parts.next()) else {
            return Err(PointError(format!("`{item}` is not a pair of numbers `lon lat`")));
        };
        if degrees && !(-90.0..=90.0).contains(&lat) {
            return Err(PointError(format!("latitude {lat} is not within -90..90")));
        }
        points.push((lon, lat));
        if points.len() > MAX_POINTS {
            return Err(PointError("too many points".into()));
        }
    }
    if !multi && points.len() != 1 {
        return Err(PointError("a POINT has one pair of numbers; use MULTIPOINT for several".into()));
    }
    Ok((points, multi))
}

/// The great-circle distance between two points, in km (haversine).
pub fn great_circle_km(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let (dp, dl) = ((lat2 - lat1).to_radians(), (lon2 - lon1).to_radians());
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * a.sqrt().min(1.0).asin()
}

/// `lon` brought to [-180, 180).
pub fn crs84_longitude(lon: f64) -> f64 {
    (lon + 180.0).rem_euclid(360.0) - 180.0
}

/// Whether longitude `lon` lies in the arc from `west` eastwards to `east` (ends included;
/// `west > east` crosses the antimeridian; an arc of 360 or more holds everything).
pub fn in_arc(lon: f64, west: f64, east: f64) -> bool {
    let east = if east < west { east + 360.0 } else { east };
    east - west >= 360.0 || west + (lon - west).rem_euclid(360.0) <= east
}

/// One axis of a grid: its labels and the outer edges of its cells.
pub struct GridAxis<'a> {
    pub labels: &'a Labels,
    /// The lowest and highest cell edge.
    lo: f64,
    hi: f64,
    longitude: bool,
}

impl<'a> GridAxis<'a> {
    pub fn new(labels: &'a Labels, longitude: bool) -> Self {
        let edges = cell_edges(&labels.values);
        // One label has no edges: the axis is that one value.
        let single = labels.values.first().copied().unwrap_or(f64::NAN);
        let (a, b) = (edges.first().copied().unwrap_or(single), edges.last().copied().unwrap_or(single));
        let (lo, hi) = (a.min(b), a.max(b));
        Self { labels, lo, hi, longitude }
    }

    /// Whether the cells go all the way round (a longitude axis spanning 360°).
    pub fn is_global(&self) -> bool {
        self.longitude && self.hi - self.lo >= 360.0 - 1e-9
    }

    /// The index of the cell containing `v` (edges midway between labels), `None` when `v`
    /// is beyond the outer edges (longitudes compared modulo 360).
    pub fn containing(&self, v: f64) -> Option<usize> {
        let inside = if self.longitude {
            self.is_global() || self.lo + (v - self.lo).rem_euclid(360.0) <= self.hi
        } else {
            (self.lo..=self.hi).contains(&v)
        };
        if !inside {
            return None;
        }
        self.labels.nearest(v).ok()
    }

    /// The lowest and highest cell edge.
    pub fn edges(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }
}

/// The box holding the cells a query takes: rows `rows` (one run, in stored order),
/// columns `columns` (in order eastwards: on a grid that goes all the way round, the
/// shorter arc holding every column taken, which may wrap past the last index), and which
/// cells of the box were taken (row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    pub rows: std::ops::Range<u64>,
    pub columns: Vec<u64>,
    pub mask: Vec<bool>,
}

impl Taken {
    /// The box of `cells` (row, column), each at most once; `None` when there are none.
    /// `lon` are the column labels, `global` whether they go all the way round.
    pub fn of(cells: &[(u64, u64)], lon: &[f64], global: bool) -> Option<Self> {
        let first = cells.first()?;
        let (mut r0, mut r1) = (first.0, first.0);
        for &(r, _) in cells {
            (r0, r1) = (r0.min(r), r1.max(r));
        }
        let mut taken_columns: Vec<u64> = cells.iter().map(|c| c.1).collect();
        taken_columns.sort_unstable();
        taken_columns.dedup();
        let columns = columns_between(&taken_columns, lon, global);
        let width = columns.len();
        let mut at = vec![usize::MAX; lon.len()];
        for (k, &c) in columns.iter().enumerate() {
            at[c as usize] = k;
        }
        let mut mask = vec![false; (r1 - r0 + 1) as usize * width];
        for &(r, c) in cells {
            mask[(r - r0) as usize * width + at[c as usize]] = true;
        }
        Some(Self { rows: r0..r1 + 1, columns, mask })
    }

    /// The columns as runs of consecutive indices (two when the arc wraps).
    pub fn column_runs(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for &c in &self.columns {
            match runs.last_mut() {
                Some((start, count)) if *start + *count == c => *count += 1,
                _ => runs.push((c, 1)),
            }
        }
        runs
    }
}

/// The columns from the first to the last of `taken` (sorted indices): on a grid going
/// all the way round with ascending labels, eastwards along the shorter arc (the
/// complement of the widest gap between taken columns); else every index between.
fn columns_between(taken: &[u64], lon: &[f64], global: bool) -> Vec<u64> {
    let n = lon.len() as u64;
    let (first, last) = (taken[0], taken[taken.len() - 1]);
    let ascending = lon.windows(2).all(|w| w[0] < w[1]);
    if !global || !ascending || taken.len() < 2 {
        return (first..=last).collect();
    }
    // The widest gap (in degrees, eastwards) between neighbouring taken columns, the one
    // from the last back round to the first included: the box starts after it.
    let mut start = 0;
    let mut widest = (lon[first as usize] - lon[last as usize]).rem_euclid(360.0);
    for (k, w) in taken.windows(2).enumerate() {
        let gap = lon[w[1] as usize] - lon[w[0] as usize];
        if gap > widest {
            (widest, start) = (gap, k + 1);
        }
    }
    let (from, to) = (taken[start], taken[(start + taken.len() - 1) % taken.len()]);
    if from <= to { (from..=to).collect() } else { (from..n).chain(0..=to).collect() }
}

/// The x values of `columns` (labels `lon`) as CRS84 longitudes increasing eastwards: the
/// first within [-180, 180), each next one further east (past 180 across the antimeridian).
pub fn eastward_longitudes(columns: &[u64], lon: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::with_capacity(columns.len());
    for &c in columns {
        let l = lon[c as usize];
        let x = match out.last() {
            None => crs84_longitude(l),
            Some(&prev) => {
                let step = (l - lon[columns[out.len() - 1] as usize]).rem_euclid(360.0);
                prev + step
            }
        };
        out.push(x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::labels::Kind;

    #[test]
    fn points_parse_from_wkt() {
        assert_eq!(parse_points("POINT(-75.2 45.3)"), Ok((vec![(-75.2, 45.3)], false)));
        assert_eq!(parse_points(" point ( 1 2 ) "), Ok((vec![(1.0, 2.0)], false)));
        assert_eq!(parse_points("MULTIPOINT((1 2), (3 4))"), Ok((vec![(1.0, 2.0), (3.0, 4.0)], true)));
        assert_eq!(parse_points("MULTIPOINT(1 2, 3 4)"), Ok((vec![(1.0, 2.0), (3.0, 4.0)], true)));
        for bad in [
            "POINT(1)",
            "POINT(1 2 3)",
            "POINT(a b)",
            "POINT 1 2",
            "LINESTRING(1 2, 3 4)",
            "POINT(1 2, 3 4)",
            "POINT(0 91)",
        ] {
            assert!(parse_points(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn great_circles_on_the_mean_sphere() {
        // A quarter of the equator, and one degree of a meridian.
        let quarter = std::f64::consts::PI * EARTH_RADIUS_KM / 2.0;
        assert!((great_circle_km(0.0, 0.0, 90.0, 0.0) - quarter).abs() < 1e-9);
        assert!((great_circle_km(10.0, 0.0, 10.0, 1.0) - quarter / 90.0).abs() < 1e-9);
        assert!((great_circle_km(179.5, 0.0, -179.5, 0.0) - quarter / 90.0).abs() < 1e-9);
    }

    #[test]
    fn a_point_is_in_the_cell_whose_edges_hold_it() {
        let lat = Labels::new(vec![-60.0, -50.0, -40.0], Kind::Latitude);
        let axis = GridAxis::new(&lat, false);
        assert_eq!(axis.containing(-64.9), Some(0));
        assert_eq!(axis.containing(-45.1), Some(1));
        assert_eq!(axis.containing(-65.1), None);
        assert_eq!(axis.containing(-34.0), None);
        let lon = Labels::new((0..144).map(|i| f64::from(i) * 2.5).collect(), Kind::Longitude);
        let axis = GridAxis::new(&lon, true);
        assert!(axis.is_global());
        assert_eq!(axis.containing(-75.2), Some(114));
        assert_eq!(axis.containing(-1.0), Some(0));
        assert_eq!(axis.containing(-1.3), Some(143));
        let part = Labels::new(vec![10.0, 20.0, 30.0], Kind::Longitude);
        let axis = GridAxis::new(&part, true);
        assert_eq!(axis.containing(374.0), Some(0), "modulo 360");
        assert_eq!(axis.containing(36.0), None);
    }

    #[test]
    fn arcs_cross_the_antimeridian() {
        assert!(in_arc(175.0, 170.0, -170.0));
        assert!(in_arc(-175.0, 170.0, -170.0));
        assert!(!in_arc(0.0, 170.0, -170.0));
        assert!(in_arc(355.0, -10.0, 10.0));
        assert!(in_arc(123.0, -180.0, 180.0));
    }

    #[test]
    fn the_box_takes_the_shorter_way_round() {
        let lon: Vec<f64> = (0..36).map(|i| f64::from(i) * 10.0).collect();
        // Columns at 350, 0 and 10: the box is 350..10 across the seam, not 0..350.
        let taken = Taken::of(&[(2, 35), (2, 0), (3, 1)], &lon, true).unwrap();
        assert_eq!(taken.rows, 2..4);
        assert_eq!(taken.columns, vec![35, 0, 1]);
        assert_eq!(taken.mask, vec![true, true, false, false, false, true]);
        assert_eq!(taken.column_runs(), vec![(35, 1), (0, 2)]);
        assert_eq!(eastward_longitudes(&taken.columns, &lon), vec![-10.0, 0.0, 10.0]);
        // On −180..170, the arc 170 → −170 continues past 180.
        let centred: Vec<f64> = (0..36).map(|i| -180.0 + f64::from(i) * 10.0).collect();
        let taken = Taken::of(&[(0, 35), (0, 0), (0, 1)], &centred, true).unwrap();
        assert_eq!(eastward_longitudes(&taken.columns, &centred), vec![170.0, 180.0, 190.0]);
        // Not all the way round: every index between.
        let taken = Taken::of(&[(0, 1), (0, 30)], &centred, false).unwrap();
        assert_eq!(taken.columns.len(), 30);
        assert_eq!(Taken::of(&[], &centred, true), None);
    }
}
