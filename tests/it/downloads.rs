//! Region downloads (`format=nc`, `docs/downloads.md`): the files read back by an
//! independent reader (the `netcdf3` crate) hold the values and labels xarray gave for the
//! same label selections (`tests/fixtures/analysis/cases.json`), packed values stay packed,
//! the bytes are deterministic and revalidate with 304 before any chunk is read, and bad
//! requests get problem documents. xarray (netCDF4, scipy), `ncdump`, GDAL and pyproj open
//! the files in `.ci/downloads.sh`.

#![allow(clippy::unwrap_used, clippy::float_cmp)] // exact expected values

use crate::common;

use netcdf3::{DataVector, FileReader};
use serde_json::Value;

pub fn app() -> axum::Router {
    let dir = common::fixtures().join("analysis");
    common::app_with(vec![("analysis", common::local_store(&dir.join("analysis.zarr")))], common::config(""))
}

pub fn case(name: &str) -> Value {
    let path = common::fixtures().join("analysis/cases.json");
    let cases: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    cases.into_iter().find(|c| c["name"] == name).unwrap()
}

/// The download of `uri` (fetched as a browser fetches it), opened by `netcdf3`.
async fn open(app: &axum::Router, uri: &str) -> (common::Reply, FileReader, tempfile::TempDir) {
    let reply = common::browser_get(app, uri).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(reply.header("content-type"), "application/x-netcdf");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("download.nc");
    std::fs::write(&path, &reply.body).unwrap();
    let reader = FileReader::open(&path).unwrap_or_else(|e| panic!("{uri}: netcdf3 cannot open it: {e:?}"));
    (reply, reader, dir)
}

fn doubles(v: DataVector) -> Vec<f64> {
    match v {
        DataVector::F64(v) => v,
        DataVector::F32(v) => v.into_iter().map(f64::from).collect(),
        DataVector::I16(v) => v.into_iter().map(f64::from).collect(),
        DataVector::I32(v) => v.into_iter().map(f64::from).collect(),
        other => panic!("unexpected type {:?}", other.data_type()),
    }
}

fn flat(values: &Value) -> Vec<Option<f64>> {
    match values {
        Value::Array(list) => list.iter().flat_map(flat).collect(),
        v => vec![v.as_f64()],
    }
}

/// The label selection of case `name`, downloaded: values decoded as CF readers do (from
/// the file's own attributes), shape and labels equal xarray's answer.
async fn check_case(name: &str, var: &str) {
    let case = case(name);
    let expected = &case["expected"];
    let uri = case["url"].as_str().unwrap().replace("format=json", "format=nc");
    let (reply, mut file, _dir) = open(&app(), &uri).await;
    assert_eq!(reply.header("zarr-selection"), expected["zarr_selection"].as_str().unwrap_or(""), "{name}");
    let data = file.data_set();
    let shape: Vec<usize> = data.get_var(var).unwrap().get_dims().iter().map(|d| d.size()).collect();
    let want_shape: Vec<usize> =
        expected["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    assert_eq!(shape, want_shape, "{name}");
    let scale = data.get_var_attr_f64(var, "scale_factor").map_or(1.0, |s| s[0]);
    let offset = data.get_var_attr_f64(var, "add_offset").map_or(0.0, |s| s[0]);
    let fill = data
        .get_var_attr(var, "_FillValue")
        .map(|a| a.get_i16().map(|v| f64::from(v[0])).or(a.get_f32().map(|v| f64::from(v[0]))).unwrap());
    let stored = doubles(file.read_var(var).unwrap());
    let decoded: Vec<Option<f64>> =
        stored.iter().map(|&v| (!v.is_nan() && Some(v) != fill).then_some(v * scale + offset)).collect();
    let want = flat(&expected["values"]);
    assert_eq!(decoded.len(), want.len(), "{name}");
    for (i, (got, want)) in decoded.iter().zip(&want).enumerate() {
        match (got, want) {
            (Some(g), Some(w)) => assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{name}[{i}]: {g} vs {w}"),
            _ => assert_eq!(got.is_none(), want.is_none(), "{name}[{i}]: {got:?} vs {want:?}"),
        }
    }
    for (dim, labels) in expected["coords"].as_object().unwrap() {
        let got = doubles(file.read_var(dim).unwrap());
        let want: Vec<f64> = labels.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(got, want, "{name}: labels of {dim}");
    }
}

#[tokio::test]
async fn label_selections_download_as_xarray_read_them() {
    // Packed int16 with the CF fill, float32 on descending latitude, a longitude range
    // across the stored seam (two reads).
    check_case("sel_packed_pr_fill", "pr").await;
    check_case("sel_range_descending_lat", "tas").await;
    check_case("sel_lon_range_across_seam", "tas").await;
}

#[tokio::test]
async fn packed_values_stay_packed_with_their_attributes_and_dropped_time_is_a_scalar() {
    let uri = "/v1/slice/analysis/daily/pr?s=134,28:33,46:57&format=nc";
    let (reply, mut file, _dir) = open(&app(), uri).await;
    assert_eq!(&reply.body[..4], b"CDF\x02", "only classic types: CDF-2");
    assert_eq!(reply.header("content-disposition"), "attachment; filename=\"pr.nc\"");
    assert_eq!((reply.header("zarr-shape"), reply.header("zarr-data-type")), ("5,11", "int16"));
    let data = file.data_set();
    assert_eq!(data.var_data_type("pr"), Some(netcdf3::DataType::I16));
    assert_eq!(data.get_var_attr_f64("pr", "scale_factor"), Some(&[0.01][..]));
    assert_eq!(data.get_var_attr_f64("pr", "add_offset"), Some(&[5.0][..]));
    assert_eq!(data.get_var_attr_i16("pr", "_FillValue"), Some(&[-32768i16][..]));
    assert_eq!(data.get_var_attr_as_string("pr", "coordinates").as_deref(), Some("time"));
    // The int64 CF time is written as double (exact), with its units and calendar.
    assert_eq!(data.var_data_type("time"), Some(netcdf3::DataType::F64));
    assert!(data.get_var("time").unwrap().get_dims().is_empty(), "a scalar coordinate");
    assert_eq!(data.get_var_attr_as_string("time", "calendar").as_deref(), Some("noleap"));
    assert_eq!(data.get_var_attr_as_string("time", "units").as_deref(), Some("days since 2001-01-01"));
    assert_eq!(data.get_global_attr_as_string("Conventions").as_deref(), Some("CF-1.10"));
    assert_eq!(file.read_var_f64("time").unwrap(), [134.0], "day 134 after 2001-01-01 is 2001-05-15 (noleap)");
    let stored = file.read_var_i16("pr").unwrap();
    assert_eq!(stored.len(), 55);
    assert!(stored.contains(&-32768), "the NaN block is stored as the fill");
}

/// The analysis store behind a store that counts what is read, with the data caches off: a
/// download that read its data would be seen reading the store.
pub fn counting_app() -> (axum::Router, std::sync::Arc<common::CountingStore>) {
    let counting = common::CountingStore::new(std::sync::Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(common::fixtures().join("analysis/analysis.zarr"))
            .unwrap(),
    ));
    let store = zarrd_core::store::Store::new(counting.clone(), object_store::path::Path::default());
    let caches_off = "[cache]\nchunk_bytes = 0\nresponse_bytes = 0\n";
    (common::app_with(vec![("analysis", store)], common::config(caches_off)), counting)
}

