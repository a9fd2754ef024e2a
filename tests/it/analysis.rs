//! Labels, points and statistics near the data (`docs/analysis.md`) over the xarray-written
//! store of `tests/fixtures/analysis`: every case of `cases.json` — label selections and
//! reductions whose answers xarray computed (and numpy checked again) — answers the same
//! values, labels, grid point, `Zarr-Selection` and status; CSV carries the same rows; a
//! point's series reads only the chunks holding the point; the cell limit answers 413
//! before any read; revalidation answers 304.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // exact expected labels

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::{CountingStore, browser_get};
use serde_json::Value;
use zarrd_core::store::Store;

fn dir() -> std::path::PathBuf {
    common::fixtures().join("analysis")
}

fn cases() -> Vec<Value> {
    serde_json::from_slice(&std::fs::read(dir().join("cases.json")).unwrap()).unwrap()
}

fn app_with_config(config: zarrd::config::Config) -> axum::Router {
    common::app_with(vec![("analysis", common::local_store(&dir().join("analysis.zarr")))], config)
}

fn app() -> axum::Router {
    app_with_config(common::config(""))
}

/// Whether two numbers agree to 1e-9 relative (NaN, as `null`, only with NaN).
fn close(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => g == w || (g - w).abs() <= 1e-9 * w.abs().max(g.abs()),
        _ => got == want,
    }
}

/// Nested lists of numbers compared element by element.
fn same_values(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Array(g), Value::Array(w)) => g.len() == w.len() && g.iter().zip(w).all(|(g, w)| same_values(g, w)),
        _ => close(got, want),
    }
}

/// Labels: strings exactly, numbers to 1e-9 (coarsened labels are means).
fn same_labels(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            g.len() == w.len() && w.iter().all(|(k, w)| g.get(k).is_some_and(|g| same_labels(g, w)))
        }
        (Value::Array(g), Value::Array(w)) => g.len() == w.len() && g.iter().zip(w).all(|(g, w)| same_labels(g, w)),
        _ => close(got, want),
    }
}

/// What differs between the answer to `case` and its expected answer.
async fn check(app: &axum::Router, case: &Value) -> Vec<String> {
    let url = case["url"].as_str().unwrap();
    let want = &case["expected"];
    let reply = browser_get(app, url).await;
    let mut wrong = Vec::new();
    if reply.status.as_u16() != want["status"].as_u64().unwrap() as u16 {
        return vec![format!("status {} (want {}): {}", reply.status, want["status"], reply.describe())];
    }
    if !reply.status.is_success() {
        reply.assert_problem(reply.status.as_u16());
        return wrong;
    }
    let got = reply.json();
    if got["shape"] != want["shape"] {
        wrong.push(format!("shape {} (want {})", got["shape"], want["shape"]));
    }
    if got["data_type"] != want["dtype"] {
        wrong.push(format!("data_type {} (want {})", got["data_type"], want["dtype"]));
    }
    if !same_values(&got["data"], &want["values"]) {
        wrong.push(format!("values {} (want {})", got["data"], want["values"]));
    }
    if !same_labels(&got["coords"], &want["coords"]) {
        wrong.push(format!("coords {} (want {})", got["coords"], want["coords"]));
    }
    let point_of = |doc: &Value| doc.get("point").cloned().unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    let (point, want_point) = (point_of(&got), point_of(want));
    if !same_labels(&point, &want_point) {
        wrong.push(format!("point {point} (want {want_point})"));
    }
    if let Some(selection) = want.get("zarr_selection") {
        let header = reply.headers.get("zarr-selection").map(|v| Value::from(v.to_str().unwrap()));
        if header.as_ref().unwrap_or(&Value::Null) != selection {
            wrong.push(format!("Zarr-Selection {header:?} (want {selection})"));
        }
    }
    wrong
}

/// What differs on `app` over `cases`, one line per problem.
async fn failures(app: &axum::Router, cases: &[&Value]) -> Vec<String> {
    let mut out = Vec::new();
    for case in cases {
        for problem in check(app, case).await {
            out.push(format!("{} ({}): {problem}", case["name"].as_str().unwrap(), case["url"].as_str().unwrap()));
        }
    }
    out
}

