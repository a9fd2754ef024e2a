//! The services of `.ci/services.sh` (S3, HTTP), a Python HTTP origin, and tests run
//! alone in a process of their own.

use std::path::Path;

use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;
use zarrd_core::store::Store;

use super::local_store;

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
