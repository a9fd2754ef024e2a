//! The `GeoZarr` conventions (zarr-conventions `proj:` and `spatial:`, and the older STAC
//! spellings `proj:epsg`, `proj:transform`, `proj:shape`, `proj:spatial_dimensions`): an
//! array's CRS and, when given, the affine transform of its grid. The array's own
//! attributes win over those of its group, key by key (a group's apply to its direct
//! children).

use serde_json::{Map, Value};

use crate::grid::crs::{Crs, CrsError};
use crate::grid::native::Affine;
use crate::grid::wkt;

/// What the `GeoZarr` attributes of an array say about its grid.
#[derive(Debug)]
pub struct GeoZarr {
    pub crs: Crs,
    /// The (Y, X) dimension names, when named.
    pub dims: Option<[String; 2]>,
    pub transform: Option<Affine>,
    /// `spatial:registration` `node`: a cell's centre at (col, row).
    pub node: bool,
    /// `spatial:shape` (or `proj:shape`): the (Y, X) extent the transform is for.
    pub shape: Option<[u64; 2]>,
}

/// Why `GeoZarr` attributes are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its `{key}` {why}")]
pub struct GeoZarrError {
    pub key: &'static str,
    pub why: String,
}

/// The `GeoZarr` grid of an array with `own` attributes in a group with `group`
/// attributes, or `None` when neither names a CRS.
pub fn spec(own: &Map<String, Value>, group: Option<&Map<String, Value>>) -> Result<Option<GeoZarr>, GeoZarrError> {
    let get = |key: &str| own.get(key).or_else(|| group.and_then(|g| g.get(key)));
    // Any spelling in the array's own attributes wins over every spelling in the group's.
    let first = |keys: &[&'static str]| {
        let find = |m: &'_ Map<String, Value>| keys.iter().find_map(|&k| m.get(k).map(|v| (k, v.clone())));
        find(own).or_else(|| group.and_then(find))
    };
    let err = |key: &'static str, why: String| GeoZarrError { key, why };
    let crs_error = |key: &'static str| move |e: CrsError| err(key, e.to_string());
    let crs = if let Some((key, v)) = first(&["proj:code", "proj:epsg"]) {
        let code = match &v {
            Value::String(s) => s
                .trim()
                .strip_prefix("EPSG:")
                .or_else(|| s.trim().strip_prefix("epsg:"))
                .and_then(|c| c.parse::<u32>().ok()),
            Value::Number(n) => n.as_u64().and_then(|c| u32::try_from(c).ok()),
            _ => None,
        };
        let code = code.ok_or_else(|| err(key, format!("is {v}; allowed is an EPSG code such as \"EPSG:32633\"")))?;
        Crs::from_epsg(code).map_err(crs_error(key))?
    } else if let Some(v) = get("proj:wkt2") {
        let text = v.as_str().ok_or_else(|| err("proj:wkt2", format!("is {v}, not text")))?;
        wkt::crs(text).map_err(|e| err("proj:wkt2", e.to_string()))?
    } else if let Some(v) = get("proj:projjson") {
        let id = v.get("id").or_else(|| v.get("ids").and_then(|i| i.get(0)));
        let code = id
            .filter(|id| id.get("authority").and_then(Value::as_str) == Some("EPSG"))
            .and_then(|id| id.get("code"))
            .and_then(|c| c.as_u64().or_else(|| c.as_str().and_then(|s| s.parse().ok())))
            .and_then(|c| u32::try_from(c).ok())
            .ok_or_else(|| {
                err("proj:projjson", "names no EPSG `id`; zarrd reads PROJJSON by its EPSG code".to_owned())
            })?;
        Crs::from_epsg(code).map_err(crs_error("proj:projjson"))?
    } else {
        return Ok(None);
    };
    let dims = match first(&["spatial:dimensions", "proj:spatial_dimensions"]) {
        None => None,
        Some((key, v)) => {
            let names: Option<Vec<String>> =
                v.as_array().map(|l| l.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect());
            match names.as_deref() {
                Some([y, x]) => Some([y.clone(), x.clone()]),
                _ => return Err(err(key, format!("is {v}; allowed are two dimension names, [\"y\", \"x\"]"))),
            }
        }
    };
    let transform = match first(&["spatial:transform", "proj:transform"]) {
        None => None,
        Some((key, v)) => {
            let numbers: Option<Vec<f64>> = v.as_array().map(|l| l.iter().filter_map(Value::as_f64).collect());
            let numbers = numbers
                .filter(|n| Some(n.len()) == v.as_array().map(Vec::len))
                .ok_or_else(|| err(key, format!("is {v}, not a list of numbers")))?;
            Some(Affine::new(&numbers).map_err(|e| err(key, e.to_string()))?)
        }
    };
    let shape = match first(&["spatial:shape", "proj:shape"]) {
        None => None,
        Some((key, v)) => {
            let n: Option<Vec<u64>> = v.as_array().map(|l| l.iter().filter_map(Value::as_u64).collect());
            match n.as_deref() {
                Some([y, x]) => Some([*y, *x]),
                _ => return Err(err(key, format!("is {v}; allowed are two whole numbers, [rows, columns]"))),
            }
        }
    };
    let node = match get("spatial:registration").map(|v| v.as_str()) {
        None | Some(Some("pixel")) => false,
        Some(Some("node")) => true,
        Some(_) => return Err(err("spatial:registration", "is not `pixel` or `node`".to_owned())),
    };
    Ok(Some(GeoZarr { crs, dims, transform, node, shape }))
}

