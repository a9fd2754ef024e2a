//! Capability URLs (`docs/access-control.md` "Capability URLs"): `POST /v1/tokens` mints them for a caller
//! who sent a credential; `/t/TOKEN/...` serves the owner's rights with no header inside
//! the prefix, 404 outside it, 401 once expired or altered; redirects and IIIF tile URLs
//! stay behind the token; and every refusal is counted and logged once, without the
//! credential.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::{Arc, Mutex};

use axum::http::Method;
use common::Reply;
use common::auth::{ARRAY, SIGNING_KEY, bearer, mint, request, routes, world};
use zarrd::auth::capability::Signer;
use zarrd::auth::{Caller, Via};

async fn get(app: &axum::Router, uri: &str) -> Reply {
    request(app, Method::GET, uri, &[], "").await
}

fn token_of(url: &str) -> &str {
    url.strip_prefix("/t/").unwrap().split('/').next().unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test]
async fn minting_needs_a_credential_a_signing_key_and_sane_limits() {
    let app = world();
    let before = now();
    let reply = request(
        &app,
        Method::POST,
        "/v1/tokens",
        &[("authorization", "Bearer alice-key")],
        r#"{"prefix": "/zarr/lab/", "ttl_s": 600}"#,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.describe());
    assert!(reply.header("cache-control").contains("no-store"), "{}", reply.describe());
    let doc = reply.json();
    let url = doc["url"].as_str().unwrap();
    assert!(url.starts_with("/t/") && url.ends_with("/zarr/lab/"), "{url}");
    let expires = chrono::DateTime::parse_from_rfc3339(doc["expires_at"].as_str().unwrap()).unwrap().timestamp() as u64;
    assert!((before + 600..=now() + 600).contains(&expires), "{doc}");
    // Anonymous, a bad key, a capability URL: no.
    let anonymous = request(&app, Method::POST, "/v1/tokens", &[], "{}").await;
    anonymous.assert_problem(401);
    assert_eq!(anonymous.header("www-authenticate"), "Bearer realm=\"zarrd\"");
    request(&app, Method::POST, "/v1/tokens", &[("authorization", "Bearer nope")], "{}").await.assert_problem(401);
    let root = mint(&app, "Bearer alice-key", "/", 60).await;
    let again = request(&app, Method::POST, &format!("{root}v1/tokens"), &[], "{}").await;
    again.assert_problem(401);
    // Over the maximum lifetime (86400 by default), a prefix zarrd does not serve, bad JSON.
    for body in [r#"{"ttl_s": 86401}"#, r#"{"prefix": "/healthz"}"#, r#"{"prefix": "zarr/"}"#, "{"] {
        let reply = request(&app, Method::POST, "/v1/tokens", &[("authorization", "Bearer alice-key")], body).await;
        reply.assert_problem(400);
    }
    // Without a signing key there are no capability URLs: 501, saying how to turn them on.
    let keyless = common::auth::app(common::auth::load("", &["lab"], &[]), &["lab"]);
    let reply = request(&keyless, Method::POST, "/v1/tokens", &[("authorization", "Bearer alice-key")], "{}").await;
    let doc = reply.assert_problem(501);
    assert!(doc["detail"].as_str().unwrap().contains("ZARRD_SIGNING_KEY"), "{doc}");
    // GET is not how tokens are made.
    let reply = request(&app, Method::GET, "/v1/tokens", &[("authorization", "Bearer alice-key")], "").await;
    reply.assert_problem(405);
}

#[tokio::test]
async fn a_capability_url_serves_its_owners_rights_inside_its_prefix() {
    let app = world();
    let everything = mint(&app, "Bearer alice-key", "/", 600).await;
    let behind = everything.trim_end_matches('/');
    for ds in ["lab", "open"] {
        for (uri, ok) in routes(ds) {
            let reply = get(&app, &format!("{behind}{uri}")).await;
            assert_eq!(reply.status.as_u16(), ok, "{uri}: {}", reply.describe());
        }
    }
    // Alice's rights do not include `closed`, whatever the prefix.
    for (uri, _) in routes("closed") {
        get(&app, &format!("{behind}{uri}")).await.assert_problem(404);
    }
    // A narrower prefix: inside it 200, outside it 404, even on a dataset she may read.
    let zarr = mint(&app, "Bearer bob-key", "/zarr/lab/", 600).await;
    let reply = get(&app, &format!("{zarr}{ARRAY}/zarr.json")).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert!(reply.header("cache-control").starts_with("private"));
    for outside in
        [format!("/t/{}/zarr/open/zarr.json", token_of(&zarr)), format!("/t/{}/v1/datasets/lab", token_of(&zarr))]
    {
        let doc = get(&app, &outside).await.assert_problem(404);
        assert!(doc["detail"].as_str().unwrap().contains("capability URL"), "{doc}");
    }
    // Dave's token for `lab` grants nothing: rights are checked at every use.
    let dave = mint(&app, "Bearer dave-key", "/zarr/lab/", 600).await;
    get(&app, &format!("{dave}zarr.json")).await.assert_problem(404);
}

#[tokio::test]
async fn expired_altered_and_foreign_tokens_are_401() {
    let app = world();
    let url = mint(&app, "Bearer alice-key", "/zarr/lab/", 600).await;
    let token = token_of(&url);
    let alice = Caller { name: "alice".into(), groups: vec![], via: Via::ApiKey };
    let ours = Signer::new(SIGNING_KEY.as_bytes().into());
    let expired = ours.mint(&alice, "/zarr/lab/", now() - 1);
    let foreign =
        Signer::new(b"another signing key, at least thirty-two bytes".as_slice().into()).mint(&alice, "/", now() + 600);
    let (body, tag) = token.split_once('.').unwrap();
    // The same MAC over a payload widened to every path.
    let widened = {
        use base64::Engine;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut json: serde_json::Value = serde_json::from_slice(&engine.decode(body).unwrap()).unwrap();
        json["prefix"] = "/".into();
        format!("{}.{tag}", engine.encode(json.to_string()))
    };
    let flipped = format!("{body}.{}{}", if tag.starts_with('A') { "B" } else { "A" }, &tag[1..]);
    for bad in [expired.as_str(), foreign.as_str(), widened.as_str(), flipped.as_str(), body, "", "garbage", "a.b"] {
        for rest in [format!("zarr/lab/{ARRAY}/zarr.json"), "zarr/open/".into(), "healthz".into()] {
            let reply = get(&app, &format!("/t/{bad}/{rest}")).await;
            assert_eq!(reply.status, 401, "{bad} {rest}: {}", reply.describe());
            assert!(reply.header("www-authenticate").starts_with("Bearer"));
        }
    }
    // The genuine one still works.
    assert_eq!(get(&app, &format!("{url}{ARRAY}/zarr.json")).await.status, 200);
}

#[tokio::test]
async fn redirects_and_iiif_tiles_stay_behind_the_capability_url() {
    let app = world();
    let url = mint(&app, "Bearer alice-key", "/", 600).await;
    let behind = url.trim_end_matches('/');
    let id = format!("lab%2F{}", ARRAY.replace('/', "%2F"));
    let reply =
        request(&app, Method::GET, &format!("{behind}/iiif/3/{id}/info.json"), &[("host", "example.org")], "").await;
    assert_eq!(reply.json()["id"], format!("http://example.org{behind}/iiif/3/{id}"));
    let reply = get(&app, &format!("{behind}/iiif/3/{id}")).await;
    assert_eq!(
        (reply.status.as_u16(), reply.header("location")),
        (303, format!("{behind}/iiif/3/{id}/info.json").as_str())
    );
    let reply = get(&app, &format!("{behind}/zarr/lab")).await;
    assert_eq!((reply.status.as_u16(), reply.header("location")), (308, format!("{behind}/zarr/lab/").as_str()));
    // Without a token, URLs are as they were.
    let reply = request(
        &app,
        Method::GET,
        &format!("/iiif/3/{id}/info.json"),
        &[("host", "example.org"), ("authorization", &bearer("alice"))],
        "",
    )
    .await;
    assert_eq!(reply.json()["id"], format!("http://example.org/iiif/3/{id}"));
}

#[tokio::test]
async fn a_tile_kept_for_one_caller_is_never_served_to_another() {
    let app = world();
    let url = mint(&app, "Bearer alice-key", "/", 600).await;
    let behind = url.trim_end_matches('/');
    let tile = format!("/iiif/3/lab%2F{}/0,0,16,16/16,/0/default.png", ARRAY.replace('/', "%2F"));
    let slice = format!("/v1/slice/lab/{ARRAY}?s=0:4,0:4&format=npy");
    for uri in [&tile, &slice] {
        // Alice reads it twice (rendered, then from the caches), by token and by key.
        let first = get(&app, &format!("{behind}{uri}")).await;
        assert_eq!(first.status, 200, "{}", first.describe());
        assert_eq!(get(&app, &format!("{behind}{uri}")).await.body, first.body);
        let keyed = request(&app, Method::GET, uri, &[("authorization", "Bearer alice-key")], "").await;
        assert_eq!(keyed.body, first.body);
        // Nobody else gets it: not anonymous, not dave, not carol's token, not with a bad token.
        get(&app, uri).await.assert_problem(404);
        request(&app, Method::GET, uri, &[("authorization", "Bearer dave-key")], "").await.assert_problem(404);
        let carol = mint(&app, "Bearer carol-key", "/", 600).await;
        get(&app, &format!("{}{uri}", carol.trim_end_matches('/'))).await.assert_problem(404);
        let forged = format!("/t/{}x{uri}", token_of(&url));
        assert_eq!(get(&app, &forged).await.status, 401);
    }
}

/// Log lines written while a test runs, as JSON.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn each_refusal_is_counted_and_logged_once_without_the_credential() {
    let app = world();
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt().json().flatten_event(true).with_writer(move || writer.clone()).finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let uri = format!("/v1/arrays/lab/{ARRAY}");
    request(&app, Method::GET, &uri, &[("x-request-id", "req-dave"), ("authorization", "Bearer dave-key")], "").await;
    request(&app, Method::GET, &uri, &[("x-request-id", "req-forged"), ("authorization", "Bearer s3cret-forged")], "")
        .await;
    request(&app, Method::GET, &uri, &[("x-request-id", "req-alice"), ("authorization", "Bearer alice-key")], "").await;
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let refusals: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["target"] == "zarrd::auth")
        .collect();
    assert_eq!(refusals.len(), 2, "{text}");
    let expected = [("req-dave", "dave", "lab", "not_allowed"), ("req-forged", "-", "-", "unknown_key")];
    for (line, (id, caller, dataset, reason)) in refusals.iter().zip(expected) {
        assert_eq!(
            (line["request_id"].as_str(), line["caller"].as_str(), line["dataset"].as_str(), line["reason"].as_str()),
            (Some(id), Some(caller), Some(dataset), Some(reason)),
            "{line}"
        );
    }
    for secret in ["dave-key", "s3cret-forged", "alice-key"] {
        assert!(!text.contains(secret), "a credential was logged: {text}");
    }
    let metrics = String::from_utf8(get(&app, "/metrics").await.body.to_vec()).unwrap();
    for reason in ["not_allowed", "unknown_key"] {
        let line = format!("zarrd_auth_denied_total{{reason=\"{reason}\"}} ");
        let count: u64 = metrics.lines().find_map(|l| l.strip_prefix(&line)).unwrap().parse().unwrap();
        assert!(count >= 1, "{reason}: {count}");
    }
}
