//! The HTTP edge: one module per resource. Handlers extract parameters, call the
//! catalog and the read path, and encode; they never parse Zarr bytes.

pub mod arrays;
pub mod chunks;
pub mod compat;
pub mod datasets;

pub mod iiif;
pub mod ops;
pub mod slice;
pub mod viewer;
pub mod zarr_store;

use std::borrow::Cow;
use std::collections::BTreeMap;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use bytes::Bytes;

use crate::config::Config;
use crate::error::{Error, Result};
use zarr_store::ByteRange;

/// The `{ds}` and optional `{*path}` of a node route: the same handler serves
/// `/v1/x/{ds}` (the dataset root, path "") and `/v1/x/{ds}/{*path}`.
#[derive(Debug)]
pub struct NodePath {
    pub ds: String,
    pub path: String,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for NodePath {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self> {
        let axum::extract::Path(mut params) =
            axum::extract::Path::<std::collections::HashMap<String, String>>::from_request_parts(parts, state)
                .await
                .map_err(|e| Error::BadRequest(e.body_text()))?;
        let ds = params.remove("ds").ok_or_else(|| Error::Internal("route without {ds}".into()))?;
        Ok(Self { ds, path: params.remove("path").unwrap_or_default() })
    }
}

/// Marks a response whose body must not be compressed (already-compressed chunk bytes,
/// byte ranges of stored objects).
#[derive(Debug, Clone, Copy)]
pub struct NoCompress;

/// Builds strong `ETag`s by hashing, in order, everything a response depends on.
pub struct EtagBuilder(xxhash_rust::xxh3::Xxh3);

impl EtagBuilder {
    pub fn new(kind: &str) -> Self {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(kind.as_bytes());
        Self(h)
    }

    pub fn text(&mut self, s: &str) -> &mut Self {
        self.0.update(&(s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
        self
    }

    pub fn number(&mut self, v: u64) -> &mut Self {
        self.0.update(&v.to_le_bytes());
        self
    }

    /// A 128-bit digest (such as the metadata document's).
    pub fn digest(&mut self, v: u128) -> &mut Self {
        self.0.update(&v.to_le_bytes());
        self
    }

    pub fn finish(&self) -> String {
        format!("\"{:032x}\"", self.0.digest128())
    }
}

/// Query parameters, checked against the names an endpoint accepts.
#[derive(Debug, Default)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Self> {
        let mut map = BTreeMap::new();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            if !allowed.contains(&k.as_ref()) {
                return Err(Error::BadRequest(format!(
                    "unknown query parameter `{k}`; allowed: {}",
                    allowed.join(", ")
                )));
            }
            if map.insert(k.to_string(), v.to_string()).is_some() {
                return Err(Error::BadRequest(format!("query parameter `{k}` is given more than once")));
            }
        }
        Ok(Self(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A finite number parameter.
    pub fn number(&self, name: &str) -> Result<Option<f64>> {
        self.get(name)
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .ok_or_else(|| Error::BadRequest(format!("`{name}` must be a finite number, got `{v}`")))
            })
            .transpose()
    }

    /// A `true`/`false` parameter.
    pub fn flag(&self, name: &str) -> Result<bool> {
        match self.get(name) {
            None | Some("false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(other) => Err(Error::BadRequest(format!("`{name}` must be true or false, got `{other}`"))),
        }
    }
}

/// The `Cache-Control` of a response: the configured one, with `max-age` and `s-maxage`
/// capped at `cache.missing_ttl_secs` when the response holds fill for objects that were
/// not found, so browsers and CDNs look again as soon as zarrd does.
pub fn cache_control(config: &Config, any_missing: bool) -> Cow<'_, str> {
    let configured = config.http.cache_control.as_str();
    if !any_missing {
        return Cow::Borrowed(configured);
    }
    let ttl = config.cache.missing_ttl_secs;
    let mut capped = false;
    let mut directives: Vec<String> = configured
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| match d.split_once('=') {
            Some((name, value)) if name.eq_ignore_ascii_case("max-age") || name.eq_ignore_ascii_case("s-maxage") => {
                capped = true;
                let age = value.trim_matches('"').parse::<u64>().map_or(ttl, |v| v.min(ttl));
                format!("{name}={age}")
            }
            _ => d.to_owned(),
        })
        .collect();
    if !capped {
        directives.push(format!("max-age={ttl}"));
    }
    Cow::Owned(directives.join(", "))
}

/// A JSON body with the configured `Cache-Control`.
pub fn json_response(value: &serde_json::Value, cache_control: &str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response();
    if let Ok(v) = HeaderValue::from_str(cache_control) {
        response.headers_mut().insert(header::CACHE_CONTROL, v);
    }
    response
}

/// Whether `If-None-Match` matches `etag` (weak comparison, as RFC 9110 asks for GET).
pub fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
}

/// A response for `body`, honouring `Range` (one range, suffix too), HEAD and the
/// conditional headers against `etag`, like the `/zarr` store.
pub fn ranged(
    body: &Bytes,
    etag: &str,
    content_type: &'static str,
    headers: &HeaderMap,
    head_only: bool,
    cache_control: &str,
    no_compress: bool,
) -> Result<Response> {
    let matches = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|list| list.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == etag))
    };
    let set = |response: &mut Response| {
        let h = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(etag) {
            h.insert(header::ETAG, v);
        }
        if let Ok(v) = HeaderValue::from_str(cache_control) {
            h.insert(header::CACHE_CONTROL, v);
        }
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    };
    if matches(header::IF_MATCH) == Some(false) {
        return Err(Error::PreconditionFailed(format!(
            "the object has ETag {etag}, which the request's If-Match does not allow"
        )));
    }
    if matches(header::IF_NONE_MATCH) == Some(true) {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        set(&mut response);
        return Ok(response);
    }
    let size = body.len() as u64;
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok()).and_then(ByteRange::parse);
    let (status, part) = match range {
        None => (StatusCode::OK, 0..size),
        Some(r) => {
            let part = r.resolve(size).ok_or_else(|| {
                Error::RangeNotSatisfiable(
                    format!("the object has {size} bytes; ranges must start below that, and a suffix must be at least 1 byte"),
                    size,
                )
            })?;
            (StatusCode::PARTIAL_CONTENT, part)
        }
    };
    let length = part.end - part.start;
    let mut response = if head_only {
        status.into_response()
    } else {
        (status, body.slice(part.start as usize..part.end as usize)).into_response()
    };
    set(&mut response);
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {}-{}/{size}", part.start, part.end.saturating_sub(1)))
    {
        h.insert(header::CONTENT_RANGE, v);
    }
    if no_compress || status == StatusCode::PARTIAL_CONTENT {
        response.extensions_mut().insert(NoCompress);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_with_missing_objects_expire_with_the_missing_ttl() {
        let mut config = Config::load(None, [], &crate::config::Overrides::default()).unwrap();
        config.http.cache_control = "public, max-age=60, s-maxage=600".into();
        assert_eq!(cache_control(&config, false), "public, max-age=60, s-maxage=600");
        assert_eq!(cache_control(&config, true), "public, max-age=5, s-maxage=5");
        config.http.cache_control = "public".into();
        config.cache.missing_ttl_secs = 0;
        assert_eq!(cache_control(&config, true), "public, max-age=0");
    }
}
