//! One native axis of a grid: the cells around a 1-D coordinate array, their edges
//! midway between neighbouring coordinates and the outer cells as wide as their neighbour
//! (the rule of every route: `design/API.md`, "Cells"). Kept in ascending order with a flag
//! for coordinates stored descending, so a lookup is one binary search.

use crate::coords::cell_edges;

/// One axis of a grid: its cells' centres and edges in ascending order and whether the
/// stored coordinates descend (then sorted cell `k` is stored index `n − 1 − k`).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub centres: Vec<f64>,
    pub edges: Vec<f64>,
    pub descending: bool,
}

/// Why coordinates cannot make an axis.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxisError {
    #[error("has {0} value(s); an axis needs at least two")]
    TooShort(usize),
    #[error("holds a value that is not finite at index {0}")]
    NotFinite(usize),
    #[error("is not strictly increasing or decreasing (at index {0})")]
    NotMonotonic(usize),
}

impl Axis {
    /// The axis of `coords` (strictly monotonic, finite, at least two).
    pub fn new(coords: &[f64]) -> Result<Self, AxisError> {
        let n = coords.len();
        if n < 2 {
            return Err(AxisError::TooShort(n));
        }
        if let Some(i) = coords.iter().position(|c| !c.is_finite()) {
            return Err(AxisError::NotFinite(i));
        }
        let descending = coords[1] < coords[0];
        if let Some(i) = coords.windows(2).position(|w| if descending { w[1] >= w[0] } else { w[1] <= w[0] }) {
            return Err(AxisError::NotMonotonic(i + 1));
        }
        let centres: Vec<f64> = if descending { coords.iter().rev().copied().collect() } else { coords.to_vec() };
        Ok(Self { edges: cell_edges(&centres), centres, descending })
    }

    /// The axis of `coords` scaled by `factor` (native units to the projection's).
    pub fn scaled(coords: &[f64], factor: f64) -> Result<Self, AxisError> {
        Self::new(&coords.iter().map(|c| c * factor).collect::<Vec<_>>())
    }

    /// Cells on this axis.
    pub fn len(&self) -> usize {
        self.centres.len()
    }

    pub fn is_empty(&self) -> bool {
        self.centres.is_empty()
    }

    /// The stored index of sorted cell `k`.
    fn stored(&self, k: usize) -> usize {
        if self.descending { self.len() - 1 - k } else { k }
    }

    /// The stored index of the cell containing `v`, if any.
    pub fn cell(&self, v: f64) -> Option<u32> {
        let k = self.edges.partition_point(|&e| e <= v).checked_sub(1)?;
        (k < self.len()).then(|| self.stored(k) as u32)
    }

    /// The stored index of the cell containing longitude `lon`, compared modulo 360.
    pub fn lon_cell(&self, lon: f64) -> Option<u32> {
        let west = self.edges[0];
        self.cell(west + (lon - west).rem_euclid(360.0))
    }

    /// The two stored cells whose centres surround `v` and the weight of the second
    /// (`c_k <= v < c_k+1`, weight `(v − c_k) / (c_k+1 − c_k)`); `None` before the first
    /// centre or from the last one on.
    pub fn between(&self, v: f64) -> Option<(u32, u32, f64)> {
        let k = self.centres.partition_point(|&c| c <= v).checked_sub(1)?;
        if k + 1 >= self.len() {
            return None;
        }
        let (a, b) = (self.centres[k], self.centres[k + 1]);
        Some((self.stored(k) as u32, self.stored(k + 1) as u32, (v - a) / (b - a)))
    }

    /// The centre of stored cell `i`.
    pub fn centre(&self, i: usize) -> f64 {
        self.centres[self.stored(i)]
    }

    /// The lower and upper edge of stored cell `i` (lower < upper).
    pub fn cell_edges(&self, i: usize) -> (f64, f64) {
        let k = self.stored(i);
        (self.edges[k], self.edges[k + 1])
    }

    /// Edge `e` in stored order (0..=n): stored cell `i` lies between edges `i` and `i + 1`.
    pub fn stored_edge(&self, e: usize) -> f64 {
        let n = self.len();
        if self.descending { self.edges[n - e.min(n)] } else { self.edges[e.min(n)] }
    }

    /// The narrowest cell (the grid's finest spacing).
    pub fn finest(&self) -> f64 {
        self.edges.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // the edges of these axes are exact binary fractions
mod tests {
    use super::*;

    #[test]
    fn cells_have_edges_midway_and_outer_cells_as_wide_as_their_neighbour() {
        let a = Axis::new(&[0.0, 1.0, 3.0]).unwrap();
        assert_eq!(a.edges, [-0.5, 0.5, 2.0, 4.0]);
        assert_eq!(
            [a.cell(-0.6), a.cell(-0.5), a.cell(0.49), a.cell(0.5), a.cell(3.99), a.cell(4.0)],
            [None, Some(0), Some(0), Some(1), Some(2), None]
        );
        let d = Axis::new(&[3.0, 1.0, 0.0]).unwrap();
        // The same cells, stored in the other order.
        assert_eq!(d.edges, [-0.5, 0.5, 2.0, 4.0]);
        assert_eq!([d.cell(-0.5), d.cell(0.5), d.cell(3.9), d.cell(4.0)], [Some(2), Some(1), Some(0), None]);
        assert_eq!((d.centre(0), d.cell_edges(0)), (3.0, (2.0, 4.0)));
        assert_eq!(Axis::new(&[1.0]), Err(AxisError::TooShort(1)));
        assert_eq!(Axis::new(&[0.0, 1.0, 1.0]), Err(AxisError::NotMonotonic(2)));
        assert_eq!(Axis::new(&[0.0, f64::NAN]), Err(AxisError::NotFinite(1)));
        assert_eq!(Axis::scaled(&[1.0, 2.0], 1000.0).unwrap().centres, [1000.0, 2000.0]);
    }

    #[test]
    fn neighbours_for_bilinear_weights() {
        let a = Axis::new(&[0.0, 1.0, 3.0]).unwrap();
        assert_eq!(a.between(-0.1), None);
        assert_eq!(a.between(0.0), Some((0, 1, 0.0)));
        assert_eq!(a.between(2.0), Some((1, 2, 0.5)));
        assert_eq!(a.between(3.0), None, "the last centre has no neighbour beyond it");
        let d = Axis::new(&[3.0, 1.0, 0.0]).unwrap();
        assert_eq!(d.between(0.25), Some((2, 1, 0.25)));
    }

    #[test]
    fn longitudes_compare_modulo_360() {
        let lon = Axis::new(&(0..180).map(|i| f64::from(i) * 2.0).collect::<Vec<_>>()).unwrap();
        assert_eq!(lon.lon_cell(-180.0), Some(90));
        assert_eq!(lon.lon_cell(-1.5), Some(179));
        assert_eq!(lon.lon_cell(-0.5), Some(0));
        assert_eq!(lon.lon_cell(359.5), Some(0));
        let pacific = Axis::new(&[150.0, 151.0, 152.0]).unwrap();
        assert_eq!(pacific.lon_cell(-209.0), Some(1));
        assert_eq!(pacific.lon_cell(0.0), None);
    }
}
