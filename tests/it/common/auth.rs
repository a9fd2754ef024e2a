//! The access-control test world: three datasets over the conformance store — `open`
//! (public), `lab` (read by `alice` and the group `imaging`) and `closed` (read by `carol`)
//! — and four API-key holders: alice, bob (group imaging), carol and dave (no rights).
//! Key digests are `printf %s KEY | sha256sum`, computed outside the server.

use std::fmt::Write;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use tower::ServiceExt;
use zarrd::config::Config;

use super::Reply;

/// An array of two dimensions (37 × 53 float32), so every route (IIIF too) serves it.
pub const ARRAY: &str = "regular/f4_zstd_partial";
pub const SIGNING_KEY: &str = "a test signing key of at least thirty-two bytes";

pub const KEYS: [(&str, &str, &str, &str); 4] = [
    ("alice", "alice-key", "72ee9d4355ccb9d3a4c9dbf37382e38e75c1b1a225b5bd1f729ee91bbda30c20", "[]"),
    ("bob", "bob-key", "9b94dc1a51a38769f135edf04033ad7f2f487b6c25929be7a861cfc1ab10cf98", "[\"imaging\"]"),
    ("carol", "carol-key", "368c3387fc9b5ce6ab156ad952031f52bc9154e89a727020cd314f8910a21823", "[]"),
    ("dave", "dave-key", "fe09dace1224a91b590b9329dc3268b6db00ce6f9dbac4de34ee21d759fe9585", "[]"),
];

/// The datasets of the world, with their `read` lists (`None`: public).
pub const DATASETS: [(&str, Option<&str>); 3] =
    [("open", None), ("lab", Some("[\"alice\", \"imaging\"]")), ("closed", Some("[\"carol\"]"))];

/// `Authorization` of one of the [`KEYS`] holders.
pub fn bearer(name: &str) -> String {
    let key = KEYS.iter().find(|k| k.0 == name).unwrap().1;
    format!("Bearer {key}")
}

/// A configuration loaded as zarrd loads one: `extra` TOML first, the world's keys and
/// datasets (those named in `datasets`), and `env` as the process environment.
pub fn load(extra: &str, datasets: &[&str], env: &[(&str, &str)]) -> Config {
    let mut text = format!("listen = \"127.0.0.1:0\"\n{extra}\n");
    for (name, _, digest, groups) in KEYS {
        writeln!(text, "[[auth.api_keys]]\nname = \"{name}\"\nsha256 = \"{digest}\"\ngroups = {groups}").unwrap();
    }
    for (name, read) in DATASETS.iter().filter(|(n, _)| datasets.contains(n)) {
        writeln!(text, "[datasets.{name}]\nurl = \"/\"").unwrap();
        if let Some(read) = read {
            writeln!(text, "read = {read}").unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.toml");
    std::fs::write(&path, text).unwrap();
    let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
    Config::load(Some(&path), env, &zarrd::config::Overrides::default()).unwrap()
}

/// The app over `config`, serving each of `datasets` from the conformance store.
pub fn app(config: Config, datasets: &[&str]) -> Router {
    let store = super::local_store(&super::conformance_dir().join("data.zarr"));
    super::app_with(datasets.iter().map(|&d| (d, store.clone())).collect(), config)
}

/// The whole world, with a signing key.
pub fn world() -> Router {
    let all = ["open", "lab", "closed"];
    app(load("", &all, &[("ZARRD_SIGNING_KEY", SIGNING_KEY)]), &all)
}

pub async fn request(app: &Router, method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = app.clone().oneshot(req.body(Body::from(body.to_owned())).unwrap()).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    super::assert_no_panics();
    Reply { status, headers, body }
}

/// Mints a capability URL as `who` (an `Authorization` value) for `prefix`.
pub async fn mint(app: &Router, who: &str, prefix: &str, ttl_s: u64) -> String {
    let body = format!("{{\"prefix\": \"{prefix}\", \"ttl_s\": {ttl_s}}}");
    let reply = request(app, Method::POST, "/v1/tokens", &[("authorization", who)], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.describe());
    reply.json()["url"].as_str().unwrap().to_owned()
}

/// The routes of one dataset `ds` over [`ARRAY`], with the status an allowed caller gets.
pub fn routes(ds: &str) -> Vec<(String, u16)> {
    let id = format!("{ds}%2F{}", ARRAY.replace('/', "%2F"));
    vec![
        (format!("/v1/datasets/{ds}"), 200),
        (format!("/v1/arrays/{ds}/{ARRAY}"), 200),
        (format!("/v1/slice/{ds}/{ARRAY}?s=0:2,0:3"), 200),
        (format!("/v1/reduce/{ds}/{ARRAY}?op=mean&s=0:2,0:3"), 200),
        // Past the access layer, the array has no labels: 400 naming its dimensions.
        (format!("/v1/slice/{ds}/{ARRAY}?sel=nowhere:1"), 400),
        (format!("/v1/chunks/{ds}/{ARRAY}"), 200),
        (format!("/v1/chunk/{ds}/{ARRAY}?c=0,0"), 200),
        (format!("/zarr/{ds}"), 308),
        (format!("/zarr/{ds}/"), 200),
        (format!("/zarr/{ds}/{ARRAY}/zarr.json"), 200),
        (format!("/zarr/{ds}/{ARRAY}/c/0/0"), 200),
        (format!("/compat/v3/{ds}/{ARRAY}/zarr.json"), 200),
        (format!("/compat/v2/{ds}/{ARRAY}/.zarray"), 200),
        (format!("/iiif/3/{id}"), 303),
        (format!("/iiif/3/{id}/info.json"), 200),
        (format!("/iiif/3/{id}/full/max/0/default.png"), 200),
        (format!("/iiif/3/{id}/0,0,8,8/8,/0/gray.png"), 200),
        // Past the access layer, the array has no latitude/longitude coordinates: 422.
        (format!("/maps/{id}/tilejson.json"), 422),
        (format!("/maps/{id}/0/0/0.png"), 422),
        (format!("/view/{ds}/{ARRAY}"), 200),
        // The viewer's colorbar window reads the array: the same rights as its images.
        (format!("/viewer/window/{id}"), 200),
    ]
}
