//! `GET|HEAD /zarr/{ds}/{*key}`: the dataset as a plain Zarr store over HTTP, so Zarr
//! clients (zarr-python, zarrita.js, neuroglancer) can read it directly. Byte ranges
//! (bounded, open-ended, suffix), `ETag`/`Last-Modified` and conditional requests follow
//! RFC 9110; object bytes are passed through untouched (never re-compressed).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use object_store::{GetOptions, GetResult, ObjectMeta};

use crate::error::{Error, Result};
use crate::http::conditional::{ByteRange, Validators};
use crate::http::listing::{self, Entry};
use crate::http::middleware::NoCompress;
use crate::http::state::AppState;
use zarrd_core::ops::budget::MemoryBudget;
use zarrd_core::store::{Store, object_version};

pub async fn get(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    Path((ds, key)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let dataset = &state.catalog.dataset(&ds).await?;
    let cache_control = state.config.http.cache_control.as_str();
    if let Some(dir) = key.strip_suffix('/') {
        return list(&dataset.store, dir, uri.path(), &headers, cache_control).await;
    }
    if let Some(response) = serve(&dataset.store, &state.catalog.budget, &key, &headers, method == Method::HEAD).await?
    {
        return Ok(response);
    }
    // No such object.
    match key.as_str() {
        // A collection's root has no metadata of its own: it is an empty group holding the
        // Zarr roots below it (`docs/ome-zarr.md` "Collections").
        "zarr.json" | ".zgroup" | ".zattrs" => {
            if !state.catalog.is_collection(dataset).await? {
                return Err(not_found(&key));
            }
            let body = match key.as_str() {
                "zarr.json" => r#"{"zarr_format":3,"node_type":"group","attributes":{}}"#,
                ".zgroup" => r#"{"zarr_format":2}"#,
                _ => "{}",
            };
            Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response())
        }
        // Not an object, but maybe a directory: redirected to its listing (the URL with a
        // trailing slash), so relative links resolve. Missing chunks are asked for often
        // and must stay one storage request, so keys that name a chunk (an all-digit last
        // segment) or a metadata document are not looked up as directories.
        _ if may_be_directory(&key) => match dataset.store.list_entries(&key).await {
            Ok((dirs, objects)) if !dirs.is_empty() || !objects.is_empty() => Ok(listing::to_directory(uri.path())),
            _ => Err(not_found(&key)),
        },
        _ => Err(not_found(&key)),
    }
}

/// Whether a key that is not an object may name a directory worth listing.
fn may_be_directory(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    !name.bytes().all(|b| b.is_ascii_digit()) && !name.contains('.') && name != "c"
}

/// `/zarr/{ds}` (redirected to the listing) and `/zarr/{ds}/` (the dataset root's listing).
pub async fn root(
    State(state): State<AppState>,
    uri: Uri,
    Path(ds): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let dataset = &state.catalog.dataset(&ds).await?;
    if !uri.path().ends_with('/') {
        return Ok(listing::to_directory(uri.path()));
    }
    list(&dataset.store, "", uri.path(), &headers, &state.config.http.cache_control).await
}

/// The listing of directory `dir` of the store; 404 when it holds nothing.
async fn list(store: &Store, dir: &str, uri_path: &str, headers: &HeaderMap, cache_control: &str) -> Result<Response> {
    let (dirs, objects) = store.list_entries(dir).await?;
    if dirs.is_empty() && objects.is_empty() {
        return Err(Error::NotFound(format!("no directory `{dir}/` in this dataset")));
    }
    let entries = dirs
        .into_iter()
        .map(Entry::directory)
        .chain(objects.into_iter().map(|(name, size)| Entry::object(name, Some(size))))
        .collect();
    listing::respond(uri_path, entries, headers, cache_control)
}

/// Objects (or ranges) up to this size are read whole before the response head is sent;
/// larger ones are streamed.
///
/// Once the head is sent a failure can only cut the body short, and neither the client
/// nor a load balancer can tell a short body from a slow one until the connection closes;
/// a load balancer cannot retry it either (nginx, for one, retries only before anything
/// was sent to the client). Reading the bytes first turns a storage failure into a clean
/// 502 and, when a replica is killed, leaves its load balancer a request it can still
/// retry elsewhere rather than a body it must cut. Inner chunks and byte ranges that Zarr
/// clients ask for are typically well below this; the memory is taken from the budget.
const WHOLE_BODY_MAX: u64 = 4 * 1024 * 1024;

