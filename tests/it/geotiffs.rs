//! GeoTIFF downloads (`format=tif`, `docs/downloads.md`): the files read back by an
//! independent decoder (the `tiff` crate) hold the values xarray gave for the same label
//! selections (`tests/fixtures/analysis/cases.json`), placed at the edges of the labels
//! xarray gave (across the seam of a 0..360 grid too); the bytes are deterministic and
//! revalidate with 304 before any chunk is read; what GeoTIFF cannot hold gets a problem
//! document. rio-cogeo, rasterio and `gdalinfo` open the files in `.ci/downloads.sh`.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // exact expected values

use std::io::Cursor;

use serde_json::Value;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::tags::Tag;

use crate::common;
use crate::downloads::{app, case};

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

/// The ASCII tag `tag` without its NUL.
fn ascii(decoder: &mut Decoder<Cursor<Vec<u8>>>, tag: u16) -> String {
    decoder.get_tag_ascii_string(Tag::Unknown(tag)).unwrap().trim_end_matches('\0').to_owned()
}

/// The selection of case `name` as a GeoTIFF: its pixels decoded as CF readers do (with the
/// file's nodata, scale and offset) equal xarray's values, and its tiepoint and pixel size
/// are the edges of xarray's labels.
async fn check_case(name: &str) {
    let case = case(name);
    let expected = &case["expected"];
    let uri = case["url"].as_str().unwrap().replace("format=json", "format=tif");
    let reply = common::browser_get(&app(), &uri).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(reply.header("content-type"), "image/tiff; application=geotiff; profile=cloud-optimized");
    assert_eq!(reply.header("content-encoding"), "", "an image is sent as it is");
    let mut decoder = Decoder::new(Cursor::new(reply.body.to_vec())).unwrap();
    let (cols, rows) = decoder.dimensions().unwrap();
    let shape: Vec<u32> = expected["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
    assert_eq!([rows, cols], shape[..], "{name}");
    let nodata: f64 = ascii(&mut decoder, 42113).parse().unwrap();
    let metadata = ascii(&mut decoder, 42112);
    let item = |role: &str, default: f64| {
        let at = metadata.find(&format!(r#"role="{role}">"#)).map(|i| i + role.len() + 8);
        at.map_or(default, |i| metadata[i..].split('<').next().unwrap().parse().unwrap())
    };
    let (scale, offset) = (item("scale", 1.0), item("offset", 0.0));
    let stored: Vec<f64> = match decoder.read_image().unwrap() {
        DecodingResult::F32(v) => v.into_iter().map(f64::from).collect(),
        DecodingResult::I16(v) => v.into_iter().map(f64::from).collect(),
        _ => panic!("{name}: an unexpected sample type"),
    };
    let want: Vec<Option<f64>> = expected["values"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().clone())
        .map(|v| v.as_f64())
        .collect();
    assert_eq!(stored.len(), want.len(), "{name}");
    for (i, (&v, want)) in stored.iter().zip(&want).enumerate() {
        let got = (!v.is_nan() && v != nodata).then_some(v * scale + offset);
        match (got, want) {
            (Some(g), Some(w)) => assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{name}[{i}]: {g} vs {w}"),
            _ => assert_eq!(got.is_none(), want.is_none(), "{name}[{i}]: {got:?} vs {want:?}"),
        }
    }
    // Latitudes north to south (these cases are stored so); longitudes advancing east,
    // across 360 where the labels wrap.
    let (lat, lon) = (numbers(&expected["coords"]["lat"]), numbers(&expected["coords"]["lon"]));
    let dlat = lat[0] - lat[1];
    let dlon = (lon[1] - lon[0]).rem_euclid(360.0);
    let pixel = decoder.get_tag_f64_vec(Tag::Unknown(33550)).unwrap();
    let tiepoint = decoder.get_tag_f64_vec(Tag::Unknown(33922)).unwrap();
    assert_eq!(pixel, [dlon, dlat, 0.0], "{name}");
    assert_eq!(tiepoint, [0.0, 0.0, 0.0, lon[0] - dlon / 2.0, lat[0] + dlat / 2.0, 0.0], "{name}");
    // WGS 84 by its code, pixel is area.
    let keys = decoder.get_tag_u16_vec(Tag::Unknown(34735)).unwrap();
    assert!(keys.chunks(4).any(|k| k == [2048, 0, 1, 4326]), "{name}: {keys:?}");
    assert!(keys.chunks(4).any(|k| k == [1025, 0, 1, 1]), "{name}: {keys:?}");
}

#[tokio::test]
async fn label_selections_as_geotiffs_hold_xarrays_values_at_its_labels() {
    check_case("sel_range_descending_lat").await;
    check_case("sel_lon_range_across_seam").await;
    check_case("sel_packed_pr_fill").await;
}

#[tokio::test]
async fn geotiffs_are_deterministic_and_revalidate_before_reading() {
    let (app, counting) = crate::downloads::counting_app();
    let uri = "/v1/slice/analysis/daily/tas?s=0:3,:,:&format=tif";
    let first = common::browser_get(&app, uri).await;
    let second = common::browser_get(&app, uri).await;
    assert_eq!(first.status, 200, "{}", first.describe());
    assert_eq!(first.body, second.body, "the same request makes the same bytes");
    assert_eq!(first.header("content-length"), first.body.len().to_string());
    assert_eq!(first.header("content-disposition"), "attachment; filename=\"tas.tif\"");
    assert_eq!((first.header("zarr-shape"), first.header("zarr-data-type")), ("3,72,144", "float32"));
    let etag = first.header("etag").to_owned();
    assert!(counting.got.lock().unwrap().iter().any(|k| k.starts_with("daily/tas/c")));
    counting.got.lock().unwrap().clear();
    let again = common::get_with(&app, uri, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, 304, "{}", again.describe());
    let got = counting.got.lock().unwrap().clone();
    assert!(!got.iter().any(|k| k.starts_with("daily/tas/c")), "a data chunk was read for the 304: {got:?}");
    let nc = common::browser_get(&app, "/v1/slice/analysis/daily/tas?s=0:3,:,:&format=nc").await;
    assert_ne!(nc.header("etag"), etag, "a NetCDF of the same selection is another file");
}

#[tokio::test]
async fn what_geotiff_cannot_hold_gets_problem_documents() {
    let app = app();
    for (uri, status, says) in [
        ("/v1/slice/analysis/daily/tas?s=0:3,0:4,0&format=tif", 422, "last two dimensions"),
        ("/v1/slice/analysis/daily/nino34?format=tif", 422, "no grid"),
        ("/v1/slice/analysis/daily/tas?s=0,:,:&format=tif&colormap=viridis", 400, "format=png"),
        ("/v1/slice/analysis/daily/tas?sel=lat:1000..2000&format=tif", 422, "length 0"),
    ] {
        let doc = common::get(&app, uri).await.assert_problem(status);
        assert!(doc["detail"].as_str().unwrap().contains(says), "{uri}: {doc}");
    }
    let dir = common::fixtures().join("analysis");
    let small = common::app_with(
        vec![("analysis", common::local_store(&dir.join("analysis.zarr")))],
        common::config("[limits]\nmax_response_bytes = 100000\n"),
    );
    let doc = common::get(&small, "/v1/slice/analysis/daily/tas?s=0:10,:,:&format=tif").await.assert_problem(413);
    assert!(doc["detail"].as_str().unwrap().contains("GeoTIFF"), "{doc}");
}

/// The one-step cube cases of `tests/fixtures/edr/cases.json` (answers xarray computed) as
/// `f=GeoTIFF` of their first parameter: float64 pixels north-up equal to the answer (NaN
/// where it has null), placed at the edges of its axes (across the antimeridian too); an
/// irregular grid is a 422; other queries and several parameters a 400.
#[tokio::test]
async fn edr_cubes_as_geotiffs_hold_xarrays_answers() {
    let fixtures = common::fixtures();
    let app = common::app_with(
        vec![
            ("edr", common::local_store(&fixtures.join("edr/edr.zarr"))),
            ("analysis", common::local_store(&fixtures.join("analysis/analysis.zarr"))),
        ],
        common::config(""),
    );
    let cases: Vec<Value> = serde_json::from_slice(&std::fs::read(fixtures.join("edr/cases.json")).unwrap()).unwrap();
    for name in ["cube_edr", "cube_edr_antimeridian", "cube_daily_antimeridian"] {
        let case = cases.iter().find(|c| c["name"] == name).unwrap();
        let cov = &case["covjson"];
        let (parameter, range) = cov["ranges"].as_object().unwrap().iter().next().unwrap();
        let url = case["url"].as_str().unwrap();
        let url =
            if url.contains("parameter-name=") { url.to_owned() } else { format!("{url}&parameter-name={parameter}") };
        let reply = common::browser_get(&app, &format!("{url}&f=GeoTIFF")).await;
        assert_eq!(reply.status, 200, "{name}: {}", reply.describe());
        let mut decoder = Decoder::new(Cursor::new(reply.body.to_vec())).unwrap();
        let (ys, xs) = (numbers(&cov["axes"]["y"]), numbers(&cov["axes"]["x"]));
        assert_eq!(decoder.dimensions().unwrap(), (xs.len() as u32, ys.len() as u32), "{name}");
        let DecodingResult::F64(got) = decoder.read_image().unwrap() else { panic!("{name}: not float64") };
        let want: Vec<Option<f64>> = range["values"].as_array().unwrap().iter().map(Value::as_f64).collect();
        let south_up = ys[1] > ys[0];
        for (i, g) in got.iter().enumerate() {
            let (r, c) = (i / xs.len(), i % xs.len());
            let row = if south_up { ys.len() - 1 - r } else { r };
            match want[row * xs.len() + c] {
                Some(w) => assert!(*g == w || (*g as f32) == (w as f32), "{name}[{i}]: {g} vs {w}"),
                None => assert!(g.is_nan(), "{name}[{i}]: {g}, want missing"),
            }
        }
        let dx = (xs[1] - xs[0]).rem_euclid(360.0);
        let dy = (ys[1] - ys[0]).abs();
        let north = ys.iter().copied().fold(f64::MIN, f64::max);
        let tiepoint = decoder.get_tag_f64_vec(Tag::Unknown(33922)).unwrap();
        assert_eq!(tiepoint, [0.0, 0.0, 0.0, xs[0] - dx / 2.0, north + dy / 2.0, 0.0], "{name}");
    }
    let irregular = "/edr/collections/analysis:irregular/cube?bbox=-30,-20,10,15&f=GeoTIFF";
    let doc = common::get(&app, irregular).await.assert_problem(422);
    assert!(doc["detail"].as_str().unwrap().contains("not regular"), "{doc}");
    for (uri, says) in [
        ("/edr/collections/edr/area?coords=POLYGON((5%2015,45%2015,45%2055,5%2055,5%2015))&f=GeoTIFF", "cube queries"),
        ("/edr/collections/edr/cube?bbox=10,20,40,50&parameter-name=ta,ua&f=GeoTIFF", "one parameter"),
    ] {
        let doc = common::get(&app, uri).await.assert_problem(400);
        assert!(doc["detail"].as_str().unwrap().contains(says), "{uri}: {doc}");
    }
    let collection = common::get(&app, "/edr/collections/edr").await.json();
    let cube = &collection["data_queries"]["cube"]["link"]["variables"]["output_formats"];
    assert!(cube.as_array().unwrap().contains(&Value::from("GeoTIFF")), "{cube}");
    let area = &collection["data_queries"]["area"]["link"]["variables"]["output_formats"];
    assert!(!area.as_array().unwrap().contains(&Value::from("GeoTIFF")), "{area}");
}
