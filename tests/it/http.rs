//! The rest of the HTTP API and its production behaviour: chunk listings, raw chunks,
//! the Zarr store passthrough, CORS, compression, request ids, metrics, readiness,
//! timeouts and overload. Expected bytes come from the fixture files themselves.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use common::{
    CountingStore, app_with, config, conformance_app, conformance_dir, expected, get, get_with, local_store, metric,
    parse_npy,
};
use serde_json::Value;
use zarrd_core::store::Store;

fn file(key: &str) -> Vec<u8> {
    std::fs::read(conformance_dir().join("data.zarr").join(key)).unwrap()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// Collects every page of a listing, checking that no page exceeds `limit`.
async fn list_all(app: &axum::Router, base: &str, limit: usize) -> Vec<Value> {
    let mut chunks = Vec::new();
    let mut uri = format!("{base}&limit={limit}");
    loop {
        let reply = get(app, &uri).await;
        assert_eq!(reply.status, 200, "{}", reply.describe());
        let page = reply.json();
        let got = page["chunks"].as_array().unwrap();
        assert!(got.len() <= limit);
        chunks.extend(got.iter().cloned());
        match page["next"].as_str() {
            Some(next) => uri = format!("{base}&limit={limit}&cursor={next}"),
            None => return chunks,
        }
    }
}

#[tokio::test]
async fn listing_reports_existence_and_size_from_the_store() {
    let app = conformance_app();
    // 37x53 with 8x16 chunks: a 5x4 grid, only the part written [0:20, 0:30] exists.
    let chunks = list_all(&app, "/v1/chunks/conf/regular/f4_zstd_partial?s=", 3).await;
    assert_eq!(chunks.len(), 20);
    for (i, c) in chunks.iter().enumerate() {
        let coords = u64s(&c["coords"]);
        assert_eq!(coords, [i as u64 / 4, i as u64 % 4], "C order");
        let key = c["key"].as_str().unwrap();
        assert_eq!(key, format!("regular/f4_zstd_partial/c/{}/{}", coords[0], coords[1]));
        let on_disk = std::fs::metadata(conformance_dir().join("data.zarr").join(key)).ok();
        match on_disk {
            Some(m) => assert_eq!((c["state"].as_str(), c["size"].as_u64()), (Some("present"), Some(m.len()))),
            None => assert_eq!((c["state"].as_str(), c.get("size")), (Some("missing"), None)),
        }
        assert_eq!(u64s(&c["origin"]), [coords[0] * 8, coords[1] * 16]);
        // Shapes are clipped to the array.
        assert_eq!(u64s(&c["shape"]), [8.min(37 - coords[0] * 8), 16.min(53 - coords[1] * 16)]);
    }
    // A selection lists only the chunks it touches; steps skip whole chunks.
    let some = get(&app, "/v1/chunks/conf/regular/f4_zstd_partial?s=9:17,::40").await.json();
    let coords: Vec<Vec<u64>> = some["chunks"].as_array().unwrap().iter().map(|c| u64s(&c["coords"])).collect();
    assert_eq!(coords, [[1, 0], [1, 2], [2, 0], [2, 2]]);
    assert_eq!(some["grid"], "regular");
    assert!(some["next"].is_null());
}

#[tokio::test]
async fn listing_rectilinear_grids_and_errors() {
    let app = conformance_app();
    let page = get(&app, "/v1/chunks/conf/rectilinear/u1_months_3d?s=0:100,0,0").await.json();
    assert_eq!(page["grid"], "rectilinear");
    let shapes: Vec<Vec<u64>> = page["chunks"].as_array().unwrap().iter().map(|c| u64s(&c["shape"])).collect();
    assert_eq!(shapes, [[31, 4, 5], [28, 4, 5], [31, 4, 5], [30, 4, 5]]);
    for bad in ["limit=0", "limit=10001", "limit=x", "cursor=zz", "inner=maybe", "s=1:2:0", "bogus=1"] {
        get(&app, &format!("/v1/chunks/conf/rectilinear/u1_months_3d?{bad}")).await.assert_problem(400);
    }
    // A cursor from another listing is refused.
    let first = get(&app, "/v1/chunks/conf/rectilinear/u1_months_3d?limit=1").await.json();
    let cursor = first["next"].as_str().unwrap();
    get(&app, &format!("/v1/chunks/conf/rectilinear/u1_months_3d?limit=1&s=0:40&cursor={cursor}"))
        .await
        .assert_problem(400);
    get(&app, "/v1/chunks/conf/nope").await.assert_problem(404);
}

#[tokio::test]
async fn inner_listing_matches_the_shard_bytes() {
    let app = conformance_app();
    let chunks = list_all(&app, "/v1/chunks/conf/sharded/f8_index_start_gzip_empty?inner=true", 2).await;
    let info = get(&app, "/v1/arrays/conf/sharded/f8_index_start_gzip_empty").await.json();
    let inner_shape = u64s(&info["read_chunk_shape"]);
    let mut empty = 0;
    for shard in &chunks {
        let key = shard["key"].as_str().unwrap();
        if shard["state"] == "missing" {
            assert!(!conformance_dir().join("data.zarr").join(key).exists());
            continue;
        }
        let bytes = file(key);
        assert_eq!(shard["size"].as_u64().unwrap(), bytes.len() as u64);
        for inner in shard["inner"].as_array().unwrap() {
            let coords = u64s(&inner["coords"]);
            let origin = u64s(&inner["origin"]);
            assert_eq!(origin, [coords[0] * inner_shape[0], coords[1] * inner_shape[1]]);
            let c = format!("{},{}", coords[0], coords[1]);
            let raw = get(&app, &format!("/v1/chunk/conf/sharded/f8_index_start_gzip_empty?c={c}")).await;
            if inner["state"] == "empty" {
                empty += 1;
                raw.assert_problem(404);
                continue;
            }
            let (offset, nbytes) =
                (inner["offset"].as_u64().unwrap() as usize, inner["nbytes"].as_u64().unwrap() as usize);
            assert_eq!(raw.status, 200, "{}", raw.describe());
            // The raw chunk is exactly the shard's bytes at the listed range...
            assert_eq!(raw.body.as_ref(), &bytes[offset..offset + nbytes]);
            assert_eq!(raw.header("zarr-chunk-key"), key);
            assert_eq!(raw.header("zarr-byte-range"), format!("{offset}-{}", offset + nbytes - 1));
            // ...and gunzips to the expected values of that block.
            let mut decoded = Vec::new();
            flate2::read::GzDecoder::new(raw.body.as_ref()).read_to_end(&mut decoded).unwrap();
            let want = expected(&conformance_dir(), "sharded/f8_index_start_gzip_empty");
            let width = want.shape[1] as usize;
            for r in 0..inner_shape[0] as usize {
                let row = origin[0] as usize + r;
                if row >= want.shape[0] as usize {
                    break;
                }
                let cols = inner_shape[1] as usize;
                let start = (row * width + origin[1] as usize) * 8;
                assert_eq!(&decoded[r * cols * 8..(r + 1) * cols * 8], &want.data[start..start + cols * 8]);
            }
        }
    }
    assert!(empty > 0, "this fixture has empty inner chunks");
}

#[tokio::test]
async fn raw_and_decoded_chunks() {
    let app = conformance_app();
    // Unsharded: the stored object itself.
    let raw = get(&app, "/v1/chunk/conf/regular/u2_dot_separator?c=1,2").await;
    assert_eq!(raw.status, 200, "{}", raw.describe());
    assert_eq!(raw.body.as_ref(), file("regular/u2_dot_separator/c.1.2").as_slice());
    assert_eq!(raw.header("zarr-chunk-key"), "regular/u2_dot_separator/c.1.2");
    assert_eq!(raw.header("zarr-byte-range"), "");
    // Decoded and clipped: the boundary chunk (1,2) of 9x11 with 4x4 chunks is 4x3.
    let decoded = get(&app, "/v1/chunk/conf/regular/u2_dot_separator?c=1,2&decoded=true").await;
    let npy = parse_npy(&decoded.body);
    assert_eq!(npy.shape, [4, 3]);
    let want = expected(&conformance_dir(), "regular/u2_dot_separator");
    let got: Vec<u16> = npy.data.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    let all: Vec<u16> = want.data.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    let block: Vec<u16> = (4..8).flat_map(|r| (8..11).map(move |c| (r, c))).map(|(r, c)| all[r * 11 + c]).collect();
    assert_eq!(got, block);
    // Nested sharding: the innermost 4x4 chunk.
    let nested = get(&app, "/v1/chunk/conf/sharded/u4_nested?c=5,9&decoded=true&format=json").await.json();
    let want = expected(&conformance_dir(), "sharded/u4_nested");
    let all: Vec<u32> = want.data.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
    let rows = nested["data"].as_array().unwrap();
    for (r, row) in rows.iter().enumerate() {
        for (c, v) in row.as_array().unwrap().iter().enumerate() {
            assert_eq!(v.as_u64().unwrap(), u64::from(all[(20 + r) * 64 + 36 + c]));
        }
    }
    let nested_raw = get(&app, "/v1/chunk/conf/sharded/u4_nested?c=5,9").await;
    let range = nested_raw.header("zarr-byte-range").to_owned();
    let (a, b) = range.split_once('-').unwrap();
    let shard = file(nested_raw.header("zarr-chunk-key"));
    assert_eq!(nested_raw.body.as_ref(), &shard[a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()]);
    // Missing, out of the grid, malformed, and format without decoded.
    get(&app, "/v1/chunk/conf/regular/f4_zstd_partial?c=4,3").await.assert_problem(404);
    get(&app, "/v1/chunk/conf/regular/f4_zstd_partial?c=5,0").await.assert_problem(400);
    get(&app, "/v1/chunk/conf/regular/f4_zstd_partial?c=0").await.assert_problem(400);
    get(&app, "/v1/chunk/conf/regular/f4_zstd_partial?c=a,b").await.assert_problem(400);
    get(&app, "/v1/chunk/conf/regular/f4_zstd_partial?c=0,0&format=json").await.assert_problem(400);
    // 0-d: the only chunk has no coordinates.
    assert_eq!(get(&app, "/v1/chunk/conf/regular/scalar_f8?decoded=true&format=json").await.status, 200);
    // Raw chunks carry an ETag and revalidate.
    let etag = raw.header("etag").to_owned();
    assert_eq!(
        get_with(&app, "/v1/chunk/conf/regular/u2_dot_separator?c=1,2", &[("if-none-match", &etag)]).await.status,
        304
    );
}

#[tokio::test]
async fn zarr_store_passthrough_with_ranges_and_validators() {
    let app = conformance_app();
    let key = "sharded/i2_rect_shards/c/0/0";
    let bytes = file(key);
    let n = bytes.len();
    let full = get(&app, &format!("/zarr/conf/{key}")).await;
    assert_eq!((full.status.as_u16(), full.body.as_ref()), (200, bytes.as_slice()));
    assert_eq!(full.header("accept-ranges"), "bytes");
    let etag = full.header("etag").to_owned();
    let modified = full.header("last-modified").to_owned();
    assert!(etag.starts_with('"'), "{etag}");
    for (range, want) in
        [("bytes=0-9", 0..10), ("bytes=10-", 10..n), ("bytes=-16", n - 16..n), ("bytes=5-99999999", 5..n)]
    {
        let r = get_with(&app, &format!("/zarr/conf/{key}"), &[("range", range)]).await;
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.body.as_ref(), &bytes[want.clone()], "{range}");
        assert_eq!(r.header("content-range"), format!("bytes {}-{}/{n}", want.start, want.end - 1));
    }
    let beyond = get_with(&app, &format!("/zarr/conf/{key}"), &[("range", &format!("bytes={n}-"))]).await;
    beyond.assert_problem(416);
    assert_eq!(beyond.header("content-range"), format!("bytes */{n}"));
    get_with(&app, &format!("/zarr/conf/{key}"), &[("range", "bytes=-0")]).await.assert_problem(416);
    // RFC 9110: positions are plain digits; anything else is not a range and is ignored,
    // for GET and HEAD alike.
    for ignored in ["bytes=+0-+1", "bytes=-+1", "bytes=0- 1", "bytes=1 0-"] {
        let r = get_with(&app, &format!("/zarr/conf/{key}"), &[("range", ignored)]).await;
        assert_eq!((r.status.as_u16(), r.body.as_ref()), (200, bytes.as_slice()), "{ignored}");
        assert_eq!(r.header("content-range"), "", "{ignored}");
        let head = tower::ServiceExt::oneshot(
            app.clone(),
            axum::http::Request::head(format!("/zarr/conf/{key}"))
                .header("range", ignored)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
        assert_eq!(head.status(), 200, "{ignored}");
        assert_eq!(head.headers()["content-length"], n.to_string().as_str(), "{ignored}");
    }
    assert_eq!(get_with(&app, &format!("/zarr/conf/{key}"), &[("if-none-match", &etag)]).await.status, 304);
    assert_eq!(get_with(&app, &format!("/zarr/conf/{key}"), &[("if-modified-since", &modified)]).await.status, 304);
    get_with(&app, &format!("/zarr/conf/{key}"), &[("if-match", "\"other\"")]).await.assert_problem(412);
    let matched = get_with(&app, &format!("/zarr/conf/{key}"), &[("if-match", &etag), ("range", "bytes=0-3")]).await;
    assert_eq!((matched.status.as_u16(), matched.body.as_ref()), (206, &bytes[..4]));
    // HEAD: headers only.
    let head = app.clone();
    let response = tower::ServiceExt::oneshot(
        head,
        axum::http::Request::head(format!("/zarr/conf/{key}")).body(axum::body::Body::empty()).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-length"], n.to_string().as_str());
    // Metadata documents are JSON; chunks are never compressed on the way out.
    let meta = get_with(&app, "/zarr/conf/zarr.json", &[("accept-encoding", "gzip")]).await;
    assert_eq!(meta.header("content-type"), "application/json");
    assert_eq!(meta.body.as_ref(), file("zarr.json").as_slice());
    let chunk = get_with(&app, &format!("/zarr/conf/{key}"), &[("accept-encoding", "gzip, zstd")]).await;
    assert_eq!(chunk.header("content-encoding"), "");
    get(&app, "/zarr/conf/nope/zarr.json").await.assert_problem(404);
    get(&app, "/zarr/conf/a/../zarr.json").await.assert_problem(404);
    get(&app, "/zarr/missing/zarr.json").await.assert_problem(404);
}

#[tokio::test]
async fn compression_is_negotiated_for_json_and_binary_only() {
    let app = conformance_app();
    let uri = "/v1/slice/conf/rectilinear/f4?format=json";
    let plain = get(&app, uri).await;
    assert_eq!(plain.header("content-encoding"), "");
    let gz = get_with(&app, uri, &[("accept-encoding", "gzip")]).await;
    assert_eq!(gz.header("content-encoding"), "gzip");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz.body.as_ref()).read_to_end(&mut out).unwrap();
    assert_eq!(out, plain.body.as_ref());
    // Decoded binary under 64 KiB is sent as it is (numbers barely deflate; a compressor
    // costs more than it saves there); larger binary is compressed.
    let small = get_with(&app, "/v1/slice/conf/rectilinear/f4?format=bin", &[("accept-encoding", "zstd")]).await;
    assert_eq!((small.header("content-encoding"), small.body.len()), ("", 60 * 100 * 4));
    let sample = app_with(vec![("sample", local_store(std::path::Path::new("data/sample.zarr")))], config(""));
    let large_uri = "/v1/slice/sample/climate/t2m?s=0:4&format=bin";
    let zs = get_with(&sample, large_uri, &[("accept-encoding", "zstd")]).await;
    assert_eq!(zs.header("content-encoding"), "zstd");
    let whole = get(&sample, large_uri).await;
    assert_eq!(whole.body.len(), 4 * 72 * 144 * 4);
    assert_eq!(zstd::decode_all(zs.body.as_ref()).unwrap(), whole.body.as_ref());
    // Raw chunks (already compressed bytes) and PNGs are sent as they are.
    let raw = get_with(&app, "/v1/chunk/conf/rectilinear/f4?c=0,0", &[("accept-encoding", "gzip")]).await;
    assert_eq!(raw.header("content-encoding"), "");
    let png = get_with(&app, "/v1/slice/conf/rectilinear/f4?format=png", &[("accept-encoding", "gzip")]).await;
    assert_eq!(png.header("content-encoding"), "");
}

#[tokio::test]
async fn cors_and_request_ids() {
    let app = app_with(
        vec![("conf", local_store(&conformance_dir().join("data.zarr")))],
        config("[http]\ncors_origins = [\"https://viewer.example\"]"),
    );
    let reply = get_with(&app, "/v1/slice/conf/regular/c8?s=0,0", &[("origin", "https://viewer.example")]).await;
    assert_eq!(reply.header("access-control-allow-origin"), "https://viewer.example");
    let exposed = reply.header("access-control-expose-headers").to_ascii_lowercase();
    for h in ["zarr-shape", "zarr-data-type", "etag", "content-range", "x-request-id"] {
        assert!(exposed.contains(h), "{h} not exposed: {exposed}");
    }
    let other = get_with(&app, "/v1/slice/conf/regular/c8?s=0,0", &[("origin", "https://evil.example")]).await;
    assert_eq!(other.header("access-control-allow-origin"), "");
    let preflight = tower::ServiceExt::oneshot(
        app.clone(),
        axum::http::Request::options("/zarr/conf/zarr.json")
            .header("origin", "https://viewer.example")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "range")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(preflight.headers()["access-control-allow-origin"], "https://viewer.example");
    assert!(preflight.headers()["access-control-allow-headers"].to_str().unwrap().contains("range"));
    // Request ids: echoed when given, made up when not, on errors too.
    assert_eq!(get_with(&app, "/healthz", &[("x-request-id", "abc-123")]).await.header("x-request-id"), "abc-123");
    let a = get(&app, "/v1/datasets/nope").await;
    let b = get(&app, "/v1/datasets/nope").await;
    assert!(!a.header("x-request-id").is_empty());
    assert_ne!(a.header("x-request-id"), b.header("x-request-id"));
}

#[tokio::test]
async fn metrics_count_requests_storage_and_caches() {
    let app = conformance_app();
    assert_eq!(get(&app, "/v1/slice/conf/sharded/i2_rect_shards?s=0:5,0:5").await.status, 200);
    assert_eq!(get(&app, "/v1/slice/conf/sharded/i2_rect_shards?s=0:5,0:5").await.status, 200);
    let text = String::from_utf8(get(&app, "/metrics").await.body.to_vec()).unwrap();
    for needle in [
        "zarrd_http_requests_total{route=\"/v1/slice\",status=\"200\"}",
        "zarrd_request_duration_seconds_bucket{route=\"/v1/slice\"",
        "zarrd_http_response_bytes_total{route=\"/v1/slice\"}",
        "zarrd_storage_requests_total",
        "zarrd_storage_bytes_read_total",
        "zarrd_cache_hits_total{cache=\"shard_index\"}",
        "zarrd_cache_misses_total{cache=\"shard_index\"}",
        "zarrd_cache_size_bytes{cache=\"shard_index\"}",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[tokio::test]
async fn response_bytes_are_counted_as_sent() {
    // Metrics are process-wide and other tests run alongside: the counter rises by at
    // least this body (it stayed at 0 when it was read from a Content-Length that hyper
    // had not set yet).
    let app = conformance_app();
    let counter = "zarrd_http_response_bytes_total{route=\"/v1/slice\"} ";
    let before = metric(&app, counter).await;
    let reply = get(&app, "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:10&format=bin").await;
    assert_eq!((reply.status.as_u16(), reply.body.len()), (200, 400));
    let after = metric(&app, counter).await;
    assert!(after >= before + 400, "{before} -> {after}");
}

/// One bad dataset (bad on every replica alike) must not take the replica out of the load
/// balancer: readiness stays 200 and costs no storage request, while the dataset's health
/// is published in /v1/datasets and as a gauge, from a cached background check.
#[tokio::test]
async fn a_failing_dataset_is_reported_but_leaves_the_replica_ready() {
    let backend = common::memory_store(&conformance_dir().join("data.zarr")).await.backend();
    let counting = CountingStore::new(backend);
    let app = app_with(
        vec![
            ("conf", Store::new(counting.clone(), object_store::path::Path::default())),
            ("empty", local_store(&conformance_dir().join("expected"))),
        ],
        config("[health]\ncheck_interval_secs = 3600"),
    );
    for _ in 0..3 {
        assert_eq!(get(&app, "/readyz").await.status, 200);
    }
    assert_eq!(counting.total(), 0, "readiness makes no storage request");
    let list = get(&app, "/v1/datasets").await.json();
    let by_name = |name: &str| list["datasets"].as_array().unwrap().iter().find(|d| d["name"] == name).unwrap().clone();
    assert_eq!(by_name("conf")["health"]["status"], "ok");
    let empty = by_name("empty");
    assert_eq!(empty["health"]["status"], "failing");
    assert!(empty["health"]["detail"].as_str().unwrap().contains("no zarr.json"), "{empty}");
    let checks = counting.total();
    assert!(checks >= 1, "the first listing waits for one check");
    // Later listings are answered from the cached result, without storage requests.
    for _ in 0..3 {
        assert_eq!(get(&app, "/v1/datasets").await.status, 200);
    }
    assert_eq!(counting.total(), checks);
    let text = String::from_utf8(get(&app, "/metrics").await.body.to_vec()).unwrap();
    assert!(text.contains("zarrd_dataset_up{dataset=\"empty\"} 0"), "{text}");
}

async fn slow_app(extra: &str) -> axum::Router {
    let backend = common::memory_store(&conformance_dir().join("data.zarr")).await.backend();
    let slow = CountingStore::slow(backend, Duration::from_millis(1500));
    app_with(vec![("conf", Store::new(slow, object_store::path::Path::default()))], config(extra))
}

#[tokio::test]
async fn slow_storage_times_out_with_504() {
    let app = slow_app("[limits]\nrequest_timeout_secs = 1").await;
    let problem = get(&app, "/v1/slice/conf/regular/c8").await.assert_problem(504);
    assert!(problem["detail"].as_str().unwrap().contains('1'), "{problem}");
    // Health stays answerable.
    assert_eq!(get(&app, "/healthz").await.status, 200);
}

#[tokio::test]
async fn requests_beyond_the_in_flight_limit_get_503_with_retry_after() {
    let app = Arc::new(slow_app("[limits]\nmax_in_flight = 1").await);
    let first = {
        let app = Arc::clone(&app);
        tokio::spawn(async move { get(&app, "/v1/slice/conf/regular/c8").await.status })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = get(&app, "/v1/slice/conf/regular/c8").await;
    second.assert_problem(503);
    assert_eq!(second.header("retry-after"), "1");
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(get(&app, "/healthz").await.status, 200);
}

#[tokio::test]
async fn listing_and_reading_stay_bounded_on_arrays_with_trillions_of_chunks() {
    use object_store::ObjectStoreExt;
    let (store, mem) = common::memory_store_handle(&conformance_dir().join("data.zarr")).await;
    // Metadata only: a 10^6 x 10^6 array of 1x1 chunks, none written.
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [1_000_000, 1_000_000], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 7,
        "codecs": [{"name": "bytes"}]
    });
    mem.put(&object_store::path::Path::from("huge/zarr.json"), doc.to_string().into_bytes().into()).await.unwrap();
    let app = app_with(vec![("conf", store)], config(""));
    let info = get(&app, "/v1/arrays/conf/huge").await.json();
    assert_eq!(info["chunk_grid"]["grid_shape"], serde_json::json!([1_000_000, 1_000_000]));
    let page = get(&app, "/v1/chunks/conf/huge?limit=5").await.json();
    assert_eq!(page["chunks"].as_array().unwrap().len(), 5);
    assert!(page["next"].is_string());
    let last = get(&app, "/v1/chunks/conf/huge?s=-1:,-2:").await.json();
    let coords: Vec<Vec<u64>> = last["chunks"].as_array().unwrap().iter().map(|c| u64s(&c["coords"])).collect();
    assert_eq!(coords, [[999_999, 999_998], [999_999, 999_999]]);
    assert!(last["chunks"].as_array().unwrap().iter().all(|c| c["state"] == "missing"));
    let slice = get(&app, "/v1/slice/conf/huge?s=5:8,999990:&format=bin").await;
    assert_eq!(slice.body.as_ref(), vec![7u8; 30].as_slice());
    // A whole-array read is refused before any storage is touched.
    get(&app, "/v1/slice/conf/huge").await.assert_problem(413);
    get(&app, "/v1/slice/conf/huge?s=::1000,::1000").await.assert_problem(413);
    // One dimension of 10^12 one-element chunks: per-dimension chunk lists built in full
    // would need terabytes; a page costs O(limit) and a slice is counted before planning.
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [1_000_000_000_000_u64], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 7, "codecs": [{"name": "bytes"}]
    });
    mem.put(&object_store::path::Path::from("line/zarr.json"), doc.to_string().into_bytes().into()).await.unwrap();
    let page = get(&app, "/v1/chunks/conf/line?limit=1").await.json();
    assert_eq!(page["chunks"].as_array().unwrap().len(), 1);
    let page =
        get(&app, &format!("/v1/chunks/conf/line?limit=2&cursor={}", page["next"].as_str().unwrap())).await.json();
    assert_eq!(u64s(&page["chunks"][1]["coords"]), [2]);
    let problem = get(&app, "/v1/slice/conf/line?s=0:268435456&format=bin").await.assert_problem(413);
    assert!(problem["detail"].as_str().unwrap().contains("268435456 chunks"), "{problem}");
    let sparse = get(&app, "/v1/slice/conf/line?s=::100000000000&format=bin").await;
    assert_eq!(sparse.body.as_ref(), [7u8; 10].as_slice());
}

