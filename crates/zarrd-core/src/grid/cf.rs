//! CF grid mappings (<https://cfconventions.org/cf-conventions/cf-conventions.html#grid-mappings-and-projections>):
//! the attributes of the variable an array's `grid_mapping` names, turned into a [`Crs`]
//! — its `crs_wkt`, else GDAL's `spatial_ref`, else `grid_mapping_name` with its CF
//! parameters, read as pyproj's `CRS.from_cf` reads them (a single standard parallel of
//! a Lambert conformal conic is its natural origin; the figure of the Earth is WGS 84 when
//! none is given).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::grid::crs::{Crs, CrsError, RotatedPole, SUPPORTED};
use crate::grid::wkt;

/// The name of the variable an array's `grid_mapping` attribute names: the attribute
/// itself, or the first name of CF's extended form `"crs: x y"`.
pub fn grid_mapping(attributes: &Map<String, Value>) -> Option<String> {
    let text = attributes.get("grid_mapping")?.as_str()?.trim();
    let name = text.split([':', ' ']).next()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// The CRS the grid-mapping variable's `attributes` give.
pub fn crs(attributes: &Map<String, Value>) -> Result<Crs, CrsError> {
    let text = |name: &str| attributes.get(name).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let has_params = attributes.contains_key("grid_mapping_name");
    for name in ["crs_wkt", "spatial_ref"] {
        if let Some(wkt) = text(name) {
            match wkt::crs(wkt) {
                Ok(crs) => return Ok(crs),
                // The CF parameters say the same as the WKT: use them where the WKT is beyond us.
                Err(_) if has_params => break,
                Err(e) => return Err(CrsError::Unsupported(format!("its `{name}` {e}"))),
            }
        }
    }
    let Some(mapping) = text("grid_mapping_name") else {
        return Err(CrsError::Unsupported(
            "it has no `crs_wkt`, `spatial_ref` or `grid_mapping_name` attribute".to_owned(),
        ));
    };
    from_parameters(mapping, attributes)
}

/// A number attribute: a number, a list of one, or a number written as text.
fn numbers(value: &Value) -> Option<Vec<f64>> {
    match value {
        Value::Number(n) => Some(vec![n.as_f64()?]),
        Value::Array(list) => list.iter().map(Value::as_f64).collect(),
        Value::String(s) => s.split([',', ' ']).filter(|t| !t.is_empty()).map(|t| t.parse().ok()).collect(),
        _ => None,
    }
}

/// The CF parameters of one mapping, read as numbers, and the PROJ string made of them.
struct Parameters<'a> {
    mapping: &'a str,
    attributes: &'a Map<String, Value>,
    proj: String,
}

impl Parameters<'_> {
    /// All the numbers of attribute `name`, when it is there.
    fn all(&self, name: &str) -> Result<Option<Vec<f64>>, CrsError> {
        match self.attributes.get(name) {
            None => Ok(None),
            Some(v) => numbers(v)
                .filter(|n| !n.is_empty() && n.iter().all(|x| x.is_finite()))
                .map(Some)
                .ok_or_else(|| CrsError::Invalid(format!("its `{name}` is {v}, not a number"))),
        }
    }

    fn one(&self, name: &str) -> Result<Option<f64>, CrsError> {
        Ok(self.all(name)?.map(|v| v[0]))
    }

    fn or0(&self, name: &str) -> Result<f64, CrsError> {
        Ok(self.one(name)?.unwrap_or(0.0))
    }

    fn need(&self, name: &str) -> Result<f64, CrsError> {
        self.one(name)?.ok_or_else(|| CrsError::Invalid(format!("`{}` needs `{name}`", self.mapping)))
    }

    /// `standard_parallel`, one or two.
    fn parallels(&self) -> Result<Vec<f64>, CrsError> {
        self.all("standard_parallel")?
            .ok_or_else(|| CrsError::Invalid(format!("`{}` needs `standard_parallel`", self.mapping)))
    }

    fn push(&mut self, key: &str, v: f64) {
        let _ = write!(self.proj, " +{key}={v}");
    }

    /// `+key=` of attribute `name` (0 when absent).
    fn put(&mut self, key: &str, name: &str) -> Result<(), CrsError> {
        let v = self.or0(name)?;
        self.push(key, v);
        Ok(())
    }

    /// `+lat_ts` from `standard_parallel`, else `+k_0` from the scale factor.
    fn true_scale(&mut self) -> Result<(), CrsError> {
        match (self.one("standard_parallel")?, self.one("scale_factor_at_projection_origin")?) {
            (Some(ts), _) => self.push("lat_ts", ts),
            (None, Some(k)) => self.push("k_0", k),
            (None, None) => {}
        }
        Ok(())
    }
}

