//! Validators and conditional requests, one path for every route: strong `ETag`s hashed
//! from what a response depends on ([`EtagBuilder`]), `Cache-Control` (shortened for
//! responses holding fill for missing objects), `If-None-Match` → 304, `If-Match` → 412,
//! and single byte ranges (RFC 9110) → 206 / 416.

use std::borrow::Cow;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use object_store::GetRange;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::http::compress::NoCompress;
use zarrd_core::read::ObjectVersion;

/// Builds strong `ETag`s by hashing, in order, everything a response depends on.
#[derive(Clone)]
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

/// One byte range of `Range: bytes=…` (a list of several is served whole, as RFC 9110
/// allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `a-b`, inclusive.
    Bounded(u64, u64),
    /// `a-`.
    From(u64),
    /// `-n`: the last n bytes.
    Suffix(u64),
}

impl ByteRange {
    /// Parses a `Range` header; `None` for anything that is not a single byte range
    /// (such a header is ignored and the whole object served).
    ///
    /// RFC 9110 §14.1.1: positions and suffix lengths are `1*DIGIT`, nothing else. Rust's
    /// integer parsing also takes a leading `+`, so digits are checked first: `bytes=+0-+1`
    /// or `bytes=- 1` are not ranges. The unit is case-insensitive; whitespace is allowed
    /// only around the range (the list syntax's OWS), not inside it.
    pub fn parse(value: &str) -> Option<Self> {
        let (unit, spec) = value.trim().split_once('=')?;
        if !unit.eq_ignore_ascii_case("bytes") {
            return None;
        }
        let spec = spec.trim_matches([' ', '\t']);
        if spec.contains(',') {
            return None;
        }
        let (a, b) = spec.split_once('-')?;
        let num = |s: &str| {
            if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            s.parse::<u64>().ok()
        };
        match (a.is_empty(), b.is_empty()) {
            (true, false) => num(b).map(Self::Suffix),
            (false, true) => num(a).map(Self::From),
            (false, false) => {
                let (a, b) = (num(a)?, num(b)?);
                (a <= b).then_some(Self::Bounded(a, b))
            }
            (true, true) => None,
        }
    }

    /// The satisfiable part for an object of `size` bytes, as a half-open range.
    pub fn resolve(self, size: u64) -> Option<std::ops::Range<u64>> {
        let r = match self {
            Self::Bounded(a, b) => a..b.saturating_add(1).min(size),
            Self::From(a) => a..size,
            Self::Suffix(n) => size.saturating_sub(n)..size,
        };
        (r.start < r.end).then_some(r)
    }

    pub fn to_get_range(self) -> GetRange {
        match self {
            Self::Bounded(a, b) => GetRange::Bounded(a..b.saturating_add(1)),
            Self::From(a) => GetRange::Offset(a),
            Self::Suffix(n) => GetRange::Suffix(n),
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

/// Whether the entity-tag list in header `name` (`If-Match`, `If-None-Match`; every line of
/// it) names `etag` or is `*`; `None` when the request has no such header. `If-None-Match`
/// compares weakly (RFC 9110 §13.1.2), `If-Match` strongly (§13.1.1): a weak tag on either
/// side never matches there.
pub fn tags_match(headers: &HeaderMap, name: &header::HeaderName, etag: &str) -> Option<bool> {
    let mut lists = headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).peekable();
    lists.peek()?;
    let strong = name == header::IF_MATCH;
    let matches = |tag: &str| {
        if tag == "*" {
            return true;
        }
        if strong {
            return !etag.starts_with("W/") && tag == etag;
        }
        tag.trim_start_matches("W/") == etag.trim_start_matches("W/")
    };
    Some(lists.flat_map(|v| v.split(',')).map(str::trim).any(matches))
}

/// The validators of every answer, where only the finished response tells (middleware,
/// outside the compression layer):
///
/// - A compressed body is a representation of its own (RFC 9110 §8.8.1: a strong tag names
///   one representation), so its `ETag` is sent weak, `W/"…"`, as nginx does; `If-None-Match`
///   compares weakly and still revalidates it. A 304 that stands for a compressed 200 (it
///   varies on `Accept-Encoding` and the request accepts gzip or zstd) gets the same weak tag.
/// - `If-Match` (§13.1.1): an answer whose current strong `ETag` the request's `If-Match`
///   does not name (nor `*`) becomes 412. The `/zarr` store checks it before reading
///   anything; elsewhere a representation's tag is known only once it is made, so it is
///   checked here (a rare header on reads: the work is not saved).
pub async fn validators(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let headers = request.headers();
    // Only a conditional request can be answered 304: the others need no look at the encodings.
    let revalidates = headers.contains_key(header::IF_NONE_MATCH) || headers.contains_key(header::IF_MODIFIED_SINCE);
    let compresses = revalidates && accepts_compression(headers);
    let mut asked = HeaderMap::new();
    for v in headers.get_all(header::IF_MATCH) {
        asked.append(header::IF_MATCH, v.clone());
    }
    let mut response = next.run(request).await;
    let status = response.status();
    if !(status.is_success() || status == StatusCode::NOT_MODIFIED) {
        return response;
    }
    let headers = response.headers_mut();
    let compressed = headers.contains_key(header::CONTENT_ENCODING)
        || (status == StatusCode::NOT_MODIFIED && compresses && varies_on_encoding(headers));
    if compressed
        && let Some(strong) = headers.get(header::ETAG).filter(|t| t.as_bytes().starts_with(b"\""))
        && let Ok(weak) = HeaderValue::from_bytes(&[b"W/", strong.as_bytes()].concat())
    {
        headers.insert(header::ETAG, weak);
    }
    if asked.is_empty() {
        return response;
    }
    let etag = response.headers().get(header::ETAG).and_then(|v| v.to_str().ok()).unwrap_or("");
    if tags_match(&asked, &header::IF_MATCH, etag) == Some(true) {
        return response;
    }
    let current = if etag.is_empty() { "no ETag".to_owned() } else { format!("ETag {etag}") };
    Error::PreconditionFailed(format!(
        "the representation has {current}, which the request's If-Match does not name (If-Match compares strong tags: a W/ tag never matches)"
    ))
    .into_response()
}

/// Whether `Accept-Encoding` lets the compression layer pick gzip or zstd (named without
/// `q=0`; like tower-http, `*` picks nothing).
fn accepts_compression(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let refused = parts
                .any(|p| p.trim().strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)));
            ["gzip", "x-gzip", "zstd"].iter().any(|c| coding.eq_ignore_ascii_case(c)) && !refused
        },
    )
}

