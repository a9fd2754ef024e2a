//! The grid model: for an array, where each of its (Y, X) cells lies on the Earth — found
//! once per array version from the conventions of `design/API.md` ("Grids beyond
//! latitude/longitude"), and the one answer every route asks of it: the cell holding a
//! point, a cell's centre in longitude/latitude, the footprint.
//!
//! [`crs`] turns longitude/latitude into native x/y and back (proj4rs, a rotated pole of
//! our own); [`cf`], [`wkt`] and [`geozarr`] read the conventions that name a CRS;
//! [`native`] places cells in native x/y (1-D [`axis`] arrays or an affine transform; on
//! curvilinear grids the [`mesh`] of 2-D latitudes/longitudes);
//! [`Grid`] joins them. Finding the attributes and coordinate arrays a grid needs is the
//! caller's (they live in the catalog); what they mean is decided here.

pub mod axis;
pub mod cf;
pub mod crs;
pub mod geokeys;
pub mod geozarr;
pub mod mesh;
pub mod native;
pub mod sphere;
pub mod wkt;
pub mod wkt2;

use serde_json::{Map, Value};

pub use axis::{Axis, AxisError};
pub use crs::{Crs, CrsError, Kind};
pub use mesh::{Mesh, MeshError};
pub use native::{Affine, Bilinear, Native};

/// Units that say "degrees east" (CF conventions, section 4.2).
pub const EAST: [&str; 6] = ["degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"];
/// Units that say "degrees north".
pub const NORTH: [&str; 6] = ["degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn"];

/// What a 1-D coordinate array's attributes and name say it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Latitude,
    Longitude,
    Other,
}

/// Whether the coordinate array `name` with `attributes` is a latitude or longitude: its
/// CF units or `standard_name`, or the names `lat`/`latitude`, `lon`/`longitude`.
pub fn measure(name: &str, attributes: &Map<String, Value>) -> Measure {
    let text = |key: &str| attributes.get(key).and_then(Value::as_str);
    let is = |units: &[&str], standard: &str, names: [&str; 2]| {
        text("units").is_some_and(|u| units.contains(&u.to_ascii_lowercase().as_str()))
            || text("standard_name") == Some(standard)
            || names.iter().any(|n| n.eq_ignore_ascii_case(name))
    };
    if is(&EAST, "longitude", ["lon", "longitude"]) {
        Measure::Longitude
    } else if is(&NORTH, "latitude", ["lat", "latitude"]) {
        Measure::Latitude
    } else {
        Measure::Other
    }
}

/// A 1-D coordinate array as the grid rules see it.
pub struct Coordinate<'a> {
    pub name: &'a str,
    pub attributes: &'a Map<String, Value>,
    pub values: &'a [f64],
}

/// The one rule for "these are latitude and longitude" (maps, `sel=`, area weights, EDR
/// alike): Y a latitude and X a longitude by [`measure`], or Y/X named `y`/`x` in degrees
/// (units `degrees`, or none with values within ±90 and −180..360). Only asked when no
/// grid mapping or `GeoZarr` CRS applies.
pub fn is_geographic(y: &Coordinate, x: &Coordinate) -> bool {
    if measure(y.name, y.attributes) == Measure::Latitude && measure(x.name, x.attributes) == Measure::Longitude {
        return true;
    }
    let degrees = |c: &Coordinate, range: std::ops::RangeInclusive<f64>| match c.attributes.get("units") {
        Some(Value::String(u)) => matches!(u.to_ascii_lowercase().as_str(), "degrees" | "degree" | "deg"),
        None => c.values.iter().all(|v| range.contains(v)),
        Some(_) => false,
    };
    y.name.eq_ignore_ascii_case("y")
        && x.name.eq_ignore_ascii_case("x")
        && degrees(y, -90.0..=90.0)
        && degrees(x, -180.0..=360.0)
}