#[tokio::test]
async fn downloads_are_deterministic_and_revalidate_before_reading() {
    let (app, counting) = counting_app();
    let uri = "/v1/slice/analysis/daily/tas?s=0:100,::4,::4&format=nc";
    let first = common::browser_get(&app, uri).await;
    let second = common::browser_get(&app, uri).await;
    assert_eq!(first.status, 200, "{}", first.describe());
    assert_eq!(first.body, second.body, "the same request makes the same bytes");
    let etag = first.header("etag").to_owned();
    assert!(!etag.is_empty());
    let plain = common::get(&app, uri).await;
    assert_eq!(plain.header("content-length"), plain.body.len().to_string(), "the length is known up front");
    assert_eq!(plain.body, first.body);
    // The first download read data chunks (so the check below can see one).
    assert!(counting.got.lock().unwrap().iter().any(|k| k.starts_with("daily/tas/c")));
    counting.got.lock().unwrap().clear();
    let again = common::get_with(&app, uri, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, 304, "{}", again.describe());
    let got = counting.got.lock().unwrap().clone();
    assert!(!got.iter().any(|k| k.starts_with("daily/tas/c")), "a data chunk was read for the 304: {got:?}");
    // Another selection is another file.
    let other = common::browser_get(&app, "/v1/slice/analysis/daily/tas?s=0:100,::4,::5&format=nc").await;
    assert_ne!(other.header("etag"), etag);
}

#[tokio::test]
async fn bad_downloads_get_problem_documents() {
    let app = app();
    for (uri, status, says) in [
        ("/v1/slice/analysis/daily/tas?s=0:0,:,:&format=nc", 422, "length 0"),
        ("/v1/slice/analysis/daily/tas?s=0:2&format=nc&vmin=0", 400, "format=png"),
        ("/v1/slice/analysis/daily/tas?s=0:2&sel=lat:0..10&format=nc", 400, "not both"),
        ("/v1/slice/analysis/daily/tas?s=0:2,:,:,0&format=nc", 400, ""),
        ("/v1/slice/analysis/daily/tas?sel=lat:1000..2000&format=nc", 422, "length 0"),
        ("/v1/slice/analysis/daily/nope?format=nc", 404, ""),
    ] {
        let reply = common::get(&app, uri).await;
        let doc = reply.assert_problem(status);
        assert!(doc["detail"].as_str().unwrap().contains(says), "{uri}: {doc}");
    }
    // A type NetCDF cannot hold: 422 naming it.
    let dtypes = common::app_with(
        vec![("d", common::local_store(&common::fixtures().join("dtypes/data.zarr")))],
        common::config(""),
    );
    let doc = common::get(&dtypes, "/v1/slice/d/dt_s?format=nc").await.assert_problem(422);
    assert!(doc["detail"].as_str().unwrap().contains("NetCDF cannot hold"), "{doc}");
    // Beyond limits.max_response_bytes: 413 before any read.
    let dir = common::fixtures().join("analysis");
    let small = common::app_with(
        vec![("analysis", common::local_store(&dir.join("analysis.zarr")))],
        common::config("[limits]\nmax_response_bytes = 100000\n"),
    );
    let doc = common::get(&small, "/v1/slice/analysis/daily/tas?format=nc").await.assert_problem(413);
    assert!(doc["detail"].as_str().unwrap().contains("NetCDF"), "{doc}");
}

