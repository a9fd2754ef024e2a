//! Grids beyond latitude/longitude (`docs/grids.md`) over the fixtures of
//! `tests/fixtures/grids`, written by xarray / rioxarray / zarr-python with the expected
//! values computed by pyproj (`make_grids_fixtures.py`, never from zarrd): HRRR-like
//! Lambert conformal (CF parameters on a sphere), NSIDC polar stereographic (rioxarray's
//! `spatial_ref`), Sentinel-2-like `GeoZarr` UTM (`proj:code` + `spatial:transform` on the
//! group, the legacy spellings on arrays, a rotated transform), a CORDEX rotated pole, a
//! GOES full disk, LAEA Europe from WKT and `GeoTransform` alone, `y`/`x` in degrees, and
//! three arrays whose grids cannot be used.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // expected tiles are exact float32

use crate::common;

use std::path::PathBuf;

use common::{Fixtures, get, parse_npy};
use serde_json::Value;

fn dir() -> PathBuf {
    common::fixtures().join("grids")
}

fn manifest() -> Value {
    Fixtures::at(dir()).manifest
}

fn app() -> axum::Router {
    Fixtures::at(dir()).app()
}

#[tokio::test]
async fn arrays_describe_their_grid_as_pyproj_sees_it() {
    describes_grids(&Fixtures::at(dir())).await;
}

/// `/v1/arrays` names each fixture array's grid as its manifest says.
pub async fn describes_grids(fixtures: &Fixtures) {
    let app = fixtures.app();
    for (ds, path, a) in fixtures.arrays() {
        let reply = get(&app, &format!("/v1/arrays/{ds}/{path}")).await;
        assert_eq!(reply.status, 200, "{ds}/{path}: {}", reply.describe());
        let doc: Value = serde_json::from_slice(&reply.body).unwrap();
        let grid = &doc["grid"];
        if a["kind"].is_null() {
            assert!(grid.is_null(), "{ds}/{path} ({}): {grid}", a["why"]);
            continue;
        }
        assert_eq!(grid["kind"], a["kind"], "{ds}/{path}");
        assert_eq!(grid["dims"], a["dims"], "{ds}/{path}");
        if a["kind"] == "curvilinear" {
            assert!(grid.get("crs").is_none(), "{ds}/{path}: {grid}");
        } else if a["crs"].is_null() {
            // No EPSG code: WKT2 (its parameters are checked against pyproj's in grid::wkt2).
            let wkt = grid["crs"].as_str().unwrap_or_default();
            assert!(wkt.starts_with("PROJCRS[") || wkt.starts_with("GEOGCRS["), "{ds}/{path}: {grid}");
        } else {
            assert_eq!(grid["crs"], a["crs"], "{ds}/{path}");
        }
        let (got, want) = (grid["bbox"].as_array().unwrap(), a["bbox"].as_array().unwrap());
        for (g, w) in got.iter().zip(want) {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            assert!((g - w).abs() < 0.01, "{ds}/{path}: bbox {got:?}, pyproj {want:?}");
        }
    }
    common::assert_no_panics();
}

#[tokio::test]
async fn every_tile_equals_the_pyproj_reference() {
    let checked = tiles_equal_the_reference(&Fixtures::at(dir())).await;
    assert!(checked >= 35, "{checked} tiles");
}

/// Every tile of the manifest equals its expected tile (bit for bit when nearest): how many.
pub async fn tiles_equal_the_reference(fixtures: &Fixtures) -> usize {
    let app = fixtures.app();
    let mut checked = 0;
    for (ds, path, a) in fixtures.arrays() {
        for t in a["tiles"].as_array().into_iter().flatten() {
            let index = t["t"].as_u64().map_or(String::new(), |i| format!("%5B{i}%5D"));
            let id = format!("{ds}%2F{}{index}", path.replace('/', "%2F"));
            let uri = format!(
                "/maps/{id}/{}/{}/{}.npy?resampling={}",
                t["z"],
                t["x"],
                t["y"],
                t["resampling"].as_str().unwrap()
            );
            let reply = get(&app, &uri).await;
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            let got = common::tile_values(&reply.body);
            let want = fixtures.tile(t["file"].as_str().unwrap());
            let bilinear = t["resampling"] == "bilinear";
            let mut wrong = Vec::new();
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let same = if w.is_nan() || g.is_nan() {
                    w.is_nan() && g.is_nan()
                } else if bilinear {
                    // The same weights from PROJ's and proj4rs's native x/y: equal to ~1e-9 of a cell.
                    (g - w).abs() <= 1e-4 * w.abs().max(1.0)
                } else {
                    g.to_bits() == w.to_bits()
                };
                if !same {
                    wrong.push((k / 256, k % 256, *g, *w));
                }
            }
            assert!(
                wrong.is_empty(),
                "{uri}: {} pixels differ (row, col, got, want), first: {:?}",
                wrong.len(),
                &wrong[..wrong.len().min(5)]
            );
            assert_eq!(got.iter().filter(|v| !v.is_nan()).count() as u64, t["valid"].as_u64().unwrap(), "{uri}");
            checked += 1;
        }
    }
    common::assert_no_panics();
    checked
}

