//! `OpenID Connect` JWTs (`docs/access-control.md` "JWTs"), with the provider's JWKS served over real
//! HTTP on loopback: RS256 and ES256 tokens name their caller (`sub`) and groups; every
//! forgery is a 401 (expired, not yet valid, wrong audience or issuer, unknown signer,
//! altered payload, `alg: none`, HS256 signed with the public key or with a symmetric key
//! the provider lists, another algorithm, garbage); the keys are fetched once, again on an
//! unknown `kid` at most once per interval, and kept when the provider is down. Test keys:
//! tests/fixtures/auth (generate.sh).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::Method;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::auth::{ARRAY, load, request};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use zarrd::auth::Denied;
use zarrd::auth::jwks::Jwks;

const ISSUER: &str = "https://idp.example.org/realms/lab";
const AUDIENCE: &str = "zarrd";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(common::fixtures().join("auth").join(name)).unwrap()
}

/// A JWKS endpoint on loopback: serves `document` (503 while it is `None`) and counts fetches.
struct Provider {
    url: String,
    document: Arc<Mutex<Option<Vec<u8>>>>,
    fetches: Arc<AtomicUsize>,
}

async fn provider(document: &str) -> Provider {
    let served = Arc::new(Mutex::new(Some(fixture(document))));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (doc, count) = (Arc::clone(&served), Arc::clone(&fetches));
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let (doc, count) = (Arc::clone(&doc), Arc::clone(&count));
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                match doc.lock().unwrap().clone() {
                    Some(body) => (axum::http::StatusCode::OK, body),
                    None => (axum::http::StatusCode::SERVICE_UNAVAILABLE, Vec::new()),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Provider { url, document: served, fetches }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Standard claims for `sub`, valid for an hour; `change` edits them.
fn claims(sub: &str, change: impl FnOnce(&mut Value)) -> Value {
    let mut c =
        json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now(), "nbf": now() - 5, "exp": now() + 3600});
    change(&mut c);
    c
}

fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn rsa() -> EncodingKey {
    EncodingKey::from_rsa_pem(&fixture("rsa.pem")).unwrap()
}

fn ec() -> EncodingKey {
    EncodingKey::from_ec_pem(&fixture("ec.pem")).unwrap()
}

/// A token whose header and claims are written by hand, with the signature part given.
fn raw(header: &Value, claims: &Value, signature: &str) -> String {
    format!("{}.{}.{signature}", B64.encode(header.to_string()), B64.encode(claims.to_string()))
}

fn world(provider: &Provider) -> axum::Router {
    let extra = format!("[auth.jwt]\njwks = \"{}\"\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\n", provider.url);
    let all = ["open", "lab", "closed"];
    common::auth::app(load(&extra, &all, &[]), &all)
}

async fn status(app: &axum::Router, uri: &str, token: &str) -> u16 {
    let reply = request(app, Method::GET, uri, &[("authorization", &format!("Bearer {token}"))], "").await;
    if reply.status == 401 {
        assert!(reply.header("www-authenticate").starts_with("Bearer"), "{}", reply.describe());
        reply.assert_problem(401);
    }
    reply.status.as_u16()
}

