//! The memory budget and streamed bodies: large raw results are streamed band by band
//! (bit-exact, with the length known up front, and a failure mid-body cuts the body short
//! instead of sending wrong bytes); requests that need more memory than is free wait, then
//! get 503; a request that needs more than the whole budget is 413; a stalled reader gives
//! its memory back after the idle timeout.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::time::Duration;

use axum::body::Body;
use common::{app_with, config, get};
use http_body_util::BodyExt;
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use tower::ServiceExt;
use zarrd_core::store::Store;

const ROWS: u64 = 2048;
const COLS: u64 = 1024;
const CHUNK_ROWS: u64 = 128;

/// Element (i, j) of the test array, from first principles.
fn value(i: u64, j: u64) -> u32 {
    (i * COLS + j) as u32 ^ 0x5a5a_0000
}

/// A 2048 x 1024 u32 array (8 MiB) in chunks of 128 full rows, stored raw (`bytes`
/// codec), plus a 1-d array with one 64 MiB chunk, written by hand.
async fn store() -> (Store, std::sync::Arc<InMemory>) {
    let mem = std::sync::Arc::new(InMemory::new());
    let put = |key: &str, bytes: Vec<u8>| {
        let mem = mem.clone();
        let key = key.to_owned();
        async move { mem.put(&Path::from(key), bytes.into()).await.unwrap() }
    };
    put("zarr.json", br#"{"zarr_format": 3, "node_type": "group"}"#.to_vec()).await;
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [ROWS, COLS], "data_type": "uint32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [CHUNK_ROWS, COLS]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]
    });
    put("big/zarr.json", doc.to_string().into_bytes()).await;
    for c in 0..ROWS / CHUNK_ROWS {
        let chunk: Vec<u8> = (c * CHUNK_ROWS..(c + 1) * CHUNK_ROWS)
            .flat_map(|i| (0..COLS).flat_map(move |j| value(i, j).to_le_bytes()))
            .collect();
        put(&format!("big/c/{c}/0"), chunk).await;
    }
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [1 << 24], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1 << 24]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}]
    });
    put("wide/zarr.json", doc.to_string().into_bytes()).await;
    put("wide/c/0", zstd::encode_all(vec![0u8; 4 << 24].as_slice(), 1).unwrap()).await;
    (Store::new(mem.clone(), Path::default()), mem)
}

/// `sharded`: the same 2048 x 1024 u32 values in 16 shards of 128 full rows, each holding
/// 4 inner chunks of 32 rows (`bytes`), index at the end (`bytes` + `crc32c`), written by
/// hand from the sharding spec.
async fn put_sharded(mem: &InMemory) {
    put_sharded_doc(mem, "sharded", [CHUNK_ROWS / 4, COLS]).await;
    for s in 0..ROWS / CHUNK_ROWS {
        mem.put(&Path::from(format!("sharded/c/{s}/0")), shard(s, 0).into()).await.unwrap();
    }
}

/// `name/zarr.json`: the 2048 x 1024 u32 array in shards of 128 full rows holding inner
/// chunks of `inner` (`bytes`), index at the end (`bytes` + `crc32c`).
async fn put_sharded_doc(mem: &InMemory, name: &str, inner: [u64; 2]) {
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [ROWS, COLS], "data_type": "uint32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [CHUNK_ROWS, COLS]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}]
    });
    mem.put(&Path::from(format!("{name}/zarr.json")), doc.to_string().into_bytes().into()).await.unwrap();
}

/// Shard `s` of `sharded`, its values offset by `delta`.
fn shard(s: u64, delta: u32) -> Vec<u8> {
    shard_of((0..4).map(|inner| {
        let first = s * CHUNK_ROWS + inner * CHUNK_ROWS / 4;
        (first..first + CHUNK_ROWS / 4)
            .flat_map(|i| (0..COLS).flat_map(move |j| (value(i, j) + delta).to_le_bytes()))
            .collect()
    }))
}

/// A shard holding `chunks` in order, from the sharding spec: the chunks, then the index
/// (offset and length of each, little-endian u64) and its CRC-32C.
fn shard_of(chunks: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
    let (mut data, mut index) = (Vec::new(), Vec::new());
    for chunk in chunks {
        index.extend((data.len() as u64).to_le_bytes());
        index.extend((chunk.len() as u64).to_le_bytes());
        data.extend(chunk);
    }
    let crc = crc32c::crc32c(&index);
    data.extend(index);
    data.extend(crc.to_le_bytes());
    data
}

