//! The IIIF Image API over the conformance fixtures: `info.json`, every region, size,
//! rotation, quality and format form, and their errors. Expected pixels are computed here
//! from first principles out of the fixtures' expected `.npy` values (written by `NumPy`
//! from zarr-python's reads): the window is the min/max of the valid values, a reduced
//! pixel the mean of the valid values of its block, a level `round((v - lo) * 255 /
//! (hi - lo))`; fill and NaN are transparent. Multiscale level selection is checked on an
//! OME-NGFF group built here, by the values each level holds and by storage requests.

#![allow(clippy::unwrap_used, clippy::many_single_char_names, clippy::float_cmp)] // pixel arithmetic reads best as x, y, w, h; fills are exact values

use crate::common;

use std::sync::Arc;

use common::{Npy, Reply, get, get_with};
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use serde_json::{Value, json};

fn app() -> axum::Router {
    common::conformance_app()
}

fn id(path: &str) -> String {
    format!("conf%2F{}", path.replace('/', "%2F"))
}

/// A decoded PNG: channels per pixel and the pixel bytes.
struct Png {
    width: usize,
    height: usize,
    channels: usize,
    data: Vec<u8>,
}

impl Png {
    fn pixel(&self, x: usize, y: usize) -> &[u8] {
        let at = (y * self.width + x) * self.channels;
        &self.data[at..at + self.channels]
    }
}

fn decode_png(reply: &Reply) -> Png {
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(reply.header("content-type"), "image/png");
    let mut reader = png::Decoder::new(std::io::Cursor::new(reply.body.to_vec())).read_info().unwrap();
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    data.truncate(info.buffer_size());
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let channels = match info.color_type {
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected colour type {other:?}"),
    };
    Png { width: info.width as usize, height: info.height as usize, channels, data }
}

/// The values of one plane of an expected array, `None` where fill or NaN.
struct Grid {
    width: usize,
    height: usize,
    values: Vec<Option<f64>>,
}

fn values(npy: &Npy, fill: f64) -> Vec<Option<f64>> {
    let item = npy.item();
    npy.data
        .chunks_exact(item)
        .map(|b| {
            let v = match &npy.descr[1..] {
                "f4" => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
                "u1" => f64::from(b[0]),
                "i2" => f64::from(i16::from_le_bytes(b.try_into().unwrap())),
                other => panic!("no reader for {other}"),
            };
            let is_fill = if fill.is_nan() { v.is_nan() } else { v == fill };
            (!is_fill && !v.is_nan()).then_some(v)
        })
        .collect()
}

fn plane(npy: &Npy, fill: f64, index: Option<usize>) -> Grid {
    let n = npy.shape.len();
    let (height, width) = (npy.shape[n - 2] as usize, npy.shape[n - 1] as usize);
    let all = values(npy, fill);
    let start = index.unwrap_or(0) * width * height;
    Grid { width, height, values: all[start..start + width * height].to_vec() }
}

/// The min and max valid values of the whole array.
fn window(npy: &Npy, fill: f64) -> (f64, f64) {
    values(npy, fill).into_iter().flatten().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)))
}

fn level(v: f64, (lo, hi): (f64, f64)) -> u8 {
    ((v - lo) * 255.0 / (hi - lo)).round().clamp(0.0, 255.0) as u8
}

/// The region `(x, y, w, h)` reduced by `f`: the mean of each block's valid values.
fn reduce(g: &Grid, (x, y, w, h): (usize, usize, usize, usize), f: usize) -> Grid {
    let (ow, oh) = (w.div_ceil(f), h.div_ceil(f));
    let mut out = Vec::new();
    for by in 0..oh {
        for bx in 0..ow {
            let (mut sum, mut n) = (0.0, 0);
            for yy in y + by * f..(y + (by + 1) * f).min(y + h) {
                for xx in x + bx * f..(x + (bx + 1) * f).min(x + w) {
                    if let Some(v) = g.values[yy * g.width + xx] {
                        sum += v;
                        n += 1;
                    }
                }
            }
            out.push((n > 0).then(|| sum / f64::from(n)));
        }
    }
    Grid { width: ow, height: oh, values: out }
}

