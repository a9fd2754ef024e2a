//! Web-map tiles (`docs/maps.md`) over the xarray-written fixtures of
//! `tests/fixtures/maps` (global 0..360 with descending latitudes, Gaussian latitudes,
//! a sharded regional grid with `_FillValue`, a grid across the antimeridian with an int16
//! fill): every tile equals the one `make_maps_fixtures.py` computed from the formulas in
//! `NumPy`; PNG transparency and levels; `TileJSON` bounds and zooms; every bad request; and
//! the storage requests of a coarse tile over many small chunks.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // expected values are exact

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{CountingStore, get, get_with};
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use serde_json::{Value, json};
use zarrd_core::store::Store;

fn dir() -> PathBuf {
    common::fixtures().join("maps")
}

fn manifest() -> Value {
    serde_json::from_slice(&std::fs::read(dir().join("manifest.json")).unwrap()).unwrap()
}

/// The app serving each fixture store as a dataset named after it.
fn app() -> axum::Router {
    common::manifest_app(&dir(), &manifest())
}

fn identifier(dataset: &str, array: &str, indices: &[Value]) -> String {
    let list: Vec<String> = indices.iter().map(ToString::to_string).collect();
    let suffix = if list.is_empty() { String::new() } else { format!("%5B{}%5D", list.join(",")) };
    format!("{dataset}%2F{array}{suffix}")
}

/// An expected tile: 256 × 256 float32, rows north to south.
fn expected(file: &str) -> Vec<f32> {
    common::gzipped_tile(&dir().join("expected").join(file))
}

#[tokio::test]
async fn every_tile_equals_the_reference_computed_from_the_formulas() {
    let app = app();
    let m = manifest();
    let tiles = m["tiles"].as_array().unwrap();
    assert!(tiles.len() >= 40);
    for t in tiles {
        let id =
            identifier(t["dataset"].as_str().unwrap(), t["array"].as_str().unwrap(), t["indices"].as_array().unwrap());
        let uri = format!("/maps/{id}/{}/{}/{}.npy", t["z"], t["x"], t["y"]);
        let reply = get(&app, &uri).await;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
        let got = common::tile_values(&reply.body);
        let want = expected(t["file"].as_str().unwrap());
        let mut wrong = Vec::new();
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = if w.is_nan() { g.is_nan() } else { g.to_bits() == w.to_bits() };
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
    }
    common::assert_no_panics();
}

#[tokio::test]
async fn png_tiles_are_transparent_where_there_is_no_data_and_levels_follow_the_window() {
    let app = app();
    // The sharded regional grid (NaN written as `_FillValue` -9999) and the int16 grid
    // across the antimeridian (fill -32768): gray levels round((v - lo) * 255 / (hi - lo)).
    for (id, z, x, y, file, lo, hi) in [
        ("regional%2Fsst", 4, 8, 4, "regional__4_8_4.npy.gz", 0.0, 30.0),
        ("pacific%2Fv", 3, 0, 4, "pacific__3_0_4.npy.gz", -2000.0, 4000.0),
    ] {
        let want = expected(file);
        let reply = get(&app, &format!("/maps/{id}/{z}/{x}/{y}.png?colormap=gray&vmin={lo}&vmax={hi}")).await;
        assert_eq!(reply.status, 200, "{}", reply.describe());
        assert_eq!(reply.header("content-type"), "image/png");
        let mut reader = png::Decoder::new(std::io::Cursor::new(reply.body.to_vec())).read_info().unwrap();
        let mut data = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut data).unwrap();
        assert_eq!((info.width, info.height, info.color_type), (256, 256, png::ColorType::Rgba));
        let (mut clear, mut shown) = (0, 0);
        for (k, w) in want.iter().enumerate() {
            let px = &data[k * 4..k * 4 + 4];
            if w.is_nan() {
                assert_eq!(px[3], 0, "pixel {k} has no data");
                clear += 1;
            } else {
                let level = ((f64::from(*w) - lo) * 255.0 / (hi - lo)).round().clamp(0.0, 255.0) as u8;
                assert_eq!(px, [level, level, level, 255], "pixel {k} value {w}");
                shown += 1;
            }
        }
        assert!(clear > 0 && shown > 0, "{id}: {clear} clear, {shown} shown");
    }
    // JPEG and the default colormap and window (the valid values' range) answer too.
    let reply = get(&app, "/maps/regional%2Fsst/2/2/1.jpg").await;
    assert_eq!((reply.status.as_u16(), reply.header("content-type")), (200, "image/jpeg"), "{}", reply.describe());
}

