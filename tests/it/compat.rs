//! The compatibility views (`/compat/v3`, `/compat/v2`) and directory listings, in
//! process: every fixture array is rebuilt from the view's own metadata and chunks with an
//! independent decoder (the zstd crate and little-endian bytes, nothing of zarrd's) and
//! compared bit for bit with the expected `.npy` written by the fixture writers; consolidated
//! metadata, listings and the HTTP behaviour (ranges, HEAD, validators, CORS, 404) too.
//! The real clients (zarr-python, `TensorStore`, xarray, `zarrita.js`) run in
//! `.ci/compat_clients.sh`.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use axum::Router;
use common::{expected, get, get_with};
use serde_json::Value;

/// The number sets of the conformance checks (text has a test of its own below).
fn sets() -> impl Iterator<Item = &'static str> {
    common::conformance::SETS.into_iter().filter(|s| !common::conformance::TEXT_SETS.contains(s))
}

/// View chunks that are the stored (or inner) chunks of every regular grid, however small,
/// and tiny (16 4-byte elements) elsewhere: the fixtures' small arrays then take the paths
/// of large ones (stored chunks served as they are, view chunks straddling stored ones).
const SMALL_VIEW_CHUNKS: &str = "[compat]\nmin_chunk_bytes = 1\nchunk_bytes = 64\n";

