//! The data types beyond numbers and `string`, read through every route and compared with
//! what zarr-python 3.4.2 reads (tests/fixtures/dtypes, written by `make_dtype_fixtures.py`):
//! `numpy.datetime64` / `numpy.timedelta64` in every kind of unit (scaled ones too, `NaT`
//! fills, v2 `<M8`/`<m8`/`>M8`), `fixed_length_utf32` / v2 `<U`, `>U`, `null_terminated_bytes`
//! / v2 `|S`, `variable_length_bytes` / v2 `|O` + `vlen-bytes`, and v2 `|O` text whose
//! fill zarr-python 2 wrote as `0` or `null`.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use axum::Router;
use base64::Engine as _;
use common::get;
use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;
use serde_json::{Value, json};

fn dir() -> std::path::PathBuf {
    common::fixtures().join("dtypes")
}

fn manifest() -> Vec<Value> {
    let m: Value = serde_json::from_slice(&std::fs::read(dir().join("manifest.json")).unwrap()).unwrap();
    m["arrays"].as_array().unwrap().clone()
}

fn app() -> Router {
    common::app_with(vec![("d", common::local_store(&dir().join("data.zarr")))], common::config(""))
}

/// A `.npy` file (v1 header, C order), read without zarrd's encoder: descr, shape, data.
#[derive(Debug, Clone)]
struct Npy {
    descr: String,
    shape: Vec<u64>,
    data: Vec<u8>,
}

fn npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "an npy v1.0 file");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    assert!(header.contains("'fortran_order': False"), "{header}");
    let descr = header.split("'descr': '").nth(1).unwrap().split('\'').next().unwrap().to_owned();
    let shape_text = header.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
    let shape = shape_text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    Npy { descr, shape, data: bytes[10 + len..].to_vec() }
}

fn expected(name: &str) -> Npy {
    npy(&std::fs::read(dir().join("expected").join(format!("{name}.npy"))).unwrap())
}

/// Bytes per element of a descr: `<M8[..]` 8, `<U6` 24, `|S5` 5.
fn item(descr: &str) -> usize {
    let kind = &descr[1..2];
    match kind {
        "M" | "m" => 8,
        "U" => 4 * descr[2..].parse::<usize>().unwrap(),
        "S" => descr[2..].parse().unwrap(),
        other => panic!("kind {other}"),
    }
}

fn v3_name(descr: &str) -> &'static str {
    match &descr[1..2] {
        "M" => "numpy.datetime64",
        "m" => "numpy.timedelta64",
        "U" => "fixed_length_utf32",
        "S" => "null_terminated_bytes",
        other => panic!("kind {other}"),
    }
}

fn flatten(v: &Value, depth: usize, out: &mut Vec<Value>) {
    if depth == 0 {
        out.push(v.clone());
    } else {
        for x in v.as_array().unwrap() {
            flatten(x, depth - 1, out);
        }
    }
}

/// The JSON elements zarrd must write for `data`: ISO 8601 strings for datetimes (from
/// numpy's `datetime_as_string`, in `iso`), counts for timedeltas, `NaT` as null, text with
/// numpy's trailing NULs dropped, bytes (likewise) as base64.
fn json_want(descr: &str, data: &[u8], iso: Option<&Vec<Value>>) -> Vec<Value> {
    data.chunks_exact(item(descr))
        .enumerate()
        .map(|(i, b)| match &descr[1..2] {
            "M" => iso.unwrap()[i].clone(),
            "m" => match i64::from_le_bytes(b.try_into().unwrap()) {
                i64::MIN => Value::Null,
                v => json!(v),
            },
            "U" => json!(common::utf32_text(b)),
            _ => {
                let end = b.iter().rposition(|&x| x != 0).map_or(0, |e| e + 1);
                json!(base64::engine::general_purpose::STANDARD.encode(&b[..end]))
            }
        })
        .collect()
}

fn unit_of(descr: &str) -> Option<&str> {
    matches!(&descr[1..2], "M" | "m").then(|| descr.split('[').nth(1).map_or("", |u| u.trim_end_matches(']')))
}

