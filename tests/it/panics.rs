//! No panic goes unseen (`docs/api.md` "Operations: probes, metrics, logs"): a panic
//! injected into a handler, into a response body after its headers were sent, and into a
//! decode on the CPU pool is counted in `zarrd_panics_total`, logged once with the request
//! id and route, and answered 500 with a problem document when no header was sent yet (else
//! the connection is cut, so the client never takes a short body for a whole one).
//!
//! Alone in a process of its own (`common::alone`): the other tests fail on any panic of
//! the server (`common::assert_no_panics`), which these injected ones would trip, and this
//! one installs a global log subscriber and reads the panic counter from zero.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;

/// Log lines written by the test's subscriber.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        // Echoed, so that a failing assertion of this test (logged by the hook) is seen.
        std::io::stderr().write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// The JSON log lines of panics.
    fn panics(&self) -> Vec<serde_json::Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["target"] == "zarrd::panic")
            .collect()
    }
}

async fn handler_panics() -> &'static str {
    panic!("injected panic in a handler")
}

/// 200 and its headers, then a body that panics after its first bytes.
async fn body_panics() -> Response {
    let first = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 1000])) });
    let then = futures::stream::once(async {
        // Time for hyper to write the headers and the first bytes (generous: other tests
        // share the machine while this one runs in its own process).
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        panic!("injected panic in a response body")
    });
    zarrd::http::body::streamed(futures::StreamExt::chain(first, then), 100_000).into_response()
}

async fn cpu_panics() -> Response {
    match zarrd_core::ops::cpu::run(|| -> u8 { panic!("injected panic on the CPU pool") }).await {
        Ok(_) => "no panic?".into_response(),
        Err(e) => zarrd::error::Error::internal(e).into_response(),
    }
}

fn app() -> Router {
    let config = common::config("");
    let state = zarrd::http::AppState::new(zarrd::catalog::Catalog::new(Vec::new(), &config), config);
    let layered = state.clone();
    let router = Router::new()
        .route("/boom/handler", get(handler_panics))
        .route("/boom/body", get(body_panics))
        .route("/boom/cpu/{x}", get(cpu_panics))
        .route("/metrics", get(zarrd::http::routes::ops::metrics))
        .with_state(state);
    zarrd_core::ops::metrics::handle();
    zarrd_core::ops::panics::install_hook();
    zarrd::http::middleware::apply(router, &layered)
}

fn panics_metric(text: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix("zarrd_panics_total ")).map_or(0, |v| v.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_panics_are_counted_logged_and_answered() {
    if !common::alone(concat!(module_path!(), "::injected_panics_are_counted_logged_and_answered")) {
        return;
    }
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt().json().with_writer(move || writer.clone()).finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let app = app();
    let before = panics_metric(&String::from_utf8_lossy(&common::send(&app, "/metrics", &[]).await.body));
    assert_eq!(before, 0, "zarrd_panics_total is shown from the start");

    // A handler: 500 problem document, the connection's service survives.
    let reply = common::send(&app, "/boom/handler", &[]).await;
    let doc = reply.assert_problem(500);
    assert!(!doc["detail"].as_str().unwrap().contains("injected"), "the panic message stays in the log: {doc}");
    let handler_id = reply.header("x-request-id").to_owned();

    // The CPU pool: the request fails with a 500 problem document.
    let reply = common::send(&app, "/boom/cpu/1", &[]).await;
    reply.assert_problem(500);
    let cpu_id = reply.header("x-request-id").to_owned();

    // A body after its headers: over a real socket the client sees the connection cut
    // (curl exit 18), never a body that looks whole.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = common::config("");
    let settings = zarrd::http::server::Settings::new(&config.http, 1024);
    let served = app.clone();
    let cap = zarrd::http::server::Cap::new(&settings);
    tokio::spawn(zarrd::http::server::serve(listener, move || served.clone(), settings, cap, std::future::pending()));
    let out = tokio::process::Command::new("curl")
        .args(["-sS", "-D", "-", "-o", "/dev/null", &format!("http://127.0.0.1:{port}/boom/body")])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(18), "a cut body: {out:?}");
    let headers = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    let body_id = headers.lines().find_map(|l| l.strip_prefix("x-request-id:")).unwrap().trim().to_owned();
    // And again through the server, after the cut: still serving.
    let metrics = common::send(&app, "/metrics", &[]).await;
    assert_eq!(panics_metric(&String::from_utf8_lossy(&metrics.body)), 3, "three panics counted");
    assert_eq!(zarrd_core::ops::panics::count(), 3);

    // Each logged once, with its request id and route.
    let lines = logs.panics();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for (id, route, message) in [
        (&handler_id, "/boom/handler", "injected panic in a handler"),
        (&cpu_id, "/boom/cpu", "injected panic on the CPU pool"),
        (&body_id, "/boom/body", "injected panic in a response body"),
    ] {
        let line = lines
            .iter()
            .find(|l| l["fields"]["message"].as_str().unwrap().contains(message))
            .unwrap_or_else(|| panic!("{message} not logged: {lines:?}"));
        assert_eq!(line["level"], "ERROR", "{line}");
        assert_eq!(line["span"]["request_id"], id.as_str(), "{line}");
        assert_eq!(line["span"]["route"], route, "{line}");
    }
}