#[tokio::test]
async fn every_case_answers_what_xarray_computed() {
    let cases = cases();
    assert!(cases.len() >= 100, "the fixture has {} cases", cases.len());
    let failures = failures(&app(), &cases.iter().collect::<Vec<_>>()).await;
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[tokio::test]
async fn every_store_layout_answers_the_same() {
    // The same data as Zarr v2 (other chunks), sharded on a rectilinear grid, a kerchunk
    // reference set over the v2 copy (each written by its own writer:
    // make_analysis_variants.py), a zip read in place and an object store in memory.
    let variants = dir().join("variants").canonicalize().unwrap();
    let kerchunk = zarrd::config::DatasetConfig {
        url: variants.join("kerchunk.json").display().to_string(),
        virtual_refs: vec![format!("file://{}/", variants.join("v2.zarr").display())],
        ..Default::default()
    };
    let (_zip_dir, zip_path) = crate::zip::write_temp(
        "analysis.zip",
        &crate::zip::zip_bytes(&dir().join("analysis.zarr"), crate::zip::Kind::Deflated, ""),
    );
    let layouts: Vec<(&str, Store, bool)> = vec![
        ("v2", common::local_store(&variants.join("v2.zarr")), false),
        ("sharded_rectilinear", common::local_store(&variants.join("sharded_rectilinear.zarr")), false),
        ("kerchunk", zarrd::catalog::open_store("analysis", &kerchunk).unwrap(), false),
        ("zip", common::open_dataset(zip_path.display().to_string(), &[]), true),
        ("memory", common::memory_store(&dir().join("analysis.zarr")).await, true),
    ];
    let cases = cases();
    let mut problems = Vec::new();
    for (layout, store, whole) in layouts {
        // The variants hold daily/tas and its coordinates only.
        let chosen: Vec<&Value> =
            cases.iter().filter(|c| whole || c["url"].as_str().unwrap().contains("/analysis/daily/tas?")).collect();
        assert!(chosen.len() >= 90, "{layout}: {} cases", chosen.len());
        let app = common::app_with(vec![("analysis", store)], common::config(""));
        problems.extend(failures(&app, &chosen).await.into_iter().map(|p| format!("{layout}: {p}")));
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The rows of a CSV body: the header's names, then each row's fields.
fn csv_rows(body: &[u8]) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::str::from_utf8(body).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(str::to_owned).collect();
    (header, lines.map(|l| l.split(',').map(str::to_owned).collect()).collect())
}

#[tokio::test]
async fn csv_has_a_row_per_element_with_its_labels() {
    let app = app();
    let cases = cases();
    let mut checked = 0;
    for name in ["sel_point_series_month", "reduce_resample_1M_over_latlon", "reduce_resample_1M_360_day"] {
        let case = cases.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no case {name}"));
        let want = &case["expected"];
        let url = case["url"].as_str().unwrap().replace("format=json", "format=csv");
        let reply = browser_get(&app, &url).await;
        assert_eq!(reply.status, 200, "{}", reply.describe());
        assert_eq!(reply.header("content-type"), "text/csv; charset=utf-8");
        let (header, rows) = csv_rows(&reply.body);
        let dims: Vec<&String> = want["coords"].as_object().unwrap().keys().collect();
        assert_eq!(header.last().unwrap(), "value");
        assert_eq!(header.len(), dims.len() + 1, "{name}: {header:?}");
        // One kept dimension in these cases: its labels in order, then the values.
        let dim = header[0].as_str();
        let labels = want["coords"][dim].as_array().unwrap();
        let values = want["values"].as_array().unwrap();
        assert_eq!(rows.len(), values.len(), "{name}");
        for ((row, label), value) in rows.iter().zip(labels).zip(values) {
            let label_text = label.as_str().map_or_else(|| label.as_f64().unwrap().to_string(), str::to_owned);
            let got_label = row[0].parse::<f64>().map_or(row[0].clone(), |v| v.to_string());
            assert_eq!(got_label, label_text, "{name}: {row:?}");
            match value.as_f64() {
                Some(v) => assert!(
                    close(&Value::from(row[1].parse::<f64>().unwrap()), &Value::from(v)),
                    "{name}: {row:?} vs {v}"
                ),
                None => assert_eq!(row[1], "", "{name}: a missing value is an empty field"),
            }
            checked += 1;
        }
    }
    assert!(checked > 30);
}

#[tokio::test]
async fn a_point_series_reads_only_the_chunks_holding_the_point() {
    let counting = CountingStore::new(Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(dir().join("analysis.zarr")).unwrap(),
    ));
    let store = Store::new(counting.clone(), object_store::path::Path::default());
    let app = common::app_with(vec![("analysis", store)], common::config(""));
    // The labels first (coordinate arrays: read once, then cached).
    let warm =
        browser_get(&app, "/v1/slice/analysis/daily/tas?sel=lat:~45.3,lon:~-75.2,time:2001-01-01&format=json").await;
    assert_eq!(warm.status, 200, "{}", warm.describe());
    let before = counting.gets.load(Ordering::SeqCst);
    // tas is chunked (73, 24, 36): the whole time axis at one point is 15 chunks.
    let series = browser_get(
        &app,
        "/v1/reduce/analysis/daily/tas?op=mean&resample=time:1M&sel=lat:~45.3,lon:~-75.2&format=json",
    )
    .await;
    assert_eq!(series.status, 200, "{}", series.describe());
    assert_eq!(series.json()["shape"], serde_json::json!([36]));
    let reads = counting.gets.load(Ordering::SeqCst) - before;
    assert!(reads <= 15, "a point's series read {reads} objects; 15 chunks hold it");
    assert!(reads >= 14, "the point's 15 chunks were read ({reads} GETs; the first may be cached)");
}

#[tokio::test]
async fn reductions_beyond_the_cell_limit_are_413_before_any_read() {
    let app = app_with_config(common::config("[limits]\nmax_reduce_cells = 1000\n"));
    let reply =
        browser_get(&app, "/v1/reduce/analysis/daily/tas?op=mean&over=lat,lon&sel=time:2001-01-01..2001-01-31").await;
    let doc = reply.assert_problem(413);
    let detail = doc["detail"].as_str().unwrap();
    // 31 days × 72 × 144 cells.
    assert!(detail.contains("321408") && detail.contains("1000") && detail.contains("narrow"), "{detail}");
    let small =
        browser_get(&app, "/v1/reduce/analysis/daily/tas?op=mean&sel=time:2001-01-01..2001-01-31,lat:~45,lon:~285")
            .await;
    assert_eq!(small.status, 200, "{}", small.describe());
}

#[tokio::test]
async fn label_selections_and_reductions_revalidate() {
    let app = app();
    for url in [
        "/v1/slice/analysis/daily/tas?sel=lat:~45.3,lon:~-75.2&format=json",
        "/v1/reduce/analysis/daily/tas?op=max&over=lat,lon&sel=lat:40..50,lon:280..290&format=csv",
    ] {
        let first = browser_get(&app, url).await;
        assert_eq!(first.status, 200, "{}", first.describe());
        let etag = first.header("etag").to_owned();
        assert!(etag.ends_with('"') && etag.len() > 10, "{url}: {etag}");
        let again =
            common::get_with(&app, url, &[("if-none-match", &etag), ("accept-encoding", common::BROWSER_ENCODINGS)])
                .await;
        assert_eq!(again.status, 304, "{url}: {}", again.describe());
        assert_eq!(again.header("etag"), etag);
        // Another selection is another representation.
        let other = browser_get(&app, &url.replace("40..50", "40..45").replace("~45.3", "~40")).await;
        assert_ne!(other.header("etag"), etag, "{url}");
    }
}

#[tokio::test]
async fn a_label_of_the_wrong_kind_is_a_bad_parameter_and_an_absent_one_is_not_found() {
    let app = app();
    // `45` is not a date (a number for CF time), a date is not a latitude, a word not a
    // longitude: 400 naming the dimension and the form it takes.
    for (url, dim, form) in [
        ("/v1/reduce/analysis/daily/tas?sel=time:45&over=lat,lon&op=mean", "time", "ISO 8601 dates, e.g. `2001-01-01`"),
        ("/v1/slice/analysis/daily/tas?sel=time:~45.5,lat:~45,lon:~-75&format=json", "time", "ISO 8601 dates"),
        ("/v1/slice/analysis/daily/tas?sel=time:2001-01-01,lat:2021-03-01&format=json", "lat", "numbers, e.g. `"),
        ("/v1/slice/analysis/daily/tas?sel=time:2001-01-01,lon:east..west&format=json", "lon", "numbers"),
    ] {
        let doc = browser_get(&app, url).await.assert_problem(400);
        let detail = doc["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("`{dim}`")) && detail.contains(form), "{url}: {detail}");
    }
    // A date of the right kind that is not a label stays 404, naming the nearest.
    let doc = browser_get(&app, "/v1/slice/analysis/daily/tas?sel=time:1999-06-01,lat:~45,lon:~-75&format=json")
        .await
        .assert_problem(404);
    assert!(doc["detail"].as_str().unwrap().contains("the nearest is 2001-01-01"), "{doc}");
    // EDR's datetime reads dates as sel= does.
    let doc = browser_get(&app, "/edr/collections/analysis:daily/position?coords=POINT(-75%2045)&datetime=45")
        .await
        .assert_problem(400);
    assert!(doc["detail"].as_str().unwrap().contains("fewer than 4 digits"), "{doc}");
}

#[tokio::test]
async fn csv_is_for_labelled_results_only() {
    let app = app();
    let doc = browser_get(&app, "/v1/slice/analysis/daily/tas?s=0,0:2,0:2&format=csv").await.assert_problem(400);
    assert!(doc["detail"].as_str().unwrap().contains("sel="), "{doc}");
}

#[tokio::test]
async fn ome_axes_label_dimensions_by_their_scale_and_translation() {
    // An OME-Zarr 0.4 image (v2 arrays without dimension names): its axes name the
    // dimensions, `translation + index × scale` labels them. Level s1 of ozp04_5d has
    // scale [1, 1, 2, 1, 1] and translation [0, 0, 0, 0.25, 0.25] (its .zattrs).
    let image = common::fixtures().join("ome/images/ozp04_5d.ome.zarr");
    let app = common::app_with(vec![("img", common::local_store(&image))], common::config(""));
    let attrs: Value = serde_json::from_slice(&std::fs::read(image.join(".zattrs")).unwrap()).unwrap();
    let level = &attrs["multiscales"][0]["datasets"][1];
    assert_eq!(level["path"], "s1");
    let transforms = level["coordinateTransformations"].as_array().unwrap();
    let scale = transforms[0]["scale"].as_array().unwrap();
    let shift = transforms[1]["translation"].as_array().unwrap();
    let label = |d: usize, i: f64| shift[d].as_f64().unwrap() + i * scale[d].as_f64().unwrap();
    // The nearest labels to (z 2.1, y 10.3, x 20.2): indices 1, 10, 20.
    let by_label = browser_get(&app, "/v1/slice/img/s1?sel=t:0,c:1,z:~2.1,y:~10.3,x:~20.2&format=json").await;
    assert_eq!(by_label.status, 200, "{}", by_label.describe());
    assert_eq!(by_label.header("zarr-selection"), "0,1,1,10,20");
    let doc = by_label.json();
    assert_eq!(doc["point"]["z"], label(2, 1.0));
    assert_eq!(doc["point"]["y"], label(3, 10.0));
    assert_eq!(doc["point"]["x"], label(4, 20.0));
    // The same element by index (as stored: uint16; by label CF-decoded: the v2 fill is
    // missing, so float32, as xarray reads it).
    let by_index = browser_get(&app, "/v1/slice/img/s1?s=0,1,1,10,20&format=json").await.json();
    assert_eq!(doc["data_type"], "float32");
    assert_eq!(doc["data"].as_f64(), by_index["data"].as_f64());
    // A range of y labels keeps the dimension, labelled.
    let rows = browser_get(&app, "/v1/slice/img/s1?sel=t:0,c:0,z:0,x:0.25,y:0.2..3&format=json").await.json();
    assert_eq!(rows["coords"]["y"], serde_json::json!([label(3, 0.0), label(3, 1.0), label(3, 2.0)]));
}

/// The bundled sample, as `zarrd serve` serves it.
fn sample_app(root: &std::path::Path) -> axum::Router {
    common::app_with(vec![("sample", common::local_store(root))], common::config(""))
}

/// The date `days` after 2025-01-01 (the sample's epoch), from first principles.
fn sample_day(days: usize) -> String {
    const MONTHS: [usize; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let (mut month, mut day) = (0, days);
    while day >= MONTHS[month] {
        day -= MONTHS[month];
        month += 1;
    }
    format!("2025-{:02}-{:02}", month + 1, day + 1)
}

#[tokio::test]
async fn the_sample_labels_its_days_with_dates_on_every_route() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.zarr");
    let app = sample_app(&root);
    // The README's third request: every day at the grid point nearest 45° N 75° W.
    let reply = browser_get(&app, "/v1/slice/sample/climate/t2m?sel=lat:~45,lon:~-75&format=csv").await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let text = String::from_utf8(reply.body.to_vec()).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows[0], "time,value");
    assert_eq!(rows.len(), 366);
    for (i, row) in rows[1..].iter().enumerate() {
        assert_eq!(row.split(',').next(), Some(sample_day(i).as_str()), "row {i}: {row}");
    }
    // EDR labels the same steps with the same dates.
    let edr =
        browser_get(&app, "/edr/collections/sample:climate/position?coords=POINT(-75%2045)&parameter-name=t2m").await;
    assert_eq!(edr.status, 200, "{}", edr.describe());
    let times = edr.json()["domain"]["axes"]["t"]["values"].as_array().unwrap().clone();
    assert_eq!(times.len(), 365);
    for (i, t) in times.iter().enumerate() {
        assert_eq!(t.as_str().unwrap(), format!("{}T00:00:00Z", sample_day(i)), "step {i}");
    }
    // And a date selects its day: 2025-03-01 is day 59.
    let day = browser_get(&app, "/v1/slice/sample/climate/t2m?sel=time:2025-03-01,lat:~45,lon:~-75&format=json").await;
    assert_eq!(day.header("zarr-selection"), "59,53,41", "{}", day.describe());
}

#[tokio::test]
async fn an_array_whose_steps_only_time_units_dates_is_labelled_from_its_offsets() {
    // The viewer's and EDR's convention for an array without a time coordinate: an
    // attribute `time_units` dates index i as i units after the epoch. The sample's climate
    // group without its `time` coordinate, the attribute added to t2m.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.zarr");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sample.zarr");
    common::copy_tree(&src, &root);
    std::fs::remove_dir_all(root.join("climate/time")).unwrap();
    let meta_path = root.join("climate/t2m/zarr.json");
    let mut meta: Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    meta["attributes"]["time_units"] = "days since 2025-01-01".into();
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let app = sample_app(&root);
    let doc = browser_get(&app, "/edr/collections/sample:climate").await;
    assert_eq!(doc.status, 200, "{}", doc.describe());
    let interval = doc.json()["extent"]["temporal"]["interval"].clone();
    assert_eq!(
        interval,
        serde_json::json!([[format!("{}T00:00:00Z", sample_day(0)), format!("{}T00:00:00Z", sample_day(364))]])
    );
    // sel= has no labels for it (no coordinate array): its CSV counts the steps.
    let csv = browser_get(&app, "/v1/slice/sample/climate/t2m?sel=lat:~45,lon:~-75&format=csv").await;
    assert!(String::from_utf8(csv.body.to_vec()).unwrap().lines().nth(2).unwrap().starts_with("1,"));
}