#[tokio::test]
async fn grids_that_cannot_be_used_are_named_and_metres_are_never_degrees() {
    let app = app();
    for (array, says) in [("a", "vertical_perspective"), ("b", "crs_wkt"), ("c", "map tiles need")] {
        let reply = get(&app, &format!("/maps/unsupported%2F{array}/0/0/0.npy")).await;
        assert_eq!(reply.status, 422, "{array}: {}", reply.describe());
        let problem: Value = serde_json::from_slice(&reply.body).unwrap();
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(says) && detail.contains(&format!("`{array}`")), "{array}: {detail}");
    }
    for array in ["a", "b"] {
        let problem: Value =
            serde_json::from_slice(&get(&app, &format!("/maps/unsupported%2F{array}/tilejson.json")).await.body)
                .unwrap();
        assert!(problem["detail"].as_str().unwrap().contains("supported"), "{problem}");
    }
    let reply = get(&app, "/maps/hrrr_lcc%2Ft2m%5B0%5D/4/3/6.npy?resampling=cubic").await;
    assert_eq!(reply.status, 400, "{}", reply.describe());
    let tilejson: Value =
        serde_json::from_slice(&get(&app, "/maps/hrrr_lcc%2Ft2m%5B0%5D/tilejson.json?resampling=bilinear").await.body)
            .unwrap();
    assert!(tilejson["tiles"][0].as_str().unwrap().ends_with(".png?resampling=bilinear"), "{tilejson}");
    common::assert_no_panics();
}

#[tokio::test]
async fn a_point_selects_the_cell_pyproj_finds_and_names_its_centre() {
    let checked = points_select_their_cells(&Fixtures::at(dir())).await;
    assert!(checked.0 >= 250 && checked.1 >= 30, "{checked:?}");
    let app = app();
    // A point is a nearest pick with both coordinates; the grid's own dimensions cannot be named too.
    for (sel, status) in [
        ("lat:~40,lon:~-100", 200),
        ("lat:40,lon:~-100", 400),
        ("lat:~40", 400),
        ("lat:~95,lon:~-100", 400),
        ("lat:~40,lon:~-100,x:~0", 400),
        ("lat:~40,lon:~-100,time:~2020-01-02", 200),
        ("lat:~-40,lon:~-100", 404),
    ] {
        let reply = get(&app, &format!("/v1/slice/hrrr_lcc/t2m?sel={sel}&format=json")).await;
        assert_eq!(reply.status, status, "{sel}: {}", reply.describe());
    }
    // The reduction of a point's time series on a projected grid.
    let reply = get(&app, "/v1/reduce/hrrr_lcc/t2m?sel=lat:~40,lon:~-100&over=time&op=mean&format=json").await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    common::assert_no_panics();
}

