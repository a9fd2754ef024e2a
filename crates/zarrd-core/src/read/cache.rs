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

use std::hash::Hash;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;

use crate::ops::caches::{Cache, get_or_try_load, hasher};
use crate::ops::metrics;
use crate::read::object_version::ObjectVersion;
use crate::zarr::codec::ShardIndex;

/// [`get_or_try_load`], counting a hit when the value was there or another caller loaded
/// it, and a miss when `load` ran here.
async fn counted_load<K, V, E, F>(
    cache: &Cache<K, V>,
    name: &'static str,
    key: K,
    load: impl FnOnce() -> F,
) -> Result<V, Arc<E>>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    E: Send + Sync + 'static,
    F: Future<Output = Result<V, E>>,
{
    let mut missed = false;
    let result = get_or_try_load(cache, key, || {
        missed = true;
        load()
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

impl<K, V: MaybeMissing> Expiry<K, V> for Lifetimes {
    fn expire_after_create(&self, _: &K, value: &V, _: Instant) -> Option<Duration> {
        Some(if value.is_missing() { self.missing } else { self.present })
    }

    // A replaced entry (missing → present after a write, or a new version) starts afresh.
    fn expire_after_update(&self, key: &K, value: &V, now: Instant, _: Option<Duration>) -> Option<Duration> {
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

/// The decoded-chunk cache's key: a whole stored chunk (by its object), or an inner chunk
/// of a shard (by its byte range in one version of the shard, so a rewritten shard never
/// hits stale entries).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkKey {
    pub object: ObjectKey,
    pub inner: Option<InnerChunk>,
}

/// Where an inner chunk's bytes are in one version of its shard.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InnerChunk {
    pub range: Range<u64>,
    pub shard_version: String,
}

impl ChunkKey {
    /// The key of the whole stored chunk `key` of `dataset`.
    pub fn whole(dataset: &Arc<str>, key: &str) -> Self {
        Self { object: (Arc::clone(dataset), key.to_owned()), inner: None }
    }

    /// The key of the inner chunk at `range` of version `shard_version` of shard `key`.
    pub fn inner(dataset: &Arc<str>, key: &str, range: Range<u64>, shard_version: &str) -> Self {
        let inner = InnerChunk { range, shard_version: shard_version.to_owned() };
        Self { object: (Arc::clone(dataset), key.to_owned()), inner: Some(inner) }
    }

    /// The bytes the key holds, roughly (for the cache's weigher).
    fn weight(&self) -> usize {
        self.object.1.len() + self.inner.as_ref().map_or(0, |i| i.shard_version.len() + 16)
    }
}

/// A shard index, or `None` for a shard object that does not exist.
pub type CachedIndex = Option<Arc<ShardIndex>>;

/// Decoded shard indexes, so a hot inner chunk costs one ranged read.
#[derive(Clone)]
pub struct ShardIndexCache {
    cache: Arc<Cache<ObjectKey, CachedIndex>>,
}

impl ShardIndexCache {
    pub fn new(capacity_bytes: u64, lifetimes: Lifetimes) -> Self {
        let cache = moka::future::Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|k: &ObjectKey, v: &CachedIndex| {
                let value = v.as_ref().map_or(0, |i| i.weight());
                u32::try_from(k.1.len() + k.0.len() + 64 + value).unwrap_or(u32::MAX)
            })
            .expire_after(lifetimes)
            .build_with_hasher(hasher());
        Self { cache: Arc::new(cache) }
    }

    /// The cached index, or the result of `load` (shared by concurrent callers).
    pub async fn get_or_load<E, F>(&self, key: ObjectKey, load: impl FnOnce() -> F) -> Result<CachedIndex, Arc<E>>
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
    cache: Option<Arc<Cache<ChunkKey, Arc<DecodedChunk>>>>,
}

impl ChunkCache {
    pub fn new(capacity_bytes: u64, lifetimes: Lifetimes) -> Self {
        let cache = (capacity_bytes > 0).then(|| {
            moka::future::Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|k: &ChunkKey, v: &Arc<DecodedChunk>| {
                    let data = v.data.as_ref().map_or(0, bytes::Bytes::len);
                    let size = k.weight() + v.version.as_str().len() + data + 96;
                    u32::try_from(size).unwrap_or(u32::MAX)
                })
                .expire_after(lifetimes)
                .build_with_hasher(hasher())
        });
        Self { cache: cache.map(Arc::new) }
    }

    pub fn enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// The cached chunk, without loading (a hit is counted; the caller counts a miss when
    /// it loads the chunk itself).
    pub async fn peek(&self, key: &ChunkKey) -> Option<Arc<DecodedChunk>> {
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
    pub async fn get_or_load<E, F>(&self, key: ChunkKey, load: impl FnOnce() -> F) -> Result<Arc<DecodedChunk>, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<Arc<DecodedChunk>, E>>,
    {
        let Some(cache) = &self.cache else { return load().await.map_err(Arc::new) };
        counted_load(cache, "chunk", key, load).await
    }

    pub async fn insert(&self, key: ChunkKey, chunk: Arc<DecodedChunk>) {
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
        Self {
            cache: Arc::new(
                moka::future::Cache::builder()
                    .max_capacity(max_entries)
                    .expire_after(lifetimes)
                    .build_with_hasher(hasher()),
            ),
        }
    }

    pub async fn get(&self, key: &ObjectKey) -> Option<ObjectVersion> {
        self.cache.get(key).await
    }

    pub async fn insert(&self, key: ObjectKey, version: ObjectVersion) {
        self.cache.insert(key, version).await;
    }

    /// Records `version` as the one last seen at `key`, leaving an unchanged entry as it
    /// is: an insert is a write to the cache, and a map-major point series that wrote one
    /// for each of its 1,096 cached chunks spent a third of its instructions on them
    /// (docs/performance.md "Per-request cost, counted"). An entry not refreshed expires
    /// sooner, never later.
    pub async fn record(&self, key: ObjectKey, version: ObjectVersion) {
        if self.cache.get(&key).await.as_ref() != Some(&version) {
            self.cache.insert(key, version).await;
        }
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

/// A view chunk: chunk `coords` of the view of array `path` of `dataset`, whose metadata
/// document has digest `digest`, cut in chunks of `chunk_shape`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewChunkKey {
    pub dataset: Arc<str>,
    pub path: String,
    pub digest: u128,
    pub chunk_shape: Vec<u64>,
    pub coords: Vec<u64>,
}

impl ViewChunkKey {
    /// The bytes the key holds, roughly (for the cache's weigher).
    fn weight(&self) -> usize {
        self.path.len() + 16 + 8 * (self.chunk_shape.len() + self.coords.len())
    }
}

/// Encoded view chunks, weighed in bytes, so a chunk assembled and re-encoded once is served
/// from memory afterwards; capacity 0 turns it off. Entries are keyed by the array's
/// metadata digest, so a rewritten `zarr.json` never hits old chunks; a rewritten chunk is
/// seen when its entry expires (the metadata TTL, or the missing TTL for a 404).
#[derive(Clone)]
pub struct ViewChunkCache {
    cache: Option<Arc<Cache<ViewChunkKey, Arc<ViewEntry>>>>,
}

impl ViewChunkCache {
    pub fn new(capacity_bytes: u64, lifetimes: Lifetimes) -> Self {
        let cache = (capacity_bytes > 0).then(|| {
            moka::future::Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|k: &ViewChunkKey, v: &Arc<ViewEntry>| {
                    let size = k.weight() + v.etag.len() + v.bytes.as_ref().map_or(0, bytes::Bytes::len) + 96;
                    u32::try_from(size).unwrap_or(u32::MAX)
                })
                .expire_after(lifetimes)
                .build_with_hasher(hasher())
        });
        Self { cache: cache.map(Arc::new) }
    }

    /// The cached entry, or the result of `load` shared by concurrent callers.
    pub async fn get_or_load<E, F>(&self, key: ViewChunkKey, load: impl FnOnce() -> F) -> Result<Arc<ViewEntry>, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<Arc<ViewEntry>, E>>,
    {
        let Some(cache) = &self.cache else { return load().await.map_err(Arc::new) };
        counted_load(cache, "view_chunk", key, load).await
    }

    /// Weighted size in bytes.
    pub fn size(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.weighted_size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole chunk, and an inner chunk of each range and shard version, are entries of
    /// their own: no store key can be mistaken for another's inner chunk.
    #[test]
    fn chunk_keys_tell_whole_and_inner_chunks_apart() {
        let ds: Arc<str> = "ds".into();
        let whole = ChunkKey::whole(&ds, "a/c/0");
        let inner = ChunkKey::inner(&ds, "a/c/0", 0..10, "\"v1\"");
        assert_ne!(whole, inner);
        assert_ne!(ChunkKey::whole(&ds, "a/c/0#0-10@\"v1\""), inner, "a key that reads like an inner chunk's");
        assert_ne!(inner, ChunkKey::inner(&ds, "a/c/0", 0..10, "\"v2\""), "a rewritten shard");
        assert_ne!(inner, ChunkKey::inner(&ds, "a/c/0", 0..11, "\"v1\""));
        assert_ne!(whole, ChunkKey::whole(&"other".into(), "a/c/0"));
        assert_eq!(inner, ChunkKey::inner(&ds, "a/c/0", 0..10, "\"v1\""));
        let set: std::collections::HashSet<ChunkKey> = [whole.clone(), inner.clone(), whole].into_iter().collect();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn view_chunk_keys_name_every_part() {
        let key = |path: &str, digest: u128, shape: &[u64], coords: &[u64]| ViewChunkKey {
            dataset: "ds".into(),
            path: path.to_owned(),
            digest,
            chunk_shape: shape.to_vec(),
            coords: coords.to_vec(),
        };
        let base = key("a", 1, &[4, 4], &[0, 1]);
        assert_eq!(base, key("a", 1, &[4, 4], &[0, 1]));
        for other in [
            key("b", 1, &[4, 4], &[0, 1]),
            key("a", 2, &[4, 4], &[0, 1]),
            key("a", 1, &[4, 2], &[0, 1]),
            key("a", 1, &[4, 4], &[1, 0]),
        ] {
            assert_ne!(base, other);
        }
    }
}
