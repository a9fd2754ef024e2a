//! How a request's route is named, once, from the route the router matched: metrics and
//! access logs label requests with it, and the response cache keeps data routes only; and
//! which paths are probes.

use axum::extract::{MatchedPath, Request};

/// The literal part of the route the router matched (`/v1/slice/{ds}/{*path}` →
/// `/v1/slice`, `/compat/v3/{ds}/{*key}` → `/compat/v3`, `/` → `/`), so every route has its
/// own name without a list kept beside the router; `other` for requests that matched no
/// route. Bounded: there are as many labels as routes.
pub fn label(request: &Request) -> &str {
    let Some(matched) = request.extensions().get::<MatchedPath>() else { return "other" };
    let path = matched.as_str();
    // Every EDR document and query is one route, as the standard is one interface.
    if path.starts_with("/edr") {
        return "/edr";
    }
    let literal = path.find('{').map_or(path, |at| &path[..at]);
    let trimmed = literal.trim_end_matches('/');
    if trimmed.is_empty() { "/" } else { trimmed }
}

/// Whether `path` is a health or readiness probe (what the connections over the probes'
/// reserve may ask for).
pub fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

/// Whether `path` is an operations endpoint: answered under any load, so probes see the
/// truth, and logged at DEBUG when it succeeds.
pub fn is_ops(path: &str) -> bool {
    is_probe(path) || path == "/metrics"
}

/// Whether requests to the route labelled `label` read array data (whose `200`s the
/// response cache may keep).
pub fn reads_data(label: &str) -> bool {
    matches!(
        label,
        "/v1/slice" | "/v1/reduce" | "/edr" | "/v1/chunk" | "/iiif/3" | "/maps" | "/zarr" | "/compat/v3" | "/compat/v2"
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::Router;
    use axum::middleware::{Next, from_fn};

    use super::*;

    #[tokio::test]
    async fn route_labels_come_from_the_matched_route() {
        use axum::routing::get;
        use tower::ServiceExt;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = {
            let seen = Arc::clone(&seen);
            move |request: Request, next: Next| {
                let seen = Arc::clone(&seen);
                async move {
                    seen.lock().unwrap().push(label(&request).to_owned());
                    next.run(request).await
                }
            }
        };
        let app = Router::new()
            .route("/", get(|| async { "" }))
            .route("/healthz", get(|| async { "" }))
            .route("/v1/slice/{ds}/{*path}", get(|| async { "" }))
            .route("/compat/v3/{ds}/{*key}", get(|| async { "" }))
            .route("/iiif/3/{identifier}/info.json", get(|| async { "" }))
            .route("/zarr/{ds}/", get(|| async { "" }))
            .route("/maps/{identifier}/{z}/{x}/{y}", get(|| async { "" }))
            .layer(from_fn(record));
        for uri in [
            "/",
            "/healthz",
            "/v1/slice/sample/climate/t2m",
            "/compat/v3/s/a/c/0",
            "/iiif/3/x/info.json",
            "/zarr/s/",
            "/maps/a%2Fb/0/0/0.png",
            "/nope/x",
        ] {
            let request = axum::http::Request::get(uri).body(axum::body::Body::empty()).unwrap();
            app.clone().oneshot(request).await.unwrap();
        }
        assert_eq!(
            *seen.lock().unwrap(),
            ["/", "/healthz", "/v1/slice", "/compat/v3", "/iiif/3", "/zarr", "/maps", "other"],
        );
    }
}