fn manifest(set: &str) -> Value {
    serde_json::from_slice(&std::fs::read(common::fixtures().join(set).join("manifest.json")).unwrap()).unwrap()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// The fill value of a view document as little-endian bytes, parsed here (not by zarrd).
fn fill_bytes(fill: &Value, descr: &str) -> Vec<u8> {
    let kind = &descr[1..2];
    let size: usize = descr[2..].parse().unwrap();
    let float = |v: &Value, size: usize| -> Vec<u8> {
        let x = match v {
            Value::String(s) if s == "NaN" => f64::NAN,
            Value::String(s) if s == "Infinity" => f64::INFINITY,
            Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
            Value::String(s) if s.starts_with("0x") => {
                let bits = u64::from_str_radix(&s[2..], 16).unwrap();
                return bits.to_le_bytes()[..size].to_vec();
            }
            v => v.as_f64().unwrap(),
        };
        match size {
            2 => half::f16::from_f64(x).to_le_bytes().to_vec(),
            4 => (x as f32).to_le_bytes().to_vec(),
            _ => x.to_le_bytes().to_vec(),
        }
    };
    match kind {
        "b" => vec![u8::from(fill.as_bool().unwrap())],
        "i" => fill.as_i64().unwrap().to_le_bytes()[..size].to_vec(),
        "u" => fill.as_u64().unwrap().to_le_bytes()[..size].to_vec(),
        "f" => float(fill, size),
        "c" => {
            let pair = fill.as_array().unwrap();
            [float(&pair[0], size / 2), float(&pair[1], size / 2)].concat()
        }
        other => panic!("kind {other}"),
    }
}

/// Rebuilds a whole array from a view: its metadata document, then every chunk (404: fill),
/// each decoded with the zstd crate and placed by the regular grid. Returns the elements
/// and the chunk bodies by key.
async fn rebuild(app: &Router, base: &str, descr: &str, v2: bool) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let (doc, shape, chunk) = view_doc(app, base, v2).await;
    if v2 {
        assert_eq!(doc["compressor"]["id"], "zstd", "{base}");
        assert_eq!(doc["dimension_separator"], "/");
        assert_eq!(doc["dtype"].as_str().unwrap().trim_start_matches(['<', '|']), &descr[1..]);
    } else {
        assert_eq!(doc["chunk_grid"]["name"], "regular", "{base}");
        let codecs: Vec<&str> = doc["codecs"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(codecs, ["bytes", "zstd"], "{base}");
    }
    let item: usize = descr[2..].parse().unwrap();
    let fill = fill_bytes(&doc["fill_value"], descr);
    let n: u64 = shape.iter().product();
    let mut out = fill.repeat(n as usize);
    let mut bodies = Vec::new();
    for (coords, key) in view_chunk_keys(&shape, &chunk, v2) {
        let reply = get(app, &format!("{base}/{key}")).await;
        if reply.status == 404 {
            reply.assert_problem(404);
            continue;
        }
        assert_eq!(reply.status, 200, "{base}/{key}: {}", reply.describe());
        let data = zstd::decode_all(reply.body.as_ref()).unwrap();
        let chunk_elems: u64 = chunk.iter().product();
        assert_eq!(data.len() as u64, chunk_elems * item as u64, "{base}/{key}: a full chunk");
        // Copy the part inside the array, element by element.
        for e in 0..chunk_elems {
            if let Some(index) = array_index(&coords, &chunk, &shape, e) {
                let (src, dst) = (e as usize * item, index as usize * item);
                out[dst..dst + item].copy_from_slice(&data[src..src + item]);
            }
        }
        bodies.push((key, reply.body.to_vec()));
    }
    (out, bodies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_array_reads_back_bit_exact_through_both_views() {
    for (set, sizing) in sets().flat_map(|set| [(set, ""), (set, SMALL_VIEW_CHUNKS)]) {
        let dir = common::fixtures().join(set);
        let local = common::local_store(&dir.join("data.zarr"));
        let memory = common::memory_store(&dir.join("data.zarr")).await;
        for (array, store) in manifest(set)["arrays"].as_array().unwrap().iter().zip([local, memory].iter().cycle()) {
            // Arrays alternate between the local-file and the in-memory backend.
            let app = common::app_with(vec![("conf", store.clone())], common::config(sizing));
            let path = array["path"].as_str().unwrap();
            let want = expected(&dir, path);
            let (v3, v3_bodies) = rebuild(&app, &format!("/compat/v3/conf/{path}"), &want.descr, false).await;
            assert!(v3 == want.data, "{set}/{path}: /compat/v3 values differ");
            let (v2, v2_bodies) = rebuild(&app, &format!("/compat/v2/conf/{path}"), &want.descr, true).await;
            assert!(v2 == want.data, "{set}/{path}: /compat/v2 values differ");
            // Both views serve the same chunk bytes (one encoding, one cache).
            let strip = |b: Vec<(String, Vec<u8>)>| b.into_iter().map(|(_, body)| body).collect::<Vec<_>>();
            assert!(strip(v3_bodies) == strip(v2_bodies), "{set}/{path}: views differ in chunk bytes");
        }
    }
}

/// The elements of one `vlen-utf8` frame, parsed here (not by zarrd): a u32 LE count, then
/// each element's u32 LE length and UTF-8 bytes.
fn parse_vlen(frame: &[u8]) -> Vec<String> {
    let u32_at = |at: usize| u32::from_le_bytes(frame[at..at + 4].try_into().unwrap()) as usize;
    let n = u32_at(0);
    let mut at = 4;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u32_at(at);
        out.push(String::from_utf8(frame[at + 4..at + 4 + len].to_vec()).unwrap());
        at += 4 + len;
    }
    assert_eq!(at, frame.len(), "bytes after the last element");
    out
}

/// Rebuilds a whole text array from a view (chunks: zstd, then `vlen-utf8` framing; 404:
/// the fill value). Returns the elements in C order, the chunk bodies and how many chunks
/// were missing.
async fn rebuild_text(app: &Router, base: &str, v2: bool) -> (Vec<String>, Vec<Vec<u8>>, usize) {
    let (doc, shape, chunk) = view_doc(app, base, v2).await;
    if v2 {
        // What numcodecs writes for object strings.
        assert_eq!(doc["dtype"], "|O", "{base}");
        assert_eq!(doc["filters"], serde_json::json!([{"id": "vlen-utf8"}]), "{base}");
        assert_eq!(doc["compressor"]["id"], "zstd", "{base}");
        assert_eq!(doc["dimension_separator"], "/");
    } else {
        // zarr-python 3's default chain of a `string` array, exactly.
        assert_eq!(doc["data_type"], "string", "{base}");
        assert_eq!(doc["chunk_grid"]["name"], "regular", "{base}");
        assert_eq!(
            doc["codecs"],
            serde_json::json!([{"name": "vlen-utf8", "configuration": {}},
                {"name": "zstd", "configuration": {"level": 0, "checksum": false}}]),
            "{base}"
        );
    }
    let fill = doc["fill_value"].as_str().unwrap().to_owned();
    let n: u64 = shape.iter().product();
    let mut out = vec![fill; n as usize];
    let (mut bodies, mut missing) = (Vec::new(), 0);
    for (coords, key) in view_chunk_keys(&shape, &chunk, v2) {
        let reply = get(app, &format!("{base}/{key}")).await;
        if reply.status == 404 {
            reply.assert_problem(404);
            missing += 1;
            continue;
        }
        assert_eq!(reply.status, 200, "{base}/{key}: {}", reply.describe());
        let elements = parse_vlen(&zstd::decode_all(reply.body.as_ref()).unwrap());
        let chunk_elems: u64 = chunk.iter().product();
        assert_eq!(elements.len() as u64, chunk_elems, "{base}/{key}: a full chunk");
        for (e, text) in elements.into_iter().enumerate() {
            if let Some(index) = array_index(&coords, &chunk, &shape, e as u64) {
                out[index as usize] = text;
            }
        }
        bodies.push(reply.body.to_vec());
    }
    (out, bodies, missing)
}

/// String arrays (v3 `string`, v2 `|O`; plain, compressed, sharded, 0-d, with missing
/// chunks) read back through both views as the fixture writer's expected text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_arrays_read_back_through_both_views() {
    let dir = common::fixtures().join("strings");
    let data = dir.join("data.zarr");
    // The view's own chunk shapes, and ones that straddle stored chunks (the region path,
    // with boundary padding) for every array with a dimension.
    let configured = "compat = { \"words_1d_zstd\" = [7], \"grid_2d_missing\" = [5, 5], \"sharded_2d\" = [4, 5], \
                      \"v2_objects_2d\" = [4, 4] }";
    let config = common::config(&format!(
        "[datasets.s]\nurl = \"{}\"\n[datasets.r]\nurl = \"{}\"\n{configured}\n",
        data.display(),
        data.display()
    ));
    let app = zarrd::app(zarrd::http::AppState::new(zarrd::catalog::Catalog::from_config(&config).unwrap(), config));
    let mut missing_seen = 0;
    for array in manifest("strings")["arrays"].as_array().unwrap() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&dir, path).texts();
        for ds in ["s", "r"] {
            let (v3, v3_bodies, v3_missing) = rebuild_text(&app, &format!("/compat/v3/{ds}/{path}"), false).await;
            assert!(v3 == want, "{ds}/{path}: /compat/v3 text differs:\n{v3:?}\n{want:?}");
            let (v2, v2_bodies, v2_missing) = rebuild_text(&app, &format!("/compat/v2/{ds}/{path}"), true).await;
            assert!(v2 == want, "{ds}/{path}: /compat/v2 text differs");
            assert!(v3_bodies == v2_bodies && v3_missing == v2_missing, "{ds}/{path}: views differ in chunks");
            missing_seen += v3_missing;
        }
    }
    assert!(missing_seen > 0, "the fixtures' missing chunks and shard are 404 in the views");
    // Stored vlen-utf8 + zstd chunks are served as they are.
    let stored = std::fs::read(data.join("words_1d_zstd/c/1")).unwrap();
    assert_eq!(get(&app, "/compat/v3/s/words_1d_zstd/c/1").await.body.as_ref(), stored.as_slice());
    // The arrays are in the group's consolidated metadata and .zmetadata.
    let root = get(&app, "/compat/v3/s/zarr.json").await.json();
    assert_eq!(root["consolidated_metadata"]["metadata"]["scalar"]["data_type"], "string");
    let zmeta = get(&app, "/compat/v2/s/.zmetadata").await.json();
    assert_eq!(zmeta["metadata"]["grid_2d_missing/.zarray"]["fill_value"], "n/a");
    // A chunk key past the grid is 404.
    get(&app, "/compat/v3/s/words_1d_zstd/c/5").await.assert_problem(404);
}