/// Every point of the manifest's points files selects the expected cell (`Zarr-Selection`)
/// and names its centre, or is 404 outside the grid: how many (inside, outside).
pub async fn points_select_their_cells(fixtures: &Fixtures) -> (usize, usize) {
    let app = fixtures.app();
    let mut checked = (0, 0);
    for (ds, path, a) in fixtures.arrays() {
        let Some(file) = a["points"].as_str() else { continue };
        let points: Vec<Value> = serde_json::from_value(fixtures.expected(file)).unwrap();
        let leading = a["leading"].as_array().unwrap().len();
        for p in points {
            let (lon, lat) = (p["lon"].as_f64().unwrap(), p["lat"].as_f64().unwrap());
            let uri = format!("/v1/slice/{ds}/{path}?sel=lat:~{lat},lon:~{lon}&format=json");
            let reply = get(&app, &uri).await;
            if p["cell"].is_null() {
                assert_eq!(reply.status, 404, "{uri}: {}", reply.describe());
                assert!(reply.describe().contains("outside the grid"), "{uri}: {}", reply.describe());
                checked.1 += 1;
                continue;
            }
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            let cell = [p["cell"][0].as_u64().unwrap(), p["cell"][1].as_u64().unwrap()];
            let want =
                std::iter::repeat_n(":".to_owned(), leading).chain(cell.map(|i| i.to_string())).collect::<Vec<_>>();
            assert_eq!(reply.header("zarr-selection"), want.join(","), "{uri}");
            let doc = reply.json();
            let point = &doc["point"];
            if p["centre"].is_null() {
                // A cell at a geostationary limb whose centre the satellite cannot see.
                assert!(point.get("lat").is_none() && point.get("lon").is_none(), "{uri}: {point}");
                checked.0 += 1;
                continue;
            }
            let (clon, clat) = (p["centre"][0].as_f64().unwrap(), p["centre"][1].as_f64().unwrap());
            assert!((point["lat"].as_f64().unwrap() - clat).abs() < 1e-6, "{uri}: {point} vs {clon} {clat}");
            let dlon = (point["lon"].as_f64().unwrap() - clon + 180.0).rem_euclid(360.0) - 180.0;
            assert!(dlon.abs() < 1e-6, "{uri}: {point} vs {clon} {clat}");
            if a["kind"] == "curvilinear" {
                // No native labels: the centre names the cell (its indices are in Zarr-Selection).
                assert_eq!(point.as_object().unwrap().len(), 2, "{uri}: {point}");
            }
            checked.0 += 1;
        }
    }
    common::assert_no_panics();
    checked
}

#[tokio::test]
async fn reductions_weigh_cells_by_their_area_on_the_sphere_and_take_the_polygons_centres() {
    let checked = reductions_equal_the_reference(&Fixtures::at(dir())).await;
    assert!(checked >= 20, "{checked}");
}

/// Every reduction of the manifest equals its expected values: how many.
pub async fn reductions_equal_the_reference(fixtures: &Fixtures) -> usize {
    let app = fixtures.app();
    let mut checked = 0;
    for (ds, path, a) in fixtures.arrays() {
        for case in a["reductions"].as_array().into_iter().flatten() {
            let query = case["query"].as_str().unwrap().replace(' ', "%20");
            let uri = format!("/v1/reduce/{ds}/{path}?{query}&format=json");
            let reply = get(&app, &uri).await;
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            let doc = reply.json();
            let got: Vec<f64> = match &doc["data"] {
                Value::Array(list) => list.iter().map(|v| v.as_f64().unwrap()).collect(),
                v => vec![v.as_f64().unwrap()],
            };
            let want: Vec<f64> = case["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert_eq!(got.len(), want.len(), "{uri}: {doc}");
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{uri}: {got:?}, pyproj/NumPy {want:?}");
            }
            checked += 1;
        }
    }
    common::assert_no_panics();
    checked
}

/// The value of `ds/path` at stored indices `index`, read by index (`s=`; the read path's
/// own conformance against zarr-python is tested elsewhere).
async fn value_at(app: &axum::Router, ds: &str, path: &str, index: &[u64]) -> Option<f64> {
    let s: Vec<String> = index.iter().map(ToString::to_string).collect();
    let reply = get(app, &format!("/v1/slice/{ds}/{path}?s={}&format=json", s.join(","))).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    reply.json()["data"].as_f64()
}

