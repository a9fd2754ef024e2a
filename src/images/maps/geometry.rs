//! Web Mercator tile geometry over any grid (`docs/maps.md`, `design/API.md` "Grids beyond
//! latitude/longitude"), pure: which grid cell (or four, for bilinear) each pixel of a
//! tile shows, the grid's bounds and zooms for `TileJSON`.
//!
//! A tile is 256 × 256 pixels of EPSG:3857 (<https://wiki.openstreetmap.org/wiki/Slippy_map_tilenames>);
//! pixel `(i, j)` of tile `(z, x, y)` has its centre at longitude
//! `(x + (i + 0.5) / 256) / 2^z × 360 − 180` and latitude
//! `atan(sinh(π (1 − 2 (y + (j + 0.5) / 256) / 2^z)))`. The cell containing that point is
//! the grid model's ([`Grid::cell`]). On a latitude/longitude grid with 1-D axes the
//! mapping is separable — a column's cell depends on `i` alone, a row's on `j` alone — so a
//! tile needs 256 + 256 lookups; on any other grid each pixel is projected (65 536 points),
//! which is why the caller keeps a tile's lookup for every step, level and array on the
//! same grid.

use zarrd_core::grid::{Bilinear, Grid, Kind, Native};

/// Pixels on a tile's side.
pub const TILE: usize = 256;
/// The deepest zoom served (z > 24 is a 400: `docs/maps.md`, `openapi.yaml`).
pub const MAX_ZOOM: u8 = 24;
/// The latitude of Web Mercator's top edge, `atan(sinh(π))` in degrees.
pub const MAX_LATITUDE: f64 = 85.051_128_779_806_6;
/// Web Mercator's width of a pixel at the equator at zoom 0, in metres (2π·6378137 / 256).
pub use zarrd_core::grid::geozarr::PIXEL_METRES_Z0;

/// A tile's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileId {
    pub z: u8,
    pub x: u32,
    pub y: u32,
}

/// How a pixel takes its value from the cells around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Resampling {
    /// The cell that contains the pixel's centre.
    #[default]
    Nearest,
    /// Bilinear in native coordinates between the four surrounding cell centres.
    Bilinear,
}

impl Resampling {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "nearest" => Some(Self::Nearest),
            "bilinear" => Some(Self::Bilinear),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Nearest => "nearest",
            Self::Bilinear => "bilinear",
        }
    }
}

/// Which cells every pixel of a tile shows, row by row from the north.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Per pixel, the (row, col) of its cell.
    Nearest(Vec<Option<(u32, u32)>>),
    /// Per pixel, its four cells and their weights.
    Bilinear(Vec<Option<Bilinear>>),
}

impl Lookup {
    /// The bytes it holds (for the cache's weight).
    pub fn weight(&self) -> usize {
        match self {
            Self::Nearest(v) => v.len() * size_of::<Option<(u32, u32)>>(),
            Self::Bilinear(v) => v.len() * size_of::<Option<Bilinear>>(),
        }
    }

    /// Every (row, col) the tile reads.
    pub fn cells(&self) -> Vec<(u32, u32)> {
        match self {
            Self::Nearest(v) => v.iter().flatten().copied().collect(),
            Self::Bilinear(v) => v
                .iter()
                .flatten()
                .flat_map(|b| b.rows.iter().flat_map(move |&r| b.cols.iter().map(move |&c| (r, c))))
                .collect(),
        }
    }
}

/// The longitude and latitude of pixel `(i, j)`'s centre.
pub fn pixel(tile: TileId, i: usize, j: usize) -> (f64, f64) {
    let n = f64::from(1u32 << tile.z);
    let lon = (f64::from(tile.x) + (i as f64 + 0.5) / TILE as f64) / n * 360.0 - 180.0;
    let t = (f64::from(tile.y) + (j as f64 + 0.5) / TILE as f64) / n;
    let lat = (std::f64::consts::PI * (1.0 - 2.0 * t)).sinh().atan().to_degrees();
    (lon, lat)
}

