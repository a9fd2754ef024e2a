//! Collections (docs/ome-zarr.md "Collections"): a dataset whose root is not itself a Zarr
//! node but holds Zarr roots (`*.zarr`, `*.ome.zarr`) at most two levels down is served as
//! if its root were a group holding them; and what the tree says about OME-Zarr groups
//! (images, labels, HCS plates and wells, bioformats2raw layouts), so a person can find
//! the wells, fields and series of a collection in `GET /v1/datasets/{ds}`.

use serde::Serialize;
use serde_json::{Map, Value};

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

/// What an OME-Zarr group is, for the node tree (`ome` of `GET /v1/datasets/{ds}`'s nodes):
/// `kind` and what a person needs to find its levels, wells, fields or series; with the
/// metadata's `version` where it has one.
#[derive(Debug, Clone, Serialize)]
pub struct OmeSummary {
    #[serde(flatten)]
    pub kind: OmeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OmeKind {
    Plate {
        name: Option<Value>,
        rows: Vec<Value>,
        columns: Vec<Value>,
        wells: Vec<Value>,
        field_count: Option<Value>,
    },
    Well {
        fields: Vec<Value>,
    },
    /// Its `series` (the child images named by a number) are filled in once the tree is
    /// listed (`nodes::series`).
    Bioformats2raw {
        layout: Value,
        series: Vec<String>,
    },
    Image(Image),
    LabelImage(Image),
    Labels {
        labels: Value,
    },
    Series {
        series: Value,
    },
}

/// An image's levels (paths, the finest first), axes and channel labels.
#[derive(Debug, Clone, Serialize)]
pub struct Image {
    levels: Vec<String>,
    axes: Vec<ImageAxis>,
    channels: Vec<Option<String>>,
}

#[derive(Debug, Clone, Serialize)]
struct ImageAxis {
    name: String,
    #[serde(rename = "type")]
    kind: Option<String>,
    unit: Option<String>,
}

/// What a group's OME-Zarr metadata makes it; `None` for other groups.
pub(super) fn summary(attributes: &Map<String, Value>) -> Option<OmeSummary> {
    let meta = ome::metadata(attributes)?;
    let version = meta
        .get("version")
        .cloned()
        .or_else(|| meta.get("multiscales").and_then(|m| m.get(0)).and_then(|m| m.get("version")).cloned());
    let kind = if let Some(plate) = meta.get("plate") {
        OmeKind::Plate {
            name: plate.get("name").cloned(),
            rows: strings(plate.get("rows"), "name"),
            columns: strings(plate.get("columns"), "name"),
            wells: strings(plate.get("wells"), "path"),
            field_count: plate.get("field_count").cloned(),
        }
    } else if let Some(well) = meta.get("well") {
        OmeKind::Well { fields: strings(well.get("images"), "path") }
    } else if let Some(layout) = meta.get("bioformats2raw.layout") {
        OmeKind::Bioformats2raw { layout: layout.clone(), series: Vec::new() }
    } else if let Some(multiscale) = ome::multiscales(attributes).into_iter().next() {
        let image = Image {
            levels: multiscale.levels.iter().map(|l| l.path.clone()).collect(),
            axes: multiscale
                .axes
                .iter()
                .map(|a| ImageAxis { name: a.name.clone(), kind: a.kind.clone(), unit: a.unit.clone() })
                .collect(),
            channels: ome::channels(attributes).into_iter().map(|c| c.label).collect(),
        };
        if ome::label_colors(attributes).is_some() { OmeKind::LabelImage(image) } else { OmeKind::Image(image) }
    } else if let Some(labels) = meta.get("labels") {
        OmeKind::Labels { labels: labels.clone() }
    } else if let Some(series) = meta.get("series") {
        OmeKind::Series { series: series.clone() }
    } else {
        return None;
    };
    Some(OmeSummary { kind, version })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_name_plates_wells_series_and_images() {
        let m = |v: Value| -> Map<String, Value> { serde_json::from_value(v).unwrap() };
        let summary = |attributes: &Map<String, Value>| summary(attributes).map(|s| serde_json::to_value(s).unwrap());
        let plate = summary(&m(json!({"plate": {"version": "0.4", "rows": [{"name": "A"}], "columns": [{"name": "1"}], "wells": [{"path": "A/1", "rowIndex": 0, "columnIndex": 0}]}}))).unwrap();
        assert_eq!((plate["kind"].clone(), plate["wells"].clone()), (json!("plate"), json!(["A/1"])));
        let well = summary(&m(json!({"ome": {"version": "0.5", "well": {"images": [{"path": "0"}, {"path": "1"}]}}})))
            .unwrap();
        assert_eq!((well["fields"].clone(), well["version"].clone()), (json!(["0", "1"]), json!("0.5")));
        assert!(summary(&m(json!({"a": 1}))).is_none());
        assert!(is_zarr_name("x/cells.ome.zarr") && !is_zarr_name(".zarr") && !is_zarr_name("data"));
    }
}
