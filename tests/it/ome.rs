//! OME-Zarr images written by ome-zarr-py 0.21 and ngff-zarr 0.50 (0.4 and 0.5; 2-D, 3-D
//! and 5-D; levels at `s0` and at `scale0/image`; labels; a plate; a bioformats2raw
//! layout), from `tests/fixtures/ome` (`make_ome_fixtures.py`). Expected values are
//! zarr-python's reads; expected tiles are computed by that script from the composite and
//! label formulas of `docs/ome-zarr.md`, never from zarrd's output.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{CountingStore, app_with, config, get, local_store, parse_npy};
use serde_json::Value;

fn ome_dir() -> std::path::PathBuf {
    common::fixtures().join("ome")
}

fn manifest() -> Value {
    serde_json::from_slice(&std::fs::read(ome_dir().join("manifest.json")).unwrap()).unwrap()
}

/// The dataset name an image is served under: its folder name without `.ome.zarr`.
fn dataset(image: &str) -> &str {
    image.trim_end_matches(".ome.zarr")
}

const IMAGES: [&str; 7] = [
    "ozp04_5d.ome.zarr",
    "ozp05_5d.ome.zarr",
    "ozp05_2d.ome.zarr",
    "nz05_cyx.ome.zarr",
    "nz04_yx.ome.zarr",
    "plate04.ome.zarr",
    "bf2raw05.ome.zarr",
];

/// Every image as a dataset of its own.
fn app(extra: &str) -> axum::Router {
    let stores = IMAGES.iter().map(|i| (dataset(i), local_store(&ome_dir().join("images").join(i)))).collect();
    app_with(stores, config(extra))
}

/// The identifier of `path` in `image` with axes fixed as `fixed` (`t=1,z=2`), encoded.
fn identifier(image: &str, path: &str, fixed: &str) -> String {
    let mut text = format!("{}/{path}", dataset(image));
    if !fixed.is_empty() {
        text = format!("{text}[{fixed}]");
    }
    percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// RGBA pixels of a PNG (gray + alpha expanded).
fn rgba(reply: &common::Reply) -> (usize, usize, Vec<u8>) {
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let mut reader = png::Decoder::new(std::io::Cursor::new(reply.body.to_vec())).read_info().unwrap();
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    data.truncate(info.buffer_size());
    let data = match info.color_type {
        png::ColorType::Rgba => data,
        png::ColorType::GrayscaleAlpha => data.chunks(2).flat_map(|p| [p[0], p[0], p[0], p[1]]).collect(),
        other => panic!("unexpected colour type {other:?}"),
    };
    (info.width as usize, info.height as usize, data)
}

#[tokio::test]
async fn every_array_at_every_level_reads_bit_exact() {
    let app = app("");
    let arrays = manifest()["arrays"].as_array().unwrap().clone();
    assert!(arrays.len() >= 30);
    for a in arrays {
        let (image, path) = (a["image"].as_str().unwrap(), a["path"].as_str().unwrap());
        let want =
            parse_npy(&std::fs::read(ome_dir().join("expected").join(image).join(format!("{path}.npy"))).unwrap());
        let r = get(&app, &format!("/v1/slice/{}/{path}?format=npy", dataset(image))).await;
        assert_eq!(r.status, 200, "{image} {path}: {}", r.describe());
        let got = parse_npy(&r.body);
        assert_eq!((got.shape, got.descr.clone()), (want.shape.clone(), want.descr.clone()), "{image} {path}");
        assert!(got.data == want.data, "{image} {path}: values differ");
    }
}

#[tokio::test]
async fn composites_and_labels_match_the_formulas() {
    let app = app("");
    for t in manifest()["tiles"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let id = identifier(t["image"].as_str().unwrap(), t["path"].as_str().unwrap(), t["fixed"].as_str().unwrap());
        let r = get(&app, &format!("/iiif/3/{id}/{}", t["request"].as_str().unwrap())).await;
        let (w, h, got) = rgba(&r);
        let want = parse_npy(&std::fs::read(ome_dir().join("tiles").join(format!("{name}.npy"))).unwrap());
        assert_eq!(want.shape, vec![h as u64, w as u64, 4], "{name}");
        let differ = got.chunks(4).zip(want.data.chunks(4)).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "{name}: {differ} of {} pixels differ", w * h);
        // `gray` is the composite's luma (ITU-R BT.601), alpha kept.
        let gray = t["request"].as_str().unwrap().replace("default.png", "gray.png");
        let (.., got) = rgba(&get(&app, &format!("/iiif/3/{id}/{gray}")).await);
        for (g, p) in got.chunks(4).zip(want.data.chunks(4)) {
            let luma = (0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])).round() as u8;
            assert_eq!(g, [luma, luma, luma, p[3]], "{name} gray");
        }
    }
}

