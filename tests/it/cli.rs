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
    http_request(port, "GET", path)
}

fn http_request(port: u16, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
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
    let out = zarrd().args(["serve", "--dataset", "no-equals-sign"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dataset"));
    let out = zarrd().args(["serve"]).env("ZARRD__LOG__FORMAT", "xml").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("log.format"));
}

/// A dataset that cannot be opened (a missing path, a file where a directory should be,
/// a URL no backend takes) is served as failing; the server and its other datasets are not.
#[test]
fn datasets_that_cannot_be_opened_do_not_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file.zarr");
    std::fs::write(&file, b"not a directory").unwrap();
    let file = file.to_str().unwrap().to_owned();
    let server = Server::start(&[
        // Named, the sample is served beside the others (alone it would give way to them).
        ("ZARRD__DATASETS__SAMPLE__URL", "data/sample.zarr"),
        ("ZARRD__DATASETS__GONE__URL", "/no/such/dir"),
        ("ZARRD__DATASETS__FILE__URL", file.as_str()),
        ("ZARRD__DATASETS__ODD__URL", "ftp://host/x.zarr"),
    ]);
    let (status, body) = http_get(server.port, "/v1/datasets").unwrap();
    assert_eq!(status, 200, "{body}");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let health = |name: &str| {
        let ds =
            doc["datasets"].as_array().unwrap().iter().find(|d| d["name"] == name).unwrap_or_else(|| panic!("{doc}"));
        ds["health"]["status"].as_str().unwrap_or_default().to_owned()
    };
    for name in ["gone", "file", "odd"] {
        assert_eq!(health(name), "failing", "{name}: {doc}");
        assert!(metric(server.port, &format!("zarrd_dataset_up{{dataset=\"{name}\"}} ")) < 0.5, "{name}");
    }
    assert_eq!(health("sample"), "ok", "{doc}");
    let (status, body) = http_get(server.port, "/v1/slice/sample/climate/t2m?s=0,0,0&format=json").unwrap();
    assert_eq!(status, 200, "{body}");
    // Its requests say what is wrong, without the path or URL (that is in the log).
    let (status, body) = http_get(server.port, "/v1/arrays/file/x").unwrap();
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("could not be opened") && !body.contains("a-file.zarr"), "{body}");
    let logs = server.logs();
    assert!(logs.lines().any(|l| l.contains("cannot be opened") && l.contains("a-file.zarr")), "{logs}");
}

#[test]
fn serves_with_flags_and_drains_on_sigterm() {
    let port = free_port();
    let mut child = zarrd()
        .args(["serve", "--dataset", "conf=tests/fixtures/conformance/data.zarr", "--dataset", "demo=data/sample.zarr"])
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
    // The datasets of the flags, and not the embedded default's sample beside them.
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = doc["datasets"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["conf", "demo"], "{body}");
    assert_eq!(http_get(port, "/readyz").unwrap().0, 200);
    // A request in flight when SIGTERM arrives still completes.
    let in_flight = std::thread::spawn(move || http_get(port, "/v1/slice/demo/climate/t2m?format=json"));
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

/// A running `zarrd` with JSON logs collected in the background (so a full pipe never
/// stalls it), `env` applied on top of a fresh port.
struct Server {
    child: Child,
    port: u16,
    logs: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    fn start(env: &[(&str, &str)]) -> Self {
        Self::start_with_fd_limit(env, None)
    }

    /// With `fd_limit`, the process runs under `ulimit -n` (soft and hard) of that size.
    fn start_with_fd_limit(env: &[(&str, &str)], fd_limit: Option<u32>) -> Self {
        let port = free_port();
        let mut cmd = match fd_limit {
            None => zarrd(),
            Some(n) => {
                let mut sh = Command::new("sh");
                sh.current_dir(env!("CARGO_MANIFEST_DIR"))
                    .env_remove("ZARRD_CONFIG")
                    .env_remove("ZARRD_LISTEN")
                    .env_remove("RUST_LOG")
                    .args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), env!("CARGO_BIN_EXE_zarrd")]);
                sh
            }
        };
        cmd.arg("serve")
            .env("ZARRD_LISTEN", format!("127.0.0.1:{port}"))
            .env("ZARRD_LOG_FORMAT", "json")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let logs = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = std::sync::Arc::clone(&logs);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        wait_ready(port, &mut child);
        Self { child, port, logs }
    }

    fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// The logs once they contain `needle`, or after 5 s: lines are written out within
    /// 50 ms (`logbuf`), later on a loaded machine, and the reader copies them from the pipe.
    fn logs_with(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.logs().contains(needle) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.logs()
    }

    fn terminate(&self) {
        assert!(Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap().success());
    }

    /// Waits up to `bound` for the process to exit.
    fn wait_exit(&mut self, bound: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < bound {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    /// Stops the server, and fails the test if it logged a panic anywhere (even one that
    /// became a 500 or a cut body).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let logs = self.logs();
        let panics: Vec<&str> = logs.lines().filter(|l| l.contains("\"target\":\"zarrd::panic\"")).collect();
        if !std::thread::panicking() {
            assert!(panics.is_empty(), "the server panicked: {panics:?}");
        }
    }
}