/// Asserts a gray + alpha PNG shows `g` through `window`, transparent where no value.
fn assert_gray(png: &Png, g: &Grid, win: (f64, f64), ctx: &str) {
    assert_eq!((png.width, png.height, png.channels), (g.width, g.height, 2), "{ctx}");
    for y in 0..g.height {
        for x in 0..g.width {
            let want = match g.values[y * g.width + x] {
                Some(v) => [level(v, win), 255],
                None => [0, 0],
            };
            assert_eq!(png.pixel(x, y), want, "{ctx}: pixel ({x}, {y}) of value {:?}", g.values[y * g.width + x]);
        }
    }
}

fn f4() -> (Npy, f64) {
    (common::expected(&common::conformance_dir(), "regular/f4_zstd_partial"), f64::NAN)
}

#[tokio::test]
async fn info_json_describes_the_image_and_its_tiles() {
    let app = app();
    let r = get_with(
        &app,
        &format!("/iiif/3/{}/info.json", id("regular/f4_zstd_partial")),
        &[("host", "example.org:8080")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.header("content-type"), "application/json");
    let doc = r.json();
    assert_eq!(doc["@context"], "http://iiif.io/api/image/3/context.json");
    assert_eq!(doc["id"], "http://example.org:8080/iiif/3/conf%2Fregular%2Ff4_zstd_partial");
    assert_eq!(doc["type"], "ImageService3");
    assert_eq!(doc["protocol"], "http://iiif.io/api/image");
    assert_eq!(doc["profile"], "level2");
    assert_eq!((doc["width"].as_u64(), doc["height"].as_u64()), (Some(53), Some(37)));
    assert_eq!(doc["tiles"][0]["scaleFactors"], json!([1]));
    assert!(doc["extraFormats"].as_array().unwrap().contains(&json!("png")));
    assert_eq!(doc["preferredFormats"], json!(["png"]));
    assert!(doc["extraQualities"].as_array().unwrap().contains(&json!("gray")));
    assert!(!r.header("etag").is_empty());

    // Behind a load balancer the id is the public URL.
    let r = get_with(
        &app,
        &format!("/iiif/3/{}/info.json", id("rectilinear/u1_months_3d%5B7%5D")),
        &[("host", "10.0.0.5"), ("x-forwarded-proto", "https"), ("x-forwarded-host", "maps.example.com, proxy")],
    )
    .await;
    assert_eq!(r.json()["id"], "https://maps.example.com/iiif/3/conf%2Frectilinear%2Fu1_months_3d%5B7%5D");
    assert_eq!((r.json()["width"].as_u64(), r.json()["height"].as_u64()), (Some(5), Some(6)));
    // A large image gets scale factors down to a whole-image tile.
    let app = common::app_with(
        vec![(
            "sample",
            common::local_store(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.zarr")),
        )],
        common::config(""),
    );
    let doc = get(&app, "/iiif/3/sample%2Fterrain%2Felevation/info.json").await.json();
    assert_eq!(doc["tiles"][0]["scaleFactors"], json!([1, 2, 4]));
    assert_eq!(doc["tiles"][0]["width"], 256);
    let sizes = doc["sizes"].as_array().unwrap();
    assert_eq!(sizes[0], json!({"type": "Size", "width": 256, "height": 256}));
    let r = get_with(
        &app,
        "/iiif/3/sample%2Fterrain%2Felevation/info.json",
        &[("accept", "application/ld+json;profile=\"http://iiif.io/api/image/3/context.json\"")],
    )
    .await;
    assert!(r.header("content-type").starts_with("application/ld+json"), "{}", r.describe());
    // The base URI redirects to info.json.
    let r = get(&app, "/iiif/3/sample%2Fterrain%2Felevation").await;
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), "/iiif/3/sample%2Fterrain%2Felevation/info.json");
}