#[tokio::test]
async fn info_lists_the_stored_levels_and_the_physical_scale() {
    let app = app("");
    // ome-zarr-py 0.4 (no dimension_names), 0.5, and ngff-zarr's nested `scaleN/image`.
    for (image, sizes, scale) in [
        ("ozp04_5d.ome.zarr", [16, 32, 64], 0.0005),
        ("ozp05_5d.ome.zarr", [16, 32, 64], 0.0005),
        ("nz05_cyx.ome.zarr", [32, 64, 128], 0.00065),
    ] {
        let r = get(&app, &format!("/iiif/3/{}/info.json", identifier(image, "", ""))).await;
        assert_eq!(r.status, 200, "{}", r.describe());
        let doc = r.json();
        let listed: Vec<u64> = doc["sizes"].as_array().unwrap().iter().map(|s| s["width"].as_u64().unwrap()).collect();
        assert_eq!(listed, sizes, "{image}: {doc}");
        assert_eq!(doc["tiles"][0]["scaleFactors"], serde_json::json!([1, 2, 4]), "{image}");
        let service = &doc["service"][0];
        assert_eq!(service["profile"], "http://iiif.io/api/annex/services/physdim");
        assert_eq!(service["physicalUnits"], "mm");
        assert!((service["physicalScale"].as_f64().unwrap() - scale).abs() < 1e-12, "{image}: {service}");
    }
    // A level array named directly has its coarser levels; a 2-D image without units no service.
    let r = get(&app, &format!("/iiif/3/{}/info.json", identifier("nz04_yx.ome.zarr", "scale1/image", ""))).await;
    let doc = r.json();
    assert_eq!(doc["width"], 64);
    assert_eq!(doc["tiles"][0]["scaleFactors"], serde_json::json!([1, 2]));
}

#[tokio::test]
async fn one_channel_is_drawn_with_its_own_window() {
    // OME-Zarr 0.4 has no dimension_names: `[c=1]` finds the channel axis in `multiscales`
    // and channel 1's window (300..3000), not channel 0's.
    let app = app("");
    let want = parse_npy(&std::fs::read(ome_dir().join("expected/ozp04_5d.ome.zarr/s0.npy")).unwrap());
    let r =
        get(&app, &format!("/iiif/3/{}/full/max/0/gray.png", identifier("ozp04_5d.ome.zarr", "", "t=1,c=1,z=1"))).await;
    let (w, h, got) = rgba(&r);
    assert_eq!((w, h), (64, 64));
    // Element [1, 1, 1, y, x] of the 2 x 3 x 2 x 64 x 64 array.
    let base = ((3 + 1) * 2 + 1) * 64 * 64;
    for i in 0..w * h {
        let v = f64::from(u16::from_le_bytes([want.data[2 * (base + i)], want.data[2 * (base + i) + 1]]));
        let level = ((v - 300.0) * 255.0 / 2700.0).round().clamp(0.0, 255.0) as u8;
        assert_eq!(&got[4 * i..4 * i + 4], &[level, level, level, 255], "pixel {i}");
    }
    // Leading indices still work, unknown axes and plane axes are refused.
    let r = get(&app, &format!("/iiif/3/{}/full/max/0/gray.png", identifier("ozp04_5d.ome.zarr", "", "1,1,1"))).await;
    assert_eq!(rgba(&r).2, got);
    for fixed in ["q=1", "y=3", "t=1,t=1"] {
        let r = get(&app, &format!("/iiif/3/{}/full/max/0/gray.png", identifier("ozp04_5d.ome.zarr", "", fixed))).await;
        assert!(matches!(r.status.as_u16(), 400 | 404), "{fixed}: {}", r.describe());
    }
    let r =
        get(&app, &format!("/iiif/3/{}/full/max/0/default.png?vmin=0", identifier("ozp05_5d.ome.zarr", "", ""))).await;
    assert!(r.assert_problem(400)["detail"].as_str().unwrap().contains("[c=K]"));
}