/// The CRS of CF `grid_mapping_name` `mapping` and its parameters.
fn from_parameters(mapping: &str, attributes: &Map<String, Value>) -> Result<Crs, CrsError> {
    let mut p = Parameters { mapping, attributes, proj: String::new() };
    if mapping == "rotated_latitude_longitude" {
        return Ok(Crs::rotated(RotatedPole {
            pole_lat: p.need("grid_north_pole_latitude")?,
            pole_lon: p.need("grid_north_pole_longitude")?,
            north_pole_grid_lon: p.or0("north_pole_grid_longitude")?,
        }));
    }
    let proj = projection(&mut p)?;
    let (fe, fne) = (p.or0("false_easting")?, p.or0("false_northing")?);
    let earth = earth(&p)?;
    let x0 = if proj == "longlat" { String::new() } else { format!(" +x_0={fe} +y_0={fne}") };
    let definition = format!("+proj={proj}{}{x0}{earth} +units=m +no_defs", p.proj);
    Crs::from_proj(&definition, None, None)
}

/// The PROJ name of the mapping, its parameters pushed onto `p`.
fn projection(p: &mut Parameters) -> Result<&'static str, CrsError> {
    Ok(match p.mapping {
        "latitude_longitude" => "longlat",
        "lambert_conformal_conic" => {
            // One standard parallel is the natural origin (pyproj's 1SP reading).
            match p.parallels()?[..] {
                [one] => (p.push("lat_1", one), p.push("lat_0", one)).1,
                ref two => {
                    p.push("lat_1", two[0]);
                    p.push("lat_2", two[1]);
                    p.put("lat_0", "latitude_of_projection_origin")?;
                }
            }
            p.put("lon_0", "longitude_of_central_meridian")?;
            "lcc"
        }
        "albers_conical_equal_area" => {
            let sp = p.parallels()?;
            p.push("lat_1", sp[0]);
            p.push("lat_2", sp.get(1).copied().unwrap_or(sp[0]));
            p.put("lat_0", "latitude_of_projection_origin")?;
            p.put("lon_0", "longitude_of_central_meridian")?;
            "aea"
        }
        "polar_stereographic" => {
            let lat = p.need("latitude_of_projection_origin")?;
            p.push("lat_0", lat);
            let lon = p.one("straight_vertical_longitude_from_pole")?.or(p.one("longitude_of_projection_origin")?);
            p.push("lon_0", lon.unwrap_or(0.0));
            p.true_scale()?;
            "stere"
        }
        "stereographic" => {
            p.put("lat_0", "latitude_of_projection_origin")?;
            p.put("lon_0", "longitude_of_projection_origin")?;
            let k = p.one("scale_factor_at_projection_origin")?.unwrap_or(1.0);
            p.push("k_0", k);
            "stere"
        }
        "transverse_mercator" => {
            p.put("lat_0", "latitude_of_projection_origin")?;
            p.put("lon_0", "longitude_of_central_meridian")?;
            let k = p.one("scale_factor_at_central_meridian")?.unwrap_or(1.0);
            p.push("k_0", k);
            "etmerc"
        }
        "mercator" => {
            p.put("lon_0", "longitude_of_projection_origin")?;
            p.true_scale()?;
            "merc"
        }
        "lambert_azimuthal_equal_area" => {
            p.put("lat_0", "latitude_of_projection_origin")?;
            p.put("lon_0", "longitude_of_projection_origin")?;
            "laea"
        }
        "lambert_cylindrical_equal_area" => {
            p.put("lon_0", "longitude_of_central_meridian")?;
            p.true_scale()?;
            "cea"
        }
        "sinusoidal" => {
            let lon = p.one("longitude_of_projection_origin")?.or(p.one("longitude_of_central_meridian")?);
            p.push("lon_0", lon.unwrap_or(0.0));
            "sinu"
        }
        "geostationary" => {
            let h = p.need("perspective_point_height")?;
            p.push("h", h);
            p.put("lon_0", "longitude_of_projection_origin")?;
            let text = |n: &str| p.attributes.get(n).and_then(Value::as_str);
            let sweep = match (text("sweep_angle_axis"), text("fixed_angle_axis")) {
                (Some(s), _) => s.to_ascii_lowercase(),
                (None, Some("x")) => "y".to_owned(),
                _ => "x".to_owned(),
            };
            if sweep != "x" && sweep != "y" {
                return Err(CrsError::Invalid(format!("its `sweep_angle_axis` is `{sweep}`; allowed are x and y")));
            }
            let _ = write!(p.proj, " +sweep={sweep}");
            "geos"
        }
        other => {
            return Err(CrsError::Unsupported(format!(
                "its `grid_mapping_name` is `{other}`, which zarrd does not support (supported: {SUPPORTED})"
            )));
        }
    })
}

