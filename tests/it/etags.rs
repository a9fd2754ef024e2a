//! `ETags` are a contract: clients and caches keep them, so the same data must always be
//! served under the same `ETag`, whatever the server's internals. Each fixture is loaded
//! into an in-memory store in sorted key order (`common::memory_store`), which gives every
//! object the same version
//! (its `ETag`: the store's insertion counter) on every run; the `ETags` below were taken
//! from the server before object versions, chunk states and cache keys became types, and
//! cover every route that hashes object versions (missing objects included), the rendered
//! image keys (IIIF planes, composites and labels; map tiles), view chunks and the chunk
//! listing's JSON.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{app_with, config, get};

async fn app(extra: &str) -> axum::Router {
    let fixtures = common::fixtures();
    let stores = vec![
        ("conf", common::memory_store(&fixtures.join("conformance/data.zarr")).await),
        ("s", common::memory_store(&fixtures.join("strings/data.zarr")).await),
        ("ozp05_5d", common::memory_store(&fixtures.join("ome/images/ozp05_5d.ome.zarr")).await),
        ("regional", common::memory_store(&fixtures.join("maps/regional.zarr")).await),
    ];
    app_with(stores, config(extra))
}

/// View chunks that are the stored (or inner) chunks of every regular grid, however small,
/// and tiny elsewhere (as in `compat.rs`), so view chunks take every path.
const SMALL_VIEW_CHUNKS: &str = "[compat]\nmin_chunk_bytes = 1\nchunk_bytes = 64\n";