#[tokio::test]
async fn reduced_sizes_read_the_stored_level() {
    for (image, size, level_chunks) in [
        // 2 active channels; level 2 is 16 x 16 (one 32 x 32 chunk), level 0 would be 4 each.
        ("ozp05_5d.ome.zarr", "16,", 2),
        ("ozp04_5d.ome.zarr", "16,", 2),
        // ngff-zarr: 2 channels, scale2/image is 32 x 32 (one chunk), scale0/image 16 each.
        ("nz05_cyx.ome.zarr", "32,", 2),
        ("nz05_cyx.ome.zarr", "64,", 2 * 4),
    ] {
        let backend = common::memory_store(&ome_dir().join("images").join(image)).await.backend();
        let counting = CountingStore::new(backend);
        let store = zarrd_core::store::Store::new(counting.clone(), object_store::path::Path::default());
        let app = app_with(vec![(dataset(image), store)], config("[cache]\nchunk_bytes = 0"));
        let id = identifier(image, "", if image.starts_with("ozp") { "t=1,z=1" } else { "" });
        // Metadata first, so only chunk reads are counted.
        assert_eq!(get(&app, &format!("/iiif/3/{id}/info.json")).await.status, 200);
        let before = counting.total();
        let r = get(&app, &format!("/iiif/3/{id}/full/{size}/0/default.png")).await;
        assert_eq!(r.status, 200, "{}", r.describe());
        assert_eq!(counting.total() - before, level_chunks, "{image} {size}: {:?}", counting.counts());
    }
}

#[tokio::test]
async fn compatibility_views_speak_their_format_s_ome_version() {
    let app = app("");
    for image in ["ozp04_5d.ome.zarr", "ozp05_5d.ome.zarr"] {
        let ds = dataset(image);
        // v2: OME 0.4 at the top of .zattrs, a version in each multiscale.
        let attrs = get(&app, &format!("/compat/v2/{ds}/.zattrs")).await.json();
        assert!(attrs.get("ome").is_none(), "{image}: {attrs}");
        assert_eq!(attrs["multiscales"][0]["version"], "0.4", "{image}");
        assert_eq!(attrs["multiscales"][0]["axes"][1]["type"], "channel");
        assert_eq!(attrs["omero"]["channels"][1]["color"], "00FF00");
        let labels = get(&app, &format!("/compat/v2/{ds}/labels/cells/.zattrs")).await.json();
        assert_eq!(labels["image-label"]["version"], "0.4", "{image}: {labels}");
        let consolidated = get(&app, &format!("/compat/v2/{ds}/.zmetadata")).await.json();
        assert_eq!(consolidated["metadata"][".zattrs"]["multiscales"][0]["version"], "0.4");
        // v3: OME 0.5 under `ome`, no version in the multiscales, axes as dimension names.
        let group = get(&app, &format!("/compat/v3/{ds}/zarr.json")).await.json();
        let ome = &group["attributes"]["ome"];
        assert_eq!(ome["version"], "0.5", "{image}: {group}");
        assert!(ome["multiscales"][0].get("version").is_none());
        assert!(group["attributes"].get("multiscales").is_none());
        assert_eq!(ome["omero"]["channels"][0]["label"], "DAPI");
        let level = &group["consolidated_metadata"]["metadata"]["s1"];
        assert_eq!(level["dimension_names"], serde_json::json!(["t", "c", "z", "y", "x"]), "{image}");
        let array = get(&app, &format!("/compat/v3/{ds}/s0/zarr.json")).await.json();
        assert_eq!(array["dimension_names"], serde_json::json!(["t", "c", "z", "y", "x"]), "{image}");
        let label = get(&app, &format!("/compat/v3/{ds}/labels/cells/zarr.json")).await.json();
        assert!(label["attributes"]["ome"]["image-label"].get("version").is_none(), "{label}");
        // And the data are the same through either view.
        for view in ["v2/{ds}/s2/0/0/0/0/0", "v3/{ds}/s2/c/0/0/0/0/0"] {
            let r = get(&app, &format!("/compat/{}", view.replace("{ds}", ds))).await;
            assert_eq!(r.status, 200, "{view}: {}", r.describe());
        }
    }
}

/// The folder of images as one dataset (a collection), and one holding no Zarr root.
fn collection_app() -> axum::Router {
    app_with(
        vec![("coll", local_store(&ome_dir().join("images"))), ("none", local_store(&ome_dir().join("tiles")))],
        config(""),
    )
}