fn varies_on_encoding(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case("accept-encoding"))
}

/// The date in header `name` (Unix seconds), when it parses.
fn date(headers: &HeaderMap, name: header::HeaderName) -> Option<i64> {
    headers.get(name).and_then(|v| v.to_str().ok()).and_then(parse_http_date).map(|t| t.timestamp())
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`); `None` when it does not parse.
pub fn parse_http_date(value: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc2822(value.trim()).ok().map(|t| t.with_timezone(&chrono::Utc))
}

/// A representation's validators, and the one conditional sequence every route follows
/// (RFC 9110 §13.2.2): the preconditions are evaluated against them before a body is
/// built, a 304 carries what the 200 it stands for would (`ETag`, `Cache-Control`, `Vary`),
/// and the validators are stamped on the 200.
#[derive(Debug, Clone)]
pub struct Validators {
    etag: String,
    cache_control: String,
    varies: Varies,
    /// `Last-Modified` in Unix seconds (HTTP dates have one-second resolution), for
    /// `If-Modified-Since`, `If-Unmodified-Since` and `If-Range` dates.
    last_modified: Option<i64>,
}

impl Validators {
    pub fn new(etag: String, cache_control: impl Into<String>) -> Self {
        Self { etag, cache_control: cache_control.into(), varies: Varies::default(), last_modified: None }
    }

    /// The validators of an answer computed from stored objects: `tag` (what it depends
    /// on besides them) with each object's version, and the configured `Cache-Control`,
    /// shortened when an object was missing (read as fill).
    pub fn of_objects(mut tag: EtagBuilder, versions: &[(String, ObjectVersion)], config: &Config) -> Self {
        for (key, version) in versions {
            tag.text(key).text(version.as_str());
        }
        let missing = versions.iter().any(|(_, v)| v.is_missing());
        Self::new(tag.finish(), cache_control(config, missing))
    }

    /// What the 200 varies on besides the target (its 304 repeats it).
    #[must_use]
    pub fn varying(mut self, varies: Varies) -> Self {
        self.varies = varies;
        self
    }

    /// The representation's `Last-Modified` (Unix seconds).
    #[must_use]
    pub fn modified_at(mut self, seconds: i64) -> Self {
        self.last_modified = Some(seconds);
        self
    }

    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// Whether the client's copy is current: `If-None-Match` names the tag, or (without
    /// one) `If-Modified-Since` is not before `Last-Modified`.
    pub fn current(&self, headers: &HeaderMap) -> bool {
        match tags_match(headers, &header::IF_NONE_MATCH, &self.etag) {
            Some(matches) => matches,
            None => date(headers, header::IF_MODIFIED_SINCE).zip(self.last_modified).is_some_and(|(d, m)| m <= d),
        }
    }

    /// Whether the request may proceed: `If-Match` names the tag (strongly), or (without
    /// one) `If-Unmodified-Since` is not before `Last-Modified`. For representations whose
    /// tag no compression weakens (stored objects, ranged bodies); the others are held to
    /// `If-Match` by the [`validators`] layer, once their final tag is known.
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        match tags_match(headers, &header::IF_MATCH, &self.etag) {
            Some(matches) => matches,
            None => date(headers, header::IF_UNMODIFIED_SINCE).zip(self.last_modified).is_none_or(|(d, m)| m <= d),
        }
    }

    /// Whether a `Range` may be honoured under the request's `If-Range` (RFC 9110
    /// §13.1.5): always without one; with an entity tag only when it is strong and equal to
    /// this one; with a date only when it is `Last-Modified`. Otherwise the range is ignored
    /// and the whole representation sent, so a client resuming a download of an object
    /// that has changed never stitches two versions together.
    pub fn range_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::IF_RANGE) else { return true };
        let Ok(value) = value.to_str() else { return false };
        let value = value.trim();
        if value.starts_with('"') || value.starts_with("W/") {
            return !value.starts_with("W/") && !self.etag.starts_with("W/") && value == self.etag;
        }
        let date = parse_http_date(value).map(|t| t.timestamp());
        date.is_some() && date == self.last_modified
    }

    /// The 304 standing for the 200: `ETag`, `Cache-Control` and `Vary`.
    pub fn unchanged(&self) -> Response {
        let mut response = self.stamp(StatusCode::NOT_MODIFIED.into_response());
        if self.varies.encoding {
            response.headers_mut().append(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        response
    }

    /// Adds `ETag`, `Cache-Control` and, where the media type was negotiated,
    /// `Vary: accept` (the compression layer adds `accept-encoding` to what it compresses).
    pub fn stamp(&self, mut response: Response) -> Response {
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&self.etag) {
            headers.insert(header::ETAG, v);
        }
        if let Ok(v) = HeaderValue::from_str(&self.cache_control) {
            headers.insert(header::CACHE_CONTROL, v);
        }
        if self.varies.accept {
            headers.append(header::VARY, HeaderValue::from_static("accept"));
        }
        response
    }

    /// The whole sequence: a 304 when the client's copy is current, else the response
    /// `build` makes (only then is it run), stamped.
    pub async fn respond(
        &self,
        headers: &HeaderMap,
        build: impl std::future::Future<Output = Result<Response>>,
    ) -> Result<Response> {
        if self.current(headers) {
            return Ok(self.unchanged());
        }
        Ok(self.stamp(build.await?))
    }
}

/// What a representation's 200 varies on besides the target, which its 304 must repeat
/// (RFC 9110 §15.4.5: a 304 carries the `Vary` of the 200 it stands for).
#[derive(Debug, Clone, Copy, Default)]
pub struct Varies {
    /// The media type was chosen from `Accept` (no `format` parameter).
    pub accept: bool,
    /// The body passes the compression layer (which adds `Vary: accept-encoding` to a 200).
    pub encoding: bool,
}

/// A body in memory served as a stored object is: one byte range (suffix too), HEAD,
/// `If-Match` and `If-None-Match` (the `/compat` documents and chunks, directory listings).
pub struct Ranged<'a> {
    body: &'a Bytes,
    content_type: &'static str,
    head_only: bool,
    compressible: bool,
}

impl<'a> Ranged<'a> {
    /// A compressible body of `content_type`, for a GET.
    pub fn new(body: &'a Bytes, content_type: &'static str) -> Self {
        Self { body, content_type, head_only: false, compressible: true }
    }

    /// Answers a HEAD: the headers of the GET, no body.
    #[must_use]
    pub fn head_only(mut self, head_only: bool) -> Self {
        self.head_only = head_only;
        self
    }

    /// Never compressed (bytes that are compressed already).
    #[must_use]
    pub fn uncompressed(mut self) -> Self {
        self.compressible = false;
        self
    }

    /// The response under `validators` (their `Vary` is set here) for a request with
    /// `headers`.
    pub fn respond(self, validators: Validators, headers: &HeaderMap) -> Result<Response> {
        let validators = validators.varying(Varies { accept: false, encoding: self.compressible });
        if !validators.allows(headers) {
            return Err(Error::PreconditionFailed(format!(
                "the object has ETag {}, which the request's If-Match does not allow",
                validators.etag()
            )));
        }
        let accept_ranges = |mut response: Response| {
            response.headers_mut().insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            response
        };
        if validators.current(headers) {
            return Ok(accept_ranges(validators.unchanged()));
        }
        let size = self.body.len() as u64;
        let range = headers
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(ByteRange::parse)
            .filter(|_| validators.range_allowed(headers));
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
        let mut response = if self.head_only {
            status.into_response()
        } else {
            (status, self.body.slice(part.start as usize..part.end as usize)).into_response()
        };
        let h = response.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(part.end - part.start));
        if status == StatusCode::PARTIAL_CONTENT
            && let Ok(v) = HeaderValue::from_str(&format!("bytes {}-{}/{size}", part.start, part.end.saturating_sub(1)))
        {
            h.insert(header::CONTENT_RANGE, v);
        }
        if !self.compressible || status == StatusCode::PARTIAL_CONTENT {
            response.extensions_mut().insert(NoCompress);
        }
        Ok(accept_ranges(validators.stamp(response)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_compression_is_what_the_compression_layer_would_pick() {
        let accepts = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
            accepts_compression(&h)
        };
        for yes in ["gzip, deflate, br, zstd", "GZIP", "x-gzip", "zstd;q=0.5", "br, gzip;q=1"] {
            assert!(accepts(yes), "{yes}");
        }
        for no in ["identity", "gzip;q=0", "gzip; q=0.0, zstd;q=0", "*", "br, deflate", ""] {
            assert!(!accepts(no), "{no}");
        }
        assert!(!accepts_compression(&HeaderMap::new()));
    }

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