/// Reads until the server closes the connection; `Err` if it is still open after `bound`.
fn closed_within(s: &mut TcpStream, bound: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    s.set_read_timeout(Some(bound)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(start.elapsed()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(start.elapsed()),
            Err(e) => return Err(format!("still open after {:?}: {e}", start.elapsed())),
        }
        if start.elapsed() > bound {
            return Err(format!("still sending after {:?}", start.elapsed()));
        }
    }
}

/// A `GET` with keep-alive whose response (of known length) is read completely.
fn keep_alive_get(s: &mut TcpStream, path: &str) -> u16 {
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the response ended");
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .expect("content-length");
            if body.len() >= length {
                return head.split(' ').nth(1).unwrap().parse().unwrap();
            }
        }
    }
}

#[test]
fn stalled_and_idle_connections_are_closed() {
    let server =
        Server::start(&[("ZARRD__HTTP__HEADER_READ_TIMEOUT_SECS", "1"), ("ZARRD__HTTP__KEEP_ALIVE_SECS", "30")]);
    let opened = Instant::now();
    // Connects and sends nothing (hyper would wait in protocol detection forever).
    let mut silent = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    // Slowloris: half a request header, then nothing.
    let mut slowloris = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(slowloris, "GET /healthz HTTP/1.1\r\nHost: loc").unwrap();
    // HTTP/2 without a request: the preface and SETTINGS, then nothing (hyper has no
    // header timeout for HTTP/2).
    let mut h2 = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").unwrap();
    for (name, s) in [("silent", &mut silent), ("slowloris", &mut slowloris), ("http2", &mut h2)] {
        closed_within(s, Duration::from_secs(6)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let after = opened.elapsed();
        assert!(after >= Duration::from_millis(900), "{name} closed after {after:?}, before the timeout");
    }
    // A client that keeps sending requests keeps its connection.
    let mut busy = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    for _ in 0..4 {
        assert_eq!(keep_alive_get(&mut busy, "/healthz"), 200);
        std::thread::sleep(Duration::from_millis(400));
    }
}

#[test]
fn keep_alive_connections_idle_too_long_are_closed() {
    // The header-read timeout is long here, so only the idle timeout can close it.
    let server =
        Server::start(&[("ZARRD__HTTP__HEADER_READ_TIMEOUT_SECS", "60"), ("ZARRD__HTTP__KEEP_ALIVE_SECS", "1")]);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    assert_eq!(keep_alive_get(&mut s, "/healthz"), 200);
    let after = closed_within(&mut s, Duration::from_secs(6)).unwrap();
    assert!(after >= Duration::from_millis(500), "closed after {after:?}, before the idle timeout");
}

fn idle_connections(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect()
}

/// `zarrd_NAME` (no labels) from `/metrics`.
fn metric(port: u16, line_start: &str) -> f64 {
    let (status, text) = http_get(port, "/metrics").unwrap();
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(line_start).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {line_start} in {text}"))
}

#[test]
fn an_idle_flood_does_not_starve_healthz() {
    // 100 idle connections against 64 file descriptors: the default cap leaves
    // descriptors free, the rest of the flood waits in the backlog, and the header-read
    // timeout frees the slots, so /healthz is answered.
    let server = Server::start_with_fd_limit(&[("ZARRD__HTTP__HEADER_READ_TIMEOUT_SECS", "1")], Some(64));
    let flood = idle_connections(server.port, 100);
    let start = Instant::now();
    let (status, body) = http_get(server.port, "/healthz").unwrap();
    assert_eq!((status, body.as_str()), (200, "ok"), "after {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(20));
    let logs = server.logs_with("\"max_connections\":");
    assert!(logs.contains("\"max_connections\":32"), "the cap is derived from the limit: {logs}");
    assert!(!logs.contains("accept failed"), "the cap keeps accepts from failing: {logs}");
    drop(flood);
}

/// At the connection cap a new client gets in: the connection idle the longest is closed
/// to make room (as nginx does), and the newest idle ones stay open.
#[test]
fn at_the_cap_the_longest_idle_connection_makes_room() {
    let server = Server::start(&[("ZARRD__HTTP__MAX_CONNECTIONS", "8"), ("ZARRD__HTTP__KEEP_ALIVE_SECS", "600")]);
    let mut held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
            assert_eq!(keep_alive_get(&mut s, "/healthz"), 200);
            std::thread::sleep(Duration::from_millis(20));
            s
        })
        .collect();
    for path in ["/healthz", "/v1/arrays/sample/climate/t2m"] {
        let start = Instant::now();
        let (status, body) = http_get(server.port, path).unwrap();
        assert_eq!(status, 200, "{path}: {body}");
        assert!(start.elapsed() < Duration::from_secs(1), "{path} answered after {:?}", start.elapsed());
    }
    // The first client found every slot taken: the oldest idle connection made room (the
    // second may have found the first one's slot free again).
    closed_within(&mut held[0], Duration::from_secs(2)).unwrap_or_else(|e| panic!("the oldest idle connection: {e}"));
    assert_eq!(keep_alive_get(&mut held[7], "/healthz"), 200, "the newest idle connection stays open");
    assert!(metric(server.port, "zarrd_connections_closed_for_room_total ") >= 1.0);
}

