//! Health, readiness and metrics.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::Error;

/// 200 `ok` while the process serves.
pub async fn healthz() -> &'static str {
    "ok"
}

/// 200 when every dataset's root metadata (`zarr.json`, or a v2 store's `.zgroup` or
/// `.zarray`) is readable; 503 naming the failures, and
/// 503 as soon as shutdown begins so a load balancer drains the instance first.
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.shutting_down.load(Ordering::SeqCst) {
        return Error::Unavailable { detail: "the server is shutting down".into(), retry_after: 1 }.into_response();
    }
    let mut failing = Vec::new();
    for ds in state.catalog.datasets() {
        let mut found = Ok(false);
        // A v2 store has no zarr.json; its root is a group or an array.
        for key in ["zarr.json", ".zgroup", ".zarray"] {
            found = ds.store.head(key).await.map(|m| m.is_some());
            if !matches!(found, Ok(false)) {
                break;
            }
        }
        match found {
            Ok(true) => {}
            Ok(false) => failing.push(format!("{} (no zarr.json, .zgroup or .zarray at its root)", ds.name)),
            Err(e) => failing.push(format!("{} ({e})", ds.name)),
        }
    }
    if failing.is_empty() {
        "ready".into_response()
    } else {
        Error::Unavailable { detail: format!("datasets not readable: {}", failing.join("; ")), retry_after: 5 }
            .into_response()
    }
}

/// Prometheus text exposition.
pub async fn metrics(State(state): State<AppState>) -> Response {
    crate::metrics::cache_size("shard_index", state.catalog.indexes.size());
    crate::metrics::cache_size("chunk", state.catalog.chunks.size());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], crate::metrics::handle().render()).into_response()
}
