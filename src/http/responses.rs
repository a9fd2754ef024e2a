//! Whole responses of hot data requests, kept for a moment: a tile that many viewers ask
//! for again and again is then a lookup and a write of ready bytes — no routing, no
//! parsing of the selection, no shard-index or chunk-cache lookups, no headers to build.
//!
//! Only what can be replayed exactly is kept: `200` responses to plain `GET`s of array data
//! (`/v1/slice`, `/v1/chunk`, `/iiif`, `/maps`, `/zarr`, `/compat`) whose whole body is in memory and
//! at most [`MAX_BODY`], and that carry the configured `Cache-Control` (responses holding
//! fill for missing objects have a shorter one, and a writer may add those objects soon).
//! Conditional and range requests, and requests with credentials, always go through.
//! Access control (`auth`) runs before this layer: a kept response, even of a private
//! dataset, is only ever replayed to a request already allowed to read it.
//! The key holds every request header a response depends on ([`VARY`]: content negotiation,
//! CORS, and the host and scheme IIIF `info.json` builds its `id` from), so a compressed body,
//! another origin's CORS headers or another host's URLs never reach the wrong client.
//!
//! Entries live `cache.response_ttl_secs` (1 s by default, and never longer than the
//! metadata and shard-index lifetimes): a rewritten chunk is seen at most that much later
//! than without this cache.
//!
//! A response is kept when its request misses a second time within that lifetime — when
//! a kept copy would have been replayed — not at the first miss ([`Doorkeeper`]): most
//! requests of a data server are asked once, or again only minutes later (a point's
//! series, a scientist's slice), and keeping each for its lifetime cost more than the
//! lookup it might save: its key hashed into the cache, its headers copied, and its body
//! held past the write, so the next request's buffers came from fresh pages the kernel
//! had to clear (a point's series from cached chunks: 7 % more instructions and 12–19 %
//! more time a request, docs/performance.md "Questions near the data"). A hot tile is
//! replayed from its third request instead of its second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Body as _;
use moka::future::Cache;

use crate::config::Config;

/// The largest body kept. Larger reads are streamed (`read::STREAM_MIN_BYTES`) and
/// rarely repeated at the rates where skipping the read path matters.
pub const MAX_BODY: usize = 4 << 20;

/// How many request headers responses depend on besides the target ([`VARY`]).
const VARIES: usize = 6;

/// The request headers responses depend on besides the target.
const VARY: [header::HeaderName; VARIES] = [
    header::ACCEPT_ENCODING,
    header::ACCEPT,
    header::ORIGIN,
    header::HOST,
    header::HeaderName::from_static("x-forwarded-host"),
    header::HeaderName::from_static("x-forwarded-proto"),
];

/// What a response depends on besides the stored data: the target and the [`VARY`] headers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    target: String,
    vary: [Option<HeaderValue>; VARIES],
}

/// A kept `200` response.
struct Kept {
    headers: HeaderMap,
    body: Bytes,
}

/// The response cache (off when `cache.response_bytes` or its lifetime is 0).
pub struct Responses {
    /// The kept responses and the misses that decide what is kept.
    cache: Option<(Cache<Key, std::sync::Arc<Kept>>, Doorkeeper)>,
    cache_control: Option<HeaderValue>,
}

/// When each key last missed: a table of slots, each holding the high bits of the last
/// key hashed to it and that miss's time (milliseconds, wrapping every 4.6 hours). A key
/// missing again within the lifetime of a kept response finds its own bits there, recent
/// enough, and its response is kept. A slot remembers one key, so a key pushed out by
/// another is simply seen anew. The hash is foldhash, seeded per process: a client that
/// makes two keys share a slot only keeps them out of the cache a little longer.
struct Doorkeeper {
    slots: Box<[AtomicU64]>,
    hasher: foldhash::fast::RandomState,
    /// The lifetime of a kept response, in milliseconds (below the stamp's wrap).
    window_ms: u64,
}

/// The low bits of a slot: the time of the miss, in milliseconds.
const STAMP_BITS: u32 = 24;
const STAMP: u64 = (1 << STAMP_BITS) - 1;