/// When every connection under the cap is busy (responses their clients do not read),
/// health and readiness probes still answer over a small reserve; other requests there are
/// told to retry (503, `Retry-After`), never left waiting.
#[test]
fn with_every_connection_busy_probes_still_answer() {
    let server = Server::start(&[("ZARRD__HTTP__MAX_CONNECTIONS", "4")]);
    let busy: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
            write!(s, "GET /v1/slice/sample/climate/t2m?format=npy HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
            // The response has started: its request is in flight until the body is sent.
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut first = [0u8; 16];
            assert!(s.read(&mut first).unwrap() > 0);
            s
        })
        .collect();
    for probe in ["/healthz", "/readyz"] {
        let start = Instant::now();
        assert_eq!(http_get(server.port, probe).unwrap().0, 200, "{probe}");
        assert!(start.elapsed() < Duration::from_secs(1), "{probe} answered after {:?}", start.elapsed());
    }
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(s, "GET /v1/datasets HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap(); // the reserve closes after one response
    assert!(start.elapsed() < Duration::from_secs(1));
    let head = raw.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 503"), "{raw}");
    assert!(raw.contains("connection limit") && head.contains("content-type: application/problem+json"), "{raw}");
    // Through the same layers as every response: a request id and Retry-After.
    assert!(head.contains("x-request-id:") && head.contains("retry-after: 1"), "{raw}");
    drop(busy);
}

