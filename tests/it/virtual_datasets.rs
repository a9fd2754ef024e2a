//! Virtual datasets: kerchunk reference sets (JSON version 0 and 1, templates and `gen`,
//! parquet reference directories) written by kerchunk 0.2.10 and `VirtualiZarr` 2.8 over
//! `NetCDF4` files written by xarray + h5netcdf (`tests/fixtures/virtual`,
//! `make_virtual_fixtures.py`), read through every route exactly as zarr-python reads them
//! (the manifest's expected values); references outside `virtual_refs` refused (403, never
//! read); a 10 GB reference refused before anything is read; reads of one referenced file
//! merged into few storage requests.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use common::conformance::read_npy as read_npy_at;
use common::{CountingStore, app_with, config, gather, get, parse_npy, region_indices};
use serde_json::Value;
use zarrd::config::DatasetConfig;
use zarrd_core::store::Store;
use zarrd_core::store::coalesce::Windows;

fn fixtures() -> PathBuf {
    common::fixtures().join("virtual")
}

fn manifest() -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join("manifest.json")).unwrap()).unwrap()
}

/// The `file://` URL of the fixtures' `source/` folder (what their references may read).
fn source_prefix() -> String {
    format!("file://{}/", fixtures().join("source").canonicalize().unwrap().display())
}

/// A dataset opened as a configuration opens it.
fn open(url: &str, virtual_refs: &[String]) -> Store {
    let ds = DatasetConfig { url: url.to_owned(), virtual_refs: virtual_refs.to_vec(), ..Default::default() };
    zarrd::catalog::open_store("ds", &ds).unwrap()
}

fn app(store: Store) -> Router {
    app_with(vec![("ds", store)], config(""))
}

fn shape_of(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// Every array of `dataset` (a manifest entry) through the data routes: the whole array
/// and its first half along the first dimension as npy, equal to zarr-python's values;
/// array info; the metadata document and a listing through `/zarr`; the dataset tree.
async fn check_dataset(app: &Router, dataset: &Value) {
    let id = dataset["id"].as_str().unwrap();
    let tree = get(app, "/v1/datasets/ds").await;
    assert_eq!(tree.status, 200, "{id}: {}", tree.describe());
    let tree = tree.json();
    for array in dataset["arrays"].as_array().unwrap() {
        let path = array["path"].as_str().unwrap();
        let ctx = format!("{id}/{path}");
        let want = parse_npy(&std::fs::read(fixtures().join(array["expected"].as_str().unwrap())).unwrap());
        let shape = shape_of(&array["shape"]);
        assert_eq!(want.shape, shape, "{ctx}");
        let (reply, got) = read_npy_at(app, &format!("/v1/slice/ds/{path}")).await;
        assert_eq!((got.descr.as_str(), &got.shape), (want.descr.as_str(), &want.shape), "{ctx}");
        assert!(got.data == want.data, "{ctx}: values differ from zarr-python's");
        assert!(reply.header("etag").starts_with('"'), "{ctx}: strong ETag");
        if let Some(&first) = shape.first()
            && first > 1
        {
            let half = first / 2;
            let (_, got) = read_npy_at(app, &format!("/v1/slice/ds/{path}?s=1:{}", half + 1)).await;
            let mut sub = shape.clone();
            sub[0] = half;
            let mut origin = vec![0; shape.len()];
            origin[0] = 1;
            assert!(got.data == gather(&want, &region_indices(&shape, &origin, &sub)), "{ctx}: a sub-selection");
        }
        let info = get(app, &format!("/v1/arrays/ds/{path}")).await;
        assert_eq!(info.status, 200, "{ctx}: {}", info.describe());
        assert_eq!(shape_of(&info.json()["shape"]), shape, "{ctx}");
        let v2 = info.json()["zarr_format"] == 2;
        let doc = get(app, &format!("/zarr/ds/{path}/{}", if v2 { ".zarray" } else { "zarr.json" })).await;
        assert_eq!(doc.status, 200, "{ctx}: {}", doc.describe());
        let nodes = tree["nodes"].as_array().unwrap();
        assert!(nodes.iter().any(|n| n["path"] == path && n["node_type"] == "array"), "{ctx}: in the tree {tree}");
        // The compatibility view reads it too (a client of plain Zarr v3).
        let compat = get(app, &format!("/compat/v3/ds/{path}/zarr.json")).await;
        assert_eq!(compat.status, 200, "{ctx}: {}", compat.describe());
    }
}

#[tokio::test]
async fn every_reference_set_reads_as_zarr_python_reads_it() {
    let allowed = [source_prefix()];
    let mut checked = 0;
    for dataset in manifest()["datasets"].as_array().unwrap() {
        let id = dataset["id"].as_str().unwrap();
        let kind = dataset["kind"].as_str().unwrap();
        if !kind.starts_with("kerchunk") || id == "kerchunk-evil" || id == "kerchunk-air-abs" {
            continue;
        }
        let url = fixtures().join(dataset["path"].as_str().unwrap());
        check_dataset(&app(open(url.to_str().unwrap(), &allowed)), dataset).await;
        checked += 1;
    }
    assert_eq!(checked, 10, "every JSON and parquet set of the manifest");
    common::assert_no_panics();
}

#[tokio::test]
async fn absolute_file_urls_read_under_their_prefix() {
    let dataset = manifest()["datasets"].as_array().unwrap().iter().find(|d| d["id"] == "kerchunk-air-abs").cloned();
    let dataset = dataset.unwrap();
    let template = std::fs::read_to_string(fixtures().join(dataset["path"].as_str().unwrap())).unwrap();
    let root = format!("file://{}/", fixtures().canonicalize().unwrap().display());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("air.json");
    std::fs::write(&file, template.replace("file:///ZARRD_FIXTURES/", &root)).unwrap();
    // `kind` forces what the name would also say.
    let ds = DatasetConfig {
        url: format!("file://{}", file.display()),
        kind: Some(zarrd::config::DatasetKind::Kerchunk),
        virtual_refs: vec![source_prefix()],
        ..Default::default()
    };
    let app = app(zarrd::catalog::open_store("ds", &ds).unwrap());
    check_dataset(&app, &dataset).await;
}

#[tokio::test]
async fn references_outside_virtual_refs_are_refused_and_never_read() {
    let dataset = manifest()["datasets"].as_array().unwrap().iter().find(|d| d["id"] == "kerchunk-evil").cloned();
    let dataset = dataset.unwrap();
    let app = app(open(fixtures().join("kerchunk/evil.json").to_str().unwrap(), &[source_prefix()]));
    // The inline array reads.
    let (_, ok) = read_npy_at(&app, "/v1/slice/ds/ok").await;
    assert_eq!(ok.data, [1, 2, 3, 4]);
    for (chunk, needle) in [
        (0, "file:///etc/passwd"),
        (1, "http://127.0.0.1:1/x"),
        (2, "../../../../etc/hostname"),
        (4, "file:///etc/passwd"),
    ] {
        for uri in [
            format!("/v1/slice/ds/evil?s={chunk}"),
            format!("/zarr/ds/evil/{chunk}"),
            format!("/v1/chunk/ds/evil?c={chunk}"),
        ] {
            let reply = get(&app, &uri).await;
            let problem = reply.assert_problem(403);
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(needle) && detail.contains("virtual_refs"), "{uri}: {detail}");
            assert!(!detail.contains("root:"), "{uri}: nothing of the file is shown: {detail}");
        }
    }
    // A reference claiming 10 GB inside an allowed file: refused before any allocation.
    let reply = get(&app, "/v1/slice/ds/evil?s=3").await;
    let problem = reply.assert_problem(422);
    assert!(problem["detail"].as_str().unwrap().contains("10000000000"), "{problem}");
    // The whole array touches every refused chunk: the first refusal answers.
    assert_eq!(get(&app, "/v1/slice/ds/evil").await.status, 403);
    assert_eq!(
        dataset["refused_chunks"].as_object().map(serde_json::Map::len),
        Some(5),
        "every refused chunk is checked"
    );
    common::assert_no_panics();
}

