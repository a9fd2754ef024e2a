//! The viewer's HTTP routes: the page at `/` and at deep links `/view/{ds}/{*path}` (404
//! problem documents for links to nothing), its static files under `/viewer/` (the scripts,
//! the style, the vendored `OpenSeadragon`, `OpenLayers`, `uPlot` and Natural Earth outline
//! with their licences) with their media types and caching headers, byte for byte the files
//! in `src/viewer/`, and HEAD on each; the colorbar's colormap tables (matplotlib's colours
//! at known levels) and its window (the attributes' window of the window fixtures, else the
//! valid values' range of a conformance fixture as zarr-python reads it).

#![allow(clippy::unwrap_used)]

use crate::common;

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

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

const ASSETS: [(&str, &str); 15] = [
    ("viewer.js", JS),
    ("views.js", JS),
    ("cf.js", JS),
    ("viewer.css", CSS),
    ("openseadragon.min.js", JS),
    ("openseadragon-LICENSE.txt", TEXT),
    ("ol.js", JS),
    ("ol.css", CSS),
    ("ol-LICENSE.md", TEXT),
    ("uPlot.iife.min.js", JS),
    ("uPlot.min.css", CSS),
    ("uPlot-LICENSE.txt", TEXT),
    ("countries-110m.json", "application/json"),
    ("world-atlas-LICENSE.txt", TEXT),
    ("VENDORED.md", TEXT),
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
    for script in ["openseadragon.min.js", "ol.js", "uPlot.iife.min.js", "cf.js", "views.js", "viewer.js"] {
        assert!(linked.contains(&format!("/viewer/{script}").as_str()), "{script} not in {linked:?}");
    }
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
    // OpenLayers' full build (global `ol`), uPlot's IIFE build, and world-atlas's TopoJSON,
    // each with its licence; VENDORED.md names every vendored file.
    assert!(String::from_utf8(source("ol.js")).unwrap().starts_with("var ol=function(){"));
    assert!(String::from_utf8(source("ol-LICENSE.md")).unwrap().contains("OpenLayers Contributors"));
    assert!(String::from_utf8(source("uPlot.iife.min.js")).unwrap().contains("uPlot"));
    assert!(String::from_utf8(source("uPlot-LICENSE.txt")).unwrap().contains("Leon Sorokin"));
    let atlas: serde_json::Value = serde_json::from_slice(&source("countries-110m.json")).unwrap();
    assert_eq!(atlas["type"], "Topology");
    assert!(atlas["objects"]["countries"]["geometries"].as_array().unwrap().len() > 150);
    assert!(String::from_utf8(source("world-atlas-LICENSE.txt")).unwrap().contains("Michael Bostock"));
    let vendored = String::from_utf8(source("VENDORED.md")).unwrap();
    for name in ["openseadragon.min.js", "ol.js", "ol.css", "uPlot.iife.min.js", "uPlot.min.css", "countries-110m.json"]
    {
        assert!(vendored.contains(&format!("`{name}`")), "VENDORED.md does not name {name}");
    }
    // The scripts drive this server's IIIF service and map tiles.
    let views = String::from_utf8(source("views.js")).unwrap();
    assert!(views.contains("/iiif/3/") && views.contains("/maps/"));
}

#[tokio::test]
async fn head_answers_like_get_without_a_body() {
    let app = app();
    for uri in [
        "/",
        "/view/conf/regular/u1_blosc",
        "/viewer/viewer.js",
        "/viewer/openseadragon-LICENSE.txt",
        "/viewer/colormaps.json",
    ] {
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
        for name in ASSETS.iter().map(|(n, _)| *n).chain(["colormaps.json"]) {
            assert!(detail.contains(name), "{uri}: `{detail}` should list {name}");
        }
    }
    // Nested paths under /viewer/ are no route at all.
    get(&app, "/viewer/a/b.js").await.assert_problem(404);
}

/// `#rrggbb` → [r, g, b].
fn rgb(hex: &str) -> [u8; 3] {
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
    assert!(hex.len() == 7 && hex.starts_with('#'), "{hex}");
    [c(1), c(3), c(5)]
}

