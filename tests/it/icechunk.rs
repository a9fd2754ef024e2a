//! Icechunk repositories (`tests/fixtures/virtual/icechunk`, written by icechunk-python
//! 2.3 with native, inline and virtual chunks, branches, a tag and several snapshots):
//! every array at every version reads as icechunk-python + zarr-python read it, through
//! `{ds}@{ref}` on the data routes; versions are listed; tags and snapshot ids are
//! immutable (and say so in `Cache-Control`), branches are not; an unknown ref is a 404;
//! virtual chunks outside `virtual_refs` are refused.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // test helpers panic on broken fixtures by design; fixture values compare exactly

use crate::common;

use std::path::PathBuf;

use axum::Router;
use common::conformance::read_npy;
use common::{config, get, get_with, parse_npy};
use serde_json::Value;
use zarrd::config::DatasetConfig;

fn fixtures() -> PathBuf {
    common::fixtures().join("virtual")
}

fn dataset(id: &str) -> Value {
    let manifest: Value = serde_json::from_slice(&std::fs::read(fixtures().join("manifest.json")).unwrap()).unwrap();
    manifest["datasets"].as_array().unwrap().iter().find(|d| d["id"] == id).cloned().unwrap()
}

/// The virtual repository's chunks name `file:///tmp/zarrd-virtual-fixtures/source/` (an
/// Icechunk container cannot be relative): the `NetCDF` files are put there.
fn place_sources() -> String {
    let dir = PathBuf::from("/tmp/zarrd-virtual-fixtures/source");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["air.nc", "air2.nc"] {
        let target = dir.join(name);
        let bytes = std::fs::read(fixtures().join("source").join(name)).unwrap();
        if std::fs::read(&target).ok().as_deref() != Some(bytes.as_slice()) {
            // Written whole under another name, then renamed: concurrent tests never see half a file.
            let partial = dir.join(format!("{name}.{}", std::process::id()));
            std::fs::write(&partial, &bytes).unwrap();
            std::fs::rename(&partial, &target).unwrap();
        }
    }
    "file:///tmp/zarrd-virtual-fixtures/source/".to_owned()
}

fn app(repo: &str, virtual_refs: Vec<String>) -> Router {
    let url = fixtures().join("icechunk").join(repo).to_str().unwrap().to_owned();
    app_for(DatasetConfig { url, virtual_refs, ..Default::default() })
}

fn app_for(ds: DatasetConfig) -> Router {
    let mut config_with = config("");
    config_with.datasets = [("ic".to_owned(), ds)].into_iter().collect();
    let catalog = zarrd::catalog::Catalog::from_config(&config_with).unwrap();
    zarrd::http::app(zarrd::http::AppState::new(catalog, config_with))
}

/// Every array of every version of `id` through `/v1/slice/ic@REF/...` (and the default
/// version, `main`, through `/v1/slice/ic/...`).
async fn check_versions(app: &Router, id: &str) {
    let dataset = dataset(id);
    let mut checked = 0;
    for version in dataset["versions"].as_array().unwrap() {
        let reference = version["ref"].as_str().unwrap();
        let immutable = version["ref_type"] != "branch";
        for array in version["arrays"].as_array().unwrap() {
            let path = array["path"].as_str().unwrap();
            let want = parse_npy(&std::fs::read(fixtures().join(array["expected"].as_str().unwrap())).unwrap());
            let uri = format!("/v1/slice/ic@{reference}/{path}");
            let (reply, got) = read_npy(app, &uri).await;
            assert_eq!((&got.descr, &got.shape), (&want.descr, &want.shape), "{uri}");
            assert!(got.data == want.data, "{uri}: values differ from icechunk-python's");
            let snapshot = version["snapshot_id"].as_str().unwrap();
            let cache = reply.header("cache-control");
            assert_eq!(cache.contains("immutable"), immutable, "{uri}: {cache}");
            // The ETag names the snapshot, so no two versions share one.
            let again = get_with(app, &uri, &[("if-none-match", reply.header("etag"))]).await;
            assert_eq!(again.status, 304, "{uri}");
            if reference == "main" {
                let (_, default) = read_npy(app, &format!("/v1/slice/ic/{path}")).await;
                assert!(default.data == want.data, "{path}: the default version is main");
            }
            let info = get(app, &format!("/zarr/ic@{snapshot}/{path}/zarr.json")).await;
            assert_eq!(info.status, 200, "{}", info.describe());
            checked += 1;
        }
        let tree = get(app, &format!("/v1/datasets/ic@{reference}")).await;
        assert_eq!(tree.status, 200, "{}", tree.describe());
    }
    assert!(checked > 4, "{id}: {checked} arrays checked");
}

