//! A grid's CRS as GeoTIFF GeoKeys (OGC GeoTIFF 1.1, the keys GDAL writes and reads): the
//! EPSG code where the CRS has one; else a user-defined projected CRS of the methods
//! GeoTIFF defines coordinate transformations for — Lambert conformal conic (1SP, 2SP),
//! polar stereographic (variants A and B), transverse Mercator, Mercator (A and B), Albers,
//! Lambert azimuthal equal area — over WGS 84 or a user-defined ellipsoid or sphere. The
//! method and its parameters are [`crate::grid::wkt2`]'s (EPSG's names and codes), so both
//! descriptions of a CRS come from one reading of its PROJ string.

use std::collections::BTreeMap;

use crate::grid::crs::{Crs, Kind};
use crate::grid::wkt2::{self, WGS84};

/// The three GeoTIFF tags of a CRS: `GeoKeyDirectoryTag` (34735), `GeoDoubleParamsTag`
/// (34736), `GeoAsciiParamsTag` (34737; empty: no tag).
#[derive(Debug, Clone, PartialEq)]
pub struct GeoKeys {
    pub directory: Vec<u16>,
    pub doubles: Vec<f64>,
    pub ascii: String,
}

/// The `GeoDoubleParamsTag` and `GeoAsciiParamsTag` numbers, where a key's value lives.
pub const DOUBLE_PARAMS: u16 = 34736;
pub const ASCII_PARAMS: u16 = 34737;

/// "User-defined" in every GeoKey that takes a code.
const USER_DEFINED: u16 = 32767;

/// A key's value.
enum Value {
    Short(u16),
    Double(f64),
    Ascii(String),
}

/// GeoTIFF's coordinate transformation code (`ProjCoordTransGeoKey`) of EPSG method
/// `method`, and the GeoKey each of its EPSG parameters is written in (as GDAL writes them:
/// Albers and LAEA take the natural-origin and centre keys, polar stereographic the
/// straight-vertical-pole longitude and, in variant B, its standard parallel as origin
/// latitude with scale 1).
fn transformation(method: u32) -> Option<(u16, fn(u32) -> Option<u16>)> {
    fn natural(param: u32) -> Option<u16> {
        Some(match param {
            8801 => 3081, // ProjNatOriginLatGeoKey
            8802 => 3080, // ProjNatOriginLongGeoKey
            8805 => 3092, // ProjScaleAtNatOriginGeoKey
            8806 => 3082, // ProjFalseEastingGeoKey
            8807 => 3083, // ProjFalseNorthingGeoKey
            8821 => 3085, // ProjFalseOriginLatGeoKey
            8822 => 3084, // ProjFalseOriginLongGeoKey
            8823 => 3078, // ProjStdParallel1GeoKey
            8824 => 3079, // ProjStdParallel2GeoKey
            8826 => 3086, // ProjFalseOriginEastingGeoKey
            8827 => 3087, // ProjFalseOriginNorthingGeoKey
            _ => return None,
        })
    }
    fn albers(param: u32) -> Option<u16> {
        natural(match param {
            8821 => 8801,
            8822 => 8802,
            8826 => 8806,
            8827 => 8807,
            p => p,
        })
    }
    fn azimuthal(param: u32) -> Option<u16> {
        match param {
            8801 => Some(3089), // ProjCenterLatGeoKey
            8802 => Some(3088), // ProjCenterLongGeoKey
            p => natural(p),
        }
    }
    fn polar(param: u32) -> Option<u16> {
        match param {
            8802 | 8833 => Some(3095), // ProjStraightVertPoleLongGeoKey
            8832 => Some(3081),
            p => natural(p),
        }
    }
    Some(match method {
        9802 => (8, natural),        // CT_LambertConfConic_2SP
        9801 => (9, natural),        // CT_LambertConfConic_1SP
        9807 => (1, natural),        // CT_TransverseMercator
        9804 | 9805 => (7, natural), // CT_Mercator (B: ProjStdParallel1GeoKey)
        9822 => (11, albers),        // CT_AlbersEqualArea
        9820 => (10, azimuthal),     // CT_LambertAzimEqualArea
        9810 | 9829 => (15, polar),  // CT_PolarStereographic
        _ => return None,
    })
}

