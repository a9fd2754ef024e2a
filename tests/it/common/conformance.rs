//! The conformance checks, shared by the tests that serve the fixture sets from different
//! stores (`tests/it/conformance.rs`: local files, memory, S3, HTTP; `tests/it/zip.rs`:
//! zipped): every array read through the HTTP API, in every format and for many
//! selections, compared with the expected `.npy` values, and the other routes over the
//! same arrays.

use axum::Router;
use serde_json::Value;

use super::{Npy, Reply, expected, gather, get, parse_npy};

/// A fixture set: its directory under tests/fixtures and its `NumPy` selection cases.
pub fn cases(set: &str) -> Value {
    serde_json::from_slice(&std::fs::read(super::fixtures().join(format!("selections/{set}.json"))).unwrap()).unwrap()
}

pub fn set_dir(set: &str) -> std::path::PathBuf {
    super::fixtures().join(set)
}

pub fn encode_s(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

pub fn assert_same_bits(path: &str, s: &str, got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len(), "{path} s={s}: length");
    if got != want {
        let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
        panic!("{path} s={s}: bytes differ first at byte {first}");
    }
}

/// Checks one JSON element against its little-endian bytes.
pub fn assert_json_element(v: &Value, bytes: &[u8], descr: &str, ctx: &str) {
    let kind = &descr[1..2];
    let size: usize = descr[2..].parse().unwrap();
    match kind {
        "b" => assert_eq!(v.as_bool().unwrap(), bytes[0] != 0, "{ctx}"),
        "i" => {
            let mut a = [0u8; 8];
            a[..size].copy_from_slice(bytes);
            let x = (i64::from_le_bytes(a) << (64 - 8 * size)) >> (64 - 8 * size);
            assert_eq!(v.as_i64().unwrap(), x, "{ctx}");
        }
        "u" => {
            let mut a = [0u8; 8];
            a[..size].copy_from_slice(bytes);
            assert_eq!(v.as_u64().unwrap(), u64::from_le_bytes(a), "{ctx}");
        }
        "f" => {
            let want = match size {
                2 => half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f64(),
                4 => f64::from(f32::from_le_bytes(bytes.try_into().unwrap())),
                _ => f64::from_le_bytes(bytes.try_into().unwrap()),
            };
            if want.is_finite() {
                let got = v.as_f64().unwrap_or_else(|| panic!("{ctx}: {v} is not a number"));
                let same = match size {
                    2 => half::f16::from_f64(got) == half::f16::from_f64(want),
                    4 => (got as f32).to_bits() == (want as f32).to_bits(),
                    _ => got.to_bits() == want.to_bits(),
                };
                assert!(same, "{ctx}: {got} != {want}");
            } else {
                assert!(v.is_null(), "{ctx}: expected null for {want}, got {v}");
            }
        }
        "c" => {
            let half_size = size / 2;
            let part = format!("<f{half_size}");
            let pair = v.as_array().unwrap();
            assert_json_element(&pair[0], &bytes[..half_size], &part, ctx);
            assert_json_element(&pair[1], &bytes[half_size..], &part, ctx);
        }
        other => panic!("unexpected kind {other}"),
    }
}

pub fn flatten<'a>(v: &'a Value, depth: usize, out: &mut Vec<&'a Value>) {
    if depth == 0 {
        out.push(v);
    } else {
        for x in v.as_array().unwrap() {
            flatten(x, depth - 1, out);
        }
    }
}

