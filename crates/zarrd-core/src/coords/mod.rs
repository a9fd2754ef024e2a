//! Coordinates as xarray decodes them: CF conventions on top of the stored arrays.

pub mod calendar;
pub mod cf;
pub mod geo;
pub mod labels;
pub mod sel;

use serde_json::Value;

use crate::zarr::metadata::ArrayMetadata;

/// The dimension names of an array: its own (v3 `dimension_names`), else the
/// `_ARRAY_DIMENSIONS` attribute xarray writes in v2, when it has one entry per dimension
/// (an entry that is not a string is an unnamed dimension).
pub fn dimension_names(meta: &ArrayMetadata) -> Option<Vec<Option<String>>> {
    if let Some(names) = &meta.dimension_names {
        return Some(names.clone());
    }
    let Some(Value::Array(list)) = meta.attributes.get("_ARRAY_DIMENSIONS") else { return None };
    let names: Vec<Option<String>> = list.iter().map(|v| v.as_str().map(str::to_owned)).collect();
    (names.len() == meta.shape.len()).then_some(names)
}

/// The edges of the cells around `coords` (at least two, in either order): `n + 1`
/// values midway between neighbours, the outer ones as far out as the neighbouring
/// half-cell — how map tiles find a point's cell and area weights a cell's extent.
pub fn cell_edges(coords: &[f64]) -> Vec<f64> {
    let n = coords.len();
    if n < 2 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n + 1);
    out.push(coords[0] - (coords[1] - coords[0]) / 2.0);
    out.extend(coords.windows(2).map(|w| f64::midpoint(w[0], w[1])));
    out.push(coords[n - 1] + (coords[n - 1] - coords[n - 2]) / 2.0);
    out
}
