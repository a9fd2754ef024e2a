//! Safe to expose: nothing outside a dataset's root is ever served (symlinks, `..` plain or
//! percent-encoded), keys that cannot exist are 404 rather than 502, and error details
//! name the dataset-relative key and the kind of failure, never server paths or backend
//! URLs.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use common::{app_with, config, get, local_store};
use zarrd::catalog::open_store;
use zarrd::config::DatasetConfig;

/// A dataset directory holding an array and symlinks in and out of it, plus a directory
/// outside it with a secret file and an array of its own.
fn dataset() -> (tempfile::TempDir, tempfile::TempDir) {
    let conformance = common::conformance_dir().join("data.zarr");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("passwd"), b"root:x:0:0").unwrap();
    copy_dir(&conformance.join("regular/u1_blosc"), &outside.path().join("stolen"));
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("zarr.json"), br#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    copy_dir(&conformance.join("regular/u1_blosc"), &root.path().join("arr"));
    let link =
        |target: &std::path::Path, name: &str| std::os::unix::fs::symlink(target, root.path().join(name)).unwrap();
    link(outside.path(), "etclink");
    link(&outside.path().join("stolen"), "outarr");
    link(&root.path().join("arr"), "inarr");
    (root, outside)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() { copy_dir(&path, &dest) } else { std::fs::copy(&path, &dest).map(|_| ()).unwrap() }
    }
}

#[tokio::test]
async fn nothing_outside_the_dataset_is_served() {
    let (root, outside) = dataset();
    let app = app_with(vec![("pub", local_store(root.path()))], config(""));
    for uri in [
        "/zarr/pub/etclink/passwd",
        "/zarr/pub/outarr/zarr.json",
        "/zarr/pub/outarr/c/0/0",
        "/zarr/pub/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/zarr/pub/arr/%2E%2E/%2E%2E/etc/passwd",
        "/zarr/pub/arr/..%2f..%2fetc%2fpasswd",
        "/v1/arrays/pub/outarr",
        "/v1/slice/pub/outarr?s=0:2,0:2",
        "/v1/chunks/pub/outarr",
        "/v1/chunk/pub/outarr?c=0,0",
        "/v1/arrays/pub/etclink",
    ] {
        let reply = get(&app, uri).await;
        let problem = reply.assert_problem(404);
        let detail = problem["detail"].as_str().unwrap();
        assert!(!detail.contains(outside.path().to_str().unwrap()), "{uri}: {detail}");
        assert!(!reply.body.windows(4).any(|w| w == b"root"), "{uri} leaked the file");
    }
    // Links that stay inside the dataset work; the tree leaves out those that escape.
    assert_eq!(get(&app, "/v1/slice/pub/inarr?s=0:2,0:2&format=bin").await.status, 200);
    assert_eq!(get(&app, "/zarr/pub/inarr/zarr.json").await.status, 200);
    let tree = get(&app, "/v1/datasets/pub").await;
    assert_eq!(tree.status, 200, "{}", tree.describe());
    let tree = tree.json();
    let paths: Vec<&str> = tree["nodes"].as_array().unwrap().iter().map(|n| n["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"arr") && paths.contains(&"inarr") && !paths.contains(&"outarr"), "{paths:?}");
}

#[tokio::test]
async fn keys_that_cannot_exist_are_not_found() {
    let (root, _outside) = dataset();
    let app = app_with(vec![("pub", local_store(root.path()))], config(""));
    let long = "n".repeat(300);
    for uri in [
        "/zarr/pub/zarr.json/x".to_owned(),
        format!("/zarr/pub/{long}"),
        format!("/zarr/pub/arr/{long}/zarr.json"),
        format!("/v1/arrays/pub/{long}"),
        "/v1/arrays/pub/arr/zarr.json/x".to_owned(),
        "/zarr/pub/arr/%01".to_owned(),
    ] {
        get(&app, &uri).await.assert_problem(404);
    }
}

#[tokio::test]
async fn storage_failures_do_not_leak_paths_urls_or_settings() {
    // Nothing listens on port 1: every request fails inside the HTTP backend.
    let ds = DatasetConfig {
        url: "http://127.0.0.1:1/secret-bucket/data.zarr".into(),
        title: None,
        options: [("timeout".to_owned(), "2s".to_owned())].into_iter().collect(),
        ..Default::default()
    };
    let store = open_store("remote", &ds).unwrap();
    let app = app_with(vec![("remote", store)], config(""));
    for uri in ["/zarr/remote/zarr.json", "/v1/arrays/remote/a", "/v1/datasets/remote"] {
        let reply = get(&app, uri).await;
        let problem = reply.assert_problem(502);
        let detail = problem["detail"].as_str().unwrap();
        for secret in ["127.0.0.1", "secret-bucket", "retr", "timeout", "http://"] {
            assert!(!detail.contains(secret), "{uri}: `{detail}` leaks `{secret}`");
        }
        assert!(detail.contains("zarr.json") && detail.contains("X-Request-Id"), "{uri}: {detail}");
    }
}

#[test]
fn files_on_this_machine_open_as_local_stores_and_urls_do_not() {
    // Local stores are read at once (no coalescing window), remote ones may be held.
    let opened = |url: String| open_store("ds", &DatasetConfig { url, ..Default::default() }).unwrap();
    let folder = common::conformance_dir().join("data.zarr");
    assert!(opened(folder.display().to_string()).is_local());
    assert!(opened(url::Url::from_file_path(&folder).unwrap().to_string()).is_local());
    let zipped = common::fixtures().join("zip/stored.zip");
    assert!(opened(zipped.display().to_string()).is_local());
    assert!(!opened("http://127.0.0.1:1/data.zarr".into()).is_local());
    assert!(!opened("memory:///data.zarr".into()).is_local());
}