#[tokio::test]
async fn group_documents_carry_the_subtree_as_consolidated_metadata() {
    let dir = common::fixtures().join("extra");
    let app = common::app_with(vec![("conf", common::local_store(&dir.join("data.zarr")))], common::config(""));
    let root = get(&app, "/compat/v3/conf/zarr.json").await.json();
    assert_eq!(root["node_type"], "group");
    let consolidated = &root["consolidated_metadata"];
    assert_eq!(consolidated["kind"], "inline");
    assert_eq!(consolidated["must_understand"], false);
    let metadata = consolidated["metadata"].as_object().unwrap();
    for array in manifest("extra")["arrays"].as_array().unwrap() {
        let path = array["path"].as_str().unwrap();
        let own = get(&app, &format!("/compat/v3/conf/{path}/zarr.json")).await.json();
        assert_eq!(metadata[path], own, "{path}: consolidated entry is the array's own document");
        assert_eq!(u64s(&own["shape"]), u64s(&array["shape"]), "{path}");
    }
    // Implicit and explicit parent groups are groups, with an empty block of their own.
    assert_eq!(metadata["groups/a"]["node_type"], "group");
    assert_eq!(metadata["groups/a"]["consolidated_metadata"]["metadata"], serde_json::json!({}));
    // A sub-group's own document consolidates its subtree, keyed relative to it.
    let sub = get(&app, "/compat/v3/conf/groups/a/zarr.json").await.json();
    let keys: Vec<&String> = sub["consolidated_metadata"]["metadata"].as_object().unwrap().keys().collect();
    assert!(keys.contains(&&"b/f8_attrs".to_owned()) && keys.contains(&&"i4_dim_names_null".to_owned()), "{keys:?}");
    // v2: .zmetadata with every .zarray.
    let zmeta = get(&app, "/compat/v2/conf/.zmetadata").await.json();
    assert_eq!(zmeta["zarr_consolidated_format"], 1);
    assert_eq!(zmeta["metadata"]["groups/a/b/f8_attrs/.zarray"]["shape"], serde_json::json!([7, 9]));
    let attrs = &zmeta["metadata"]["groups/a/b/f8_attrs/.zattrs"];
    assert_eq!(attrs["_ARRAY_DIMENSIONS"].as_array().map(Vec::len), Some(2), "dimension names for v2 readers");
}

