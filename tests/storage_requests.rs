//! How many storage requests reads cost, pinned with a counting store decorator.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

mod common;

use std::sync::Arc;

use common::{CountingStore, app_with, config, get, get_with, memory_store};
use zarrd::store::Store;

async fn counting_app(extra: &str) -> (axum::Router, Arc<CountingStore>) {
    let mem = memory_store(&common::conformance_dir().join("data.zarr")).await;
    // Reach the in-memory backend through the counting decorator.
    let backend = mem.backend();
    let counting = CountingStore::new(backend);
    let store = Store::new(counting.clone(), object_store::path::Path::default());
    (app_with(vec![("conf", store)], config(extra)), counting)
}

const INNER: &str = "/v1/slice/conf/sharded/i2_rect_shards?s=0:5,0:5";

#[tokio::test]
async fn cold_inner_chunk_is_index_plus_one_range_and_hot_is_one() {
    let (app, store) = counting_app("").await;
    // Warm the metadata cache with another array's shard so only i2's data reads count.
    assert_eq!(get(&app, "/v1/arrays/conf/sharded/i2_rect_shards").await.status, 200);
    let before = store.total();
    assert_eq!(get(&app, INNER).await.status, 200);
    assert_eq!(store.total() - before, 2, "cold: one suffix read of the index + one range: {:?}", store.counts());
    let before = store.total();
    assert_eq!(get(&app, INNER).await.status, 200);
    assert_eq!(store.total() - before, 1, "hot: the index is cached: {:?}", store.counts());
}

#[tokio::test]
async fn concurrent_cold_requests_share_one_index_read() {
    let (app, store) = counting_app("").await;
    assert_eq!(get(&app, "/v1/arrays/conf/sharded/i2_rect_shards").await.status, 200);
    let (gets_before, ..) = store.counts();
    let requests = (0..64).map(|_| {
        let app = app.clone();
        tokio::spawn(async move { get(&app, INNER).await.status })
    });
    for r in futures::future::join_all(requests).await {
        assert_eq!(r.unwrap(), 200);
    }
    let (gets, ..) = store.counts();
    // 64 range reads of the inner chunk (If-Match GETs) + exactly one index read.
    assert_eq!(gets - gets_before, 64 + 1, "{:?}", store.counts());
}

#[tokio::test]
async fn a_revalidated_slice_needs_no_storage_reads() {
    let (app, store) = counting_app("").await;
    for uri in [INNER, "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:20", "/v1/slice/conf/rectilinear/f4?s=5:25,::7"]
    {
        let first = get(&app, uri).await;
        assert_eq!(first.status, 200);
        let before = store.total();
        let again = get_with(&app, uri, &[("if-none-match", first.header("etag"))]).await;
        assert_eq!(again.status, 304, "{uri}");
        assert_eq!(store.total(), before, "{uri}: 304 without storage reads: {:?}", store.counts());
    }
}

#[tokio::test]
async fn adjacent_inner_chunks_of_a_shard_are_one_request() {
    let (app, store) = counting_app("").await;
    assert_eq!(get(&app, "/v1/arrays/conf/sharded/i2_rect_shards").await.status, 200);
    // Shard c/0/0 holds rows 0..10 and columns 0..50 as 5x5 inner chunks: read all 20.
    let before = store.total();
    assert_eq!(get(&app, "/v1/slice/conf/sharded/i2_rect_shards?s=0:10,0:50").await.status, 200);
    assert_eq!(store.total() - before, 2, "index + one coalesced range read: {:?}", store.counts());
}