#[cfg(test)]
#[allow(clippy::float_cmp, clippy::needless_pass_by_value)] // exact coefficients; json! literals
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn own_attributes_win_over_the_groups_and_old_spellings_count() {
        let group = map(json!({"proj:code": "EPSG:32633", "spatial:dimensions": ["y", "x"],
            "spatial:transform": [60.0, 0.0, 399_960.0, 0.0, -60.0, 5_000_040.0]}));
        let from_group = spec(&map(json!({})), Some(&group)).unwrap().unwrap();
        assert_eq!(from_group.crs.code, Some(32633));
        assert_eq!(from_group.dims, Some(["y".to_owned(), "x".to_owned()]));
        assert_eq!(from_group.transform.unwrap().coefficients[0], 60.0);
        let own = map(json!({"proj:epsg": 32634, "proj:transform": [10.0, 0.0, 0.0, 0.0, -10.0, 0.0, 0.0, 0.0, 1.0],
            "proj:spatial_dimensions": ["lat_like", "lon_like"]}));
        let mine = spec(&own, Some(&group)).unwrap().unwrap();
        assert_eq!(mine.crs.code, Some(32634));
        assert_eq!(mine.transform.unwrap().coefficients[0], 10.0);
        assert_eq!(mine.dims.unwrap()[0], "lat_like");
        assert!(spec(&map(json!({"spatial:dimensions": ["y", "x"]})), None).unwrap().is_none());
        for (bad, says) in [
            (json!({"proj:code": "EPSG:abc"}), "proj:code"),
            (json!({"proj:code": "EPSG:2056"}), "somerc"),
            (json!({"proj:code": "EPSG:4326", "spatial:transform": [1, 0, 0]}), "six numbers"),
            (json!({"proj:code": "EPSG:4326", "spatial:dimensions": "y"}), "two dimension names"),
            (json!({"proj:code": "EPSG:4326", "spatial:registration": "corner"}), "registration"),
            (json!({"proj:projjson": {"name": "x"}}), "EPSG `id`"),
        ] {
            let e = spec(&map(bad.clone()), None).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

/// One level of a `GeoZarr` multiscales layout (zarr-conventions `multiscales`): its asset
/// (the level's group, beside the others under the layout's group) and its cell width in
/// CRS units (the `spatial:transform`'s |a|).
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub asset: String,
    pub cell: f64,
}

/// The levels of the `multiscales` layout in a group's attributes (those with a
/// `spatial:transform`, or `transform.scale` relative to one that has it), finest first;
/// `None` when it has no such layout (an OME-Zarr `multiscales` is a list, not this).
pub fn multiscales(attributes: &Map<String, Value>) -> Option<Vec<Level>> {
    let layout = attributes.get("multiscales")?.get("layout")?.as_array()?;
    let transform_a = |entry: &Value| {
        let t = entry.get("spatial:transform").or_else(|| entry.get("proj:transform"))?.as_array()?;
        let (a, d) = (t.first()?.as_f64()?, t.get(3)?.as_f64()?);
        Some(a.hypot(d))
    };
    let mut levels: Vec<Level> = Vec::new();
    for entry in layout {
        let asset = entry.get("asset")?.as_str()?.to_owned();
        let cell = transform_a(entry).or_else(|| {
            // A level given relative to the one it derives from.
            let from = entry.get("derived_from")?.as_str()?;
            let base = levels.iter().find(|l| l.asset == from)?.cell;
            let scale = entry.get("transform")?.get("scale")?.as_array()?;
            Some(base * scale.last()?.as_f64()?)
        })?;
        if !(cell.is_finite() && cell > 0.0) || asset.is_empty() || asset.contains('/') {
            return None;
        }
        levels.push(Level { asset, cell });
    }
    levels.sort_by(|a, b| a.cell.total_cmp(&b.cell));
    (!levels.is_empty()).then_some(levels)
}

/// Metres in a degree of longitude at the equator (WGS 84's semi-major axis · π / 180).
pub const METRES_PER_DEGREE: f64 = 111_319.490_793;
/// Web Mercator's pixel width at the equator at zoom 0, in metres.
pub const PIXEL_METRES_Z0: f64 = 156_543.033_928_040_97;

/// The level a tile at zoom `z` whose centre is at latitude `lat` draws: the coarsest
/// whose cell on the ground (metres; `degrees`: cell · 111 319.49 · cos φ) is no wider than
/// the tile's pixel there (156 543.03 / 2^z · cos φ), else the finest. `levels` finest first.
pub fn level_for(levels: &[Level], z: u8, lat: f64, degrees: bool) -> usize {
    let cos = lat.to_radians().cos();
    let pixel = PIXEL_METRES_Z0 / f64::from(1u32 << z) * cos;
    let ground = |l: &Level| if degrees { l.cell * METRES_PER_DEGREE * cos } else { l.cell };
    levels.iter().rposition(|l| ground(l) <= pixel).unwrap_or(0)
}

#[cfg(test)]
mod multiscale_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_coarsest_level_no_wider_than_a_pixel_draws_a_tile() {
        let attrs = json!({"multiscales": {"layout": [
            {"asset": "r10m", "spatial:transform": [10.0, 0.0, 0.0, 0.0, -10.0, 0.0]},
            {"asset": "r20m", "derived_from": "r10m", "transform": {"scale": [2.0, 2.0]}},
            {"asset": "r60m", "derived_from": "r20m", "transform": {"scale": [3.0, 3.0]}, "spatial:transform": [60.0, 0.0, 0.0, 0.0, -60.0, 0.0]}
        ], "resampling_method": "average"}});
        let levels = multiscales(attrs.as_object().unwrap()).unwrap();
        let cells: Vec<f64> = levels.iter().map(|l| l.cell).collect();
        assert_eq!(cells, [10.0, 20.0, 60.0]);
        // At 45°: z 10 pixels are 107.7 m (r60m), z 11 53.9 m (r20m), z 13 13.5 m (r10m), z 14 6.7 m (finest).
        let at = |z| levels[level_for(&levels, z, 45.0, false)].asset.as_str();
        assert_eq!([at(10), at(11), at(13), at(14)], ["r60m", "r20m", "r10m", "r10m"]);
        // OME-Zarr's multiscales (a list) is not a layout.
        assert_eq!(multiscales(json!({"multiscales": [{"datasets": []}]}).as_object().unwrap()), None);
    }
}