#[tokio::test]
async fn a_folder_of_images_is_one_tree_on_every_route() {
    let app = collection_app();
    let doc = get(&app, "/v1/datasets/coll").await.json();
    let nodes = doc["nodes"].as_array().unwrap();
    let node = |path: &str| nodes.iter().find(|n| n["path"] == path).unwrap_or_else(|| panic!("no {path}: {doc}"));
    assert_eq!(node("")["node_type"], "group");
    let plate = &node("plate04.ome.zarr")["ome"];
    assert_eq!(plate["kind"], "plate");
    assert_eq!(plate["wells"], serde_json::json!(["A/1", "A/2", "B/1"]));
    assert_eq!(plate["rows"], serde_json::json!(["A", "B"]));
    assert_eq!(node("plate04.ome.zarr/A/1")["ome"]["fields"], serde_json::json!(["0", "1"]));
    assert_eq!(node("plate04.ome.zarr/A/1/1")["ome"]["kind"], "image");
    let bf = &node("bf2raw05.ome.zarr")["ome"];
    assert_eq!((bf["kind"].as_str(), bf["series"].clone()), (Some("bioformats2raw"), serde_json::json!(["0", "1"])));
    let image = &node("ozp04_5d.ome.zarr")["ome"];
    assert_eq!((image["kind"].as_str(), image["version"].as_str()), (Some("image"), Some("0.4")));
    assert_eq!(image["channels"], serde_json::json!(["DAPI", "GFP", "mCherry"]));
    assert_eq!(node("ozp05_5d.ome.zarr/labels/cells")["ome"]["kind"], "label-image");
    assert_eq!(node("nz05_cyx.ome.zarr/scale1/image")["shape"], serde_json::json!([2, 64, 64]));
    // Healthy, not failing.
    let list = get(&app, "/v1/datasets").await.json();
    let coll = list["datasets"].as_array().unwrap().iter().find(|d| d["name"] == "coll").unwrap().clone();
    assert_eq!(coll["health"]["status"], "ok", "{coll}");
    // The compatibility views and /zarr see a group holding the images.
    let root = get(&app, "/compat/v3/coll/zarr.json").await.json();
    let members = &root["consolidated_metadata"]["metadata"];
    assert_eq!(members["ozp04_5d.ome.zarr"]["attributes"]["ome"]["version"], "0.5");
    assert_eq!(members["ozp04_5d.ome.zarr/s0"]["dimension_names"], serde_json::json!(["t", "c", "z", "y", "x"]));
    let v2 = get(&app, "/compat/v2/coll/ozp05_5d.ome.zarr/.zattrs").await.json();
    assert_eq!(v2["multiscales"][0]["version"], "0.4");
    assert_eq!(get(&app, "/compat/v2/coll/.zgroup").await.json()["zarr_format"], 2);
    assert_eq!(get(&app, "/zarr/coll/zarr.json").await.json()["node_type"], "group");
    assert_eq!(get(&app, "/zarr/coll/.zgroup").await.json()["zarr_format"], 2);
    // IIIF and slices of the images inside, as when each is its own dataset.
    for t in manifest()["tiles"].as_array().unwrap().iter().take(3) {
        let (image, fixed) = (t["image"].as_str().unwrap(), t["fixed"].as_str().unwrap());
        let text = format!("coll/{image}[{fixed}]");
        let id = percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC).to_string();
        let (.., got) = rgba(&get(&app, &format!("/iiif/3/{id}/{}", t["request"].as_str().unwrap())).await);
        let want = parse_npy(
            &std::fs::read(ome_dir().join("tiles").join(format!("{}.npy", t["name"].as_str().unwrap()))).unwrap(),
        );
        assert!(got == want.data, "{text}");
    }
    // A folder without Zarr roots is still no dataset root.
    get(&app, "/v1/datasets/none").await.assert_problem(404);
    get(&app, "/zarr/none/zarr.json").await.assert_problem(404);
}

