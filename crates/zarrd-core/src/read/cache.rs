//! Caches as small newtypes over moka, weighed in bytes: concurrent misses for the same
//! key share one load (`try_get_with`) and errors are never cached.
//!
//! Each holds its moka cache behind one `Arc`: a reader is made for every request and
//! clones these handles, and a moka cache's own clone bumps several shared counts (its
//! inner state and its channels), which all cores then write (`docs/performance.md`,
//! "Every core").
//!
//! "This object does not exist" is remembered only briefly (`cache.missing_ttl_secs`): a
//! transient 404 from storage, or a chunk a writer adds to a live dataset, must not be
//! served as fill for longer than that.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;
use moka::future::Cache;

use crate::ops::metrics;
use crate::read::object_version::ObjectVersion;
use crate::zarr::codec::ShardIndex;

/// `try_get_with` that counts a hit when another caller (or an earlier request) had
/// already loaded the value, and a miss when `load` ran here.
async fn counted_load<V, E, F>(
    cache: &Cache<ObjectKey, V>,
    name: &'static str,
    key: ObjectKey,
    load: F,
) -> Result<V, Arc<E>>
where
    V: Clone + Send + Sync + 'static,
    E: Send + Sync + 'static,
    F: Future<Output = Result<V, E>>,
{
    let mut missed = false;
    let result = cache
        .try_get_with(key, async {
            missed = true;
            load.await
        })
        .await;
    metrics::cache_lookup(name, !missed);
    result
}

/// How long an entry lives: `present` for objects that exist, `missing` for the record
/// that one does not.
#[derive(Debug, Clone, Copy)]
pub struct Lifetimes {
    pub present: Duration,
    pub missing: Duration,
}

/// A cached value that may record a missing object.
pub trait MaybeMissing {
    fn is_missing(&self) -> bool;
}

impl<V: MaybeMissing> Expiry<ObjectKey, V> for Lifetimes {
    fn expire_after_create(&self, _: &ObjectKey, value: &V, _: Instant) -> Option<Duration> {
        Some(if value.is_missing() { self.missing } else { self.present })
    }

    // A replaced entry (missing → present after a write, or a new version) starts afresh.
    fn expire_after_update(&self, key: &ObjectKey, value: &V, now: Instant, _: Option<Duration>) -> Option<Duration> {
        self.expire_after_create(key, value, now)
    }
}

impl MaybeMissing for CachedIndex {
    fn is_missing(&self) -> bool {
        self.is_none()
    }
}

impl MaybeMissing for Arc<DecodedChunk> {
    fn is_missing(&self) -> bool {
        self.data.is_none()
    }
}

impl MaybeMissing for ObjectVersion {
    fn is_missing(&self) -> bool {
        ObjectVersion::is_missing(self)
    }
}

/// Cache key: (dataset name, store key).
pub type ObjectKey = (Arc<str>, String);

/// A shard index, or `None` for a shard object that does not exist.
pub type CachedIndex = Option<Arc<ShardIndex>>;

/// Decoded shard indexes, so a hot inner chunk costs one ranged read.
#[derive(Clone)]
pub struct ShardIndexCache {
    cache: Arc<Cache<ObjectKey, CachedIndex>>,
}

impl ShardIndexCache {
    pub fn new(capacity_bytes: u64, lifetimes: Lifetimes) -> Self {
        let cache = Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|k: &ObjectKey, v: &CachedIndex| {
                let value = v.as_ref().map_or(0, |i| i.weight());
                u32::try_from(k.1.len() + k.0.len() + 64 + value).unwrap_or(u32::MAX)
            })
            .expire_after(lifetimes)
            .build();
        Self { cache: Arc::new(cache) }
    }

    /// The cached index, or the result of `load` (shared by concurrent callers).
    pub async fn get_or_load<E, F>(&self, key: ObjectKey, load: F) -> Result<CachedIndex, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<CachedIndex, E>>,
    {
        counted_load(&self.cache, "shard_index", key, load).await
    }

    /// The cached entry, without loading: `None` when not cached.
    pub async fn peek(&self, key: &ObjectKey) -> Option<CachedIndex> {
        self.cache.get(key).await
    }

    /// Drops a stale entry (the shard changed under us).
    pub async fn invalidate(&self, key: &ObjectKey) {
        self.cache.invalidate(key).await;
    }

    /// Weighted size in bytes.
    pub fn size(&self) -> u64 {
        self.cache.weighted_size()
    }
}

/// A decoded chunk (little-endian C-order elements at its declared shape), or the fact
/// that an unsharded chunk object does not exist, with the version it was read from.
#[derive(Debug)]
pub struct DecodedChunk {
    pub data: Option<bytes::Bytes>,
    pub version: ObjectVersion,
}

/// Decoded chunks for hot tiles, weighed in bytes; capacity 0 turns it off. Concurrent
/// misses of one chunk share one storage read and one decode.
#[derive(Clone)]
pub struct ChunkCache {
    cache: Option<Arc<Cache<ObjectKey, Arc<DecodedChunk>>>>,
}

