//! `GET /v1/arrays/{ds}/{*path}`: what an array is and how it is chunked.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::{Value, json};

use super::{NodePath, Params, json_response};
use crate::AppState;
use crate::error::Result;
use crate::zarr::metadata::ArrayMetadata;

pub async fn show(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let dataset = state.catalog.dataset(&ds)?;
    let array = state.catalog.array(dataset, &path).await?;
    Ok(json_response(&describe(&path, &array.meta), &state.config.http.cache_control))
}

/// The array-info document of API.md.
pub fn describe(path: &str, meta: &ArrayMetadata) -> Value {
    let doc = &meta.document;
    let sharding = meta.sharding().map(|s| {
        json!({
            "chunk_shape": s.chunk_shape,
            "index_location": s.index_location.name(),
            "nested": s.codecs.sharding().is_some(),
        })
    });
    json!({
        "path": path,
        "node_type": "array",
        "zarr_format": 3,
        "shape": meta.shape,
        "data_type": doc.get("data_type"),
        "fill_value": doc.get("fill_value"),
        "dimension_names": meta.dimension_names,
        "attributes": meta.attributes,
        "codecs": doc.get("codecs"),
        "chunk_key_encoding": doc.get("chunk_key_encoding"),
        "chunk_grid": {
            "kind": meta.chunk_grid.kind.name(),
            "chunk_sizes": meta.chunk_grid.to_json(),
            "grid_shape": meta.chunk_grid.grid_shape(),
        },
        "read_chunk_shape": meta.read_chunk_shape(),
        "sharding": sharding,
    })
}