pub fn assert_json(doc: &Value, shape: &[u64], data: &[u8], descr: &str, ctx: &str) {
    assert_eq!(
        doc["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect::<Vec<_>>(),
        shape,
        "{ctx}"
    );
    let item: usize = descr[2..].parse().unwrap();
    let mut flat = Vec::new();
    flatten(&doc["data"], shape.len(), &mut flat);
    assert_eq!(flat.len() * item, data.len(), "{ctx}: element count");
    for (i, v) in flat.iter().enumerate() {
        assert_json_element(v, &data[i * item..(i + 1) * item], descr, &format!("{ctx} element {i}"));
    }
}

pub async fn read_npy(app: &Router, uri: &str) -> (Reply, Npy) {
    let reply = get(app, uri).await;
    assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
    assert!(String::from_utf8_lossy(&reply.body[..reply.body.len().min(128)]).contains("'fortran_order': False"));
    let npy = parse_npy(&reply.body);
    (reply, npy)
}

/// The Zarr v3 name of a manifest `dtype` (`NumPy`'s `str(dtype)`: `float32`, or a typestr
/// such as `>f8` for a non-native byte order).
pub fn v3_name(dtype: &str) -> String {
    let Some(rest) = dtype.strip_prefix(['<', '>', '|', '=']) else { return dtype.to_owned() };
    let bits = rest[1..].parse::<u32>().unwrap() * 8;
    match &rest[..1] {
        "b" => "bool".to_owned(),
        "i" => format!("int{bits}"),
        "u" => format!("uint{bits}"),
        "f" => format!("float{bits}"),
        "c" => format!("complex{bits}"),
        other => panic!("unexpected dtype kind {other}"),
    }
}

/// Full reads in every format, every selection case, every bad selection.
pub async fn check_all_arrays(app: &Router, set: &str) {
    let manifest: Value = serde_json::from_slice(&std::fs::read(set_dir(set).join("manifest.json")).unwrap()).unwrap();
    let cases = cases(set);
    for array in manifest["arrays"].as_array().unwrap() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&set_dir(set), path);
        let shape: Vec<u64> = array["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(want.shape, shape);

        let (reply, got) = read_npy(app, &format!("/v1/slice/conf/{path}")).await;
        assert_eq!(got.descr, want.descr, "{path}");
        assert_eq!(got.shape, want.shape, "{path}");
        assert_same_bits(path, "", &got.data, &want.data);
        assert_eq!(reply.header("zarr-shape"), shape.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
        assert_eq!(reply.header("zarr-data-type"), v3_name(array["dtype"].as_str().unwrap()));
        assert!(reply.header("etag").starts_with('"'), "{path}: strong ETag");

        let bin = get(app, &format!("/v1/slice/conf/{path}?format=bin")).await;
        assert_eq!(bin.header("content-type"), "application/octet-stream");
        assert_same_bits(path, "bin", &bin.body, &want.data);

        let json = get(app, &format!("/v1/slice/conf/{path}?format=json")).await;
        assert_eq!(json.status, 200, "{}", json.describe());
        let doc = json.json();
        assert_eq!(doc["data_type"], v3_name(array["dtype"].as_str().unwrap()));
        assert_json(&doc, &shape, &want.data, &want.descr, path);

        for case in cases[path]["ok"].as_array().unwrap() {
            let s = case["s"].as_str().unwrap();
            let rshape: Vec<u64> = case["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let (_, got) = read_npy(app, &format!("/v1/slice/conf/{path}?s={}", encode_s(s))).await;
            assert_eq!(got.shape, rshape, "{path} s={s}");
            let runs =
                case["runs"].as_array().unwrap().iter().map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()));
            let want_data = gather(&want, &runs.flat_map(|(start, len)| start..start + len).collect::<Vec<_>>());
            assert_same_bits(path, s, &got.data, &want_data);
            if want_data.len() <= 512 * want.item() {
                let json = get(app, &format!("/v1/slice/conf/{path}?s={}&format=json", encode_s(s))).await;
                assert_json(&json.json(), &rshape, &want_data, &want.descr, &format!("{path} s={s}"));
            }
        }
        for bad in cases[path]["errors"].as_array().unwrap() {
            let s = bad.as_str().unwrap();
            let reply = get(app, &format!("/v1/slice/conf/{path}?s={}", encode_s(s))).await;
            let doc = reply.assert_problem(400);
            assert!(doc["detail"].as_str().unwrap().len() > 20, "{path} s={s}: {doc}");
        }
    }
}

