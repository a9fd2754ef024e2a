//! Zipped datasets, read in place: zips of the conformance fixture sets (written at test
//! time by the `zip` crate: stored, deflated, forced ZIP64, and with the store in a
//! folder) read exactly like the directories; zips written by zarr-python's own
//! `ZipStore` (`tests/fixtures/zip`, `make_zip_fixtures.py`) read as zarr-python reads
//! them; the archive opened with one storage request; truncated and corrupt archives are
//! 502 problems, never panics.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use common::conformance::{SETS, check_all_arrays, check_routes, check_set, set_dir};
use common::{assert_no_panics, get, get_with};
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use serde_json::Value;
use zarrd_core::store::Store;
use zarrd_core::store::zip::ZipFs;

/// How a test archive is written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Stored,
    Deflated,
    /// Stored, with ZIP64 extra fields on every member and a ZIP64 end record.
    Zip64,
}

/// A zip of every file under `dir`, each named `{folder}{its path under dir}`.
pub(crate) fn zip_bytes(dir: &Path, kind: Kind, folder: &str) -> Vec<u8> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() { stack.push(p) } else { files.push(p) }
        }
    }
    files.sort();
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let method =
        if matches!(kind, Kind::Deflated) { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
    let options =
        zip::write::SimpleFileOptions::default().compression_method(method).large_file(matches!(kind, Kind::Zip64));
    if matches!(kind, Kind::Zip64) {
        writer.set_raw_zip64_extensible_data_sector(Box::new([]));
    }
    for file in files {
        let name = format!("{folder}{}", file.strip_prefix(dir).unwrap().to_str().unwrap());
        writer.start_file(name, options).unwrap();
        writer.write_all(&std::fs::read(&file).unwrap()).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// Writes `bytes` to `name` in a fresh temporary folder.
pub(crate) fn write_temp(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// A dataset opened from its URL, as a configuration opens it.
fn open(url: &str) -> Store {
    common::open_dataset(url.to_owned(), &[])
}

fn app(store: Store) -> Router {
    common::app_with(vec![("conf", store)], common::config(""))
}

/// Walks a store route's listings (`/zarr`, `/compat/v3`) in both apps from `dir` down,
/// asserting the same entries and, for every object, the same status, bytes and range
/// reads; at most `budget` objects. Returns how many objects were compared.
async fn same_tree(dir_app: &Router, zip_app: &Router, route: &str, budget: &mut usize) -> usize {
    let json = [("accept", "application/json")];
    let mut compared = 0;
    let mut pending = vec![String::new()];
    while let Some(dir) = pending.pop() {
        let uri = format!("{route}/conf/{dir}");
        let (want, got) = (get_with(dir_app, &uri, &json).await, get_with(zip_app, &uri, &json).await);
        assert_eq!(want.status, 200, "{uri}: {}", want.describe());
        assert_eq!(got.body, want.body, "{uri}: listing");
        for entry in want.json()["entries"].as_array().unwrap() {
            let name = entry["name"].as_str().unwrap();
            if entry["kind"] == "directory" {
                pending.push(format!("{dir}{name}/"));
                continue;
            }
            if *budget == 0 {
                return compared;
            }
            *budget -= 1;
            compared += 1;
            let uri = format!("{route}/conf/{dir}{name}");
            let (want, got) = (get(dir_app, &uri).await, get(zip_app, &uri).await);
            assert_eq!((got.status, &got.body), (want.status, &want.body), "{uri}");
            for range in ["bytes=1-7", "bytes=-5", "bytes=3-"] {
                let (want, got) = (
                    get_with(dir_app, &uri, &[("range", range)]).await,
                    get_with(zip_app, &uri, &[("range", range)]).await,
                );
                assert_eq!((got.status, &got.body), (want.status, &want.body), "{uri} {range}");
                assert_eq!(got.header("content-range"), want.header("content-range"), "{uri} {range}");
            }
        }
    }
    compared
}

/// Every fixture set zipped `kind` reads exactly like its directory: every array in every
/// format and selection, every route, the objects of `/zarr` (whole and by range; all of
/// them but in the set with thousands) and the first of the `/compat/v3` view, the tree.
async fn zipped_sets_read_like_their_directories(kind: Kind) {
    for set in SETS {
        let dir = set_dir(set).join("data.zarr");
        let (_tmp, zip) = write_temp("data.zip", &zip_bytes(&dir, kind, ""));
        let store = open(zip.to_str().unwrap());
        check_set(store.clone(), set).await;
        let (dir_app, zip_app) = (app(common::local_store(&dir)), app(store));
        check_routes(&zip_app, set).await;
        let objects = same_tree(&dir_app, &zip_app, "/zarr", &mut 300).await;
        assert!(objects > 10, "{set} {kind:?}: {objects} objects compared");
        same_tree(&dir_app, &zip_app, "/compat/v3", &mut 40).await;
        let (want, got) = (get(&dir_app, "/v1/datasets/conf").await, get(&zip_app, "/v1/datasets/conf").await);
        assert_eq!(got.json()["nodes"], want.json()["nodes"], "{set} {kind:?}: the dataset tree");
    }
    assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_zips_read_like_their_directories() {
    zipped_sets_read_like_their_directories(Kind::Stored).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deflated_zips_read_like_their_directories() {
    zipped_sets_read_like_their_directories(Kind::Deflated).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zip64_zips_read_like_their_directories() {
    zipped_sets_read_like_their_directories(Kind::Zip64).await;
}

/// A zip of the store's folder (`zip -r x.zip data.zarr`): the folder is found as the
/// root, or named in the URL after the archive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_folder_is_found_or_named() {
    let dir = set_dir("conformance").join("data.zarr");
    let (_tmp, zip) = write_temp("folder.zip", &zip_bytes(&dir, Kind::Deflated, "data.zarr/"));
    let file = zip.to_str().unwrap();
    for url in [file.to_owned(), format!("{file}/data.zarr"), format!("file://{file}/data.zarr")] {
        check_all_arrays(&app(open(&url)), "conformance").await;
    }
    // A folder that does not exist in the archive: an empty dataset, not an error at start.
    let wrong = app(open(&format!("{file}/other")));
    get(&wrong, "/v1/arrays/conf/regular/f4_zstd_partial").await.assert_problem(404);
    // A local path that is neither a directory nor a zip file fails at startup.
    let config = zarrd::config::DatasetConfig {
        url: format!("{file}.missing.zip"),
        title: None,
        options: std::collections::BTreeMap::default(),
        ..Default::default()
    };
    let err = zarrd::catalog::open_store("z", &config).unwrap_err().to_string();
    assert!(err.contains("datasets.z.url") && err.contains("zip"), "{err}");
    assert_no_panics();
}

/// The zips zarr-python's `ZipStore` wrote (stored Zarr v3 with a sharded array; deflated
/// Zarr v2) read as zarr-python read them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zarr_python_zip_store_archives() {
    let fixtures = common::fixtures().join("zip");
    let manifest: Value = serde_json::from_slice(&std::fs::read(fixtures.join("manifest.json")).unwrap()).unwrap();
    for (name, zip) in manifest["zips"].as_object().unwrap() {
        let app = app(open(fixtures.join(name).to_str().unwrap()));
        check_zarr_python_arrays(&app, &fixtures, name, zip).await;
    }
    assert_no_panics();
}

async fn check_zarr_python_arrays(app: &Router, fixtures: &Path, name: &str, zip: &Value) {
    let stem = name.trim_end_matches(".zip");
    let tree = get(app, "/v1/datasets/conf").await;
    assert_eq!(tree.status, 200, "{}", tree.describe());
    for array in zip["arrays"].as_array().unwrap() {
        let path = array.as_str().unwrap();
        let want = common::expected(fixtures, &format!("{stem}/{path}"));
        let reply = get(app, &format!("/v1/slice/conf/{path}")).await;
        assert_eq!(reply.status, 200, "{name} {path}: {}", reply.describe());
        let got = common::parse_npy(&reply.body);
        assert_eq!((got.descr, got.shape, got.data), (want.descr, want.shape, want.data), "{name} {path}");
        let info = get(app, &format!("/v1/arrays/conf/{path}")).await.json();
        assert_eq!(info["zarr_format"], zip["zarr_format"], "{name} {path}");
        assert!(tree.json()["nodes"].as_array().unwrap().iter().any(|n| n["path"] == path), "{name} {path}");
    }
}

/// An archive in object storage (here in memory, counted): opening reads its end once,
/// and a member's first read takes its local header and its bytes in one request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_archive_is_opened_with_one_request() {
    let bytes = zip_bytes(&set_dir("conformance").join("data.zarr"), Kind::Stored, "");
    let mem = Arc::new(InMemory::new());
    mem.put(&ObjectPath::from("sets/conformance.zip"), bytes.into()).await.unwrap();
    let counting = common::CountingStore::new(mem);
    let zip = ZipFs::new(counting.clone(), ObjectPath::from("sets/conformance.zip"), None);
    let store = Store::new(Arc::new(zip), ObjectPath::default());
    assert_eq!(counting.total(), 0, "nothing is read before the first request");
    let doc = store.get("zarr.json").await.unwrap().unwrap();
    assert_eq!(doc.as_ref(), std::fs::read(set_dir("conformance").join("data.zarr/zarr.json")).unwrap());
    assert_eq!(counting.total(), 2, "the end of the archive, then the member with its local header");
    store.get("zarr.json").await.unwrap().unwrap();
    assert_eq!(counting.total(), 3, "the directory is kept: one request for the member");
    assert!(store.get("no/such/member").await.unwrap().is_none());
    assert_eq!(counting.total(), 3, "a missing member costs no request");
    let (dirs, _) = store.list_entries("").await.unwrap();
    assert!(dirs.contains(&"regular".to_owned()), "{dirs:?}");
    assert_eq!(counting.total(), 3, "listings come from the directory");
    // The whole fixture set through the counted store.
    check_set(store, "conformance").await;
    // The archive replaced: the next read fails as a changed object (never bytes of the
    // new archive at the old one's offsets), and the one after reads the new archive.
    let mem = Arc::new(InMemory::new());
    let first = zip_bytes(&set_dir("conformance").join("data.zarr"), Kind::Stored, "");
    mem.put(&ObjectPath::from("x.zip"), first.into()).await.unwrap();
    let store = Store::new(Arc::new(ZipFs::new(mem.clone(), ObjectPath::from("x.zip"), None)), ObjectPath::default());
    store.get("zarr.json").await.unwrap().unwrap();
    let v2 = set_dir("zarr-v2").join("data.zarr");
    mem.put(&ObjectPath::from("x.zip"), zip_bytes(&v2, Kind::Deflated, "").into()).await.unwrap();
    let changed = store.get("zarr.json").await.unwrap_err();
    assert!(changed.is_precondition(), "{changed}");
    let zgroup = store.get(".zgroup").await.unwrap().unwrap();
    assert_eq!(zgroup.as_ref(), std::fs::read(v2.join(".zgroup")).unwrap());
    // A missing archive is a storage failure of every key, not an empty dataset.
    let zip = ZipFs::new(Arc::new(InMemory::new()), ObjectPath::from("nothing.zip"), None);
    let app = app(Store::new(Arc::new(zip), ObjectPath::default()));
    let doc = get(&app, "/v1/arrays/conf/regular/f4_zstd_partial").await.assert_problem(502);
    assert!(doc["detail"].as_str().unwrap().contains("zip archive does not exist"), "{doc}");
    assert_no_panics();
}

/// A shard in a stored zip costs what it costs in a directory: a cold inner chunk is one
/// read of the shard's index (the member's local header with it) and one range read; a
/// hot one is one range read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_in_a_stored_zip_are_read_by_range() {
    let mem = Arc::new(InMemory::new());
    let bytes = zip_bytes(&set_dir("conformance").join("data.zarr"), Kind::Stored, "");
    mem.put(&ObjectPath::from("c.zip"), bytes.into()).await.unwrap();
    let counting = common::CountingStore::new(mem);
    let zip = ZipFs::new(counting.clone(), ObjectPath::from("c.zip"), None);
    let store = Store::new(Arc::new(zip), ObjectPath::default());
    let app = common::app_with(vec![("conf", store)], common::config("[cache]\nchunk_bytes = 0\nresponse_bytes = 0"));
    assert_eq!(get(&app, "/v1/arrays/conf/sharded/i2_rect_shards").await.status, 200);
    let inner = "/v1/slice/conf/sharded/i2_rect_shards?s=0:5,0:5";
    let before = counting.total();
    assert_eq!(get(&app, inner).await.status, 200);
    assert_eq!(counting.total() - before, 2, "cold: the index, then one range: {:?}", counting.counts());
    let before = counting.total();
    assert_eq!(get(&app, inner).await.status, 200);
    assert_eq!(counting.total() - before, 1, "hot: one range: {:?}", counting.counts());
}

/// Serves `bytes` as a zipped dataset from memory.
async fn served(bytes: Vec<u8>) -> Router {
    let mem = Arc::new(InMemory::new());
    mem.put(&ObjectPath::from("x.zip"), bytes.into()).await.unwrap();
    app(Store::new(Arc::new(ZipFs::new(mem, ObjectPath::from("x.zip"), None)), ObjectPath::default()))
}

/// Where the end record and the central directory of a zip are.
fn layout(bytes: &[u8]) -> (usize, usize) {
    let eocd = bytes.windows(4).rposition(|w| w == b"PK\x05\x06").unwrap();
    let cd = u32::from_le_bytes(bytes[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
    (eocd, cd)
}

/// The offset of the central directory entry of `name`.
fn entry(bytes: &[u8], name: &str) -> usize {
    let (_, cd) = layout(bytes);
    let mut at = cd;
    loop {
        let found = at + bytes[at..].windows(4).position(|w| w == b"PK\x01\x02").unwrap();
        let len = u16::from_le_bytes([bytes[found + 28], bytes[found + 29]]) as usize;
        if &bytes[found + 46..found + 46 + len] == name.as_bytes() {
            return found;
        }
        at = found + 4;
    }
}

fn patch(bytes: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at..at + value.len()].copy_from_slice(value);
    out
}

/// Truncated and corrupt archives: every read is a 502 problem naming what is wrong (a
/// corrupt member only for that member), never a panic or a read past the archive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_archives_are_502_problems() {
    const ARRAY: &str = "regular/f4_zstd_partial";
    let dir = set_dir("conformance").join("data.zarr");
    let stored = zip_bytes(&dir, Kind::Stored, "");
    let deflated = zip_bytes(&dir, Kind::Deflated, "");
    let (eocd, cd) = layout(&stored);
    let whole_archive_broken = [
        ("cut in the central directory", stored[..cd + (eocd - cd) / 2].to_vec()),
        ("cut in the end record", stored[..eocd + 10].to_vec()),
        ("directory offset out of bounds", patch(&stored, eocd + 16, &(stored.len() as u32).to_le_bytes())),
        ("directory size huge", patch(&stored, eocd + 12, &u32::MAX.to_le_bytes())),
        ("entry count huge", patch(&stored, eocd + 10, &u16::MAX.to_le_bytes())),
        ("not a zip", b"no archive here, just text".repeat(100)),
    ];
    for (what, bytes) in whole_archive_broken {
        let app = served(bytes).await;
        for uri in
            [format!("/v1/arrays/conf/{ARRAY}"), "/zarr/conf/zarr.json".into(), format!("/v1/slice/conf/{ARRAY}")]
        {
            let doc = get(&app, &uri).await.assert_problem(502);
            assert!(doc["detail"].as_str().unwrap().contains("zip archive"), "{what} {uri}: {doc}");
        }
        // Reported as any dataset that cannot be opened: failing its health check.
        let health = get(&app, "/v1/datasets").await.json()["datasets"][0]["health"].clone();
        assert_eq!(health["status"], "failing", "{what}: {health}");
        assert!(health["detail"].as_str().unwrap().contains("zip archive"), "{what}: {health}");
    }
    // One member corrupt: a bad CRC-32 (stored and deflated), a huge declared size, a
    // local header that is not one. The others still read.
    let key = format!("{ARRAY}/c/0/0");
    let at = entry(&stored, &key);
    let header = u32::from_le_bytes(stored[at + 42..at + 46].try_into().unwrap()) as usize;
    let deflated_at = entry(&deflated, &key);
    let broken_members = [
        ("bad CRC-32, stored", patch(&stored, at + 16, &0u32.to_le_bytes()), "CRC-32"),
        ("bad CRC-32, deflated", patch(&deflated, deflated_at + 16, &0u32.to_le_bytes()), "CRC-32"),
        ("huge declared size", patch(&deflated, deflated_at + 24, &(u32::MAX - 1).to_le_bytes()), "inflates to"),
        ("wrong declared size", patch(&deflated, deflated_at + 24, &1u32.to_le_bytes()), "declared"),
        ("no local header", patch(&stored, header, b"XXXX"), "local header"),
        ("unknown method", patch(&stored, at + 10, &99u16.to_le_bytes()), "method 99"),
    ];
    for (what, bytes, says) in broken_members {
        let app = served(bytes).await;
        let doc = get(&app, &format!("/zarr/conf/{key}")).await.assert_problem(502);
        let detail = doc["detail"].as_str().unwrap();
        assert!(detail.contains(&key) && detail.contains(says), "{what}: {doc}");
        get(&app, &format!("/v1/slice/conf/{ARRAY}")).await.assert_problem(502);
        let other = get(&app, &format!("/zarr/conf/{ARRAY}/c/0/1")).await;
        assert_eq!(other.status, 200, "{what}: {}", other.describe());
    }
    assert_no_panics();
}

/// The zarr-python fixtures served by nginx, read over HTTP with range requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx on loopback: run through bash .ci/run"]
async fn zipped_over_http() {
    let base = common::service_env("ZARRD_TEST_HTTP_URL");
    let fixtures = common::fixtures().join("zip");
    let manifest: Value = serde_json::from_slice(&std::fs::read(fixtures.join("manifest.json")).unwrap()).unwrap();
    for (name, zip) in manifest["zips"].as_object().unwrap() {
        let store = common::open_dataset(format!("{base}/zip/{name}"), &[]);
        check_zarr_python_arrays(&app(store), &fixtures, name, zip).await;
    }
    assert_no_panics();
}

/// A zip of the conformance set and the zarr-python fixtures uploaded to Garage, read in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Garage on loopback: run through bash .ci/run"]
async fn zipped_over_s3() {
    let bucket = common::service_env("ZARRD_TEST_S3_BUCKET");
    let run = common::run_prefix("zip");
    // Uploaded through the bucket's own store (a zipped dataset's store is read-only).
    let bucket_root = common::open_dataset(format!("s3://{bucket}/"), &common::s3_options()).backend();
    let upload = |name: String, bytes: Vec<u8>| {
        let (bucket, bucket_root) = (bucket.clone(), bucket_root.clone());
        async move {
            bucket_root.put(&ObjectPath::from(name.as_str()), bytes.into()).await.unwrap();
            common::open_dataset(format!("s3://{bucket}/{name}"), &common::s3_options())
        }
    };
    let bytes = zip_bytes(&set_dir("conformance").join("data.zarr"), Kind::Deflated, "");
    check_set(upload(format!("{run}/conformance.zip"), bytes).await, "conformance").await;
    let fixtures = common::fixtures().join("zip");
    let manifest: Value = serde_json::from_slice(&std::fs::read(fixtures.join("manifest.json")).unwrap()).unwrap();
    for (name, zip) in manifest["zips"].as_object().unwrap() {
        let store = upload(format!("{run}/{name}"), std::fs::read(fixtures.join(name)).unwrap()).await;
        check_zarr_python_arrays(&app(store), &fixtures, name, zip).await;
    }
    assert_no_panics();
}