#[tokio::test]
async fn full_image_matches_numpy_with_fill_transparent() {
    let app = app();
    let (npy, fill) = f4();
    let g = plane(&npy, fill, None);
    assert!(g.values.iter().any(Option::is_none), "the fixture has NaN fill and missing chunks");
    let win = window(&npy, fill);
    for size in ["max", "53,", ",37", "53,37", "!100,37", "pct:100"] {
        let r = get(&app, &format!("/iiif/3/{}/full/{size}/0/gray.png", id("regular/f4_zstd_partial"))).await;
        assert_gray(&decode_png(&r), &g, win, size);
    }
}

#[tokio::test]
async fn reduced_sizes_average_valid_values_of_each_block() {
    let app = app();
    let (npy, fill) = f4();
    let g = plane(&npy, fill, None);
    let win = window(&npy, fill);
    // 53 x 37 halved is 27 x 19 (edge blocks are partial), quartered 14 x 10, and so on.
    for (size, f) in [("27,", 2), ("pct:50", 2), (",10", 4), ("14,10", 4), ("!7,7", 8), ("1,1", 64)] {
        let r = get(&app, &format!("/iiif/3/{}/full/{size}/0/gray.png", id("regular/f4_zstd_partial"))).await;
        assert_gray(&decode_png(&r), &reduce(&g, (0, 0, 53, 37), f), win, size);
    }
    // A tile of a reduced level, as OpenSeadragon asks for it.
    let r = get(&app, &format!("/iiif/3/{}/32,16,21,21/6,6/0/gray.png", id("regular/f4_zstd_partial"))).await;
    assert_gray(&decode_png(&r), &reduce(&g, (32, 16, 21, 21), 4), win, "tile");
}

#[tokio::test]
async fn other_sizes_resample_the_next_larger_level() {
    let app = app();
    let (npy, fill) = f4();
    let g = plane(&npy, fill, None);
    let win = window(&npy, fill);
    // 20 wide: the half level (27 x 19) is the smallest with at least 20 x 14 pixels;
    // each output pixel takes the level pixel under its centre.
    let r = get(&app, &format!("/iiif/3/{}/full/20,/0/gray.png", id("regular/f4_zstd_partial"))).await;
    let png = decode_png(&r);
    let half = reduce(&g, (0, 0, 53, 37), 2);
    let (w, h) = (20usize, (37.0f64 * 20.0 / 53.0).round() as usize);
    let pick = |i: usize, out: usize, src: usize| (((i as f64 + 0.5) * src as f64 / out as f64) as usize).min(src - 1);
    let values: Vec<Option<f64>> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .map(|(x, y)| half.values[pick(y, h, half.height) * half.width + pick(x, w, half.width)])
        .collect();
    assert_gray(&png, &Grid { width: w, height: h, values }, win, "20,");
    // Upscaling with ^ repeats pixels.
    let r = get(&app, &format!("/iiif/3/{}/0,0,2,2/^4,4/0/gray.png", id("regular/f4_zstd_partial"))).await;
    let png = decode_png(&r);
    let small = reduce(&g, (0, 0, 2, 2), 1);
    for y in 0..4 {
        for x in 0..4 {
            let v = small.values[(y / 2) * 2 + x / 2];
            assert_eq!(png.pixel(x, y), v.map_or([0, 0], |v| [level(v, win), 255]));
        }
    }
}

#[tokio::test]
async fn regions_in_pixels_percent_square_and_past_the_edge() {
    let app = app();
    let (npy, fill) = f4();
    let g = plane(&npy, fill, None);
    let win = window(&npy, fill);
    for (region, rect) in [
        ("10,5,20,12", (10, 5, 20, 12)),
        ("40,30,100,100", (40, 30, 13, 7)),
        ("square", (8, 0, 37, 37)),
        // 53 * 0.5 = 26.5 rounds to 27; 37 * 0.25 = 9.25 to 9.
        ("pct:50,25,50,50", (27, 9, 26, 19)),
    ] {
        let r = get(&app, &format!("/iiif/3/{}/{region}/max/0/gray.png", id("regular/f4_zstd_partial"))).await;
        assert_gray(&decode_png(&r), &reduce(&g, rect, 1), win, region);
    }
}

