//! Image delivery shared by the IIIF and map-tile routes: the identifier of a request path,
//! a freshly rendered image sent and kept, and a kept one sent again, each under the same
//! validators.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Validators, Varies, cache_control};
use crate::http::middleware::NoCompress;
use crate::http::state::AppState;
use crate::images::iiif::Rendered;
use crate::images::iiif::grammar::Identifier;
use crate::images::rendered_key::RenderedKey;
use zarrd_core::read::ObjectVersion;

/// The identifier of a request path (already percent-decoded by the router); one that
/// does not parse names no image, so it is 404 like an unknown one.
pub fn identifier(text: &str) -> Result<Identifier> {
    Identifier::parse(text).map_err(|e| Error::NotFound(e.0))
}

/// A freshly rendered image (IIIF or a map tile) sent and kept: its strong `ETag` from the
/// cache key and the versions of the objects read, remembered in the rendered-image cache
/// unless it holds fill for missing objects (a writer may add them soon).
pub async fn deliver(
    state: &AppState,
    scheme: &str,
    key: RenderedKey,
    bytes: Vec<u8>,
    versions: &[(String, ObjectVersion)],
    media_type: &'static str,
    headers: &HeaderMap,
) -> Response {
    let mut tag = EtagBuilder::new(scheme);
    tag.text(&key.etag_text());
    for (k, v) in versions {
        tag.text(k).text(v.as_str());
    }
    let any_missing = versions.iter().any(|(_, v)| v.is_missing());
    let rendered = Arc::new(Rendered { bytes: bytes.into(), etag: tag.finish(), media_type });
    if !any_missing {
        state.images.remember(key, Arc::clone(&rendered)).await;
    }
    respond(&rendered, headers, &cache_control(&state.config, any_missing))
}

/// A rendered image (or its 304). PNG and JPEG are compressed already; a map tile's float
/// `npy` compresses (NaN and repeats), so only it is left to the compression layer.
pub fn respond(rendered: &Rendered, headers: &HeaderMap, cache_control: &str) -> Response {
    let compressible = rendered.media_type == "application/octet-stream";
    let validators =
        Validators::new(rendered.etag.clone(), cache_control).varying(Varies { accept: false, encoding: compressible });
    if validators.current(headers) {
        return validators.unchanged();
    }
    let mut response = ([(header::CONTENT_TYPE, rendered.media_type)], rendered.bytes.clone()).into_response();
    if !compressible {
        response.extensions_mut().insert(NoCompress);
    }
    validators.stamp(response)
}