#[test]
fn accept_errors_back_off() {
    // A cap above the file limit: accepts fail with EMFILE, and must pause, not spin.
    let server = Server::start_with_fd_limit(
        &[("ZARRD__HTTP__HEADER_READ_TIMEOUT_SECS", "1"), ("ZARRD__HTTP__MAX_CONNECTIONS", "1000")],
        Some(64),
    );
    let start = Instant::now();
    let flood = idle_connections(server.port, 100);
    let (status, _) = http_get(server.port, "/healthz").unwrap();
    assert_eq!(status, 200);
    let errors = metric(server.port, "zarrd_accept_errors_total ");
    let elapsed = start.elapsed();
    assert!(errors >= 1.0, "the flood should have run out of descriptors");
    // One error per back-off at most (100 ms) on each listener (one per core: the default
    // `per_core` runtime), plus slack.
    let listeners = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    assert!(
        errors <= elapsed.as_secs_f64() * 10.0 * listeners + 5.0,
        "{errors} accept errors in {elapsed:?} on {listeners} listeners: a hot loop"
    );
    // Log lines are written out within 50 ms (`logbuf`): wait a little for the first one.
    let warnings = || server.logs().lines().filter(|l| l.contains("accept failed")).count();
    let deadline = Instant::now() + Duration::from_secs(2);
    while warnings() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = start.elapsed();
    let warnings = warnings();
    assert!(warnings >= 1 && warnings as f64 <= elapsed.as_secs_f64() + 2.0, "{warnings} warnings in {elapsed:?}");
    drop(flood);
}

