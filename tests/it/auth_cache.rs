//! Access control runs before the response cache is consulted (`docs/access-control.md`
//! "What callers see": zarrd's caches "only ever answer a request after its caller's access
//! is checked"): a refused request never even looks the cache up, an allowed one may be
//! answered from it. The test runs alone in a process of its own (`common::alone`), so the
//! process-wide cache counters it reads move only with its own requests.

#![allow(clippy::unwrap_used)]

use crate::common;

use axum::http::Method;
use common::auth::{ARRAY, mint, request, world};

/// (hits, misses) of the response cache so far.
async fn lookups(app: &axum::Router) -> (u64, u64) {
    (
        common::metric(app, "zarrd_cache_hits_total{cache=\"response\"} ").await,
        common::metric(app, "zarrd_cache_misses_total{cache=\"response\"} ").await,
    )
}

#[tokio::test]
async fn refused_requests_never_reach_the_response_cache() {
    if !common::alone(concat!(module_path!(), "::refused_requests_never_reach_the_response_cache")) {
        return;
    }
    let app = world();
    let url = mint(&app, "Bearer alice-key", "/", 600).await;
    let behind = url.trim_end_matches('/');
    let tile = format!("/iiif/3/lab%2F{}/0,0,16,16/16,/0/default.png", ARRAY.replace('/', "%2F"));
    let start = lookups(&app).await;
    // Alice's capability URL: a miss, a second miss that keeps the tile, then a hit.
    let first = request(&app, Method::GET, &format!("{behind}{tile}"), &[], "").await;
    assert_eq!(first.status, 200, "{}", first.describe());
    assert_eq!(lookups(&app).await, (start.0, start.1 + 1));
    for expected in [(start.0, start.1 + 2), (start.0 + 1, start.1 + 2)] {
        let again = request(&app, Method::GET, &format!("{behind}{tile}"), &[], "").await;
        assert_eq!(again.body, first.body);
        assert_eq!(lookups(&app).await, expected);
    }
    // Anonymous, dave, a forged token, a token of carol: refused before any lookup.
    let carol = mint(&app, "Bearer carol-key", "/", 600).await;
    for (uri, headers) in [
        (tile.clone(), vec![]),
        (tile.clone(), vec![("authorization", "Bearer dave-key")]),
        (format!("{behind}x{tile}"), vec![]),
        (format!("{}{tile}", carol.trim_end_matches('/')), vec![]),
    ] {
        let reply = request(&app, Method::GET, &uri, &headers, "").await;
        assert!(matches!(reply.status.as_u16(), 401 | 404), "{uri}: {}", reply.describe());
        assert_eq!(lookups(&app).await, (start.0 + 1, start.1 + 2), "{uri} {headers:?} looked the cache up");
    }
    // A public tile, anonymously, is cached as before: two misses, then a hit.
    let open = tile.replace("lab%2F", "open%2F");
    for expected in [(start.0 + 1, start.1 + 3), (start.0 + 1, start.1 + 4), (start.0 + 2, start.1 + 4)] {
        assert_eq!(request(&app, Method::GET, &open, &[], "").await.status, 200);
        assert_eq!(lookups(&app).await, expected);
    }
}