/// Each URI and the `ETag` it is served with.
const ETAGS: &[(&str, &str)] = &[
    // Missing chunks only, then present and missing ones.
    ("/v1/slice/conf/regular/f4_zstd_partial?s=0:8,32:53&format=bin", r#""7b591349e8db54db4df2d847a06932c5""#),
    ("/v1/slice/conf/regular/f4_zstd_partial?s=0:20,0:40", r#""40ba59333e0d1daa99b106ac426c849c""#),
    ("/v1/slice/conf/sharded/i2_rect_shards?s=0:4,0:4&format=bin", r#""2ebc42f14c95eec9f956d2129a1cb3b7""#),
    (
        "/v1/slice/conf/sharded/f8_index_start_gzip_empty?s=0:64,0:48&format=bin",
        r#""e427487c5012097352bb5bb1f7102cae""#,
    ),
    ("/v1/slice/s/words_1d_zstd?s=0:5&format=json", r#""ee5edcae61a3c6367fccf51a3c5d48b7""#),
    ("/v1/slice/s/grid_2d_missing", r#""ca647cfd947e34752d6784bf41874995""#),
    ("/v1/chunk/conf/regular/f4_zstd_partial?c=0,1", r#""10e9139f3e8b44419b9c1f42dda6f81b""#),
    ("/v1/chunk/conf/sharded/i2_rect_shards?c=0,0", r#""476c1da2e2620fb0255e05eef226ba28""#),
    ("/compat/v3/conf/regular/f4_zstd_partial/c/0/1", r#""c9c99766bc74191fbd044b047d17bf26""#),
    ("/compat/v3/conf/sharded/i2_rect_shards/c/0/0", r#""c22caa950454257aa28362073e527071""#),
    ("/compat/v3/conf/rectilinear/u1_months_3d/c/0/0/0", r#""654dcac6f92256128b59bdd278abc3d7""#),
    ("/compat/v3/s/grid_2d_missing/c/0/0", r#""87f68f96ea81983b341575535f217c77""#),
    ("/iiif/3/conf%2Fregular%2Ff4_zstd_partial/full/max/0/default.png", r#""547bc0c6ed20632f6ae8624e0bda1e43""#),
    (
        "/iiif/3/conf%2Fregular%2Ff4_zstd_partial/32,0,21,8/max/0/default.png?vmin=0&vmax=1",
        r#""5fb6eb633d58fb2958fc0c2885da8af5""#,
    ),
    ("/iiif/3/ozp05_5d%2F%5Bt%3D1%2Cz%3D1%5D/full/max/0/default.png", r#""feb12853497153362cd668364361a5f5""#),
    (
        "/iiif/3/ozp05_5d%2F%5Bt%3D1%2Cz%3D1%5D/full/max/0/default.png?channels=2,0&windows=100:2000,&colors=FFFFFF,",
        r#""7c8f13db3b50cc129f78fcb459deef43""#,
    ),
    ("/iiif/3/ozp05_5d%2Flabels%2Fcells/full/max/0/default.png", r#""a439917d45eac4c4bf1896330afa65fc""#),
    ("/maps/regional%2Fsst/2/2/1.png", r#""460d707e93ac5c7915f03db7ba2d3088""#),
    ("/maps/regional%2Fsst/2/2/1.npy", r#""629d4d4d1733aa44fe5ba5d503401245""#),
    ("/maps/regional%2Fsst/2/2/1.png?colormap=magma&vmin=250&vmax=300", r#""ea90095ee5470fbd5748ca855ff23662""#),
];

#[tokio::test]
async fn the_same_data_keeps_its_etags() {
    let served = app(SMALL_VIEW_CHUNKS).await;
    let mut got = Vec::new();
    for (uri, _) in ETAGS {
        let reply = get(&served, uri).await;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
        got.push((*uri, reply.header("etag").to_owned()));
    }
    // Once more, from the caches: the same again; and a revalidation (answered from the
    // versions alone where a route can) is a 304.
    for (uri, etag) in &got {
        assert_eq!(get(&served, uri).await.header("etag"), etag, "{uri}, cached");
        let again = common::get_with(&served, uri, &[("if-none-match", etag)]).await;
        assert_eq!(again.status, 304, "{uri}: {}", again.describe());
    }
    let fresh = app(SMALL_VIEW_CHUNKS).await;
    for (uri, etag) in &got {
        let again = common::get_with(&fresh, uri, &[("if-none-match", etag)]).await;
        assert_eq!(again.status, 304, "{uri}, revalidated first: {}", again.describe());
    }
    let mismatched: Vec<String> = ETAGS
        .iter()
        .zip(&got)
        .filter(|((_, want), (_, got))| want != got)
        .map(|((uri, _), (_, got))| format!("    (\"{uri}\", r#\"{got}\"#),"))
        .collect();
    assert!(mismatched.is_empty(), "ETags changed:\n{}", mismatched.join("\n"));
}

/// Chunk listings (`/v1/chunks`) and the JSON of each: chunk states are `present` or
/// `missing`, inner chunks `present` or `empty`, exactly as written here. Compared as JSON
/// values: the order of an object's members is not part of the contract.
const LISTINGS: &[(&str, &str)] = &[
    (
        "/v1/chunks/conf/regular/f4_zstd_partial?s=0:16,16:48",
        r#"{"chunks":[{"coords":[0,1],"key":"regular/f4_zstd_partial/c/0/1","origin":[0,16],"shape":[8,16],"size":480,"state":"present"},{"coords":[0,2],"key":"regular/f4_zstd_partial/c/0/2","origin":[0,32],"shape":[8,16],"state":"missing"},{"coords":[1,1],"key":"regular/f4_zstd_partial/c/1/1","origin":[8,16],"shape":[8,16],"size":480,"state":"present"},{"coords":[1,2],"key":"regular/f4_zstd_partial/c/1/2","origin":[8,32],"shape":[8,16],"state":"missing"}],"grid":"regular","next":null}"#,
    ),
    (
        "/v1/chunks/conf/sharded/f8_index_start_gzip_empty?s=16:40,0:16&inner=true",
        r#"{"chunks":[{"coords":[0,0],"inner":[{"coords":[2,0],"nbytes":293,"offset":2336,"origin":[16,0],"shape":[8,8],"state":"present"},{"coords":[2,1],"nbytes":292,"offset":2629,"origin":[16,8],"shape":[8,8],"state":"present"},{"coords":[3,0],"nbytes":null,"offset":null,"origin":[24,0],"shape":[8,8],"state":"empty"},{"coords":[3,1],"nbytes":null,"offset":null,"origin":[24,8],"shape":[8,8],"state":"empty"}],"key":"sharded/f8_index_start_gzip_empty/c/0/0","origin":[0,0],"shape":[32,24],"size":4285,"state":"present"},{"coords":[1,0],"inner":[{"coords":[4,0],"nbytes":null,"offset":null,"origin":[32,0],"shape":[8,8],"state":"empty"},{"coords":[4,1],"nbytes":null,"offset":null,"origin":[32,8],"shape":[8,8],"state":"empty"}],"key":"sharded/f8_index_start_gzip_empty/c/1/0","origin":[32,0],"shape":[32,24],"size":3117,"state":"present"}],"grid":"regular","next":null}"#,
    ),
    (
        "/v1/chunks/s/grid_2d_missing?limit=3",
        r#"{"chunks":[{"coords":[0,0],"key":"grid_2d_missing/c/0/0","origin":[0,0],"shape":[4,3],"size":160,"state":"present"},{"coords":[0,1],"key":"grid_2d_missing/c/0/1","origin":[0,3],"shape":[4,3],"size":141,"state":"present"},{"coords":[0,2],"key":"grid_2d_missing/c/0/2","origin":[0,6],"shape":[4,1],"size":106,"state":"present"}],"grid":"regular","next":"3.3e9a9682"}"#,
    ),
];

#[tokio::test]
async fn chunk_listings_keep_their_json() {
    let app = app("").await;
    let mut mismatched = Vec::new();
    for (uri, want) in LISTINGS {
        let reply = get(&app, uri).await;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
        let body = std::str::from_utf8(&reply.body).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(body).unwrap();
        if parsed != serde_json::from_str::<serde_json::Value>(want).unwrap() {
            mismatched.push(format!("    (\"{uri}\", r#\"{body}\"#),"));
        }
    }
    assert!(mismatched.is_empty(), "listings changed:\n{}", mismatched.join("\n"));
}