/// The GeoKeys of `crs`, or why GeoTIFF cannot hold it.
pub fn geokeys(crs: &Crs) -> Result<GeoKeys, String> {
    let mut keys: BTreeMap<u16, Value> = BTreeMap::new();
    let model = match crs.kind {
        Kind::Geographic => 2,
        Kind::Projected => 1,
        Kind::Rotated => return Err("GeoTIFF has no rotated-pole CRS".into()),
        Kind::Geostationary => return Err("GeoTIFF has no geostationary projection".into()),
        Kind::Curvilinear => return Err("a curvilinear grid (2-D latitude/longitude) has no affine transform".into()),
    };
    keys.insert(1024, Value::Short(model)); // GTModelTypeGeoKey
    keys.insert(1025, Value::Short(1)); // GTRasterTypeGeoKey: RasterPixelIsArea
    match (crs.code.and_then(|c| u16::try_from(c).ok()), crs.kind) {
        (Some(code), Kind::Geographic) => _ = keys.insert(2048, Value::Short(code)),
        (Some(code), _) => _ = keys.insert(3072, Value::Short(code)),
        (None, _) => user_defined(crs, &mut keys)?,
    }
    Ok(directory(keys))
}

/// The keys of a CRS without an EPSG code.
fn user_defined(crs: &Crs, keys: &mut BTreeMap<u16, Value>) -> Result<(), String> {
    let unwritable = || format!("its CRS (`{}`) cannot be written as GeoKeys", crs.definition);
    let def = wkt2::definition(crs).ok_or_else(unwritable)?;
    let (a, rf, datum) = def.ellipsoid().ok_or_else(unwritable)?;
    if datum == WGS84 {
        keys.insert(2048, Value::Short(4326)); // GeographicTypeGeoKey: WGS 84
    } else {
        keys.insert(2048, Value::Short(USER_DEFINED));
        keys.insert(2050, Value::Short(USER_DEFINED)); // GeogGeodeticDatumGeoKey
        keys.insert(2051, Value::Short(8901)); // GeogPrimeMeridianGeoKey: Greenwich
        keys.insert(2054, Value::Short(9102)); // GeogAngularUnitsGeoKey: degree
        keys.insert(2056, Value::Short(USER_DEFINED)); // GeogEllipsoidGeoKey
        keys.insert(2057, Value::Double(a)); // GeogSemiMajorAxisGeoKey
        // A sphere by its two equal axes; an ellipsoid by its inverse flattening.
        if rf > 0.0 {
            keys.insert(2059, Value::Double(rf)); // GeogInvFlatteningGeoKey
        } else {
            keys.insert(2058, Value::Double(a)); // GeogSemiMinorAxisGeoKey
        }
    }
    let proj = def.proj().ok_or_else(unwritable)?;
    if matches!(proj, "longlat" | "latlong") {
        return Ok(());
    }
    let (method, code, params) = wkt2::conversion(proj, &def, rf).ok_or_else(unwritable)?;
    let (transform, key_of) = code.and_then(transformation).ok_or_else(|| {
        format!(
            "GeoTIFF defines no keys for the projection `{method}` (it holds EPSG CRSs and user-defined Lambert conformal conic, polar stereographic, transverse Mercator, Mercator, Albers and Lambert azimuthal equal area)"
        )
    })?;
    keys.insert(1026, Value::Ascii(format!("unknown / {method}"))); // GTCitationGeoKey
    keys.insert(3072, Value::Short(USER_DEFINED)); // ProjectedCSTypeGeoKey
    keys.insert(3074, Value::Short(USER_DEFINED)); // ProjectionGeoKey
    keys.insert(3075, Value::Short(transform)); // ProjCoordTransGeoKey
    keys.insert(3076, Value::Short(9001)); // ProjLinearUnitsGeoKey: metre
    for ((_, _, param), value) in params {
        let key = param.and_then(key_of).ok_or_else(unwritable)?;
        keys.insert(key, Value::Double(value));
    }
    if code == Some(9829) {
        keys.insert(3092, Value::Double(1.0));
    }
    Ok(())
}

