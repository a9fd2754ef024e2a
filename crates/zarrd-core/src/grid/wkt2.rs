//! WKT2:2019 (ISO 19162:2019) for a CRS without an EPSG code, for `/v1/arrays` (`"crs"`)
//! and EDR (`ProjectedCRS`): the CRSs [`crate::grid::cf`] builds, written as PROJ writes
//! them (pyproj's `CRS.from_cf(…).to_wkt()`): its EPSG method and parameter names, the
//! ellipsoid of the PROJ string, easting/northing in metres. A PROJ string with anything
//! else in it (a datum shift, other units, a prime meridian) gets none.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::grid::crs::{Crs, RotatedPole};

const DEGREE: &str = r#"ANGLEUNIT["degree",0.0174532925199433]"#;
const PRIMEM: &str = r#"PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]]"#;
const ELLIPSOIDAL: &str = r#"CS[ellipsoidal,2],AXIS["longitude",east,ORDER[1],ANGLEUNIT["degree",0.0174532925199433]],AXIS["latitude",north,ORDER[2],ANGLEUNIT["degree",0.0174532925199433]]"#;
const CARTESIAN: &str = r#"CS[Cartesian,2],AXIS["easting (X)",east,ORDER[1],LENGTHUNIT["metre",1]],AXIS["northing (Y)",north,ORDER[2],LENGTHUNIT["metre",1]]"#;
pub(crate) const WGS84: &str = r#"DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,298.257223563,LENGTHUNIT["metre",1]],ID["EPSG",6326]]"#;

/// What a parameter's value is measured in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unit {
    Angle,
    Scale,
    Length,
}

/// A conversion parameter: its name, unit and EPSG code (none for PROJ's own).
pub(crate) type Param = (&'static str, Unit, Option<u32>);

const LAT_ORIGIN: Param = ("Latitude of natural origin", Unit::Angle, Some(8801));
const LON_ORIGIN: Param = ("Longitude of natural origin", Unit::Angle, Some(8802));
const SCALE: Param = ("Scale factor at natural origin", Unit::Scale, Some(8805));
const EASTING: Param = ("False easting", Unit::Length, Some(8806));
const NORTHING: Param = ("False northing", Unit::Length, Some(8807));
const LAT_FALSE: Param = ("Latitude of false origin", Unit::Angle, Some(8821));
const LON_FALSE: Param = ("Longitude of false origin", Unit::Angle, Some(8822));
const PARALLEL_1: Param = ("Latitude of 1st standard parallel", Unit::Angle, Some(8823));
const PARALLEL_2: Param = ("Latitude of 2nd standard parallel", Unit::Angle, Some(8824));
const EASTING_FALSE: Param = ("Easting at false origin", Unit::Length, Some(8826));
const NORTHING_FALSE: Param = ("Northing at false origin", Unit::Length, Some(8827));
const PARALLEL_TS: Param = ("Latitude of standard parallel", Unit::Angle, Some(8832));
const LON_POLE: Param = ("Longitude of origin", Unit::Angle, Some(8833));
const HEIGHT: Param = ("Satellite height", Unit::Length, None);

/// The numeric keys of a PROJ string read here.
const NUMBERS: [&str; 15] =
    ["lat_0", "lat_1", "lat_2", "lat_ts", "lon_0", "k", "k_0", "x_0", "y_0", "h", "R", "a", "b", "rf", "zone"];

/// A conversion: method name, its EPSG code, its parameters and their values.
pub(crate) type Conversion = (String, Option<u32>, Vec<(Param, f64)>);

/// The `+key=value` pairs of a PROJ string.
pub(crate) struct Definition<'a> {
    text: HashMap<&'a str, &'a str>,
    numbers: HashMap<&'a str, f64>,
}

