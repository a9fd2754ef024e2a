//! `zarrd overviews` and configured overview sources: the pyramid's levels as zarrd reads
//! them equal the area average of the fixture's expected `.npy` computed here from first
//! principles (mean of each 2^k x 2^k block's valid values, partial blocks at odd edges,
//! integers rounded half to even, fill where a block has no valid value), and IIIF reduced
//! sizes of an array with a configured pyramid read its levels, never the full resolution
//! (counted storage requests). zarr-python's reading of the same pyramids is checked in CI
//! by `tests/zarr_client/check_overviews.py`.

#![allow(clippy::unwrap_used, clippy::float_cmp, clippy::many_single_char_names)]

use crate::common;

use std::sync::Arc;

use common::{Npy, get};
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use serde_json::Value;
use zarrd::catalog::Catalog;
use zarrd::config::Config;
use zarrd::http::AppState;
use zarrd::images::overviews::Options;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::store::Store;

const U1: &str = "regular/u1_blosc"; // 100 x 100 uint8 in 32 x 32 chunks, fill 0

fn conf_store() -> Store {
    common::local_store(&common::conformance_dir().join("data.zarr"))
}

/// The values of `npy` (C order) as f64, `None` where fill or NaN.
fn valid_values(npy: &Npy, fill: f64) -> Vec<Option<f64>> {
    npy.data
        .chunks_exact(npy.item())
        .map(|b| {
            let v = match &npy.descr[1..] {
                "u1" => f64::from(b[0]),
                "f4" => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
                "i8" => i64::from_le_bytes(b.try_into().unwrap()) as f64,
                other => panic!("no reader for {other}"),
            };
            (v != fill && !v.is_nan()).then_some(v)
        })
        .collect()
}

/// Plane-by-plane reduction by `f` of `values` (`planes` planes of `h` x `w`): the mean of
/// each block's valid values; the last block along an odd edge holds fewer elements.
fn reduce(values: &[Option<f64>], planes: usize, h: usize, w: usize, f: usize) -> Vec<Option<f64>> {
    let (oh, ow) = (h.div_ceil(f), w.div_ceil(f));
    let mut out = Vec::with_capacity(planes * oh * ow);
    for p in 0..planes {
        for by in 0..oh {
            for bx in 0..ow {
                let (mut sum, mut n) = (0.0, 0u32);
                for y in by * f..((by + 1) * f).min(h) {
                    for x in bx * f..((bx + 1) * f).min(w) {
                        if let Some(v) = values[p * h * w + y * w + x] {
                            sum += v;
                            n += 1;
                        }
                    }
                }
                out.push((n > 0).then(|| sum / f64::from(n)));
            }
        }
    }
    out
}

fn catalog(stores: Vec<(&str, Store)>, config: &Config) -> Catalog {
    Catalog::new(stores.into_iter().map(|(n, s)| (n.to_owned(), s, None)).collect(), config)
}

/// Writes the pyramid of `path` (of the conformance fixtures) into a new in-memory store.
async fn pyramid(path: &str, options: Options) -> (Arc<InMemory>, zarrd::images::overviews::Summary) {
    pyramid_with(path, options, "").await
}

/// Like [`pyramid`], with `extra` configuration (limits) for the reads.
async fn pyramid_with(path: &str, options: Options, extra: &str) -> (Arc<InMemory>, zarrd::images::overviews::Summary) {
    let config = common::config(extra);
    let catalog = catalog(vec![("conf", conf_store())], &config);
    let reader = catalog.array(&catalog.dataset("conf").await.unwrap(), path).await.unwrap();
    let mem = Arc::new(InMemory::new());
    let out = Store::new(mem.clone(), ObjectPath::default());
    let summary = zarrd::images::overviews::write(&reader, &out, path, options).await.unwrap();
    // A second run into the same place is refused rather than mixing two pyramids.
    let again = zarrd::images::overviews::write(&reader, &out, path, options).await.unwrap_err();
    assert!(again.to_string().contains("already holds zarr.json"), "{again}");
    (mem, summary)
}

/// Every object of a store: key and bytes, in key order.
async fn objects(mem: &InMemory) -> Vec<(String, Vec<u8>)> {
    use futures::TryStreamExt;
    use object_store::ObjectStore;
    let metas: Vec<object_store::ObjectMeta> = mem.list(None).try_collect().await.unwrap();
    let mut out = Vec::new();
    for m in metas {
        let bytes = object_store::ObjectStoreExt::get(mem, &m.location).await.unwrap().bytes().await.unwrap();
        out.push((m.location.to_string(), bytes.to_vec()));
    }
    out.sort();
    out
}

