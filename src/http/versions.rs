//! Versions of versioned datasets at the HTTP edge: which dataset (and `@REF`) a request
//! path names, and the `Cache-Control` of responses for a version that can never change (a
//! tag or a snapshot id): `public, max-age=31536000, immutable`.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::http::state::AppState;

/// The `Cache-Control` of responses for a tag or a snapshot id.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The dataset segment (`NAME` or `NAME@REF`, percent-decoded) of a request path, on the
/// routes that name one.
pub fn dataset_segment(path: &str) -> Option<String> {
    const PREFIXES: [&str; 10] = [
        "/v1/datasets/",
        "/v1/arrays/",
        "/v1/slice/",
        "/v1/chunks/",
        "/v1/chunk/",
        "/zarr/",
        "/compat/v3/",
        "/compat/v2/",
        "/view/",
        "/iiif/3/",
    ];
    let rest = PREFIXES.iter().find_map(|p| path.strip_prefix(p))?;
    let segment = rest.split('/').next().filter(|s| !s.is_empty())?;
    let decoded = percent_encoding::percent_decode_str(segment).decode_utf8().ok()?;
    // An IIIF identifier is `DS/PATH[…]`, percent-encoded as one segment.
    Some(decoded.split('/').next().unwrap_or_default().to_owned())
}

/// Marks successful responses for an immutable version as cacheable forever.
pub async fn immutable(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let named = dataset_segment(request.uri().path()).filter(|s| s.contains('@'));
    let mut response = next.run(request).await;
    let status = response.status();
    if let Some(name) = named
        && (status.is_success() || status == axum::http::StatusCode::NOT_MODIFIED)
        && state.catalog.immutable(&name).await
    {
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dataset_of_each_route() {
        assert_eq!(dataset_segment("/v1/slice/ds@v1/a/b").as_deref(), Some("ds@v1"));
        assert_eq!(dataset_segment("/zarr/ds@main/zarr.json").as_deref(), Some("ds@main"));
        assert_eq!(dataset_segment("/iiif/3/ds%40v1%2Fa%2Fb[0]/info.json").as_deref(), Some("ds@v1"));
        assert_eq!(dataset_segment("/v1/datasets/ds/versions").as_deref(), Some("ds"));
        assert_eq!(dataset_segment("/v1/datasets"), None);
        assert_eq!(dataset_segment("/metrics"), None);
    }
}