#[tokio::test]
async fn tilejson_gives_the_template_bounds_and_zooms() {
    let app = app();
    let m = manifest();
    for (name, d) in m["datasets"].as_object().unwrap() {
        let array = d["array"].as_str().unwrap();
        let indices = if name == "global_0360" { vec![json!(1)] } else { vec![] };
        let id = identifier(name, array, &indices);
        let reply = get_with(&app, &format!("/maps/{id}/tilejson.json"), &[("host", "maps.example")]).await;
        assert_eq!(reply.status, 200, "{}", reply.describe());
        let doc = reply.json();
        assert_eq!(doc["tilejson"], "3.0.0");
        assert_eq!(doc["tiles"], json!([format!("http://maps.example/maps/{id}/{{z}}/{{x}}/{{y}}.png")]));
        let (got, want) = (doc["bounds"].as_array().unwrap(), d["bounds"].as_array().unwrap());
        for (g, w) in got.iter().zip(want) {
            assert!((g.as_f64().unwrap() - w.as_f64().unwrap()).abs() < 1e-9, "{name}: {got:?} vs {want:?}");
        }
        assert_eq!((&doc["minzoom"], &doc["maxzoom"]), (&d["minzoom"], &d["maxzoom"]), "{name}");
        assert_eq!(doc["array"]["path"], array);
        assert!(doc["vmin"].as_f64().unwrap() < doc["vmax"].as_f64().unwrap(), "{doc}");
    }
    // The window honours `_FillValue`: -9999 is no data, not the minimum.
    let doc = get(&app, "/maps/regional%2Fsst/tilejson.json").await.json();
    assert!(doc["vmin"].as_f64().unwrap() > -100.0, "{doc}");
    assert_eq!((doc["units"].as_str(), doc["description"].as_str()), (Some("degC"), Some("sea surface temperature")));
    let doc = get(&app, "/maps/global_0360%2Ft2m%5B0%5D/tilejson.json?colormap=magma&vmin=250&vmax=300&format=npy")
        .await
        .json();
    let template = doc["tiles"][0].as_str().unwrap();
    assert!(
        template.ends_with("/maps/global_0360%2Ft2m%5B0%5D/{z}/{x}/{y}.npy?colormap=magma&vmin=250&vmax=300"),
        "{template}"
    );
    assert_eq!(doc["array"]["dimension_names"], json!(["time", "lat", "lon"]));
    assert_eq!((doc["array"]["latitude"].as_str(), doc["array"]["longitude"].as_str()), (Some("lat"), Some("lon")));
}

#[tokio::test]
async fn validators_and_conditional_requests() {
    let app = app();
    let uri = "/maps/gaussian%2Fprecip/2/1/1.png";
    let first = get(&app, uri).await;
    assert_eq!(first.status, 200);
    let etag = first.header("etag").to_owned();
    assert!(etag.starts_with('"'), "{etag}");
    let again = get_with(&app, uri, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, 304, "{}", again.describe());
    // A different style is a different tile.
    let other = get(&app, &format!("{uri}?colormap=magma")).await;
    assert_ne!(other.header("etag"), etag);
}