#[tokio::test]
async fn native_repository_at_every_version() {
    let app = app("native.icechunk", vec![]);
    check_versions(&app, "icechunk-native").await;
    // Every route takes `{ds}@{ref}`: IIIF (the identifier names the version), the
    // compatibility views, the viewer.
    let info = get(&app, "/iiif/3/ic%40v1%2Fgrp%2Fzstd/info.json").await;
    assert_eq!(info.status, 200, "{}", info.describe());
    assert!(info.json()["id"].as_str().unwrap().ends_with("/iiif/3/ic%40v1%2Fgrp%2Fzstd"), "{}", info.json());
    assert!(info.header("cache-control").contains("immutable"));
    let tile = get(&app, "/iiif/3/ic%40v1%2Fgrp%2Fzstd/full/max/0/default.png").await;
    assert_eq!((tile.status.as_u16(), tile.header("content-type")), (200, "image/png"));
    for uri in ["/compat/v3/ic@dev/zarr.json", "/compat/v2/ic@v1/.zmetadata", "/view/ic@dev/sharded"] {
        let reply = get(&app, uri).await;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
    }
    // What exists only on one branch.
    assert_eq!(get(&app, "/v1/arrays/ic@main/added").await.status, 200);
    get(&app, "/v1/arrays/ic@dev/added").await.assert_problem(404);
    get(&app, "/v1/arrays/ic@nope/added").await.assert_problem(404);
    get(&app, "/v1/slice/ic@AAAAAAAAAAAAAAAAAAAA/tiny").await.assert_problem(404);
    let versions = get(&app, "/v1/datasets/ic/versions").await;
    assert_eq!(versions.status, 200, "{}", versions.describe());
    let versions = versions.json();
    let want = dataset("icechunk-native");
    for (kind, key) in [("branches", "branches"), ("tags", "tags")] {
        let listed: Vec<(String, String)> = versions[kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap().to_owned(), v["snapshot"].as_str().unwrap().to_owned()))
            .collect();
        let mut expected: Vec<(String, String)> =
            want[key].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
        expected.sort();
        assert_eq!(listed, expected, "{kind}");
    }
    common::assert_no_panics();
}

#[tokio::test]
async fn virtual_chunks_read_under_virtual_refs_only() {
    let prefix = place_sources();
    check_versions(&app("virtual.icechunk", vec![prefix]), "icechunk-virtual").await;
    // Without the prefix allowed, the virtual chunks are refused; native arrays still read.
    let app = app("virtual.icechunk", vec![]);
    let problem = get(&app, "/v1/slice/ic/air?s=0,0:10,0:16").await.assert_problem(403);
    assert!(problem["detail"].as_str().unwrap().contains("/tmp/zarrd-virtual-fixtures/source/air"), "{problem}");
    let native = dataset("icechunk-virtual")["versions"][0]["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"].as_str().unwrap().starts_with("native/"))
        .cloned()
        .unwrap();
    let uri = format!("/v1/slice/ic/{}", native["path"].as_str().unwrap());
    assert_eq!(get(&app, &uri).await.status, 200);
    // A dataset that is not versioned has no `@REF`.
    get(&app, "/v1/datasets/ic@main/versions").await.assert_problem(404);
}