/// An OME-Zarr 0.5 image `z, y, x` (4 x 32 x 32, uint8) whose level `s1` also halves z
/// (it holds other planes) and `s2` keeps z; each level one constant, so pixels tell which
/// level was read.
async fn image_reducing_z() -> zarrd_core::store::Store {
    use object_store::ObjectStoreExt;
    let mem = std::sync::Arc::new(object_store::memory::InMemory::new());
    let put = |key: String, v: Value| {
        let mem = std::sync::Arc::clone(&mem);
        async move { mem.put(&object_store::path::Path::from(key), v.to_string().into_bytes().into()).await.unwrap() }
    };
    let levels = [("s0", [4u64, 32, 32], 1.0, 10u8), ("s1", [2, 16, 16], 2.0, 100), ("s2", [4, 8, 8], 4.0, 200)];
    let datasets: Vec<Value> = levels
        .iter()
        .map(|(p, _, f, _)| {
            let z = if *p == "s1" { 2.0 } else { 1.0 };
            serde_json::json!({"path": p, "coordinateTransformations": [{"type": "scale", "scale": [z, f, f]}]})
        })
        .collect();
    let axes = serde_json::json!([{"name": "z", "type": "space"}, {"name": "y", "type": "space"}, {"name": "x", "type": "space"}]);
    let ome = serde_json::json!({"version": "0.5", "multiscales": [{"axes": axes, "datasets": datasets}]});
    put("zarr.json".into(), serde_json::json!({"zarr_format": 3, "node_type": "group", "attributes": {"ome": ome}}))
        .await;
    for (path, shape, _, value) in levels {
        let meta = serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}],
        });
        put(format!("{path}/zarr.json"), meta).await;
        let n = usize::try_from(shape.iter().product::<u64>()).unwrap();
        mem.put(&object_store::path::Path::from(format!("{path}/c/0/0/0")), vec![value; n].into()).await.unwrap();
    }
    zarrd_core::store::Store::new(mem, object_store::path::Path::default())
}

#[tokio::test]
async fn a_level_that_reduces_z_is_not_used_for_a_plane() {
    let app = app_with(vec![("zr", image_reducing_z().await)], config(""));
    let info = get(&app, "/iiif/3/zr%2F/info.json").await.json();
    assert_eq!(info["tiles"][0]["scaleFactors"], serde_json::json!([1, 4]), "{info}");
    let widths: Vec<u64> = info["sizes"].as_array().unwrap().iter().map(|s| s["width"].as_u64().unwrap()).collect();
    assert_eq!(widths, [8, 32]);
    // No omero, no channel axis: one plane, gray through the window 0..255 (levels = values).
    // 16 px is the 32 px level 0 halved on the fly (s1 is not used), 8 px is s2.
    for (size, level) in [("32,", 10), ("16,", 10), ("8,", 200)] {
        let uri = format!("/iiif/3/zr%2F%5Bz%3D3%5D/full/{size}/0/gray.png?vmin=0&vmax=255");
        let (.., px) = rgba(&get(&app, &uri).await);
        assert!(px.chunks(4).all(|p| p == [level, level, level, 255]), "{size}: {:?}", &px[..4]);
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() { copy_dir(&p, &target) } else { std::fs::copy(&p, &target).map(drop).unwrap() }
    }
}

#[tokio::test]
async fn collections_hold_roots_at_most_two_levels_down() {
    let image = ome_dir().join("images/bf2raw05.ome.zarr");
    let (two, three) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    copy_dir(&image, &two.path().join("run1/bf.ome.zarr"));
    copy_dir(&image, &three.path().join("a/b/bf.ome.zarr"));
    let app = app_with(vec![("two", local_store(two.path())), ("three", local_store(three.path()))], config(""));
    let doc = get(&app, "/v1/datasets/two").await.json();
    let paths: Vec<&str> = doc["nodes"].as_array().unwrap().iter().filter_map(|n| n["path"].as_str()).collect();
    assert!(paths.contains(&"run1/bf.ome.zarr/0/s0"), "{paths:?}");
    let r = get(&app, "/v1/slice/two/run1/bf.ome.zarr/1/s1?format=npy").await;
    assert_eq!(parse_npy(&r.body).shape, [1, 16, 16]);
    get(&app, "/v1/datasets/three").await.assert_problem(404);
}

#[tokio::test]
async fn channels_without_omero_are_composited_over_the_value_range() {
    // A plate field written without `omero`: its one channel is white over the array-wide
    // range of valid values (fill 0 aside), t = (v - min) / (max - min).
    let app = app("");
    let want = parse_npy(&std::fs::read(ome_dir().join("expected/plate04.ome.zarr/A/1/0/s0.npy")).unwrap());
    let values: Vec<f64> = want.data.chunks(2).map(|b| f64::from(u16::from_le_bytes([b[0], b[1]]))).collect();
    let valid = values.iter().copied().filter(|&v| v != 0.0);
    let (lo, hi) = valid.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let (w, h, got) = rgba(
        &get(&app, &format!("/iiif/3/{}/full/max/0/default.png", identifier("plate04.ome.zarr", "A/1/0", ""))).await,
    );
    assert_eq!((w, h), (32, 32));
    for (px, &v) in got.chunks(4).zip(&values) {
        let level = (((v - lo) / (hi - lo)).clamp(0.0, 1.0) * 255.0 + 0.5).floor() as u8;
        assert_eq!(px, [level, level, level, 255]);
    }
}