/// The factor from a native coordinate array's `units` to the projection's units (metres;
/// degrees on geographic and rotated grids; a geostationary grid's radians times the
/// perspective height), or why the units do not fit.
pub fn native_scale(crs: &Crs, attributes: &Map<String, Value>) -> Result<f64, String> {
    let units = attributes.get("units").and_then(Value::as_str).map(|u| u.trim().to_ascii_lowercase());
    match crs.kind {
        Kind::Geostationary => match units.as_deref() {
            None | Some("rad" | "radian" | "radians") => Ok(crs.scan_height().unwrap_or(1.0)),
            Some("m" | "metre" | "meter" | "metres" | "meters") => Ok(1.0),
            Some(u) => Err(format!("has units `{u}`; a geostationary grid's x/y are scan angles in radians (or m)")),
        },
        Kind::Geographic | Kind::Rotated | Kind::Curvilinear => Ok(1.0),
        Kind::Projected => match units.as_deref() {
            None | Some("m" | "metre" | "meter" | "metres" | "meters") => Ok(1.0),
            Some("km" | "kilometre" | "kilometer" | "kilometres" | "kilometers") => Ok(1000.0),
            Some(u) => Err(format!("has units `{u}`; allowed are m and km")),
        },
    }
}

/// Why an array's grid cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GridError(pub String);

/// An array's grid: its (Y, X) dimensions, CRS and the native place of every cell.
#[derive(Debug)]
pub struct Grid {
    pub kind: Kind,
    /// The indices of the Y and X dimensions in the array's.
    pub dims: [usize; 2],
    /// The names of the Y and X dimensions.
    pub names: [String; 2],
    pub crs: Crs,
    pub native: Native,
    /// The footprint of the cell edges in degrees: west, south, east, north (west > east
    /// across the antimeridian; −180..180 around a pole).
    pub bbox: [f64; 4],
}

/// Points sampled along each side of the grid's outer edge for its footprint.
const BOUNDARY_SAMPLES: usize = 1000;

impl Grid {
    /// The grid of `crs` and `native` on dimensions `dims` named `names`.
    pub fn new(dims: [usize; 2], names: [String; 2], crs: Crs, native: Native) -> Result<Self, GridError> {
        let kind = crs.kind;
        let mut grid = Self { kind, dims, names, crs, native, bbox: [0.0; 4] };
        let footprint = match &grid.native {
            Native::Mesh(mesh) => mesh.bbox(),
            _ => grid.footprint(),
        };
        grid.bbox = footprint.ok_or_else(|| {
            GridError(format!("none of its cells lies on the Earth in its CRS ({})", grid.crs.definition))
        })?;
        Ok(grid)
    }

    /// Rows and columns.
    pub fn shape(&self) -> (u64, u64) {
        self.native.shape()
    }

    /// Native x/y of longitude `lon`, latitude `lat`.
    pub fn to_native(&self, lon: f64, lat: f64) -> Option<(f64, f64)> {
        self.crs.forward(lon, lat)
    }

    /// The (row, col) of the cell containing the point, if any.
    pub fn cell(&self, lon: f64, lat: f64) -> Option<(u32, u32)> {
        let (x, y) = self.to_native(lon, lat)?;
        self.native.cell(x, y, self.kind == Kind::Geographic)
    }

    /// The four cells around the point for bilinear weights, if any.
    pub fn bilinear(&self, lon: f64, lat: f64) -> Option<Bilinear> {
        let (x, y) = self.to_native(lon, lat)?;
        if self.kind == Kind::Geographic
            && let Native::Axes { x: axis, .. } = &self.native
        {
            let west = axis.centres[0];
            return self.native.bilinear(west + (x - west).rem_euclid(360.0), y);
        }
        self.native.bilinear(x, y)
    }

    /// Longitude/latitude of the centre of cell (`row`, `col`).
    pub fn centre(&self, row: u64, col: u64) -> Option<(f64, f64)> {
        let (x, y) = self.native.centre(row, col);
        self.crs.inverse(x, y)
    }

    /// Longitude/latitude of the corner of stored edge `i` along the rows and `j` along the
    /// columns (cell (r, c) has the corners (r, c), (r, c + 1), (r + 1, c + 1), (r + 1, c)).
    pub fn corner(&self, i: u64, j: u64) -> Option<(f64, f64)> {
        let (x, y) = self.native.corner(i, j);
        self.crs.inverse(x, y)
    }