#[test]
fn stalled_clients_do_not_hold_up_shutdown() {
    let mut server = Server::start(&[
        ("ZARRD__HTTP__DRAIN_SECS", "1"),
        ("ZARRD__HTTP__SHUTDOWN_TIMEOUT_SECS", "2"),
        ("ZARRD__HTTP__HEADER_READ_TIMEOUT_SECS", "60"),
        ("ZARRD__HTTP__KEEP_ALIVE_SECS", "60"),
    ]);
    let mut slowloris = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(slowloris, "GET /healthz HTTP/1.1\r\nHost: loc").unwrap();
    // A slow reader: asks for ~30 MB of JSON and reads only the first bytes.
    let mut reader = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(reader, "GET /v1/slice/sample/climate/t2m?format=json HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    reader.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut first = [0u8; 12];
    reader.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let start = Instant::now();
    server.terminate();
    let exit = server.wait_exit(Duration::from_secs(10));
    let exit = exit.unwrap_or_else(|| panic!("still running {:?} after SIGTERM", start.elapsed()));
    assert!(exit.success(), "{exit:?}");
    assert!(start.elapsed() >= Duration::from_secs(3), "drain and shutdown timeout were not honoured");
    drop((slowloris, reader));
    // The request cut off still has its one access-log line.
    let logs = server.logs();
    let lines: Vec<&str> = logs.lines().filter(|l| l.contains("zarrd::access") && l.contains("/v1/slice")).collect();
    assert_eq!(lines.len(), 1, "{logs}");
    let entry: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(entry["status"], 200, "{entry}");
    // ~30 MB were asked for; only what fit in the socket buffers was sent.
    assert_eq!(entry["complete"], false, "{entry}");
    assert!(entry["bytes"].as_u64().is_some_and(|b| b > 0 && b < 25_000_000), "{entry}");
}

#[test]
fn access_log_and_metrics_count_the_bytes_sent() {
    let mut server = Server::start(&[("ZARRD__HTTP__DRAIN_SECS", "0")]);
    let expected = std::fs::read("data/sample.zarr/climate/t2m/zarr.json").unwrap();
    let (status, body) = http_get(server.port, "/zarr/sample/climate/t2m/zarr.json").unwrap();
    assert_eq!((status, body.len()), (200, expected.len()));
    let sent = metric(server.port, "zarrd_http_response_bytes_total{route=\"/zarr\"} ");
    assert_eq!(sent as usize, expected.len());
    assert_eq!(http_request(server.port, "HEAD", "/zarr/sample/no/such/key").unwrap().0, 404);
    server.terminate();
    assert!(server.wait_exit(Duration::from_secs(10)).is_some_and(|s| s.success()));
    let logs = server.logs();
    let line = logs.lines().find(|l| l.contains("/zarr/sample")).unwrap_or_else(|| panic!("no access log in {logs}"));
    let entry: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(entry["bytes"], expected.len(), "{entry}");
    assert_eq!(entry["complete"], true, "{entry}");
    // A HEAD is whole once its headers are sent, a 404 too; the route is the matched one.
    let head = logs.lines().find(|l| l.contains("HEAD /zarr/sample/no/such/key")).unwrap_or_else(|| panic!("{logs}"));
    let entry: serde_json::Value = serde_json::from_str(head).unwrap();
    assert_eq!((entry["status"].as_u64(), entry["complete"].as_bool()), (Some(404), Some(true)), "{entry}");
    assert_eq!(entry["route"], "/zarr", "{entry}");
}

/// Peak resident memory of a process, from `/proc` (Linux).
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 =
        status.lines().find(|l| l.starts_with("VmHWM:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024
}

#[test]
fn concurrent_huge_decodes_stay_within_the_memory_budget() {
    // Eight 128 MiB chunks of zeros (a few KiB stored each): one element of each costs a
    // whole chunk decode. Eight at once would take 1 GiB; the budget is 256 MiB.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("big.zarr");
    std::fs::create_dir_all(root.join("a/c")).unwrap();
    std::fs::write(root.join("zarr.json"), br#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    let doc = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [8u64 << 25], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1u64 << 25]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}]
    });
    std::fs::write(root.join("a/zarr.json"), doc.to_string()).unwrap();
    let chunk = zstd::encode_all(vec![0u8; 4 << 25].as_slice(), 1).unwrap();
    for k in 0..8 {
        std::fs::write(root.join(format!("a/c/{k}")), &chunk).unwrap();
    }
    let port = free_port();
    let mut child = zarrd()
        .args(["serve", "--dataset"])
        .arg(format!("big={}", root.display()))
        .env("ZARRD_LISTEN", format!("127.0.0.1:{port}"))
        .env("ZARRD__LIMITS__MEMORY_BYTES", (256u64 << 20).to_string())
        .env("ZARRD__LIMITS__MEMORY_WAIT_MS", "5000")
        .env("ZARRD__CACHE__CHUNK_BYTES", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port, &mut child);
    let baseline = peak_rss_mib(child.id());
    let clients: Vec<_> = (0..8u64)
        .map(|k| std::thread::spawn(move || http_get(port, &format!("/v1/slice/big/a?s={}&format=json", k << 25))))
        .collect();
    let statuses: Vec<u16> = clients.into_iter().map(|c| c.join().unwrap().unwrap().0).collect();
    let peak = peak_rss_mib(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    // Every request is served (one or two decodes at a time) or told to retry; none OOMs.
    assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(
        peak < baseline + 256 + 150,
        "peak RSS {peak} MiB (baseline {baseline} MiB) over the 256 MiB budget + 150 MiB"
    );
}

/// Logs collected from a pipe (docker, Kubernetes, systemd) carry no ANSI colour codes,
/// and the probes and scrapes that arrive every few seconds stay out of the INFO log.
#[test]
fn piped_text_logs_are_plain_and_probes_are_not_logged_at_info() {
    let mut server = Server::start(&[("ZARRD_LOG_FORMAT", "text")]);
    for path in ["/healthz", "/readyz", "/metrics", "/v1/datasets"] {
        assert_eq!(http_get(server.port, path).unwrap().0, 200, "{path}");
    }
    server.terminate();
    assert!(server.wait_exit(Duration::from_secs(30)).is_some_and(|s| s.success()));
    let logs = server.logs_with("GET /v1/datasets");
    assert!(logs.contains("GET /v1/datasets"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "ANSI escape in piped logs: {logs:?}");
    for probe in ["GET /healthz", "GET /readyz", "GET /metrics"] {
        assert!(!logs.contains(probe), "{probe} logged at INFO: {logs}");
    }
}

/// The decode pool is started with the server, one thread per CPU the process may use
/// then (rayon would otherwise size it at the first decode, from whatever CPUs the process
/// is allowed at that moment, and keep that size for good).
#[test]
fn the_cpu_pool_is_started_with_one_thread_per_cpu() {
    let server = Server::start(&[]);
    let cpus = std::thread::available_parallelism().unwrap().get();
    let pool: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", server.child.id()))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .filter(|comm| comm.starts_with("zarrd-cpu-"))
        .collect();
    assert_eq!(pool.len(), cpus, "{pool:?}");
}

/// What hyper refuses before zarrd sees it — a URI over 65,534 bytes, more than 100 header
/// fields, a request that does not parse — and a request naming no single host are problem
/// documents too, over a real socket.
#[test]
fn requests_hyper_refuses_get_problem_documents() {
    let server = Server::start(&[]);
    let answer = |request: &[u8]| -> String {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.write_all(request).unwrap();
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        String::from_utf8(out).unwrap()
    };
    let long = format!("GET /v1/slice/sample/climate/t2m?s={} HTTP/1.1\r\nHost: x\r\n\r\n", "0".repeat(70_000));
    let fields = (0..150).map(|i| format!("X-H{i}: v")).collect::<Vec<_>>().join("\r\n");
    let many = format!("GET /v1/datasets HTTP/1.1\r\nHost: x\r\n{fields}\r\n\r\n");
    for (request, status) in [
        (long.as_bytes(), 414),
        (many.as_bytes(), 431),
        (&b"NOT HTTP AT ALL\r\n\r\n"[..], 400),
        // RFC 9112 §3.2: an HTTP/1.1 request names exactly one host.
        (&b"GET /v1/datasets HTTP/1.1\r\nConnection: close\r\n\r\n"[..], 400),
        (&b"GET /v1/datasets HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n"[..], 400),
    ] {
        let reply = answer(request);
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{reply}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("content-type: application/problem+json"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let doc: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(doc["status"], status, "{doc}");
        assert!(doc["detail"].as_str().is_some_and(|d| d.len() > 20), "{doc}");
    }
    // Everything else is untouched: a normal request on a fresh connection still answers.
    let (status, body) = http_get(server.port, "/v1/datasets").unwrap();
    assert_eq!(status, 200, "{body}");
}

#[test]
fn both_runtimes_serve_every_listener_and_drain_on_sigterm() {
    for (runtime, per_core) in [("per_core", true), ("shared", false)] {
        let mut server = Server::start(&[("ZARRD__HTTP__RUNTIME", runtime), ("ZARRD__HTTP__DRAIN_SECS", "1")]);
        // Each request on a connection of its own: the kernel spreads them over the listeners.
        for _ in 0..20 {
            let (status, body) = http_get(server.port, "/v1/slice/sample/climate/t2m?s=0,0:4,0:4&format=json").unwrap();
            assert_eq!(status, 200, "{runtime}: {body}");
        }
        let logs = server.logs_with("zarrd listening");
        assert!(
            logs.contains("zarrd listening") && logs.contains("a runtime per core") == per_core,
            "{runtime}: {logs}"
        );
        let in_flight = std::thread::spawn({
            let port = server.port;
            move || http_get(port, "/v1/slice/sample/climate/t2m?format=json")
        });
        std::thread::sleep(Duration::from_millis(30));
        server.terminate();
        let (status, body) = in_flight.join().unwrap().unwrap();
        assert_eq!(status, 200, "{runtime}");
        assert!(body.ends_with("]]]}"), "{runtime}: complete body");
        let exit = server.wait_exit(Duration::from_secs(15)).expect("exits after the drain");
        assert!(exit.success(), "{runtime}: {exit:?}");
    }
}
