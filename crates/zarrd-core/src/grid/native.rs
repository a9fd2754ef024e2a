//! A grid's native coordinates: where each cell lies in the CRS's own x/y — from 1-D
//! coordinate arrays ([`Axis`] each, cell edges midway) or from an affine transform
//! (`GeoZarr` `spatial:transform`, GDAL `GeoTransform`), rotation terms included — or, on
//! a curvilinear grid, the 2-D latitude/longitude of every cell ([`Mesh`]).

// a, b, c, d, e, f: the names every affine library gives the coefficients.
#![allow(clippy::many_single_char_names)]

use std::sync::Arc;

use crate::grid::axis::Axis;
use crate::grid::mesh::Mesh;

/// An affine transform in `Affine`/rasterio order: `x = a·col + b·row + c`,
/// `y = d·col + e·row + f` at a cell's corner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    pub coefficients: [f64; 6],
    inverse: [f64; 6],
}

/// Why a transform cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AffineError {
    #[error("has {0} numbers; a transform is six numbers [a, b, c, d, e, f] (or nine, the last row 0, 0, 1)")]
    Length(usize),
    #[error("holds a value that is not a finite number")]
    NotFinite,
    #[error("cannot be inverted (a·e − b·d is 0)")]
    Singular,
}

impl Affine {
    /// The transform of `coefficients` (6, or 9 with a last row `0, 0, 1`).
    pub fn new(coefficients: &[f64]) -> Result<Self, AffineError> {
        if coefficients.len() != 6 && coefficients.len() != 9 {
            return Err(AffineError::Length(coefficients.len()));
        }
        if coefficients.iter().any(|v| !v.is_finite()) {
            return Err(AffineError::NotFinite);
        }
        let [a, b, c, d, e, f] = [0, 1, 2, 3, 4, 5].map(|i| coefficients[i]);
        let det = a * e - b * d;
        if det == 0.0 {
            return Err(AffineError::Singular);
        }
        let inverse = [e / det, -b / det, (b * f - e * c) / det, -d / det, a / det, (d * c - a * f) / det];
        Ok(Self { coefficients: [a, b, c, d, e, f], inverse })
    }

    /// GDAL's `GeoTransform` order (`c a b f d e`).
    pub fn from_gdal(g: &[f64]) -> Result<Self, AffineError> {
        match g {
            [c, a, b, f, d, e] => Self::new(&[*a, *b, *c, *d, *e, *f]),
            _ => Err(AffineError::Length(g.len())),
        }
    }

    /// x/y of fractional (`col`, `row`).
    pub fn apply(&self, col: f64, row: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.coefficients;
        (a * col + b * row + c, d * col + e * row + f)
    }

    /// Fractional (`col`, `row`) of `x`, `y`.
    pub fn invert(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.inverse;
        (a * x + b * y + c, d * x + e * y + f)
    }

    /// The width of a cell on the ground along its row, in CRS units (|a| when unrotated).
    pub fn cell_width(&self) -> f64 {
        self.coefficients[0].hypot(self.coefficients[3])
    }
}

/// Where a grid's cells lie in native x/y.
#[derive(Debug, Clone, PartialEq)]
pub enum Native {
    /// 1-D coordinate arrays: Y the rows, X the columns.
    Axes { y: Axis, x: Axis },
    /// An affine transform of `rows` × `cols` cells; `node` registration puts a cell's
    /// centre at (col, row) rather than (col + ½, row + ½).
    Affine { transform: Affine, rows: u64, cols: u64, node: bool },
    /// 2-D latitude/longitude arrays: native x/y are longitude/latitude, and cells are
    /// found by the nearest centre.
    Mesh(Arc<Mesh>),
}

/// The four cells around a point and the weights between them (bilinear in native
/// coordinates): `rows`/`cols` the stored indices below and above, `t`/`u` the weight of
/// the column above and of the row above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bilinear {
    pub rows: [u32; 2],
    pub cols: [u32; 2],
    pub t: f64,
    pub u: f64,
}

