//! `GET /v1/arrays/{ds}/{*path}`: what an array is and how it is chunked.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::Value;

use crate::http::schema::{ArrayInfo, ChunkGridInfo, GridInfo, ShardingInfo};

use crate::compat::{Extension, KeySeparator};
use crate::error::Result;
use crate::http::encode::json_response;
use crate::http::extract::{NodePath, Params};
use crate::http::state::AppState;
use zarrd_core::zarr::metadata::ArrayMetadata;

pub async fn show(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let dataset = &state.catalog.dataset(&ds).await?;
    let array = state.catalog.array(dataset, &path).await?;
    // A grid zarrd cannot use is no reason to refuse the array's description.
    let grid = state.grids.of(&state.catalog, dataset, &array).await.ok().flatten();
    let info = ArrayInfo { grid: grid.map(|found| GridInfo::of(&found.grid)), ..describe(&path, &array.meta) };
    Ok(json_response(&info, &state.config.http.cache_control))
}

/// The array-info document (`ArrayInfo` in `openapi.yaml`), without its grid.
pub fn describe<'a>(path: &'a str, meta: &'a ArrayMetadata) -> ArrayInfo<'a> {
    let doc = &meta.document;
    let sharding = meta.sharding().map(|s| ShardingInfo {
        chunk_shape: s.chunk_shape.clone(),
        index_location: s.index_location.name(),
        nested: s.codecs.sharding().is_some(),
    });
    // A v2 `.zarray` has no `data_type`, `codecs` or `chunk_key_encoding`: report the type's
    // Zarr name, the numcodecs filters and compressor as stored (in pipeline order), and
    // the v2 key encoding with the stored separator.
    let (data_type, codecs, chunk_key_encoding) = if meta.zarr_format == 2 {
        let filters = doc.get("filters").and_then(Value::as_array).cloned().unwrap_or_default();
        let compressor = doc.get("compressor").filter(|c| !c.is_null()).cloned();
        let separator = doc.get("dimension_separator").and_then(Value::as_str).unwrap_or(".");
        (
            // The v3 form: a name, or for times and fixed-size text a name and configuration.
            Some(meta.data_type.to_v3_json()),
            Some(Value::Array(filters.into_iter().chain(compressor).collect())),
            serde_json::to_value(Extension { name: "v2", configuration: KeySeparator { separator } }).ok(),
        )
    } else {
        (doc.get("data_type").cloned(), doc.get("codecs").cloned(), doc.get("chunk_key_encoding").cloned())
    };
    ArrayInfo {
        path,
        node_type: "array",
        zarr_format: meta.zarr_format,
        shape: &meta.shape,
        data_type,
        fill_value: doc.get("fill_value"),
        dimension_names: &meta.dimension_names,
        attributes: &meta.attributes,
        codecs,
        chunk_key_encoding,
        chunk_grid: ChunkGridInfo {
            kind: meta.chunk_grid.kind.name(),
            chunk_sizes: meta.chunk_grid.to_json(),
            grid_shape: meta.chunk_grid.grid_shape(),
        },
        read_chunk_shape: meta.read_chunk_shape(),
        sharding,
        grid: None,
    }
}
