//! String arrays when the stored bytes are wrong or the result is too large: every failure
//! is a problem document (502 naming the chunk, 413 giving the sizes), never a panic, and
//! no length read from storage is trusted before it is checked against the bytes present.
//! The values themselves are checked against zarr-python's in `tests/it/conformance.rs`.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use common::get;
use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;

fn strings_dir() -> std::path::PathBuf {
    common::fixtures().join("strings/data.zarr")
}

/// The vlen-utf8 framing of `items`, as the spec (and zarr-python) lays it out.
fn frame(count: u32, items: &[&[u8]]) -> Vec<u8> {
    let mut out = count.to_le_bytes().to_vec();
    for item in items {
        out.extend((item.len() as u32).to_le_bytes());
        out.extend(*item);
    }
    out
}

#[tokio::test]
async fn corrupt_text_chunks_are_502_naming_the_chunk() {
    let (store, mem) = common::memory_store_handle(&strings_dir()).await;
    let app = common::app_with(vec![("s", store)], common::config(""));
    // `plain_1d` has chunks of 4 elements and no compressor: these are the stored bytes.
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("fewer elements than the chunk shape", frame(3, &[b"a", b"b", b"c"])),
        ("a length past the end", {
            let mut f = frame(4, &[b"a", b"b", b"c", b"d"]);
            f[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
            f
        }),
        ("invalid UTF-8", frame(4, &[b"a", &[0xc3, 0x28], b"c", b"d"])),
        ("a count the bytes cannot hold", frame(u32::MAX, &[])),
        ("trailing bytes", {
            let mut f = frame(4, &[b"a", b"b", b"c", b"d"]);
            f.push(0);
            f
        }),
        ("too short for a count", vec![4, 0]),
    ];
    for (what, bytes) in cases {
        mem.put(&ObjectPath::from("plain_1d/c/0"), bytes.into()).await.unwrap();
        for uri in
            ["/v1/slice/s/plain_1d?format=json", "/v1/slice/s/plain_1d?s=1:3", "/v1/chunk/s/plain_1d?c=0&decoded=true"]
        {
            let doc = get(&app, uri).await.assert_problem(502);
            let detail = doc["detail"].as_str().unwrap();
            assert!(detail.contains("plain_1d/c/0") && detail.contains("vlen-utf8"), "{what} {uri}: {detail}");
        }
        // The other chunk is still readable, and the raw chunk is what is stored.
        assert_eq!(get(&app, "/v1/slice/s/plain_1d?s=4:&format=json").await.status, 200, "{what}");
        assert_eq!(get(&app, "/v1/chunk/s/plain_1d?c=0").await.status, 200, "{what}");
    }
}

#[tokio::test]
async fn a_chunk_declaring_more_than_the_budget_is_refused_before_decoding() {
    let (store, mem) = common::memory_store_handle(&strings_dir()).await;
    let zeros = vec![0u8; 64 << 20];
    // 64 MiB of zeros compress to a few KiB. A one-shot frame records its decoded size,
    // a streamed one does not.
    let declared = zstd::bulk::compress(&zeros, 3).unwrap();
    let streamed = zstd::encode_all(&zeros[..], 3).unwrap();
    assert!(declared.len() < 1 << 20 && streamed.len() < 1 << 20);
    let small = common::config("[limits]\nmemory_bytes = 16777216\nmemory_wait_ms = 100");
    let app = common::app_with(vec![("s", store.clone())], small);
    let roomy = common::app_with(vec![("s", store)], common::config(""));
    for (frame, refusal) in [(declared, "budget"), (streamed, "does not record its size")] {
        mem.put(&ObjectPath::from("words_1d_zstd/c/0"), frame.into()).await.unwrap();
        // Refused before decoding: the recorded size is more than the whole budget, or
        // nothing is recorded and the decoder stops at the budget's share.
        let doc = get(&app, "/v1/slice/s/words_1d_zstd?s=0:2&format=json").await.assert_problem(413);
        assert!(doc["detail"].as_str().unwrap().contains(refusal), "{doc}");
        get(&app, "/v1/chunk/s/words_1d_zstd?c=0&decoded=true&format=json").await.assert_problem(413);
        // With room for it, the decoded bytes are checked: zeros are a count of 0, not 5.
        let doc = get(&roomy, "/v1/slice/s/words_1d_zstd?s=0:2&format=json").await.assert_problem(502);
        assert!(doc["detail"].as_str().unwrap().contains("words_1d_zstd/c/0"), "{doc}");
    }
}

#[tokio::test]
async fn text_beyond_the_response_limit_is_413() {
    let store = common::local_store(&strings_dir());
    let app = common::app_with(vec![("s", store)], common::config("[limits]\nmax_response_bytes = 600"));
    // One element is 300 'x's: as UTF-32 in npy the array is far over 600 bytes.
    let doc = get(&app, "/v1/slice/s/words_1d_zstd").await.assert_problem(413);
    assert!(doc["detail"].as_str().unwrap().contains("600"), "{doc}");
    get(&app, "/v1/slice/s/words_1d_zstd?format=json").await.assert_problem(413);
    // A small selection still fits.
    let ok = get(&app, "/v1/slice/s/words_1d_zstd?s=1:3&format=json").await;
    assert_eq!(ok.status, 200, "{}", ok.describe());
    // Too many elements is refused before anything is read (16 bytes of table each).
    let app = common::app_with(
        vec![("s", common::local_store(&strings_dir()))],
        common::config("[limits]\nmax_response_bytes = 100"),
    );
    get(&app, "/v1/slice/s/sharded_2d?format=json").await.assert_problem(413);
}

#[tokio::test]
async fn text_formats_and_parameters() {
    let app = common::app_with(vec![("s", common::local_store(&strings_dir()))], common::config(""));
    // Accept negotiation: JSON when asked for, 406 naming the usable formats for the rest.
    let json = common::get_with(&app, "/v1/slice/s/scalar", &[("accept", "application/json")]).await;
    assert_eq!(json.header("content-type"), "application/json");
    assert_eq!(json.header("zarr-shape"), "");
    let doc = common::get_with(&app, "/v1/slice/s/scalar", &[("accept", "application/octet-stream")])
        .await
        .assert_problem(406);
    assert!(doc["detail"].as_str().unwrap().contains("string"), "{doc}");
    get(&app, "/v1/slice/s/plain_1d?format=json&vmin=0").await.assert_problem(400);
    // JSON escapes: no control character is left raw in the body.
    let all = get(&app, "/v1/slice/s/words_1d_zstd?format=json").await;
    let text = String::from_utf8(all.body.to_vec()).unwrap();
    assert!(!text.bytes().any(|b| b < 0x20), "control characters are escaped");
    // (Their values are compared with zarr-python's in tests/it/conformance.rs.)
}