async fn check_json(app: &Router, uri: &str, descr: &str, shape: &[u64], want: &[Value]) {
    let reply = get(app, uri).await;
    assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
    let doc = reply.json();
    assert_eq!(doc["data_type"], v3_name(descr), "{uri}");
    assert_eq!(doc["shape"], json!(shape), "{uri}");
    if let Some(unit) = unit_of(descr) {
        assert_eq!(doc["unit"], unit, "{uri}");
    }
    let mut got = Vec::new();
    flatten(&doc["data"], shape.len(), &mut got);
    assert_eq!(got, want, "{uri}");
}

/// The region of `want` (C order) at `origin` of `shape`.
fn region(want: &Npy, origin: &[u64], shape: &[u64]) -> Vec<u8> {
    let item = item(&want.descr);
    common::region_indices(&want.shape, origin, shape)
        .into_iter()
        .flat_map(|i| want.data[i as usize * item..(i as usize + 1) * item].iter().copied())
        .collect()
}

fn fixed_arrays() -> Vec<Value> {
    manifest().into_iter().filter(|a| a["dtype"] != "|O").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_in_every_format_match_zarr_python() {
    let app = app();
    for array in fixed_arrays() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&path.replace('/', "__"));
        assert_eq!(array["dtype"], want.descr.as_str());
        let iso = array["iso"].as_array();
        let reply = get(&app, &format!("/v1/slice/d/{path}")).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.describe());
        assert_eq!(reply.header("zarr-data-type"), v3_name(&want.descr), "{path}");
        let got = npy(&reply.body);
        assert_eq!((&got.descr, &got.shape), (&want.descr, &want.shape), "{path}: npy header");
        assert!(got.data == want.data, "{path}: npy data");
        let bin = get(&app, &format!("/v1/slice/d/{path}?format=bin")).await;
        assert!(bin.body == want.data, "{path}: bin");
        let json_elements = json_want(&want.descr, &want.data, iso);
        check_json(&app, &format!("/v1/slice/d/{path}?format=json"), &want.descr, &want.shape, &json_elements).await;
        if let Some(sel) = array["sel"].as_str() {
            let s: String = url::form_urlencoded::byte_serialize(sel.replace(' ', "").as_bytes()).collect();
            let want_sel = expected(&format!("{}__sel", path.replace('/', "__")));
            let got = npy(&get(&app, &format!("/v1/slice/d/{path}?s={s}")).await.body);
            assert_eq!((&got.descr, &got.shape), (&want_sel.descr, &want_sel.shape), "{path} s={sel}");
            assert!(got.data == want_sel.data, "{path} s={sel}: npy data");
            if unit_of(&want.descr) != Some("") && &want.descr[1..2] != "M" {
                let elements = json_want(&want.descr, &want_sel.data, None);
                let uri = format!("/v1/slice/d/{path}?s={s}&format=json");
                check_json(&app, &uri, &want.descr, &want_sel.shape, &elements).await;
            }
        }
        // Times, text and bytes have no brightness.
        if want.shape.len() == 2 {
            let png = get(&app, &format!("/v1/slice/d/{path}?format=png")).await.assert_problem(406);
            assert!(png["detail"].as_str().unwrap().contains(v3_name(&want.descr)), "{png}");
            let id = format!("d%2F{path}");
            get(&app, &format!("/iiif/3/{id}/info.json")).await.assert_problem(422);
        }
        let info = get(&app, &format!("/v1/arrays/d/{path}")).await.json();
        // The v3 form (as stored for v3 arrays): the name with the unit or length.
        assert_eq!(info["data_type"]["name"], v3_name(&want.descr), "{path}: {info}");
    }
    common::assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decoded_chunks_and_stored_documents_match_zarr_python() {
    let app = app();
    for array in fixed_arrays() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&path.replace('/', "__"));
        let v2 = array["zarr_format"] == 2;
        let meta_key = if v2 { ".zarray" } else { "zarr.json" };
        let stored = std::fs::read(dir().join("data.zarr").join(path).join(meta_key)).unwrap();
        assert_eq!(get(&app, &format!("/zarr/d/{path}/{meta_key}")).await.body.as_ref(), stored.as_slice());
        let listing = get(&app, &format!("/v1/chunks/d/{path}?limit=1000")).await.json();
        let sharded = !get(&app, &format!("/v1/arrays/d/{path}")).await.json()["sharding"].is_null();
        let mut decoded = 0;
        for chunk in listing["chunks"].as_array().unwrap() {
            if chunk["state"] != "present" || sharded {
                continue;
            }
            let coords: Vec<String> = chunk["coords"].as_array().unwrap().iter().map(ToString::to_string).collect();
            let origin: Vec<u64> = chunk["origin"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let shape: Vec<u64> = chunk["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let uri = format!("/v1/chunk/d/{path}?c={}&decoded=true", coords.join(","));
            let got = npy(&get(&app, &format!("{uri}&format=npy")).await.body);
            assert_eq!((&got.descr, &got.shape), (&want.descr, &shape), "{uri}");
            let want_region = region(&want, &origin, &shape);
            assert!(got.data == want_region, "{uri}: decoded chunk");
            if &want.descr[1..2] != "M" {
                let elements = json_want(&want.descr, &want_region, None);
                check_json(&app, &format!("{uri}&format=json"), &want.descr, &shape, &elements).await;
            }
            decoded += 1;
        }
        if sharded {
            // The first inner chunk (the read grid's first chunk), cut from its shard.
            let info = get(&app, &format!("/v1/arrays/d/{path}")).await.json();
            let inner: Vec<u64> =
                info["read_chunk_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let zeros = vec!["0"; inner.len()].join(",");
            let uri = format!("/v1/chunk/d/{path}?c={zeros}&decoded=true");
            let reply = get(&app, &uri).await;
            assert_eq!(reply.status, 200, "{uri}: {}", reply.describe());
            let got = npy(&reply.body);
            let shape: Vec<u64> = inner.iter().zip(&want.shape).map(|(c, s)| *c.min(s)).collect();
            assert_eq!((&got.descr, &got.shape), (&want.descr, &shape), "{uri}");
            assert!(got.data == region(&want, &vec![0; shape.len()], &shape), "{uri}: decoded inner chunk");
            decoded += 1;
        }
        assert!(decoded > 0, "{path}: no chunk decoded");
    }
    common::assert_no_panics();
}

/// Rebuilds an array from a compatibility view (every chunk zstd over little-endian
/// elements; a missing chunk is the fill) and compares it with zarr-python's values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compatibility_views_carry_the_types_and_their_values() {
    let app = app();
    for array in fixed_arrays() {
        let path = array["path"].as_str().unwrap();
        let want = expected(&path.replace('/', "__"));
        let item = item(&want.descr);
        for v2 in [false, true] {
            let (base, key) = if v2 { ("/compat/v2", ".zarray") } else { ("/compat/v3", "zarr.json") };
            let reply = get(&app, &format!("{base}/d/{path}/{key}")).await;
            assert_eq!(reply.status, 200, "{base} {path}: {}", reply.describe());
            let doc = reply.json();
            if v2 {
                assert_eq!(doc["dtype"], want.descr.as_str(), "{path}");
            } else {
                assert_eq!(doc["data_type"]["name"], v3_name(&want.descr), "{path}");
                if array["zarr_format"] == 3 {
                    let stored: Value = serde_json::from_slice(
                        &std::fs::read(dir().join("data.zarr").join(path).join("zarr.json")).unwrap(),
                    )
                    .unwrap();
                    assert_eq!(doc["data_type"], stored["data_type"], "{path}");
                    assert_eq!(doc["fill_value"], stored["fill_value"], "{path}");
                }
            }
            let chunk: Vec<u64> = if v2 {
                doc["chunks"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
            } else {
                doc["chunk_grid"]["configuration"]["chunk_shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect()
            };
            // The first view chunk, when it lies wholly inside the array.
            if chunk.iter().zip(&want.shape).any(|(c, s)| c > s) {
                continue;
            }
            let zeros = vec!["0"; chunk.len()].join("/");
            let key = if v2 { zeros } else { format!("c/{zeros}") };
            let reply = get(&app, &format!("{base}/d/{path}/{key}")).await;
            if reply.status == 404 {
                continue;
            }
            assert_eq!(reply.status, 200, "{base}/d/{path}/{key}: {}", reply.describe());
            let data = zstd::decode_all(reply.body.as_ref()).unwrap();
            let origin = vec![0; chunk.len()];
            assert_eq!(data.len(), chunk.iter().product::<u64>() as usize * item);
            assert!(data == region(&want, &origin, &chunk), "{base}/d/{path}/{key}: values");
        }
    }
    common::assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_text_fill_values_read_as_zarr_python_reads_them() {
    let app = app();
    for array in manifest().into_iter().filter(|a| a["texts"].is_array()) {
        let path = array["path"].as_str().unwrap();
        let reply = get(&app, &format!("/v1/slice/d/{path}?format=json")).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.describe());
        assert_eq!(reply.json()["data"], array["texts"], "{path}");
        let got = npy(&get(&app, &format!("/v1/slice/d/{path}")).await.body);
        let texts: Vec<String> = got.data.chunks_exact(item(&got.descr)).map(common::utf32_text).collect();
        assert_eq!(json!(texts), array["texts"], "{path}: npy");
    }
    common::assert_no_panics();
}

/// Metadata naming an unknown unit, a bad scale factor or a bad length is 422 naming what
/// is wrong, never a panic; so are the types not served yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_type_metadata_is_422_naming_the_field() {
    let (store, mem) = common::memory_store_handle(&dir().join("data.zarr")).await;
    let app = common::app_with(vec![("d", store)], common::config(""));
    let zarr_json = |data_type: Value| {
        json!({"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]})
    };
    let cases = [
        (
            "zarr.json",
            zarr_json(json!({"name": "numpy.datetime64", "configuration": {"unit": "fortnight", "scale_factor": 1}})),
            "unit",
        ),
        (
            "zarr.json",
            zarr_json(json!({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 0}})),
            "scale_factor",
        ),
        (
            "zarr.json",
            zarr_json(json!({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": -3}})),
            "scale_factor",
        ),
        (
            "zarr.json",
            zarr_json(json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}})),
            "length_bytes",
        ),
        (
            "zarr.json",
            zarr_json(json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 0}})),
            "length_bytes",
        ),
        ("zarr.json", zarr_json(json!({"name": "raw_bytes", "configuration": {"length_bytes": 2}})), "raw_bytes"),
        (
            ".zarray",
            json!({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<M8[fortnight]", "fill_value": null,
            "order": "C", "filters": null, "compressor": null}),
            "M8[fortnight]",
        ),
        (
            ".zarray",
            json!({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|S0", "fill_value": null,
            "order": "C", "filters": null, "compressor": null}),
            "|S0",
        ),
    ];
    for (i, (key, doc, field)) in cases.into_iter().enumerate() {
        mem.put(&ObjectPath::from(format!("bad{i}/{key}")), doc.to_string().into_bytes().into()).await.unwrap();
        for uri in [format!("/v1/slice/d/bad{i}"), format!("/v1/arrays/d/bad{i}")] {
            let problem = get(&app, &uri).await.assert_problem(422);
            assert!(problem["detail"].as_str().unwrap().contains(field), "{uri}: {problem}");
        }
    }
    common::assert_no_panics();
}

