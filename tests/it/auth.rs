//! Access control over HTTP (`docs/access-control.md`): the matrix of callers (anonymous,
//! API keys with and without rights, by name and by group, capability URLs) × every route
//! that names a dataset × public and private datasets; a refused private dataset answers
//! exactly what an unknown one does; bad credentials are 401 with `WWW-Authenticate:
//! Bearer` everywhere; `/v1/datasets` and `/metrics` show a caller only what they may
//! read; private responses are `Cache-Control: private` + `Vary: Authorization`; and for
//! anonymous callers a public dataset is answered exactly as without access control.

#![allow(clippy::unwrap_used)]

use crate::common;

use axum::http::Method;
use common::Reply;
use common::auth::{ARRAY, DATASETS, bearer, load, request, routes, world};

async fn get(app: &axum::Router, uri: &str, headers: &[(&str, &str)]) -> Reply {
    request(app, Method::GET, uri, headers, "").await
}

/// Every value of header `name`, in order.
fn values(reply: &Reply, name: &str) -> Vec<String> {
    reply.headers.get_all(name).iter().map(|v| v.to_str().unwrap().to_owned()).collect()
}

fn varies_on_authorization(reply: &Reply) -> bool {
    values(reply, "vary").iter().any(|v| v.to_ascii_lowercase().contains("authorization"))
}

fn assert_unauthorized(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {}", reply.describe());
    assert!(reply.header("www-authenticate").starts_with("Bearer"), "{what}: {}", reply.describe());
    assert_eq!(reply.header("content-type"), "application/problem+json", "{what}");
    assert_eq!(reply.header("cache-control"), "no-store", "{what}");
}

/// Whether `who` may read `ds` in the world, from its read lists (not from the server).
fn allowed(who: Option<&str>, ds: &str) -> bool {
    let groups: &[&str] = if who == Some("bob") { &["imaging"] } else { &[] };
    match DATASETS.iter().find(|d| d.0 == ds).unwrap().1 {
        None => true,
        Some(list) => {
            who.is_some_and(|w| list.contains(&format!("\"{w}\"")) || groups.iter().any(|g| list.contains(g)))
        }
    }
}

#[tokio::test]
async fn every_route_answers_each_caller_by_the_read_lists() {
    let app = world();
    let callers = [None, Some("alice"), Some("bob"), Some("carol"), Some("dave")];
    for (ds, _) in DATASETS {
        for (uri, ok) in routes(ds) {
            for who in callers {
                let auth = who.map(bearer);
                let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
                let reply = get(&app, &uri, &headers).await;
                let what = format!("{who:?} GET {uri}");
                if allowed(who, ds) {
                    assert_eq!(reply.status.as_u16(), ok, "{what}: {}", reply.describe());
                } else {
                    reply.assert_problem(404);
                    // It names no private dataset but the one asked for.
                    let other = if ds == "lab" { "closed" } else { "lab" };
                    assert!(!String::from_utf8_lossy(&reply.body).contains(other), "{what} names `{other}`");
                }
                // HEAD is refused alike.
                let head = request(&app, Method::HEAD, &uri, &headers, "").await;
                assert_eq!(head.status == 404, !allowed(who, ds), "{what} (HEAD): {}", head.describe());
            }
        }
    }
}

#[tokio::test]
async fn a_refused_private_dataset_is_answered_as_an_unknown_one() {
    // The same server without `lab`: what it answers for `lab` is what an unknown dataset gets.
    let with = world();
    let without = common::auth::app(load("", &["open", "closed"], &[]), &["open", "closed"]);
    for (uri, _) in routes("lab") {
        for headers in [vec![], vec![("accept-encoding", "gzip")], vec![("authorization", "Bearer dave-key")]] {
            let refused = get(&with, &uri, &headers).await;
            let unknown = get(&without, &uri, &headers).await;
            assert_eq!(refused.status, 404, "{uri} {headers:?}: {}", refused.describe());
            assert_eq!(refused.status, unknown.status, "{uri} {headers:?}");
            for name in ["content-type", "content-encoding", "cache-control", "vary", "www-authenticate"] {
                assert_eq!(values(&refused, name), values(&unknown, name), "{name} of {uri} {headers:?}");
            }
            assert_eq!(refused.body, unknown.body, "{uri} {headers:?}");
        }
    }
    // The 404 lists the public datasets only.
    let doc = get(&with, "/v1/datasets/nope", &[]).await.assert_problem(404);
    assert_eq!(doc["detail"], "unknown dataset `nope`; configured datasets: open");
}

