//! The guard that bounds requests in flight (`limits.max_in_flight`: 503 + Retry-After
//! beyond it) and their duration (`limits.request_timeout_secs`: 504), over all threads,
//! and keeps a connection over the probes' reserve to the probes. Operations endpoints
//! are never refused, so probes see the truth under load.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::error::Error;
use crate::http::connections::ProbeOnly;

/// Requests in flight and their time limit, shared by every thread's router.
pub struct Guard {
    permits: Semaphore,
    timeout: Duration,
}

impl Guard {
    pub fn new(limits: &crate::config::Limits) -> Self {
        Self {
            permits: Semaphore::new(limits.max_in_flight),
            timeout: Duration::from_secs(limits.request_timeout_secs),
        }
    }
}

/// Middleware over any state that holds the guard (the app's state handle, so that the
/// layer clones nothing other threads clone too).
pub async fn layer<S: AsRef<Guard>>(State(state): State<S>, request: Request, next: Next) -> Response {
    let guard = state.as_ref();
    let path = request.uri().path();
    // A connection over the probes' reserve (the connection cap is reached) serves probes only.
    if request.extensions().get::<ProbeOnly>().is_some() && !crate::http::route::is_probe(path) {
        return Error::Unavailable {
            detail: "the server is at its connection limit; retry shortly".into(),
            retry_after: 1,
        }
        .into_response();
    }
    if crate::http::route::is_ops(path) {
        return next.run(request).await;
    }
    let Ok(_permit) = guard.permits.try_acquire() else {
        return Error::Unavailable { detail: "too many requests in flight; retry shortly".into(), retry_after: 1 }
            .into_response();
    };
    match tokio::time::timeout(guard.timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => Error::Timeout(guard.timeout.as_secs()).into_response(),
    }
}
