//! Shared test helpers: build the app over fixture stores, drive it in-process, and read
//! `.npy` files independently of the server's own encoder.
#![allow(clippy::unwrap_used)]

pub mod auth;
pub mod conformance;

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

/// A parsed `.npy` file with its data converted to little-endian.
#[derive(Debug)]
pub struct Npy {
    /// The little-endian descr, e.g. `<f4`.
    pub descr: String,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl Npy {
    /// Bytes per element (a `U{n}` element is n UTF-32 code units; `<M8[10ms]` is 8 bytes).
    pub fn item(&self) -> usize {
        let n: usize = self.descr[2..].split('[').next().unwrap().parse().unwrap();
        if self.is_text() { 4 * n } else { n }
    }

    /// Whether this is a `NumPy` `U` (text) array.
    pub fn is_text(&self) -> bool {
        self.descr.as_bytes()[1] == b'U'
    }

    /// The unit whose byte order flips (complex numbers swap each half, text each code unit).
    fn swap_unit(&self) -> usize {
        match self.descr.as_bytes()[1] {
            b'c' => self.item() / 2,
            b'U' => 4,
            _ => self.item(),
        }
    }

    /// The elements of a `U` array in C order: each its UTF-32LE code units up to the
    /// first of the trailing NULs that pad it (`NumPy`'s own reading of `U` data).
    pub fn texts(&self) -> Vec<String> {
        assert!(self.is_text(), "{} is not a text array", self.descr);
        self.data.chunks_exact(self.item().max(1)).map(utf32_text).collect()
    }
}

/// One `U` element: UTF-32LE code units, trailing NULs dropped.
pub fn utf32_text(unit_bytes: &[u8]) -> String {
    let mut units: Vec<u32> =
        unit_bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    while units.last() == Some(&0) {
        units.pop();
    }
    units.into_iter().map(|u| char::from_u32(u).unwrap_or_else(|| panic!("{u:#x} is not a code point"))).collect()
}

/// Reads a `.npy` file (v1/v2/v3 headers, C order), independently of zarrd's encoder.
pub fn parse_npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not an npy file");
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).unwrap();
    let field = |name: &str| -> &str {
        let at = header.find(&format!("'{name}': ")).unwrap() + name.len() + 4;
        &header[at..]
    };
    let descr = field("descr").trim_start_matches('\'').split('\'').next().unwrap().to_owned();
    let fortran = field("fortran_order").starts_with("True");
    let shape_text = field("shape");
    let shape: Vec<u64> = shape_text[1..shape_text.find(')').unwrap()]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let mut npy = Npy { descr: descr.clone(), shape, data: bytes[start + header_len..].to_vec() };
    if fortran {
        // NumPy saves a Fortran-ordered array (a v2 `order: "F"` array read back) as is;
        // the tests compare C order.
        npy.data = fortran_to_c(&npy.data, &npy.shape, npy.item());
    }
    let order = descr.as_bytes()[0];
    npy.descr = format!("{}{}", if npy.item() == 1 { '|' } else { '<' }, &descr[1..]);
    if order == b'>' {
        let unit = npy.swap_unit();
        for u in npy.data.chunks_exact_mut(unit) {
            u.reverse();
        }
    }
    npy
}

/// Reorders column-major elements of `shape` into row-major order.
fn fortran_to_c(data: &[u8], shape: &[u64], item: usize) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(data.len());
    for flat in 0..n {
        // The C-order index `flat` as coordinates, then their Fortran-order offset.
        let (mut rest, mut offset, mut stride) = (flat, 0u64, 1u64);
        let mut coords = vec![0u64; shape.len()];
        for d in (0..shape.len()).rev() {
            coords[d] = rest % shape[d];
            rest /= shape[d];
        }
        for d in 0..shape.len() {
            offset += coords[d] * stride;
            stride *= shape[d];
        }
        let at = offset as usize * item;
        out.extend_from_slice(&data[at..at + item]);
    }
    out
}

/// The expected values of array `path` of the fixture set in `dir`.
pub fn expected(dir: &Path, path: &str) -> Npy {
    let file = dir.join("expected").join(format!("{}.npy", path.replace('/', "__")));
    parse_npy(&std::fs::read(file).unwrap())
}