impl ChunkCache {
    pub fn new(capacity_bytes: u64, lifetimes: Lifetimes) -> Self {
        let cache = (capacity_bytes > 0).then(|| {
            Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|k: &ObjectKey, v: &Arc<DecodedChunk>| {
                    let data = v.data.as_ref().map_or(0, bytes::Bytes::len);
                    let size = k.1.len() + v.version.as_str().len() + data + 96;
                    u32::try_from(size).unwrap_or(u32::MAX)
                })
                .expire_after(lifetimes)
                .build()
        });
        Self { cache: cache.map(Arc::new) }
    }

    pub fn enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// The cached chunk, without loading (a hit is counted; the caller counts a miss when
    /// it loads the chunk itself).
    pub async fn peek(&self, key: &ObjectKey) -> Option<Arc<DecodedChunk>> {
        let hit = self.cache.as_ref()?.get(key).await;
        if hit.is_some() {
            metrics::cache_lookup("chunk", true);
        }
        hit
    }

    /// Counts a miss served outside [`Self::get_or_load`].
    pub fn count_miss(&self) {
        if self.enabled() {
            metrics::cache_lookup("chunk", false);
        }
    }

    /// The cached chunk, or the result of `load` shared by concurrent callers. Without a
    /// cache, `load` simply runs.
    pub async fn get_or_load<E, F>(&self, key: ObjectKey, load: F) -> Result<Arc<DecodedChunk>, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<Arc<DecodedChunk>, E>>,
    {
        let Some(cache) = &self.cache else { return load.await.map_err(Arc::new) };
        counted_load(cache, "chunk", key, load).await
    }

    pub async fn insert(&self, key: ObjectKey, chunk: Arc<DecodedChunk>) {
        if let Some(cache) = &self.cache {
            cache.insert(key, chunk).await;
        }
    }

    /// Weighted size in bytes.
    pub fn size(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.weighted_size())
    }
}

/// The last seen version of stored chunk objects (or that they were missing), so a
/// conditional request can be answered 304 without storage reads. Entries expire with the
/// metadata TTL (missing ones sooner), bounding how long a rewritten chunk can go unnoticed.
#[derive(Clone)]
pub struct ObjectVersionCache {
    cache: Arc<Cache<ObjectKey, ObjectVersion>>,
}

impl ObjectVersionCache {
    pub fn new(max_entries: u64, lifetimes: Lifetimes) -> Self {
        Self { cache: Arc::new(Cache::builder().max_capacity(max_entries).expire_after(lifetimes).build()) }
    }

    pub async fn get(&self, key: &ObjectKey) -> Option<ObjectVersion> {
        self.cache.get(key).await
    }

    pub async fn insert(&self, key: ObjectKey, version: ObjectVersion) {
        self.cache.insert(key, version).await;
    }
}

/// An encoded chunk of a compatibility view with its `ETag`, or the record that its stored
/// data is missing.
#[derive(Debug)]
pub struct ViewEntry {
    pub bytes: Option<bytes::Bytes>,
    pub etag: String,
    /// Whether the stored bytes are served as they are (not re-encoded).
    pub passthrough: bool,
}

impl MaybeMissing for Arc<ViewEntry> {
    fn is_missing(&self) -> bool {
        self.bytes.is_none()
    }
}

/// Encoded view chunks, weighed in bytes, so a chunk assembled and re-encoded once is served
/// from memory afterwards; capacity 0 turns it off. Entries are keyed by the array's
/// metadata digest, so a rewritten `zarr.json` never hits old chunks; a rewritten chunk is
/// seen when its entry expires (the metadata TTL, or the missing TTL for a 404).
#[derive(Clone)]
pub struct ViewChunkCache {
    cache: Option<Arc<Cache<ObjectKey, Arc<ViewEntry>>>>,
}

impl ViewChunkCache {
    pub fn new(capacity_bytes: u64, lifetimes: Lifetimes) -> Self {
        let cache = (capacity_bytes > 0).then(|| {
            Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|k: &ObjectKey, v: &Arc<ViewEntry>| {
                    let size = k.1.len() + v.etag.len() + v.bytes.as_ref().map_or(0, bytes::Bytes::len) + 96;
                    u32::try_from(size).unwrap_or(u32::MAX)
                })
                .expire_after(lifetimes)
                .build()
        });
        Self { cache: cache.map(Arc::new) }
    }

    /// The cached entry, or the result of `load` shared by concurrent callers.
    pub async fn get_or_load<E, F>(&self, key: ObjectKey, load: F) -> Result<Arc<ViewEntry>, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<Arc<ViewEntry>, E>>,
    {
        let Some(cache) = &self.cache else { return load.await.map_err(Arc::new) };
        counted_load(cache, "view_chunk", key, load).await
    }

    /// Weighted size in bytes.
    pub fn size(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.weighted_size())
    }
}
