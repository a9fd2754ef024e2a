//! The credential parsers under arbitrary input (proptest): an `Authorization` value, a
//! bearer credential (API key or JWT), a capability token and a `/t/` path never panic and
//! are never accepted unless they are the genuine article; a genuine capability token or
//! JWT with any one character changed is refused.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::LazyLock;

use axum::http::HeaderValue;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use proptest::prelude::*;
use zarrd::auth::{Auth, Caller, Via};

const ISSUER: &str = "https://idp.example.org";

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap());

static AUTH: LazyLock<Auth> = LazyLock::new(|| {
    let jwks = common::fixtures().join("auth/jwks.json");
    let extra = format!("[auth.jwt]\njwks = \"{}\"\nissuer = \"{ISSUER}\"\naudience = \"zarrd\"\n", jwks.display());
    let config = common::auth::load(&extra, &["lab"], &[("ZARRD_SIGNING_KEY", common::auth::SIGNING_KEY)]);
    Auth::new(&config)
});

/// A genuine capability token of alice for `/`, valid for an hour.
static CAPABILITY: LazyLock<String> = LazyLock::new(|| {
    let alice = Caller { name: "alice".into(), groups: vec!["lab".into()], via: Via::ApiKey };
    AUTH.signer().unwrap().mint(&alice, "/", zarrd::auth::capability::now() + 3600)
});

/// A genuine RS256 JWT of alice, valid for an hour.
static JWT: LazyLock<String> = LazyLock::new(|| {
    let key = std::fs::read(common::fixtures().join("auth/rsa.pem")).unwrap();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    let now = chrono::Utc::now().timestamp();
    let claims = serde_json::json!({"sub": "alice", "iss": ISSUER, "aud": "zarrd", "exp": now + 3600});
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_pem(&key).unwrap()).unwrap()
});

fn bearer(credential: &str) -> Result<Caller, zarrd::auth::Denied> {
    RUNTIME.block_on(AUTH.bearer(credential))
}

/// Text shaped like tokens: base64url runs joined by dots, sometimes with other characters.
fn token_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_-]{0,120}(\\.[A-Za-z0-9_-]{0,120}){0,3}",
        "(eyJ[A-Za-z0-9_-]{0,80}\\.){2}[A-Za-z0-9_-]{0,80}",
        ".{0,200}",
    ]
}

/// `text` with the character at `at` (modulo its length) replaced by `by`, when that changes it.
fn altered(text: &str, at: usize, by: char) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let at = at % chars.len();
    (chars[at] != by).then(|| chars.iter().enumerate().map(|(i, &c)| if i == at { by } else { c }).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_credentials_are_refused(text in token_like()) {
        prop_assert!(bearer(&text).is_err(), "{text:?}");
        prop_assert!(AUTH.capability(&text).is_err(), "{text:?}");
    }

    #[test]
    fn arbitrary_header_values_parse_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(value) = HeaderValue::from_bytes(&bytes)
            && let Some(credential) = zarrd::http::auth::bearer(&value)
        {
            prop_assert!(!credential.is_empty());
            prop_assert!(bearer(credential).is_err());
        }
    }

    #[test]
    fn altered_capability_tokens_are_refused(at in any::<usize>(), by in "[A-Za-z0-9_.=-]") {
        let by = by.chars().next().unwrap();
        if let Some(token) = altered(&CAPABILITY, at, by) {
            prop_assert!(AUTH.capability(&token).is_err(), "{token}");
        }
    }

    #[test]
    fn altered_jwts_are_refused(at in any::<usize>(), by in "[A-Za-z0-9_.=-]") {
        let by = by.chars().next().unwrap();
        if let Some(token) = altered(&JWT, at, by) {
            prop_assert!(bearer(&token).is_err(), "{token}");
        }
    }

    #[test]
    fn capability_paths_rewrite_without_panicking(path in "/t/[^?#]{0,100}", query in proptest::option::of("[a-z=&]{0,20}")) {
        let uri = match &query { Some(q) => format!("{path}?{q}"), None => path.clone() };
        if let Ok(request) = axum::http::Request::get(uri.as_str()).body(axum::body::Body::empty()) {
            let before = request.uri().query().map(str::to_owned);
            let request = zarrd::http::auth::rewrite(request);
            prop_assert!(request.uri().path().starts_with('/'));
            prop_assert_eq!(request.uri().query().map(str::to_owned), before);
            prop_assert!(request.extensions().get::<zarrd::auth::CapabilityPath>().is_some());
        }
    }
}

#[test]
fn the_genuine_articles_are_accepted() {
    // So the properties above refuse what is altered, not everything.
    assert_eq!(AUTH.capability(&CAPABILITY).unwrap().caller.name, "alice");
    assert_eq!(bearer(&JWT).unwrap().name, "alice");
    assert_eq!(bearer("alice-key").unwrap().name, "alice");
}
