//! Shared test helpers: build the app over fixture stores, drive it in-process, and read
//! `.npy` files independently of the server's own encoder.
#![allow(clippy::unwrap_used)]

pub mod auth;
pub mod conformance;
mod counting;
mod npy;
mod services;
mod tiles;

pub use counting::CountingStore;
pub use npy::*;
pub use services::*;
pub use tiles::*;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use serde_json::Value;
use tower::ServiceExt;
use zarrd::catalog::Catalog;
use zarrd::config::Config;
use zarrd::http::AppState;
use zarrd_core::store::Store;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn conformance_dir() -> PathBuf {
    fixtures().join("conformance")
}

pub fn manifest() -> Value {
    serde_json::from_slice(&std::fs::read(conformance_dir().join("manifest.json")).unwrap()).unwrap()
}

/// A configuration for tests; `extra` is TOML appended before the datasets table.
pub fn config(extra: &str) -> Config {
    let text = format!("listen = \"127.0.0.1:0\"\n{extra}\n[datasets.placeholder]\nurl = \"/\"\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.toml");
    std::fs::write(&path, text).unwrap();
    Config::load(Some(&path), std::iter::empty(), &zarrd::config::Overrides::default()).unwrap()
}

/// A local dataset as zarrd opens one (contained: symlinks never lead out of it).
pub fn local_store(dir: &Path) -> Store {
    Store::new(Arc::new(zarrd_core::store::contained::ContainedFs::new(dir).unwrap()), ObjectPath::default())
}

/// Copies every file under `dir` into an in-memory store.
pub async fn memory_store(dir: &Path) -> Store {
    memory_store_handle(dir).await.0
}

/// Like [`memory_store`], also returning the backend so a test can alter objects. Files
/// are put in sorted key order, so every object gets the same version (the store's
/// insertion counter, its `ETag`) on every run.
pub async fn memory_store_handle(dir: &Path) -> (Store, Arc<InMemory>) {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mem = Arc::new(InMemory::new());
    for p in files {
        let rel = p.strip_prefix(dir).unwrap().to_str().unwrap().replace('\\', "/");
        mem.put(&ObjectPath::from(rel), std::fs::read(&p).unwrap().into()).await.unwrap();
    }
    (Store::new(mem.clone(), ObjectPath::default()), mem)
}

pub fn app_with(stores: Vec<(&str, Store)>, config: Config) -> Router {
    let catalog =
        Catalog::new(stores.into_iter().map(|(n, s)| (n.to_owned(), s, Some(format!("{n} title")))).collect(), &config);
    zarrd::app(AppState::new(catalog, config))
}

/// The app serving the conformance store as dataset `conf` from local disk.
pub fn conformance_app() -> Router {
    app_with(vec![("conf", local_store(&conformance_dir().join("data.zarr")))], config(""))
}

/// The conformance store as dataset `conf` from memory, with `extra_config`, and the
/// backend, so a test can alter its objects.
pub async fn altered_app(extra_config: &str) -> (Router, Arc<InMemory>) {
    let (store, mem) = memory_store_handle(&conformance_dir().join("data.zarr")).await;
    (app_with(vec![("conf", store)], config(extra_config)), mem)
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.describe()))
    }

    pub fn describe(&self) -> String {
        format!(
            "{} {:?} {}",
            self.status,
            self.headers,
            String::from_utf8_lossy(&self.body[..self.body.len().min(600)])
        )
    }

    /// Asserts an RFC 9457 problem document with `status`.
    pub fn assert_problem(&self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "{}", self.describe());
        assert_eq!(self.header("content-type"), "application/problem+json", "{}", self.describe());
        let doc = self.json();
        assert_eq!(doc["status"], status);
        for field in ["type", "title", "detail"] {
            assert!(doc[field].as_str().is_some_and(|s| !s.is_empty()), "problem without {field}: {doc}");
        }
        doc
    }
}

/// The value of the `/metrics` line starting with `prefix` (name and labels, then a
/// space), 0 when absent; a value that is not a count fails the test. Metrics are
/// process-wide: tests running alongside only add.
pub async fn metric(app: &Router, prefix: &str) -> u64 {
    let text = String::from_utf8(get(app, "/metrics").await.body.to_vec()).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map_or(0, |v| v.trim().parse().unwrap_or_else(|e| panic!("{prefix}{v}: not a count ({e})")))
}

pub async fn get(app: &Router, uri: &str) -> Reply {
    get_with(app, uri, &[]).await
}

pub async fn get_with(app: &Router, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let reply = send(app, uri, headers).await;
    assert_no_panics();
    reply
}

/// What browsers send as `Accept-Encoding`.
pub const BROWSER_ENCODINGS: &str = "gzip, deflate, br, zstd";

/// A GET as a browser makes it (`Accept-Encoding: gzip, deflate, br, zstd`), the body read
/// whole and decoded from its `Content-Encoding`.
pub async fn browser_get(app: &Router, uri: &str) -> Reply {
    let mut reply = get_with(app, uri, &[("accept-encoding", BROWSER_ENCODINGS)]).await;
    let coding = reply.header("content-encoding").to_owned();
    reply.body = Bytes::from(decoded_body(&coding, &reply.body, uri));
    reply.headers.remove("content-encoding");
    reply
}

/// `body` decoded from the `Content-Encoding` `coding`.
pub fn decoded_body(coding: &str, body: &[u8], what: &str) -> Vec<u8> {
    use std::io::Read as _;
    let mut out = Vec::new();
    match coding {
        "" | "identity" => out.extend_from_slice(body),
        "gzip" => {
            flate2::read::GzDecoder::new(body).read_to_end(&mut out).unwrap_or_else(|e| panic!("{what}: gzip: {e}"));
        }
        "deflate" => {
            flate2::read::ZlibDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap_or_else(|e| panic!("{what}: deflate: {e}"));
        }
        "zstd" => out = zstd::decode_all(body).unwrap_or_else(|e| panic!("{what}: zstd: {e}")),
        other => panic!("{what}: unexpected Content-Encoding {other}"),
    }
    out
}

/// A GET, without checking for panics (for the tests that inject them).
pub async fn send(app: &Router, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = Request::get(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply { status, headers, body }
}

/// Fails the test when the server under test panicked anywhere (a handler, a body, the CPU
/// pool, a background task), even where the panic was turned into a 500 or a cut body.
/// The tests' own failed assertions (in `tests/`) are not the server's. The test that
/// injects panics runs alone in a child process (`tests/it/panics.rs`, [`alone`]).
pub fn assert_no_panics() {
    let server: Vec<String> =
        zarrd_core::ops::panics::recent().into_iter().filter(|p| !p.starts_with("tests/")).collect();
    assert!(server.is_empty(), "the server panicked: {server:?}");
}

/// Copies the directory tree `from` to `to`.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