    /// The lon/lat centre of each cell of `rows` × `cols` (stored indices), row-major.
    pub fn centres(&self, rows: &[u64], cols: &[u64]) -> Vec<Option<(f64, f64)>> {
        rows.iter().flat_map(|&r| cols.iter().map(move |&c| self.centre(r, c))).collect()
    }

    /// The area on the sphere (m²) of each cell of `rows` × `cols`, row-major: the polygon
    /// through its corners joined by great circles (NaN where a corner is off the Earth).
    pub fn areas(&self, rows: &[u64], cols: &[u64]) -> Vec<f64> {
        // The corners each cell needs, projected once each.
        let edges = |cells: &[u64]| {
            let mut e: Vec<u64> = cells.iter().flat_map(|&i| [i, i + 1]).collect();
            e.sort_unstable();
            e.dedup();
            e
        };
        let (er, ec) = (edges(rows), edges(cols));
        let corners: Vec<Option<(f64, f64)>> =
            er.iter().flat_map(|&i| ec.iter().map(move |&j| self.corner(i, j))).collect();
        let at = |i: u64, j: u64| {
            let (a, b) = (er.binary_search(&i).unwrap_or(0), ec.binary_search(&j).unwrap_or(0));
            corners[a * ec.len() + b]
        };
        rows.iter()
            .flat_map(|&r| cols.iter().map(move |&c| (r, c)))
            .map(|(r, c)| match (at(r, c), at(r, c + 1), at(r + 1, c + 1), at(r + 1, c)) {
                (Some(a), Some(b), Some(c), Some(d)) => sphere::area(&[a, b, c, d]),
                _ => f64::NAN,
            })
            .collect()
    }

    /// The CRS as WKT: the WKT it was given, else WKT2 written from its parameters, else
    /// its definition (a PROJ string).
    pub fn crs_wkt(&self) -> String {
        self.crs.wkt.clone().or_else(|| wkt2::wkt2(&self.crs)).unwrap_or_else(|| self.crs.definition.clone())
    }

    /// The CRS as `/v1/arrays` names it: `EPSG:NNNN`, else the WKT it was given, else WKT2
    /// written from its parameters (none on a curvilinear grid).
    pub fn crs_name(&self) -> Option<String> {
        if self.kind == Kind::Curvilinear {
            return None;
        }
        match self.crs.code {
            Some(code) => Some(format!("EPSG:{code}")),
            None => self.crs.wkt.clone().or_else(|| wkt2::wkt2(&self.crs)),
        }
    }

    /// The footprint: the outer edge walked once round in longitude/latitude (points
    /// beyond a geostationary limb replaced by the last visible point towards the grid's
    /// centre), longitudes unwound; a walk that winds once round holds a pole.
    fn footprint(&self) -> Option<[f64; 4]> {
        let centre = self.native.at_fraction(0.5, 0.5);
        let n = 4 * BOUNDARY_SAMPLES;
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(n);
        for k in 0..n {
            let edge = self.native.boundary(k as f64 / BOUNDARY_SAMPLES as f64);
            if let Some(p) = self.crs.inverse(edge.0, edge.1).or_else(|| self.limb(centre, edge)) {
                points.push(p);
            }
        }
        if points.is_empty() {
            return None;
        }
        let (mut south, mut north) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut unwound = points[0].0;
        let mut previous = points[0].0;
        for &(lon, lat) in &points {
            unwound += (lon - previous + 180.0).rem_euclid(360.0) - 180.0;
            previous = lon;
            (lo, hi) = (lo.min(unwound), hi.max(unwound));
            (south, north) = (south.min(lat.max(-90.0)), north.max(lat.min(90.0)));
        }
        // Back to the start: a walk round a pole has gained ±360.
        let winding = unwound + (points[0].0 - previous + 180.0).rem_euclid(360.0) - 180.0 - points[0].0;
        if winding.abs() > 180.0 || hi - lo >= 360.0 {
            let pole_north = self.cell(0.0, 90.0).is_some() || (winding.abs() > 180.0 && north > -south);
            return Some(if pole_north { [-180.0, south, 180.0, 90.0] } else { [-180.0, -90.0, 180.0, north] });
        }
        let wrap = |v: f64| (v + 180.0).rem_euclid(360.0) - 180.0;
        let (west, east) = (wrap(lo), wrap(hi));
        // An east edge on the antimeridian stays 180 (not −180).
        let east = if east <= -180.0 && hi > lo { 180.0 } else { east };
        Some([west, south, east, north])
    }