#[tokio::test]
async fn sharded_streams_fetch_rows_of_shards_as_they_go() {
    let (store, mem) = store().await;
    put_sharded(&mem).await;
    let app = app_with(vec![("m", store)], config("[cache]\nchunk_bytes = 0"));
    let want: Vec<u8> = (0..ROWS).flat_map(|i| (0..COLS).flat_map(move |j| value(i, j).to_le_bytes())).collect();
    let response = send(&app, "/v1/slice/m/sharded?format=bin").await;
    assert_eq!(response.status(), 200);
    let etag = response.headers()["etag"].clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.as_ref() == want.as_slice(), "streamed sharded read differs");
    // The last row of shards is read only once the bands before it are on their way:
    // rewritten after the response has started, it ends the body with an error instead of
    // being served under the validators of the version announced (or mixed with it).
    let response = send(&app, "/v1/slice/m/sharded?format=bin").await;
    assert_eq!((response.status().as_u16(), &response.headers()["etag"]), (200, &etag));
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert!(first.len() < want.len() / 4, "{} bytes in the first frame", first.len());
    mem.put(&Path::from("sharded/c/15/0"), shard(15, 1).into()).await.unwrap();
    let (rest, error) = until_error(body).await;
    let received = first.len() + rest;
    assert!(received < want.len(), "{received}");
    assert!(error.to_string().contains("sharded/c/15/0") && error.to_string().contains("changed"), "{error}");
    // The next request reads (and announces) the new version.
    let response = send(&app, "/v1/slice/m/sharded?s=1920:2048&format=bin").await;
    assert_ne!(response.headers()["etag"], etag);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let want_new: Vec<u8> =
        (1920..ROWS).flat_map(|i| (0..COLS).flat_map(move |j| (value(i, j) + 1).to_le_bytes())).collect();
    assert!(body.as_ref() == want_new.as_slice());
}

/// `tiled`: the same 2048 x 1024 u32 values in 16 shards of 128 full rows, each holding
/// 4 x 4 inner chunks of 32 x 256 (`bytes`), so every band of a streamed read (32 rows)
/// has four members, decoded in pieces on the pool. `short` shortens shard 15's last
/// inner chunk by one element (a corrupt chunk in the last band).
async fn put_tiled(mem: &InMemory, short: bool) {
    put_sharded_doc(mem, "tiled", [CHUNK_ROWS / 4, COLS / 4]).await;
    for s in 0..ROWS / CHUNK_ROWS {
        let data = shard_of((0..4).flat_map(|r| (0..4).map(move |c| (r, c))).map(|(r, c)| {
            let (i0, j0) = (s * CHUNK_ROWS + r * CHUNK_ROWS / 4, c * COLS / 4);
            let mut chunk: Vec<u8> = (i0..i0 + CHUNK_ROWS / 4)
                .flat_map(|i| (j0..j0 + COLS / 4).flat_map(move |j| value(i, j).to_le_bytes()))
                .collect();
            if short && s == 15 && (r, c) == (3, 3) {
                chunk.truncate(chunk.len() - 4);
            }
            chunk
        }));
        mem.put(&Path::from(format!("tiled/c/{s}/0")), data.into()).await.unwrap();
    }
}

#[tokio::test]
async fn bands_of_several_chunks_stream_bit_exact_and_fail_cleanly() {
    let want: Vec<u8> = (0..ROWS).flat_map(|i| (0..COLS).flat_map(move |j| value(i, j).to_le_bytes())).collect();
    for cache in ["chunk_bytes = 0", "chunk_bytes = 67108864"] {
        let (store, mem) = store().await;
        put_tiled(&mem, false).await;
        let app = app_with(vec![("m", store)], config(&format!("[cache]\nresponse_bytes = 0\n{cache}")));
        // Twice: with the chunk cache on, the second read assembles from the chunks the
        // first one decoded.
        for round in 0..2 {
            let response = send(&app, "/v1/slice/m/tiled?format=bin").await;
            assert_eq!(response.status(), 200);
            assert!(axum::body::HttpBody::size_hint(response.body()).exact().is_none(), "not streamed");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert!(body.as_ref() == want.as_slice(), "{cache}, read {round}: the streamed read differs");
        }
        // Rows and columns cut through the inner chunks (7 MiB: streamed too).
        let response = send(&app, "/v1/slice/m/tiled?s=1:,100:1000&format=bin").await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let cut: Vec<u8> = (1..ROWS).flat_map(|i| (100..1000).flat_map(move |j| value(i, j).to_le_bytes())).collect();
        assert!(body.as_ref() == cut.as_slice(), "{cache}: the cut read differs");
    }
    // A corrupt chunk in the last band ends the body with an error naming its shard.
    let (store, mem) = store().await;
    put_tiled(&mem, true).await;
    let app = app_with(vec![("m", store)], config("[cache]\nchunk_bytes = 0"));
    let response = send(&app, "/v1/slice/m/tiled?format=bin").await;
    assert_eq!(response.status(), 200);
    let (received, error) = until_error(response.into_body()).await;
    assert!(received < want.len(), "{received}");
    assert!(error.to_string().contains("tiled/c/15/0"), "{error}");
}

