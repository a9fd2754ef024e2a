//! Hot responses (`cache.response_*`, src/http/responses.rs): which answers are kept,
//! how long they are replayed, and that a replay fits the request's negotiating headers.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{altered_app, get, get_with, metric};
use object_store::ObjectStoreExt;
use object_store::path::Path;

/// Hot responses (`cache.response_*`, src/http/responses.rs): a request asked again is
/// kept and replayed from then on without the read path, for at most `response_ttl_secs`;
/// a request asked once is never kept; conditional requests and errors always go through.
#[tokio::test]
async fn hot_responses_are_replayed_for_their_lifetime_only() {
    // Without the decoded-chunk cache every read that runs fetches the chunk.
    let (app, mem) = altered_app("[cache]\nchunk_bytes = 0\nresponse_ttl_secs = 1").await;
    let uri = "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:10&format=bin";
    let once = "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:9&format=bin";
    let key = Path::from("regular/f4_zstd_partial/c/0/0");
    let first = get(&app, uri).await;
    assert_eq!(first.status, 200, "{}", first.describe());
    let kept_before = metric(&app, "zarrd_cache_kept_total{cache=\"response\"} ").await;
    assert_eq!(get(&app, uri).await.body, first.body, "the second miss: read and kept");
    assert!(metric(&app, "zarrd_cache_kept_total{cache=\"response\"} ").await > kept_before, "counted as kept");
    assert_eq!(get(&app, once).await.status, 200, "asked once: read, not kept");
    // The chunk becomes garbage: a read would now be a 502, so a 200 is the kept response.
    let original = mem.get(&key).await.unwrap().bytes().await.unwrap();
    mem.put(&key, b"garbage".to_vec().into()).await.unwrap();
    get(&app, once).await.assert_problem(502);
    let hits_before = metric(&app, RESPONSE_HITS).await;
    let again = get(&app, uri).await;
    assert!(metric(&app, RESPONSE_HITS).await > hits_before, "counted as a hit in /metrics");
    assert_eq!((again.status.as_u16(), &again.body), (200, &first.body), "{}", again.describe());
    assert_eq!(again.header("etag"), first.header("etag"));
    assert_ne!(again.header("x-request-id"), first.header("x-request-id"), "request ids stay per request");
    // A conditional request reads, and finds the garbage.
    get_with(&app, uri, &[("if-none-match", "\"other\"")]).await.assert_problem(502);
    // Once the lifetime is over the read path runs again; its error is not kept.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    get(&app, uri).await.assert_problem(502);
    mem.put(&key, original.into()).await.unwrap();
    let repaired = get(&app, uri).await;
    assert_eq!((repaired.status.as_u16(), &repaired.body), (200, &first.body), "{}", repaired.describe());
}

/// The response cache's hits so far (`/metrics`, process-wide).
const RESPONSE_HITS: &str = "zarrd_cache_hits_total{cache=\"response\"} ";

/// A kept response is replayed only to requests with the same `Accept-Encoding`, `Origin`
/// and host: a compressed body, another origin's CORS headers or another host's IIIF ids
/// never reach the wrong client.
#[tokio::test]
async fn hot_responses_depend_on_the_negotiating_headers() {
    let (app, _) = altered_app("[http]\ncors_origins = [\"https://a.example\"]").await;
    let uri = "/v1/slice/conf/regular/f4_zstd_partial?s=0:10,0:20&format=json";
    // Each asked twice: the second answer is kept (and a third would be replayed).
    let (mut plain, mut gzip, mut cors) = (None, None, None);
    for _ in 0..2 {
        plain = Some(get(&app, uri).await);
        gzip = Some(get_with(&app, uri, &[("accept-encoding", "gzip")]).await);
        cors = Some(get_with(&app, uri, &[("origin", "https://a.example")]).await);
    }
    let (plain, gzip, cors) = (plain.unwrap(), gzip.unwrap(), cors.unwrap());
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), "");
    assert_eq!(plain.header("access-control-allow-origin"), "");
    assert_eq!(gzip.header("content-encoding"), "gzip", "{}", gzip.describe());
    assert_eq!(cors.header("access-control-allow-origin"), "https://a.example", "{}", cors.describe());
    assert_eq!(cors.body, plain.body);
    // And each is answered with its own.
    let hits_before = metric(&app, RESPONSE_HITS).await;
    let again = get(&app, uri).await;
    assert_eq!((again.header("content-encoding"), &again.body), ("", &plain.body));
    let again = get_with(&app, uri, &[("accept-encoding", "gzip")]).await;
    assert_eq!((again.header("content-encoding"), &again.body), ("gzip", &gzip.body));
    let again = get_with(&app, uri, &[("origin", "https://a.example")]).await;
    assert_eq!(again.header("access-control-allow-origin"), "https://a.example");
    // The plain and the CORS answers (a compressed body is streamed, never kept).
    assert!(metric(&app, RESPONSE_HITS).await >= hits_before + 2, "replayed");
    // IIIF info.json names the image by the URL the client used.
    let info = "/iiif/3/conf%2Fregular%2Ff4_zstd_partial/info.json";
    for _ in 0..3 {
        for (headers, id) in [
            (vec![("host", "a.example")], "http://a.example/iiif/3/conf%2Fregular%2Ff4_zstd_partial"),
            (vec![("host", "b.example")], "http://b.example/iiif/3/conf%2Fregular%2Ff4_zstd_partial"),
            (
                vec![("host", "b.example"), ("x-forwarded-proto", "https"), ("x-forwarded-host", "maps.example")],
                "https://maps.example/iiif/3/conf%2Fregular%2Ff4_zstd_partial",
            ),
        ] {
            let doc = get_with(&app, info, &headers).await.json();
            assert_eq!(doc["id"], id, "{headers:?}");
        }
    }
}