/// The routes besides slices, for every array of a set: array info, the chunk listing
/// (whose keys must be the objects really stored), each stored chunk raw (byte for byte the
/// stored object) and decoded (the expected values of its region) for unsharded arrays,
/// the metadata document through `/zarr`, and a 304 for a repeated slice request.
pub async fn check_routes(app: &Router, set: &str) {
    let dir = set_dir(set);
    let manifest: Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    for array in manifest["arrays"].as_array().unwrap() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&dir, path);
        let info = get(app, &format!("/v1/arrays/conf/{path}")).await;
        assert_eq!(info.status, 200, "{}", info.describe());
        let info = info.json();
        let v2 = dir.join("data.zarr").join(path).join(".zarray").exists();
        assert_eq!(info["zarr_format"], if v2 { 2 } else { 3 }, "{path}");
        assert_eq!(info["data_type"].as_str().map(str::to_owned), Some(v3_name(array["dtype"].as_str().unwrap())));
        let sharded = !info["sharding"].is_null();

        let meta_key = if v2 { ".zarray" } else { "zarr.json" };
        let doc = get(app, &format!("/zarr/conf/{path}/{meta_key}")).await;
        assert_eq!(doc.status, 200, "{}", doc.describe());
        assert_eq!(doc.body.as_ref(), std::fs::read(dir.join("data.zarr").join(path).join(meta_key)).unwrap());

        let listing = get(app, &format!("/v1/chunks/conf/{path}?limit=10000")).await;
        assert_eq!(listing.status, 200, "{}", listing.describe());
        let listing = listing.json();
        assert!(listing["next"].is_null(), "{path}: fixture arrays have fewer than 10000 chunks");
        let mut present = 0;
        for chunk in listing["chunks"].as_array().unwrap() {
            let key = chunk["key"].as_str().unwrap();
            let file = dir.join("data.zarr").join(key);
            let state = chunk["state"].as_str().unwrap();
            assert_eq!(state == "present", file.is_file(), "{path}: listed {key} as {state}");
            if state != "present" {
                continue;
            }
            present += 1;
            assert_eq!(chunk["size"].as_u64().unwrap(), std::fs::metadata(&file).unwrap().len(), "{key}");
            if sharded {
                continue;
            }
            let coords: Vec<String> = chunk["coords"].as_array().unwrap().iter().map(ToString::to_string).collect();
            let uri = format!("/v1/chunk/conf/{path}?c={}", coords.join(","));
            let raw = get(app, &uri).await;
            assert_eq!(raw.status, 200, "{}", raw.describe());
            assert_eq!(raw.header("zarr-chunk-key"), key);
            assert_eq!(raw.body.as_ref(), std::fs::read(&file).unwrap(), "{key}: raw bytes");
            let (_, decoded) = read_npy(app, &format!("{uri}&decoded=true&format=npy")).await;
            // The chunk's region of the expected array, in C order.
            let origin: Vec<u64> = chunk["origin"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let shape: Vec<u64> = chunk["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(decoded.shape, shape, "{key}");
            let indices = super::region_indices(&want.shape, &origin, &shape);
            if want.is_text() {
                let texts = want.texts();
                let region: Vec<String> = indices.iter().map(|&i| texts[i as usize].clone()).collect();
                assert_eq!(decoded.texts(), region, "{key}: decoded text");
                let json = get(app, &format!("{uri}&decoded=true&format=json")).await;
                assert_eq!(json_texts(&json.json(), &shape), region, "{key}: decoded text as JSON");
            } else {
                assert_same_bits(path, key, &decoded.data, &gather(&want, &indices));
            }
        }
        let files = count_chunk_files(&dir.join("data.zarr").join(path));
        assert_eq!(present, files, "{path}: every stored chunk object is listed");

        let first = get(app, &format!("/v1/slice/conf/{path}")).await;
        let etag = first.header("etag").to_owned();
        let again = super::get_with(app, &format!("/v1/slice/conf/{path}"), &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, 304, "{path}: {}", again.describe());
    }
}

/// The stored chunk objects of an array directory: every file that is not a metadata document.
pub fn count_chunk_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap();
        if p.is_dir() {
            n += count_chunk_files(&p);
        } else if !name.starts_with(".z") && name != "zarr.json" {
            n += 1;
        }
    }
    n
}