#[tokio::test]
async fn rotation_and_mirroring_turn_the_pixels() {
    let app = app();
    let (npy, fill) = f4();
    let g = reduce(&plane(&npy, fill, None), (0, 0, 5, 3), 1);
    let win = window(&npy, fill);
    let at = |x: usize, y: usize| g.values[y * 5 + x];
    // (output size, source pixel for output (x, y))
    let cases: [(&str, (usize, usize), Box<dyn Fn(usize, usize) -> Option<f64>>); 4] = [
        ("90", (3, 5), Box::new(move |x, y| at(y, 2 - x))),
        ("180", (5, 3), Box::new(move |x, y| at(4 - x, 2 - y))),
        ("!0", (5, 3), Box::new(move |x, y| at(4 - x, y))),
        ("!270", (3, 5), Box::new(move |x, y| at(y, x))),
    ];
    for (rotation, (w, h), source) in cases {
        let r = get(&app, &format!("/iiif/3/{}/0,0,5,3/max/{rotation}/gray.png", id("regular/f4_zstd_partial"))).await;
        let values = (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).map(|(x, y)| source(x, y)).collect();
        assert_gray(&decode_png(&r), &Grid { width: w, height: h, values }, win, rotation);
    }
}

#[tokio::test]
async fn qualities_colormaps_windows_and_formats() {
    let app = app();
    let npy = common::expected(&common::conformance_dir(), "regular/u1_blosc");
    let g = plane(&npy, 0.0, None);
    let win = window(&npy, 0.0);
    let viridis = |l: u8| {
        let c = colorous::VIRIDIS.eval_rational(usize::from(l), 256);
        [c.r, c.g, c.b, 255]
    };
    // `default` and `color` are viridis unless `colormap` says otherwise.
    for quality in ["default", "color"] {
        let png = decode_png(&get(&app, &format!("/iiif/3/{}/full/max/0/{quality}.png", id("regular/u1_blosc"))).await);
        assert_eq!((png.width, png.height, png.channels), (100, 100, 4));
        for (i, v) in g.values.iter().enumerate() {
            let want = v.map_or([0, 0, 0, 0], |v| viridis(level(v, win)));
            assert_eq!(png.pixel(i % 100, i / 100), want, "{quality} pixel {i}");
        }
    }
    let png = decode_png(
        &get(
            &app,
            &format!("/iiif/3/{}/0,0,8,8/max/0/default.png?colormap=gray&vmin=50&vmax=150", id("regular/u1_blosc")),
        )
        .await,
    );
    for y in 0..8 {
        for x in 0..8 {
            let want = g.values[y * 100 + x].map_or([0, 0, 0, 0], |v| {
                let l = level(v, (50.0, 150.0));
                [l, l, l, 255]
            });
            assert_eq!(png.pixel(x, y), want);
        }
    }
    let png = decode_png(&get(&app, &format!("/iiif/3/{}/0,0,8,8/max/0/bitonal.png", id("regular/u1_blosc"))).await);
    for y in 0..8 {
        for x in 0..8 {
            let want = g.values[y * 100 + x].map_or([0, 0], |v| [if level(v, win) >= 128 { 255 } else { 0 }, 255]);
            assert_eq!(png.pixel(x, y), want);
        }
    }
    // JPEG: baseline, the requested size in its frame header.
    for (quality, components) in [("gray", 1), ("default", 3)] {
        let r = get(&app, &format!("/iiif/3/{}/full/50,/0/{quality}.jpg", id("regular/u1_blosc"))).await;
        assert_eq!(r.status, 200, "{}", r.describe());
        assert_eq!(r.header("content-type"), "image/jpeg");
        assert_eq!(&r.body[..2], &[0xff, 0xd8]);
        let sof = r.body.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
        let frame = &r.body[sof + 5..sof + 10];
        assert_eq!(u16::from_be_bytes([frame[0], frame[1]]), 50);
        assert_eq!(u16::from_be_bytes([frame[2], frame[3]]), 50);
        assert_eq!(frame[4], components);
    }
}