/// Every element of a level as zarrd reads it, as f64.
async fn read_level(catalog: &Catalog, path: &str) -> (Vec<u64>, Vec<f64>) {
    let reader = catalog.array(&catalog.dataset("pyr").await.unwrap(), path).await.unwrap();
    let shape = reader.meta.shape.clone();
    let selection: Vec<DimSelection> = shape.iter().map(|&n| DimSelection::all(n)).collect();
    let data = reader.read(&selection, 0, false).await.unwrap().data.into_bytes().expect("not streamed");
    let item = reader.meta.data_type.size();
    let values = data
        .chunks_exact(item)
        .map(|b| match item {
            1 => f64::from(b[0]),
            4 => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
            _ => i64::from_le_bytes(b.try_into().unwrap()) as f64,
        })
        .collect();
    (shape, values)
}

#[tokio::test]
async fn levels_are_area_averages_of_the_valid_values() {
    // (array, fill, tile, expected level shapes, integer?)
    let cases: [(&str, f64, u64, &[&[u64]], bool); 3] = [
        (U1, 0.0, 16, &[&[100, 100], &[50, 50], &[25, 25], &[13, 13]], true),
        ("regular/f4_zstd_partial", f64::NAN, 8, &[&[37, 53], &[19, 27], &[10, 14], &[5, 7]], false),
        ("regular/i8_gzip_transpose_be", 0.0, 4, &[&[20, 30, 7], &[20, 15, 4], &[20, 8, 2], &[20, 4, 1]], true),
    ];
    for (path, fill, tile, shapes, integer) in cases {
        let (mem, summary) = pyramid(path, Options::with_tile(tile)).await;
        // Averaging in pieces of 3 source columns and bands of one row gives the same
        // objects, byte for byte, as the default pieces and bands (which cover these small
        // arrays at once): the bounded-memory path is the same computation.
        let small = Options { piece_columns: 3, band_bytes: 1, ..Options::with_tile(tile) };
        let (pieced, _) = pyramid(path, small).await;
        assert_eq!(objects(&mem).await, objects(&pieced).await, "{path}: pieces and bands changed the pyramid");
        // So does reading at most four chunks at a time (the per-request chunk limit of
        // the configuration bounds each band read: bands and pieces shrink to fit).
        let (limited, _) = pyramid_with(path, Options::with_tile(tile), "[limits]\nmax_chunks_per_request = 4").await;
        assert_eq!(objects(&mem).await, objects(&limited).await, "{path}: the chunk limit changed the pyramid");
        assert_eq!(summary.levels, shapes.iter().map(|s| s.to_vec()).collect::<Vec<_>>(), "{path}");
        let config = common::config("");
        let catalog = catalog(vec![("pyr", Store::new(mem, ObjectPath::default()))], &config);
        // The group is OME-NGFF 0.5 with one multiscale over levels 0..n.
        let zarrd_core::zarr::metadata::Node::Group(group) =
            catalog.node(&catalog.dataset("pyr").await.unwrap(), "").await.unwrap()
        else {
            panic!("the pyramid root is not a group")
        };
        let ome = &group.attributes["ome"];
        assert_eq!(ome["version"], "0.5");
        let datasets = ome["multiscales"][0]["datasets"].as_array().unwrap();
        assert_eq!(datasets.len(), shapes.len());
        let npy = common::expected(&common::conformance_dir(), path);
        let source = valid_values(&npy, fill);
        let rank = npy.shape.len();
        let (h, w) = (npy.shape[rank - 2] as usize, npy.shape[rank - 1] as usize);
        let planes = source.len() / (h * w);
        for (k, d) in datasets.iter().enumerate() {
            assert_eq!(d["path"], k.to_string());
            let scale = &d["coordinateTransformations"][0]["scale"];
            let f = 1usize << k;
            assert_eq!(scale.as_array().unwrap()[rank - 1], Value::from(f as f64));
            let reader = catalog.array(&catalog.dataset("pyr").await.unwrap(), &k.to_string()).await.unwrap();
            assert_eq!(reader.meta.sharding().unwrap().chunk_shape[rank - 1], tile, "{path} level {k}: inner chunk");
            let (shape, got) = read_level(&catalog, &k.to_string()).await;
            assert_eq!(shape, shapes[k]);
            let want = reduce(&source, planes, h, w, f);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                match w {
                    None if fill.is_nan() => assert!(g.is_nan(), "{path} level {k} element {i}: {g}"),
                    None => assert_eq!(*g, fill, "{path} level {k} element {i}"),
                    // Level 0 is the source itself; i64 beyond 2^53 loses bits as f64 here
                    // and there alike, so compare as f64 with the rounding the writer uses.
                    Some(v) if k == 0 => assert_eq!(*g, *v, "{path} level 0 element {i}"),
                    Some(v) if integer => {
                        let slack = if v.abs() >= 2f64.powi(53) {
                            v.abs() * 4.0 * f64::EPSILON * 4f64.powi(k as i32)
                        } else {
                            0.0
                        };
                        assert!((g - v.round_ties_even()).abs() <= slack, "{path} level {k} element {i}: {g} vs {v}");
                    }
                    Some(v) => assert_eq!(*g, f64::from(*v as f32), "{path} level {k} element {i}"),
                }
            }
        }
    }
}

