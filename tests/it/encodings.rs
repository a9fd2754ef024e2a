//! Every byte to every browser (`docs/api.md` "HTTP behaviour": a body is the same bytes
//! under every `Accept-Encoding` and is never cut off). Every route family, with a small and a
//! large body where the family has one, under each content coding, the header browsers
//! send, q-values and `*`: the decoded body must equal the identity body byte for byte,
//! and the coding chosen must be one the client accepts. Run in-process (tower) and over a
//! real socket with curl, which fails (exit 18) on a body cut short.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

/// Targets: the route family's small and large bodies. The large slices are streamed (over
/// `read::STREAM_MIN_BYTES`, 4 MiB) in bands: the bodies that were cut off.
const TARGETS: &[&str] = &[
    "/v1/slice/sample/climate/t2m?s=0,0:8,0:8&format=npy",
    "/v1/slice/sample/climate/t2m?s=0:110&format=npy",
    "/v1/slice/sample/climate/t2m?s=0:2&format=bin",
    "/v1/slice/sample/climate/t2m?s=0:110&format=bin",
    "/v1/slice/sample/climate/t2m?s=0,0:4,0:4&format=json",
    "/v1/slice/sample/climate/t2m?s=0:8&format=json",
    "/v1/slice/sample/climate/t2m?s=0&format=png",
    "/v1/slice/sample/terrain/elevation?format=png",
    "/v1/chunk/sample/climate/t2m?c=0,0,0",
    "/v1/chunk/sample/terrain/elevation?c=0,0&decoded=true&format=npy",
    "/v1/chunk/sample/terrain/elevation?c=0,0&decoded=true&format=json",
    "/v1/chunks/sample/climate/t2m?limit=2",
    "/v1/chunks/sample/climate/t2m?inner=true",
    "/v1/arrays/sample/climate/t2m",
    "/v1/datasets",
    "/v1/datasets/sample",
    "/zarr/sample/climate/t2m/zarr.json",
    "/zarr/sample/climate/t2m/c/0/0/0",
    "/zarr/sample/terrain/elevation/c/0/0",
    "/zarr/sample/",
    "/compat/v3/sample/zarr.json",
    "/compat/v3/sample/climate/t2m/c/0/0/0",
    "/compat/v3/sample/terrain/elevation/c/0/0",
    "/compat/v2/sample/.zmetadata",
    "/compat/v2/sample/climate/t2m/0/0/0",
    "/compat/v2/sample/terrain/elevation/0/0",
    "/iiif/3/sample%2Fterrain%2Felevation/info.json",
    "/iiif/3/sample%2Fterrain%2Felevation/full/max/0/default.png",
    "/iiif/3/sample%2Fclimate%2Ft2m%5B0%5D/full/max/0/default.png",
    "/maps/sample%2Fclimate%2Ft2m%5B0%5D/tilejson.json",
    "/maps/sample%2Fclimate%2Ft2m%5B0%5D/1/0/0.png",
    "/maps/sample%2Fclimate%2Ft2m%5B0%5D/1/1/0.npy",
    "/",
    "/viewer/viewer.js",
    "/viewer/openseadragon.min.js",
    "/viewer/ol.js",
    "/viewer/countries-110m.json",
    "/viewer/colormaps.json",
    "/viewer/window/sample%2Fterrain%2Felevation",
    "/metrics",
];

/// `Accept-Encoding` values: each coding alone, the header every browser sends, q-values
/// that rank or refuse codings, and wildcards.
const ACCEPT_ENCODINGS: &[&str] = &[
    "identity",
    "gzip",
    "zstd",
    "deflate",
    "br",
    "gzip, deflate, br, zstd",
    "gzip;q=1.0, zstd;q=0.5",
    "zstd;q=0, gzip;q=0.8",
    "br;q=1, gzip;q=0.1",
    "*",
    "*;q=0.5, zstd;q=0",
];

/// Targets whose body changes from one request to the next (counters).
fn is_volatile(target: &str) -> bool {
    target == "/metrics"
}

/// The q-value `accept` gives `coding` (explicitly or through `*`); 0 when not accepted.
fn q_of(accept: &str, coding: &str) -> f32 {
    let mut star = None;
    for item in accept.split(',') {
        let mut parts = item.split(';').map(str::trim);
        let name = parts.next().unwrap_or("");
        let q = parts.find_map(|p| p.strip_prefix("q=")).map_or(1.0, |q| q.parse().unwrap());
        if name.eq_ignore_ascii_case(coding) {
            return q;
        }
        if name == "*" {
            star = Some(q);
        }
    }
    star.unwrap_or(0.0)
}