impl Doorkeeper {
    /// About one slot per 4 KiB the cache may hold (a small tile or a point's series),
    /// between 1,024 and 1,048,576 of them.
    fn new(capacity_bytes: u64, window: Duration) -> Self {
        let slots = usize::try_from(capacity_bytes / 4096).unwrap_or(usize::MAX).clamp(1 << 10, 1 << 20);
        Self {
            slots: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            hasher: foldhash::fast::RandomState::default(),
            window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX).min(STAMP),
        }
    }

    /// Whether `key` missed before within the window (its response is to be kept now),
    /// noting this miss at `now_ms` (milliseconds on any steady clock).
    fn missed_recently(&self, key: &Key, now_ms: u64) -> bool {
        let (slot, tag) = self.slot(key);
        let stamp = now_ms & STAMP;
        let before = self.slots[slot].swap(tag | stamp, Ordering::Relaxed);
        before & !STAMP == tag && stamp.wrapping_sub(before) & STAMP < self.window_ms
    }

    /// The slot of `key` and the bits of its hash that the slot remembers (never 0, the
    /// empty slot's value).
    fn slot(&self, key: &Key) -> (usize, u64) {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(key) | 1 << 63;
        // usize holds at least 32 bits: the slot index is taken from those.
        (((hash >> 32) as usize) % self.slots.len(), hash & !STAMP)
    }
}

