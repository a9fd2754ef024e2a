//! The IIIF value window from attributes, over the window fixtures
//! (`tests/fixtures/windows`, written by `make_window_fixtures.py`): CF `valid_min` /
//! `valid_max`, `valid_range`, OME-NGFF `omero.channels[c].window` (the channel fixed on
//! the `c` axis), and the `vmin` / `vmax` query parameters overriding either end.
//!
//! Expected pixels come from first principles: the window's low end is `vmin`, else
//! `valid_min`, else `valid_range[0]`, else (for OME-NGFF images) the channel window's
//! `start`, else the smallest valid value of the array; the high end likewise with
//! `vmax`, `valid_max`, `valid_range[1]`, `end`, the largest. A value `v` shows as level
//! `round((v - lo) * 255 / (hi - lo))`, halfway rounding up, clamped to 0..=255; the fill
//! value and NaN are transparent.

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use crate::common;

use common::{Npy, get};
use serde_json::Value;

fn dir() -> std::path::PathBuf {
    common::fixtures().join("windows")
}

fn app() -> axum::Router {
    common::app_with(vec![("win", common::local_store(&dir().join("data.zarr")))], common::config(""))
}

fn manifest_entry(path: &str) -> Value {
    let m: Value = serde_json::from_slice(&std::fs::read(dir().join("manifest.json")).unwrap()).unwrap();
    m["arrays"].as_array().unwrap().iter().find(|a| a["path"] == path).unwrap().clone()
}

/// Values of `npy` as f64, `None` where fill (`None` fill: NaN) or NaN.
fn values(npy: &Npy, fill: Option<f64>) -> Vec<Option<f64>> {
    npy.data
        .chunks_exact(npy.item())
        .map(|b| {
            let v = match &npy.descr[1..] {
                "u1" => f64::from(b[0]),
                "u2" => f64::from(u16::from_le_bytes(b.try_into().unwrap())),
                "i2" => f64::from(i16::from_le_bytes(b.try_into().unwrap())),
                "f4" => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
                other => panic!("no reader for {other}"),
            };
            (Some(v) != fill && !v.is_nan()).then_some(v)
        })
        .collect()
}

fn level(v: f64, (lo, hi): (f64, f64)) -> u8 {
    // Halfway rounds up: f64::round rounds half away from zero, and (v - lo) >= 0 here
    // whenever the result is not clamped to 0 anyway.
    ((v - lo) * 255.0 / (hi - lo)).round().clamp(0.0, 255.0) as u8
}

/// The gray + alpha pixels of a PNG reply.
fn gray(reply: &common::Reply) -> Vec<[u8; 2]> {
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let mut reader = png::Decoder::new(std::io::Cursor::new(reply.body.to_vec())).read_info().unwrap();
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    assert_eq!(info.color_type, png::ColorType::GrayscaleAlpha);
    data[..info.buffer_size()].chunks_exact(2).map(|p| [p[0], p[1]]).collect()
}

fn expected(vals: &[Option<f64>], win: (f64, f64)) -> Vec<[u8; 2]> {
    vals.iter().map(|v| v.map_or([0, 0], |v| [level(v, win), 255])).collect()
}

/// The window from an array's attributes by the rule above (no OME-NGFF group here).
fn attribute_window(attrs: &Value, vals: &[Option<f64>]) -> (f64, f64) {
    let valid: Vec<f64> = vals.iter().flatten().copied().collect();
    let min = valid.iter().copied().fold(f64::INFINITY, f64::min);
    let max = valid.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = attrs["valid_min"].as_f64().or(attrs["valid_range"][0].as_f64()).unwrap_or(min);
    let hi = attrs["valid_max"].as_f64().or(attrs["valid_range"][1].as_f64()).unwrap_or(max);
    (lo, hi)
}

fn fixture(path: &str) -> (Vec<Option<f64>>, Value) {
    let entry = manifest_entry(path);
    let fill = entry["fill_value"].as_f64();
    let npy = common::expected(&dir(), path);
    (values(&npy, fill), entry["attributes"].clone())
}