#[tokio::test]
async fn bad_tiles_are_problems() {
    let app = app();
    let conf = common::conformance_app();
    for (uri, status) in [
        ("/maps/gaussian%2Fprecip/25/0/0.png", 400),
        ("/maps/gaussian%2Fprecip/3/8/0.png", 400),
        ("/maps/gaussian%2Fprecip/3/0/8.png", 400),
        ("/maps/gaussian%2Fprecip/0/0/0.webp", 400),
        ("/maps/gaussian%2Fprecip/0/0/0", 400),
        ("/maps/gaussian%2Fprecip/x/0/0.png", 400),
        ("/maps/gaussian%2Fprecip/0/0/0.png?colormap=jet", 400),
        ("/maps/gaussian%2Fprecip/0/0/0.png?vmin=2&vmax=1", 400),
        ("/maps/gaussian%2Fprecip/0/0/0.png?bogus=1", 400),
        ("/maps/gaussian%2Fprecip/tilejson.json?format=gif", 400),
        ("/maps/global_0360%2Ft2m/0/0/0.png", 400),
        ("/maps/global_0360%2Ft2m%5B3%5D/0/0/0.png", 404),
        ("/maps/nope%2Ft2m/0/0/0.png", 404),
        ("/maps/global_0360%2Fnope/0/0/0.png", 404),
        ("/maps/global_0360%2Ftime/0/0/0.png", 422),
        ("/maps/global_0360%2Flat/tilejson.json", 422),
    ] {
        let reply = get(&app, uri).await;
        let problem = reply.assert_problem(status);
        assert!(!problem["detail"].as_str().unwrap_or("").is_empty(), "{uri}");
    }
    // An array without coordinates: 422 saying what a map needs.
    let arrays = common::manifest();
    let path = arrays["arrays"].as_array().unwrap().iter().find(|a| a["shape"].as_array().unwrap().len() == 2).unwrap()
        ["path"]
        .as_str()
        .unwrap()
        .replace('/', "%2F");
    let problem = get(&conf, &format!("/maps/conf%2F{path}/0/0/0.png")).await.assert_problem(422);
    assert!(problem["detail"].as_str().unwrap().contains("latitude"), "{problem}");
    common::assert_no_panics();
}

/// A v3 array `v` (lat, lon) with lat/lon coordinates, uncompressed, in memory.
async fn put_array(
    mem: &InMemory,
    path: &str,
    shape: &[u64],
    chunks: &[u64],
    dims: &[&str],
    values: &dyn Fn(&[u64]) -> f32,
) {
    let meta = json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "dimension_names": dims, "attributes": {},
    });
    mem.put(&ObjectPath::from(format!("{path}/zarr.json")), meta.to_string().into_bytes().into()).await.unwrap();
    let grid: Vec<u64> = shape.iter().zip(chunks).map(|(s, c)| s.div_ceil(*c)).collect();
    let count: u64 = grid.iter().product();
    for flat in 0..count {
        let coords = common::unravel(flat, &grid);
        let mut bytes = Vec::new();
        let inner: u64 = chunks.iter().product();
        for k in 0..inner {
            let local = common::unravel(k, chunks);
            let at: Vec<u64> = coords.iter().zip(&local).zip(chunks).map(|((c, l), n)| c * n + l).collect();
            let v = if at.iter().zip(shape).all(|(a, s)| a < s) { values(&at) } else { f32::NAN };
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let key = coords.iter().map(ToString::to_string).collect::<Vec<_>>().join("/");
        mem.put(&ObjectPath::from(format!("{path}/c/{key}")), bytes.into()).await.unwrap();
    }
}