fn edr_app() -> axum::Router {
    let f = common::fixtures();
    common::app_with(
        vec![
            ("edr", common::local_store(&f.join("edr/edr.zarr"))),
            ("analysis", common::local_store(&f.join("analysis/analysis.zarr"))),
            ("coastal", common::local_store(&f.join("curvilinear/coastal.zarr"))),
        ],
        common::config(""),
    )
}

/// Every area and cube case of `tests/fixtures/edr/cases.json` (answers xarray computed),
/// asked as `f=NetCDF`: each parameter's values as float64 (NaN where the answer has
/// null), the x/y axes the CoverageJSON domain has, the levels, one step per time.
#[tokio::test]
async fn edr_area_and_cube_download_as_xarray_answered_them() {
    let app = edr_app();
    let cases: Vec<Value> =
        serde_json::from_slice(&std::fs::read(common::fixtures().join("edr/cases.json")).unwrap()).unwrap();
    let mut checked = 0;
    for case in cases.iter().filter(|c| c["status"] == 200 && c["covjson"]["domainType"] == "Grid") {
        let url = case["url"].as_str().unwrap();
        if !(url.contains("/area?") || url.contains("/cube?")) {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let (reply, mut file, _dir) = open(&app, &format!("{url}&f=NetCDF")).await;
        assert_eq!(&reply.body[..4], b"CDF\x02", "{name}");
        let cov = &case["covjson"];
        let axes = &cov["axes"];
        for (axis, var) in [("x", "lon"), ("y", "lat")] {
            let want: Vec<f64> = axes[axis].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert_eq!(doubles(file.read_var(var).unwrap()), want, "{name}: {var}");
        }
        if let Some(z) = axes["z"].as_array() {
            let want: Vec<f64> = z.iter().map(|v| v.as_f64().unwrap()).collect();
            let dims: Vec<String> = file.data_set().get_dims().iter().map(|d| d.name().clone()).collect();
            let vertical = dims.iter().find(|n| !["time", "lat", "lon"].contains(&n.as_str())).unwrap();
            assert_eq!(doubles(file.read_var(vertical).unwrap()), want, "{name}: levels");
        }
        if let Some(t) = axes["t"].as_array() {
            assert_eq!(file.data_set().dim_size("time"), Some(t.len()), "{name}: steps");
        }
        for (parameter, range) in cov["ranges"].as_object().unwrap() {
            let got = file.read_var_f64(parameter).unwrap();
            let want = flat(&range["values"]);
            assert_eq!(got.len(), want.len(), "{name}: {parameter}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                match w {
                    Some(w) => assert!(*g == *w || (*g as f32) == (*w as f32), "{name} {parameter}[{i}]: {g} vs {w}"),
                    None => assert!(g.is_nan(), "{name} {parameter}[{i}]: {g}, want missing"),
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked} cases");
}

#[tokio::test]
async fn edr_netcdf_is_for_grid_coverages() {
    let app = edr_app();
    let doc = common::get(&app, "/edr/collections/edr/position?coords=POINT(0%200)&f=NetCDF").await.assert_problem(400);
    assert!(doc["detail"].as_str().unwrap().contains("area and cube"), "{doc}");
    let curvilinear = "/edr/collections/coastal/cube?bbox=-70,40,-69,41&parameter-name=temp&f=NetCDF";
    let doc = common::get(&app, curvilinear).await.assert_problem(422);
    assert!(doc["detail"].as_str().unwrap().contains("curvilinear"), "{doc}");
    let collection = common::get(&app, "/edr/collections/edr").await.json();
    assert!(collection["output_formats"].as_array().unwrap().contains(&Value::from("NetCDF")));
    let cube = &collection["data_queries"]["cube"]["link"]["variables"]["output_formats"];
    assert!(cube.as_array().unwrap().contains(&Value::from("NetCDF")), "{cube}");
    let position = &collection["data_queries"]["position"]["link"]["variables"]["output_formats"];
    assert!(!position.as_array().unwrap().contains(&Value::from("NetCDF")), "{position}");
}