#[tokio::test]
async fn the_colorbar_gets_the_colormaps_of_the_image_routes() {
    let app = app();
    let r = get(&app, "/viewer/colormaps.json").await;
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.header("content-type"), "application/json");
    let maps = r.json();
    let names: Vec<&str> = maps.as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    // The names `colormap=` accepts, in the order its error message lists them.
    let refused = get(&app, "/iiif/3/conf%2Fregular%2Fu1_blosc/full/max/0/default.png?colormap=nope").await;
    let detail = refused.assert_problem(400)["detail"].as_str().unwrap().to_owned();
    assert!(detail.ends_with(&names.join(", ")), "{detail} vs {names:?}");
    assert_eq!(names[0], "viridis", "the default colormap comes first");
    let table = |name: &str| -> Vec<[u8; 3]> {
        let m = maps.as_array().unwrap().iter().find(|m| m["name"] == name).unwrap();
        m["colors"].as_array().unwrap().iter().map(|c| rgb(c.as_str().unwrap())).collect()
    };
    for name in &names {
        assert_eq!(table(name).len(), 256, "{name}");
    }
    // matplotlib's end colours (its _cm_listed tables), and gray's identity.
    assert_eq!(table("viridis")[0], [0x44, 0x01, 0x54]);
    assert_eq!(table("viridis")[255], [0xfd, 0xe7, 0x25]);
    assert_eq!(table("magma")[0], [0x00, 0x00, 0x04]);
    assert_eq!(table("magma")[255], [0xfc, 0xfd, 0xbf]);
    assert!(table("gray").iter().enumerate().all(|(i, c)| c.iter().all(|&v| usize::from(v) == i)));
}

#[tokio::test]
async fn the_colorbar_window_is_the_images_default_window() {
    // CF attributes give the window (the windows fixtures' documented attributes).
    let windows = common::fixtures().join("windows");
    let win = common::app_with(vec![("win", common::local_store(&windows.join("data.zarr")))], common::config(""));
    for (path, lo, hi) in [
        ("valid_minmax", 100.0, 700.0),
        ("valid_range", -1.5, 2.5),
        ("min_and_range", 10.0, 50.0),
        ("halves", 0.0, 510.0),
    ] {
        let r = get(&win, &format!("/viewer/window/win%2F{path}")).await;
        assert_eq!(r.status, 200, "{path}: {}", r.describe());
        assert_eq!(r.header("content-type"), "application/json");
        assert_eq!(r.json(), serde_json::json!({"vmin": lo, "vmax": hi}), "{path}");
    }
    // Without attributes: the smallest and largest value other than the fill value (0), as
    // zarr-python reads the array.
    let npy = common::expected(&common::conformance_dir(), "regular/u1_blosc");
    let valid: Vec<u8> = npy.data.iter().copied().filter(|&v| v != 0).collect();
    let (lo, hi) = (*valid.iter().min().unwrap(), *valid.iter().max().unwrap());
    let conf = app();
    let r = get(&conf, "/viewer/window/conf%2Fregular%2Fu1_blosc").await;
    assert_eq!(r.json(), serde_json::json!({"vmin": f64::from(lo), "vmax": f64::from(hi)}));
    // A plane of a 3-D array: the window is the whole array's, whichever plane is named.
    let a = get(&conf, "/viewer/window/conf%2Frectilinear%2Fu1_months_3d%5B0%5D").await.json();
    let b = get(&conf, "/viewer/window/conf%2Frectilinear%2Fu1_months_3d%5B1000%5D").await.json();
    assert_eq!(a, b);
    // Names of nothing are 404 problems; arrays that are no image say why.
    get(&conf, "/viewer/window/conf%2Fnope").await.assert_problem(404);
    get(&conf, "/viewer/window/nope%2Fregular%2Fu1_blosc").await.assert_problem(404);
    get(&conf, "/viewer/window/conf%2Fregular%2Fbool_v2key").await.assert_problem(422);
}