#[tokio::test]
async fn a_coarse_tile_reads_only_the_chunks_it_needs() {
    // 180 rows (1 deg, north to south) x 4096 columns, chunks of 180 x 2: a zoom-0 tile
    // needs 256 of the 4096 columns, so at most 256 of the 2048 chunks.
    let mem = InMemory::new();
    let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {}}).to_string();
    mem.put(&ObjectPath::from("zarr.json"), group.into_bytes().into()).await.unwrap();
    put_array(&mem, "lat", &[180], &[180], &["lat"], &|i| 89.5 - i[0] as f32).await;
    put_array(&mem, "lon", &[4096], &[4096], &["lon"], &|i| -180.0 + (i[0] as f32 + 0.5) * 360.0 / 4096.0).await;
    put_array(&mem, "v", &[180, 4096], &[180, 2], &["lat", "lon"], &|i| (i[0] * 4096 + i[1]) as f32).await;
    // Latitudes that turn back: 422.
    put_array(&mem, "bad/lat", &[4], &[4], &["lat"], &|i| [0.0, 1.0, 3.0, 2.0][i[0] as usize]).await;
    put_array(&mem, "bad/lon", &[4], &[4], &["lon"], &|i| i[0] as f32).await;
    put_array(&mem, "bad/v", &[4, 4], &[4, 4], &["lat", "lon"], &|_| 1.0).await;
    let counting = CountingStore::new(Arc::new(mem));
    let app = common::app_with(vec![("big", Store::new(counting.clone(), ObjectPath::default()))], common::config(""));
    get(&app, "/maps/big%2Fv/tilejson.json").await;
    let before = counting.total();
    let reply = get(&app, "/maps/big%2Fv/0/0/0.npy").await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let reads = counting.total() - before;
    assert!(reads <= 256, "a zoom-0 tile made {reads} storage requests; it needs at most 256 of the 2048 chunks");
    // Each pixel shows its cell: column i's centre is at lon -180 + (i + 0.5) * 360/256,
    // i.e. column 16 i + 8 of 4096; rows from the Mercator latitude.
    let values = common::tile_values(&reply.body);
    let lat = |j: f64| (std::f64::consts::PI * (1.0 - 2.0 * (j + 0.5) / 256.0)).sinh().atan().to_degrees();
    for (j, i) in [(0usize, 0usize), (128, 5), (255, 255), (77, 130)] {
        let row = (89.5 - lat(j as f64) + 0.5).floor() as u64;
        assert_eq!(values[j * 256 + i], (row * 4096 + 16 * i as u64 + 8) as f32, "pixel ({j}, {i})");
    }
    let problem = get(&app, "/maps/big%2Fbad%2Fv/0/0/0.png").await.assert_problem(422);
    assert!(problem["detail"].as_str().unwrap().contains("not strictly increasing or decreasing"), "{problem}");
}

#[tokio::test]
async fn coarse_tiles_read_an_overview_level_when_the_array_has_one() {
    // An OME-NGFF multiscales group over a 0.17578125 deg grid (1024 x 2048, latitudes
    // descending) and its level reduced by 2 (512 x 1024), with lat/lon beside level 0.
    // A zoom-0 pixel spans about 8 columns and 4 rows, so the tile reads level 1: each
    // pixel shows level 1's cell (row >> 1, col >> 1) of the full-resolution cell it holds.
    let mem = InMemory::new();
    let scale = |s: f64| json!([{"type": "scale", "scale": [s, s]}]);
    let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {"multiscales": [{"version": "0.4",
        "datasets": [{"path": "0", "coordinateTransformations": scale(1.0)}, {"path": "1", "coordinateTransformations": scale(2.0)}]}]}});
    mem.put(&ObjectPath::from("zarr.json"), group.to_string().into_bytes().into()).await.unwrap();
    let step = 180.0 / 1024.0;
    put_array(&mem, "lat", &[1024], &[1024], &["lat"], &|i| (90.0 - (i[0] as f64 + 0.5) * step) as f32).await;
    put_array(&mem, "lon", &[2048], &[2048], &["lon"], &|i| (-180.0 + (i[0] as f64 + 0.5) * step) as f32).await;
    put_array(&mem, "0", &[1024, 2048], &[256, 256], &["lat", "lon"], &|i| (i[0] * 2048 + i[1]) as f32).await;
    put_array(&mem, "1", &[512, 1024], &[256, 256], &["lat", "lon"], &|i| -((i[0] * 1024 + i[1]) as f32)).await;
    let app = common::app_with(vec![("ms", Store::new(Arc::new(mem), ObjectPath::default()))], common::config(""));
    let reply = get(&app, "/maps/ms%2F0/0/0/0.npy").await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let values = common::tile_values(&reply.body);
    let lat = |j: f64| (std::f64::consts::PI * (1.0 - 2.0 * (j + 0.5) / 256.0)).sinh().atan().to_degrees();
    for (j, i) in [(0usize, 0usize), (128, 5), (255, 255), (77, 130), (200, 31)] {
        let row = ((90.0 - lat(j as f64)) / step).floor() as u64;
        let col = 8 * i as u64 + 4;
        assert_eq!(values[j * 256 + i], -(((row >> 1) * 1024 + (col >> 1)) as f32), "pixel ({j}, {i})");
    }
    // A deep zoom reads full resolution: the pixel at lon 0.01, lat 0.01 is cell (511, 1024).
    let reply = get(&app, "/maps/ms%2F0/12/2048/2047.npy").await;
    let values = common::tile_values(&reply.body);
    assert_eq!(values[255 * 256], (511 * 2048 + 1024) as f32);
}
