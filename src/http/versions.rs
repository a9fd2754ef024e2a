//! Versions of versioned datasets at the HTTP edge: which dataset (and `@REF`) a request
//! names, and the `Cache-Control` of responses for a version that can never change (a
//! tag or a snapshot id): `public, max-age=31536000, immutable`.

use std::collections::HashMap;

use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::http::state::AppState;

/// The `Cache-Control` of responses for a tag or a snapshot id.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The dataset a request names, `NAME` or `NAME@REF`, read from the matched route's own
/// path parameters as its handler reads them (percent-decoded): `{ds}`, the dataset of
/// an IIIF `{identifier}`, or of an EDR collection `{cid}` (at `{ref}`). `None` on routes that name none.
pub async fn named_dataset(parts: &mut Parts) -> Option<String> {
    use axum::extract::FromRequestParts;
    let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, &()).await.ok()?;
    match (params.get("ds"), params.get("identifier"), params.get("cid")) {
        (Some(ds), _, _) => Some(ds.clone()),
        (None, Some(id), _) => Some(crate::images::iiif::grammar::Identifier::parse(id).ok()?.dataset),
        // An EDR collection `DATASET[:GROUP…]`, at version `{ref}` on instance routes.
        (None, None, Some(cid)) => {
            let (dataset, _) = crate::edr::collection::parse_id(cid);
            Some(match params.get("ref") {
                Some(version) if !dataset.contains('@') => format!("{dataset}@{version}"),
                _ => dataset.to_owned(),
            })
        }
        (None, None, None) => None,
    }
}

/// Marks successful responses for an immutable version as cacheable forever.
pub async fn immutable(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let named = named_dataset(&mut parts).await.filter(|s| s.contains('@'));
    let mut response = next.run(Request::from_parts(parts, body)).await;
    let status = response.status();
    if let Some(name) = named
        && (status.is_success() || status == axum::http::StatusCode::NOT_MODIFIED)
        && state.catalog.immutable(&name).await
    {
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    }
    response
}