impl Native {
    /// Rows and columns.
    pub fn shape(&self) -> (u64, u64) {
        match self {
            Self::Axes { y, x } => (y.len() as u64, x.len() as u64),
            Self::Affine { rows, cols, .. } => (*rows, *cols),
            Self::Mesh(mesh) => mesh.shape(),
        }
    }

    /// The (row, col) of the cell containing native `x`, `y`; with `wrap`, x compares
    /// modulo 360 (longitudes).
    pub fn cell(&self, x: f64, y: f64, wrap: bool) -> Option<(u32, u32)> {
        match self {
            Self::Axes { y: ya, x: xa } => {
                let col = if wrap { xa.lon_cell(x) } else { xa.cell(x) }?;
                Some((ya.cell(y)?, col))
            }
            Self::Affine { transform, rows, cols, node } => {
                let half = if *node { 0.5 } else { 0.0 };
                let inside = |x: f64| {
                    let (c, r) = transform.invert(x, y);
                    let (c, r) = ((c + half).floor(), (r + half).floor());
                    (c >= 0.0 && r >= 0.0 && c < *cols as f64 && r < *rows as f64).then_some((r as u32, c as u32))
                };
                if wrap { [x, x - 360.0, x + 360.0].into_iter().find_map(inside) } else { inside(x) }
            }
            Self::Mesh(mesh) => mesh.cell(x, y),
        }
    }

    /// The native x/y of the centre of cell (`row`, `col`).
    pub fn centre(&self, row: u64, col: u64) -> (f64, f64) {
        match self {
            Self::Axes { y, x } => (x.centre(col as usize), y.centre(row as usize)),
            Self::Affine { transform, node, .. } => {
                let half = if *node { 0.0 } else { 0.5 };
                transform.apply(col as f64 + half, row as f64 + half)
            }
            Self::Mesh(mesh) => mesh.centre(row, col),
        }
    }

    /// The native x/y of the corner of stored edge `i` along the rows and `j` along the
    /// columns (edges midway between coordinates; a transform's cell corners; a mesh's
    /// corners, NaN where a centre beside it is not a place).
    pub fn corner(&self, i: u64, j: u64) -> (f64, f64) {
        match self {
            Self::Axes { y, x } => (x.stored_edge(j as usize), y.stored_edge(i as usize)),
            Self::Affine { transform, node, .. } => {
                let half = if *node { 0.5 } else { 0.0 };
                transform.apply(j as f64 - half, i as f64 - half)
            }
            Self::Mesh(mesh) => mesh.corner(i, j).unwrap_or((f64::NAN, f64::NAN)),
        }
    }

    /// The native x/y of a point on the outer edge of the grid: `s` in [0, 4) walks the
    /// boundary of the cell edges once round (each unit one side).
    pub fn boundary(&self, s: f64) -> (f64, f64) {
        let (side, f) = ((s.floor() as i32).rem_euclid(4), s - s.floor());
        // The corner of the edges as fractions (0..1) along columns and rows.
        let (u, v) = match side {
            0 => (f, 0.0),
            1 => (1.0, f),
            2 => (1.0 - f, 1.0),
            _ => (0.0, 1.0 - f),
        };
        self.at_fraction(u, v)
    }

    /// Native x/y at fraction `u` across the columns' outer edges and `v` across the rows'.
    pub fn at_fraction(&self, u: f64, v: f64) -> (f64, f64) {
        match self {
            Self::Axes { y, x } => {
                // The far edge exactly at t = 1 (a + 1·(b − a) need not be b).
                let span = |a: &Axis, t: f64| {
                    let (first, last) = (a.edges[0], a.edges[a.edges.len() - 1]);
                    if t >= 1.0 { last } else { first + t * (last - first) }
                };
                (span(x, u), span(y, v))
            }
            Self::Affine { transform, rows, cols, node } => {
                let half = if *node { 0.5 } else { 0.0 };
                transform.apply(u * *cols as f64 - half, v * *rows as f64 - half)
            }
            // The corner nearest the fraction (a mesh has no between).
            Self::Mesh(mesh) => {
                let (rows, cols) = mesh.shape();
                let at = |t: f64, n: u64| ((t * n as f64).round() as u64).min(n);
                self.corner(at(v, rows), at(u, cols))
            }
        }
    }

