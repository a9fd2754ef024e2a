//! Curvilinear grids (`docs/grids.md`, "Curvilinear grids") over the fixtures of
//! `tests/fixtures/curvilinear`, written by xarray with 2-D latitude/longitude coordinates
//! and the expected cells, tiles, areas and reductions computed in NumPy/pyproj by brute
//! force (`make_curvilinear_fixtures.py`, never from zarrd): a curved, rotated ROMS-like
//! coastal grid with a land mask, a grid across the antimeridian, and a tripolar-like
//! global grid whose last row folds back onto the one below it.

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::sync::Arc;

use serde_json::Value;
use zarrd_core::grid::Native;

use crate::common::Fixtures;
use crate::common::{self, get};
use crate::grids;

fn fixtures() -> Fixtures {
    Fixtures::at(common::fixtures().join("curvilinear"))
}

#[tokio::test]
async fn arrays_describe_a_curvilinear_grid_by_its_outer_corners() {
    grids::describes_grids(&fixtures()).await;
}

#[tokio::test]
async fn every_tile_takes_the_cell_of_the_nearest_centre_inside_its_corners() {
    let checked = grids::tiles_equal_the_reference(&fixtures()).await;
    assert!(checked >= 10, "{checked} tiles");
}

#[tokio::test]
async fn a_point_selects_the_brute_force_cell_and_names_its_stored_centre() {
    let (inside, outside) = grids::points_select_their_cells(&fixtures()).await;
    assert!(inside >= 60 && outside >= 15, "{inside} inside, {outside} outside");
}

#[tokio::test]
async fn reductions_weigh_cells_by_their_corner_polygons() {
    let checked = grids::reductions_equal_the_reference(&fixtures()).await;
    assert!(checked >= 9, "{checked}");
}

#[tokio::test]
async fn bilinear_is_refused_and_nearest_is_the_default() {
    let f = fixtures();
    let app = f.app();
    let (ds, path, a) = f.arrays().into_iter().next().unwrap();
    let t = &a["tiles"][0];
    let id = format!("{ds}%2F{path}%5B0%5D");
    for uri in [
        format!("/maps/{id}/{}/{}/{}.npy?resampling=bilinear", t["z"], t["x"], t["y"]),
        format!("/maps/{id}/tilejson.json?resampling=bilinear"),
    ] {
        let reply = get(&app, &uri).await;
        assert_eq!(reply.status, 422, "{uri}: {}", reply.describe());
        assert!(reply.describe().contains("curvilinear"), "{uri}: {}", reply.describe());
    }
    let tilejson = get(&app, &format!("/maps/{id}/tilejson.json")).await;
    assert_eq!(tilejson.status, 200, "{}", tilejson.describe());
    let doc = tilejson.json();
    assert!(doc["maxzoom"].as_u64().unwrap() >= 5, "{doc}");
    common::assert_no_panics();
}

#[tokio::test]
async fn a_grid_beyond_max_grid_cells_is_413_naming_the_count_and_the_limit() {
    let f = fixtures();
    let stores = f.manifest["datasets"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, d)| (name.clone(), common::local_store(&f.dir.join(d["store"].as_str().unwrap()))))
        .collect::<Vec<_>>();
    let stores = stores.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
    let app = common::app_with(stores, common::config("[limits]\nmax_grid_cells = 1000"));
    let reply = get(&app, "/maps/coastal%2Ftemp%5B0%5D/0/0/0.npy").await;
    assert_eq!(reply.status, 413, "{}", reply.describe());
    let detail = reply.describe();
    assert!(detail.contains("3072") && detail.contains("max_grid_cells (1000)"), "{detail}");
    common::assert_no_panics();
}

/// The look-up of a grid is built once for every array on it, and for requests at once,
/// and is counted in the memory budget while it is kept.
#[tokio::test]
async fn the_look_up_is_built_once_per_grid_and_held_in_the_memory_budget() {
    let f = fixtures();
    let store = common::local_store(&f.dir.join("coastal.zarr"));
    let config = common::config("");
    let catalog = zarrd::catalog::Catalog::new(vec![("coastal".to_owned(), store, None)], &config);
    let state = zarrd::http::state::AppState::new(catalog, config);
    let dataset = state.catalog.dataset("coastal").await.unwrap();
    let before = state.catalog.budget.available();
    let (temp, salt) =
        (state.catalog.array(&dataset, "temp").await.unwrap(), state.catalog.array(&dataset, "salt").await.unwrap());
    let (a, b, c) = tokio::join!(
        state.grids.of(&state.catalog, &dataset, &temp),
        state.grids.of(&state.catalog, &dataset, &salt),
        state.grids.of(&state.catalog, &dataset, &temp),
    );
    let mesh = |found: &zarrd::analysis::grids::Found| match &found.grid.native {
        Native::Mesh(mesh) => Arc::clone(mesh),
        other => panic!("not a mesh: {other:?}"),
    };
    let (a, b, c) = (a.unwrap().unwrap(), b.unwrap().unwrap(), c.unwrap().unwrap());
    assert!(Arc::ptr_eq(&mesh(&a), &mesh(&b)) && Arc::ptr_eq(&mesh(&a), &mesh(&c)));
    let (rows, cols) = a.grid.shape();
    let held = before - state.catalog.budget.available();
    let counted = rows * cols * zarrd_core::grid::mesh::BYTES_PER_CELL;
    assert!(held >= counted && held < counted + (1 << 20), "{held} held for {counted}");
    drop((a, b, c));
}