/// Reads `body` until it fails: the bytes received before, and the error.
async fn until_error(mut body: Body) -> (usize, axum::Error) {
    let mut received = 0usize;
    loop {
        match body.frame().await {
            Some(Ok(frame)) => received += frame.into_data().map_or(0, |d| d.len()),
            Some(Err(e)) => return (received, e),
            None => panic!("the body ended normally after {received} bytes"),
        }
    }
}

async fn send(app: &axum::Router, uri: &str) -> axum::response::Response {
    app.clone().oneshot(axum::http::Request::get(uri).body(Body::empty()).unwrap()).await.unwrap()
}

#[tokio::test]
async fn large_results_are_streamed_bit_exact() {
    let (store, _) = store().await;
    let app = app_with(vec![("m", store)], config("[cache]\nchunk_bytes = 0"));
    let response = send(&app, "/v1/slice/m/big?format=npy").await;
    assert_eq!(response.status(), 200);
    let length: usize = response.headers()["content-length"].to_str().unwrap().parse().unwrap();
    // Streamed: the body has no exact size of its own, the header says it up front.
    assert!(axum::body::HttpBody::size_hint(response.body()).exact().is_none());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body.len(), length);
    let npy = common::parse_npy(&body);
    assert_eq!(npy.shape, [ROWS, COLS]);
    let want: Vec<u8> = (0..ROWS).flat_map(|i| (0..COLS).flat_map(move |j| value(i, j).to_le_bytes())).collect();
    assert!(npy.data == want, "streamed npy differs from the expected values");
    // A strided, offset selection streams the right elements too.
    let response = send(&app, "/v1/slice/m/big?s=3::1,1::2&format=bin").await;
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let want: Vec<u8> =
        (3..ROWS).flat_map(|i| (1..COLS).step_by(2).flat_map(move |j| value(i, j).to_le_bytes())).collect();
    assert!(body.as_ref() == want.as_slice(), "strided stream differs");
}

#[tokio::test]
async fn a_failure_mid_stream_cuts_the_body_short() {
    let (store, mem) = store().await;
    // The last chunk is truncated: it fails to decode after earlier bands were sent.
    mem.put(&Path::from("big/c/15/0"), vec![1u8; 100].into()).await.unwrap();
    let app = app_with(vec![("m", store)], config("[cache]\nchunk_bytes = 0"));
    let response = send(&app, "/v1/slice/m/big?format=bin").await;
    assert_eq!(response.status(), 200);
    let (received, error) = until_error(response.into_body()).await;
    assert!(received < (ROWS * COLS * 4) as usize, "{received}");
    assert!(error.to_string().contains("big/c/15/0"), "{error}");
}

#[tokio::test]
async fn the_budget_bounds_requests_together() {
    let (store, _) = store().await;
    // 24 MiB: the 64 MiB chunk never fits; the 8 MiB result streams in bands.
    let extra =
        "[limits]\nmemory_bytes = 25165824\nmemory_wait_ms = 200\nrequest_timeout_secs = 1\n[cache]\nchunk_bytes = 0";
    let app = app_with(vec![("m", store)], config(extra));
    let problem = get(&app, "/v1/slice/m/wide?s=5:6").await.assert_problem(413);
    assert!(problem["detail"].as_str().unwrap().contains("working memory"), "{problem}");
    // Whole (JSON) bodies hold their memory until sent: a second large one must wait, then 503.
    let first = send(&app, "/v1/slice/m/big?s=0:1024&format=json").await;
    assert_eq!(first.status(), 200);
    let busy = get(&app, "/v1/slice/m/big?s=0:1024&format=json").await;
    busy.assert_problem(503);
    assert_eq!(busy.header("retry-after"), "1");
    drop(first);
    assert_eq!(get(&app, "/v1/slice/m/big?s=0:1024&format=json").await.status, 200);
    // A stalled reader of a streamed body gives its memory back after the idle timeout.
    let stalled = send(&app, "/v1/slice/m/big?format=bin").await;
    assert_eq!(stalled.status(), 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let whole = get(&app, "/v1/slice/m/big?s=0:1024&format=json").await;
    assert_eq!(whole.status, 200, "{}", whole.describe());
    drop(stalled);
}