/// The HTTP form of an object's `ETag` (quoted; derived from size and time when the store
/// has none).
fn http_etag(meta: &ObjectMeta) -> String {
    let tag = object_version(meta);
    if tag.starts_with('"') || tag.starts_with("W/\"") { tag } else { format!("\"{tag}\"") }
}

fn http_date(t: DateTime<Utc>) -> String {
    t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The validators of a stored object: its `ETag` and `Last-Modified`.
fn object_validators(meta: &ObjectMeta) -> Validators {
    Validators::new(http_etag(meta), "no-cache").modified_at(meta.last_modified.timestamp())
}

fn content_type(key: &str) -> &'static str {
    // Zarr metadata documents: v3 `zarr.json`, v2 `.zarray`/`.zattrs`/`.zgroup`/`.zmetadata`.
    let name = key.rsplit('/').next().unwrap_or(key);
    if matches!(name, "zarr.json" | ".zarray" | ".zattrs" | ".zgroup" | ".zmetadata") {
        "application/json"
    } else {
        "application/octet-stream"
    }
}

fn not_found(key: &str) -> Error {
    Error::NotFound(format!("no object `{key}` in this dataset"))
}

/// Answers one GET or HEAD for `key`; `None` when there is no such object.
async fn serve(
    store: &Store,
    budget: &MemoryBudget,
    key: &str,
    headers: &HeaderMap,
    head_only: bool,
) -> Result<Option<Response>> {
    let mut range = header_str(headers, header::RANGE).and_then(ByteRange::parse);
    let conditional = [header::IF_MATCH, header::IF_NONE_MATCH, header::IF_MODIFIED_SINCE, header::IF_UNMODIFIED_SINCE]
        .iter()
        .any(|h| headers.contains_key(h))
        || (range.is_some() && headers.contains_key(header::IF_RANGE));
    // A HEAD, a conditional request or a ranged HEAD needs the metadata first; a plain or
    // ranged GET goes straight to the object in one request.
    let meta = if head_only || conditional {
        let Some(meta) = store.head(key).await? else { return Ok(None) };
        Some(meta)
    } else {
        None
    };
    if let Some(meta) = &meta {
        let validators = object_validators(meta);
        if !validators.allows(headers) {
            return Err(Error::PreconditionFailed(format!(
                "`{key}` has ETag {}, which the request's preconditions do not allow (If-Match names strong tags: a W/ tag never matches; If-Unmodified-Since a date not before its Last-Modified)",
                validators.etag()
            )));
        }
        if validators.current(headers) {
            return Ok(Some(object_headers(StatusCode::NOT_MODIFIED.into_response(), key, meta)));
        }
        if !validators.range_allowed(headers) {
            range = None;
        }
        if head_only {
            return head_response(key, meta, range).map(Some);
        }
    }
    let mut options = GetOptions { range: range.map(ByteRange::to_get_range), ..GetOptions::default() };
    // Read exactly the version the preconditions were checked against.
    options.if_match = meta.as_ref().and_then(|m| m.e_tag.clone());
    let result = match store.get_opts(key, options).await {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(None),
        Err(e) => {
            // A range past the end fails in the store; tell the client the size.
            if let Some(range) = range
                && let Some(meta) = store.head(key).await?
                && range.resolve(meta.size).is_none()
            {
                return Err(unsatisfiable(key, meta.size));
            }
            return Err(e.into());
        }
    };
    object_response(result, budget, key, range.is_some()).await.map(Some)
}

/// The body of a GET of `key` (its range when `ranged`), read whole when small, else
/// streamed, with the object's headers.
async fn object_response(result: GetResult, budget: &MemoryBudget, key: &str, ranged: bool) -> Result<Response> {
    let (meta, served) = (result.meta.clone(), result.range.clone());
    let length = served.end - served.start;
    let mut response = if length <= WHOLE_BODY_MAX {
        let held = budget.reserve(length).await?;
        let bytes = result.bytes().await.map_err(|e| {
            tracing::warn!(error = %e, "storage failure while reading an object");
            Error::from(zarrd_core::store::StoreError::Backend { key: key.to_owned(), source: e })
        })?;
        zarrd_core::ops::metrics::storage_bytes(bytes.len());
        // The bytes stay reserved until the body has been sent.
        crate::http::body::tracked(axum::body::Body::from(bytes), None, tracing::Span::none(), move |_| drop(held))
            .into_response()
    } else {
        // Streamed from storage as the client takes it: a large object never sits whole
        // in memory, and a slow client holds only the backend's buffers. A storage failure
        // mid-body aborts the connection (the client sees a short body).
        let stream = result.into_stream().map(|chunk| {
            chunk.inspect(|b| zarrd_core::ops::metrics::storage_bytes(b.len())).map_err(|e| {
                tracing::warn!(error = %e, "storage failure while streaming an object");
                std::io::Error::other("storage read failed")
            })
        });
        crate::http::body::streamed(stream, served.end - served.start).into_response()
    };
    set(&mut response, header::CONTENT_LENGTH, &(served.end - served.start).to_string());
    if ranged {
        // Nothing of an empty object can be served: every range of it is unsatisfiable.
        if served.start >= served.end {
            return Err(unsatisfiable(key, meta.size));
        }
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        set(
            &mut response,
            header::CONTENT_RANGE,
            &format!("bytes {}-{}/{}", served.start, served.end.saturating_sub(1), meta.size),
        );
    }
    Ok(object_headers(response, key, &meta))
}

