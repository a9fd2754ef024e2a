//! `GET /v1/datasets` and `GET /v1/datasets/{ds}`.

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use serde_json::json;

use super::{Params, json_response};
use crate::AppState;
use crate::error::Result;

/// Names and titles only: never a URL, credential or option.
pub async fn list(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let datasets: Vec<_> =
        state.catalog.datasets().map(|d| json!({"name": d.name.as_ref(), "title": d.title})).collect();
    Ok(json_response(&json!({ "datasets": datasets }), &state.config.http.cache_control))
}

/// The node tree of one dataset.
pub async fn show(
    State(state): State<AppState>,
    Path(ds): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let dataset = state.catalog.dataset(&ds)?;
    let nodes = state.catalog.tree(dataset).await?;
    Ok(json_response(&json!({"name": ds, "title": dataset.title, "nodes": *nodes}), &state.config.http.cache_control))
}