#[tokio::test]
async fn without_virtual_refs_only_inline_data_is_served() {
    let app = app(open(fixtures().join("kerchunk/air.json").to_str().unwrap(), &[]));
    // `lat` is inline (base64) in the set; `air` lives in air.nc.
    assert_eq!(get(&app, "/v1/slice/ds/lat").await.status, 200);
    let problem = get(&app, "/v1/slice/ds/air?s=0,0:10,0:16").await.assert_problem(403);
    assert!(problem["detail"].as_str().unwrap().contains("../source/air.nc"), "{problem}");
    // An allow-list of another folder does not help either.
    let other = format!("file://{}/", fixtures().join("kerchunk").canonicalize().unwrap().display());
    let app = self::app(open(fixtures().join("kerchunk/air.json").to_str().unwrap(), &[other]));
    get(&app, "/v1/slice/ds/air?s=0,0:10,0:16").await.assert_problem(403);
}

#[tokio::test]
async fn missing_and_short_referenced_files_are_502s_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.bin"), [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    let set = r#"{"version": 1, "refs": {
        ".zgroup": "{\"zarr_format\": 2}",
        "a/.zarray": "{\"zarr_format\": 2, \"shape\": [3], \"chunks\": [1], \"dtype\": \"|u1\", \"compressor\": null, \"filters\": null, \"fill_value\": 0, \"order\": \"C\"}",
        "a/0": ["data.bin", 2, 1],
        "a/1": ["data.bin", 8, 4],
        "a/2": ["missing.bin", 0, 1]}}"#;
    std::fs::write(dir.path().join("refs.json"), set).unwrap();
    let folder = format!("file://{}/", dir.path().canonicalize().unwrap().display());
    let app = app(open(dir.path().join("refs.json").to_str().unwrap(), &[folder]));
    let (_, first) = read_npy_at(&app, "/v1/slice/ds/a?s=0:1").await;
    assert_eq!(first.data, [3], "byte 2 of data.bin");
    for (s, file) in [("1", "data.bin"), ("2", "missing.bin")] {
        let problem = get(&app, &format!("/v1/slice/ds/a?s={s}")).await.assert_problem(502);
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(file) && !detail.contains(dir.path().to_str().unwrap()), "{detail}");
    }
    common::assert_no_panics();
}

