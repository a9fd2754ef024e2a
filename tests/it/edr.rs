//! OGC API – EDR (`docs/edr.md`) over two xarray-written stores: `tests/fixtures/edr`
//! (levels, a standard calendar, packed values, −180..180 longitudes) and
//! `tests/fixtures/analysis` (a noleap calendar, descending latitudes, 0..360
//! longitudes, other calendars, an irregular grid). Every case of `edr/cases.json` —
//! answers xarray and numpy computed — answers the same domain, values and status in
//! CoverageJSON, GeoJSON and CSV; the discovery documents name what the stores hold; a
//! position reads only the chunks holding the point; private collections do not exist for
//! callers who may not read them; limits answer 413 before any read; revalidation 304.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // exact expected labels

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::{CountingStore, browser_get};
use serde_json::{Value, json};
use zarrd_core::store::Store;

fn fixtures() -> std::path::PathBuf {
    common::fixtures()
}

fn cases() -> Vec<Value> {
    serde_json::from_slice(&std::fs::read(fixtures().join("edr/cases.json")).unwrap()).unwrap()
}

fn stores() -> Vec<(&'static str, Store)> {
    vec![
        ("edr", common::local_store(&fixtures().join("edr/edr.zarr"))),
        ("analysis", common::local_store(&fixtures().join("analysis/analysis.zarr"))),
    ]
}

fn app_with_config(config: zarrd::config::Config) -> axum::Router {
    common::app_with(stores(), config)
}

fn app() -> axum::Router {
    app_with_config(common::config(""))
}

/// Numbers to 1e-9 relative, or equal as float32 (float32 values are written in their
/// shortest float32 form); strings exactly; `null` only with `null`.
fn close(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => g == w || (g - w).abs() <= 1e-9 * w.abs().max(g.abs()) || (g as f32) == (w as f32),
        _ => got == want,
    }
}

fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Array(g), Value::Array(w)) => g.len() == w.len() && g.iter().zip(w).all(|(g, w)| same(g, w)),
        (Value::Object(g), Value::Object(w)) => {
            g.len() == w.len() && w.iter().all(|(k, w)| g.get(k).is_some_and(|g| same(g, w)))
        }
        _ => close(got, want),
    }
}