#[tokio::test]
async fn a_rewritten_zarr_json_is_seen_within_the_metadata_ttl() {
    use object_store::ObjectStoreExt;
    let (store, mem) = common::memory_store_handle(&conformance_dir().join("data.zarr")).await;
    let app = app_with(vec![("conf", store)], config("[cache]\nmetadata_ttl_secs = 1"));
    let key = object_store::path::Path::from("regular/c8/zarr.json");
    assert_eq!(get(&app, "/v1/arrays/conf/regular/c8").await.json()["attributes"], serde_json::json!({}));
    let mut doc: Value = serde_json::from_slice(&mem.get(&key).await.unwrap().bytes().await.unwrap()).unwrap();
    doc["attributes"] = serde_json::json!({"version": 2});
    mem.put(&key, doc.to_string().into_bytes().into()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(get(&app, "/v1/arrays/conf/regular/c8").await.json()["attributes"], serde_json::json!({"version": 2}));
}

#[tokio::test]
async fn errors_from_outside_the_handlers_are_problem_documents_too() {
    let app = conformance_app();
    // A path that is not UTF-8 (axum's extractor rejects it) and a wrong method.
    get(&app, "/v1/arrays/conf/%FF").await.assert_problem(400);
    let post = tower::ServiceExt::oneshot(
        app.clone(),
        axum::http::Request::post("/v1/datasets").body(axum::body::Body::empty()).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["content-type"], "application/problem+json");
    assert!(post.headers()["allow"].to_str().unwrap().contains("GET"));
    // Found by schemathesis: an empty PNG is not acceptable (not a 500), a range ending at
    // 2^64-1 is clamped for HEAD as for GET, and raw chunks ignore Accept.
    get(&app, "/v1/slice/conf/regular/u1_blosc?s=0:0,:&format=png").await.assert_problem(406);
    let head = tower::ServiceExt::oneshot(
        app.clone(),
        axum::http::Request::head("/zarr/conf/zarr.json")
            .header("range", "bytes=0-18446744073709551615")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(head.status(), 206);
    let raw = get_with(&app, "/v1/chunk/conf/regular/u1_blosc?c=0,0", &[("accept", "text/html")]).await;
    assert_eq!((raw.status.as_u16(), raw.header("content-type")), (200, "application/octet-stream"));
}

#[tokio::test]
async fn inner_listings_and_pngs_are_bounded() {
    use object_store::ObjectStoreExt;
    let (store, mem) = common::memory_store_handle(&conformance_dir().join("data.zarr")).await;
    // Shards of 1000x1000 one-element inner chunks: a million inner chunks per shard.
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [2000, 2000], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 1000]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 1],
            "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]
    });
    mem.put(&object_store::path::Path::from("dense/zarr.json"), doc.to_string().into_bytes().into()).await.unwrap();
    let app = app_with(vec![("conf", store)], config("[limits]\nmax_response_bytes = 4000000"));
    let problem = get(&app, "/v1/chunks/conf/dense?inner=true&s=0:1000,0:1000").await.assert_problem(413);
    assert!(problem["detail"].as_str().unwrap().contains("1000000"), "{problem}");
    assert_eq!(get(&app, "/v1/chunks/conf/dense?inner=true&s=0:10,0:10").await.status, 200);
    // PNG needs working memory per pixel: 1000x1000 u8 is 1 MB of data but too big as PNG here.
    assert_eq!(get(&app, "/v1/slice/conf/dense?s=0:300,0:300&format=bin").await.status, 200);
    // A million one-element inner chunks is over the chunk limit, counted before any is planned.
    let problem = get(&app, "/v1/slice/conf/dense?s=0:1000,0:1000&format=bin").await.assert_problem(413);
    assert!(problem["detail"].as_str().unwrap().contains("1000000 chunks"), "{problem}");
    get(&app, "/v1/slice/conf/dense?s=0:1000,0:1000&format=png").await.assert_problem(413);
}
