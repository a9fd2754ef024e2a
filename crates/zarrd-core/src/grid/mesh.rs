//! A curvilinear grid: every cell's centre given by 2-D latitude/longitude arrays (ocean
//! models, tripolar grids, swaths) with no projection behind them (`design/API.md`, "Grids
//! beyond latitude/longitude").
//!
//! A point lies in the cell whose centre is nearest on the sphere (ties to the lower flat
//! index), provided it is inside that cell's quadrilateral of corners — on the inner side
//! of each of its four great-circle edges; otherwise it is outside the grid. Corners: the
//! centres as unit vectors, padded by one cell on every side by linear extrapolation in
//! index space (`c[−1] = 2·c[0] − c[1]`, likewise at the far ends, then along the other
//! axis), each corner the normalised mean of the four padded centres around it. Nearest
//! centres come from a k-d tree on the unit vectors (kiddo), built once per grid.

use std::num::NonZero;

use kiddo::{ImmutableKdTree, SquaredEuclidean};

/// A unit vector on the sphere.
type Vector = [f64; 3];

/// Centres asked of the tree per point: more than one so that exact ties (the folded rows
/// of a tripolar grid repeat their centres) go to the lower flat index.
const CANDIDATES: usize = 4;

/// The bytes a mesh holds per cell, for the memory budget: the stored longitude and
/// latitude (16), the unit vector (24), the tree's copy of it with its index (28), the
/// index of the cells kept (4), and its stems rounded up.
pub const BYTES_PER_CELL: u64 = 80;

/// Why 2-D latitude/longitude arrays do not make a grid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshError {
    #[error("is {0} × {1} cells; a curvilinear grid needs at least 2 × 2")]
    TooSmall(u64, u64),
    #[error("has {got} latitudes and {longitudes} longitudes for {rows} × {cols} cells")]
    Lengths { got: usize, longitudes: usize, rows: u64, cols: u64 },
    #[error("has no cell whose latitude and longitude are both finite numbers within ±90 and ±360")]
    Empty,
    #[error("cannot be indexed: {0}")]
    Tree(String),
}

/// The cells of a curvilinear grid and the look-up structure over their centres.
pub struct Mesh {
    rows: u64,
    cols: u64,
    /// The stored longitudes and latitudes, row-major.
    lon: Vec<f64>,
    lat: Vec<f64>,
    /// The centres as unit vectors (NaN where the stored values are not a place).
    centres: Vec<Vector>,
    tree: ImmutableKdTree<f64, 3>,
    /// The flat index of each of the tree's items, when some cells were left out of it.
    items: Option<Vec<u32>>,
    /// The farthest (squared chord) any corner is from its cell's centre, when every cell
    /// with corners is convex: a point farther than that from every centre is in no cell,
    /// which a bounded query finds out fast (an unbounded one from far outside the grid
    /// visits most of the tree). `None`: some cell is not convex, every query unbounded.
    reach: Option<f64>,
}

impl std::fmt::Debug for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mesh({} × {})", self.rows, self.cols)
    }
}

impl PartialEq for Mesh {
    fn eq(&self, other: &Self) -> bool {
        (self.rows, self.cols) == (other.rows, other.cols) && self.lon == other.lon && self.lat == other.lat
    }
}

/// The unit vector of longitude `lon`, latitude `lat` (degrees).
pub fn vector(lon: f64, lat: f64) -> Vector {
    let (lon, lat) = (lon.to_radians(), lat.to_radians());
    [lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()]
}

/// Longitude (−180..180) and latitude of a vector (any length).
pub fn lon_lat(v: Vector) -> (f64, f64) {
    (v[1].atan2(v[0]).to_degrees(), v[2].atan2(v[0].hypot(v[1])).to_degrees())
}