/// Milliseconds since the process first asked.
fn now_ms() -> u64 {
    static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);
    u64::try_from(START.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Request headers that make a response particular to one request or client: such
/// requests are neither answered from the cache nor kept.
const PARTICULAR: [header::HeaderName; 8] = [
    header::RANGE,
    header::IF_RANGE,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
    header::IF_MATCH,
    header::IF_UNMODIFIED_SINCE,
    header::AUTHORIZATION,
    header::COOKIE,
];

impl Responses {
    pub fn new(config: &Config) -> Self {
        let c = &config.cache;
        let ttl = c.response_ttl_secs.min(c.metadata_ttl_secs).min(c.shard_index_ttl_secs);
        let cache = (c.response_bytes > 0 && ttl > 0).then(|| {
            let lifetime = Duration::from_secs(ttl);
            let kept = Cache::builder()
                .max_capacity(c.response_bytes)
                .weigher(|k: &Key, v: &std::sync::Arc<Kept>| {
                    let headers: usize = v.headers.iter().map(|(n, v)| n.as_str().len() + v.len() + 32).sum();
                    u32::try_from(k.target.len() + headers + v.body.len() + 128).unwrap_or(u32::MAX)
                })
                .time_to_live(lifetime)
                .build();
            (kept, Doorkeeper::new(c.response_bytes, lifetime))
        });
        Self { cache, cache_control: HeaderValue::from_str(&config.http.cache_control).ok() }
    }

    /// Bytes held (moka's weighted size, which lags inserts a little).
    pub fn size(&self) -> u64 {
        self.cache.as_ref().map_or(0, |(kept, _)| kept.weighted_size())
    }

    /// Whether `response` may be kept and replayed to any request with the same key.
    fn keeps(&self, response: &Response) -> bool {
        response.status() == StatusCode::OK
            && response.body().size_hint().exact().is_some_and(|n| n <= MAX_BODY as u64)
            && !response.headers().contains_key(header::SET_COOKIE)
            && response.headers().get(header::CACHE_CONTROL) == self.cache_control.as_ref()
    }
}

/// The key of a request that may be answered from the cache.
fn key(request: &Request) -> Option<Key> {
    if request.method() != Method::GET {
        return None;
    }
    let path = request.uri().path();
    let headers = request.headers();
    if !crate::http::route::reads_data(crate::http::route::label(request))
        || PARTICULAR.iter().any(|h| headers.contains_key(h))
    {
        return None;
    }
    let target = request.uri().path_and_query().map_or(path, |pq| pq.as_str());
    // Behind a capability URL the target is the client's own (`/t/TOKEN/...`): a response
    // may hold URLs behind it (IIIF `info.json`), which no other client may be given.
    let target = match request.extensions().get::<crate::auth::CapabilityPath>() {
        Some(capability) => format!("{}{target}", capability.public_prefix()),
        None => target.to_owned(),
    };
    Some(Key { target, vary: VARY.map(|name| headers.get(name).cloned()) })
}

/// Middleware: answers from the cache, or runs the request and keeps what may be kept.
///
/// Over any state that holds the cache (the app's state handle, so that the layer clones
/// nothing other threads clone too).
pub async fn layer<S: AsRef<Responses>>(State(state): State<S>, request: Request, next: Next) -> Response {
    let responses = state.as_ref();
    let (Some((cache, doorkeeper)), Some(key)) = (&responses.cache, key(&request)) else {
        return next.run(request).await;
    };
    if let Some(kept) = cache.get(&key).await {
        zarrd_core::ops::metrics::cache_lookup("response", true);
        let mut response = Response::new(Body::from(kept.body.clone()));
        *response.headers_mut() = kept.headers.clone();
        return response;
    }
    zarrd_core::ops::metrics::cache_lookup("response", false);
    let keep = doorkeeper.missed_recently(&key, now_ms());
    let response = next.run(request).await;
    if !keep || !responses.keeps(&response) {
        return response;
    }
    // The body is already in memory (it has an exact size of at most MAX_BODY): collecting
    // it takes its one frame.
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => {
            let kept = Kept { headers: parts.headers.clone(), body: bytes.clone() };
            cache.insert(key, std::sync::Arc::new(kept)).await;
            zarrd_core::ops::metrics::cache_kept("response");
            Response::from_parts(parts, Body::from(bytes))
        }
        Err(e) => crate::error::Error::internal_from("the response body failed", e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Doorkeeper, Key, STAMP};

    fn key(target: &str) -> Key {
        Key { target: target.to_owned(), vary: Default::default() }
    }

    #[test]
    fn a_response_is_kept_when_its_key_misses_again_within_its_lifetime() {
        let door = Doorkeeper::new(0, Duration::from_secs(1));
        assert_eq!(door.slots.len(), 1024, "the smallest table");
        assert_eq!(Doorkeeper::new(64 << 20, Duration::from_secs(1)).slots.len(), 16384, "a slot per 4 KiB");
        let a = key("/v1/slice/d/a?s=0");
        assert!(!door.missed_recently(&a, 5_000), "a first miss is only noted");
        assert!(door.missed_recently(&a, 5_999), "again within the second: kept");
        assert!(door.missed_recently(&a, 6_500), "the kept one expired: kept again");
        assert!(!door.missed_recently(&a, 7_500), "a second after its last miss: not kept");
        assert!(!door.missed_recently(&a, 60_000), "nor a minute after");
        assert!(door.missed_recently(&a, 60_100));
        // The stamp wraps every 2^24 ms without losing a pair of misses across the wrap.
        assert!(!door.missed_recently(&a, 3 * (STAMP + 1) - 200));
        assert!(door.missed_recently(&a, 3 * (STAMP + 1) + 200));
        // The headers are part of the key: the same target with another encoding is new.
        let mut gzip = key("/v1/slice/d/a?s=0");
        gzip.vary[0] = Some(axum::http::HeaderValue::from_static("gzip"));
        assert!(!door.missed_recently(&gzip, 100_000));
        // Keys in other slots leave it alone; a key in its slot pushes it out.
        let (slot, _) = door.slot(&a);
        let others = (0..).map(|i| key(&format!("/v1/slice/d/b?s={i}")));
        let elsewhere = others.clone().find(|k| door.slot(k).0 != slot).unwrap();
        let same = others.take(1 << 20).find(|k| door.slot(k).0 == slot).expect("a key in every slot");
        assert!(!door.missed_recently(&a, 200_000));
        assert!(!door.missed_recently(&elsewhere, 200_001));
        assert!(door.missed_recently(&a, 200_002));
        assert!(!door.missed_recently(&same, 200_003));
        assert!(!door.missed_recently(&a, 200_004), "pushed out: noted anew");
        assert!(door.missed_recently(&a, 200_005));
    }

    #[test]
    fn a_lifetime_beyond_the_stamp_is_cut_to_it() {
        let door = Doorkeeper::new(0, Duration::from_hours(24 * 365));
        assert_eq!(door.window_ms, STAMP);
        let a = key("/a");
        assert!(!door.missed_recently(&a, 0));
        assert!(door.missed_recently(&a, STAMP - 1));
    }
}
