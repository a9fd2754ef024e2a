//! The JSON bodies of the API as types: what `openapi.yaml`'s schemas describe, serialized
//! by serde in the order written here. Documents that belong to a standard are typed where
//! they are made (`images::iiif::info`, `images::maps::tilejson`, the Zarr documents of the
//! compatibility views in `compat::zarr_documents`); stored Zarr metadata documents stay
//! JSON values, as stored.

use serde::Serialize;
use serde_json::Value;

/// `GET /v1/datasets`.
#[derive(Debug, Serialize)]
pub struct DatasetList<'a> {
    pub datasets: Vec<DatasetSummary<'a>>,
}

#[derive(Debug, Serialize)]
pub struct DatasetSummary<'a> {
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub health: Health,
    pub versioned: bool,
}

/// A dataset's last background health check.
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`, `failing` or `unknown` (not checked yet).
    pub status: &'static str,
    /// RFC 3339.
    pub checked_at: Option<String>,
    /// Why it is failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `GET /v1/datasets/{ds}`: the node tree.
#[derive(Debug, Serialize)]
pub struct DatasetTree<'a> {
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub nodes: &'a [crate::catalog::TreeNode],
}

/// `GET /v1/arrays/{ds}/{*path}`.
#[derive(Debug, Serialize)]
pub struct ArrayInfo<'a> {
    pub path: &'a str,
    pub node_type: &'static str,
    pub zarr_format: u8,
    pub shape: &'a [u64],
    /// The Zarr v3 form: a name, or a name and configuration.
    pub data_type: Option<Value>,
    pub fill_value: Option<&'a Value>,
    pub dimension_names: &'a Option<Vec<Option<String>>>,
    pub attributes: &'a serde_json::Map<String, Value>,
    /// As stored (v2: the filters and compressor, in pipeline order).
    pub codecs: Option<Value>,
    pub chunk_key_encoding: Option<Value>,
    pub chunk_grid: ChunkGridInfo,
    /// The innermost chunk shape of a sharded array.
    pub read_chunk_shape: Option<Vec<u64>>,
    pub sharding: Option<ShardingInfo>,
    /// Where its cells lie on the Earth (`null` when it has no grid).
    pub grid: Option<GridInfo>,
}

/// An array's grid (`design/API.md`, "Grids beyond latitude/longitude").
#[derive(Debug, Serialize)]
pub struct GridInfo {
    pub kind: zarrd_core::grid::Kind,
    /// The Y and X dimension names.
    pub dims: [String; 2],
    /// `EPSG:NNNN`, or WKT; absent when neither names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs: Option<String>,
    /// The footprint of the cell edges: west, south, east, north in degrees (CRS84).
    pub bbox: [f64; 4],
}

impl GridInfo {
    pub fn of(grid: &zarrd_core::grid::Grid) -> Self {
        Self { kind: grid.kind, dims: grid.names.clone(), crs: grid.crs_name(), bbox: grid.bbox }
    }
}

/// The write grid of an array.
#[derive(Debug, Serialize)]
pub struct ChunkGridInfo {
    /// `regular` or `rectilinear`.
    pub kind: &'static str,
    /// One entry per dimension, in the run-length form of the rectilinear grid.
    pub chunk_sizes: Value,
    pub grid_shape: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub struct ShardingInfo {
    pub chunk_shape: Vec<u64>,
    /// `start` or `end`.
    pub index_location: &'static str,
    pub nested: bool,
}

/// `GET /v1/chunks/{ds}/{*path}`: one page of the chunk listing.
#[derive(Debug, Serialize)]
pub struct ChunkPage<'a, C: Serialize> {
    /// `regular` or `rectilinear`.
    pub grid: &'static str,
    pub chunks: &'a [C],
    /// The cursor of the next page.
    pub next: Option<String>,
}

/// A directory listing of `/zarr` or `/compat` as JSON.
#[derive(Debug, Serialize)]
pub struct Directory<'a> {
    pub path: &'a str,
    pub entries: Vec<DirectoryEntry<'a>>,
}

#[derive(Debug, Serialize)]
pub struct DirectoryEntry<'a> {
    pub name: &'a str,
    /// `directory` or `object`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// `POST /v1/tokens`: a capability URL.
#[derive(Debug, Serialize)]
pub struct Capability {
    pub url: String,
    /// RFC 3339, to the second.
    pub expires_at: Option<String>,
}