pub const SETS: [&str; 10] = [
    "conformance",
    "extra",
    "zarr-v2",
    "zarr-v2-extra",
    "fanout",
    "fanout-extra",
    "strings",
    "codecs",
    "codecs-v2",
    "geozarr-codecs",
];
/// Sets whose every route is checked (the v3 sets' routes have their own tests in api.rs).
pub const ROUTE_SETS: [&str; 8] =
    ["zarr-v2", "zarr-v2-extra", "fanout", "fanout-extra", "strings", "codecs", "codecs-v2", "geozarr-codecs"];
/// Sets of `string` arrays, whose expected values are `NumPy` `U` arrays.
pub const TEXT_SETS: [&str; 1] = ["strings"];

/// The strings of a JSON `data` member of `shape` (nested lists), in C order.
pub fn json_texts(doc: &Value, shape: &[u64]) -> Vec<String> {
    assert_eq!(doc["data_type"], "string", "{doc}");
    assert_eq!(
        doc["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect::<Vec<_>>(),
        shape,
        "{doc}"
    );
    let mut flat = Vec::new();
    flatten(&doc["data"], shape.len(), &mut flat);
    flat.iter().map(|v| v.as_str().unwrap_or_else(|| panic!("{v} is not a string")).to_owned()).collect()
}

/// The `.npy` of text is exactly what `numpy.save` writes for the `U` array of the
/// elements: `<U{longest, at least 1}`, UTF-32LE padded with NULs.
pub fn assert_text_npy(got: &Npy, want: &[String], shape: &[u64], ctx: &str) {
    let width = want.iter().map(|t| t.chars().count()).max().unwrap_or(0).max(1);
    assert_eq!(got.descr, format!("<U{width}"), "{ctx}");
    assert_eq!(got.shape, shape, "{ctx}");
    assert_eq!(got.data.len(), want.len() * width * 4, "{ctx}: body length");
    assert_eq!(got.texts(), want, "{ctx}");
}

/// Every text array in json and npy, for every selection case; bin and png are 406.
pub async fn check_text_arrays(app: &Router, set: &str) {
    let manifest: Value = serde_json::from_slice(&std::fs::read(set_dir(set).join("manifest.json")).unwrap()).unwrap();
    let cases = cases(set);
    for array in manifest["arrays"].as_array().unwrap() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&set_dir(set), path);
        let texts = want.texts();
        let shape: Vec<u64> = array["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(want.shape, shape);

        // The whole array is byte for byte the expected file NumPy wrote.
        let (reply, got) = read_npy(app, &format!("/v1/slice/conf/{path}")).await;
        assert_eq!(got.descr, want.descr, "{path}");
        assert_same_bits(path, "", &got.data, &want.data);
        assert_eq!(reply.header("zarr-shape"), shape.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
        assert_eq!(reply.header("zarr-data-type"), "string");
        assert!(reply.header("etag").starts_with('"'), "{path}: strong ETag");

        let json = get(app, &format!("/v1/slice/conf/{path}?format=json")).await;
        assert_eq!(json.status, 200, "{}", json.describe());
        assert_eq!(json.header("content-type"), "application/json");
        assert_eq!(json_texts(&json.json(), &shape), texts, "{path}: json");

        for format in ["bin", "png"] {
            let doc = get(app, &format!("/v1/slice/conf/{path}?format={format}")).await.assert_problem(406);
            let detail = doc["detail"].as_str().unwrap();
            assert!(detail.contains("json") && detail.contains("npy"), "{path} {format}: {detail}");
        }
        let accept = super::get_with(app, &format!("/v1/slice/conf/{path}"), &[("accept", "image/png")]).await;
        accept.assert_problem(406);

        for case in cases[path]["ok"].as_array().unwrap() {
            let s = case["s"].as_str().unwrap();
            let rshape: Vec<u64> = case["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let runs =
                case["runs"].as_array().unwrap().iter().map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()));
            let want_texts: Vec<String> =
                runs.flat_map(|(start, len)| start..start + len).map(|i| texts[i as usize].clone()).collect();
            let (_, got) = read_npy(app, &format!("/v1/slice/conf/{path}?s={}", encode_s(s))).await;
            assert_text_npy(&got, &want_texts, &rshape, &format!("{path} s={s}"));
            let json = get(app, &format!("/v1/slice/conf/{path}?s={}&format=json", encode_s(s))).await;
            assert_eq!(json.status, 200, "{path} s={s}: {}", json.describe());
            assert_eq!(json_texts(&json.json(), &rshape), want_texts, "{path} s={s}: json");
        }
        for bad in cases[path]["errors"].as_array().unwrap() {
            let s = bad.as_str().unwrap();
            get(app, &format!("/v1/slice/conf/{path}?s={}", encode_s(s))).await.assert_problem(400);
        }
        check_text_inner_chunks(app, set, path, &want).await;
    }
}