/// The elements of a `vlen-bytes` framing: a u32 count, then each a u32 length and bytes.
fn unframe(bytes: &[u8]) -> Vec<Vec<u8>> {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 4;
    (0..u32_at(0))
        .map(|_| {
            let len = u32_at(at);
            at += 4 + len;
            bytes[at - len..at].to_vec()
        })
        .collect()
}

/// `variable_length_bytes` (v3 `vlen-bytes`, also sharded; v2 `|O` + VLenBytes): JSON as
/// base64 strings, npy as the `|S{longest}` array `numpy.save` writes for those bytes,
/// decoded chunks, and both compatibility views.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variable_length_bytes_match_zarr_python() {
    let app = app();
    let b64 = |s: &Value| base64::engine::general_purpose::STANDARD.decode(s.as_str().unwrap()).unwrap();
    for array in manifest().into_iter().filter(|a| a["base64"].is_array()) {
        let path = array["path"].as_str().unwrap();
        let shape: Vec<u64> = array["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let want: Vec<Vec<u8>> = array["base64"].as_array().unwrap().iter().map(b64).collect();
        let reply = get(&app, &format!("/v1/slice/d/{path}?format=json")).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.describe());
        assert_eq!(reply.header("zarr-data-type"), "variable_length_bytes");
        let doc = reply.json();
        assert_eq!(doc["encoding"], "base64", "{path}");
        let mut got = Vec::new();
        flatten(&doc["data"], shape.len(), &mut got);
        assert_eq!(json!(got), array["base64"], "{path}: json");
        // npy: `numpy.array(list_of_bytes)` saved, NUL-padded to the longest.
        let got = npy(&get(&app, &format!("/v1/slice/d/{path}")).await.body);
        let width = want.iter().map(Vec::len).max().unwrap().max(1);
        assert_eq!((got.descr.as_str(), &got.shape), (format!("|S{width}").as_str(), &shape), "{path}");
        let padded: Vec<u8> = want.iter().flat_map(|w| [w.clone(), vec![0; width - w.len()]].concat()).collect();
        assert!(got.data == padded, "{path}: npy data");
        if let Some(sel) = array["sel"].as_str() {
            let s: String = url::form_urlencoded::byte_serialize(sel.replace(' ', "").as_bytes()).collect();
            let doc = get(&app, &format!("/v1/slice/d/{path}?s={s}&format=json")).await.json();
            let sel_shape: Vec<u64> =
                array["sel_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let mut got = Vec::new();
            flatten(&doc["data"], sel_shape.len(), &mut got);
            assert_eq!(json!(got), array["sel_base64"], "{path} s={sel}");
        }
        let bin = get(&app, &format!("/v1/slice/d/{path}?format=bin")).await.assert_problem(406);
        assert!(bin["detail"].as_str().unwrap().contains("variable_length_bytes"), "{bin}");
        // The first read-grid chunk, decoded.
        let zeros = vec!["0"; shape.len()].join(",");
        let chunk = get(&app, &format!("/v1/chunk/d/{path}?c={zeros}&decoded=true&format=json")).await;
        assert_eq!(chunk.status, 200, "{path}: {}", chunk.describe());
        let chunk_shape: Vec<u64> = chunk.header("zarr-shape").split(',').map(|d| d.parse().unwrap()).collect();
        let mut got = Vec::new();
        flatten(&chunk.json()["data"], chunk_shape.len(), &mut got);
        let region: Vec<Value> = (0..chunk_shape.iter().product::<u64>())
            .map(|mut flat| {
                let mut index = 0;
                let mut stride = 1;
                for d in (0..shape.len()).rev() {
                    index += (flat % chunk_shape[d]) * stride;
                    flat /= chunk_shape[d];
                    stride *= shape[d];
                }
                array["base64"][index as usize].clone()
            })
            .collect();
        assert_eq!(got, region, "{path}: decoded chunk");
        // Both views declare the type and frame it with vlen-bytes.
        let v3 = get(&app, &format!("/compat/v3/d/{path}/zarr.json")).await.json();
        assert_eq!(v3["data_type"], "variable_length_bytes", "{path}");
        assert_eq!(v3["codecs"][0]["name"], "vlen-bytes", "{path}");
        let v2 = get(&app, &format!("/compat/v2/d/{path}/.zarray")).await.json();
        assert_eq!((v2["dtype"].as_str(), &v2["filters"]), (Some("|O"), &json!([{"id": "vlen-bytes"}])), "{path}");
        let view_chunk: Vec<u64> = v3["chunk_grid"]["configuration"]["chunk_shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        if view_chunk.iter().zip(&shape).all(|(c, s)| c <= s) {
            let key = format!("c/{}", vec!["0"; shape.len()].join("/"));
            let reply = get(&app, &format!("/compat/v3/d/{path}/{key}")).await;
            assert_eq!(reply.status, 200, "{path}/{key}: {}", reply.describe());
            let elements = unframe(&zstd::decode_all(reply.body.as_ref()).unwrap());
            let n: u64 = view_chunk.iter().product();
            let want_region: Vec<Vec<u8>> = (0..n)
                .map(|mut flat| {
                    let mut index = 0;
                    let mut stride = 1;
                    for d in (0..shape.len()).rev() {
                        index += (flat % view_chunk[d]) * stride;
                        flat /= view_chunk[d];
                        stride *= shape[d];
                    }
                    want[index as usize].clone()
                })
                .collect();
            assert_eq!(elements, want_region, "{path}/{key}");
        }
    }
    common::assert_no_panics();
}