/// The app over the conformance fixtures with `U1`'s pyramid configured as its overview
/// source; both stores count their requests.
async fn app_with_overviews(extra: &str) -> (axum::Router, Arc<common::CountingStore>, Arc<common::CountingStore>) {
    let (mem, _) = pyramid(U1, Options::with_tile(16)).await;
    let source = common::CountingStore::new(Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(common::conformance_dir().join("data.zarr")).unwrap(),
    ));
    let levels = common::CountingStore::new(mem);
    let config = common::config(extra);
    let mut catalog = catalog(vec![("conf", Store::new(source.clone(), ObjectPath::default()))], &config);
    catalog.add_overviews("conf", U1, Store::new(levels.clone(), ObjectPath::default()));
    (zarrd::app(AppState::new(catalog, config)), source, levels)
}

fn decode_gray(reply: &common::Reply) -> (usize, usize, Vec<u8>) {
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let mut reader = png::Decoder::new(std::io::Cursor::new(reply.body.to_vec())).read_info().unwrap();
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    data.truncate(info.buffer_size());
    assert_eq!(info.color_type, png::ColorType::GrayscaleAlpha);
    (info.width as usize, info.height as usize, data)
}

fn id() -> String {
    format!("conf%2F{}", U1.replace('/', "%2F"))
}

#[tokio::test]
async fn reduced_tiles_read_the_configured_pyramid_not_the_full_resolution() {
    // The limit that makes the reduced request 413 without overviews (see tests/it/iiif.rs),
    // and no decoded-chunk cache, so every chunk needed is a storage request.
    let (app, source, levels) =
        app_with_overviews("[limits]\nmax_chunks_per_request = 4\n[cache]\nchunk_bytes = 0").await;
    let npy = common::expected(&common::conformance_dir(), U1);
    let values = valid_values(&npy, 0.0);
    // Metadata (the array's and its parent's zarr.json, the pyramid's documents) first.
    let r = get(&app, &format!("/iiif/3/{}/info.json", id())).await;
    assert_eq!(r.status, 200, "{}", r.describe());
    for (size, k) in [("25,", 2usize), ("13,", 3)] {
        let (s0, l0) = (source.total(), levels.total());
        let r = get(&app, &format!("/iiif/3/{}/full/{size}/0/gray.png?vmin=0&vmax=255", id())).await;
        let (w, h, data) = decode_gray(&r);
        let want = reduce(&values, 1, 100, 100, 1 << k);
        assert_eq!((w, h), (100usize.div_ceil(1 << k), 100usize.div_ceil(1 << k)));
        for (i, v) in want.iter().enumerate() {
            // The level holds uint8 means rounded half to even; the window 0..255 shows
            // each as itself.
            let px = v.map_or([0, 0], |v| [v.round_ties_even() as u8, 255]);
            assert_eq!(data[i * 2..i * 2 + 2], px, "{size}: pixel {i} of mean {v:?}");
        }
        assert_eq!(source.total() - s0, 0, "{size}: the full resolution was read");
        assert!(levels.total() > l0, "{size}: the pyramid was not read");
    }
    // Full-resolution tiles still read the array itself.
    let s0 = source.total();
    let r = get(&app, &format!("/iiif/3/{}/0,0,32,32/max/0/gray.png?vmin=0&vmax=255", id())).await;
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(source.total() > s0);
    // Without vmin/vmax, the window is scanned from the coarsest level (the whole array is
    // over the chunk limit) instead of failing.
    let r = get(&app, &format!("/iiif/3/{}/full/13,/0/gray.png", id())).await;
    let (_, _, data) = decode_gray(&r);
    let level3: Vec<f64> = reduce(&values, 1, 100, 100, 8).into_iter().flatten().map(f64::round_ties_even).collect();
    let (lo, hi) = level3.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    let shades: Vec<u8> =
        level3.iter().map(|v| ((v - lo) * 255.0 / (hi - lo)).round().clamp(0.0, 255.0) as u8).collect();
    let got: Vec<u8> = data.chunks(2).filter(|p| p[1] == 255).map(|p| p[0]).collect();
    assert_eq!(got, shades);
}