/// Every stored chunk of a zarr-python `bytes` + `zstd` array is served as it is.
#[tokio::test]
async fn chunks_already_in_the_view_encoding_are_served_as_stored() {
    let dir = common::conformance_dir().join("data.zarr");
    let app = common::app_with(vec![("conf", common::local_store(&dir))], common::config(SMALL_VIEW_CHUNKS));
    let stored = std::fs::read(dir.join("regular/f4_zstd_partial/c/0/1")).unwrap();
    let served = get(&app, "/compat/v3/conf/regular/f4_zstd_partial/c/0/1").await;
    assert_eq!(served.status, 200, "{}", served.describe());
    assert_eq!(served.body.as_ref(), stored.as_slice());
}

#[tokio::test]
async fn view_http_behaviour_matches_the_store() {
    let dir = common::conformance_dir().join("data.zarr");
    let app = common::app_with(vec![("conf", common::local_store(&dir))], common::config(SMALL_VIEW_CHUNKS));
    let uri = "/compat/v3/conf/rectilinear/f4/c/1/1";
    let whole = get(&app, uri).await;
    assert_eq!(whole.status, 200, "{}", whole.describe());
    let etag = whole.header("etag").to_owned();
    assert!(etag.starts_with('"'));
    assert_eq!(whole.header("content-length"), whole.body.len().to_string());
    let n = whole.body.len();
    let suffix = get_with(&app, uri, &[("range", "bytes=-10")]).await;
    assert_eq!(suffix.status, 206);
    assert_eq!(suffix.body.as_ref(), &whole.body[n - 10..]);
    assert_eq!(suffix.header("content-range"), format!("bytes {}-{}/{n}", n - 10, n - 1));
    let bounded = get_with(&app, uri, &[("range", "bytes=2-5")]).await;
    assert_eq!(bounded.body.as_ref(), &whole.body[2..6]);
    get_with(&app, uri, &[("range", &format!("bytes={n}-"))]).await.assert_problem(416);
    let again = get_with(&app, uri, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, 304);
    get_with(&app, uri, &[("if-match", "\"other\"")]).await.assert_problem(412);
    let head = app.clone().oneshot_head(uri).await;
    assert_eq!(head.0, 200);
    assert_eq!(head.1, n.to_string());
    // Missing keys are problem documents, with CORS.
    let missing = get_with(&app, "/compat/v3/conf/rectilinear/f4/c/9/9", &[("origin", "https://viewer.example")]).await;
    missing.assert_problem(404);
    assert_eq!(missing.header("access-control-allow-origin"), "*");
    get(&app, "/compat/v3/conf/no/such/zarr.json").await.assert_problem(404);
    get(&app, "/compat/v2/conf/regular/f4_zstd_partial/zarr.json").await.assert_problem(404);
    // A view chunk whose stored chunk is missing is 404 (clients read the fill value).
    assert!(!common::conformance_dir().join("data.zarr/regular/f4_zstd_partial/c/3/0").exists());
    get(&app, "/compat/v3/conf/regular/f4_zstd_partial/c/3/0").await.assert_problem(404);
    let doc = get(&app, "/compat/v3/conf/zarr.json").await;
    let doc_etag = doc.header("etag").to_owned();
    assert_eq!(get_with(&app, "/compat/v3/conf/zarr.json", &[("if-none-match", &doc_etag)]).await.status, 304);
}