/// The figure of the Earth as PROJ parameters (WGS 84 when the attributes give none).
fn earth(p: &Parameters) -> Result<String, CrsError> {
    let radius = p.one("earth_radius")?;
    let (a, rf, b) = (p.one("semi_major_axis")?, p.one("inverse_flattening")?, p.one("semi_minor_axis")?);
    Ok(match (radius, a, rf, b) {
        (Some(r), ..) => format!(" +R={r}"),
        (None, Some(a), Some(rf), _) if rf > 0.0 => format!(" +a={a} +rf={rf}"),
        (None, Some(a), _, Some(b)) => format!(" +a={a} +b={b}"),
        (None, Some(a), _, None) => format!(" +R={a}"),
        _ => " +datum=WGS84".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::crs::Kind;
    use serde_json::json;

    #[allow(clippy::needless_pass_by_value)] // json! literals
    fn attrs(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_grid_mapping_attribute_names_a_variable() {
        assert_eq!(grid_mapping(&attrs(json!({"grid_mapping": "crs"}))).as_deref(), Some("crs"));
        assert_eq!(
            grid_mapping(&attrs(json!({"grid_mapping": "crsOSGB: x y crsWGS84: lat lon"}))).as_deref(),
            Some("crsOSGB")
        );
        assert_eq!(grid_mapping(&attrs(json!({"grid_mapping": " "}))), None);
        assert_eq!(grid_mapping(&attrs(json!({}))), None);
    }

    /// CF's one standard parallel of an Albers cone is the parallel it touches, as GDAL 3.6
    /// reads it from a `NetCDF` file (`gdalsrsinfo`: `+lat_1=40 +lat_2=40`); pyproj's
    /// `CRS.from_cf` takes `lat_2=0` instead. Expected: `gdaltransform -s_srs EPSG:4326` of
    /// 80 W 45 N into that CRS read from the file (ncgen of these attributes).
    #[test]
    fn one_albers_parallel_is_tangent_as_gdal_reads_it() {
        let aea = crs(&attrs(json!({
            "grid_mapping_name": "albers_conical_equal_area", "standard_parallel": 40.0,
            "longitude_of_central_meridian": -96.0, "latitude_of_projection_origin": 23.0,
            "false_easting": 0.0, "false_northing": 0.0
        })))
        .unwrap();
        let (x, y) = aea.forward(-80.0, 45.0).unwrap();
        assert!((x - 1_259_946.569_798).abs() < 1e-3 && (y - 2_529_713.785_033).abs() < 1e-3, "{x} {y}");
    }

    #[test]
    fn cf_parameters_make_projections() {
        let lcc = crs(&attrs(json!({
            "grid_mapping_name": "lambert_conformal_conic", "standard_parallel": 38.5,
            "longitude_of_central_meridian": 262.5, "latitude_of_projection_origin": 38.5, "earth_radius": 6_371_229.0
        })))
        .unwrap();
        assert_eq!(lcc.kind, Kind::Projected);
        let (x, y) = lcc.forward(-97.5, 38.5).unwrap();
        assert!(x.abs() < 1e-6 && y.abs() < 1e-6, "the origin: {x} {y}");
        let goes = crs(&attrs(json!({
            "grid_mapping_name": "geostationary", "perspective_point_height": 35_786_023.0,
            "semi_major_axis": 6_378_137.0, "semi_minor_axis": 6_356_752.314_14, "longitude_of_projection_origin": -75.0,
            "sweep_angle_axis": "x"
        })))
        .unwrap();
        assert_eq!(goes.kind, Kind::Geostationary);
        let rotated = crs(&attrs(json!({
            "grid_mapping_name": "rotated_latitude_longitude", "grid_north_pole_latitude": 39.25,
            "grid_north_pole_longitude": -162.0
        })))
        .unwrap();
        assert_eq!(rotated.kind, Kind::Rotated);
        for (bad, says) in [
            (json!({"grid_mapping_name": "vertical_perspective"}), "does not support"),
            (json!({"grid_mapping_name": "polar_stereographic"}), "needs `latitude_of_projection_origin`"),
            (json!({"grid_mapping_name": "mercator", "false_easting": "east"}), "not a number"),
            (
                json!({"grid_mapping_name": "geostationary", "perspective_point_height": 1, "sweep_angle_axis": "z"}),
                "sweep",
            ),
            (json!({"long_name": "crs"}), "no `crs_wkt`"),
            (json!({"crs_wkt": "PROJCRS[garbage"}), "crs_wkt"),
        ] {
            let e = crs(&attrs(bad.clone())).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
