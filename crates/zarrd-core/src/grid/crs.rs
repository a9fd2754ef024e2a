//! A grid's coordinate reference system: what turns a point's longitude/latitude (CRS84,
//! WGS 84) into the grid's native x/y and back. Projections come from `proj4rs` (a pure
//! Rust port of PROJ.4, with the EPSG definitions of `crs-definitions`); the rotated pole,
//! which it lacks, is written here as PROJ's `ob_tran` does it.
//!
//! Native units are the projection's (metres), except on a geostationary grid, whose
//! native x/y are scan angles in radians (CF): there the projection's metres are the angle
//! times the perspective height, which [`Crs::scan_height`] says.

use proj4rs::Proj;
use proj4rs::adaptors::transform_vertex_2d;

/// What kind of grid a CRS makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Geographic,
    Projected,
    Rotated,
    Geostationary,
    Curvilinear,
}

/// Why a CRS cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrsError {
    /// A projection or mapping zarrd does not support.
    #[error("{0}")]
    Unsupported(String),
    /// Parameters that do not make a projection.
    #[error("{0}")]
    Invalid(String),
}

/// The projections a grid may use, named as CF names them (also the EPSG codes and WKT
/// methods of these).
pub const SUPPORTED: &str = "latitude_longitude, lambert_conformal_conic, polar_stereographic, stereographic, transverse_mercator (UTM), mercator, lambert_azimuthal_equal_area, albers_conical_equal_area, lambert_cylindrical_equal_area, sinusoidal, geostationary, rotated_latitude_longitude";

/// A grid's CRS.
#[derive(Debug)]
pub struct Crs {
    pub kind: Kind,
    /// The EPSG code, when the CRS has one.
    pub code: Option<u32>,
    /// The CRS as WKT, when one was given.
    pub wkt: Option<String>,
    /// What it is, for messages: the PROJ string or the rotated pole.
    pub definition: String,
    projection: Projection,
}

#[derive(Debug)]
enum Projection {
    /// Native x/y are longitude/latitude.
    LonLat,
    /// A `proj4rs` projection, with WGS 84 longitude/latitude to transform from.
    Proj {
        proj: Box<Proj>,
        wgs84: Box<Proj>,
    },
    Rotated(RotatedPole),
}

impl Crs {
    /// The CRS of a PROJ string (`+proj=… +…`).
    pub fn from_proj(definition: &str, code: Option<u32>, wkt: Option<String>) -> Result<Self, CrsError> {
        let proj = Proj::from_proj_string(definition)
            .map_err(|e| CrsError::Invalid(format!("the projection `{definition}` cannot be set up: {e}")))?;
        let kind = match proj.projname() {
            "longlat" | "latlong" => Kind::Geographic,
            "geos" => Kind::Geostationary,
            _ => Kind::Projected,
        };
        let projection = if kind == Kind::Geographic {
            Projection::LonLat
        } else {
            let wgs84 = Proj::from_proj_string("+proj=longlat +datum=WGS84 +no_defs")
                .map_err(|e| CrsError::Invalid(format!("WGS 84 cannot be set up: {e}")))?;
            Projection::Proj { proj: Box::new(proj), wgs84: Box::new(wgs84) }
        };
        Ok(Self { kind, code, wkt, definition: definition.to_owned(), projection })
    }

    /// The CRS of an EPSG code (422 when `crs-definitions` does not know it or its
    /// projection is not one of [`SUPPORTED`]).
    pub fn from_epsg(code: u32) -> Result<Self, CrsError> {
        let def = u16::try_from(code).ok().and_then(crs_definitions::from_code).ok_or_else(|| {
            CrsError::Unsupported(format!("EPSG:{code} is not a CRS zarrd knows (supported: {SUPPORTED})"))
        })?;
        supported_proj(def.proj4).map_err(|name| {
            CrsError::Unsupported(format!("EPSG:{code} uses the projection `{name}`; supported are {SUPPORTED}"))
        })?;
        Self::from_proj(def.proj4, Some(code), None)
    }