#[tokio::test]
async fn edr_answers_on_projected_rotated_and_geostationary_grids() {
    let app = app();
    // Collections: the footprint, the native CRS beside CRS84, and only the data variable
    // (not the 2-D latitude/longitude arrays beside it) as a parameter.
    for (ds, path, crs) in [
        ("hrrr_lcc", "t2m", None),
        ("seaice_3413", "ice", Some(3413)),
        ("cordex_rotated", "tas", None),
        ("goes_geos", "cmi", None),
        ("europe_laea", "lc", Some(3035)),
    ] {
        let m = &manifest()["datasets"][ds]["arrays"][path];
        let doc = get(&app, &format!("/edr/collections/{ds}")).await;
        assert_eq!(doc.status, 200, "{ds}: {}", doc.describe());
        let doc = doc.json();
        let names: Vec<&str> = doc["parameter_names"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, [path], "{ds}");
        let bbox = doc["extent"]["spatial"]["bbox"][0].as_array().unwrap().clone();
        for (g, w) in bbox.iter().zip(m["bbox"].as_array().unwrap()) {
            assert!((g.as_f64().unwrap() - w.as_f64().unwrap()).abs() < 0.01, "{ds}: {bbox:?} vs {}", m["bbox"]);
        }
        let want_crs = match crs {
            Some(code) => serde_json::json!(["CRS84", format!("http://www.opengis.net/def/crs/EPSG/0/{code}")]),
            None => serde_json::json!(["CRS84"]),
        };
        assert_eq!(doc["crs"], want_crs, "{ds}");
    }
    // position: the cell pyproj finds, at its centre, with the value stored there.
    for (ds, path) in [("hrrr_lcc", "t2m"), ("seaice_3413", "ice"), ("cordex_rotated", "tas"), ("europe_laea", "lc")] {
        let m = &manifest()["datasets"][ds]["arrays"][path];
        let file = m["points"].as_str().unwrap();
        let points: Vec<Value> =
            serde_json::from_slice(&std::fs::read(dir().join("expected").join(file)).unwrap()).unwrap();
        let leading = !m["leading"].as_array().unwrap().is_empty();
        for p in points.iter().filter(|p| !p["cell"].is_null()).take(8) {
            let (lon, lat) = (p["lon"].as_f64().unwrap(), p["lat"].as_f64().unwrap());
            let uri = format!("/edr/collections/{ds}/position?coords=POINT({lon}%20{lat})");
            let reply = get(&app, &uri).await;
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            let cov = reply.json();
            assert_eq!(cov["domain"]["domainType"], if leading { "PointSeries" } else { "Point" }, "{uri}");
            let axes = &cov["domain"]["axes"];
            let (x, y) = (axes["x"]["values"][0].as_f64().unwrap(), axes["y"]["values"][0].as_f64().unwrap());
            assert!(
                (x - p["centre"][0].as_f64().unwrap()).abs() < 1e-6
                    && (y - p["centre"][1].as_f64().unwrap()).abs() < 1e-6,
                "{uri}: {axes}"
            );
            let (row, col) = (p["cell"][0].as_u64().unwrap(), p["cell"][1].as_u64().unwrap());
            let index = if leading { vec![0, row, col] } else { vec![row, col] };
            let want = value_at(&app, ds, path, &index).await;
            let got = cov["ranges"][path]["values"][0].as_f64();
            assert_eq!(got.map(|v| v as f32), want.map(|v| v as f32), "{uri}");
        }
        let outside = points.iter().find(|p| p["cell"].is_null()).unwrap();
        let uri = format!("/edr/collections/{ds}/position?coords=POINT({}%20{})", outside["lon"], outside["lat"]);
        assert_eq!(get(&app, &uri).await.status, 400, "{uri}");
    }
    // cube: a Grid on the native axes whose referencing is the ProjectedCRS; CSV rows at the
    // cells' centres with their native x, y; every cell pyproj places in the box is there.
    let m = &manifest()["datasets"]["seaice_3413"]["arrays"]["ice"];
    let points: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir().join("expected").join(m["points"].as_str().unwrap())).unwrap())
            .unwrap();
    let (west, south, east, north) = (-60.0, 65.0, -30.0, 75.0);
    let base =
        format!("/edr/collections/seaice_3413/cube?bbox={west},{south},{east},{north}&datetime=2020-01-01T00:00:00Z");
    let grid = get(&app, &base).await;
    assert_eq!(grid.status, 200, "{}", grid.describe());
    let grid = grid.json();
    assert_eq!(grid["domain"]["domainType"], "Grid");
    assert_eq!(grid["domain"]["referencing"][0]["system"]["type"], "ProjectedCRS");
    assert_eq!(grid["domain"]["referencing"][0]["system"]["id"], "http://www.opengis.net/def/crs/EPSG/0/3413");
    let xs = grid["domain"]["axes"]["x"]["values"].as_array().unwrap();
    assert!(xs.iter().all(|x| x.as_f64().unwrap().abs() <= 3_850_000.0), "native metres: {xs:?}");
    let csv = get(&app, &format!("{base}&f=CSV")).await;
    assert_eq!(csv.status, 200, "{}", csv.describe());
    let text = String::from_utf8(csv.body.to_vec()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), "datetime,x,y,lat,lon,ice");
    let rows: Vec<Vec<f64>> =
        lines.map(|l| l.split(',').skip(1).take(4).map(|v| v.parse().unwrap()).collect()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        assert!((south..=north).contains(&r[2]) && (west..=east).contains(&r[3]), "{r:?} outside the box");
    }
    for p in points.iter().filter(|p| !p["centre"].is_null()) {
        let (clon, clat) = (p["centre"][0].as_f64().unwrap(), p["centre"][1].as_f64().unwrap());
        if (west..=east).contains(&clon) && (south..=north).contains(&clat) {
            assert!(rows.iter().any(|r| (r[2] - clat).abs() < 1e-6 && (r[3] - clon).abs() < 1e-6), "{p} missing");
        }
    }
    // The native CRS for coords: the centre of cell (0, 0) of seaice (x -3800000, y 5800000).
    let native =
        get(&app, "/edr/collections/seaice_3413/position?coords=POINT(-3800000%205800000)&crs=EPSG:3413").await;
    assert_eq!(native.status, 200, "{}", native.describe());
    let wrong = get(&app, "/edr/collections/hrrr_lcc/position?coords=POINT(0%200)&crs=EPSG:3413").await;
    assert_eq!(wrong.status, 400, "{}", wrong.describe());
    common::assert_no_panics();
}