#[tokio::test]
async fn cf_attributes_set_the_window() {
    let app = app();
    for (path, window) in [
        ("valid_minmax", (100.0, 700.0)),
        ("valid_range", (-1.5, 2.5)),
        // valid_min wins over valid_range[0]; valid_range[1] gives the high end.
        ("min_and_range", (10.0, 50.0)),
        // Only the low end given: the high end is the largest valid value (245; the fill
        // 255 is not a value).
        ("only_min", (20.0, 245.0)),
        ("halves", (0.0, 510.0)),
    ] {
        let (vals, attrs) = fixture(path);
        // The rule above, applied to the fixture's attributes, gives the stated window.
        assert_eq!(attribute_window(&attrs, &vals), window, "{path}");
        let r = get(&app, &format!("/iiif/3/win%2F{path}/full/max/0/gray.png")).await;
        let got = gray(&r);
        assert_eq!(got, expected(&vals, window), "{path}");
        // The windows clamp: values below and above it exist and show as 0 and 255.
        if path != "halves" {
            assert!(got.contains(&[0, 255]) && got.contains(&[255, 255]), "{path}: no clamped pixel");
        }
    }
}

#[tokio::test]
async fn halfway_values_round_up() {
    let app = app();
    // valid_range [0, 510]: value v is level v / 2, so odd values are halfway.
    let got = gray(&get(&app, "/iiif/3/win%2Fhalves/0,0,8,1/max/0/gray.png").await);
    assert_eq!(got, [[0, 255], [1, 255], [1, 255], [2, 255], [2, 255], [3, 255], [3, 255], [4, 255]]);
}

#[tokio::test]
async fn vmin_and_vmax_override_either_end() {
    let app = app();
    for (path, query, window) in [
        ("valid_minmax", "vmin=200", (200.0, 700.0)),
        ("valid_minmax", "vmax=1000", (100.0, 1000.0)),
        ("valid_minmax", "vmin=0&vmax=1200", (0.0, 1200.0)),
        ("valid_range", "vmin=0", (0.0, 2.5)),
        ("only_min", "vmax=50", (20.0, 50.0)),
        ("only_min", "vmin=-10.5&vmax=300", (-10.5, 300.0)),
    ] {
        let (vals, _) = fixture(path);
        let r = get(&app, &format!("/iiif/3/win%2F{path}/full/max/0/gray.png?{query}")).await;
        assert_eq!(gray(&r), expected(&vals, window), "{path}?{query}");
    }
    // An override that inverts the window with the other end from the attributes is the
    // attributes' problem, not a crash: vmin above valid_max shows everything at 0 or 255.
    let (vals, _) = fixture("valid_minmax");
    let r = get(&app, "/iiif/3/win%2Fvalid_minmax/full/max/0/gray.png?vmin=800").await;
    let got = gray(&r);
    let want: Vec<[u8; 2]> =
        vals.iter().map(|v| v.map_or([0, 0], |v| [if v >= 700.0 { 255 } else { 0 }, 255])).collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn omero_channel_windows_follow_the_c_index() {
    let app = app();
    let npy = common::expected(&dir(), "ome/0");
    let all = values(&npy, Some(0.0));
    let group: Value = serde_json::from_slice(&std::fs::read(dir().join("data.zarr/ome/zarr.json")).unwrap()).unwrap();
    let channels = group["attributes"]["ome"]["omero"]["channels"].as_array().unwrap().clone();
    assert_eq!(channels.len(), 3);
    for (c, channel) in channels.iter().enumerate() {
        let window = (channel["window"]["start"].as_f64().unwrap(), channel["window"]["end"].as_f64().unwrap());
        let plane = &all[c * 256..(c + 1) * 256];
        let r = get(&app, &format!("/iiif/3/win%2Fome%2F0%5B{c}%5D/full/max/0/gray.png")).await;
        assert_eq!(gray(&r), expected(plane, window), "channel {c} window {window:?}");
        // The query overrides the channel's window too.
        let r = get(&app, &format!("/iiif/3/win%2Fome%2F0%5B{c}%5D/full/max/0/gray.png?vmax=250")).await;
        assert_eq!(gray(&r), expected(plane, (window.0, 250.0)), "channel {c} with vmax");
    }
}