#[tokio::test]
async fn tokens_of_the_provider_name_their_caller_and_groups() {
    let idp = provider("jwks.json").await;
    let app = world(&idp);
    let lab = format!("/v1/arrays/lab/{ARRAY}");
    let closed = format!("/v1/arrays/closed/{ARRAY}");
    let alice = sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |_| {}));
    let erin = sign(Algorithm::ES256, "ec-1", &ec(), &claims("erin", |c| c["groups"] = json!(["imaging"])));
    let frank = sign(Algorithm::ES256, "ec-1", &ec(), &claims("frank", |c| c["groups"] = json!("imaging")));
    let carol = sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("carol", |c| c["aud"] = json!(["other", AUDIENCE])));
    for (token, lab_status, closed_status) in
        [(&alice, 200, 404), (&erin, 200, 404), (&frank, 200, 404), (&carol, 404, 200)]
    {
        assert_eq!(status(&app, &lab, token).await, lab_status, "{token}");
        assert_eq!(status(&app, &closed, token).await, closed_status, "{token}");
    }
    // A token without `kid` is tried against the keys of its algorithm.
    let no_kid = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims("alice", |_| {}), &rsa()).unwrap();
    assert_eq!(status(&app, &lab, &no_kid).await, 200);
    // Within the clock skew (60 s) an expired or early token is still good.
    let skewed = sign(
        Algorithm::RS256,
        "rsa-1",
        &rsa(),
        &claims("alice", |c| {
            c["exp"] = json!(now() - 20);
            c["nbf"] = json!(now() + 20);
        }),
    );
    assert_eq!(status(&app, &lab, &skewed).await, 200);
    // A JWT holder mints capability URLs like an API-key holder... when there is a key.
    let reply = request(&app, Method::POST, "/v1/tokens", &[("authorization", &format!("Bearer {alice}"))], "{}").await;
    reply.assert_problem(501);
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 1, "the keys are fetched once");
}

#[tokio::test]
async fn forged_tokens_are_401_and_never_accepted() {
    let idp = provider("jwks.json").await;
    let app = world(&idp);
    let good = claims("alice", |_| {});
    let genuine = sign(Algorithm::RS256, "rsa-1", &rsa(), &good);
    let (header, _, signature) = {
        let mut parts = genuine.split('.');
        (parts.next().unwrap().to_owned(), parts.next().unwrap().to_owned(), parts.next().unwrap().to_owned())
    };
    let rogue = EncodingKey::from_rsa_pem(&fixture("rogue.pem")).unwrap();
    let public_pem = EncodingKey::from_secret(&fixture("rsa.pub.pem"));
    let oct = EncodingKey::from_secret(b"a shared secret that must never verify a token");
    let carol_payload = B64.encode(claims("carol", |_| {}).to_string());
    let forged: Vec<(&str, String)> = vec![
        ("expired", sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |c| c["exp"] = json!(now() - 3600)))),
        (
            "not yet valid",
            sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |c| c["nbf"] = json!(now() + 3600))),
        ),
        ("wrong audience", sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |c| c["aud"] = json!("other")))),
        (
            "wrong issuer",
            sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |c| c["iss"] = json!("https://evil"))),
        ),
        (
            "no exp",
            sign(
                Algorithm::RS256,
                "rsa-1",
                &rsa(),
                &claims("alice", |c| drop(c.as_object_mut().unwrap().remove("exp"))),
            ),
        ),
        (
            "no aud",
            sign(
                Algorithm::RS256,
                "rsa-1",
                &rsa(),
                &claims("alice", |c| drop(c.as_object_mut().unwrap().remove("aud"))),
            ),
        ),
        (
            "no sub",
            sign(
                Algorithm::RS256,
                "rsa-1",
                &rsa(),
                &claims("alice", |c| drop(c.as_object_mut().unwrap().remove("sub"))),
            ),
        ),
        ("groups not strings", sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |c| c["groups"] = json!(3)))),
        ("unknown signer under a listed kid", sign(Algorithm::RS256, "rsa-1", &rogue, &good)),
        ("unknown signer and kid", sign(Algorithm::RS256, "rogue", &rogue, &good)),
        ("unknown signer without kid", jsonwebtoken::encode(&Header::new(Algorithm::RS256), &good, &rogue).unwrap()),
        ("an encryption key's kid", sign(Algorithm::RS256, "enc-1", &rsa(), &good)),
        ("altered payload", format!("{header}.{carol_payload}.{signature}")),
        ("signature of another token", format!("{header}.{carol_payload}.{}", genuine.rsplit('.').next().unwrap())),
        ("no signature", format!("{header}.{}.", B64.encode(good.to_string()))),
        ("alg none", raw(&json!({"alg": "none", "typ": "JWT", "kid": "rsa-1"}), &good, "")),
        ("alg None", raw(&json!({"alg": "None", "typ": "JWT"}), &good, "")),
        ("HS256 with the public key", sign(Algorithm::HS256, "rsa-1", &public_pem, &good)),
        ("HS256 with the provider's oct key", sign(Algorithm::HS256, "hmac-1", &oct, &good)),
        ("RS384", sign(Algorithm::RS384, "rsa-1", &rsa(), &good)),
        ("PS256", sign(Algorithm::PS256, "rsa-1", &rsa(), &good)),
        ("ES256 header, RSA key id", sign(Algorithm::ES256, "rsa-1", &ec(), &good)),
        ("garbage", "a.b.c".into()),
        ("empty parts", "..".into()),
        ("not base64", "!!!.@@@.###".into()),
        ("header not JSON", format!("{}.{}.{signature}", B64.encode("nope"), B64.encode(good.to_string()))),
    ];
    for uri in [format!("/v1/arrays/lab/{ARRAY}"), format!("/v1/arrays/open/{ARRAY}"), "/v1/datasets".into()] {
        for (what, token) in &forged {
            assert_eq!(status(&app, &uri, token).await, 401, "{what} on {uri}: {token}");
        }
    }
    assert_eq!(status(&app, &format!("/v1/arrays/lab/{ARRAY}"), &genuine).await, 200);
}

