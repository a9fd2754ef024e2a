//! How many storage requests reads cost, pinned with a counting store decorator.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::sync::Arc;

use common::{CountingStore, app_with, config, get, get_with, memory_store};
use zarrd_core::store::Store;

async fn counting_app(extra: &str) -> (axum::Router, Arc<CountingStore>) {
    counting_app_where(false, extra).await
}

/// The conformance store behind a counting decorator, as a remote store (an object store's
/// requests) or as files on this machine (`local`).
async fn counting_app_where(local: bool, extra: &str) -> (axum::Router, Arc<CountingStore>) {
    let mem = memory_store(&common::conformance_dir().join("data.zarr")).await;
    // Reach the in-memory backend through the counting decorator.
    let backend = mem.backend();
    let counting = CountingStore::new(backend);
    let store = if local {
        Store::new(counting.clone(), object_store::path::Path::default()).on_this_machine()
    } else {
        Store::new(counting.clone(), object_store::path::Path::default())
    };
    (app_with(vec![("conf", store)], config(extra)), counting)
}

const INNER: &str = "/v1/slice/conf/sharded/i2_rect_shards?s=0:5,0:5";

#[tokio::test]
async fn cold_inner_chunk_is_index_plus_one_range_and_hot_is_one() {
    // Without the decoded-chunk and response caches, a hot read re-reads the chunk's byte range.
    let (app, store) = counting_app("[cache]\nchunk_bytes = 0\nresponse_bytes = 0").await;
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
async fn hot_tiles_come_from_the_decoded_chunk_cache() {
    // Without the response cache, which would answer the repeats before any read.
    let (app, store) = counting_app("[cache]\nresponse_bytes = 0").await;
    let first = get(&app, INNER).await;
    let before = store.total();
    let again = get(&app, INNER).await;
    assert_eq!(store.total(), before, "hot tile served without storage: {:?}", store.counts());
    assert_eq!(again.body, first.body);
    // Unsharded chunks too.
    let uri = "/v1/slice/conf/regular/u1_blosc?s=0:32,0:32";
    assert_eq!(get(&app, uri).await.status, 200);
    let before = store.total();
    assert_eq!(get(&app, uri).await.status, 200);
    assert_eq!(store.total(), before);
}

#[tokio::test]
async fn concurrent_cold_requests_share_one_read() {
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
    // Exactly one index read and one read of the inner chunk for all 64 requests.
    assert_eq!(gets - gets_before, 1 + 1, "{:?}", store.counts());
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
    let (app, store) = counting_app("[cache]\nchunk_bytes = 0").await;
    assert_eq!(get(&app, "/v1/arrays/conf/sharded/i2_rect_shards").await.status, 200);
    // Shard c/0/0 holds rows 0..10 and columns 0..50 as 5x5 inner chunks: read all 20.
    let before = store.total();
    assert_eq!(get(&app, "/v1/slice/conf/sharded/i2_rect_shards?s=0:10,0:50").await.status, 200);
    assert_eq!(store.total() - before, 2, "index + one coalesced range read: {:?}", store.counts());
}

/// A shard rewritten after its index was cached is never read with the stale index: the
/// If-Match range read fails, the index is dropped and the read retried on the new shard.
#[tokio::test]
async fn a_rewritten_shard_is_not_mixed_with_its_old_index() {
    use object_store::ObjectStoreExt;
    let (store, mem) = common::memory_store_handle(&common::conformance_dir().join("data.zarr")).await;
    let app = app_with(vec![("conf", store)], config("[cache]\nchunk_bytes = 0\nresponse_bytes = 0"));
    let uri = "/v1/slice/conf/sharded/i2_rect_shards?s=0:10,0:50&format=bin";
    let first = get(&app, uri).await;
    assert_eq!(first.status, 200);
    // Rewrite shard c/0/0 with the same values at other offsets: 7 bytes of padding in
    // front and an index (bytes + crc32c, at the end) shifted to match.
    let path = object_store::path::Path::from("sharded/i2_rect_shards/c/0/0");
    let old = mem.get(&path).await.unwrap().bytes().await.unwrap().to_vec();
    let n_chunks = 2 * 10; // a 10x50 shard of 5x5 inner chunks
    let index_len = 16 * n_chunks + 4;
    let (data, index) = old.split_at(old.len() - index_len);
    let mut shifted: Vec<u8> = index[..16 * n_chunks]
        .chunks_exact(8)
        .enumerate()
        .flat_map(|(i, w)| {
            let v = u64::from_le_bytes(w.try_into().unwrap());
            (if i % 2 == 0 && v != u64::MAX { v + 7 } else { v }).to_le_bytes()
        })
        .collect();
    shifted.extend(crc32c::crc32c(&shifted).to_le_bytes());
    let rewritten = [vec![0xAB; 7], data.to_vec(), shifted].concat();
    mem.put(&path, rewritten.into()).await.unwrap();
    let reply = get(&app, uri).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(reply.body, first.body, "the same values, read with the new shard's own index");
}

/// A revalidation against a cold server reads shard indexes (or HEADs chunks), never
/// chunk data.
#[tokio::test]
async fn a_cold_revalidation_reads_no_chunk_data() {
    let (warm, _) = counting_app("").await;
    for (uri, chunks) in [(INNER, 0u64), ("/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:20", 4)] {
        let etag = get(&warm, uri).await.header("etag").to_owned();
        let (cold, store) = counting_app("").await;
        let reply = get_with(&cold, uri, &[("if-none-match", &etag)]).await;
        assert_eq!(reply.status, 304, "{uri}");
        let (gets, heads, ranges, _) = store.counts();
        // zarr.json, plus the shard index for the sharded array; HEADs for the chunks.
        let index_reads = u64::from(chunks == 0);
        assert_eq!((gets, heads, ranges), (1 + index_reads, chunks, 0), "{uri}: {:?}", store.counts());
    }
}

/// With consolidated metadata (inline in the v3 root `zarr.json`; `.zmetadata` in v2), the
/// dataset's tree gives every consolidated node's metadata: describing an array afterwards
/// costs no request for its own metadata (finding its grid may look for coordinate arrays
/// its dimensions name and read their chunks).
#[tokio::test]
async fn consolidated_metadata_serves_every_node_without_a_request() {
    for (set, consolidated_array) in [("extra", "groups/a/b/f8_attrs"), ("zarr-v2-extra", "blosc/f8_lz4hc_noshuffle")] {
        let dir = common::fixtures().join(set).join("data.zarr");
        let counting = CountingStore::new(memory_store(&dir).await.backend());
        let store = Store::new(counting.clone(), object_store::path::Path::default());
        let app = app_with(vec![("conf", store)], config(""));
        let tree = get(&app, "/v1/datasets/conf").await;
        assert_eq!(tree.status, 200, "{}", tree.describe());
        let nodes = tree.json()["nodes"].as_array().unwrap().clone();
        assert!(nodes.iter().any(|n| n["path"] == consolidated_array), "{set}");
        let arrays_listed: Vec<String> = nodes
            .iter()
            .filter(|n| n["node_type"] == "array")
            .map(|n| n["path"].as_str().unwrap().to_owned())
            .filter(|p| !p.starts_with("tensorstore/"))
            .collect();
        let own = |c: &CountingStore| {
            c.got
                .lock()
                .unwrap()
                .iter()
                .filter(|g| arrays_listed.iter().any(|a| g.starts_with(&format!("{a}/"))))
                .count()
        };
        let before = own(&counting);
        let mut arrays = 0;
        for node in nodes.iter().filter(|n| n["node_type"] == "array") {
            let path = node["path"].as_str().unwrap();
            // tensorstore's arrays in `extra` sit under an implicit group that zarr-python
            // leaves out of the consolidated metadata: those are read on their own.
            if path.starts_with("tensorstore/") {
                continue;
            }
            let info = get(&app, &format!("/v1/arrays/conf/{path}")).await;
            assert!(info.status == 200 || info.status == 422, "{set} {path}: {}", info.describe());
            arrays += 1;
        }
        assert!(arrays > 5, "{set}: {arrays}");
        assert_eq!(own(&counting), before, "{set}: {:?}", counting.got.lock().unwrap());
    }
}

/// A map viewer's cold viewport: 64 tiles of 5x5 (one inner chunk each) over rows 5..25 and
/// columns 10..90 of `i2_rect_shards`, which are in 4 shards (rows 0..10 and 10..30,
/// columns 0..50 and 50..100).
const VIEWPORT: (std::ops::Range<u64>, std::ops::Range<u64>) = (5..25, 10..90);
const ARRAY: &str = "sharded/i2_rect_shards";

fn viewport_tiles() -> Vec<(u64, u64)> {
    let (rows, cols) = VIEWPORT;
    rows.step_by(5).flat_map(|r| cols.clone().step_by(5).map(move |c| (r, c))).collect()
}

/// Whether the inner chunk at tile `(r, c)` is stored, from the fixture's shard index
/// itself (16 bytes per inner chunk, then a crc32c; an offset of all ones: empty).
fn tile_is_stored((r, c): (u64, u64)) -> bool {
    let (shard_row, first_row, rows) = if r < 10 { (0, 0, 10) } else { (1, 10, 20) };
    let path = common::conformance_dir().join(format!("data.zarr/{ARRAY}/c/{shard_row}/{}", c / 50));
    let shard = std::fs::read(path).unwrap();
    let n = (rows / 5) * 10;
    let index = &shard[shard.len() - 16 * n as usize - 4..];
    let linear = ((r - first_row) / 5) * 10 + (c % 50) / 5;
    let at = 16 * linear as usize;
    u64::from_le_bytes(index[at..at + 8].try_into().unwrap()) != u64::MAX
}

/// Requests every tile of the viewport at once; each reply's status and, when 200, whether
/// its values are the fixture's expected ones (a failure is a problem document).
async fn read_viewport(app: &axum::Router) -> Vec<(u16, bool)> {
    let requests = viewport_tiles().into_iter().map(|(r, c)| {
        let app = app.clone();
        tokio::spawn(async move {
            let uri = format!("/v1/slice/conf/{ARRAY}?s={r}:{},{c}:{}&format=npy", r + 5, c + 5);
            (get(&app, &uri).await, r, c)
        })
    });
    let want = common::expected(&common::conformance_dir(), ARRAY);
    let mut out = Vec::new();
    for reply in futures::future::join_all(requests).await {
        let (reply, r, c) = reply.unwrap();
        let status = reply.status.as_u16();
        if status != 200 {
            assert!(reply.header("content-type").starts_with("application/problem+json"), "{}", reply.describe());
            out.push((status, false));
            continue;
        }
        let got = common::parse_npy(&reply.body);
        let indices = common::region_indices(&want.shape, &[r, c], &[5, 5]);
        assert_eq!(got.shape, [5, 5]);
        out.push((status, got.data == common::gather(&want, &indices)));
    }
    out
}

#[tokio::test]
async fn a_cold_viewport_of_64_tiles_costs_at_most_8_storage_requests() {
    let tiles = viewport_tiles();
    assert_eq!(tiles.len(), 64);
    let stored = tiles.iter().filter(|&&t| tile_is_stored(t)).count() as u64;
    // Off: one read per stored inner chunk plus the 4 indexes, as before; on: one read per
    // shard (its chunks are within the gap rule of each other) plus the indexes. Files on
    // this machine are read at once unless given a window of their own; the remote
    // window does not hold them.
    let (off, merged) = (4 + stored, 4 + 4);
    assert!(off > merged, "the viewport must hold more chunks than shards");
    let cases = [
        (false, "coalesce_window_ms = 0", off),
        (false, "coalesce_window_ms = 50", merged),
        (true, "coalesce_window_ms = 50", off),
        (true, "local_coalesce_window_ms = 50", merged),
    ];
    for (local, window, want) in cases {
        let (app, store) = counting_app_where(local, &format!("[storage]\n{window}")).await;
        assert_eq!(get(&app, &format!("/v1/arrays/conf/{ARRAY}")).await.status, 200);
        let before = store.total();
        let replies = read_viewport(&app).await;
        assert!(replies.iter().all(|&(status, right)| status == 200 && right), "{window}: {replies:?}");
        let requests = store.total() - before;
        println!("local {local}, {window}: {requests} storage requests ({stored} inner chunks stored)");
        let cmp = if want == off { requests == want } else { requests <= want };
        assert!(cmp, "local {local}, {window}: {requests} storage requests, want {want}: {:?}", store.counts());
    }
    let metrics = String::from_utf8(get(&counting_app("").await.0, "/metrics").await.body.to_vec()).unwrap();
    assert!(metrics.contains("zarrd_storage_requests_by_reason_total{reason=\"ranges\"}"), "{metrics}");
    assert!(metrics.lines().any(|l| l.starts_with("zarrd_coalescing_ratio ")), "{metrics}");
}

/// Storage faults under coalesced reads: a merged read that fails fails each request that
/// joined it with a problem document; no request ever gets a wrong value.
#[tokio::test]
async fn coalesced_reads_with_storage_faults_never_give_a_wrong_value() {
    let (app, store) =
        counting_app("[cache]\nchunk_bytes = 0\nresponse_bytes = 0\n[storage]\ncoalesce_window_ms = 50").await;
    // Warm the shard indexes, so the faults hit inner-chunk reads.
    let (rows, cols) = VIEWPORT;
    let whole = format!("/v1/slice/conf/{ARRAY}?s={}:{},{}:{}", rows.start, rows.end, cols.start, cols.end);
    assert_eq!(get(&app, &whole).await.status, 200);
    for shard in ["c/0/0", "c/0/1", "c/1/0", "c/1/1"] {
        // The next read of this shard answers "not found" although it exists.
        store.vanish(&format!("{ARRAY}/{shard}"), 1);
        let replies = read_viewport(&app).await;
        assert!(replies.iter().all(|&(status, right)| status != 200 || right), "{shard}: {replies:?}");
        // Only tiles of that shard fail (those whose read joined the failed one).
        let failed: Vec<(u64, u64)> =
            viewport_tiles().into_iter().zip(&replies).filter(|(_, r)| r.0 != 200).map(|(t, _)| t).collect();
        let in_shard = |(r, c): (u64, u64)| format!("c/{}/{}", u64::from(r >= 10), c / 50) == shard;
        assert!(!failed.is_empty() && failed.iter().all(|&t| in_shard(t)), "{shard}: {failed:?}");
    }
    // With the faults gone, every tile is right again.
    assert!(read_viewport(&app).await.iter().all(|&(status, right)| status == 200 && right));
}
