//! Every conformance array (written by zarr-python 3.4.2 and tensorstore; Zarr v2 stores
//! written by zarr-python 3.4.2 with numcodecs; fanout-keyed arrays written with the fanout
//! reference encoding) read through the HTTP API, in every format and for many selections,
//! compared with the expected `.npy` values; and every other route (array info, chunk
//! listings, raw and decoded chunks, `/zarr`, conditional requests) over the same arrays.
//! Expected selection results come from `NumPy` (`selections/<set>.json`). The `strings` set
//! (zarr-python 3.4.2: v3 `string` + `vlen-utf8`, v2 `|O` + `VLenUTF8`) is compared with the
//! `NumPy` `U` arrays zarr-python's reads were saved as.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use common::conformance::{
    SETS, TEXT_SETS, assert_same_bits, check_all_arrays, check_reads, check_set, encode_s, read_npy, set_dir,
};
use common::{expected, gather, get};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_local_files() {
    for set in SETS {
        check_set(common::local_store(&set_dir(set).join("data.zarr")), set).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_memory() {
    for set in SETS {
        check_set(common::memory_store(&set_dir(set).join("data.zarr")).await, set).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Garage on loopback: run through bash .ci/run"]
async fn conformance_over_s3() {
    let run = common::run_prefix("run");
    for set in SETS {
        let store = common::upload_to_s3(&set_dir(set).join("data.zarr"), &format!("{run}/{set}/data.zarr")).await;
        check_set(store, set).await;
    }
}

/// An HTTP origin that ignores `Range` (Python's `http.server`, as tutorials serve a local
/// store): every array reads as over any other store, shard indexes and inner chunks cut
/// from whole objects. Reads only, of the sets with sharded arrays (numbers and text) and
/// a v2 set: at this origin's pace (a request per ~50 ms here) the rest would add minutes
/// and test nothing the other backends do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_an_origin_that_ignores_ranges() {
    let origin = common::PythonHttpServer::start(&common::fixtures());
    for set in ["conformance", "strings", "zarr-v2"] {
        let store = common::open_dataset(format!("{}/{set}/data.zarr", origin.url), &[]);
        check_reads(&common::app_with(vec![("conf", store)], common::config("")), set).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx on loopback: run through bash .ci/run"]
async fn conformance_over_http() {
    let base = common::service_env("ZARRD_TEST_HTTP_URL");
    for set in SETS {
        // An `http://` URL needs no `allow_http` option: it says plain HTTP itself.
        let store = common::open_dataset(format!("{base}/{set}/data.zarr"), &[]);
        check_set(store.clone(), set).await;
        let app = common::app_with(vec![("conf", store)], common::config(""));
        // A plain HTTP server cannot list directories: the tree then comes from the
        // consolidated metadata (the extra set has it in zarr.json, the v2 set in .zmetadata)
        // or is a clear storage error.
        let tree = get(&app, "/v1/datasets/conf").await;
        if set == "extra" {
            assert_eq!(tree.status, 200, "{}", tree.describe());
            assert!(tree.json()["nodes"].as_array().unwrap().iter().any(|n| n["path"] == "groups/a/b/f8_attrs"));
        } else if set.starts_with("zarr-v2") {
            assert_eq!(tree.status, 200, "{}", tree.describe());
            let first = if set == "zarr-v2" { "grid/bool_bz2" } else { "blosc/f8_lz4hc_noshuffle" };
            assert!(tree.json()["nodes"].as_array().unwrap().iter().any(|n| n["path"] == first), "{set}");
        } else {
            tree.assert_problem(502);
        }
    }
}

/// Every numeric array with the decoded-chunk cache off: each read decodes for its own
/// request, so chunks that fill whole output rows are decoded straight into the output and
/// a single-chunk output is sent as decoded — paths the cached reads above never take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_with_the_chunk_cache_off() {
    for set in SETS.iter().filter(|s| !TEXT_SETS.contains(s)) {
        let store = common::local_store(&set_dir(set).join("data.zarr"));
        let app = common::app_with(vec![("conf", store)], common::config("[cache]\nchunk_bytes = 0"));
        check_all_arrays(&app, set).await;
    }
}

/// The flat C-order indices of the box `start..start + count` in an array of `shape`.
fn box_indices(shape: &[u64], start: &[u64], count: &[u64]) -> Vec<u64> {
    let mut indices = vec![0u64];
    for d in 0..shape.len() {
        indices =
            indices.iter().flat_map(|&i| (start[d]..start[d] + count[d]).map(move |j| i * shape[d] + j)).collect();
    }
    indices
}

/// The first read-grid chunk of every numeric array, requested exactly (the hot-tile
/// request of a viewer), in every format, with the decoded-chunk cache off and on, twice
/// each (the repeat is sent from the chunk cache as it is when it is on), and with the
/// response cache too (the repeat is then the kept response).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_chunks_are_served_whole() {
    for cache in ["[cache]\nresponse_bytes = 0", "[cache]\nchunk_bytes = 0\nresponse_bytes = 0", ""] {
        for set in SETS.iter().filter(|s| !TEXT_SETS.contains(s)) {
            let store = common::local_store(&set_dir(set).join("data.zarr"));
            let app = common::app_with(vec![("conf", store)], common::config(cache));
            let manifest: Value =
                serde_json::from_slice(&std::fs::read(set_dir(set).join("manifest.json")).unwrap()).unwrap();
            for array in manifest["arrays"].as_array().unwrap() {
                let path = array["path"].as_str().unwrap();
                let info = get(&app, &format!("/v1/arrays/conf/{path}")).await.json();
                let Some(chunk) = info["read_chunk_shape"].as_array() else { continue };
                let want = expected(&set_dir(set), path);
                let count: Vec<u64> = chunk.iter().zip(&want.shape).map(|(c, &n)| c.as_u64().unwrap().min(n)).collect();
                if count.contains(&0) {
                    continue;
                }
                let s = count.iter().map(|c| format!("0:{c}")).collect::<Vec<_>>().join(",");
                let want_data = gather(&want, &box_indices(&want.shape, &vec![0; count.len()], &count));
                for _ in 0..2 {
                    let (_, got) = read_npy(&app, &format!("/v1/slice/conf/{path}?s={}", encode_s(&s))).await;
                    assert_eq!(got.shape, count, "{set}/{path} s={s}");
                    assert_same_bits(path, &s, &got.data, &want_data);
                    let bin = get(&app, &format!("/v1/slice/conf/{path}?s={}&format=bin", encode_s(&s))).await;
                    assert_eq!(bin.status, 200, "{}", bin.describe());
                    assert_same_bits(path, &s, &bin.body, &want_data);
                }
            }
        }
    }
}
