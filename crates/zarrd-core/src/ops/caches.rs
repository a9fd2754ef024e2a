//! Reading through a moka cache, the one way every cache of zarrd is read.

use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

/// A cache whose keys are hashed with foldhash (seeded per process) rather than std's
/// `SipHash`: a key (a dataset name, a store key and, for inner chunks, a byte range and a
/// shard version; a node's or coordinate array's path) is hashed on every lookup, and for
/// a point's series through 365 cached inner chunks `SipHash` cost an eighth of the
/// request's instructions (docs/performance.md "Per-request cost, counted"). For the
/// caches whose keys name what exists in storage — entries are made only by loads that
/// succeed — not free text a client chooses: flooding one bucket needs keys the store
/// holds, and the seed is random. The response cache, keyed by request targets, keeps
/// `SipHash`.
pub type Cache<K, V> = moka::future::Cache<K, V, foldhash::fast::RandomState>;

/// The hasher of a [`Cache`]: `builder…build_with_hasher(hasher())`.
pub fn hasher() -> foldhash::fast::RandomState {
    foldhash::fast::RandomState::default()
}

/// The cached value, or what `load` makes of a miss (once for concurrent callers:
/// `try_get_with`; an error is not cached).
///
/// A hit is looked up first and the loading future is made and kept on the heap only on
/// a miss: held inline, the load (a storage read, a decode) made every future that awaits
/// a cached value many KiB, moved at each hand-over — for a point's series through 365
/// cached inner chunks, a tenth of the request's instructions were such moves
/// (docs/performance.md "Per-request cost, counted").
pub async fn get_or_try_load<K, V, S, E, F>(
    cache: &moka::future::Cache<K, V, S>,
    key: K,
    load: impl FnOnce() -> F,
) -> Result<V, Arc<E>>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Clone + Send + Sync + 'static,
    E: Send + Sync + 'static,
    F: Future<Output = Result<V, E>>,
{
    if let Some(value) = cache.get(&key).await {
        return Ok(value);
    }
    Box::pin(cache.try_get_with(key, async { load().await })).await
}

#[cfg(test)]
mod tests {
    use super::get_or_try_load;

    #[tokio::test]
    async fn a_miss_loads_a_hit_does_not_and_an_error_is_not_kept() {
        let cache: moka::future::Cache<u32, u32> = moka::future::Cache::new(10);
        let failed: Result<u32, _> = get_or_try_load(&cache, 1, || async { Err::<u32, &str>("no") }).await;
        assert_eq!(*failed.unwrap_err(), "no");
        let mut loads = 0;
        for _ in 0..3 {
            let got = get_or_try_load(&cache, 1, || {
                loads += 1;
                async { Ok::<_, &str>(7) }
            })
            .await;
            assert_eq!(got.unwrap(), 7);
        }
        assert_eq!(loads, 1, "the value was loaded again although cached");
    }
}