    /// The four cells around native `x`, `y` for bilinear weights (`None` outside the
    /// outer cell centres, and on a mesh, which has no bilinear).
    pub fn bilinear(&self, x: f64, y: f64) -> Option<Bilinear> {
        match self {
            Self::Axes { y: ya, x: xa } => {
                let (c0, c1, t) = xa.between(x)?;
                let (r0, r1, u) = ya.between(y)?;
                Some(Bilinear { rows: [r0, r1], cols: [c0, c1], t, u })
            }
            Self::Affine { transform, rows, cols, node } => {
                // Fractional indices of the point among the cell centres.
                let half = if *node { 0.0 } else { 0.5 };
                let (c, r) = transform.invert(x, y);
                let (c, r) = (c - half, r - half);
                let (c0, r0) = (c.floor(), r.floor());
                let inside = c0 >= 0.0 && r0 >= 0.0 && c0 + 1.0 < *cols as f64 && r0 + 1.0 < *rows as f64;
                inside.then(|| {
                    let (c0, r0) = (c0 as u32, r0 as u32);
                    Bilinear { rows: [r0, r0 + 1], cols: [c0, c0 + 1], t: c - f64::from(c0), u: r - f64::from(r0) }
                })
            }
            Self::Mesh(_) => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // the transforms below are exact in binary
mod tests {
    use super::*;

    #[test]
    fn affine_transforms_invert_with_rotation_terms() {
        let t = Affine::new(&[60.0, 0.0, 399_960.0, 0.0, -60.0, 5_000_040.0]).unwrap();
        assert_eq!(t.apply(1.0, 2.0), (400_020.0, 4_999_920.0));
        assert_eq!(t.invert(400_020.0, 4_999_920.0), (1.0, 2.0));
        let native = Native::Affine { transform: t, rows: 183, cols: 183, node: false };
        assert_eq!(native.cell(399_960.0, 5_000_040.0, false), Some((0, 0)));
        assert_eq!(native.cell(400_019.9, 4_999_980.1, false), Some((0, 0)));
        assert_eq!(native.cell(399_959.0, 5_000_000.0, false), None);
        assert_eq!(native.centre(0, 0), (399_990.0, 5_000_010.0));
        let rotated = Affine::new(&[3.0, 4.0, 10.0, -4.0, 3.0, 20.0]).unwrap();
        let (c, r) = rotated.invert(rotated.apply(2.5, 7.25).0, rotated.apply(2.5, 7.25).1);
        assert!((c - 2.5).abs() < 1e-12 && (r - 7.25).abs() < 1e-12);
        assert_eq!(
            Affine::from_gdal(&[2_500_000.0, 50_000.0, 0.0, 5_500_000.0, 0.0, -50_000.0]).unwrap().apply(1.0, 1.0),
            (2_550_000.0, 5_450_000.0)
        );
        assert_eq!(Affine::new(&[1.0, 2.0, 0.0, 2.0, 4.0, 0.0]), Err(AffineError::Singular));
        assert_eq!(Affine::new(&[1.0; 5]), Err(AffineError::Length(5)));
        let node = Native::Affine { transform: t, rows: 183, cols: 183, node: true };
        assert_eq!(node.centre(0, 0), (399_960.0, 5_000_040.0));
        assert_eq!(node.cell(399_931.0, 5_000_069.0, false), Some((0, 0)));
    }

    #[test]
    fn bilinear_needs_four_centres_around_the_point() {
        let native = Native::Axes { y: Axis::new(&[10.0, 0.0]).unwrap(), x: Axis::new(&[0.0, 1.0, 2.0]).unwrap() };
        assert_eq!(native.bilinear(0.5, 2.5), Some(Bilinear { rows: [1, 0], cols: [0, 1], t: 0.5, u: 0.25 }));
        assert_eq!(native.bilinear(2.1, 2.5), None);
        assert_eq!(native.boundary(0.0), (-0.5, -5.0));
        assert_eq!(native.boundary(2.0), (2.5, 15.0));
    }
}