/// The coordinates of the `flat`-th cell (C order) of a grid of `grid` cells per dimension.
pub fn unravel(flat: u64, grid: &[u64]) -> Vec<u64> {
    let mut coords = vec![0u64; grid.len()];
    let mut rest = flat;
    for d in (0..grid.len()).rev() {
        coords[d] = rest % grid[d];
        rest /= grid[d];
    }
    coords
}

/// The flat (C-order) indices, in an array of `full_shape`, of the box at `origin` of
/// `shape`, in C order.
pub fn region_indices(full_shape: &[u64], origin: &[u64], shape: &[u64]) -> Vec<u64> {
    let n: u64 = shape.iter().product();
    (0..n)
        .map(|mut flat| {
            let (mut index, mut stride) = (0, 1);
            for d in (0..shape.len()).rev() {
                index += (origin[d] + flat % shape[d]) * stride;
                flat /= shape[d];
                stride *= full_shape[d];
            }
            index
        })
        .collect()
}

/// The elements of `full` at flat `indices`.
pub fn gather(full: &Npy, indices: &[u64]) -> Vec<u8> {
    let item = full.item();
    indices.iter().flat_map(|&i| full.data[i as usize * item..(i as usize + 1) * item].iter().copied()).collect()
}

/// An `ObjectStore` decorator that counts the requests reaching the backend, so tests can
/// pin how many storage round-trips a read costs.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn object_store::ObjectStore>,
    pub gets: std::sync::atomic::AtomicU64,
    pub heads: std::sync::atomic::AtomicU64,
    pub range_calls: std::sync::atomic::AtomicU64,
    pub lists: std::sync::atomic::AtomicU64,
    /// Added to every GET, to simulate slow storage.
    pub delay: std::time::Duration,
    /// Fault injection: the next `n` GETs or HEADs of paths ending in the given suffix
    /// answer "not found" although the object exists (a transient 404 from storage).
    pub vanish: std::sync::Mutex<Option<(String, u32)>>,
    /// When set, listing fails, as on a plain HTTP server.
    pub no_listing: std::sync::atomic::AtomicBool,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn object_store::ObjectStore>) -> Arc<Self> {
        Self::slow(inner, std::time::Duration::ZERO)
    }

    pub fn slow(inner: Arc<dyn object_store::ObjectStore>, delay: std::time::Duration) -> Arc<Self> {
        Arc::new(Self {
            inner,
            gets: 0.into(),
            heads: 0.into(),
            range_calls: 0.into(),
            lists: 0.into(),
            delay,
            vanish: std::sync::Mutex::new(None),
            no_listing: false.into(),
        })
    }

    /// Makes the next `n` GETs or HEADs of paths ending in `suffix` answer "not found".
    pub fn vanish(&self, suffix: &str, n: u32) {
        *self.vanish.lock().unwrap() = Some((suffix.to_owned(), n));
    }

    fn vanishes(&self, location: &ObjectPath) -> bool {
        let mut vanish = self.vanish.lock().unwrap();
        match vanish.as_mut() {
            Some((suffix, n)) if *n > 0 && location.as_ref().ends_with(suffix.as_str()) => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// (GETs, HEADs, `get_ranges` calls, listings) so far.
    pub fn counts(&self) -> (u64, u64, u64, u64) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.gets.load(SeqCst), self.heads.load(SeqCst), self.range_calls.load(SeqCst), self.lists.load(SeqCst))
    }

    pub fn total(&self) -> u64 {
        let (a, b, c, d) = self.counts();
        a + b + c + d
    }
}