#[tokio::test]
async fn a_configured_overview_source_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let conf = common::conformance_dir().join("data.zarr");
    std::fs::write(
        &file,
        format!(
            "listen = \"127.0.0.1:0\"\n[datasets.conf]\nurl = \"{}\"\n[datasets.conf.overviews]\n\"{U1}\" = \"{}\"\n",
            conf.display(),
            dir.path().join("missing").display()
        ),
    )
    .unwrap();
    let config = Config::load(Some(&file), std::iter::empty(), &zarrd::config::Overrides::default()).unwrap();
    let Err(e) = Catalog::from_config(&config) else { panic!("a missing overview directory was accepted") };
    assert!(e.to_string().contains(&format!("datasets.conf.overviews.{U1}")), "{e}");
}

#[test]
fn the_command_writes_a_pyramid_and_explains_its_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let conf = common::conformance_dir().join("data.zarr");
    std::fs::write(&file, format!("listen = \"127.0.0.1:0\"\n[datasets.conf]\nurl = \"{}\"\n", conf.display()))
        .unwrap();
    let out = dir.path().join("pyr");
    let run = |array: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_zarrd"))
            .args(["overviews", "--config"])
            .arg(&file)
            .args(["--dataset", "conf", "--array", array, "--tile-size", "32", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    };
    let ok = run(U1);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(text.contains(&format!("datasets.conf.overviews.\"{U1}\"")), "{text}");
    for level in ["0", "1", "2"] {
        assert!(out.join(level).join("zarr.json").is_file(), "level {level}");
    }
    assert!(!out.join("3").exists());
    // Complex values have no mean; a missing array is named.
    let bad = run("regular/c8");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no mean"));
    let bad = run("nope");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Garage on loopback: run through bash .ci/run"]
async fn pyramids_are_written_to_s3_and_served_from_there() {
    let options: std::collections::BTreeMap<String, String> = [
        ("aws_endpoint", common::service_env("ZARRD_TEST_S3_ENDPOINT")),
        ("aws_access_key_id", common::service_env("ZARRD_TEST_S3_KEY_ID")),
        ("aws_secret_access_key", common::service_env("ZARRD_TEST_S3_SECRET")),
        ("aws_region", common::service_env("ZARRD_TEST_S3_REGION")),
        ("aws_allow_http", "true".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let bucket = common::service_env("ZARRD_TEST_S3_BUCKET");
    // A fresh prefix per run: the writer refuses a place that already holds a pyramid.
    let run = format!(
        "overviews-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
    );
    let url = format!("s3://{bucket}/{run}/u1.zarr");
    let out = zarrd::images::overviews::open_output(&url, ("datasets.conf.options", &options)).unwrap();
    let config = common::config("[limits]\nmax_chunks_per_request = 4\n[cache]\nchunk_bytes = 0");
    let mut catalog = catalog(vec![("conf", conf_store())], &config);
    let reader = catalog.array(&catalog.dataset("conf").await.unwrap(), U1).await.unwrap();
    zarrd::images::overviews::write(&reader, &out, U1, Options::with_tile(16)).await.unwrap();
    // The same objects as written to memory.
    let (mem, _) = pyramid(U1, Options::with_tile(16)).await;
    let s3 = zarrd::catalog::open_url("test", &url, ("test.options", &options)).unwrap();
    for (key, bytes) in objects(&mem).await {
        assert_eq!(s3.get(&key).await.unwrap().unwrap().to_vec(), bytes, "{key}");
    }
    // Served from S3 as the array's overview source: the reduced size over the chunk
    // limit is answered from level 2.
    catalog.add_overviews("conf", U1, s3);
    let app = zarrd::app(AppState::new(catalog, config));
    let r = get(&app, &format!("/iiif/3/{}/full/25,/0/gray.png?vmin=0&vmax=255", id())).await;
    let (w, h, _) = decode_gray(&r);
    assert_eq!((w, h), (25, 25));
}

#[tokio::test]
async fn mismatched_or_unreadable_overview_sources_are_ignored() {
    // A pyramid of another array (37 x 53 float32) and an empty store: neither gives U1
    // levels, so its reduced sizes are computed on the fly, and over the chunk limit they
    // are the 413 naming the command, as without any configured source.
    let (other, _) = pyramid("regular/f4_zstd_partial", Options::with_tile(8)).await;
    for store in
        [Store::new(other, ObjectPath::default()), Store::new(Arc::new(InMemory::new()), ObjectPath::default())]
    {
        let config = common::config("[limits]\nmax_chunks_per_request = 4");
        let mut catalog = catalog(vec![("conf", conf_store())], &config);
        catalog.add_overviews("conf", U1, store);
        let app = zarrd::app(AppState::new(catalog, config));
        let r = get(&app, &format!("/iiif/3/{}/full/25,/0/gray.png?vmin=0&vmax=255", id())).await;
        let doc = r.assert_problem(413);
        assert!(doc["detail"].as_str().unwrap().contains("zarrd overviews"), "{doc}");
        // Full-resolution tiles are unaffected.
        let r = get(&app, &format!("/iiif/3/{}/0,0,32,32/max/0/gray.png?vmin=0&vmax=255", id())).await;
        assert_eq!(r.status, 200, "{}", r.describe());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pyramid_of_an_array_twice_the_memory_budget() {
    // 2048 x 2048 uint8 (4 MiB) in 128 x 128 uncompressed chunks, each chunk one value, so
    // every block of levels 1..=6 (2^k <= 128) lies in one chunk and has its value.
    let mem = Arc::new(InMemory::new());
    let meta = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [2048, 2048], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [128, 128]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes"}], "attributes": {}
    });
    let value = |cy: u64, cx: u64| ((cy * 16 + cx) % 250 + 1) as u8;
    {
        use object_store::ObjectStoreExt;
        mem.put(&ObjectPath::from("big/zarr.json"), meta.to_string().into_bytes().into()).await.unwrap();
        for cy in 0..16 {
            for cx in 0..16 {
                let key = ObjectPath::from(format!("big/c/{cy}/{cx}"));
                mem.put(&key, vec![value(cy, cx); 128 * 128].into()).await.unwrap();
            }
        }
    }
    // Working memory of 2 MiB for everything, no decoded-chunk cache: the writer must
    // never hold the array (nor a level of it) at once.
    let config = common::config("[limits]\nmemory_bytes = 2097152\n[cache]\nchunk_bytes = 0");
    let source = catalog(vec![("big", Store::new(mem, ObjectPath::default()))], &config);
    let reader = source.array(&source.dataset("big").await.unwrap(), "big").await.unwrap();
    let out = Arc::new(InMemory::new());
    let summary = zarrd::images::overviews::write(
        &reader,
        &Store::new(out.clone(), ObjectPath::default()),
        "big",
        Options::with_tile(32),
    )
    .await
    .unwrap();
    assert_eq!(summary.levels.len(), 7, "2048 down to 32");
    let config = common::config("");
    let catalog = catalog(vec![("pyr", Store::new(out, ObjectPath::default()))], &config);
    for k in 1..7u32 {
        let (shape, got) = read_level(&catalog, &k.to_string()).await;
        let n = 2048u64 >> k;
        assert_eq!(shape, [n, n]);
        for (i, g) in got.iter().enumerate() {
            let (y, x) = ((i as u64 / n) << k, (i as u64 % n) << k);
            assert_eq!(*g, f64::from(value(y / 128, x / 128)), "level {k} element {i}");
        }
    }
}

#[tokio::test]
async fn leftovers_of_an_interrupted_run_are_refused() {
    use object_store::ObjectStoreExt;
    let config = common::config("");
    let catalog = catalog(vec![("conf", conf_store())], &config);
    let reader = catalog.array(&catalog.dataset("conf").await.unwrap(), U1).await.unwrap();
    let mem = Arc::new(InMemory::new());
    // A run stopped after its first level's metadata: no group zarr.json yet.
    mem.put(&ObjectPath::from("0/zarr.json"), b"{}".to_vec().into()).await.unwrap();
    let out = Store::new(mem, ObjectPath::default());
    let e = zarrd::images::overviews::write(&reader, &out, U1, Options::with_tile(16)).await.unwrap_err();
    assert!(e.to_string().contains("already holds 0/zarr.json"), "{e}");
}