impl Definition<'_> {
    /// The projection's PROJ name.
    pub(crate) fn proj(&self) -> Option<&str> {
        self.text.get("proj").copied()
    }

    fn num(&self, key: &str) -> Option<f64> {
        self.numbers.get(key).copied()
    }

    fn or(&self, key: &str, default: f64) -> f64 {
        self.num(key).unwrap_or(default)
    }

    /// Semi-major axis, inverse flattening (0 on a sphere) and the datum as WKT.
    pub(crate) fn ellipsoid(&self) -> Option<(f64, f64, String)> {
        let (name, a, rf) = match (self.num("R"), self.num("a"), self.num("rf"), self.num("b")) {
            (Some(radius), ..) => ("unknown", radius, 0.0),
            (None, Some(a), Some(rf), _) => ("unknown", a, rf),
            (None, Some(a), None, Some(b)) => ("unknown", a, if b < a { a / (a - b) } else { 0.0 }),
            (None, Some(_), None, None) => return None,
            (None, None, ..) => match (self.text.get("ellps").copied(), self.text.get("datum").copied()) {
                (None | Some("WGS84"), None | Some("WGS84")) => {
                    return Some((6_378_137.0, 298.257_223_563, WGS84.into()));
                }
                (Some("GRS80"), None) => ("GRS 1980", 6_378_137.0, 298.257_222_101),
                _ => return None,
            },
        };
        Some((a, rf, format!(r#"DATUM["unknown",ELLIPSOID["{name}",{a},{rf},LENGTHUNIT["metre",1]]]"#)))
    }
}

/// The `+key=value` pairs of a CRS's PROJ string, when every key is one read here and its
/// units are metres on WGS 84 or an ellipsoid without a datum shift.
pub(crate) fn definition(crs: &Crs) -> Option<Definition<'_>> {
    let mut def = Definition { text: HashMap::new(), numbers: HashMap::new() };
    for token in crs.definition.split_whitespace() {
        let token = token.strip_prefix('+')?;
        let (key, value) = token.split_once('=').unwrap_or((token, ""));
        match key {
            "proj" | "sweep" | "ellps" | "datum" | "units" | "type" => _ = def.text.insert(key, value),
            "no_defs" | "wktext" => {}
            "south" => _ = def.text.insert(key, ""),
            _ if NUMBERS.contains(&key) => _ = def.numbers.insert(key, value.parse().ok()?),
            _ => return None,
        }
    }
    if def.text.get("units").is_some_and(|u| *u != "m") || def.text.get("datum").is_some_and(|d| *d != "WGS84") {
        return None;
    }
    Some(def)
}

/// The CRS as WKT2:2019, when it is one this module knows how to write.
pub fn wkt2(crs: &Crs) -> Option<String> {
    if let Some(pole) = crs.pole() {
        return Some(rotated(pole));
    }
    let def = definition(crs)?;
    let (_, rf, datum) = def.ellipsoid()?;
    let proj = def.proj()?;
    if matches!(proj, "longlat" | "latlong") {
        return Some(format!(r#"GEOGCRS["unknown",{datum},{PRIMEM},{ELLIPSOIDAL}]"#));
    }
    let (method, code, params) = conversion(proj, &def, rf)?;
    let mut out = format!(
        r#"PROJCRS["unknown",BASEGEOGCRS["unknown",{datum},{PRIMEM}],CONVERSION["unknown",METHOD["{method}"{}]"#,
        id(code)
    );
    for ((name, unit, code), value) in params {
        let unit = match unit {
            Unit::Angle => DEGREE,
            Unit::Scale => r#"SCALEUNIT["unity",1]"#,
            Unit::Length => r#"LENGTHUNIT["metre",1]"#,
        };
        let _ = write!(out, r#",PARAMETER["{name}",{value},{unit}{}]"#, id(code));
    }
    let _ = write!(out, "],{CARTESIAN}{}]", id(crs.code));
    Some(out)
}

/// `,ID["EPSG",code]`, or nothing.
fn id(code: Option<u32>) -> String {
    code.map_or_else(String::new, |c| format!(r#",ID["EPSG",{c}]"#))
}

/// The method and parameters of PROJ projection `proj` (`rf` the ellipsoid's inverse
/// flattening), as PROJ names them.
pub(crate) fn conversion(proj: &str, def: &Definition, rf: f64) -> Option<Conversion> {
    let (lat_0, lon_0) = (def.or("lat_0", 0.0), def.or("lon_0", 0.0));
    let k = def.num("k_0").or(def.num("k")).unwrap_or(1.0);
    let (easting, northing) = (def.or("x_0", 0.0), def.or("y_0", 0.0));
    let natural = vec![(LAT_ORIGIN, lat_0), (LON_ORIGIN, lon_0), (SCALE, k), (EASTING, easting), (NORTHING, northing)];
    let falsely = |mut head: Vec<(Param, f64)>| {
        head.extend([(EASTING, easting), (NORTHING, northing)]);
        head
    };
    let method = |name: &str, code: Option<u32>, params| Some((name.to_owned(), code, params));
    match proj {
        "lcc" => match (def.num("lat_1")?, def.num("lat_2")) {
            (lat_1, Some(lat_2)) => method(
                "Lambert Conic Conformal (2SP)",
                Some(9802),
                vec![
                    (PARALLEL_1, lat_1),
                    (PARALLEL_2, lat_2),
                    (LAT_FALSE, lat_0),
                    (LON_FALSE, lon_0),
                    (EASTING_FALSE, easting),
                    (NORTHING_FALSE, northing),
                ],
            ),
            // One parallel is the natural origin; PROJ reads another `lat_0` otherwise.
            (lat_1, None) if def.num("lat_0").is_none_or(|lat| (lat - lat_1).abs() < 1e-12) => {
                let mut params = natural;
                params[0].1 = lat_1;
                method("Lambert Conic Conformal (1SP)", Some(9801), params)
            }
            (_, None) => None,
        },
        "aea" => method(
            "Albers Equal Area",
            Some(9822),
            vec![
                (LAT_FALSE, lat_0),
                (LON_FALSE, lon_0),
                (PARALLEL_1, def.num("lat_1")?),
                (PARALLEL_2, def.or("lat_2", 0.0)),
                (EASTING_FALSE, easting),
                (NORTHING_FALSE, northing),
            ],
        ),
        "stere" if (lat_0.abs() - 90.0).abs() < 1e-12 => match def.num("lat_ts") {
            Some(ts) => method(
                "Polar Stereographic (variant B)",
                Some(9829),
                falsely(vec![(PARALLEL_TS, ts), (LON_POLE, lon_0)]),
            ),
            None => method("Polar Stereographic (variant A)", Some(9810), natural),
        },
        "stere" if def.num("lat_ts").is_none() => method("Stereographic", None, natural),
        "tmerc" | "etmerc" => method("Transverse Mercator", Some(9807), natural),
        // UTM: a transverse Mercator of its zone's central meridian (PROJ's `utm`).
        "utm" => {
            let zone = def.num("zone").filter(|z| (1.0..=60.0).contains(z) && z.fract() == 0.0)?;
            let northing = if def.text.contains_key("south") { 10_000_000.0 } else { 0.0 };
            let params = vec![
                (LAT_ORIGIN, 0.0),
                (LON_ORIGIN, zone * 6.0 - 183.0),
                (SCALE, 0.9996),
                (EASTING, 500_000.0),
                (NORTHING, northing),
            ];
            method("Transverse Mercator", Some(9807), params)
        }
        "merc" => match def.num("lat_ts") {
            Some(ts) => {
                method("Mercator (variant B)", Some(9805), falsely(vec![(PARALLEL_1, ts), (LON_ORIGIN, lon_0)]))
            }
            None => method("Mercator (variant A)", Some(9804), [&[(LAT_ORIGIN, 0.0)], &natural[1..]].concat()),
        },
        "laea" => {
            method("Lambert Azimuthal Equal Area", Some(9820), falsely(vec![(LAT_ORIGIN, lat_0), (LON_ORIGIN, lon_0)]))
        }
        "cea" => {
            // A scale factor k on the equator is the parallel where the scale is true:
            // cos φ / √(1 − e² sin² φ) = k.
            let flattening = if rf > 0.0 { 1.0 / rf } else { 0.0 };
            let e2 = flattening * (2.0 - flattening);
            let from_k = ((1.0 - k * k) / (1.0 - k * k * e2)).max(0.0).sqrt().asin().to_degrees();
            let ts = def.num("lat_ts").unwrap_or(from_k);
            method("Lambert Cylindrical Equal Area", Some(9835), falsely(vec![(PARALLEL_1, ts), (LON_ORIGIN, lon_0)]))
        }
        "sinu" => method("Sinusoidal", None, falsely(vec![(LON_ORIGIN, lon_0)])),
        "geos" => {
            let sweep = match def.text.get("sweep").copied().unwrap_or("y") {
                "x" => "X",
                "y" => "Y",
                _ => return None,
            };
            let params = falsely(vec![(HEIGHT, def.num("h")?), (LAT_ORIGIN, 0.0), (LON_ORIGIN, lon_0)]);
            method(&format!("Geostationary Satellite (Sweep {sweep})"), None, params)
        }
        _ => None,
    }
}

/// A rotated pole as PROJ writes CF's `rotated_latitude_longitude` (on WGS 84).
fn rotated(pole: RotatedPole) -> String {
    let mut out = format!(
        r#"GEOGCRS["unknown",BASEGEOGCRS["WGS 84",{WGS84},{PRIMEM}],DERIVINGCONVERSION["Pole rotation (netCDF CF convention)",METHOD["Pole rotation (netCDF CF convention)"]"#
    );
    for (name, value) in [
        ("Grid north pole latitude", pole.pole_lat),
        ("Grid north pole longitude", pole.pole_lon),
        ("North pole grid longitude", pole.north_pole_grid_lon),
    ] {
        let _ = write!(out, r#",PARAMETER["{name} (netCDF CF convention)",{value},{DEGREE}]"#);
    }
    let _ = write!(out, "],{ELLIPSOIDAL}]");
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;
    use crate::grid::wkt::{Item, Node, parse};

    /// Every node named `keyword` in the tree, depth first.
    fn find<'a>(node: &'a Node, keyword: &str, out: &mut Vec<&'a Node>) {
        if node.keyword == keyword {
            out.push(node);
        }
        for item in &node.items {
            if let Item::Node(child) = item {
                find(child, keyword, out);
            }
        }
    }

    fn all<'a>(node: &'a Node, keyword: &str) -> Vec<&'a Node> {
        let mut out = Vec::new();
        find(node, keyword, &mut out);
        out
    }

    fn text(node: &Node) -> String {
        match &node.items[0] {
            Item::Text(t) => t.clone(),
            other => panic!("{other:?} is not text"),
        }
    }

    fn number(node: &Node, at: usize) -> f64 {
        match &node.items[at] {
            Item::Number(n) => n.parse().unwrap(),
            other => panic!("{other:?} is not a number"),
        }
    }

    /// What two WKTs must share: the top keyword, method, parameters and ellipsoid.
    type Summary = (String, String, BTreeMap<String, f64>, [f64; 2]);

    fn summary(wkt: &str) -> Summary {
        let root = parse(wkt).unwrap_or_else(|e| panic!("{wkt}: {e}"));
        let method = all(&root, "METHOD").first().map(|m| text(m)).unwrap_or_default();
        let params = all(&root, "PARAMETER").iter().map(|p| (text(p), number(p, 1))).collect();
        let ellipsoid = all(&root, "ELLIPSOID")[0];
        (root.keyword.clone(), method, params, [number(ellipsoid, 1), number(ellipsoid, 2)])
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    fn same(a: &Summary, b: &Summary) -> bool {
        let params = a.2.len() == b.2.len() && a.2.iter().all(|(name, v)| b.2.get(name).is_some_and(|w| close(*v, *w)));
        a.0 == b.0 && a.1 == b.1 && params && close(a.3[0], b.3[0]) && close(a.3[1], b.3[1])
    }

    #[test]
    fn every_cf_mapping_is_written_as_pyproj_writes_it() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/grids/expected/wkt.json");
        let cases: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert!(cases.len() >= 18, "{} cases", cases.len());
        for case in &cases {
            let crs = crate::grid::cf::crs(case["cf"].as_object().unwrap()).unwrap();
            let ours = wkt2(&crs).unwrap_or_else(|| panic!("no WKT for {}", crs.definition));
            let (a, b) = (summary(&ours), summary(case["wkt"].as_str().unwrap()));
            assert!(same(&a, &b), "{}:\n{a:?}\n{b:?}\n{ours}", case["cf"]);
            // The comparison sees a wrong method, parameter name or value, or ellipsoid.
            let mut wrong = [a.clone(), a.clone(), a.clone(), a.clone()];
            wrong[0].1.push('x');
            wrong[1].3[1] += 1e-3;
            if let Some((name, value)) = a.2.iter().next().map(|(n, v)| (n.clone(), *v)) {
                wrong[2].2.remove(&name);
                wrong[2].2.insert(format!("{name}x"), value);
                wrong[3].2.insert(name, value + 1e-6 * (value.abs() + 1.0));
            } else {
                wrong[2].2.insert("x".into(), 0.0);
                wrong[3].0.push('x');
            }
            assert!(wrong.iter().all(|w| !same(w, &b)), "{ours}");
        }
    }

    #[test]
    fn utm_zones_are_transverse_mercators_of_their_meridian_with_their_code() {
        // EPSG's definitions of UTM 33N and 33S (WGS 84): central meridian 15°E, k 0.9996,
        // false easting 500 km, false northing 0 (north) or 10,000 km (south).
        for (code, northing) in [(32633, 0.0), (32733, 10_000_000.0)] {
            let wkt = wkt2(&Crs::from_epsg(code).unwrap()).unwrap();
            let (keyword, method, params, _) = summary(&wkt);
            assert_eq!((keyword.as_str(), method.as_str()), ("PROJCRS", "Transverse Mercator"));
            let want = [
                ("Latitude of natural origin", 0.0),
                ("Longitude of natural origin", 15.0),
                ("Scale factor at natural origin", 0.9996),
                ("False easting", 500_000.0),
                ("False northing", northing),
            ];
            assert_eq!(params.len(), want.len(), "{wkt}");
            for (name, value) in want {
                assert!(close(params[name], value) || (params[name] - value).abs() < 1e-9, "{code} {name}: {wkt}");
            }
            assert!(wkt.ends_with(&format!(r#"ID["EPSG",{code}]]"#)), "{wkt}");
        }
    }

    #[test]
    fn what_cannot_be_written_gets_none() {
        // OSGB 1936: a datum shift (towgs84) on the Airy ellipsoid.
        assert_eq!(wkt2(&Crs::from_epsg(27700).unwrap()), None);
        let us_feet = "+proj=lcc +lat_1=33 +lat_2=45 +lat_0=23 +lon_0=-96 +x_0=0 +y_0=0 +datum=WGS84 +units=us-ft";
        assert_eq!(wkt2(&Crs::from_proj(us_feet, None, None).unwrap()), None);
        let polar = wkt2(&Crs::from_epsg(3413).unwrap()).unwrap();
        assert!(polar.contains(r#"METHOD["Polar Stereographic (variant B)",ID["EPSG",9829]]"#), "{polar}");
    }
}