#[tokio::test]
async fn keys_are_refetched_on_an_unknown_kid_at_most_once_per_interval() {
    let idp = provider("jwks.json").await;
    let jwks = Jwks::new(&idp.url, Duration::from_secs(2));
    assert_eq!(jwks.candidates(Some("rsa-1"), Algorithm::RS256).await.unwrap().len(), 1);
    assert_eq!(jwks.candidates(Some("ec-1"), Algorithm::ES256).await.unwrap().len(), 1);
    // Symmetric and encryption keys are never candidates; neither is a key of another algorithm.
    assert_eq!(jwks.candidates(Some("hmac-1"), Algorithm::HS256).await.err(), Some(Denied::UnknownSigner));
    assert_eq!(jwks.candidates(Some("enc-1"), Algorithm::RS256).await.err(), Some(Denied::UnknownSigner));
    assert_eq!(jwks.candidates(Some("ec-1"), Algorithm::RS256).await.err(), Some(Denied::UnknownSigner));
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 1, "unknown kids within the interval fetch nothing");
    // The provider rotates its keys: `rsa-2` is seen after the interval, with one fetch
    // however many requests ask for it at once.
    *idp.document.lock().unwrap() = Some(fixture("jwks-rotated.json"));
    assert_eq!(jwks.candidates(Some("rsa-2"), Algorithm::RS256).await.err(), Some(Denied::UnknownSigner));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let asks = (0..8).map(|_| jwks.candidates(Some("rsa-2"), Algorithm::RS256));
    for found in futures::future::join_all(asks).await {
        assert_eq!(found.unwrap().len(), 1);
    }
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 2);
    // The provider goes down: the last good set is kept and still verifies.
    *idp.document.lock().unwrap() = None;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(jwks.candidates(Some("nope"), Algorithm::RS256).await.err(), Some(Denied::UnknownSigner));
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 3);
    assert_eq!(jwks.candidates(Some("rsa-1"), Algorithm::RS256).await.unwrap().len(), 1);
    assert_eq!(jwks.candidates(Some("rsa-2"), Algorithm::RS256).await.unwrap().len(), 1);
    // Garbage from the provider is a failed fetch too.
    *idp.document.lock().unwrap() = Some(b"{\"keys\": 3}".to_vec());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(jwks.candidates(Some("nope"), Algorithm::RS256).await.is_err());
    assert_eq!(jwks.candidates(Some("rsa-2"), Algorithm::RS256).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_provider_never_reached_makes_jwts_unverifiable_not_accepted() {
    let idp = provider("jwks.json").await;
    *idp.document.lock().unwrap() = None;
    let app = world(&idp);
    let alice = sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |_| {}));
    let reply = request(&app, Method::GET, "/v1/datasets", &[("authorization", &format!("Bearer {alice}"))], "").await;
    let doc = reply.assert_problem(503);
    assert!(doc["detail"].as_str().unwrap().contains("identity provider"), "{doc}");
    // API keys do not depend on the provider.
    let reply = request(&app, Method::GET, "/v1/datasets", &[("authorization", "Bearer alice-key")], "").await;
    assert_eq!(reply.status, 200);
}