/// The directory of `keys` (sorted by key, as GeoTIFF requires): the header `1, 1, 0, n`,
/// then per key its id, where its value is (0: in the entry), its count and value or index.
fn directory(keys: BTreeMap<u16, Value>) -> GeoKeys {
    let mut out = GeoKeys { directory: vec![1, 1, 0, keys.len() as u16], doubles: Vec::new(), ascii: String::new() };
    for (key, value) in keys {
        let entry = match value {
            Value::Short(v) => [key, 0, 1, v],
            Value::Double(v) => {
                out.doubles.push(v);
                [key, DOUBLE_PARAMS, 1, (out.doubles.len() - 1) as u16]
            }
            Value::Ascii(text) => {
                let at = out.ascii.len() as u16;
                // Each ASCII value ends in `|` (the tag's NUL is the writer's).
                out.ascii.push_str(&text.replace('|', "/"));
                out.ascii.push('|');
                [key, ASCII_PARAMS, (text.len() + 1) as u16, at]
            }
        };
        out.directory.extend(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `key`: a short, or a double's value.
    fn get(keys: &GeoKeys, key: u16) -> Option<f64> {
        let entries = &keys.directory[4..];
        let entry = entries.chunks(4).find(|e| e[0] == key)?;
        Some(match entry[1] {
            0 => f64::from(entry[3]),
            DOUBLE_PARAMS => keys.doubles[usize::from(entry[3])],
            _ => f64::NAN,
        })
    }

    #[test]
    fn epsg_codes_are_one_key() {
        let utm = geokeys(&Crs::from_epsg(32633).unwrap()).unwrap();
        assert_eq!(utm.directory, [1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633]);
        let wgs84 = geokeys(&Crs::from_epsg(4326).unwrap()).unwrap();
        assert_eq!(get(&wgs84, 1024), Some(2.0));
        assert_eq!(get(&wgs84, 2048), Some(4326.0));
    }

    #[test]
    fn user_defined_projections_take_geotiffs_keys() {
        // HRRR's Lambert conformal conic on a sphere (CF: earth_radius 6371229).
        let hrrr = "+proj=lcc +lat_1=38.5 +lat_2=38.5 +lat_0=38.5 +lon_0=262.5 +x_0=0 +y_0=0 +R=6371229 +units=m";
        let keys = geokeys(&Crs::from_proj(hrrr, None, None).unwrap()).unwrap();
        for (key, want) in [
            (3072, 32767.0),
            (3075, 8.0),
            (3078, 38.5),
            (3079, 38.5),
            (3084, 262.5),
            (3085, 38.5),
            (2048, 32767.0),
            (2057, 6_371_229.0),
            (2058, 6_371_229.0),
        ] {
            assert_eq!(get(&keys, key), Some(want), "key {key}: {keys:?}");
        }
        assert!(keys.ascii.ends_with("Lambert Conic Conformal (2SP)|"), "{}", keys.ascii);
        let ids: Vec<u16> = keys.directory[4..].chunks(4).map(|e| e[0]).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        // Polar stereographic B: the standard parallel as origin latitude, scale 1.
        let south = "+proj=stere +lat_0=-90 +lat_ts=-71 +lon_0=0 +x_0=0 +y_0=0 +datum=WGS84 +units=m";
        let keys = geokeys(&Crs::from_proj(south, None, None).unwrap()).unwrap();
        for (key, want) in [(2048, 4326.0), (3075, 15.0), (3081, -71.0), (3095, 0.0), (3092, 1.0)] {
            assert_eq!(get(&keys, key), Some(want), "key {key}: {keys:?}");
        }
        let albers = "+proj=aea +lat_0=23 +lat_1=29.5 +lat_2=45.5 +lon_0=-96 +x_0=0 +y_0=0 +ellps=GRS80 +units=m";
        let keys = geokeys(&Crs::from_proj(albers, None, None).unwrap()).unwrap();
        for (key, want) in
            [(3075, 11.0), (3078, 29.5), (3079, 45.5), (3080, -96.0), (3081, 23.0), (2059, 298.257_222_101)]
        {
            assert_eq!(get(&keys, key), Some(want), "key {key}: {keys:?}");
        }
    }

    #[test]
    fn what_geotiff_cannot_hold_is_named() {
        let sinusoidal = Crs::from_proj("+proj=sinu +lon_0=0 +R=6371007.181 +units=m", None, None).unwrap();
        assert!(geokeys(&sinusoidal).unwrap_err().contains("Sinusoidal"));
        let pole = crate::grid::crs::RotatedPole { pole_lat: 39.25, pole_lon: -162.0, north_pole_grid_lon: 0.0 };
        assert!(geokeys(&Crs::rotated(pole)).unwrap_err().contains("rotated"));
        assert!(geokeys(&Crs::curvilinear()).is_err());
    }
}