#[tokio::test]
async fn leading_dimensions_are_fixed_and_the_window_spans_every_plane() {
    let app = app();
    let npy = common::expected(&common::conformance_dir(), "rectilinear/u1_months_3d");
    let win = window(&npy, 255.0);
    for index in [0usize, 40, 1094] {
        let g = plane(&npy, 255.0, Some(index));
        let r =
            get(&app, &format!("/iiif/3/{}%5B{index}%5D/full/max/0/gray.png", id("rectilinear/u1_months_3d"))).await;
        assert_gray(&decode_png(&r), &g, win, &format!("plane {index}"));
    }
}

#[tokio::test]
async fn validators_cors_and_the_tile_cache() {
    let app = app();
    let uri = format!("/iiif/3/{}/full/max/0/default.png", id("regular/u1_blosc"));
    let first = get_with(&app, &uri, &[("origin", "http://viewer.example")]).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("access-control-allow-origin"), "*");
    let etag = first.header("etag").to_owned();
    assert!(etag.starts_with('"'), "strong ETag: {etag}");
    let again = get(&app, &uri).await;
    assert_eq!((again.header("etag"), &again.body), (etag.as_str(), &first.body));
    let not_modified = get_with(&app, &uri, &[("if-none-match", &etag)]).await;
    assert_eq!(not_modified.status, 304);
    let other = get(&app, &format!("{uri}?vmin=0&vmax=10")).await;
    assert_ne!(other.header("etag"), etag);
}

#[tokio::test]
async fn bad_requests_are_problem_documents_saying_what_is_allowed() {
    let app = app();
    let f4 = id("regular/f4_zstd_partial");
    for (path, status, says) in [
        (format!("/iiif/3/{f4}/0,0,0,5/max/0/default.png"), 400, "zero width"),
        (format!("/iiif/3/{f4}/53,0,5,5/max/0/default.png"), 400, "outside"),
        (format!("/iiif/3/{f4}/nowhere/max/0/default.png"), 400, "allowed: `full`"),
        (format!("/iiif/3/{f4}/pct:1,2,3/max/0/default.png"), 400, "four"),
        (format!("/iiif/3/{f4}/full/100,/0/default.png"), 400, "`^`"),
        (format!("/iiif/3/{f4}/full/pct:101/0/default.png"), 400, "`^`"),
        (format!("/iiif/3/{f4}/full/0,/0/default.png"), 400, "zero"),
        (format!("/iiif/3/{f4}/full/!10,/0/default.png"), 400, "allowed: `max`"),
        (format!("/iiif/3/{f4}/full/max/45/default.png"), 400, "0, 90, 180 or 270"),
        (format!("/iiif/3/{f4}/full/max/0/sepia.png"), 400, "default, color, gray, bitonal"),
        (format!("/iiif/3/{f4}/full/max/0/default.tif"), 400, "png, jpg"),
        (format!("/iiif/3/{f4}/full/max/0/default"), 400, "quality.format"),
        (format!("/iiif/3/{f4}/full/max/0/gray.png?colormap=magma"), 400, "`colormap` applies"),
        (format!("/iiif/3/{f4}/full/max/0/default.png?colormap=jet"), 400, "viridis"),
        (format!("/iiif/3/{f4}/full/max/0/default.png?vmin=5&vmax=1"), 400, "vmin"),
        (format!("/iiif/3/{f4}/full/max/0/default.png?tile=1"), 400, "allowed: vmin, vmax, colormap"),
        (format!("/iiif/3/{f4}/full/^100000,100000/0/default.png"), 413, "limit"),
        ("/iiif/3/conf%2Fno%2Fsuch/info.json".to_owned(), 404, "no array or group"),
        ("/iiif/3/nope%2Fx/info.json".to_owned(), 404, "unknown dataset"),
        ("/iiif/3/conf/info.json".to_owned(), 404, "DATASET/PATH"),
        (format!("/iiif/3/{}/info.json", id("regular/bool_v2key")), 422, "at least two"),
        (format!("/iiif/3/{}/info.json", id("regular/c8")), 422, "complex64"),
        (format!("/iiif/3/{}/info.json", id("rectilinear/u1_months_3d")), 400, "[i]"),
        (format!("/iiif/3/{}%5B1095%5D/info.json", id("rectilinear/u1_months_3d")), 404, "0 to 1094"),
        (format!("/iiif/3/{}%5B1,2%5D/info.json", id("rectilinear/u1_months_3d")), 400, "got 2"),
    ] {
        let r = get(&app, &path).await;
        let doc = r.assert_problem(status);
        let detail = doc["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{path}: `{detail}` should say `{says}`");
    }
}