/// Which cells every pixel of `tile` shows.
pub fn lookup(grid: &Grid, tile: TileId, resampling: Resampling) -> Lookup {
    match resampling {
        Resampling::Nearest => {
            if grid.kind == Kind::Geographic
                && let Native::Axes { y, x } = &grid.native
            {
                let cols: Vec<Option<u32>> = (0..TILE).map(|i| x.lon_cell(pixel(tile, i, 0).0)).collect();
                let rows: Vec<Option<u32>> = (0..TILE).map(|j| y.cell(pixel(tile, 0, j).1)).collect();
                let cells = rows.iter().flat_map(|r| cols.iter().map(move |c| r.zip(*c))).collect();
                return Lookup::Nearest(cells);
            }
            let cells = (0..TILE * TILE)
                .map(|p| {
                    let (lon, lat) = pixel(tile, p % TILE, p / TILE);
                    grid.cell(lon, lat)
                })
                .collect();
            Lookup::Nearest(cells)
        }
        Resampling::Bilinear => Lookup::Bilinear(
            (0..TILE * TILE)
                .map(|p| {
                    let (lon, lat) = pixel(tile, p % TILE, p / TILE);
                    grid.bilinear(lon, lat)
                })
                .collect(),
        ),
    }
}

/// `TileJSON` `bounds` (`[west, south, east, north]`): the grid's footprint, latitudes
/// within Web Mercator's and the whole circle when it crosses the antimeridian (`TileJSON`
/// bounds do not wrap).
pub fn bounds(grid: &Grid) -> [f64; 4] {
    let [west, south, east, north] = grid.bbox;
    let (west, east) = if east <= west { (-180.0, 180.0) } else { (west, east) };
    [west, south.clamp(-MAX_LATITUDE, MAX_LATITUDE), east, north.clamp(-MAX_LATITUDE, MAX_LATITUDE)]
}

/// `TileJSON` `maxzoom`: the smallest zoom whose pixels at the equator are no wider than
/// the grid's finest cell (`360 / 256 / 2^z` degrees on grids in degrees — on curvilinear
/// ones the finest spacing of neighbouring centres in degrees of arc — `156543.03 / 2^z`
/// metres on projected ones).
pub fn maxzoom(grid: &Grid) -> u8 {
    let finest = match &grid.native {
        Native::Axes { y, x } => y.finest().min(x.finest()),
        Native::Affine { transform, .. } => {
            let [a, b, _, d, e, _] = transform.coefficients;
            a.hypot(d).min(b.hypot(e))
        }
        Native::Mesh(mesh) => mesh.finest(),
    };
    let pixel_at_z0 = match grid.kind {
        Kind::Geographic | Kind::Rotated | Kind::Curvilinear => 360.0 / TILE as f64,
        _ => PIXEL_METRES_Z0,
    };
    let z = (pixel_at_z0 / finest).log2().ceil();
    if z.is_nan() || z <= 0.0 { 0 } else { z.min(f64::from(MAX_ZOOM)) as u8 }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // edges and bounds of these grids are exact binary fractions
mod tests {
    use super::*;
    use zarrd_core::grid::{Axis, Crs};

    fn lonlat(lat: (f64, i32, f64), lon: (f64, i32, f64)) -> Grid {
        let axis = |(from, n, step): (f64, i32, f64)| {
            Axis::new(&(0..n).map(|i| from + f64::from(i) * step).collect::<Vec<_>>()).unwrap()
        };
        let native = Native::Axes { y: axis(lat), x: axis(lon) };
        Grid::new([0, 1], ["lat".into(), "lon".into()], Crs::from_epsg(4326).unwrap(), native).unwrap()
    }

    #[test]
    fn bounds_and_zooms() {
        let global = lonlat((90.0, 721, -0.25), (0.0, 1440, 0.25));
        assert_eq!(bounds(&global), [-180.0, -MAX_LATITUDE, 180.0, MAX_LATITUDE]);
        assert_eq!(maxzoom(&global), 3);
        let pacific = lonlat((10.0, 40, -1.0), (150.0, 60, 1.0));
        let b = bounds(&pacific);
        assert_eq!(b[0], -180.0);
        assert_eq!(b[2], 180.0);
        assert!((b[1] + 29.5).abs() < 1e-9 && (b[3] - 10.5).abs() < 1e-9, "{b:?}");
        let europe = lonlat((30.0, 80, 0.5), (-20.0, 128, 0.5));
        let b = bounds(&europe);
        assert!(b.iter().zip([-20.25, 29.75, 43.75, 69.75]).all(|(a, e)| (a - e).abs() < 1e-9), "{b:?}");
        assert_eq!(maxzoom(&europe), 2);
        let Lookup::Nearest(cells) = lookup(&global, TileId { z: 0, x: 0, y: 0 }, Resampling::Nearest) else {
            unreachable!()
        };
        // Pixel column 0 is at lon -179.296875 = 180.703125 (cell 723); row 128 at lat -0.703 (cell 363).
        assert_eq!(cells[128 * TILE], Some((363, 723)));
    }
}