#[tokio::test]
#[ignore = "needs the S3 service of .ci/services.sh"]
async fn repositories_on_s3() {
    let prefix = common::run_prefix("icechunk");
    common::upload_to_s3(&fixtures().join("icechunk/native.icechunk"), &prefix).await;
    let bucket = common::service_env("ZARRD_TEST_S3_BUCKET");
    let options = common::s3_options().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let ds = DatasetConfig {
        url: format!("s3://{bucket}/{prefix}"),
        kind: Some(zarrd::config::DatasetKind::Icechunk),
        options,
        ..Default::default()
    };
    check_versions(&app_for(ds), "icechunk-native").await;
}

/// Commits `values` (one float64 chunk of `n/c/0`) to `main` of the repository at `path`,
/// created with its metadata when `create`.
async fn commit(path: &std::path::Path, values: &[f64], create: bool) {
    let storage = icechunk::new_local_filesystem_storage(path).await.unwrap();
    let repo = if create {
        icechunk::Repository::create(storage).execute().await.unwrap()
    } else {
        icechunk::Repository::open(storage).execute().await.unwrap()
    };
    let session = repo.writable_session("main").await.unwrap();
    let store = icechunk::Store::from_session(std::sync::Arc::new(tokio::sync::RwLock::new(session))).await;
    if create {
        let group = br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;
        store.set("zarr.json", bytes::Bytes::from_static(group)).await.unwrap();
        let array = serde_json::json!({"zarr_format": 3, "node_type": "array", "shape": [values.len()],
            "data_type": "float64", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [values.len()]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]});
        store.set("n/zarr.json", array.to_string().into()).await.unwrap();
    }
    let chunk: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    store.set("n/c/0", chunk.into()).await.unwrap();
    store.session().write().await.commit("test").execute().await.unwrap();
}

#[tokio::test]
async fn a_branch_moves_within_ref_ttl_and_a_snapshot_never_does() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("moving.icechunk");
    std::fs::create_dir_all(&repo).unwrap();
    commit(&repo, &[1.0, 2.0], true).await;
    let ds = DatasetConfig { url: repo.to_str().unwrap().to_owned(), ..Default::default() };
    let mut config = config("[cache]\nref_ttl_s = 1\nresponse_bytes = 0");
    config.datasets = [("ic".to_owned(), ds)].into_iter().collect();
    let catalog = zarrd::catalog::Catalog::from_config(&config).unwrap();
    let app = zarrd::http::app(zarrd::http::AppState::new(catalog, config));
    let first = get(&app, "/v1/slice/ic/n?format=json").await;
    assert_eq!(first.json()["data"], serde_json::json!([1.0, 2.0]));
    let versions = get(&app, "/v1/datasets/ic/versions").await.json();
    let old = versions["branches"][0]["snapshot"].as_str().unwrap().to_owned();
    commit(&repo, &[3.0, 4.0], false).await;
    // Within the TTL the branch still names the snapshot it was resolved to.
    assert_eq!(get(&app, "/v1/slice/ic@main/n?format=json").await.json()["data"], serde_json::json!([1.0, 2.0]));
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let moved = get(&app, "/v1/slice/ic/n?format=json").await;
    assert_eq!(moved.json()["data"], serde_json::json!([3.0, 4.0]), "the branch moved");
    assert_ne!(moved.header("etag"), first.header("etag"), "another snapshot, another ETag");
    assert!(!moved.header("cache-control").contains("immutable"));
    // The old snapshot still reads as it was, for ever.
    let pinned = get(&app, &format!("/v1/slice/ic@{old}/n?format=json")).await;
    assert_eq!(pinned.json()["data"], serde_json::json!([1.0, 2.0]));
    assert_eq!(pinned.header("cache-control"), "public, max-age=31536000, immutable");
}