#[tokio::test]
async fn reduced_reads_over_the_chunk_limit_are_413_naming_the_overviews_command() {
    let app = common::app_with(
        vec![("conf", common::local_store(&common::conformance_dir().join("data.zarr")))],
        common::config("[limits]\nmax_chunks_per_request = 4"),
    );
    // 100 x 100 in 32 x 32 chunks: the whole image is 16 chunks.
    let r = get(&app, &format!("/iiif/3/{}/full/25,/0/gray.png?vmin=0&vmax=255", id("regular/u1_blosc"))).await;
    let doc = r.assert_problem(413);
    assert!(doc["detail"].as_str().unwrap().contains("zarrd overviews"), "{doc}");
    // Without vmin/vmax the value range cannot be scanned either.
    let r = get(&app, &format!("/iiif/3/{}/0,0,32,32/max/0/gray.png", id("regular/u1_blosc"))).await;
    let doc = r.assert_problem(413);
    assert!(doc["detail"].as_str().unwrap().contains("vmin"), "{doc}");
    // A tile within the limit is fine.
    let r = get(&app, &format!("/iiif/3/{}/0,0,32,32/max/0/gray.png?vmin=0&vmax=255", id("regular/u1_blosc"))).await;
    assert_eq!(r.status, 200, "{}", r.describe());
}

/// An OME-NGFF 0.5 image `img` of three levels (64, 32, 16 pixels square, uint8, 16 x 16
/// uncompressed chunks), each level one constant so the pixels tell which was read.
async fn multiscale_store(version_05: bool) -> Arc<InMemory> {
    let mem = Arc::new(InMemory::new());
    let put = |key: &str, bytes: Vec<u8>| {
        let mem = Arc::clone(&mem);
        let key = key.to_owned();
        async move { mem.put(&ObjectPath::from(key), bytes.into()).await.unwrap() }
    };
    put("zarr.json", json!({"zarr_format": 3, "node_type": "group", "attributes": {}}).to_string().into_bytes()).await;
    let datasets: Vec<Value> = (0..3)
        .map(|l| {
            json!({"path": l.to_string(), "coordinateTransformations": [{"type": "scale", "scale": [f64::from(1 << l) * 0.5, f64::from(1 << l) * 0.5]}]})
        })
        .collect();
    let multiscales = json!([{"name": "img", "axes": [{"name": "y", "type": "space"}, {"name": "x", "type": "space"}], "datasets": datasets}]);
    let omero = json!({"channels": [{"window": {"start": 0, "end": 400, "min": 0, "max": 400}}]});
    let attributes = if version_05 {
        json!({"ome": {"version": "0.5", "multiscales": multiscales, "omero": omero}})
    } else {
        json!({"multiscales": multiscales, "omero": omero})
    };
    put(
        "img/zarr.json",
        json!({"zarr_format": 3, "node_type": "group", "attributes": attributes}).to_string().into_bytes(),
    )
    .await;
    for (l, value) in [(0u32, 10u8), (1, 100), (2, 200)] {
        let n = 64u64 >> l;
        let meta = json!({
            "zarr_format": 3, "node_type": "array", "shape": [n, n], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 16]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "dimension_names": ["y", "x"], "attributes": {}
        });
        put(&format!("img/{l}/zarr.json"), meta.to_string().into_bytes()).await;
        for cy in 0..n / 16 {
            for cx in 0..n / 16 {
                put(&format!("img/{l}/c/{cy}/{cx}"), vec![value; 256]).await;
            }
        }
    }
    mem
}

