//! HTTP behaviour of the catalog and slice routes: negotiation, validators, and every
//! error path answered with the right problem document.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::sync::Arc;

use common::{
    altered_app, app_with, config, conformance_app, conformance_dir, get, get_with, memory_store_handle, parse_npy,
};
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use serde_json::{Value, json};

async fn put_json(mem: &InMemory, key: &str, doc: &Value) {
    mem.put(&Path::from(key), doc.to_string().into_bytes().into()).await.unwrap();
}

async fn read_json(mem: &InMemory, key: &str) -> Value {
    serde_json::from_slice(&mem.get(&Path::from(key)).await.unwrap().bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn health_and_catalog() {
    let app = conformance_app();
    let health = get(&app, "/healthz").await;
    assert_eq!((health.status.as_u16(), health.body.as_ref()), (200, b"ok".as_slice()));
    let mut list = get(&app, "/v1/datasets").await.json();
    let checked_at = list["datasets"][0]["health"]["checked_at"].take();
    assert!(checked_at.as_str().is_some_and(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok()), "{checked_at}");
    assert_eq!(
        list,
        json!({"datasets": [{"name": "conf", "title": "conf title", "health": {"status": "ok", "checked_at": null}, "versioned": false}]})
    );
    let tree = get(&app, "/v1/datasets/conf").await.json();
    let nodes = tree["nodes"].as_array().unwrap();
    let manifest = common::manifest();
    for array in manifest["arrays"].as_array().unwrap() {
        let node =
            nodes.iter().find(|n| n["path"] == array["path"]).unwrap_or_else(|| panic!("{} not listed", array["path"]));
        assert_eq!(node["node_type"], "array");
        assert_eq!(node["shape"], array["shape"]);
        assert_eq!(node["data_type"], array["dtype"]);
    }
    assert!(nodes.iter().any(|n| n["path"] == "sharded" && n["node_type"] == "group"));
    // Chunk directories are not nodes.
    assert!(!nodes.iter().any(|n| n["path"].as_str().unwrap().ends_with("/c")));
    get(&app, "/v1/datasets/nope").await.assert_problem(404);
}

#[tokio::test]
async fn array_info_describes_grids_and_sharding() {
    let app = conformance_app();
    let rect = get(&app, "/v1/arrays/conf/sharded/i2_rect_shards").await.json();
    let stored: Value = serde_json::from_slice(
        &std::fs::read(conformance_dir().join("data.zarr/sharded/i2_rect_shards/zarr.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rect["chunk_grid"]["kind"], "rectilinear");
    assert_eq!(rect["chunk_grid"]["chunk_sizes"], stored["chunk_grid"]["configuration"]["chunk_shapes"]);
    assert_eq!(rect["codecs"], stored["codecs"]);
    assert_eq!(rect["read_chunk_shape"], stored["codecs"][0]["configuration"]["chunk_shape"]);
    assert_eq!(rect["sharding"]["index_location"], "end");
    assert_eq!(rect["sharding"]["nested"], false);
    let nested = get(&app, "/v1/arrays/conf/sharded/u4_nested").await.json();
    assert_eq!(nested["sharding"]["nested"], true);
    assert_eq!(nested["read_chunk_shape"], json!([4, 4]));
    let regular = get(&app, "/v1/arrays/conf/regular/i8_gzip_transpose_be").await.json();
    assert_eq!(regular["chunk_grid"]["kind"], "regular");
    assert_eq!(regular["read_chunk_shape"], Value::Null);
    assert_eq!(regular["sharding"], Value::Null);
    assert_eq!(regular["zarr_format"], 3);
    get(&app, "/v1/arrays/conf/regular").await.assert_problem(404);
    get(&app, "/v1/arrays/conf/regular/nope").await.assert_problem(404);
    get(&app, "/v1/arrays/conf/regular/../regular/c8").await.assert_problem(404);
    get(&app, "/v1/arrays/conf/regular/c8?x=1").await.assert_problem(400);
}

#[tokio::test]
async fn formats_are_negotiated() {
    let app = conformance_app();
    let uri = "/v1/slice/conf/regular/c8?s=0:2,0:2";
    for (accept, media) in [
        ("application/json", "application/json"),
        ("application/octet-stream", "application/octet-stream"),
        ("*/*", "application/x-npy"),
    ] {
        assert_eq!(get_with(&app, uri, &[("accept", accept)]).await.header("content-type"), media);
    }
    get_with(&app, uri, &[("accept", "text/html")]).await.assert_problem(406);
    get(&app, &format!("{uri}&format=tiff")).await.assert_problem(400);
    // png needs 2-D real data.
    get(&app, "/v1/slice/conf/regular/i8_gzip_transpose_be?format=png").await.assert_problem(406);
    get(&app, "/v1/slice/conf/regular/c8?format=png").await.assert_problem(406);
    get(&app, "/v1/slice/conf/regular/u1_blosc?vmin=0").await.assert_problem(400);
    get(&app, "/v1/slice/conf/regular/u1_blosc?format=png&vmin=abc").await.assert_problem(400);
    // The window rule of IIIF and map tiles: vmin not above vmax.
    for uri in [
        "/v1/slice/conf/regular/u1_blosc?format=png&vmin=10&vmax=5",
        "/v1/chunk/conf/regular/u1_blosc?c=0,0&decoded=true&format=png&vmin=10&vmax=5",
    ] {
        let doc = get(&app, uri).await.assert_problem(400);
        assert!(doc["detail"].as_str().unwrap().contains("must not be greater than `vmax`"), "{doc}");
    }
    let doc = get(&app, "/v1/datasets/conf?x=1").await.assert_problem(400);
    assert!(doc["detail"].as_str().unwrap().contains("takes no query parameters"), "{doc}");
    get(&app, "/v1/slice/conf/regular/u1_blosc?s=1&s=2").await.assert_problem(400);
    let scalar = get(&app, "/v1/slice/conf/regular/scalar_f8?format=json").await;
    assert_eq!(scalar.header("zarr-shape"), "");
    assert!(scalar.json()["data"].is_number());
}

#[tokio::test]
async fn etag_gives_304_and_changes_with_the_data() {
    let (app, mem) = altered_app("[cache]\nmetadata_ttl_secs = 1").await;
    let uri = "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:10";
    let first = get(&app, uri).await;
    let etag = first.header("etag").to_owned();
    assert!(etag.starts_with('"') && etag.len() > 10);
    let again = get_with(&app, uri, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, 304);
    assert_eq!(again.header("etag"), etag);
    assert!(again.body.is_empty());
    let other = get(&app, "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:11").await;
    assert_ne!(other.header("etag"), etag);
    // Rewriting a chunk the selection reads changes the ETag once the remembered
    // versions expire (cache.metadata_ttl_secs).
    let chunk = mem.get(&Path::from("regular/f4_zstd_partial/c/0/0")).await.unwrap().bytes().await.unwrap();
    mem.put(&Path::from("regular/f4_zstd_partial/c/0/0"), chunk.to_vec().into()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let rewritten = get_with(&app, uri, &[("if-none-match", &etag)]).await;
    assert_eq!(rewritten.status, 200, "{}", rewritten.describe());
    assert_ne!(rewritten.header("etag"), etag);
}

#[tokio::test]
async fn unknown_names_are_404() {
    let app = conformance_app();
    let doc = get(&app, "/v1/slice/nope/x").await.assert_problem(404);
    assert!(doc["detail"].as_str().unwrap().contains("conf"), "lists the configured datasets: {doc}");
    get(&app, "/v1/slice/conf/regular/missing").await.assert_problem(404);
    get(&app, "/v1/slice/conf/sharded").await.assert_problem(404);
    get(&app, "/v1/slice/conf").await.assert_problem(404);
    get(&app, "/nowhere").await.assert_problem(404);
}

#[tokio::test]
async fn results_over_the_limit_are_413() {
    let (app, _) = altered_app("[limits]\nmax_response_bytes = 1000\nmax_chunks_per_request = 4").await;
    // 37*53 float32 = 7844 bytes > 1000.
    let doc = get(&app, "/v1/slice/conf/regular/f4_zstd_partial").await.assert_problem(413);
    let detail = doc["detail"].as_str().unwrap();
    assert!(detail.contains("7844") && detail.contains("1000"), "{detail}");
    assert_eq!(get(&app, "/v1/slice/conf/regular/f4_zstd_partial?s=0:5,0:5").await.status, 200);
    // JSON text is bounded too.
    get(&app, "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:10&format=json").await.assert_problem(413);
    // Too many chunks: u1_months_3d has one chunk per month along time.
    let doc = get(&app, "/v1/slice/conf/rectilinear/u1_months_3d?s=::30,0,0").await.assert_problem(413);
    assert!(doc["detail"].as_str().unwrap().contains("chunks"), "{doc}");
}

#[tokio::test]
async fn unsupported_features_are_422_naming_them() {
    let (app, mem) = altered_app("").await;
    let key = "regular/c8/zarr.json";
    let original = read_json(&mem, key).await;
    let cases = [
        (
            "codecs",
            json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zfp", "configuration": {}}]),
            "zfp",
        ),
        // `string` is served (with `vlen-utf8`, see tests/it/strings.rs); variable-length bytes are not.
        ("data_type", json!({"name": "raw_bytes", "configuration": {"length_bytes": 8}}), "raw_bytes"),
        ("chunk_grid", json!({"name": "hexagonal", "configuration": {}}), "hexagonal"),
        ("chunk_key_encoding", json!({"name": "suffix", "configuration": {"suffix": ".tif"}}), "suffix"),
        // The fanout draft requires max_children >= 100.
        ("chunk_key_encoding", json!({"name": "fanout", "configuration": {"max_children": 10}}), "max_children"),
        ("future_extension", json!({"name": "x"}), "future_extension"),
    ];
    for (field, value, name) in cases {
        let mut doc = original.clone();
        doc[field] = value;
        put_json(&mem, key, &doc).await;
        // Metadata is cached; a fresh app sees the new document.
        let store = zarrd_core::store::Store::new(mem.clone(), Path::default());
        let app = app_with(vec![("conf", store)], config(""));
        for uri in ["/v1/slice/conf/regular/c8", "/v1/arrays/conf/regular/c8"] {
            let problem = get(&app, uri).await.assert_problem(422);
            assert!(problem["detail"].as_str().unwrap().contains(name), "{field}: {problem}");
        }
    }
    // An extension marked must_understand: false is ignored.
    let mut doc = original.clone();
    doc["future_extension"] = json!({"name": "x", "must_understand": false});
    put_json(&mem, key, &doc).await;
    let store = zarrd_core::store::Store::new(mem.clone(), Path::default());
    assert_eq!(get(&app_with(vec![("conf", store)], config("")), "/v1/slice/conf/regular/c8").await.status, 200);
    drop(app);
}

#[tokio::test]
async fn corrupt_stored_data_is_502_naming_the_key() {
    let (app, mem) = altered_app("").await;
    // Inner chunks carry crc32c; flip the first data byte of a shard.
    let key = "sharded/f4_crc32c_inner_boundary/c/0/0";
    let mut shard = mem.get(&Path::from(key)).await.unwrap().bytes().await.unwrap().to_vec();
    shard[0] ^= 0x55;
    mem.put(&Path::from(key), shard.clone().into()).await.unwrap();
    let problem = get(&app, "/v1/slice/conf/sharded/f4_crc32c_inner_boundary?s=0:5,0:10").await.assert_problem(502);
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains(key) && detail.contains("crc32c"), "{detail}");
    // The error is not cached: repairing the object makes the same request succeed.
    shard[0] ^= 0x55;
    mem.put(&Path::from(key), shard.into()).await.unwrap();
    assert_eq!(get(&app, "/v1/slice/conf/sharded/f4_crc32c_inner_boundary?s=0:5,0:10").await.status, 200);

    // A shard shorter than its index.
    let (app, mem) = altered_app("").await;
    mem.put(&Path::from("sharded/i2_rect_shards/c/0/0"), vec![1u8, 2, 3].into()).await.unwrap();
    let problem = get(&app, "/v1/slice/conf/sharded/i2_rect_shards?s=0:2,0:2").await.assert_problem(502);
    assert!(problem["detail"].as_str().unwrap().contains("sharded/i2_rect_shards/c/0/0"), "{problem}");

    // A chunk that is not zstd at all.
    mem.put(&Path::from("regular/f4_zstd_partial/c/0/0"), b"garbage".to_vec().into()).await.unwrap();
    get(&app, "/v1/slice/conf/regular/f4_zstd_partial?s=0,0").await.assert_problem(502);

    // Invalid stored metadata is a 502 too, naming the document.
    mem.put(&Path::from("regular/c8/zarr.json"), b"{not json".to_vec().into()).await.unwrap();
    let problem = get(&app, "/v1/arrays/conf/regular/c8").await.assert_problem(502);
    assert!(problem["detail"].as_str().unwrap().contains("regular/c8/zarr.json"), "{problem}");
}

#[tokio::test]
async fn missing_shards_and_chunks_read_as_fill_value() {
    let (app, mem) = altered_app("").await;
    // Delete one shard of a sharded array and one chunk of a regular array; both read as
    // the fill value from their zarr.json (0.0 and 0 here).
    mem.delete(&Path::from("sharded/f4_crc32c_inner_boundary/c/0/0")).await.unwrap();
    let got = parse_npy(&get(&app, "/v1/slice/conf/sharded/f4_crc32c_inner_boundary?s=0:20,0:40").await.body);
    assert_eq!(got.data, vec![0u8; 20 * 40 * 4]);
    let meta = read_json(&mem, "regular/u2_dot_separator/zarr.json").await;
    let fill = meta["fill_value"].as_u64().unwrap() as u16;
    let chunk_shape = meta["chunk_grid"]["configuration"]["chunk_shape"].clone();
    let (r, c) = (chunk_shape[0].as_u64().unwrap(), chunk_shape[1].as_u64().unwrap());
    mem.delete(&Path::from("regular/u2_dot_separator/c.0.0")).await.unwrap();
    let got = parse_npy(&get(&app, &format!("/v1/slice/conf/regular/u2_dot_separator?s=0:{r},0:{c}")).await.body);
    assert!(got.data.chunks_exact(2).all(|b| u16::from_le_bytes([b[0], b[1]]) == fill));
}

#[tokio::test]
async fn png_renders_scaled_gray_with_transparent_fill() {
    let app = conformance_app();
    // f4_zstd_partial has missing chunks (NaN fill) - those pixels are transparent.
    let reply = get(&app, "/v1/slice/conf/regular/f4_zstd_partial?format=png&vmin=-1000&vmax=1000").await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(reply.header("content-type"), "image/png");
    let decoder = png::Decoder::new(std::io::Cursor::new(reply.body.to_vec()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height, info.color_type), (53, 37, png::ColorType::GrayscaleAlpha));
    let want = common::expected(&conformance_dir(), "regular/f4_zstd_partial");
    for (i, px) in buf.chunks_exact(2).enumerate() {
        let v = f32::from_le_bytes(want.data[i * 4..i * 4 + 4].try_into().unwrap());
        if v.is_nan() {
            assert_eq!(px[1], 0, "pixel {i}: fill is transparent");
        } else {
            let level = ((f64::from(v) + 1000.0) * 255.0 / 2000.0).round().clamp(0.0, 255.0) as u8;
            assert_eq!((px[0], px[1]), (level, 255), "pixel {i} value {v}");
        }
    }
}

#[tokio::test]
async fn consolidated_metadata_and_what_it_left_out_are_listed() {
    // The extra set's root has consolidated metadata, which zarr-python wrote without the
    // tensorstore arrays (they sit under an implicit group).
    let app = app_with(vec![("extra", common::local_store(&common::fixtures().join("extra/data.zarr")))], config(""));
    let tree = get(&app, "/v1/datasets/extra").await.json();
    let nodes = tree["nodes"].as_array().unwrap();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(common::fixtures().join("extra/manifest.json")).unwrap()).unwrap();
    for array in manifest["arrays"].as_array().unwrap() {
        let node =
            nodes.iter().find(|n| n["path"] == array["path"]).unwrap_or_else(|| panic!("{} not listed", array["path"]));
        assert_eq!((&node["shape"], &node["node_type"]), (&array["shape"], &json!("array")));
    }
    assert!(nodes.iter().any(|n| n["path"] == "groups/a/b" && n["node_type"] == "group"));
}

#[tokio::test]
async fn chunks_too_large_to_decode_are_422_not_an_allocation() {
    let (app, mem) = altered_app("").await;
    // 100000 x 100000 uint8 chunks: 10 GB each if decoded.
    let doc = json!({
        "zarr_format": 3, "node_type": "array", "shape": [200_000, 200_000], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100_000, 100_000]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}]
    });
    put_json(&mem, "giant/zarr.json", &doc).await;
    mem.put(&Path::from("giant/c/0/0"), zstd::encode_all(&[0u8; 16][..], 1).unwrap().into()).await.unwrap();
    let problem = get(&app, "/v1/slice/conf/giant?s=0:2,0:2").await.assert_problem(422);
    assert!(problem["detail"].as_str().unwrap().contains("giant/c/0/0"), "{problem}");
    // A chunk that does not exist is just fill, whatever its size.
    assert_eq!(get(&app, "/v1/slice/conf/giant?s=150000:150002,0:2&format=bin").await.body.as_ref(), &[0u8; 4]);
}

/// A Zarr v2 store: the tree, array info, readiness, and the errors of v2 metadata and data
/// (unknown numcodecs ids and dtypes are 422 naming them; undecodable chunks 502 naming the key).
#[tokio::test]
async fn zarr_v2_info_tree_and_errors() {
    let (store, mem) = memory_store_handle(&common::fixtures().join("zarr-v2/data.zarr")).await;
    let app = app_with(vec![("conf", store)], config(""));
    assert_eq!(get(&app, "/readyz").await.status, 200);
    let tree = get(&app, "/v1/datasets/conf").await.json();
    let nodes = tree["nodes"].as_array().unwrap();
    assert!(nodes.iter().any(|n| n["path"] == "grid" && n["node_type"] == "group"), "{tree}");
    assert!(nodes.iter().any(|n| n["path"] == "grid/f8_zstd_be" && n["data_type"] == "float64"), "{tree}");
    let info = get(&app, "/v1/arrays/conf/grid/i4_delta_blosc_zstd_bitshuffle").await.json();
    assert_eq!(info["zarr_format"], 2);
    assert_eq!(info["data_type"], "int32");
    assert_eq!(info["codecs"][0]["id"], "delta");
    assert_eq!(info["codecs"][1]["id"], "blosc");
    assert_eq!(info["chunk_key_encoding"], json!({"name": "v2", "configuration": {"separator": "."}}));
    assert_eq!(info["chunk_grid"]["chunk_sizes"], json!([20, 20]));
    let info = get(&app, "/v1/arrays/conf/grid/f4_blosc_default").await.json();
    assert_eq!((info["fill_value"].clone(), info["attributes"]["units"].clone()), (json!("NaN"), json!("K")));

    let key = "grid/u1_lz4/.zarray";
    let original = read_json(&mem, key).await;
    for (field, value, name) in [
        ("compressor", json!({"id": "zfpy", "mode": 4}), "zfpy"),
        ("filters", json!([{"id": "quantize", "digits": 2, "dtype": "|u1"}]), "quantize"),
        ("dtype", json!("|V4"), "|V4"),
        ("zarr_format", json!(1), "zarr_format"),
    ] {
        let mut doc = original.clone();
        doc[field] = value;
        put_json(&mem, key, &doc).await;
        let store = zarrd_core::store::Store::new(mem.clone(), Path::default());
        let app = app_with(vec![("conf", store)], config(""));
        for uri in ["/v1/slice/conf/grid/u1_lz4", "/v1/arrays/conf/grid/u1_lz4"] {
            let problem = get(&app, uri).await.assert_problem(422);
            assert!(problem["detail"].as_str().unwrap().contains(name), "{field}: {problem}");
        }
    }
    put_json(&mem, key, &original).await;
    // An lz4 chunk whose size header promises more than the chunk holds.
    let chunk = Path::from("grid/u1_lz4/0.0");
    let mut bytes = mem.get(&chunk).await.unwrap().bytes().await.unwrap().to_vec();
    bytes[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    mem.put(&chunk, bytes.into()).await.unwrap();
    let store = zarrd_core::store::Store::new(mem.clone(), Path::default());
    let app = app_with(vec![("conf", store)], config(""));
    let problem = get(&app, "/v1/slice/conf/grid/u1_lz4?s=0,0").await.assert_problem(502);
    assert!(problem["detail"].as_str().unwrap().contains("grid/u1_lz4/0.0"), "{problem}");
}

/// A node the server cannot serve stays in the tree as what its document says it is: an
/// unreadable group is a group (not an array), an array with an unsupported codec an array,
/// a v2 `.zgroup` that does not parse a group; a document whose kind cannot be told at all
/// is left out rather than guessed.
#[tokio::test]
async fn unreadable_nodes_are_listed_as_what_they_are() {
    let mem = Arc::new(InMemory::new());
    let put = |key: &str, body: &str| {
        let (mem, key, body) = (Arc::clone(&mem), Path::from(key), body.to_owned());
        async move { mem.put(&key, body.into()).await.unwrap() }
    };
    put("zarr.json", r#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#).await;
    put("broken_group/zarr.json", r#"{"zarr_format": 3, "node_type": "group", "attributes": 7}"#).await;
    put("future_group/zarr.json", r#"{"zarr_format": 4, "node_type": "group"}"#).await;
    put("v2_group/.zgroup", r#"{"zarr_format": 2, "extra": "#).await;
    put(
        "odd_array/zarr.json",
        r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "no-such-codec"}]}"#,
    )
    .await;
    put("garbage/zarr.json", "{not json").await;
    let store = zarrd_core::store::Store::new(mem, Path::default());
    let app = app_with(vec![("odd", store)], config(""));
    let tree = get(&app, "/v1/datasets/odd").await;
    assert_eq!(tree.status, 200, "{}", tree.describe());
    let kinds: std::collections::BTreeMap<String, String> = tree.json()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["path"].as_str().unwrap().to_owned(), n["node_type"].as_str().unwrap().to_owned()))
        .collect();
    let want: std::collections::BTreeMap<String, String> = [
        ("", "group"),
        ("broken_group", "group"),
        ("future_group", "group"),
        ("v2_group", "group"),
        ("odd_array", "array"),
    ]
    .into_iter()
    .map(|(p, k)| (p.to_owned(), k.to_owned()))
    .collect();
    assert_eq!(kinds, want);
    // Each is still refused with its reason when asked for.
    get(&app, "/v1/arrays/odd/odd_array").await.assert_problem(422);
    get(&app, "/v1/arrays/odd/garbage").await.assert_problem(502);
}