#[tokio::test]
async fn edr_lists_the_cells_an_area_takes_as_a_multipoint_series() {
    let f = fixtures();
    let app = f.app();
    let mut checked = 0;
    for (ds, d) in f.manifest["datasets"].as_object().unwrap() {
        let (path, a) = d["arrays"].as_object().unwrap().iter().next().unwrap();
        let collection = get(&app, &format!("/edr/collections/{ds}")).await;
        assert_eq!(collection.status, 200, "{ds}: {}", collection.describe());
        let doc = collection.json();
        assert_eq!(doc["crs"], serde_json::json!(["CRS84"]), "{ds}");
        assert!(doc["parameter_names"].get(path).is_some(), "{ds}: {}", doc["parameter_names"]);
        // position: the brute-force cell, at its stored centre, with the stored values.
        let points: Vec<Value> = serde_json::from_value(f.expected(a["points"].as_str().unwrap())).unwrap();
        for p in points.iter().filter(|p| !p["cell"].is_null()).take(6) {
            let uri = format!(
                "/edr/collections/{ds}/position?coords=POINT({}%20{})&parameter-name={path}",
                p["lon"], p["lat"]
            );
            let reply = get(&app, &uri).await;
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            let cov = reply.json();
            assert_eq!(cov["domain"]["domainType"], "PointSeries", "{uri}");
            let axes = &cov["domain"]["axes"];
            let dlon = (axes["x"]["values"][0].as_f64().unwrap() - p["centre"][0].as_f64().unwrap() + 180.0)
                .rem_euclid(360.0)
                - 180.0;
            assert!(dlon.abs() < 1e-9, "{uri}: {axes}");
            assert!((axes["y"]["values"][0].as_f64().unwrap() - p["centre"][1].as_f64().unwrap()).abs() < 1e-9);
            assert_eq!(values_f32(&cov["ranges"][path]["values"]), values_f32(&p["value"]), "{uri}");
        }
        let outside = points.iter().find(|p| p["cell"].is_null()).unwrap();
        let uri = format!("/edr/collections/{ds}/position?coords=POINT({}%20{})", outside["lon"], outside["lat"]);
        assert_eq!(get(&app, &uri).await.status, 400, "{uri}");
        // area: the cells whose stored centre the polygon holds, each listed at its centre.
        let area = &a["edr_area"];
        let polygon = area["polygon"].as_str().unwrap().replace(' ', "%20");
        let uri = format!("/edr/collections/{ds}/area?coords={polygon}&parameter-name={path}");
        let reply = get(&app, &uri).await;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
        let cov = reply.json();
        assert_eq!(cov["domain"]["domainType"], "MultiPointSeries", "{uri}");
        assert_eq!(cov["domain"]["referencing"][0]["system"]["type"], "GeographicCRS");
        let composite = &cov["domain"]["axes"]["composite"];
        assert_eq!(composite["coordinates"], serde_json::json!(["x", "y"]));
        let listed = composite["values"].as_array().unwrap();
        let cells = area["cells"].as_array().unwrap();
        assert_eq!(listed.len(), cells.len(), "{uri}");
        let range = &cov["ranges"][path];
        assert_eq!(range["axisNames"], serde_json::json!(["t", "composite"]));
        let steps = a["leading"][0][1].as_u64().unwrap() as usize;
        assert_eq!(range["shape"], serde_json::json!([steps, cells.len()]));
        let values = range["values"].as_array().unwrap();
        for (k, cell) in cells.iter().enumerate() {
            let (r, c) = (cell[0].as_u64().unwrap(), cell[1].as_u64().unwrap());
            for t in 0..steps {
                let want = value_at(&app, ds, path, &[t as u64, r, c]).await;
                assert_eq!(values[t * cells.len() + k].as_f64().map(|v| v as f32), want, "{uri}: cell {cell} step {t}");
            }
        }
        // CSV: a row per taken cell and step at its centre, no native x/y columns.
        let csv = get(&app, &format!("{uri}&f=CSV")).await;
        assert_eq!(csv.status, 200, "{}", csv.describe());
        let text = String::from_utf8(csv.body.to_vec()).unwrap();
        assert_eq!(text.lines().next().unwrap(), format!("datetime,lat,lon,{path}"));
        assert_eq!(text.lines().count(), 1 + steps * cells.len(), "{text}");
        checked += 1;
    }
    assert_eq!(checked, 3);
    common::assert_no_panics();
}