impl std::fmt::Display for CountingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait::async_trait]
impl object_store::ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: object_store::PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        let counter = if options.head { &self.heads } else { &self.gets };
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if self.vanishes(location) {
            return Err(object_store::Error::NotFound { path: location.to_string(), source: "injected fault".into() });
        }
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &ObjectPath,
        ranges: &[std::ops::Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.range_calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectPath>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&ObjectPath>,
        offset: &ObjectPath,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&ObjectPath>) -> object_store::Result<object_store::ListResult> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.no_listing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(object_store::Error::NotSupported { source: "this store cannot list".into() });
        }
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// The services `.ci/services.sh start` runs on loopback (Garage for S3, nginx for HTTP);
/// `bash .ci/run` starts them and runs the `#[ignore]`d tests that need them with
/// `--include-ignored`.
pub fn service_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: start the services with `bash .ci/services.sh start` and source target/ci-services/env"
        )
    })
}

/// Opens a dataset through the same URL + options path a configuration uses.
pub fn open_dataset(url: String, options: &[(&str, String)]) -> Store {
    let config = zarrd::config::DatasetConfig {
        url,
        title: None,
        options: options.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
        ..Default::default()
    };
    zarrd::catalog::open_store("conf", &config).unwrap()
}

/// The dataset options of the Garage bucket of `.ci/services.sh`.
pub fn s3_options() -> Vec<(&'static str, String)> {
    vec![
        ("aws_endpoint", service_env("ZARRD_TEST_S3_ENDPOINT")),
        ("aws_access_key_id", service_env("ZARRD_TEST_S3_KEY_ID")),
        ("aws_secret_access_key", service_env("ZARRD_TEST_S3_SECRET")),
        ("aws_region", service_env("ZARRD_TEST_S3_REGION")),
        ("aws_allow_http", "true".to_owned()),
    ]
}

/// A fresh key prefix per test run, so objects of an earlier run cannot mask a failed upload.
pub fn run_prefix(test: &str) -> String {
    format!(
        "{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
    )
}

/// Uploads every file of the local store `dir` through `object_store`'s S3 client to
/// `s3://BUCKET/{prefix}` and opens that prefix as a dataset.
pub async fn upload_to_s3(dir: &Path, prefix: &str) -> Store {
    let bucket = service_env("ZARRD_TEST_S3_BUCKET");
    let store = open_dataset(format!("s3://{bucket}/{prefix}"), &s3_options());
    let local = local_store(dir);
    let backend = store.backend();
    let files = local.backend().list(None);
    let uploads: Vec<_> = futures::TryStreamExt::try_collect::<Vec<_>>(files).await.unwrap();
    let root = ObjectPath::from(prefix);
    futures::future::try_join_all(uploads.iter().map(|meta| {
        let (backend, local) = (backend.clone(), local.backend());
        let target: ObjectPath = root.parts().chain(meta.location.parts()).collect();
        async move {
            let bytes = local.get(&meta.location).await?.bytes().await?;
            backend.put(&target, bytes.into()).await.map(|_| ())
        }
    }))
    .await
    .unwrap();
    store
}

/// Whether the calling test should run its body here: `true` in a child process of this
/// test binary started for that one test (`--exact`), where no other test shares the
/// process; in the parent (every other test alongside) it starts that child, fails when the
/// child fails, and returns `false`. For tests that read process-wide counters exactly or
/// install a global log subscriber. `test` is the test's path in the binary, e.g.
/// `concat!(module_path!(), "::my_test")`.
pub fn alone(test: &str) -> bool {
    const VAR: &str = "ZARRD_TEST_ALONE";
    // `it::auth_cache::x` → `auth_cache::x`, as the harness names it.
    let name = test.split_once("::").map_or(test, |(_, rest)| rest);
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        return true;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(VAR, name)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let _ = std::fs::write(std::env::temp_dir().join(format!("zarrd-alone-{name}.log")), &text);
    assert!(output.status.success(), "{name}, alone in its process, failed:\n{text}");
    assert!(text.contains("1 passed"), "{name} did not run in its process:\n{text}");
    false
}

/// `python3 -m http.server` over a directory, on a free loopback port: an HTTP origin that
/// answers a ranged GET with the whole object. Stopped when dropped.
pub struct PythonHttpServer {
    pub url: String,
    child: std::process::Child,
}

impl PythonHttpServer {
    pub fn start(dir: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 is installed");
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "http.server did not start");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Self { url: format!("http://127.0.0.1:{port}"), child }
    }
}

impl Drop for PythonHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