/// What differs between one coverage and its expected domain type, axes and ranges.
fn coverage_problems(got: &Value, want: &Value, wrong: &mut Vec<String>) {
    let domain = &got["domain"];
    if domain["domainType"] != want["domainType"] {
        wrong.push(format!("domainType {} (want {})", domain["domainType"], want["domainType"]));
    }
    let axes = domain["axes"].as_object().map(|a| a.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    let want_axes = want["axes"].as_object().unwrap();
    if axes.len() != want_axes.len() {
        wrong.push(format!("axes {axes:?} (want {:?})", want_axes.keys().collect::<Vec<_>>()));
    }
    for (name, values) in want_axes {
        if !same(&domain["axes"][name]["values"], values) {
            wrong.push(format!("axis {name} {} (want {values})", domain["axes"][name]["values"]));
        }
    }
    for (name, range) in want["ranges"].as_object().unwrap() {
        let g = &got["ranges"][name];
        for member in ["axisNames", "shape"] {
            if g.get(member).unwrap_or(&Value::Null) != &range[member] {
                wrong.push(format!("range {name} {member} {} (want {})", g[member], range[member]));
            }
        }
        if !same(&g["values"], &range["values"]) {
            wrong.push(format!("range {name} values {} (want {})", g["values"], range["values"]));
        }
    }
    let got_ranges = got["ranges"].as_object().map_or(0, serde_json::Map::len);
    if got_ranges != want["ranges"].as_object().unwrap().len() {
        wrong.push(format!("{got_ranges} ranges (want {})", want["ranges"]));
    }
}

/// What differs between the answer to `case` and its expected answer.
async fn check(app: &axum::Router, case: &Value) -> Vec<String> {
    let url = case["url"].as_str().unwrap();
    let reply = browser_get(app, url).await;
    let status = case["status"].as_u64().unwrap() as u16;
    if reply.status.as_u16() != status {
        return vec![format!("status {} (want {status}): {}", reply.status, reply.describe())];
    }
    if !reply.status.is_success() {
        let doc = reply.assert_problem(status);
        let detail = doc["detail"].as_str().unwrap_or_default().to_ascii_lowercase();
        let want = case["detail_contains"].as_str().unwrap_or_default().to_ascii_lowercase();
        return if detail.contains(&want) { vec![] } else { vec![format!("detail {detail:?} lacks {want:?}")] };
    }
    let mut wrong = Vec::new();
    if let Some(want) = case.get("covjson") {
        let got = reply.json();
        if got["type"] != want["type"] {
            wrong.push(format!("type {} (want {})", got["type"], want["type"]));
        }
        match want.get("coverages") {
            Some(coverages) => {
                let got_list = got["coverages"].as_array().cloned().unwrap_or_default();
                let want_list = coverages.as_array().unwrap();
                if got_list.len() != want_list.len() {
                    wrong.push(format!("{} coverages (want {})", got_list.len(), want_list.len()));
                }
                for (g, w) in got_list.iter().zip(want_list) {
                    coverage_problems(g, w, &mut wrong);
                }
            }
            None => coverage_problems(&got, want, &mut wrong),
        }
    }
    if let Some(features) = case.get("features") {
        let got = reply.json();
        let got_features: Vec<Value> = got["features"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|f| json!({"coordinates": f["geometry"]["coordinates"], "properties": f["properties"]}))
            .collect();
        if !same(&Value::Array(got_features.clone()), features) {
            wrong.push(format!("features {} (want {features})", Value::Array(got_features)));
        }
    }
    if let Some(rows) = case.get("csv") {
        let text = String::from_utf8(reply.body.to_vec()).unwrap();
        let got: Vec<Vec<String>> = text.lines().map(|l| l.split(',').map(str::to_owned).collect()).collect();
        let want: Vec<Vec<String>> = serde_json::from_value(rows.clone()).unwrap();
        let cell = |g: &String, w: &String| {
            g == w || matches!((g.parse::<f64>(), w.parse::<f64>()), (Ok(a), Ok(b)) if close(&json!(a), &json!(b)))
        };
        let equal = got.len() == want.len()
            && got.iter().zip(&want).all(|(g, w)| g.len() == w.len() && g.iter().zip(w).all(|(g, w)| cell(g, w)));
        if !equal {
            wrong.push(format!("csv {got:?} (want {want:?})"));
        }
    }
    wrong
}

#[tokio::test]
async fn every_case_answers_what_xarray_computed() {
    let app = app();
    let cases = cases();
    assert!(cases.len() >= 40, "the fixture has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        for problem in check(&app, case).await {
            failures.push(format!("{} ({}): {problem}", case["name"].as_str().unwrap(), case["url"].as_str().unwrap()));
        }
    }
    assert!(failures.is_empty(), "{} problems in {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[tokio::test]
async fn discovery_documents_name_the_collections_and_their_contents() {
    let app = app();
    let landing = browser_get(&app, "/edr/").await;
    assert_eq!(landing.status, 200, "{}", landing.describe());
    let links = landing.json()["links"].as_array().unwrap().clone();
    for rel in ["self", "conformance", "data", "service-desc"] {
        assert!(links.iter().any(|l| l["rel"] == rel), "no {rel} link: {links:?}");
    }
    let desc = links.iter().find(|l| l["rel"] == "service-desc").unwrap();
    assert_eq!(desc["type"], "application/vnd.oai.openapi+json;version=3.0");
    let api = browser_get(&app, "/edr/api").await;
    assert_eq!(api.header("content-type"), "application/vnd.oai.openapi+json;version=3.0");
    let paths = api.json()["paths"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    for q in ["position", "area", "cube", "radius"] {
        assert!(paths.contains(&format!("/edr/collections/{{collectionId}}/{q}")), "{paths:?}");
    }
    let conformance = browser_get(&app, "/edr/conformance").await.json();
    for class in ["core", "collections", "json", "covjson", "geojson", "queries", "instances"] {
        let uri = format!("http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/{class}");
        assert!(conformance["conformsTo"].as_array().unwrap().contains(&json!(uri)), "{uri}");
    }
    let list = browser_get(&app, "/edr/collections").await.json();
    let mut ids: Vec<&str> =
        list["collections"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    // The store's groups on a lat/lon grid (and not `edr:series`, a series without one).
    assert_eq!(
        ids,
        [
            "analysis:calendars:all_leap",
            "analysis:calendars:c360",
            "analysis:calendars:julian",
            "analysis:calendars:standard_hours",
            "analysis:daily",
            "analysis:irregular",
            "edr",
            "edr:static",
            "edr:surface",
        ]
    );
    // The root: levels, a standard calendar and −180..180 longitudes (make_edr_fixtures.py).
    let edr = browser_get(&app, "/edr/collections/edr").await.json();
    assert_eq!(edr["crs"], json!(["CRS84"]));
    // EDR 1.1's collection-level radius units, as edr-pydantic reads them.
    assert_eq!(edr["distanceunits"], json!(["km", "m", "mi"]));
    assert!(list["collections"].as_array().unwrap().iter().all(|c| c["distanceunits"] == json!(["km", "m", "mi"])));
    assert_eq!(edr["extent"]["spatial"]["bbox"], json!([[-180.0, -65.0, 180.0, 65.0]]));
    assert_eq!(edr["extent"]["temporal"]["interval"], json!([["2000-01-01T00:00:00Z", "2000-01-10T12:00:00Z"]]));
    assert_eq!(edr["extent"]["temporal"]["values"].as_array().unwrap().len(), 20);
    assert_eq!(edr["extent"]["vertical"]["values"], json!(["1000", "850", "500", "250"]));
    assert_eq!(edr["extent"]["vertical"]["interval"], json!([["250", "1000"]]));
    let ta = &edr["parameter_names"]["ta"];
    assert_eq!(ta["observedProperty"]["label"], "Air temperature");
    assert_eq!(ta["unit"]["symbol"]["value"], "K");
    for q in ["position", "area", "cube", "radius"] {
        assert!(
            edr["data_queries"][q]["link"]["href"].as_str().unwrap().ends_with(&format!("/edr/collections/edr/{q}"))
        );
    }
    // analysis:daily: 0..360 longitudes all the way round, descending latitudes, noleap.
    let daily = browser_get(&app, "/edr/collections/analysis:daily").await.json();
    assert_eq!(daily["extent"]["spatial"]["bbox"], json!([[-180.0, -90.0, 180.0, 90.0]]));
    assert_eq!(daily["extent"]["temporal"]["interval"], json!([["2001-01-01T00:00:00Z", "2003-12-31T00:00:00Z"]]));
    assert!(daily["extent"]["temporal"]["trs"].as_str().unwrap().contains("noleap"));
    let unknown = browser_get(&app, "/edr/collections/edr:series").await;
    unknown.assert_problem(404);
    browser_get(&app, "/edr/collections/edr/trajectory?coords=POINT(0%200)").await.assert_problem(404);
    browser_get(&app, "/edr/collections?f=html").await.assert_problem(400);
}

#[tokio::test]
async fn a_position_reads_only_the_chunks_holding_the_point() {
    let counting = CountingStore::new(Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(fixtures().join("analysis/analysis.zarr")).unwrap(),
    ));
    let store = Store::new(counting.clone(), object_store::path::Path::default());
    let app = common::app_with(vec![("analysis", store)], common::config(""));
    let point = "/edr/collections/analysis:daily/position?coords=POINT(-75.2%2045.3)&parameter-name=tas";
    let warm = browser_get(&app, &format!("{point}&datetime=2001-01-01")).await;
    assert_eq!(warm.status, 200, "{}", warm.describe());
    let before = counting.gets.load(Ordering::SeqCst);
    // tas is chunked (73, 24, 36): the whole time axis at one point is 15 chunks.
    let series = browser_get(&app, point).await;
    assert_eq!(series.status, 200, "{}", series.describe());
    assert_eq!(series.json()["domain"]["axes"]["t"]["values"].as_array().unwrap().len(), 1095);
    let reads = counting.gets.load(Ordering::SeqCst) - before;
    assert!((14..=15).contains(&reads), "a point's series read {reads} objects; 15 chunks hold it");
}

/// Points of a `MULTIPOINT` that share chunks: each chunk is read once, not once per
/// point, and every point's series is the one a `POINT` query gives (those are checked
/// against xarray in `cases.json`).
#[tokio::test]
async fn points_sharing_chunks_read_them_once() {
    let counting = CountingStore::new(Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(fixtures().join("analysis/analysis.zarr")).unwrap(),
    ));
    let store = Store::new(counting.clone(), object_store::path::Path::default());
    let app = common::app_with(
        vec![("analysis", store)],
        common::config(
            "[cache]
chunk_bytes = 0
",
        ),
    );
    let base = "/edr/collections/analysis:daily/position?parameter-name=tas&coords=";
    let warm = browser_get(&app, &format!("{base}POINT(-75.2%2045.3)&datetime=2001-01-01")).await;
    assert_eq!(warm.status, 200, "{}", warm.describe());
    // Four points in one chunk column of (73, 24, 36): 15 chunks along time hold them all.
    let points = [(-75.2, 45.3), (-70.0, 40.0), (-60.0, 50.0), (-80.0, 35.0)];
    let wkt: Vec<String> = points.iter().map(|(x, y)| format!("({x}%20{y})")).collect();
    let before = counting.gets.load(Ordering::SeqCst);
    let multi = browser_get(&app, &format!("{base}MULTIPOINT({})", wkt.join(","))).await;
    assert_eq!(multi.status, 200, "{}", multi.describe());
    let reads = counting.gets.load(Ordering::SeqCst) - before;
    assert!((14..=15).contains(&reads), "four points' series read {reads} objects; 15 chunks hold them");
    let coverages = multi.json()["coverages"].as_array().unwrap().clone();
    assert_eq!(coverages.len(), points.len());
    for ((x, y), coverage) in points.iter().zip(&coverages) {
        let one = browser_get(&app, &format!("{base}POINT({x}%20{y})")).await;
        assert_eq!(one.status, 200, "{}", one.describe());
        assert_eq!(coverage["ranges"]["tas"]["values"], one.json()["ranges"]["tas"]["values"], "point ({x} {y})");
        assert_eq!(coverage["domain"]["axes"]["y"], one.json()["domain"]["axes"]["y"]);
    }
}

#[tokio::test]
async fn limits_answer_413_before_any_read() {
    let app = app_with_config(common::config("[limits]\nmax_reduce_cells = 1000\n"));
    let reply = browser_get(&app, "/edr/collections/analysis:daily/position?coords=POINT(0%200)").await;
    let detail = reply.assert_problem(413)["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("2190") && detail.contains("max_reduce_cells"), "{detail}");
    let app = app_with_config(common::config("[limits]\nmax_response_bytes = 10000\n"));
    let reply = browser_get(&app, "/edr/collections/analysis:daily/cube?bbox=0,0,20,20&f=GeoJSON").await;
    reply.assert_problem(413);
}

#[tokio::test]
async fn answers_revalidate_and_say_what_they_vary_on() {
    let app = app();
    let url = "/edr/collections/edr/position?coords=POINT(10%2010)&z=850";
    let first = browser_get(&app, url).await;
    assert_eq!(first.status, 200, "{}", first.describe());
    assert_eq!(first.header("content-type"), "application/prs.coverage+json");
    assert!(first.header("vary").to_ascii_lowercase().contains("accept"), "{}", first.describe());
    let etag = first.header("etag").to_owned();
    let again =
        common::get_with(&app, url, &[("if-none-match", &etag), ("accept-encoding", "gzip, deflate, br, zstd")]).await;
    assert_eq!(again.status, 304, "{}", again.describe());
    let vnd = common::get_with(&app, url, &[("accept", "application/vnd.cov+json")]).await;
    assert_eq!(vnd.header("content-type"), "application/vnd.cov+json");
    let csv = common::get_with(&app, url, &[("accept", "text/csv")]).await;
    assert_eq!(csv.header("content-type"), "text/csv; charset=utf-8");
    // Browsers on other origins (CoverageJSON viewers) may read it.
    let cors = common::get_with(&app, url, &[("origin", "https://viewer.example")]).await;
    assert_eq!(cors.header("access-control-allow-origin"), "*", "{}", cors.describe());
    let geo = browser_get(&app, &format!("{url}&f=GeoJSON")).await;
    assert_eq!(geo.header("content-type"), "application/geo+json");
    assert_ne!(geo.header("etag"), first.header("etag"));
}

#[tokio::test]
async fn a_private_collection_does_not_exist_for_a_caller_who_may_not_read_it() {
    let config = common::auth::load("", &["lab"], &[]);
    let app = common::app_with(
        vec![("lab", common::local_store(&fixtures().join("edr/edr.zarr"))), stores().remove(1)],
        config,
    );
    let alice = common::auth::bearer("alice");
    let dave = common::auth::bearer("dave");
    let ids = |reply: common::Reply| -> Vec<String> {
        reply.json()["collections"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect()
    };
    let mine =
        ids(common::auth::request(&app, axum::http::Method::GET, "/edr/collections", &[("authorization", &alice)], "")
            .await);
    assert!(mine.contains(&"lab".to_owned()) && mine.contains(&"analysis:daily".to_owned()), "{mine:?}");
    for who in [None, Some(&dave)] {
        let headers: Vec<(&str, &str)> = who.iter().map(|a| ("authorization", a.as_str())).collect();
        let get = |uri: &'static str| common::auth::request(&app, axum::http::Method::GET, uri, &headers, "");
        let listed = ids(get("/edr/collections").await);
        assert!(!listed.iter().any(|id| id.starts_with("lab")), "{who:?}: {listed:?}");
        let unknown = get("/edr/collections/nothing").await;
        let refused = get("/edr/collections/lab").await;
        assert_eq!(refused.status, 404, "{}", refused.describe());
        assert_eq!(refused.status, unknown.status);
        let query = get("/edr/collections/lab:surface/position?coords=POINT(0%200)").await;
        assert_eq!(query.status, 404, "{}", query.describe());
    }
    let allowed = common::auth::request(
        &app,
        axum::http::Method::GET,
        "/edr/collections/lab:surface/position?coords=POINT(0%200)",
        &[("authorization", &alice)],
        "",
    )
    .await;
    assert_eq!(allowed.status, 200, "{}", allowed.describe());
    assert!(allowed.header("cache-control").starts_with("private"));
}

#[tokio::test]
async fn large_answers_are_written_piece_by_piece_and_equal_the_slice() {
    let app = app();
    // A month of the whole grid (31 × 72 × 144 values, about 2 MB of text): streamed.
    let url =
        "/edr/collections/analysis:daily/cube?bbox=-180,-90,180,90&datetime=2001-01-01/2001-01-31&parameter-name=tas";
    let reply = common::get(&app, url).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert!(reply.headers.get("content-length").is_none(), "sent in pieces, without a length");
    let got = reply.json();
    assert_eq!(got["ranges"]["tas"]["shape"], json!([31, 72, 144]));
    // The grid goes all the way round: every column, from the stored first (0°) eastwards,
    // so the values are the stored region, as /v1/slice reads it.
    let x = got["domain"]["axes"]["x"]["values"].as_array().unwrap();
    assert_eq!((x[0].as_f64(), x[143].as_f64()), (Some(0.0), Some(357.5)));
    let slice = browser_get(&app, "/v1/slice/analysis/daily/tas?s=0:31,:,:&format=json").await.json();
    let flat: Vec<Value> = slice["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t.as_array().unwrap().iter().flat_map(|r| r.as_array().unwrap().clone()))
        .collect();
    assert!(same(&got["ranges"]["tas"]["values"], &Value::Array(flat)));
    // The same in CSV: one row per cell and day.
    let csv = common::get(&app, &format!("{url}&f=CSV")).await;
    let rows = std::str::from_utf8(&csv.body).unwrap().lines().count();
    assert_eq!(rows, 1 + 31 * 72 * 144);
}

#[tokio::test]
async fn metrics_name_every_edr_request_one_route() {
    let app = app();
    assert_eq!(browser_get(&app, "/edr/collections").await.status, 200);
    assert_eq!(browser_get(&app, "/edr/collections/edr/position?coords=POINT(0%200)").await.status, 200);
    let text = String::from_utf8(common::get(&app, "/metrics").await.body.to_vec()).unwrap();
    assert!(text.contains("zarrd_http_requests_total{route=\"/edr\",status=\"200\"}"), "{text}");
    assert!(!text.contains("route=\"/edr/collections"), "{text}");
}

#[tokio::test]
async fn a_bbox_is_four_numbers_and_nothing_else() {
    let app = app();
    for bbox in [
        "10,40,,20,50",
        "10,40,20,50,abc",
        "1,2,x,20,20",
        "10,40,20",
        "-80,40,-70,50,0,1000",
        "10;40;20;50",
        "0,50,10,40",
    ] {
        let reply = browser_get(&app, &format!("/edr/collections/edr:static/cube?bbox={bbox}")).await;
        let detail = reply.assert_problem(400)["detail"].as_str().unwrap().to_owned();
        assert!(detail.contains("bbox"), "{bbox}: {detail}");
    }
    assert_eq!(browser_get(&app, "/edr/collections/edr:static/cube?bbox=10,40,20,50").await.status, 200);
}