fn values_f32(v: &Value) -> Vec<Option<f32>> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().map(|x| x as f32)).collect()
}

/// The value of `ds/path` at stored indices `index`, read by index (`s=`).
async fn value_at(app: &axum::Router, ds: &str, path: &str, index: &[u64]) -> Option<f32> {
    let s: Vec<String> = index.iter().map(ToString::to_string).collect();
    let reply = get(app, &format!("/v1/slice/{ds}/{path}?s={}&format=json", s.join(","))).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    reply.json()["data"].as_f64().map(|v| v as f32)
}

/// The stored 2-D `name` of `ds` (row-major), as written by xarray.
async fn stored(app: &axum::Router, ds: &str, name: &str) -> Vec<Vec<f64>> {
    let doc = get(app, &format!("/v1/slice/{ds}/{name}?format=json")).await.json();
    let rows = doc["data"].as_array().unwrap().iter();
    rows.map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()).collect()
}

/// Boxes and circles take the cells whose stored centre they hold: a slice's index box
/// with the others missing, EDR's cube and radius as the cells listed.
#[tokio::test]
async fn boxes_and_circles_take_the_cells_whose_stored_centre_they_hold() {
    let app = fixtures().app();
    let (lat, lon) = (stored(&app, "coastal", "lat_rho").await, stored(&app, "coastal", "lon_rho").await);
    let cells = |inside: &dyn Fn(f64, f64) -> bool| -> Vec<(usize, usize)> {
        (0..lat.len())
            .flat_map(|r| (0..lat[0].len()).map(move |c| (r, c)))
            .filter(|&(r, c)| inside(lon[r][c], lat[r][c]))
            .collect()
    };
    let (south, north, west, east) = (41.0, 42.0, -69.0, -68.0);
    let boxed = cells(&|x, y| (south..=north).contains(&y) && (west..=east).contains(&x));
    assert!(boxed.len() > 20, "{}", boxed.len());
    // sel= box: the index bounding box, cells of it not taken null.
    let uri =
        format!("/v1/slice/coastal/temp?sel=ocean_time:2020-01-01,lat:{south}..{north},lon:{west}..{east}&format=json");
    let reply = get(&app, &uri).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let (r0, r1) = (boxed.iter().map(|c| c.0).min().unwrap(), boxed.iter().map(|c| c.0).max().unwrap());
    let (c0, c1) = (boxed.iter().map(|c| c.1).min().unwrap(), boxed.iter().map(|c| c.1).max().unwrap());
    assert_eq!(reply.header("zarr-selection"), format!("0,{r0}:{},{c0}:{}", r1 + 1, c1 + 1));
    let data = reply.json()["data"].clone();
    for (i, row) in data.as_array().unwrap().iter().enumerate() {
        for (j, v) in row.as_array().unwrap().iter().enumerate() {
            let (r, c) = (r0 + i, c0 + j);
            if !boxed.contains(&(r, c)) {
                assert!(v.is_null(), "cell ({r}, {c}) is not in the box: {v}");
            }
        }
    }
    // EDR cube: the same cells, listed.
    let cube =
        get(&app, &format!("/edr/collections/coastal/cube?bbox={west},{south},{east},{north}&parameter-name=temp"))
            .await;
    assert_eq!(cube.status, 200, "{}", cube.describe());
    let listed = cube.json()["domain"]["axes"]["composite"]["values"].as_array().unwrap().len();
    assert_eq!(listed, boxed.len());
    // EDR radius: great-circle distance (R = 6371.0088 km, as EDR's km) from first principles.
    let (x0, y0, km) = (-68.5f64, 41.5f64, 20.0);
    let circle = cells(&|x, y| {
        let (p0, p1, dl) = (y0.to_radians(), y.to_radians(), (x - x0).to_radians());
        let h = ((p1 - p0) / 2.0).sin().powi(2) + p0.cos() * p1.cos() * (dl / 2.0).sin().powi(2);
        2.0 * 6371.0088 * h.sqrt().asin() <= km
    });
    let uri = format!(
        "/edr/collections/coastal/radius?coords=POINT({x0}%20{y0})&within={km}&within-units=km&parameter-name=temp"
    );
    let radius = get(&app, &uri).await;
    assert_eq!(radius.status, 200, "{}", radius.describe());
    let doc = radius.json();
    assert_eq!(doc["domain"]["domainType"], "MultiPointSeries");
    assert_eq!(doc["domain"]["axes"]["composite"]["values"].as_array().unwrap().len(), circle.len());
    // GeoJSON: a feature per taken cell and step.
    let geojson = get(&app, &format!("{uri}&f=GeoJSON")).await.json();
    assert_eq!(geojson["features"].as_array().unwrap().len(), 2 * circle.len());
    common::assert_no_panics();
}
