//! Web Mercator tile geometry over a latitude/longitude grid (`docs/maps.md`), pure:
//! which grid cell each pixel of a tile shows, the grid's bounds and zooms for `TileJSON`.
//!
//! A tile is 256 × 256 pixels of EPSG:3857 (<https://wiki.openstreetmap.org/wiki/Slippy_map_tilenames>);
//! pixel `(i, j)` of tile `(z, x, y)` has its centre at longitude
//! `(x + (i + 0.5) / 256) / 2^z × 360 − 180` and latitude
//! `atan(sinh(π (1 − 2 (y + (j + 0.5) / 256) / 2^z)))`. Along each axis the cells' edges lie
//! midway between coordinates (the outer cells as wide as their neighbour); a value `v` is
//! in cell `k` when `edge_k <= v < edge_k+1`. Longitudes compare modulo 360. The mapping is
//! separable — a column's cell depends on `i` alone, a row's on `j` alone — so a tile needs
//! 256 + 256 lookups, not 65 536.

/// Pixels on a tile's side.
pub const TILE: usize = 256;
/// The deepest zoom served (z > 24 is a 400: `docs/maps.md`, `openapi.yaml`).
pub const MAX_ZOOM: u8 = 24;
/// The latitude of Web Mercator's top edge, `atan(sinh(π))` in degrees.
pub const MAX_LATITUDE: f64 = 85.051_128_779_806_6;

/// One axis of a grid: its cells' edges in ascending order and whether the stored
/// coordinates descend (then sorted cell `k` is stored index `n − 1 − k`).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
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
        let ascending: Vec<f64> = if descending { coords.iter().rev().copied().collect() } else { coords.to_vec() };
        Ok(Self { edges: zarrd_core::coords::cell_edges(&ascending), descending })
    }

    /// Cells on this axis.
    pub fn len(&self) -> usize {
        self.edges.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored index of the cell containing `v`, if any.
    pub fn cell(&self, v: f64) -> Option<u32> {
        let k = self.edges.partition_point(|&e| e <= v).checked_sub(1)?;
        let n = self.len();
        (k < n).then(|| if self.descending { n - 1 - k } else { k } as u32)
    }

    /// The stored index of the cell containing longitude `lon`, compared modulo 360.
    pub fn lon_cell(&self, lon: f64) -> Option<u32> {
        let west = self.edges[0];
        self.cell(west + (lon - west).rem_euclid(360.0))
    }

    /// The narrowest cell (the grid's finest spacing).
    pub fn finest(&self) -> f64 {
        self.edges.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min)
    }
}

/// A latitude/longitude grid: rows along `lat`, columns along `lon`.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub lat: Axis,
    pub lon: Axis,
}

/// A tile's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileId {
    pub z: u8,
    pub x: u32,
    pub y: u32,
}

/// The stored row of each pixel row and column of each pixel column (`None`: outside).
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    pub rows: Vec<Option<u32>>,
    pub cols: Vec<Option<u32>>,
}

impl Grid {
    /// Which cell every pixel of `tile` shows.
    pub fn lookup(&self, tile: TileId) -> Lookup {
        let n = f64::from(1u32 << tile.z);
        let cols = (0..TILE)
            .map(|i| {
                let lon = (f64::from(tile.x) + (i as f64 + 0.5) / TILE as f64) / n * 360.0 - 180.0;
                self.lon.lon_cell(lon)
            })
            .collect();
        let rows = (0..TILE)
            .map(|j| {
                let t = (f64::from(tile.y) + (j as f64 + 0.5) / TILE as f64) / n;
                let lat = (std::f64::consts::PI * (1.0 - 2.0 * t)).sinh().atan().to_degrees();
                self.lat.cell(lat)
            })
            .collect();
        Lookup { rows, cols }
    }

    /// `TileJSON` `bounds` (`[west, south, east, north]`): the outer edges, longitudes in
    /// −180..180 (the whole circle when the grid spans 360 degrees or crosses the
    /// antimeridian, as `TileJSON` bounds do not wrap), latitudes within Web Mercator's.
    pub fn bounds(&self) -> [f64; 4] {
        let (lat, lon) = (&self.lat.edges, &self.lon.edges);
        let south = lat[0].clamp(-MAX_LATITUDE, MAX_LATITUDE);
        let north = lat[lat.len() - 1].clamp(-MAX_LATITUDE, MAX_LATITUDE);
        let (w, e) = (lon[0], lon[lon.len() - 1]);
        let wrap = |v: f64| (v + 180.0).rem_euclid(360.0) - 180.0;
        let (west, east) = if e - w >= 360.0 {
            (-180.0, 180.0)
        } else {
            let (west, east) = (wrap(w), wrap(e));
            if east <= west { (-180.0, 180.0) } else { (west, east) }
        };
        [west, south, east, north]
    }

    /// `TileJSON` `maxzoom`: the smallest zoom whose pixels at the equator
    /// (`360 / 256 / 2^z` degrees) are no wider than the grid's finest cell.
    pub fn maxzoom(&self) -> u8 {
        let finest = self.lat.finest().min(self.lon.finest());
        let z = (360.0 / TILE as f64 / finest).log2().ceil();
        if z.is_nan() || z <= 0.0 { 0 } else { z.min(f64::from(MAX_ZOOM)) as u8 }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // edges and bounds of these grids are exact binary fractions
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
        assert_eq!(Axis::new(&[1.0]), Err(AxisError::TooShort(1)));
        assert_eq!(Axis::new(&[0.0, 1.0, 1.0]), Err(AxisError::NotMonotonic(2)));
        assert_eq!(Axis::new(&[0.0, f64::NAN]), Err(AxisError::NotFinite(1)));
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

    #[test]
    fn bounds_and_zooms() {
        let axis = |from: f64, n: i32, step: f64| {
            Axis::new(&(0..n).map(|i| from + f64::from(i) * step).collect::<Vec<_>>()).unwrap()
        };
        let global = Grid { lat: axis(90.0, 721, -0.25), lon: axis(0.0, 1440, 0.25) };
        assert_eq!(global.bounds(), [-180.0, -MAX_LATITUDE, 180.0, MAX_LATITUDE]);
        assert_eq!(global.maxzoom(), 3);
        let pacific = Grid { lat: axis(10.0, 40, -1.0), lon: axis(150.0, 60, 1.0) };
        assert_eq!(pacific.bounds(), [-180.0, -29.5, 180.0, 10.5]);
        let europe = Grid { lat: axis(30.0, 80, 0.5), lon: axis(-20.0, 128, 0.5) };
        assert_eq!(europe.bounds(), [-20.25, 29.75, 43.75, 69.75]);
        assert_eq!(europe.maxzoom(), 2);
        let tile = global.lookup(TileId { z: 0, x: 0, y: 0 });
        // Pixel column 0 is at lon -179.296875 = 180.703125 (cell 723); row 128 at lat -0.703 (cell 363).
        assert_eq!(tile.cols[0], Some(723));
        assert_eq!(tile.rows[128], Some(363));
    }
}