fn cross(a: Vector, b: Vector) -> Vector {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn dot(a: Vector, b: Vector) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

impl Mesh {
    /// The grid of `rows` × `cols` cells whose centres are `lat`, `lon` (row-major).
    pub fn new(rows: u64, cols: u64, lat: Vec<f64>, lon: Vec<f64>) -> Result<Self, MeshError> {
        if rows < 2 || cols < 2 {
            return Err(MeshError::TooSmall(rows, cols));
        }
        let n = rows.checked_mul(cols).and_then(|n| usize::try_from(n).ok());
        if n != Some(lat.len()) || n != Some(lon.len()) {
            return Err(MeshError::Lengths { got: lat.len(), longitudes: lon.len(), rows, cols });
        }
        let place = |lon: f64, lat: f64| lat.abs() <= 90.0 && lon.abs() <= 360.0;
        let centres: Vec<Vector> = lon
            .iter()
            .zip(&lat)
            .map(|(&lon, &lat)| if place(lon, lat) { vector(lon, lat) } else { [f64::NAN; 3] })
            .collect();
        let all = centres.iter().all(|c| !c[0].is_nan());
        let (points, items) = if all {
            (None, None)
        } else {
            let kept: Vec<u32> = (0..centres.len()).filter(|&k| !centres[k][0].is_nan()).map(|k| k as u32).collect();
            let points: Vec<Vector> = kept.iter().map(|&k| centres[k as usize]).collect();
            (Some(points), Some(kept))
        };
        let indexed = points.as_deref().unwrap_or(&centres);
        if indexed.is_empty() {
            return Err(MeshError::Empty);
        }
        let tree = ImmutableKdTree::new_from_slice(indexed).map_err(|e| MeshError::Tree(format!("{e:?}")))?;
        let mut mesh = Self { rows, cols, lon, lat, centres, tree, items, reach: None };
        mesh.reach = mesh.reach();
        Ok(mesh)
    }

    /// See [`Mesh::reach`](field@Mesh::reach): the corners computed once each, then every
    /// cell's convexity (each corner strictly on the inner side of the two edges it is not
    /// on, all edges turning the same way) and farthest corner.
    fn reach(&self) -> Option<f64> {
        let (rows, cols) = (self.rows, self.cols);
        let corners: Vec<Vector> =
            (0..=rows).flat_map(|i| (0..=cols).map(move |j| (i, j))).map(|(i, j)| self.corner_vector(i, j)).collect();
        let at = |i: u64, j: u64| corners[(i * (cols + 1) + j) as usize];
        let mut reach = 0.0f64;
        for r in 0..rows {
            for c in 0..cols {
                let q = [at(r, c), at(r, c + 1), at(r + 1, c + 1), at(r + 1, c)];
                let centre = self.centres[(r * cols + c) as usize];
                if q.iter().chain([&centre]).any(|v| v[0].is_nan()) {
                    continue; // no cell here: never inside
                }
                let turns: Vec<f64> = (0..4)
                    .flat_map(|k| {
                        let edge = cross(q[k], q[(k + 1) % 4]);
                        [dot(edge, q[(k + 2) % 4]), dot(edge, q[(k + 3) % 4])]
                    })
                    .collect();
                if !(turns.iter().all(|&t| t > 0.0) || turns.iter().all(|&t| t < 0.0)) {
                    return None;
                }
                for v in q {
                    let d: Vector = std::array::from_fn(|k| v[k] - centre[k]);
                    reach = reach.max(dot(d, d));
                }
            }
        }
        // A hair more, for the rounding of the distances the tree computes.
        Some(reach * (1.0 + 1e-9) + 1e-15)
    }

    /// Rows and columns.
    pub fn shape(&self) -> (u64, u64) {
        (self.rows, self.cols)
    }

    /// The stored longitude and latitude of cell (`row`, `col`).
    pub fn centre(&self, row: u64, col: u64) -> (f64, f64) {
        let k = (row * self.cols + col) as usize;
        (self.lon[k], self.lat[k])
    }

    /// The (row, col) of the cell holding the point at `lon`, `lat`, if any.
    pub fn cell(&self, lon: f64, lat: f64) -> Option<(u32, u32)> {
        if !(lon.is_finite() && lat.is_finite()) {
            return None;
        }
        let p = vector(lon, lat);
        let candidates = NonZero::new(CANDIDATES)?;
        let found = match self.reach {
            Some(reach) => self.tree.query(&p).nearest_n::<SquaredEuclidean<f64>>(candidates).within(reach).execute(),
            None => self.tree.query(&p).nearest_n::<SquaredEuclidean<f64>>(candidates).execute(),
        };
        let flat = |item: u32| self.items.as_ref().map_or(item, |items| items[item as usize]);
        let (_, k) =
            found.iter().map(|f| (f.distance, flat(f.item))).min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))?;
        let (row, col) = (u64::from(k) / self.cols, u64::from(k) % self.cols);
        self.inside(row, col, p).then_some((row as u32, col as u32))
    }

    /// Whether `p` is on the inner side of every great-circle edge of cell (`row`, `col`).
    fn inside(&self, row: u64, col: u64, p: Vector) -> bool {
        let q = [
            self.corner_vector(row, col),
            self.corner_vector(row, col + 1),
            self.corner_vector(row + 1, col + 1),
            self.corner_vector(row + 1, col),
        ];
        let sides: [f64; 4] = std::array::from_fn(|k| dot(cross(q[k], q[(k + 1) % 4]), p));
        let c = self.centres[(row * self.cols + col) as usize];
        dot(c, p) > 0.0 && (sides.iter().all(|&s| s >= 0.0) || sides.iter().all(|&s| s <= 0.0))
    }

    /// Centre (`r`, `c`) of the grid padded by one cell on every side (−1 ..= rows).
    fn padded(&self, r: i64, c: i64) -> Vector {
        let last = |n: u64| n as i64 - 1;
        // Along the columns first, then the rows (linear extrapolation commutes).
        let along_cols = |r: i64| -> Vector {
            let at = |c: i64| self.centres[(r as u64 * self.cols + c as u64) as usize];
            let (c0, c1) = if c < 0 {
                (0, 1)
            } else if c > last(self.cols) {
                (last(self.cols), last(self.cols) - 1)
            } else {
                return at(c);
            };
            let (a, b) = (at(c0), at(c1));
            std::array::from_fn(|k| 2.0 * a[k] - b[k])
        };
        let (r0, r1) = if r < 0 {
            (0, 1)
        } else if r > last(self.rows) {
            (last(self.rows), last(self.rows) - 1)
        } else {
            return along_cols(r);
        };
        let (a, b) = (along_cols(r0), along_cols(r1));
        std::array::from_fn(|k| 2.0 * a[k] - b[k])
    }

    /// The corner of stored edge `i` along the rows and `j` along the columns as a unit
    /// vector: the normalised mean of the four padded centres around it.
    fn corner_vector(&self, i: u64, j: u64) -> Vector {
        let (i, j) = (i as i64, j as i64);
        let s: Vector = [(i - 1, j - 1), (i - 1, j), (i, j - 1), (i, j)]
            .iter()
            .map(|&(r, c)| self.padded(r, c))
            .fold([0.0; 3], |acc, v| std::array::from_fn(|k| acc[k] + v[k]));
        let norm = dot(s, s).sqrt();
        s.map(|v| v / norm)
    }

    /// Longitude/latitude of the corner of stored edge `i` along the rows and `j` along
    /// the columns (cell (r, c) has the corners (r, c), (r, c + 1), (r + 1, c + 1), (r + 1, c)).
    pub fn corner(&self, i: u64, j: u64) -> Option<(f64, f64)> {
        let v = self.corner_vector(i, j);
        v[0].is_finite().then(|| lon_lat(v))
    }

    /// The finest spacing of neighbouring centres, in degrees of arc (duplicates aside).
    pub fn finest(&self) -> f64 {
        let mut finest = f64::INFINITY;
        let mut consider = |a: Vector, b: Vector| {
            let d = dot(a, b).clamp(-1.0, 1.0).acos().to_degrees();
            if d > 0.0 {
                finest = finest.min(d);
            }
        };
        for r in 0..self.rows {
            for c in 0..self.cols {
                let here = self.centres[(r * self.cols + c) as usize];
                if c + 1 < self.cols {
                    consider(here, self.centres[(r * self.cols + c + 1) as usize]);
                }
                if r + 1 < self.rows {
                    consider(here, self.centres[((r + 1) * self.cols + c) as usize]);
                }
            }
        }
        finest
    }

    /// The footprint of the corners: west, south, east, north (degrees; west > east across
    /// the antimeridian; −180..180 up to the pole when a cell holds one). The outer corners
    /// bound it: neither longitude nor latitude has an extreme inside a patch of the
    /// sphere that holds no pole.
    pub fn bbox(&self) -> Option<[f64; 4]> {
        let (rows, cols) = (self.rows, self.cols);
        let mut edge: Vec<(u64, u64)> = (0..=cols).flat_map(|j| [(0, j), (rows, j)]).collect();
        edge.extend((1..rows).flat_map(|i| [(i, 0), (i, cols)]));
        let points: Vec<(f64, f64)> = edge.iter().filter_map(|&(i, j)| self.corner(i, j)).collect();
        if points.is_empty() {
            return None;
        }
        let south = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let north = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        if self.cell(0.0, 90.0).is_some() {
            return Some([-180.0, south, 180.0, 90.0]);
        }
        if self.cell(0.0, -90.0).is_some() {
            return Some([-180.0, -90.0, 180.0, north]);
        }
        // West and east: the ends of the largest gap between the longitudes on the circle.
        let mut lons: Vec<f64> = points.iter().map(|p| p.0).collect();
        lons.sort_by(f64::total_cmp);
        let wrap_gap = lons[0] + 360.0 - lons[lons.len() - 1];
        let (mut gap, mut west, mut east) = (wrap_gap, lons[0], lons[lons.len() - 1]);
        for w in lons.windows(2) {
            if w[1] - w[0] > gap {
                (gap, west, east) = (w[1] - w[0], w[1], w[0]);
            }
        }
        Some([west, south, east, north])
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    /// A regular 1° grid of `rows` × `cols` centres from (`lat0`, `lon0`), rows northwards.
    fn regular(rows: u64, cols: u64, lat0: f64, lon0: f64) -> Mesh {
        let (mut lat, mut lon) = (Vec::new(), Vec::new());
        for r in 0..rows {
            for c in 0..cols {
                lat.push(lat0 + r as f64);
                lon.push(lon0 + c as f64);
            }
        }
        Mesh::new(rows, cols, lat, lon).unwrap()
    }

    #[test]
    fn a_point_is_in_the_nearest_cell_inside_its_corners() {
        let m = regular(4, 5, 10.0, 20.0);
        assert_eq!(m.cell(22.2, 11.4), Some((1, 2)));
        assert_eq!(m.cell(20.0, 10.0), Some((0, 0)));
        // Beyond the outer corners (half a cell out, padded): outside.
        assert_eq!(m.cell(19.4, 10.0), None);
        assert_eq!(m.cell(24.4, 13.4), Some((3, 4)));
        assert_eq!(m.cell(-160.0, -10.0), None);
        // Convex cells: queries are bounded by the farthest corner (half a diagonal of 1°).
        let reach = m.reach.unwrap().sqrt().to_degrees();
        assert!((0.70..0.72).contains(&reach), "{reach}");
        assert_eq!(m.cell(f64::NAN, 10.0), None);
        let (lon, lat) = m.corner(0, 0).unwrap();
        assert!((lon - 19.5).abs() < 1e-2 && (lat - 9.5).abs() < 1e-2, "{lon} {lat}");
        assert_eq!(m.centre(2, 3), (23.0, 12.0));
        let bbox = m.bbox().unwrap();
        for (got, want) in bbox.iter().zip([19.5, 9.5, 24.5, 13.5]) {
            assert!((got - want).abs() < 0.01, "{bbox:?}");
        }
        // 1° of longitude at the northern row, 13°N.
        assert!((m.finest() - 13f64.to_radians().cos()).abs() < 1e-4, "{}", m.finest());
    }

    #[test]
    fn the_antimeridian_and_ties_and_bad_cells() {
        let m = regular(3, 4, 50.0, 178.5);
        assert_eq!(m.cell(-179.6, 51.0), Some((1, 2)));
        let [w, _, e, _] = m.bbox().unwrap();
        assert!(w > e && (w - 178.0).abs() < 0.02 && (e + 178.0).abs() < 0.02, "{w} {e}");
        // Equidistant from two centres (lon ±0.5, exactly): the lower flat index.
        let m = regular(3, 2, 10.0, -0.5);
        assert_eq!(m.cell(0.0, 11.0), Some((1, 0)));
        assert!(Mesh::new(1, 4, vec![0.0; 4], vec![0.0; 4]).is_err());
        assert!(Mesh::new(2, 2, vec![0.0; 4], vec![0.0; 3]).is_err());
        assert_eq!(Mesh::new(2, 2, vec![f64::NAN; 4], vec![0.0; 4]).unwrap_err(), MeshError::Empty);
        // A centre that is not a place: no cell there, none beside it (no quadrilateral).
        let mut lat: Vec<f64> = (0..9).map(|k| f64::from(k / 3)).collect();
        let lon: Vec<f64> = (0..9).map(|k| f64::from(k % 3)).collect();
        lat[8] = f64::NAN;
        let holey = Mesh::new(3, 3, lat, lon).unwrap();
        assert_eq!(holey.cell(0.1, 0.1), Some((0, 0)));
        assert_eq!(holey.cell(2.0, 2.0), None);
        assert_eq!(holey.cell(1.0, 1.0), None);
    }
}