#[tokio::test]
async fn a_viewer_chooses_the_channels_their_windows_and_colours() {
    // ozp05_5d[t=1,z=1] with mCherry (2, inactive in `omero`) in white over 100..2000 and
    // DAPI (0) in its own blue and window 200..2500, from zarr-python's values and the
    // composite formula: sum of clamp((v - lo) / (hi - lo), 0, 1) x colour, clipped, rounded
    // half up.
    let app = app("");
    let want = parse_npy(&std::fs::read(ome_dir().join("expected/ozp05_5d.ome.zarr/s0.npy")).unwrap());
    let value = |c: usize, i: usize| {
        let at = 2 * (((3 + c) * 2 + 1) * 64 * 64 + i);
        f64::from(u16::from_le_bytes([want.data[at], want.data[at + 1]]))
    };
    let id = identifier("ozp05_5d.ome.zarr", "", "t=1,z=1");
    let url = |q: &str| format!("/iiif/3/{id}/full/max/0/default.png{q}");
    let own = get(&app, &url("")).await;
    let chosen = get(&app, &url("?channels=2,0&windows=100:2000,&colors=FFFFFF,")).await;
    let (w, h, got) = rgba(&chosen);
    assert_eq!((w, h), (64, 64));
    let share = |v: f64, lo: f64, hi: f64| ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
    let round = |s: f64| (s.clamp(0.0, 255.0) + 0.5).floor() as u8;
    for i in 0..w * h {
        let (red, blue) = (share(value(2, i), 100.0, 2000.0), share(value(0, i), 200.0, 2500.0));
        let px = [round(red * 255.0), round(red * 255.0), round(red * 255.0 + blue * 255.0), 255];
        assert_eq!(&got[4 * i..4 * i + 4], &px, "pixel {i}");
    }
    // The choice is part of the tile's identity: its own ETag, and the default image
    // (cached first) is not served for it, nor it for the default.
    assert_ne!(own.header("etag"), chosen.header("etag"));
    assert_ne!(rgba(&own).2, got);
    assert_eq!(rgba(&get(&app, &url("")).await).2, rgba(&own).2);
    let other = get(&app, &url("?channels=2,0&windows=100:2001,&colors=FFFFFF,")).await;
    assert_ne!(other.header("etag"), chosen.header("etag"));
    // No channel at all is a transparent image; without `channels`, windows follow the
    // active `omero` channels (DAPI, GFP).
    assert!(rgba(&get(&app, &url("?channels=")).await).2.chunks(4).all(|p| p == [0, 0, 0, 0]));
    let (.., two) = rgba(&get(&app, &url("?windows=0:1,0:1")).await);
    assert!(two.chunks(4).all(|p| p == [0, 255, 255, 255]), "every value is past both windows");
    // Bad values name the parameter and the form allowed.
    for (q, name) in [
        ("?channels=0,0", "channels"),
        ("?channels=3", "channels"),
        ("?channels=x", "channels"),
        ("?windows=5:1,0:1", "windows"),
        ("?windows=0:1", "windows"),
        ("?colors=FF0000", "colors"),
        ("?colors=red,blue", "colors"),
    ] {
        let detail = get(&app, &url(q)).await.assert_problem(400)["detail"].as_str().unwrap().to_owned();
        assert!(detail.contains(&format!("`{name}`")), "{q}: {detail}");
    }
    // One channel ([c=K]) and label images are not composites.
    for (image, path, fixed) in [("ozp05_5d.ome.zarr", "", "c=1"), ("ozp05_5d.ome.zarr", "labels/cells", "")] {
        let u = format!("/iiif/3/{}/full/max/0/default.png?channels=0", identifier(image, path, fixed));
        let detail = get(&app, &u).await.assert_problem(400)["detail"].as_str().unwrap().to_owned();
        assert!(detail.contains("composite"), "{detail}");
    }
}