/// For sharded text arrays, every inner chunk: raw (the bytes of the shard at
/// `Zarr-Byte-Range`), decoded as json and npy (the expected region), or 404 when the shard
/// is missing or the chunk empty (then the expected region is all fill).
pub async fn check_text_inner_chunks(app: &Router, set: &str, path: &str, want: &Npy) {
    let info = get(app, &format!("/v1/arrays/conf/{path}")).await.json();
    let Some(inner) = info["read_chunk_shape"].as_array() else { return };
    let inner: Vec<u64> = inner.iter().map(|v| v.as_u64().unwrap()).collect();
    let fill = info["fill_value"].as_str().unwrap();
    let texts = want.texts();
    let grid: Vec<u64> = want.shape.iter().zip(&inner).map(|(n, e)| n.div_ceil(*e)).collect();
    let count: u64 = grid.iter().product();
    let (mut found, mut absent) = (0, 0);
    for flat in 0..count {
        let coords = super::unravel(flat, &grid);
        let origin: Vec<u64> = coords.iter().zip(&inner).map(|(c, e)| c * e).collect();
        let shape: Vec<u64> = origin.iter().zip(&inner).zip(&want.shape).map(|((o, e), n)| (*e).min(n - o)).collect();
        let n: u64 = shape.iter().product();
        let region: Vec<String> = (0..n)
            .map(|mut f| {
                let (mut index, mut stride) = (0, 1);
                for d in (0..shape.len()).rev() {
                    index += (origin[d] + f % shape[d]) * stride;
                    f /= shape[d];
                    stride *= want.shape[d];
                }
                texts[index as usize].clone()
            })
            .collect();
        let c = coords.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let uri = format!("/v1/chunk/conf/{path}?c={c}");
        let raw = get(app, &uri).await;
        if raw.status == 404 {
            absent += 1;
            assert!(region.iter().all(|t| t == fill), "{path} c={c}: a chunk that is not stored reads as fill");
            continue;
        }
        found += 1;
        assert_eq!(raw.status, 200, "{}", raw.describe());
        let (a, b) = raw.header("zarr-byte-range").split_once('-').unwrap();
        let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
        let shard = std::fs::read(set_dir(set).join("data.zarr").join(raw.header("zarr-chunk-key"))).unwrap();
        assert_eq!(raw.body.as_ref(), &shard[a..=b], "{path} c={c}: raw bytes");
        let json = get(app, &format!("{uri}&decoded=true&format=json")).await;
        assert_eq!(json_texts(&json.json(), &shape), region, "{path} c={c}: decoded json");
        let (_, npy) = read_npy(app, &format!("{uri}&decoded=true")).await;
        assert_text_npy(&npy, &region, &shape, &format!("{path} c={c}: decoded npy"));
        get(app, &format!("{uri}&decoded=true&format=bin")).await.assert_problem(406);
    }
    assert!(found > 0 && absent > 0, "{path}: the fixture has stored and unstored inner chunks");
}

/// Every check of one fixture set over `store`: values in every format, and the other
/// routes where the set asks for them.
pub async fn check_set(store: zarrd_core::store::Store, set: &str) {
    let app = super::app_with(vec![("conf", store)], super::config(""));
    check_reads(&app, set).await;
    if ROUTE_SETS.contains(&set) {
        check_routes(&app, set).await;
    }
}

/// Every array of `set` (served as dataset `conf`) read in every format and for many
/// selections.
pub async fn check_reads(app: &Router, set: &str) {
    if TEXT_SETS.contains(&set) {
        check_text_arrays(app, set).await;
    } else {
        check_all_arrays(app, set).await;
    }
}