#[tokio::test]
async fn a_private_versioned_dataset_is_private_at_every_version() {
    // alice's key is `alice-key` (its digest as in tests/it/common/auth.rs).
    let repo = fixtures().join("icechunk/native.icechunk");
    let text = format!(
        "listen = \"127.0.0.1:0\"\n[[auth.api_keys]]\nname = \"alice\"\nsha256 = \"72ee9d4355ccb9d3a4c9dbf37382e38e75c1b1a225b5bd1f729ee91bbda30c20\"\n\
         [datasets.ic]\nurl = \"{}\"\nread = [\"alice\"]\n",
        repo.display()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("zarrd.toml"), text).unwrap();
    let path = dir.path().join("zarrd.toml");
    let config =
        zarrd::config::Config::load(Some(&path), std::iter::empty(), &zarrd::config::Overrides::default()).unwrap();
    let catalog = zarrd::catalog::Catalog::from_config(&config).unwrap();
    let app = zarrd::http::app(zarrd::http::AppState::new(catalog, config));
    let alice = [("authorization", "Bearer alice-key")];
    for uri in ["/v1/slice/ic@v1/tiny", "/v1/slice/ic/tiny", "/v1/datasets/ic/versions", "/zarr/ic@dev/zarr.json"] {
        get(&app, uri).await.assert_problem(404);
        let reply = get_with(&app, uri, &alice).await;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
        let cache = reply.header("cache-control");
        assert!(cache.contains("private") && !cache.contains("public"), "{uri}: {cache}");
    }
    // Refused as an unknown dataset is: the same detail.
    let unknown = get(&app, "/v1/slice/nope@v1/tiny").await.assert_problem(404);
    let refused = get(&app, "/v1/slice/ic@v1/tiny").await.assert_problem(404);
    assert_eq!(refused["detail"].as_str().unwrap().replace("`ic`", "`nope`"), unknown["detail"].as_str().unwrap());
}

/// An `.npy` fixture's values as f64 (little-endian `<f4` or `<f8`).
fn npy_values(name: &str) -> (Vec<u64>, Vec<f64>) {
    let npy = parse_npy(&std::fs::read(fixtures().join("expected").join(name)).unwrap());
    let values = match npy.descr.as_str() {
        "<f4" => npy.data.chunks_exact(4).map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap()))).collect(),
        "<f8" => npy.data.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect(),
        other => panic!("{name}: {other}"),
    };
    (npy.shape, values)
}

/// `air` of the virtual repository's main (`npy` fixtures) at the grid point nearest
/// (`lat`, `lon`), ties to the lower index: its row and column, latitude and longitude, and
/// series (`None` where the `_FillValue` -9999 stands).
fn air_at(lat: f64, lon: f64) -> (usize, usize, f64, f64, Vec<Option<f64>>) {
    let (shape, air) = npy_values("combined__air.npy");
    let (_, lats) = npy_values("air__lat.npy");
    let (_, lons) = npy_values("air__lon.npy");
    let (nt, ny, nx) = (shape[0] as usize, shape[1] as usize, shape[2] as usize);
    let nearest = |values: &[f64], v: f64| {
        (0..values.len()).min_by(|&a, &b| (values[a] - v).abs().total_cmp(&(values[b] - v).abs())).unwrap()
    };
    let (i, j) = (nearest(&lats, lat), nearest(&lons, lon));
    let series = (0..nt).map(|t| air[(t * ny + i) * nx + j]).map(|v| (v != -9999.0).then_some(v)).collect();
    (i, j, lats[i], lons[j], series)
}