/// `body` decoded from its `Content-Encoding`, after checking the client accepts that coding.
fn decode(coding: &str, accept: &str, body: &[u8], what: &str) -> Vec<u8> {
    if !coding.is_empty() && coding != "identity" {
        assert!(q_of(accept, coding) > 0.0, "{what}: {coding} chosen, which `{accept}` does not accept");
    }
    common::decoded_body(coding, body, what)
}

/// The same response twice: its identity body and a decoded one must agree.
fn compare(target: &str, accept: &str, identity: &[u8], decoded: &[u8]) {
    let what = format!("{target} with Accept-Encoding `{accept}`");
    if is_volatile(target) {
        // Counters move between requests; the document must still be whole.
        let text = std::str::from_utf8(decoded).unwrap();
        assert!(text.ends_with('\n') && text.contains("# TYPE zarrd_http_requests_total counter"), "{what}: {text}");
        return;
    }
    assert_eq!(decoded.len(), identity.len(), "{what}: body length");
    assert!(decoded == identity, "{what}: body differs from the identity body");
}

fn sample_app() -> axum::Router {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.zarr");
    common::app_with(vec![("sample", common::local_store(&dir))], common::config(""))
}

#[tokio::test]
async fn every_body_is_the_same_under_every_encoding_in_process() {
    let app = sample_app();
    let mut compressed = 0;
    for target in TARGETS {
        let identity = common::get_with(&app, target, &[("accept-encoding", "identity")]).await;
        assert_eq!(identity.status, 200, "{target}: {}", identity.describe());
        assert!(identity.header("content-encoding").is_empty(), "{target}");
        for accept in ACCEPT_ENCODINGS {
            let reply = common::get_with(&app, target, &[("accept-encoding", accept)]).await;
            assert_eq!(reply.status, 200, "{target} `{accept}`");
            let coding = reply.header("content-encoding");
            compressed += usize::from(!coding.is_empty());
            let what = format!("{target} `{accept}`");
            compare(target, accept, &identity.body, &decode(coding, accept, &reply.body, &what));
        }
    }
    assert!(compressed > 100, "the matrix compressed only {compressed} bodies");
}

/// A server on a real socket, as browsers reach it.
async fn listen(app: axum::Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = common::config("");
    let settings = zarrd::http::server::Settings::new(&config.http, 1024);
    let cap = zarrd::http::server::Cap::new(&settings);
    tokio::spawn(zarrd::http::server::serve(listener, move || app.clone(), settings, cap, std::future::pending()));
    port
}

/// curl's view of one GET: its exit status (18: the body was cut short), the response
/// headers and the raw (still encoded) body.
fn curl(port: u16, target: &str, accept: &str) -> (i32, String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let (headers, body) = (dir.path().join("headers"), dir.path().join("body"));
    let status = std::process::Command::new("curl")
        .args(["-sS", "--http1.1", "-H", &format!("Accept-Encoding: {accept}"), "-D"])
        .arg(&headers)
        .arg("-o")
        .arg(&body)
        .arg(format!("http://127.0.0.1:{port}{target}"))
        .status()
        .expect("curl is installed (.ci/install-tools.sh)");
    let headers = std::fs::read_to_string(&headers).unwrap_or_default().to_ascii_lowercase();
    (status.code().unwrap_or(-1), headers, std::fs::read(&body).unwrap_or_default())
}

fn header<'a>(headers: &'a str, name: &str) -> &'a str {
    headers.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map_or("", str::trim)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_body_is_whole_over_a_socket_under_every_encoding() {
    let port = listen(sample_app()).await;
    for target in TARGETS {
        let target = (*target).to_owned();
        tokio::task::spawn_blocking(move || {
            let (rc, headers, identity) = curl(port, &target, "identity");
            assert_eq!(rc, 0, "{target}: curl failed ({headers})");
            assert!(headers.starts_with("http/1.1 200"), "{target}: {headers}");
            for accept in ACCEPT_ENCODINGS {
                let (rc, headers, raw) = curl(port, &target, accept);
                let what = format!("{target} `{accept}`");
                assert_eq!(rc, 0, "{what}: curl exit {rc} (18: body cut short), {} bytes, {headers}", raw.len());
                let coding = header(&headers, "content-encoding");
                compare(&target, accept, &identity, &decode(coding, accept, &raw, &what));
            }
        })
        .await
        .unwrap();
    }
    common::assert_no_panics();
}