/// The `kerchunk/air.json` set with its references read through a counting store, which
/// is remote or files on this machine (`local`), reads of it merged within `windows`.
fn counted_air(local: bool, windows: Windows) -> (Router, Arc<CountingStore>) {
    use zarrd_core::store::refs::targets::{Opener, Targets, prefix_url};
    use zarrd_core::store::refs::{RefStore, RefsFormat};
    let source = fixtures().join("source").canonicalize().unwrap();
    let counting =
        CountingStore::new(Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&source).unwrap()));
    let backend = Arc::clone(&counting);
    let open: Opener = Arc::new(move |_| {
        Ok(if local {
            Store::new(backend.clone(), object_store::path::Path::default()).on_this_machine()
        } else {
            Store::new(backend.clone(), object_store::path::Path::default())
        })
    });
    let folder = url::Url::from_directory_path(fixtures().join("kerchunk").canonicalize().unwrap()).unwrap();
    let targets = Targets::new(Some(folder), vec![prefix_url(&source_prefix()).unwrap()], open);
    let sets = common::local_store(&fixtures().join("kerchunk"));
    let refs = RefStore::new("ds".into(), (sets, "air.json".into()), RefsFormat::Json, targets, windows);
    let store = Store::uncounted(Arc::new(refs));
    (app_with(vec![("ds", store)], config("[cache]\nresponse_bytes = 0\nchunk_bytes = 0")), counting)
}

#[tokio::test]
async fn reads_of_one_referenced_file_are_merged() {
    // `air` has 27 chunks, 24 of them ranges of air.nc (3 are inline). Without a window
    // for where the file is, one request per referenced chunk: what merging saves.
    let window = std::time::Duration::from_millis(20);
    let zero = std::time::Duration::ZERO;
    for (local, windows, merged) in [
        (false, Windows { remote: window, local: zero }, true),
        (false, Windows { remote: zero, local: window }, false),
        (true, Windows { remote: window, local: zero }, false),
        (true, Windows { remote: zero, local: window }, true),
    ] {
        let (app, counting) = counted_air(local, windows);
        assert_eq!(get(&app, "/v1/arrays/ds/air").await.status, 200);
        let before = counting.total();
        let (_, got) = read_npy_at(&app, "/v1/slice/ds/air").await;
        let requests = counting.total() - before;
        assert_eq!(got.shape, [12, 25, 36]);
        eprintln!("local {local}, {windows:?}: 24 referenced chunks, {requests} storage requests");
        let want = if merged { (1..=6).contains(&requests) } else { requests == 24 };
        assert!(want, "local {local}, {windows:?}: {requests} storage requests: {:?}", counting.counts());
    }
}

#[tokio::test]
#[ignore = "needs the S3 service of .ci/services.sh"]
async fn reference_sets_and_their_files_on_s3() {
    let prefix = common::run_prefix("virtual");
    let _ = common::upload_to_s3(&fixtures(), &prefix).await;
    let bucket = common::service_env("ZARRD_TEST_S3_BUCKET");
    let options: Vec<(String, String)> = common::s3_options().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    for id in ["kerchunk-air", "kerchunk-combined-parquet", "virtualizarr-air-parquet"] {
        let dataset = manifest()["datasets"].as_array().unwrap().iter().find(|d| d["id"] == id).cloned().unwrap();
        let ds = DatasetConfig {
            url: format!("s3://{bucket}/{prefix}/{}", dataset["path"].as_str().unwrap()),
            options: options.iter().cloned().collect(),
            virtual_refs: vec![format!("s3://{bucket}/{prefix}/source/")],
            ..Default::default()
        };
        let app = app(zarrd::catalog::open_store("ds", &ds).unwrap());
        check_dataset(&app, &dataset).await;
    }
}

#[tokio::test]
#[ignore = "needs the nginx service of .ci/services.sh"]
async fn reference_sets_and_their_files_over_http() {
    let base = common::service_env("ZARRD_TEST_HTTP_URL");
    for id in ["kerchunk-air", "kerchunk-air-v0", "virtualizarr-combined-parquet"] {
        let dataset = manifest()["datasets"].as_array().unwrap().iter().find(|d| d["id"] == id).cloned().unwrap();
        // Relative references resolve against the set's own URL: onto the same server.
        let url = format!("{base}/virtual/{}", dataset["path"].as_str().unwrap());
        let app = app(open(&url, &[format!("{base}/virtual/source/")]));
        check_dataset(&app, &dataset).await;
    }
    // The same set with the server's other folders not allowed: refused, not fetched.
    let app = app(open(&format!("{base}/virtual/kerchunk/air.json"), &[format!("{base}/virtual/kerchunk/")]));
    get(&app, "/v1/slice/ds/air?s=0,0:10,0:16").await.assert_problem(403);
}