    /// A rotated-pole CRS (CF `rotated_latitude_longitude`).
    pub fn rotated(pole: RotatedPole) -> Self {
        let definition = format!(
            "rotated pole at latitude {}, longitude {} (north pole grid longitude {})",
            pole.pole_lat, pole.pole_lon, pole.north_pole_grid_lon
        );
        Self { kind: Kind::Rotated, code: None, wkt: None, definition, projection: Projection::Rotated(pole) }
    }

    /// The "CRS" of a curvilinear grid: its cells' latitudes and longitudes are stored
    /// (WGS 84), so native x/y are longitude/latitude.
    pub fn curvilinear() -> Self {
        let definition = "2-D latitude/longitude arrays (WGS 84)".to_owned();
        Self { kind: Kind::Curvilinear, code: None, wkt: None, definition, projection: Projection::LonLat }
    }

    /// The rotated pole of a rotated-pole CRS.
    pub fn pole(&self) -> Option<RotatedPole> {
        match self.projection {
            Projection::Rotated(pole) => Some(pole),
            _ => None,
        }
    }

    /// The height of a geostationary satellite's perspective point (native radians times
    /// it are the projection's metres).
    pub fn scan_height(&self) -> Option<f64> {
        match &self.projection {
            Projection::Proj { .. } if self.kind == Kind::Geostationary => {
                param(&self.definition, "h").and_then(|h| h.parse().ok())
            }
            _ => None,
        }
    }

    /// Native x/y of the point at longitude `lon`, latitude `lat` (degrees, WGS 84), or
    /// `None` where the projection has none (beyond a geostationary disk's limb).
    pub fn forward(&self, lon: f64, lat: f64) -> Option<(f64, f64)> {
        let (x, y) = match &self.projection {
            Projection::LonLat => (lon, lat),
            Projection::Proj { proj, wgs84 } => {
                transform_vertex_2d(wgs84, proj, (lon.to_radians(), lat.to_radians())).ok()?
            }
            Projection::Rotated(pole) => pole.forward(lon, lat),
        };
        (x.is_finite() && y.is_finite()).then_some((x, y))
    }

    /// Longitude/latitude (degrees, WGS 84) of native `x`, `y`, or `None` where there is no
    /// point on the Earth.
    pub fn inverse(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        let (lon, lat) = match &self.projection {
            // Latitude edges of a global grid lie beyond the poles (91°): theirs to keep.
            Projection::LonLat => return (x.is_finite() && y.is_finite()).then_some((x, y)),
            Projection::Proj { proj, wgs84 } => {
                let (lon, lat) = transform_vertex_2d(proj, wgs84, (x, y)).ok()?;
                (lon.to_degrees(), lat.to_degrees())
            }
            Projection::Rotated(pole) => pole.inverse(x, y),
        };
        (lon.is_finite() && lat.is_finite() && lat.abs() <= 90.0 + 1e-9).then_some((lon, lat))
    }
}

/// The value of `+name=` in a PROJ string.
fn param<'a>(definition: &'a str, name: &str) -> Option<&'a str> {
    definition.split_whitespace().find_map(|p| p.strip_prefix('+')?.strip_prefix(name)?.strip_prefix('='))
}

/// Whether a PROJ string's projection is one zarrd supports (else its name).
pub fn supported_proj(definition: &str) -> Result<(), String> {
    const PROJ: [&str; 14] = [
        "longlat", "latlong", "lcc", "stere", "sterea", "tmerc", "etmerc", "utm", "merc", "laea", "aea", "cea", "sinu",
        "geos",
    ];
    let name = param(definition, "proj").unwrap_or("");
    if PROJ.contains(&name) { Ok(()) } else { Err(name.to_owned()) }
}

/// A rotated pole (CF `rotated_latitude_longitude`): the grid's north pole at geographic
/// latitude `pole_lat`, longitude `pole_lon`, and the geographic north pole at grid
/// longitude `north_pole_grid_lon`. As PROJ's `ob_tran` (`o_lat_p` = `pole_lat`,
/// `o_lon_p` = `north_pole_grid_lon`, `lon_0` = 180 + `pole_lon`), on the sphere.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RotatedPole {
    pub pole_lat: f64,
    pub pole_lon: f64,
    pub north_pole_grid_lon: f64,
}

