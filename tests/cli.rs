//! The `zarrd` binary itself: configuration errors at startup, flags and environment
//! overrides, and graceful shutdown on SIGTERM (readiness fails first, in-flight requests
//! finish).

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn zarrd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zarrd"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.env_remove("ZARRD_CONFIG").env_remove("ZARRD_LISTEN").env_remove("RUST_LOG");
    cmd
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 GET over a plain socket: (status, body).
fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}

fn wait_ready(port: u16, child: &mut Child) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok((200, _)) = http_get(port, "/healthz") {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "zarrd exited early");
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("zarrd did not come up on port {port}");
}

#[test]
fn bad_configuration_fails_at_startup_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:0\"\n[limits]\nmax_in_flight = 0\n[datasets.a]\nurl = \"data/sample.zarr\"\n",
    )
    .unwrap();
    let out = zarrd().args(["serve", "--config"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("limits.max_in_flight"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = zarrd().args(["serve", "--dataset", "x=/no/such/dir"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("datasets.x.url"));
    let out = zarrd().args(["serve"]).env("ZARRD__LOG__FORMAT", "xml").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("log.format"));
}

#[test]
fn serves_with_flags_and_drains_on_sigterm() {
    let port = free_port();
    let mut child = zarrd()
        .args(["serve", "--dataset", "conf=tests/fixtures/conformance/data.zarr"])
        .env("ZARRD_LISTEN", format!("127.0.0.1:{port}"))
        .env("ZARRD__HTTP__DRAIN_SECS", "2")
        .env("ZARRD_LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port, &mut child);
    let (status, body) = http_get(port, "/v1/datasets").unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("\"conf\"") && body.contains("\"sample\""), "{body}");
    assert_eq!(http_get(port, "/readyz").unwrap().0, 200);
    // A request in flight when SIGTERM arrives still completes.
    let in_flight = std::thread::spawn(move || http_get(port, "/v1/slice/sample/climate/t2m?format=json"));
    std::thread::sleep(Duration::from_millis(30));
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(300));
    // Readiness fails first, while the listener still answers.
    assert_eq!(http_get(port, "/readyz").unwrap().0, 503);
    let (status, body) = in_flight.join().unwrap().unwrap();
    assert_eq!(status, 200);
    assert!(body.ends_with("]]]}"), "complete body");
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    // Structured logs carry the request id.
    let mut logs = String::new();
    child.stdout.take().unwrap().read_to_string(&mut logs).unwrap();
    let line = logs.lines().find(|l| l.contains("/v1/datasets")).unwrap_or_else(|| panic!("no access log in {logs}"));
    let entry: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(entry["status"], 200);
    assert!(entry["request_id"].is_string() || entry["span"]["request_id"].is_string(), "{entry}");
}
