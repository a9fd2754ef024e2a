//! Health, readiness and metrics.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::Error;
use crate::http::state::AppState;

/// 200 `ok` while the process serves.
pub async fn healthz() -> &'static str {
    "ok"
}

/// 200 `ready` while this replica can serve; 503 as soon as shutdown begins, so a load
/// balancer stops routing to it before the listener closes. It makes no storage request
/// and does not depend on any dataset's health: a dataset with an unreadable root is
/// unreadable on every replica alike, and failing readiness for it would take the whole
/// fleet out of the load balancer. Dataset health is in `/v1/datasets` and the
/// `zarrd_dataset_up` gauge (see `health`).
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.shutting_down.load(Ordering::SeqCst) {
        return Error::Unavailable { detail: "the server is shutting down".into(), retry_after: 1 }.into_response();
    }
    "ready".into_response()
}

/// Prometheus text exposition.
pub async fn metrics(State(state): State<AppState>) -> Response {
    crate::ops::metrics::cache_size("shard_index", state.catalog.indexes.size());
    crate::ops::metrics::cache_size("chunk", state.catalog.chunks.size());
    crate::ops::metrics::cache_size("response", state.responses.size());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], crate::ops::metrics::handle().render()).into_response()
}