#[tokio::test]
async fn multiscale_images_read_the_matching_level() {
    for version_05 in [true, false] {
        let mem = multiscale_store(version_05).await;
        let counting = common::CountingStore::new(mem);
        let store = zarrd_core::store::Store::new(counting.clone(), ObjectPath::default());
        // No decoded-chunk cache, so every chunk a request needs is one storage read.
        let app = common::app_with(vec![("ms", store)], common::config("[cache]\nchunk_bytes = 0"));
        // The omero window (0..400) applies: level value v shows as round(v * 255 / 400).
        let shade = |v: f64| level(v, (0.0, 400.0));
        // Warm the metadata caches, then count the chunk reads of each request.
        let r = get(&app, "/iiif/3/ms%2Fimg%2F0/full/64,/0/gray.png").await;
        assert!(decode_png(&r).data.chunks(2).all(|p| p == [shade(10.0), 255]), "full resolution reads level 0");
        for (size, value, chunk_reads) in [
            ("32,", 100.0, 4), // level 1: 2 x 2 chunks
            ("16,", 200.0, 1), // level 2: one chunk
            ("8,", 200.0, 1),  // reduced further from level 2
            ("20,", 100.0, 4), // resampled from level 1, the next larger
        ] {
            let before = counting.total();
            let r = get(&app, &format!("/iiif/3/ms%2Fimg%2F0/full/{size}/0/gray.png")).await;
            let png = decode_png(&r);
            assert!(
                png.data.chunks(2).all(|p| p == [shade(value), 255]),
                "{size}: expected level value {value}, got {:?}",
                &png.data[..2]
            );
            assert_eq!(counting.total() - before, chunk_reads, "{size}: storage requests");
        }
        // A level-1 tile of the full-resolution grid reads only level 1.
        let before = counting.total();
        let r = get(&app, "/iiif/3/ms%2Fimg%2F0/32,0,32,32/16,16/0/gray.png").await;
        assert!(decode_png(&r).data.chunks(2).all(|p| p == [shade(100.0), 255]));
        assert_eq!(counting.total() - before, 1);
    }
}

#[tokio::test]
async fn slice_png_takes_a_colormap_too() {
    let app = app();
    let npy = common::expected(&common::conformance_dir(), "regular/u1_blosc");
    let g = plane(&npy, 0.0, None);
    let r = get(&app, "/v1/slice/conf/regular/u1_blosc?s=0:8,0:8&format=png&colormap=magma&vmin=0&vmax=200").await;
    let png = decode_png(&r);
    assert_eq!((png.width, png.height, png.channels), (8, 8, 4));
    for y in 0..8 {
        for x in 0..8 {
            let want = g.values[y * 100 + x].map_or([0, 0, 0, 0], |v| {
                let c = colorous::MAGMA.eval_rational(usize::from(level(v, (0.0, 200.0))), 256);
                [c.r, c.g, c.b, 255]
            });
            assert_eq!(png.pixel(x, y), want);
        }
    }
    let r = get(&app, "/v1/slice/conf/regular/u1_blosc?s=0:8,0:8&format=json&colormap=magma").await;
    r.assert_problem(400);
    let r = get(&app, "/v1/slice/conf/regular/u1_blosc?s=0:8,0:8&format=png&colormap=rainbow").await;
    assert!(r.assert_problem(400)["detail"].as_str().unwrap().contains("cividis"));
}