#[tokio::test]
async fn bad_credentials_are_401_on_every_route() {
    let app = world();
    let mut uris: Vec<String> = routes("open").into_iter().map(|(u, _)| u).collect();
    uris.extend(["/", "/healthz", "/metrics", "/v1/datasets", "/viewer/viewer.js", "/nope"].map(String::from));
    uris.extend(routes("lab").into_iter().map(|(u, _)| u));
    let bad = [
        "Bearer not-a-key",
        "Bearer alice-key2",
        "Bearer ALICE-KEY",
        "Bearer 72ee9d4355ccb9d3a4c9dbf37382e38e75c1b1a225b5bd1f729ee91bbda30c20", // the digest itself
        "Bearer a.b.c",                                                            // a JWT, but this server takes none
        "Basic YWxpY2U6YWxpY2Uta2V5",
        "Bearer",
        "alice-key",
    ];
    for uri in &uris {
        for credential in bad {
            assert_unauthorized(
                &get(&app, uri, &[("authorization", credential)]).await,
                &format!("{credential} {uri}"),
            );
        }
    }
    // Two Authorization headers are ambiguous: refused, even when one is good.
    let request = axum::http::Request::get("/v1/datasets")
        .header("authorization", "Bearer alice-key")
        .header("authorization", "Bearer dave-key")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.clone(), request).await.unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn the_dataset_list_shows_only_what_the_caller_may_read() {
    let app = world();
    for who in [None, Some("alice"), Some("bob"), Some("carol"), Some("dave")] {
        let auth = who.map(bearer);
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let reply = get(&app, "/v1/datasets", &headers).await;
        assert_eq!(reply.status, 200);
        let names: Vec<String> = reply.json()["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect();
        let mut expected: Vec<String> =
            DATASETS.iter().filter(|(ds, _)| allowed(who, ds)).map(|(ds, _)| (*ds).to_owned()).collect();
        expected.sort();
        assert_eq!(names, expected, "{who:?}");
        // The list depends on the caller: no shared cache may give one caller's to another.
        assert!(varies_on_authorization(&reply), "{who:?} {}", reply.describe());
        assert_eq!(reply.header("cache-control").starts_with("private"), who.is_some(), "{who:?} {}", reply.describe());
    }
}

#[tokio::test]
async fn metrics_never_name_a_private_dataset_to_a_caller_who_may_not_read_it() {
    let app = world();
    // Every dataset's gauge exists once a health check has run.
    for ds in ["open", "lab", "closed"] {
        zarrd_core::ops::metrics::dataset_up(ds, true);
    }
    for (who, shown) in
        [(None, vec!["open"]), (Some("alice"), vec!["open", "lab"]), (Some("carol"), vec!["open", "closed"])]
    {
        let auth = who.map(bearer);
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let text = String::from_utf8(get(&app, "/metrics", &headers).await.body.to_vec()).unwrap();
        for ds in ["open", "lab", "closed"] {
            let named = text.contains(&format!("dataset=\"{ds}\""));
            assert_eq!(named, shown.contains(&ds), "{who:?} and {ds}");
        }
    }
}

#[tokio::test]
async fn private_responses_are_private_and_vary_on_authorization() {
    let app = world();
    for (uri, ok) in routes("lab") {
        let reply = get(&app, &uri, &[("authorization", "Bearer alice-key")]).await;
        assert_eq!(reply.status.as_u16(), ok, "{uri}");
        let cache_control = reply.header("cache-control");
        assert!(cache_control.starts_with("private"), "{uri}: {cache_control}");
        assert!(!cache_control.contains("public") && !cache_control.contains("immutable"), "{uri}: {cache_control}");
        assert!(varies_on_authorization(&reply), "{uri}: {}", reply.describe());
    }
    // A public dataset keeps its caching headers, whoever asks.
    for who in [None, Some("alice")] {
        let auth = who.map(bearer);
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let reply = get(&app, &format!("/v1/arrays/open/{ARRAY}"), &headers).await;
        assert_eq!(reply.header("cache-control"), "public, max-age=60");
        assert!(!varies_on_authorization(&reply), "{}", reply.describe());
    }
}

#[tokio::test]
async fn anonymous_callers_see_public_datasets_exactly_as_without_access_control() {
    let world = world();
    // The same datasets, no [auth] and no read lists: the server as it was.
    let plain = common::app_with(
        vec![("open", common::local_store(&common::conformance_dir().join("data.zarr")))],
        common::config(""),
    );
    let mut uris: Vec<String> = routes("open").into_iter().map(|(u, _)| u).collect();
    uris.extend(["/v1/datasets/nope", "/zarr/open/nope", "/", "/viewer/viewer.css", "/healthz"].map(String::from));
    for uri in uris {
        for headers in [vec![], vec![("accept-encoding", "gzip")], vec![("origin", "https://example.org")]] {
            let a = get(&world, &uri, &headers).await;
            let b = get(&plain, &uri, &headers).await;
            assert_eq!(a.status, b.status, "{uri} {headers:?}");
            let names = |r: &Reply| {
                let mut v: Vec<String> = r.headers.keys().map(|k| k.as_str().to_owned()).collect();
                v.sort();
                v
            };
            assert_eq!(names(&a), names(&b), "{uri} {headers:?}");
            for name in b.headers.keys().filter(|n| *n != "x-request-id") {
                assert_eq!(values(&a, name.as_str()), values(&b, name.as_str()), "{name} of {uri} {headers:?}");
            }
            assert_eq!(a.body, b.body, "{uri} {headers:?}");
        }
    }
}

#[tokio::test]
async fn without_api_keys_or_jwts_authorization_is_ignored_as_before() {
    // A deployment with no [auth]: an Authorization header meant for some proxy changes nothing.
    let app = common::conformance_app();
    let reply = get(&app, &format!("/v1/arrays/conf/{ARRAY}"), &[("authorization", "Bearer whatever")]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("cache-control"), "public, max-age=60");
    // Tokens need a signing key and a caller.
    let reply = request(&app, Method::POST, "/v1/tokens", &[], "{}").await;
    reply.assert_problem(501);
}
