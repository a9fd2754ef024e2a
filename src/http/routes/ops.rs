//! Health, readiness and metrics.

use std::sync::atomic::Ordering;

use axum::Extension;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::auth::Identity;
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

/// Prometheus text exposition. Series labelled with a private dataset the caller may not
/// read (`zarrd_dataset_up{dataset="..."}`) are left out, so `/metrics` never names one to
/// them.
pub async fn metrics(State(state): State<AppState>, identity: Option<Extension<Identity>>) -> Response {
    zarrd_core::ops::metrics::cache_size("shard_index", state.catalog.indexes.size());
    zarrd_core::ops::metrics::cache_size("chunk", state.catalog.chunks.size());
    zarrd_core::ops::metrics::cache_size("response", state.responses.size());
    let caller = identity.and_then(|Extension(Identity(caller))| caller);
    let text = crate::telemetry::render();
    let shown = without_datasets(&text, |ds| !state.auth.may_read(caller.as_ref(), ds));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], shown).into_response()
}

/// `text` without the lines of series whose `dataset` label is `hidden`.
fn without_datasets(text: &str, hidden: impl Fn(&str) -> bool) -> String {
    const LABEL: &str = "dataset=\"";
    text.lines()
        .filter(|line| {
            let Some(at) = line.find(LABEL).filter(|_| !line.starts_with('#')) else { return true };
            let value = &line[at + LABEL.len()..];
            !hidden(value.split('"').next().unwrap_or_default())
        })
        .flat_map(|line| [line, "\n"])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_of_hidden_datasets_are_left_out() {
        let text = "# TYPE zarrd_dataset_up gauge\nzarrd_dataset_up{dataset=\"lab\"} 1\nzarrd_dataset_up{dataset=\"open\"} 0\nzarrd_x{route=\"/\",dataset=\"lab2\"} 3\nzarrd_y 2\n";
        let shown = without_datasets(text, |ds| ds == "lab" || ds == "lab2");
        assert_eq!(shown, "# TYPE zarrd_dataset_up gauge\nzarrd_dataset_up{dataset=\"open\"} 0\nzarrd_y 2\n");
        assert_eq!(without_datasets(text, |_| false), text);
    }
}
