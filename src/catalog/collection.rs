//! Collections (docs/ome-zarr.md "Collections"): a dataset whose root is not itself a Zarr
//! node but holds Zarr roots (`*.zarr`, `*.ome.zarr`) at most two levels down is served as
//! if its root were a group holding them; and what the tree says about OME-Zarr groups
//! (images, labels, HCS plates and wells, bioformats2raw layouts), so a person can find
//! the wells, fields and series of a collection in `GET /v1/datasets/{ds}`.

use serde_json::{Map, Value, json};

use crate::error::Result;
use zarrd_core::store::{Store, StoreError};
use zarrd_core::zarr::ome;

/// Folders looked at per level when looking for Zarr roots below a dataset root.
const MAX_PROBED: usize = 256;

fn is_zarr_name(name: &str) -> bool {
    let last = name.rsplit('/').next().unwrap_or(name);
    last.len() > 5 && last.to_ascii_lowercase().ends_with(".zarr")
}

async fn is_root(store: &Store, dir: &str) -> Result<bool, StoreError> {
    for doc in ["zarr.json", ".zgroup", ".zarray"] {
        if store.head(&format!("{dir}/{doc}")).await?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether the root of a dataset's `store` (which has no metadata of its own) holds a Zarr
/// root named `*.zarr` one or two levels down.
pub(super) async fn holds_roots(store: &Store) -> Result<bool, StoreError> {
    let Ok(children) = store.list_dirs("").await else { return Ok(false) };
    for child in children.iter().filter(|c| is_zarr_name(c)).take(MAX_PROBED) {
        if is_root(store, child).await? {
            return Ok(true);
        }
    }
    for child in children.iter().filter(|c| !is_zarr_name(c)).take(MAX_PROBED) {
        let Ok(grandchildren) = store.list_dirs(child).await else { continue };
        for g in grandchildren.iter().filter(|g| is_zarr_name(g)).take(MAX_PROBED) {
            if is_root(store, &format!("{child}/{g}")).await? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn strings(v: Option<&Value>, field: &str) -> Vec<Value> {
    v.and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|x| x.get(field).or(Some(x)).filter(|x| x.is_string()).cloned()).collect())
        .unwrap_or_default()
}

/// What a group's OME-Zarr metadata makes it, for the node tree: `{"kind": "image" |
/// "labels" | "label-image" | "plate" | "well" | "bioformats2raw", ...}`; `None` for
/// other groups.
pub(super) fn summary(attributes: &Map<String, Value>) -> Option<Value> {
    let meta = ome::metadata(attributes)?;
    let version = meta
        .get("version")
        .cloned()
        .or_else(|| meta.get("multiscales").and_then(|m| m.get(0)).and_then(|m| m.get("version")).cloned());
    let mut out = if let Some(plate) = meta.get("plate") {
        json!({
            "kind": "plate",
            "name": plate.get("name"),
            "rows": strings(plate.get("rows"), "name"),
            "columns": strings(plate.get("columns"), "name"),
            "wells": strings(plate.get("wells"), "path"),
            "field_count": plate.get("field_count"),
        })
    } else if let Some(well) = meta.get("well") {
        json!({"kind": "well", "fields": strings(well.get("images"), "path")})
    } else if meta.contains_key("bioformats2raw.layout") {
        json!({"kind": "bioformats2raw", "layout": meta["bioformats2raw.layout"], "series": []})
    } else if let Some(multiscale) = ome::multiscales(attributes).into_iter().next() {
        let kind = if ome::label_colors(attributes).is_some() { "label-image" } else { "image" };
        let channels: Vec<Value> = ome::channels(attributes).into_iter().map(|c| json!(c.label)).collect();
        json!({
            "kind": kind,
            "levels": multiscale.levels.iter().map(|l| l.path.clone()).collect::<Vec<_>>(),
            "axes": multiscale.axes.iter().map(|a| json!({"name": a.name, "type": a.kind, "unit": a.unit})).collect::<Vec<_>>(),
            "channels": channels,
        })
    } else if let Some(labels) = meta.get("labels") {
        json!({"kind": "labels", "labels": labels})
    } else if let Some(series) = meta.get("series") {
        json!({"kind": "series", "series": series})
    } else {
        return None;
    };
    if let (Some(o), Some(v)) = (out.as_object_mut(), version) {
        o.insert("version".into(), v);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_name_plates_wells_series_and_images() {
        let m = |v: Value| -> Map<String, Value> { serde_json::from_value(v).unwrap() };
        let plate = summary(&m(json!({"plate": {"version": "0.4", "rows": [{"name": "A"}], "columns": [{"name": "1"}], "wells": [{"path": "A/1", "rowIndex": 0, "columnIndex": 0}]}}))).unwrap();
        assert_eq!((plate["kind"].clone(), plate["wells"].clone()), (json!("plate"), json!(["A/1"])));
        let well = summary(&m(json!({"ome": {"version": "0.5", "well": {"images": [{"path": "0"}, {"path": "1"}]}}})))
            .unwrap();
        assert_eq!((well["fields"].clone(), well["version"].clone()), (json!(["0", "1"]), json!("0.5")));
        assert!(summary(&m(json!({"a": 1}))).is_none());
        assert!(is_zarr_name("x/cells.ome.zarr") && !is_zarr_name(".zarr") && !is_zarr_name("data"));
    }
}