impl RotatedPole {
    /// Rotated longitude/latitude (degrees) of a geographic point.
    pub fn forward(&self, lon: f64, lat: f64) -> (f64, f64) {
        let (sp, cp) = self.pole_lat.to_radians().sin_cos();
        let lam = (lon - 180.0 - self.pole_lon).to_radians();
        let (sphi, cphi) = lat.to_radians().sin_cos();
        let (sl, cl) = lam.sin_cos();
        let rlon = (cphi * sl).atan2(sp * cphi * cl + cp * sphi) + self.north_pole_grid_lon.to_radians();
        let rlat = (sp * sphi - cp * cphi * cl).clamp(-1.0, 1.0).asin();
        (wrap180(rlon.to_degrees()), rlat.to_degrees())
    }

    /// Geographic longitude/latitude (degrees) of a rotated point.
    pub fn inverse(&self, rlon: f64, rlat: f64) -> (f64, f64) {
        let (sp, cp) = self.pole_lat.to_radians().sin_cos();
        let lam = (rlon - self.north_pole_grid_lon).to_radians();
        let (sphi, cphi) = rlat.to_radians().sin_cos();
        let (sl, cl) = lam.sin_cos();
        let lat = (sp * sphi + cp * cphi * cl).clamp(-1.0, 1.0).asin();
        let lon = (cphi * sl).atan2(sp * cphi * cl - cp * sphi);
        (wrap180(lon.to_degrees() + 180.0 + self.pole_lon), lat.to_degrees())
    }
}

/// `v` brought to [-180, 180).
fn wrap180(v: f64) -> f64 {
    (v + 180.0).rem_euclid(360.0) - 180.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64), tol: f64) -> bool {
        (a.0 - b.0).abs() < tol && (a.1 - b.1).abs() < tol
    }

    #[test]
    fn a_rotated_pole_turns_there_and_back() {
        // EURO-CORDEX: pole at 39.25 N, 162 W. The grid's origin is at about 18 E, 50.75 N.
        let pole = RotatedPole { pole_lat: 39.25, pole_lon: -162.0, north_pole_grid_lon: 0.0 };
        let origin = pole.inverse(0.0, 0.0);
        assert!(close(origin, (18.0, 50.75), 1e-9), "{origin:?}");
        assert!(close(pole.forward(18.0, 50.75), (0.0, 0.0), 1e-9));
        for (lon, lat) in [(-10.0, 35.0), (30.0, 70.0), (5.5, 44.4), (170.0, -20.0)] {
            let (x, y) = pole.forward(lon, lat);
            assert!(close(pole.inverse(x, y), (lon, lat), 1e-9), "{lon} {lat}");
        }
    }

    #[test]
    fn epsg_codes_and_proj_strings() {
        let polar = Crs::from_epsg(3413).unwrap();
        assert_eq!((polar.kind, polar.code), (Kind::Projected, Some(3413)));
        // The pole is the projection's origin.
        let (x, y) = polar.forward(0.0, 90.0).unwrap();
        assert!(x.abs() < 1e-6 && y.abs() < 1e-6, "{x} {y}");
        let back = polar.inverse(-1_000_000.0, 500_000.0).unwrap();
        let there = polar.forward(back.0, back.1).unwrap();
        assert!(close(there, (-1_000_000.0, 500_000.0), 1e-6));
        assert!(matches!(Crs::from_epsg(4326).unwrap().kind, Kind::Geographic));
        assert!(matches!(Crs::from_epsg(2_000_000), Err(CrsError::Unsupported(_))));
        // EPSG:2056 (Swiss) is an oblique Mercator: not supported.
        assert!(matches!(Crs::from_epsg(2056), Err(CrsError::Unsupported(m)) if m.contains("somerc")));
        let geos = Crs::from_proj("+proj=geos +h=35786023 +lon_0=-75 +sweep=x +ellps=GRS80", None, None).unwrap();
        assert_eq!((geos.kind, geos.scan_height()), (Kind::Geostationary, Some(35_786_023.0)));
        assert_eq!(geos.forward(105.0, 0.0), None, "the far side of the Earth is not seen");
        assert!(geos.forward(-75.0, 0.0).is_some());
    }
}
