//! Response compression: which bodies are compressed (JSON, problem documents, text and
//! decoded binary; never stored bytes, partial content or images), the layer that does it,
//! and the same treatment for answers made outside it (`auth` refusals), so that those
//! look exactly like the handlers' own.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate};

/// The compression layer of `middleware::apply`.
pub fn compression() -> CompressionLayer<Compressible> {
    // The fastest level: bodies are mostly decoded numbers, which deflate barely shrinks;
    // level 6 (the default) spent 0.4 ms on a 4 KiB point series (docs/performance.md).
    CompressionLayer::new()
        .gzip(true)
        .zstd(true)
        .quality(tower_http::CompressionLevel::Fastest)
        .compress_when(Compressible)
}

/// `response` as the compression layer would send it to a request with `headers`: for
/// answers made outside that layer that must look like the handlers' (`auth` refusals).
pub async fn compressed_as_handlers(headers: &HeaderMap, response: Response) -> Response {
    use tower::{Layer, ServiceExt};
    let mut request = Request::new(axum::body::Body::empty());
    *request.headers_mut() = headers.clone();
    let mut response = Some(response);
    let service = tower::service_fn(move |_: Request| {
        std::future::ready(Ok::<_, std::convert::Infallible>(response.take().unwrap_or_default()))
    });
    match compression().layer(service).oneshot(request).await {
        Ok(response) => response.map(axum::body::Body::new),
        Err(never) => match never {},
    }
}

/// Marks a response whose body must not be compressed (already-compressed chunk bytes,
/// byte ranges of stored objects).
#[derive(Debug, Clone, Copy)]
pub struct NoCompress;

/// Compress JSON and raw binary bodies, but never stored (already encoded) bytes, partial
/// content, or images.
#[derive(Clone, Copy)]
pub struct Compressible;

/// Bodies below this size are sent as they are (tower-http's default).
const MIN_SIZE: u64 = 32;
/// Decoded binary (`.npy`, raw elements) below this size is sent as it is: numbers barely
/// deflate, and setting up a compressor cost more (0.35 ms on a 4 KiB point series, three
/// times the rest of the answer: docs/performance.md) than the few bytes it could save.
const MIN_BINARY_SIZE: u64 = 64 * 1024;

impl Predicate for Compressible {
    fn should_compress<B>(&self, response: &axum::http::Response<B>) -> bool
    where
        B: axum::body::HttpBody,
    {
        response.extensions().get::<NoCompress>().is_none()
            && response.status() != axum::http::StatusCode::PARTIAL_CONTENT
            && big_enough(response, min_size(response))
            && NotForContentType::GRPC
                .and(NotForContentType::IMAGES)
                .and(NotForContentType::SSE)
                .should_compress(response)
    }
}

/// Whether the body is at least [`MIN_SIZE`] bytes (or of unknown size), by its
/// `Content-Length` first: a HEAD answer's body is empty but its `Content-Length` is the
/// GET's, and it must carry the GET's `Content-Encoding` and `Vary` (RFC 9110 §9.3.2) —
/// tower-http's own size check reads the (empty) body first.
fn big_enough<B: axum::body::HttpBody>(response: &axum::http::Response<B>, min: u64) -> bool {
    let declared = response
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    declared.or_else(|| response.body().size_hint().exact()).is_none_or(|n| n >= min)
}

/// The smallest body worth compressing, by its media type.
fn min_size<B>(response: &axum::http::Response<B>) -> u64 {
    let content_type = response.headers().get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    match content_type {
        Some("application/x-npy" | "application/octet-stream") => MIN_BINARY_SIZE,
        _ => MIN_SIZE,
    }
}