/// A rewritten array changes the view's documents and the `ETag`s of its chunks.
#[tokio::test]
async fn views_follow_rewritten_arrays() {
    use object_store::ObjectStoreExt as _;
    let dir = common::conformance_dir().join("data.zarr");
    let (store, mem) = common::memory_store_handle(&dir).await;
    let config = common::config(&format!("[cache]\nmetadata_ttl_secs = 1\ncompat_bytes = 0\n{SMALL_VIEW_CHUNKS}"));
    let app = common::app_with(vec![("conf", store)], config);
    let chunk = "/compat/v3/conf/regular/f4_zstd_partial/c/0/1";
    let before = get(&app, chunk).await.header("etag").to_owned();
    let doc_before = get(&app, "/compat/v3/conf/regular/f4_zstd_partial/zarr.json").await.json();
    // New attributes, and chunk (0,1) replaced by chunk (0,0)'s bytes.
    let key = object_store::path::Path::from("regular/f4_zstd_partial/zarr.json");
    let mut meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("regular/f4_zstd_partial/zarr.json")).unwrap()).unwrap();
    meta["attributes"] = serde_json::json!({"rewritten": true});
    mem.put(&key, serde_json::to_vec(&meta).unwrap().into()).await.unwrap();
    let c00 = std::fs::read(dir.join("regular/f4_zstd_partial/c/0/0")).unwrap();
    mem.put(&object_store::path::Path::from("regular/f4_zstd_partial/c/0/1"), c00.clone().into()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let doc_after = get(&app, "/compat/v3/conf/regular/f4_zstd_partial/zarr.json").await.json();
    assert_ne!(doc_before, doc_after);
    assert_eq!(doc_after["attributes"]["rewritten"], true);
    let after = get(&app, chunk).await;
    assert_ne!(after.header("etag"), before);
    assert_eq!(after.body.as_ref(), c00.as_slice());
}

