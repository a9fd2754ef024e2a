//! Caches as small newtypes over moka, weighed in bytes: concurrent misses for the same
//! key share one load (`try_get_with`) and errors are never cached.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::metrics;
use crate::zarr::codec::ShardIndex;

/// Cache key: (dataset name, store key).
pub type ObjectKey = (Arc<str>, String);

/// A shard index, or `None` for a shard object that does not exist.
pub type CachedIndex = Option<Arc<ShardIndex>>;

/// Decoded shard indexes, so a hot inner chunk costs one ranged read.
#[derive(Clone)]
pub struct ShardIndexCache {
    cache: Cache<ObjectKey, CachedIndex>,
}

impl ShardIndexCache {
    pub fn new(capacity_bytes: u64, ttl: Duration) -> Self {
        let cache = Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|k: &ObjectKey, v: &CachedIndex| {
                let value = v.as_ref().map_or(0, |i| i.weight());
                u32::try_from(k.1.len() + k.0.len() + 64 + value).unwrap_or(u32::MAX)
            })
            .time_to_live(ttl)
            .build();
        Self { cache }
    }

    /// The cached index, or the result of `load` (shared by concurrent callers).
    pub async fn get_or_load<E, F>(&self, key: ObjectKey, load: F) -> Result<CachedIndex, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<CachedIndex, E>>,
    {
        let mut missed = false;
        let result = self
            .cache
            .try_get_with(key, async {
                missed = true;
                load.await
            })
            .await;
        metrics::cache_lookup("shard_index", !missed);
        result
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

/// The last seen version of stored chunk objects ("-" when missing), so a conditional
/// request can be answered 304 without storage reads. Entries expire with the metadata
/// TTL, bounding how long a rewritten chunk can go unnoticed by validators.
#[derive(Clone)]
pub struct VersionCache {
    cache: Cache<ObjectKey, Arc<str>>,
}

impl VersionCache {
    pub fn new(max_entries: u64, ttl: Duration) -> Self {
        Self { cache: Cache::builder().max_capacity(max_entries).time_to_live(ttl).build() }
    }

    pub async fn get(&self, key: &ObjectKey) -> Option<Arc<str>> {
        self.cache.get(key).await
    }

    pub async fn insert(&self, key: ObjectKey, version: &str) {
        self.cache.insert(key, version.into()).await;
    }
}