#[tokio::test]
async fn a_latitude_longitude_box_takes_the_cells_whose_centre_pyproj_puts_inside() {
    let app = app();
    let (south, north, west, east) = (30.0, 40.0, -100.0, -90.0);
    // The 2-D latitude/longitude beside t2m are the cell centres pyproj computed.
    let centres = |name: &str| {
        let app = app.clone();
        let name = name.to_owned();
        async move {
            let doc = get(&app, &format!("/v1/slice/hrrr_lcc/{name}?format=json")).await.json();
            doc["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        }
    };
    let (lat, lon) = (centres("latitude").await, centres("longitude").await);
    let inside = |r: usize, c: usize| {
        let l = (lon[r][c] + 180.0).rem_euclid(360.0) - 180.0;
        (south..=north).contains(&lat[r][c]) && (west..=east).contains(&l)
    };
    let cells: Vec<(usize, usize)> =
        (0..lat.len()).flat_map(|r| (0..lat[0].len()).map(move |c| (r, c))).filter(|&(r, c)| inside(r, c)).collect();
    let (r0, r1) = (cells.iter().map(|c| c.0).min().unwrap(), cells.iter().map(|c| c.0).max().unwrap());
    let (c0, c1) = (cells.iter().map(|c| c.1).min().unwrap(), cells.iter().map(|c| c.1).max().unwrap());
    let uri = format!("/v1/slice/hrrr_lcc/t2m?sel=time:2020-01-01,lat:{south}..{north},lon:{west}..{east}&format=json");
    let reply = get(&app, &uri).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(reply.header("zarr-selection"), format!("0,{r0}:{},{c0}:{}", r1 + 1, c1 + 1));
    let data = reply.json()["data"].clone();
    let mut taken = 0;
    for (i, row) in data.as_array().unwrap().iter().enumerate() {
        for (j, v) in row.as_array().unwrap().iter().enumerate() {
            assert_eq!(!v.is_null(), inside(r0 + i, c0 + j), "cell ({}, {}): {v}", r0 + i, c0 + j);
            taken += usize::from(!v.is_null());
        }
    }
    assert_eq!(taken, cells.len());
    // npy: NaN where not taken; the reduction counts the taken cells only.
    let npy = parse_npy(&get(&app, &uri.replace("format=json", "format=npy")).await.body);
    let values: Vec<f32> = npy.data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    assert_eq!(values.iter().filter(|v| !v.is_nan()).count(), cells.len());
    let mean = values.iter().filter(|v| !v.is_nan()).map(|&v| f64::from(v)).sum::<f64>() / cells.len() as f64;
    let reduce = get(&app, &format!("/v1/reduce/hrrr_lcc/t2m?sel=time:2020-01-01,lat:{south}..{north},lon:{west}..{east}&over=y,x&op=mean&format=json")).await;
    assert_eq!(reduce.status, 200, "{}", reduce.describe());
    let got = reduce.json()["data"].as_f64().unwrap();
    assert!((got - mean).abs() < 1e-9 * mean.abs(), "{got} vs {mean}");
    // An empty box is 404; a box mixed with a point is 400.
    assert_eq!(get(&app, "/v1/slice/hrrr_lcc/t2m?sel=lat:-40..-30,lon:0..10").await.status, 404);
    assert_eq!(get(&app, "/v1/slice/hrrr_lcc/t2m?sel=lat:30..40,lon:~-95").await.status, 400);
    common::assert_no_panics();
}

#[tokio::test]
async fn a_geozarr_multiscales_level_draws_each_tile_from_the_level_its_zoom_chooses() {
    let dir = common::fixtures().join("grids-multiscales");
    let m: Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let store = common::local_store(&dir.join(m["store"].as_str().unwrap()));
    let app = common::app_with(vec![("s2", store)], common::config(""));
    let mut levels = std::collections::BTreeSet::new();
    for t in m["tiles"].as_array().unwrap() {
        let want = common::gzipped_tile(&dir.join("expected").join(t["file"].as_str().unwrap()));
        // Whichever level's array the URL names, the tile comes from the one its zoom chooses.
        for path in m["arrays"].as_array().unwrap() {
            let id = format!("s2%2F{}", path.as_str().unwrap().replace('/', "%2F"));
            let uri = format!("/maps/{id}/{}/{}/{}.npy", t["z"], t["x"], t["y"]);
            let reply = get(&app, &uri).await;
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            assert_eq!(reply.header("zarr-level"), t["level"].as_str().unwrap(), "{uri}");
            let got = common::tile_values(&reply.body);
            let wrong = got
                .iter()
                .zip(&want)
                .filter(|(g, w)| if w.is_nan() { !g.is_nan() } else { g.to_bits() != w.to_bits() })
                .count();
            assert_eq!(wrong, 0, "{uri}: {wrong} pixels differ");
        }
        levels.insert(t["level"].as_str().unwrap().to_owned());
    }
    assert_eq!(levels.len(), 3, "{levels:?}");
    common::assert_no_panics();
}

#[tokio::test]
async fn with_a_cf_fill_value_the_zarr_fill_is_a_value_as_xarray_reads_it() {
    let dir = dir().join("fill_vs_fillvalue.zarr");
    let app = common::app_with(
        vec![("v3", common::local_store(&dir)), ("v2", common::local_store(&dir.join("v2")))],
        common::config(""),
    );
    let want: Value = serde_json::from_slice(&std::fs::read(dir.with_extension("json")).unwrap()).unwrap();
    for (ds, array) in [("v3", "ice_v3"), ("v2", "ice_v2")] {
        let reply = get(&app, &format!("/v1/slice/{ds}/{array}?sel=lat:-5..5&format=json")).await;
        assert_eq!(reply.status, 200, "{}", reply.describe());
        assert_eq!(reply.json()["data"], want["decoded"], "{ds}: xarray's decode_cf");
        // A map tile over the grid shows open water (0) and leaves the 255 block out.
        let tile = get(&app, &format!("/maps/{ds}%2F{array}/4/7/8.npy")).await;
        assert_eq!(tile.status, 200, "{}", tile.describe());
        let values = common::tile_values(&tile.body);
        assert!(values.contains(&0.0), "{ds}: open water is a value");
        assert!(!values.contains(&255.0), "{ds}: 255 is the missing value");
    }
    common::assert_no_panics();
}

#[tokio::test]
async fn a_transform_for_another_shape_is_refused_not_drawn() {
    // b11 (92 × 92) without its own proj:transform/proj:shape falls under its group's
    // transform for 183 × 183 cells: another level's, so a 422 naming spatial:shape.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("s2.zarr");
    common::copy_tree(&dir().join("s2_utm.zarr"), &root);
    let strip = |doc: &mut Value| {
        let attrs = doc["attributes"].as_object_mut().unwrap();
        for key in ["proj:transform", "proj:shape", "proj:spatial_dimensions", "proj:code"] {
            attrs.remove(key);
        }
    };
    let meta = root.join("r60m/b11/zarr.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    strip(&mut doc);
    std::fs::write(&meta, doc.to_string()).unwrap();
    let top = root.join("zarr.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&top).unwrap()).unwrap();
    strip(&mut doc["consolidated_metadata"]["metadata"]["r60m/b11"]);
    std::fs::write(&top, doc.to_string()).unwrap();
    let app = common::app_with(vec![("s2", common::local_store(&root))], common::config(""));
    let reply = get(&app, "/maps/s2%2Fr60m%2Fb11/13/4409/2943.npy").await;
    assert_eq!(reply.status, 422, "{}", reply.describe());
    assert!(reply.describe().contains("spatial:shape"), "{}", reply.describe());
    let info = get(&app, "/v1/arrays/s2/r60m/b11").await.json();
    assert!(info["grid"].is_null(), "{info}");
    common::assert_no_panics();
}