#[tokio::test]
async fn directory_urls_list_their_entries() {
    let app = common::conformance_app();
    // /zarr: the store's own listing.
    let html = get(&app, "/zarr/conf/regular/").await;
    assert_eq!(html.status, 200, "{}", html.describe());
    assert!(html.header("content-type").starts_with("text/html"));
    let text = String::from_utf8_lossy(&html.body);
    assert!(text.contains("<a href=\"f4_zstd_partial/\">"), "{text}");
    let json = get_with(&app, "/zarr/conf/regular/f4_zstd_partial/", &[("accept", "application/json")]).await;
    let entries = json.json()["entries"].as_array().unwrap().clone();
    assert!(entries.iter().any(|e| e["name"] == "zarr.json" && e["kind"] == "object" && e["size"].as_u64().is_some()));
    assert!(entries.iter().any(|e| e["name"] == "c" && e["kind"] == "directory"));
    // Without the trailing slash, a directory redirects to its listing.
    let redirect = get(&app, "/zarr/conf/regular").await;
    assert_eq!(redirect.status, 308);
    assert_eq!(redirect.header("location"), "/zarr/conf/regular/");
    assert_eq!(get(&app, "/zarr/conf").await.header("location"), "/zarr/conf/");
    assert!(String::from_utf8_lossy(&get(&app, "/zarr/conf/").await.body).contains("href=\"zarr.json\""));
    get(&app, "/zarr/conf/nothing/here/").await.assert_problem(404);
    // Listings honour ranges and validators like the objects beside them.
    let first = get_with(&app, "/zarr/conf/", &[("range", "bytes=0-0")]).await;
    assert_eq!((first.status.as_u16(), first.body.as_ref()), (206, b"<".as_slice()));
    let listing = get(&app, "/zarr/conf/").await;
    let etag = listing.header("etag").to_owned();
    assert_eq!(get_with(&app, "/zarr/conf/", &[("if-none-match", &etag)]).await.status, 304);
    // The views list their own tree, down to chunk keys.
    let root = get_with(&app, "/compat/v3/conf/", &[("accept", "application/json")]).await.json();
    let names: Vec<&str> = root["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["rectilinear", "regular", "sharded", "tensorstore", "zarr.json"]);
    // 60 × 100 float32 (23 KiB) in rectilinear chunks: one view chunk.
    let level = get_with(&app, "/compat/v3/conf/rectilinear/f4/c/", &[("accept", "application/json")]).await.json();
    assert_eq!(level["entries"], serde_json::json!([{"kind": "directory", "name": "0"}]), "{level}");
    let v2 = get_with(&app, "/compat/v2/conf/", &[("accept", "application/json")]).await.json();
    let names: Vec<&str> = v2["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&".zmetadata") && names.contains(&".zgroup"), "{names:?}");
    assert_eq!(get(&app, "/compat/v3/conf/regular").await.status, 308);
}

/// A store that can neither list nor has consolidated metadata (a plain HTTP server): the
/// views still serve every node a key leads to, and groups claim no subtree.
#[tokio::test]
async fn views_over_a_store_that_cannot_list() {
    let dir = common::conformance_dir();
    let counting = unlisting().await;
    let origin = zarrd_core::store::web_origin::WebOrigin::new(counting);
    let store = zarrd_core::store::Store::web(origin, object_store::path::Path::default());
    let app = common::app_with(vec![("conf", store)], common::config(""));
    for path in ["regular/f4_zstd_partial", "rectilinear/u1_months_3d", "sharded/u4_nested"] {
        let want = expected(&dir, path);
        let (got, _) = rebuild(&app, &format!("/compat/v3/conf/{path}"), &want.descr, false).await;
        assert!(got == want.data, "{path}");
    }
    let root = get(&app, "/compat/v3/conf/zarr.json").await;
    assert_eq!(root.status, 200, "{}", root.describe());
    assert!(root.json().get("consolidated_metadata").is_none(), "an incomplete tree claims no subtree");
    get(&app, "/compat/v2/conf/.zmetadata").await.assert_problem(404);
    assert_eq!(get(&app, "/compat/v2/conf/.zgroup").await.status, 200);
}

/// The conformance store in memory, its listings failing.
async fn unlisting() -> std::sync::Arc<common::CountingStore> {
    let (store, _) = common::memory_store_handle(&common::conformance_dir().join("data.zarr")).await;
    let counting = common::CountingStore::new(store.backend());
    counting.no_listing.store(true, std::sync::atomic::Ordering::SeqCst);
    counting
}

/// A listing that fails on a store that lists (object storage, not a plain web server) is a
/// storage failure: the views answer it as one (502) instead of serving a partial tree as
/// if the store could not list.
#[tokio::test]
async fn a_failed_listing_is_a_storage_failure_not_a_store_that_cannot_list() {
    let counting = unlisting().await;
    let store = zarrd_core::store::Store::new(counting.clone(), object_store::path::Path::default());
    let app = common::app_with(vec![("conf", store)], common::config(""));
    get(&app, "/compat/v3/conf/zarr.json").await.assert_problem(502);
    get(&app, "/compat/v2/conf/regular/f4_zstd_partial/.zarray").await.assert_problem(502);
    // Once the store lists again, the views are whole.
    counting.no_listing.store(false, std::sync::atomic::Ordering::SeqCst);
    let app = common::app_with(
        vec![("conf", zarrd_core::store::Store::new(counting, object_store::path::Path::default()))],
        common::config(""),
    );
    let root = get(&app, "/compat/v3/conf/zarr.json").await;
    assert_eq!(root.status, 200, "{}", root.describe());
    assert!(root.json().get("consolidated_metadata").is_some());
}

/// `datasets.NAME.compat` sets an array's view chunk shape.
#[tokio::test]
async fn configured_view_chunk_shapes() {
    let dir = common::conformance_dir();
    let config = common::config(&format!(
        "[datasets.conf]\nurl = \"{}\"\ncompat = {{ \"rectilinear/f4\" = [7, 100] }}\n",
        dir.join("data.zarr").display()
    ));
    let catalog = zarrd::catalog::Catalog::from_config(&config).unwrap();
    let app = zarrd::app(zarrd::http::AppState::new(catalog, config));
    let doc = get(&app, "/compat/v3/conf/rectilinear/f4/zarr.json").await.json();
    assert_eq!(doc["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([7, 100]));
    let want = expected(&dir, "rectilinear/f4");
    let (got, _) = rebuild(&app, "/compat/v3/conf/rectilinear/f4", &want.descr, false).await;
    assert!(got == want.data);
}

/// Arrays the views are read through on the S3 and HTTP backends: (fixture set, dataset
/// name, paths). Sharded (regular and rectilinear shards, nested), rectilinear, v2 (a
/// `.zmetadata` tree, F order) and text arrays.
const SERVICE_ARRAYS: [(&str, &str, &[&str]); 3] = [
    (
        "conformance",
        "conf",
        &["sharded/u4_nested", "sharded/i2_rect_shards", "rectilinear/f4", "rectilinear/u1_months_3d", "regular/c8"],
    ),
    ("zarr-v2", "v2", &["grid/f4_blosc_default", "grid/i2_zlib_order_f", "scalar_f4"]),
    ("strings", "text", &["sharded_2d", "v2_objects_2d"]),
];

/// Reads [`SERVICE_ARRAYS`] through both views of `stores` (one per fixture set, in that
/// order) and compares them with the fixtures' expected values. `lists`: whether the
/// backend can list, so the conformance root consolidates its subtree.
async fn views_over(stores: Vec<zarrd_core::store::Store>, lists: bool) {
    let named = SERVICE_ARRAYS.iter().zip(stores).map(|((_, ds, _), store)| (*ds, store)).collect();
    let app = common::app_with(named, common::config(""));
    for (set, ds, paths) in SERVICE_ARRAYS {
        let dir = common::fixtures().join(set);
        for path in paths {
            let want = expected(&dir, path);
            if want.is_text() {
                let want = want.texts();
                for v2 in [false, true] {
                    let flavor = if v2 { "v2" } else { "v3" };
                    let (got, ..) = rebuild_text(&app, &format!("/compat/{flavor}/{ds}/{path}"), v2).await;
                    assert!(got == want, "{set}/{path}: /compat/{flavor} text differs");
                }
                continue;
            }
            let (v3, v3_bodies) = rebuild(&app, &format!("/compat/v3/{ds}/{path}"), &want.descr, false).await;
            assert!(v3 == want.data, "{set}/{path}: /compat/v3 values differ");
            let (v2, v2_bodies) = rebuild(&app, &format!("/compat/v2/{ds}/{path}"), &want.descr, true).await;
            assert!(v2 == want.data, "{set}/{path}: /compat/v2 values differ");
            let bodies = |b: Vec<(String, Vec<u8>)>| b.into_iter().map(|(_, body)| body).collect::<Vec<_>>();
            assert!(bodies(v3_bodies) == bodies(v2_bodies), "{set}/{path}: views differ in chunk bytes");
        }
    }
    // The v2 set's tree comes from its .zmetadata on any backend.
    let zmeta = get(&app, "/compat/v2/v2/.zmetadata").await;
    assert_eq!(zmeta.status, 200, "{}", zmeta.describe());
    assert!(zmeta.json()["metadata"]["grid/bool_bz2/.zarray"].is_object());
    // The conformance set has no consolidated metadata: its root consolidates its subtree
    // only when the backend can list it.
    let root = get(&app, "/compat/v3/conf/zarr.json").await;
    assert_eq!(root.status, 200, "{}", root.describe());
    let consolidated = &root.json()["consolidated_metadata"]["metadata"];
    assert_eq!(consolidated["sharded/u4_nested"]["node_type"].is_string(), lists, "{consolidated}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Garage on loopback: run through bash .ci/run"]
async fn views_over_s3() {
    let run = common::run_prefix("views");
    let mut stores = Vec::new();
    for (set, ..) in SERVICE_ARRAYS {
        let dir = common::fixtures().join(set).join("data.zarr");
        stores.push(common::upload_to_s3(&dir, &format!("{run}/{set}/data.zarr")).await);
    }
    views_over(stores, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx on loopback: run through bash .ci/run"]
async fn views_over_http() {
    let base = common::service_env("ZARRD_TEST_HTTP_URL");
    let stores = SERVICE_ARRAYS
        .iter()
        .map(|(set, ..)| common::open_dataset(format!("{base}/{set}/data.zarr"), &[("allow_http", "true".to_owned())]))
        .collect();
    views_over(stores, false).await;
}

trait HeadExt {
    async fn oneshot_head(self, uri: &str) -> (u16, String);
}

impl HeadExt for Router {
    async fn oneshot_head(self, uri: &str) -> (u16, String) {
        use tower::ServiceExt as _;
        let request = axum::http::Request::head(uri).body(axum::body::Body::empty()).unwrap();
        let response = self.oneshot(request).await.unwrap();
        let length =
            response.headers().get("content-length").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        (response.status().as_u16(), length)
    }
}

/// The flat C-order index in an array of `shape` of element `e` (C order) of the chunk at
/// `coords` of a regular grid of `chunk`; `None` for elements of a boundary chunk that lie
/// past the array's edge.
fn array_index(coords: &[u64], chunk: &[u64], shape: &[u64], e: u64) -> Option<u64> {
    let (mut rest, mut index, mut stride) = (e, 0u64, 1u64);
    for d in (0..chunk.len()).rev() {
        let x = coords[d] * chunk[d] + rest % chunk[d];
        if x >= shape[d] {
            return None;
        }
        rest /= chunk[d];
        index += x * stride;
        stride *= shape[d];
    }
    Some(index)
}

/// A view's array metadata document (`.zarray` or `zarr.json`), with its shape and its
/// regular chunk shape.
async fn view_doc(app: &Router, base: &str, v2: bool) -> (Value, Vec<u64>, Vec<u64>) {
    let doc_key = if v2 { ".zarray" } else { "zarr.json" };
    let reply = get(app, &format!("{base}/{doc_key}")).await;
    assert_eq!(reply.status, 200, "{base}: {}", reply.describe());
    let doc = reply.json();
    let shape = u64s(&doc["shape"]);
    let chunk = if v2 { u64s(&doc["chunks"]) } else { u64s(&doc["chunk_grid"]["configuration"]["chunk_shape"]) };
    (doc, shape, chunk)
}

/// Every chunk of a view's regular grid in C order, with its key: v2 `i/j` (`0` for a 0-d
/// array), v3 `c/i/j`.
fn view_chunk_keys(shape: &[u64], chunk: &[u64], v2: bool) -> Vec<(Vec<u64>, String)> {
    let grid: Vec<u64> = shape.iter().zip(chunk).map(|(s, c)| s.div_ceil(*c)).collect();
    (0..grid.iter().product::<u64>())
        .map(|flat| {
            let coords = common::unravel(flat, &grid);
            let indices: Vec<String> = coords.iter().map(u64::to_string).collect();
            let key = match (v2, indices.is_empty()) {
                (true, true) => "0".to_owned(),
                (true, false) => indices.join("/"),
                (false, _) => std::iter::once("c".to_owned()).chain(indices).collect::<Vec<_>>().join("/"),
            };
            (coords, key)
        })
        .collect()
}