fn unsatisfiable(key: &str, size: u64) -> Error {
    Error::RangeNotSatisfiable(
        format!("`{key}` has {size} bytes; ranges must start below that, and a suffix must be at least 1 byte"),
        size,
    )
}

fn head_response(key: &str, meta: &ObjectMeta, range: Option<ByteRange>) -> Result<Response> {
    let mut response = StatusCode::OK.into_response();
    let length = match range {
        None => meta.size,
        Some(r) => {
            let served = r.resolve(meta.size).ok_or_else(|| unsatisfiable(key, meta.size))?;
            *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            set(
                &mut response,
                header::CONTENT_RANGE,
                &format!("bytes {}-{}/{}", served.start, served.end - 1, meta.size),
            );
            served.end - served.start
        }
    };
    set(&mut response, header::CONTENT_LENGTH, &length.to_string());
    Ok(object_headers(response, key, meta))
}

fn set(response: &mut Response, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, v);
    }
}

/// Validators and type of a stored object; its bytes are never re-compressed.
fn object_headers(mut response: Response, key: &str, meta: &ObjectMeta) -> Response {
    set(&mut response, header::ETAG, &http_etag(meta));
    set(&mut response, header::LAST_MODIFIED, &http_date(meta.last_modified));
    set(&mut response, header::ACCEPT_RANGES, "bytes");
    set(&mut response, header::CONTENT_TYPE, content_type(key));
    set(&mut response, header::CACHE_CONTROL, "no-cache");
    response.extensions_mut().insert(NoCompress);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_resolves_ranges() {
        assert_eq!(ByteRange::parse("bytes=0-99"), Some(ByteRange::Bounded(0, 99)));
        assert_eq!(ByteRange::parse("bytes=100-"), Some(ByteRange::From(100)));
        assert_eq!(ByteRange::parse("bytes=-16"), Some(ByteRange::Suffix(16)));
        assert_eq!(ByteRange::parse("Bytes= 0-1 "), Some(ByteRange::Bounded(0, 1)), "unit case, list OWS");
        for ignored in ["bytes=5-1", "bytes=0-1,4-5", "items=0-1", "bytes=-", "bytes=a-b"] {
            assert_eq!(ByteRange::parse(ignored), None, "{ignored}");
        }
        // Only ASCII digits: no signs, inner whitespace, other digits or overflow.
        for ignored in [
            "bytes=+0-+1",
            "bytes=+0-1",
            "bytes=0-+1",
            "bytes=-+1",
            "bytes=+5-",
            "bytes=-0x10",
            "bytes=- 1",
            "bytes=0 -1",
            "bytes=0- 1",
            "bytes=1 0-20",
            "bytes=0-1-2",
            "bytes=--1",
            "bytes=\u{661}-2",
            "bytes=0-18446744073709551616",
            "bytes 0-1",
            "=0-1",
        ] {
            assert_eq!(ByteRange::parse(ignored), None, "{ignored}");
        }
        assert_eq!(ByteRange::Bounded(0, 99).resolve(50), Some(0..50));
        assert_eq!(ByteRange::Bounded(60, 99).resolve(50), None);
        assert_eq!(ByteRange::Suffix(10).resolve(4), Some(0..4));
        assert_eq!(ByteRange::Suffix(0).resolve(4), None);
        assert_eq!(ByteRange::From(4).resolve(4), None);
        // An end of 2^64-1 (as fuzzers send) is clamped, not overflowed.
        assert_eq!(ByteRange::Bounded(0, u64::MAX).resolve(167), Some(0..167));
    }

    #[test]
    fn http_dates_round_trip() {
        let t = crate::http::conditional::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