#[tokio::test]
async fn labels_and_reductions_read_a_version_of_a_repository() {
    // `air` of the virtual repository's main: (time, lat, lon) float32 with `_FillValue`
    // -9999, virtual chunks in two NetCDF files; its coordinates are VirtualiZarr's too.
    let app = app("virtual.icechunk", vec![place_sources()]);
    let (i, j, _, _, series) = air_at(45.3, 260.2);
    let series: Vec<f64> = series.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
    let nt = series.len();
    let sel = "sel=lat:~45.3,lon:~260.2";
    let slice = get(&app, &format!("/v1/slice/ic@main/air?{sel}&format=json")).await;
    assert_eq!(slice.status, 200, "{}", slice.describe());
    assert_eq!(slice.header("zarr-selection"), format!(":,{i},{j}"));
    let got: Vec<f64> =
        slice.json()["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect();
    assert_eq!(got.len(), nt);
    // JSON writes float32 values in their shortest float32 form: compared as float32.
    let same = |g: f64, w: f64| (g as f32) == (w as f32) || (g.is_nan() && w.is_nan());
    assert!(got.iter().zip(&series).all(|(&g, &w)| same(g, w)), "{got:?} vs {series:?}");
    let valid: Vec<f64> = series.iter().copied().filter(|v| !v.is_nan()).collect();
    let mean = valid.iter().sum::<f64>() / valid.len() as f64;
    let reduced = get(&app, &format!("/v1/reduce/ic@main/air?op=mean&{sel}&format=json")).await;
    assert_eq!(reduced.status, 200, "{}", reduced.describe());
    let got = reduced.json()["data"].as_f64().unwrap();
    assert!((got - mean).abs() <= 1e-9 * mean.abs(), "{got} vs {mean}");
}

#[tokio::test]
async fn edr_instances_are_the_versions_of_a_repository() {
    // The virtual repository's root holds `air` on a lat/lon grid: collection `ic`, whose
    // instances are its branches and tags, each queryable, a snapshot forever.
    let app = app("virtual.icechunk", vec![place_sources()]);
    let collection = get(&app, "/edr/collections/ic").await;
    assert_eq!(collection.status, 200, "{}", collection.describe());
    assert!(collection.json()["data_queries"]["instances"]["link"]["href"].as_str().unwrap().ends_with("/instances"));
    let listed = get(&app, "/edr/collections/ic/instances").await.json();
    assert!(
        listed["instances"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["distanceunits"] == serde_json::json!(["km", "m", "mi"])),
        "every instance names the radius units: {listed}"
    );
    let ids: Vec<&str> = listed["instances"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["main"]);
    let (_, _, lat, lon, series) = air_at(45.3, 260.2);
    let series: Vec<Value> = series.iter().map(|v| v.map_or(Value::Null, Value::from)).collect();
    let nt = series.len();
    let snapshot =
        get(&app, "/v1/datasets/ic/versions").await.json()["branches"][0]["snapshot"].as_str().unwrap().to_owned();
    for version in ["main", snapshot.as_str()] {
        let url =
            format!("/edr/collections/ic/instances/{version}/position?coords=POINT(-99.8%2045.3)&parameter-name=air");
        let reply = get(&app, &url).await;
        assert_eq!(reply.status, 200, "{}", reply.describe());
        let got = reply.json();
        assert_eq!(got["domain"]["axes"]["x"]["values"][0].as_f64().unwrap(), lon - 360.0);
        assert_eq!(got["domain"]["axes"]["y"]["values"][0].as_f64().unwrap(), lat);
        let values = got["ranges"]["air"]["values"].as_array().unwrap();
        let same =
            |g: &Value, w: &Value| g == w || g.as_f64().zip(w.as_f64()).is_some_and(|(g, w)| g as f32 == w as f32);
        assert!(values.len() == nt && values.iter().zip(&series).all(|(g, w)| same(g, w)), "{values:?} vs {series:?}");
        let immutable = reply.header("cache-control").contains("immutable");
        assert_eq!(immutable, version == snapshot, "{version}: {}", reply.describe());
    }
    get(&app, "/edr/collections/ic/instances/nope/position?coords=POINT(0%200)").await.assert_problem(404);
}

#[tokio::test]
async fn a_local_repository_reads_its_chunks_as_files_on_this_machine() {
    // Its reads are not held for a coalescing window (storage.local_coalesce_window_ms).
    let url = fixtures().join("icechunk/native.icechunk").to_str().unwrap().to_owned();
    let mut config_with = config("");
    config_with.datasets = [("ic".to_owned(), DatasetConfig { url, ..Default::default() })].into_iter().collect();
    let catalog = zarrd::catalog::Catalog::from_config(&config_with).unwrap();
    for name in ["ic", "ic@main", "ic@v1"] {
        assert!(catalog.dataset(name).await.unwrap().store.is_local(), "{name}");
    }
}