    /// The last point on the Earth from native `inside` towards `outside` (bisection).
    fn limb(&self, inside: (f64, f64), outside: (f64, f64)) -> Option<(f64, f64)> {
        let mut good = self.crs.inverse(inside.0, inside.1).map(|p| (0.0, p))?;
        let (mut a, mut b) = (0.0_f64, 1.0_f64);
        for _ in 0..48 {
            let m = f64::midpoint(a, b);
            let at = (inside.0 + m * (outside.0 - inside.0), inside.1 + m * (outside.1 - inside.1));
            match self.crs.inverse(at.0, at.1) {
                Some(p) => (a, good) = (m, (m, p)),
                None => b = m,
            }
        }
        Some(good.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn close(a: [f64; 4], b: [f64; 4]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 0.01)
    }

    #[test]
    fn footprints_wrap_and_hold_poles() {
        let lonlat = |lat: &[f64], lon: &[f64]| {
            let native = Native::Axes { y: Axis::new(lat).unwrap(), x: Axis::new(lon).unwrap() };
            Grid::new([0, 1], ["lat".into(), "lon".into()], Crs::from_epsg(4326).unwrap(), native).unwrap()
        };
        let pacific = lonlat(&[10.0, 0.0, -10.0], &[150.0, 170.0, 190.0, 210.0]);
        assert!(close(pacific.bbox, [140.0, -15.0, -140.0, 15.0]), "{:?}", pacific.bbox);
        assert_eq!(pacific.cell(-175.0, 1.0), Some((1, 2)));
        let polar = Crs::from_epsg(3413).unwrap();
        let axis = |n: i32| Axis::new(&(0..n).map(|i| -1e6 + f64::from(i) * 1e5).collect::<Vec<_>>()).unwrap();
        let arctic =
            Grid::new([0, 1], ["y".into(), "x".into()], polar, Native::Axes { y: axis(21), x: axis(21) }).unwrap();
        assert_eq!((arctic.bbox[0], arctic.bbox[2], arctic.bbox[3]), (-180.0, 180.0, 90.0));
        assert!(arctic.bbox[1] > 70.0 && arctic.bbox[1] < 80.0, "{:?}", arctic.bbox);
        let (row, col) = arctic.cell(0.0, 90.0).unwrap();
        assert_eq!((row, col), (10, 10));
        let (lon, lat) = arctic.centre(10, 10).unwrap();
        assert!((lat - 90.0).abs() < 1e-9, "{lon} {lat}");
    }

    #[test]
    fn y_and_x_are_latitude_and_longitude_only_in_degrees() {
        let none = Map::new();
        let units = |u: &str| json!({"units": u}).as_object().unwrap().clone();
        let coordinate = |name, attributes, values| Coordinate { name, attributes, values };
        let (deg_n, deg_e, m, deg) = (units("degrees_north"), units("degrees_east"), units("m"), units("degrees"));
        let lat = [10.0, 20.0];
        let lon = [200.0, 210.0];
        let metres = [0.0, 1000.0];
        assert!(is_geographic(&coordinate("lat", &none, &lat), &coordinate("lon", &none, &lon)));
        assert!(is_geographic(&coordinate("y", &none, &lat), &coordinate("x", &none, &lon)));
        assert!(is_geographic(&coordinate("y", &deg_n, &lat), &coordinate("x", &deg_e, &lon)));
        assert!(is_geographic(&coordinate("y", &deg, &lat), &coordinate("x", &deg, &lon)));
        assert!(!is_geographic(&coordinate("y", &none, &metres), &coordinate("x", &none, &metres)));
        assert!(!is_geographic(&coordinate("y", &m, &lat), &coordinate("x", &m, &lon)));
        assert!(!is_geographic(&coordinate("rlat", &none, &lat), &coordinate("rlon", &none, &lon)));
    }
}
