//! Conditional requests and negotiation as RFC 9110 words them, on every kind of route:
//! `If-Range` (a range only for the current strong validator), `If-Match` (strong
//! comparison, on the decoded routes too), the `Vary` a 304 repeats from its 200, `Vary:
//! accept` where `Accept` chose the media type, `HEAD` answered with the `GET`'s
//! `Content-Encoding`, and an empty object, of which no range is satisfiable. Expected
//! bytes are the fixture files themselves.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use common::{app_with, config, conformance_app, conformance_dir, get, get_with, local_store};

const KEY: &str = "sharded/i2_rect_shards/c/0/0";

fn file(key: &str) -> Vec<u8> {
    std::fs::read(conformance_dir().join("data.zarr").join(key)).unwrap()
}

fn varies(reply: &common::Reply) -> Vec<String> {
    let mut names: Vec<String> = reply
        .headers
        .get_all("vary")
        .iter()
        .flat_map(|v| v.to_str().unwrap().split(',').map(|s| s.trim().to_ascii_lowercase()).collect::<Vec<_>>())
        .filter(|s| s == "accept" || s == "accept-encoding")
        .collect();
    names.sort();
    names.dedup();
    names
}

async fn head(app: &axum::Router, uri: &str, headers: &[(&str, &str)]) -> axum::http::Response<axum::body::Body> {
    let mut request = axum::http::Request::head(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    tower::ServiceExt::oneshot(app.clone(), request.body(axum::body::Body::empty()).unwrap()).await.unwrap()
}

#[tokio::test]
async fn if_range_serves_the_range_only_for_the_current_strong_validator() {
    let app = conformance_app();
    let uri = format!("/zarr/conf/{KEY}");
    let bytes = file(KEY);
    let full = get(&app, &uri).await;
    let (etag, modified) = (full.header("etag").to_owned(), full.header("last-modified").to_owned());
    let weak = format!("W/{etag}");
    for (if_range, partial) in [
        (etag.as_str(), true),
        (modified.as_str(), true),
        ("\"someone-else\"", false),
        (weak.as_str(), false),
        ("Thu, 01 Jan 1970 00:00:00 GMT", false),
        ("not a validator", false),
    ] {
        let r = get_with(&app, &uri, &[("range", "bytes=0-9"), ("if-range", if_range)]).await;
        if partial {
            assert_eq!((r.status.as_u16(), r.body.as_ref()), (206, &bytes[..10]), "If-Range {if_range}");
        } else {
            // The whole object, as if no Range had been sent: never a mix of two versions.
            assert_eq!((r.status.as_u16(), r.body.as_ref()), (200, bytes.as_slice()), "If-Range {if_range}");
            assert_eq!(r.header("content-range"), "", "If-Range {if_range}");
        }
        let h = head(&app, &uri, &[("range", "bytes=0-9"), ("if-range", if_range)]).await;
        let want = if partial { (206, "10".to_owned()) } else { (200, bytes.len().to_string()) };
        assert_eq!((h.status().as_u16(), h.headers()["content-length"].to_str().unwrap().to_owned()), want);
    }
    // Documents the server makes (a compatibility view's metadata) follow the same rule.
    let doc = get(&app, "/compat/v3/conf/zarr.json").await;
    let tag = doc.header("etag").to_owned();
    let r = get_with(&app, "/compat/v3/conf/zarr.json", &[("range", "bytes=0-4"), ("if-range", &tag)]).await;
    assert_eq!((r.status.as_u16(), r.body.as_ref()), (206, &doc.body[..5]));
    let r = get_with(&app, "/compat/v3/conf/zarr.json", &[("range", "bytes=0-4"), ("if-range", "\"old\"")]).await;
    assert_eq!((r.status.as_u16(), r.body.as_ref()), (200, doc.body.as_ref()));
}

#[tokio::test]
async fn if_match_compares_strong_tags_on_every_route() {
    let app = conformance_app();
    let store = format!("/zarr/conf/{KEY}");
    let slice = "/v1/slice/conf/regular/u2_dot_separator?s=0:2,0:2&format=json";
    let chunk = "/v1/chunk/conf/regular/u2_dot_separator?c=0,0";
    for uri in [store.as_str(), slice, chunk] {
        let etag = get(&app, uri).await.header("etag").to_owned();
        assert!(etag.starts_with('"'), "{uri}: {etag}");
        for fine in [etag.clone(), "*".to_owned(), format!("\"x\", {etag}")] {
            assert_eq!(get_with(&app, uri, &[("if-match", &fine)]).await.status, 200, "{uri} If-Match {fine}");
        }
        // A weak tag never matches in If-Match (RFC 9110 §13.1.1), nor does another one.
        for refused in [format!("W/{etag}"), "\"zzz\"".to_owned()] {
            let r = get_with(&app, uri, &[("if-match", &refused)]).await;
            let doc = r.assert_problem(412);
            assert!(doc["detail"].as_str().unwrap().contains("If-Match"), "{uri}: {doc}");
        }
    }
}

#[tokio::test]
async fn vary_follows_negotiation_and_a_304_repeats_it() {
    let app = conformance_app();
    let base = "/v1/slice/conf/regular/u2_dot_separator?s=0:4,0:4";
    let gzip = ("accept-encoding", "gzip");
    let negotiated = get_with(&app, base, &[("accept", "application/json"), gzip]).await;
    assert_eq!(negotiated.header("content-type"), "application/json");
    assert_eq!(varies(&negotiated), ["accept", "accept-encoding"]);
    let named = get_with(&app, &format!("{base}&format=json"), &[gzip]).await;
    assert_eq!(varies(&named), ["accept-encoding"], "`format` chose the type: Accept plays no part");
    let png = get_with(&app, &format!("{base}&format=png"), &[gzip]).await;
    assert_eq!(varies(&png), Vec::<String>::new(), "images are never compressed");
    for (uri, accept, reply) in [
        (base.to_owned(), "application/json", &negotiated),
        (format!("{base}&format=json"), "*/*", &named),
        (format!("{base}&format=png"), "*/*", &png),
    ] {
        let etag = reply.header("etag");
        let r = get_with(&app, &uri, &[("accept", accept), gzip, ("if-none-match", etag)]).await;
        assert_eq!(r.status, 304, "{uri}");
        assert_eq!(r.header("etag"), etag, "{uri}");
        assert_eq!(varies(&r), varies(reply), "{uri}: a 304 carries its 200's Vary");
    }
    // A compatibility view's document: the 304 keeps `accept-encoding` too.
    let doc = get_with(&app, "/compat/v2/conf/.zmetadata", &[("accept-encoding", "gzip")]).await;
    assert_eq!(doc.header("content-encoding"), "gzip");
    let r = get_with(&app, "/compat/v2/conf/.zmetadata", &[("if-none-match", doc.header("etag"))]).await;
    assert_eq!((r.status.as_u16(), varies(&r)), (304, vec!["accept-encoding".to_owned()]));
}

#[tokio::test]
async fn head_gets_the_headers_of_get() {
    let app = conformance_app();
    for uri in ["/compat/v2/conf/.zmetadata", "/v1/slice/conf/regular/u2_dot_separator?s=0:4,0:4&format=json"] {
        for encoding in ["gzip", "identity"] {
            let got = get_with(&app, uri, &[("accept-encoding", encoding)]).await;
            let h = head(&app, uri, &[("accept-encoding", encoding)]).await;
            assert_eq!(h.status(), 200, "{uri}");
            for name in ["content-encoding", "content-type", "etag"] {
                let head_value = h.headers().get(name).map_or("", |v| v.to_str().unwrap());
                assert_eq!(head_value, got.header(name), "{uri} ({encoding}): {name}");
            }
            let head_varies: Vec<&str> = h.headers().get_all("vary").iter().map(|v| v.to_str().unwrap()).collect();
            let get_varies: Vec<&str> = got.headers.get_all("vary").iter().map(|v| v.to_str().unwrap()).collect();
            assert_eq!(head_varies, get_varies, "{uri} ({encoding})");
            if encoding == "identity" {
                let length = h.headers().get("content-length").map(|v| v.to_str().unwrap().to_owned());
                assert_eq!(length, Some(got.body.len().to_string()), "{uri}");
            }
        }
    }
}

#[tokio::test]
async fn no_range_of_an_empty_object_is_satisfiable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("zarr.json"), r#"{"zarr_format":3,"node_type":"group","attributes":{}}"#).unwrap();
    std::fs::write(dir.path().join("empty"), b"").unwrap();
    let app = app_with(vec![("t", local_store(dir.path()))], config(""));
    let whole = get(&app, "/zarr/t/empty").await;
    assert_eq!((whole.status.as_u16(), whole.body.len()), (200, 0));
    for range in ["bytes=-1", "bytes=0-", "bytes=0-0", "bytes=-0"] {
        let r = get_with(&app, "/zarr/t/empty", &[("range", range)]).await;
        r.assert_problem(416);
        assert_eq!(r.header("content-range"), "bytes */0", "{range}");
        assert_eq!(head(&app, "/zarr/t/empty", &[("range", range)]).await.status(), 416, "HEAD {range}");
    }
}

