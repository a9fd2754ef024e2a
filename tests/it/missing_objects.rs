//! "Missing means missing, briefly": a chunk or shard that storage reports missing reads as
//! the fill value, but that fact is remembered only `cache.missing_ttl_secs`, and the
//! responses holding such fill say so in their `max-age`. A transient 404 (injected by the
//! counting store decorator) or a chunk written after the read is served soon after.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::time::Duration;

use common::{CountingStore, app_with, config, expected, gather, get, memory_store};
use zarrd_core::store::Store;

/// The expected bytes of `s=0:rows,0:cols` of a 2-d conformance array.
fn corner(path: &str, rows: u64, cols: u64) -> Vec<u8> {
    let full = expected(&common::conformance_dir(), path);
    let width = full.shape[1];
    let indices: Vec<u64> = (0..rows).flat_map(|i| (0..cols).map(move |j| i * width + j)).collect();
    gather(&full, &indices)
}

async fn app(extra: &str) -> (axum::Router, std::sync::Arc<CountingStore>) {
    let mem = memory_store(&common::conformance_dir().join("data.zarr")).await;
    let counting = CountingStore::new(mem.backend());
    let store = Store::new(counting.clone(), object_store::path::Path::default());
    (app_with(vec![("conf", store)], config(extra)), counting)
}

#[tokio::test]
async fn a_transient_404_is_forgotten_after_the_missing_ttl() {
    for (cache, path, key) in [
        ("", "regular/u1_blosc", "regular/u1_blosc/c/0/0"),
        ("chunk_bytes = 0\n", "regular/u1_blosc", "regular/u1_blosc/c/0/0"),
        ("", "sharded/i2_rect_shards", "sharded/i2_rect_shards/c/0/0"),
    ] {
        let (app, store) = app(&format!("[cache]\nmissing_ttl_secs = 1\n{cache}")).await;
        let uri = format!("/v1/slice/conf/{path}?s=0:4,0:4&format=bin");
        let want = corner(path, 4, 4);
        store.vanish(key, 1);
        let fill = get(&app, &uri).await;
        assert_eq!(fill.status, 200, "{}", fill.describe());
        assert_ne!(fill.body.as_ref(), want.as_slice(), "{path}: the injected 404 reads as fill");
        assert_eq!(fill.header("cache-control"), "public, max-age=1", "{path}");
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let real = get(&app, &uri).await;
        assert_eq!(real.body.as_ref(), want.as_slice(), "{path}: served again once the missing TTL passed");
        assert_eq!(real.header("cache-control"), "public, max-age=60", "{path}");
        assert_ne!(real.header("etag"), fill.header("etag"), "{path}");
    }
}

#[tokio::test]
async fn a_missing_ttl_of_zero_never_remembers_a_404() {
    let (app, store) = app("[cache]\nmissing_ttl_secs = 0").await;
    let uri = "/v1/slice/conf/sharded/i2_rect_shards?s=0:4,0:4&format=bin";
    store.vanish("sharded/i2_rect_shards/c/0/0", 1);
    let fill = get(&app, uri).await;
    assert_eq!(fill.header("cache-control"), "public, max-age=0");
    let real = get(&app, uri).await;
    assert_eq!(real.body.as_ref(), corner("sharded/i2_rect_shards", 4, 4).as_slice());
}

#[tokio::test]
async fn listings_with_missing_chunks_expire_with_the_missing_ttl() {
    let (app, _) = app("").await;
    // u1_blosc has every chunk written; the manifest names the arrays with missing ones.
    let full = get(&app, "/v1/chunks/conf/regular/u1_blosc?limit=1").await;
    assert_eq!(full.header("cache-control"), "public, max-age=60");
    let manifest = common::manifest();
    let with_missing = manifest["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["features"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains("missing chunks")))
        .unwrap()["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let listing = get(&app, &format!("/v1/chunks/conf/{with_missing}?limit=10000")).await;
    assert!(listing.json()["chunks"].as_array().unwrap().iter().any(|c| c["state"] == "missing"), "{with_missing}");
    assert_eq!(listing.header("cache-control"), "public, max-age=5");
}