/// A provider that answers only after zarrd started (a pod up before its network or its
/// identity provider): the warm-up keeps trying at a backoff of at most a few seconds, not
/// once a minute, and once a set is held the once-a-minute limit on refetches is back.
#[tokio::test]
async fn a_late_provider_is_used_within_seconds_of_answering() {
    let idp = provider("jwks.json").await;
    let document = idp.document.lock().unwrap().take();
    let jwks = Arc::new(Jwks::new(&idp.url, Duration::from_mins(1)));
    let warm = tokio::spawn({
        let jwks = Arc::clone(&jwks);
        async move { jwks.warm_up().await }
    });
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert_eq!(jwks.candidates(Some("rsa-1"), Algorithm::RS256).await.err(), Some(Denied::KeysUnavailable));
    let while_down = idp.fetches.load(Ordering::SeqCst);
    assert!(while_down >= 3, "retried while the provider was down: {while_down} fetches in 1.7 s");
    *idp.document.lock().unwrap() = document;
    tokio::time::timeout(Duration::from_secs(5), warm)
        .await
        .expect("the keys are held within 5 s of the provider answering")
        .unwrap();
    assert_eq!(jwks.candidates(Some("rsa-1"), Algorithm::RS256).await.unwrap().len(), 1);
    let held = idp.fetches.load(Ordering::SeqCst);
    for _ in 0..3 {
        assert_eq!(jwks.candidates(Some("nope"), Algorithm::RS256).await.err(), Some(Denied::UnknownSigner));
    }
    assert_eq!(idp.fetches.load(Ordering::SeqCst), held, "an unknown kid right after a fetch waits for the interval");
}

/// The same through HTTP, without the warm-up: a JWT that arrives while the provider is
/// down is a 503, and one that arrives a few seconds after it answers is verified.
#[tokio::test]
async fn a_jwt_works_within_seconds_of_a_late_provider() {
    let idp = provider("jwks.json").await;
    let document = idp.document.lock().unwrap().take();
    let app = world(&idp);
    let alice = format!("Bearer {}", sign(Algorithm::RS256, "rsa-1", &rsa(), &claims("alice", |_| {})));
    let headers = [("authorization", alice.as_str())];
    let ask = || request(&app, Method::GET, "/v1/datasets/lab", &headers, "");
    ask().await.assert_problem(503);
    *idp.document.lock().unwrap() = document;
    let answered = std::time::Instant::now();
    loop {
        let reply = ask().await;
        if reply.status == 200 {
            break;
        }
        assert_eq!(reply.status, 503, "{}", reply.describe());
        assert!(answered.elapsed() < Duration::from_secs(5), "still 503 five seconds after the provider answered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_jwks_file_serves_as_well_as_a_url() {
    let path = common::fixtures().join("auth/jwks.json");
    let extra =
        format!("[auth.jwt]\njwks = \"{}\"\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\n", path.display());
    let app = common::auth::app(load(&extra, &["lab"], &[]), &["lab"]);
    let erin = sign(Algorithm::ES256, "ec-1", &ec(), &claims("erin", |c| c["groups"] = json!(["imaging"])));
    assert_eq!(status(&app, &format!("/zarr/lab/{ARRAY}/zarr.json"), &erin).await, 200);
    let rogue = EncodingKey::from_rsa_pem(&fixture("rogue.pem")).unwrap();
    let forged = sign(Algorithm::RS256, "rsa-1", &rogue, &claims("erin", |c| c["groups"] = json!(["imaging"])));
    assert_eq!(status(&app, &format!("/zarr/lab/{ARRAY}/zarr.json"), &forged).await, 401);
}