#[tokio::test]
async fn a_compressed_body_has_a_weak_tag_of_its_own() {
    let app = conformance_app();
    let uri = "/v1/slice/conf/regular/u2_dot_separator?s=0:4,0:4&format=json";
    let plain = get_with(&app, uri, &[("accept-encoding", "identity")]).await;
    let strong = plain.header("etag").to_owned();
    assert!(strong.starts_with('"'), "{strong}");
    for coding in ["gzip", "zstd"] {
        let packed = get_with(&app, uri, &[("accept-encoding", coding)]).await;
        assert_eq!(packed.header("content-encoding"), coding);
        assert_eq!(packed.header("etag"), format!("W/{strong}"), "{coding}: RFC 9110 §8.8.1");
        // Revalidating it works (weak comparison), and the 304 names it the same way.
        let again = get_with(&app, uri, &[("accept-encoding", coding), ("if-none-match", packed.header("etag"))]).await;
        assert_eq!((again.status.as_u16(), again.header("etag")), (304, packed.header("etag")));
        // A client holding the identity body gets the strong tag on its 304.
        let same = get_with(&app, uri, &[("accept-encoding", "identity"), ("if-none-match", &strong)]).await;
        assert_eq!((same.status.as_u16(), same.header("etag")), (304, strong.as_str()));
        // If-Match compares strongly: the weak tag of a compressed body never matches it.
        get_with(&app, uri, &[("accept-encoding", coding), ("if-match", &strong)]).await.assert_problem(412);
    }
    // Stored bytes are never compressed: their tag stays strong whatever the client accepts.
    let stored = get_with(&app, &format!("/zarr/conf/{KEY}"), &[("accept-encoding", "gzip, zstd")]).await;
    assert!(stored.header("etag").starts_with('"'), "{}", stored.header("etag"));
}
