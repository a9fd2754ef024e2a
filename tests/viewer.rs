//! The viewer's HTTP routes: the page at `/` and at deep links `/view/{ds}/{*path}` (404
//! problem documents for links to nothing), its static files under `/viewer/` (the script,
//! the style, the vendored `OpenSeadragon` and its licence) with their media types and
//! caching headers, byte for byte the files in `src/viewer/`, and HEAD on each.

#![allow(clippy::unwrap_used)]

mod common;

use axum::body::Body;
use axum::http::{Method, Request};
use common::{Reply, get};
use http_body_util::BodyExt;
use tower::ServiceExt;

fn app() -> axum::Router {
    common::conformance_app()
}

fn source(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/viewer").join(name)).unwrap()
}

async fn head(app: &axum::Router, uri: &str) -> Reply {
    let req = Request::builder().method(Method::HEAD).uri(uri).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply { status, headers, body }
}

const ASSETS: [(&str, &str); 4] = [
    ("viewer.js", "text/javascript; charset=utf-8"),
    ("viewer.css", "text/css; charset=utf-8"),
    ("openseadragon.min.js", "text/javascript; charset=utf-8"),
    ("openseadragon-LICENSE.txt", "text/plain; charset=utf-8"),
];

#[tokio::test]
async fn the_page_is_served_at_the_root_and_links_only_files_that_exist() {
    let app = app();
    let page = get(&app, "/").await;
    assert_eq!(page.status, 200, "{}", page.describe());
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    // The page changes with the binary: revalidated, never cached stale.
    assert_eq!(page.header("cache-control"), "no-cache");
    assert_eq!(page.body.as_ref(), source("index.html").as_slice());
    let html = String::from_utf8(page.body.to_vec()).unwrap();
    // Every local file the page loads is served (no CDN: works offline).
    let linked: Vec<&str> = html
        .split(['"', '\''])
        .filter(|s| s.starts_with("/viewer/") || s.starts_with("http://") || s.starts_with("https://"))
        .collect();
    assert!(linked.contains(&"/viewer/openseadragon.min.js") && linked.contains(&"/viewer/viewer.js"), "{linked:?}");
    for link in linked {
        assert!(link.starts_with("/viewer/"), "the page loads `{link}` from elsewhere");
        let r = get(&app, link).await;
        assert_eq!(r.status, 200, "{link}: {}", r.describe());
    }
}

#[tokio::test]
async fn static_files_have_their_media_types_caching_and_bytes() {
    let app = app();
    for (name, media) in ASSETS {
        let r = get(&app, &format!("/viewer/{name}")).await;
        assert_eq!(r.status, 200, "{name}: {}", r.describe());
        assert_eq!(r.header("content-type"), media, "{name}");
        assert_eq!(r.header("cache-control"), "public, max-age=3600", "{name}");
        assert_eq!(r.body.as_ref(), source(name).as_slice(), "{name}: not the file in src/viewer");
    }
    // The vendored OpenSeadragon is a release build, shipped with its BSD licence.
    let osd = String::from_utf8(source("openseadragon.min.js")).unwrap();
    assert!(osd.starts_with("//! openseadragon "), "{}", &osd[..40]);
    let licence = String::from_utf8(source("openseadragon-LICENSE.txt")).unwrap();
    assert!(licence.contains("OpenSeadragon contributors") && licence.contains("Redistribution and use"));
    // The script drives the IIIF service of this server.
    assert!(String::from_utf8(source("viewer.js")).unwrap().contains("/iiif/3/"));
}

#[tokio::test]
async fn head_answers_like_get_without_a_body() {
    let app = app();
    for uri in ["/", "/view/conf/regular/u1_blosc", "/viewer/viewer.js", "/viewer/openseadragon-LICENSE.txt"] {
        let g = get(&app, uri).await;
        let h = head(&app, uri).await;
        assert_eq!(h.status, 200, "{uri}");
        assert!(h.body.is_empty(), "{uri}: HEAD has a body");
        for name in ["content-type", "cache-control"] {
            assert_eq!(h.header(name), g.header(name), "{uri}: {name}");
        }
        if let Some(len) = h.headers.get("content-length") {
            assert_eq!(len.to_str().unwrap(), g.body.len().to_string(), "{uri}");
        }
    }
    let h = head(&app, "/viewer/nope.js").await;
    assert_eq!(h.status, 404);
    assert!(h.body.is_empty());
}

#[tokio::test]
async fn deep_links_serve_the_page_for_nodes_that_exist_and_404_otherwise() {
    let app = app();
    let index = source("index.html");
    for uri in
        ["/view/conf", "/view/conf/regular", "/view/conf/regular/u1_blosc", "/view/conf/rectilinear/u1_months_3d"]
    {
        let r = get(&app, uri).await;
        assert_eq!(r.status, 200, "{uri}: {}", r.describe());
        assert_eq!(r.header("content-type"), "text/html; charset=utf-8");
        assert_eq!(r.body.as_ref(), index.as_slice(), "{uri}");
    }
    for (uri, says) in [
        ("/view/nope/regular/u1_blosc", "unknown dataset `nope`"),
        ("/view/conf/regular/nope", "nope"),
        ("/view/conf/regular/u1_blosc/deeper", "deeper"),
    ] {
        let r = get(&app, uri).await;
        let doc = r.assert_problem(404);
        assert!(doc["detail"].as_str().unwrap().contains(says), "{uri}: {doc}");
    }
}

#[tokio::test]
async fn unknown_viewer_files_are_404_problems_listing_the_files() {
    let app = app();
    for uri in ["/viewer/nope.js", "/viewer/index.html", "/viewer/..%2FCargo.toml", "/viewer/viewer.js.map"] {
        let r = get(&app, uri).await;
        assert_eq!(r.header("content-type"), "application/problem+json", "{uri}");
        let doc = r.assert_problem(404);
        let detail = doc["detail"].as_str().unwrap();
        for (name, _) in ASSETS {
            assert!(detail.contains(name), "{uri}: `{detail}` should list {name}");
        }
    }
    // Nested paths under /viewer/ are no route at all.
    get(&app, "/viewer/a/b.js").await.assert_problem(404);
}
