//! `POST /v1/tokens`: mints a capability URL (`docs/access-control.md` "Capability URLs")
//! for the caller's own rights under a path prefix, for clients that cannot send headers.
//! Only a caller who sent an API key or a JWT may mint; a capability URL cannot mint another
//! (it would outlive itself).

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::auth::{Denied, Identity, Via};
use crate::error::{Error, Result};
use crate::http::schema::Capability;
use crate::http::state::AppState;

/// The lifetime of a token minted without `ttl_s` (at most `auth.max_token_ttl_s`).
pub const DEFAULT_TTL_S: u64 = 3600;

/// The paths a prefix may start with: what zarrd serves ("/" is every one of them).
const SERVED: &[&str] = &["/v1/", "/zarr/", "/compat/", "/iiif/", "/maps/", "/view/"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MintRequest {
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    ttl_s: Option<u64>,
}

pub async fn mint(
    State(state): State<AppState>,
    identity: Option<Extension<Identity>>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let Some(signer) = state.auth.signer() else {
        return Error::Status(
            StatusCode::NOT_IMPLEMENTED,
            format!(
                "capability URLs are off: this server has no signing key (set the environment variable `{}`, see auth.signing_key_env)",
                state.config.auth.signing_key_env
            ),
        )
        .into_response();
    };
    let caller = identity.and_then(|Extension(Identity(caller))| caller);
    let caller = match caller {
        Some(c) if c.via != Via::Capability => c,
        Some(c) => return crate::http::auth::refuse(&state, &parts, Denied::CannotMint, Some(&c.name), None).await,
        None => return crate::http::auth::refuse(&state, &parts, Denied::Anonymous, None, None).await,
    };
    let body = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(body) => body,
        Err(e) => return Error::BadRequest(format!("cannot read the request body: {e}")).into_response(),
    };
    let (prefix, ttl) = match parse(&body, state.auth.max_token_ttl_s) {
        Ok(request) => request,
        Err(e) => return e.into_response(),
    };
    let exp = crate::auth::capability::now() + ttl;
    let token = signer.mint(&caller, &prefix, exp);
    let url = format!("/t/{token}{prefix}");
    let expires_at = chrono::DateTime::<chrono::Utc>::from_timestamp(exp as i64, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    let mut response =
        (StatusCode::CREATED, crate::http::encode::json_response(&Capability { url, expires_at }, "no-store"))
            .into_response();
    // A capability URL is a credential: no cache keeps it.
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The prefix and lifetime asked for, checked.
fn parse(body: &Bytes, max_ttl: u64) -> Result<(String, u64)> {
    let request: MintRequest = if body.iter().all(u8::is_ascii_whitespace) {
        MintRequest { prefix: None, ttl_s: None }
    } else {
        serde_json::from_slice(body).map_err(|e| {
            Error::BadRequest(format!("the body must be JSON {{\"prefix\": \"/zarr/DATASET/\", \"ttl_s\": 600}}: {e}"))
        })?
    };
    let ttl = request.ttl_s.unwrap_or(DEFAULT_TTL_S.min(max_ttl));
    if ttl == 0 || ttl > max_ttl {
        return Err(Error::BadRequest(format!("`ttl_s` must be between 1 and {max_ttl} (auth.max_token_ttl_s)")));
    }
    let prefix = request.prefix.unwrap_or_else(|| "/".into());
    let clean = prefix.len() <= 1024
        && prefix.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'?' | b'#' | b'\\'))
        && !prefix.split('/').any(|s| s == "." || s == "..")
        && !prefix.contains("//");
    if !clean || !(prefix == "/" || SERVED.iter().any(|s| prefix.starts_with(s) || *s == format!("{prefix}/"))) {
        return Err(Error::BadRequest(format!(
            "`prefix` must be `/` or a path under {} (no query, `..` or `//`), e.g. `/zarr/DATASET/`",
            SERVED.join(", ")
        )));
    }
    Ok((prefix, ttl))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(body: &str) -> Result<(String, u64)> {
        parse(&Bytes::from(body.to_owned()), 600)
    }

    #[test]
    fn prefixes_and_lifetimes_are_checked() {
        assert_eq!(parsed("").unwrap(), ("/".into(), 600));
        assert_eq!(parsed(r#"{"prefix": "/zarr/lab/", "ttl_s": 60}"#).unwrap(), ("/zarr/lab/".into(), 60));
        assert_eq!(parsed(r#"{"prefix": "/iiif/3/lab%2Fimg"}"#).unwrap().0, "/iiif/3/lab%2Fimg");
        assert_eq!(parsed(r#"{"prefix": "/v1"}"#).unwrap().0, "/v1");
        for bad in [
            r#"{"ttl_s": 601}"#,
            r#"{"ttl_s": 0}"#,
            r#"{"ttl_s": -1}"#,
            r#"{"prefix": "zarr/lab/"}"#,
            r#"{"prefix": "/t/abc/zarr/"}"#,
            r#"{"prefix": "/healthz"}"#,
            r#"{"prefix": "/zarr/lab/../other/"}"#,
            r#"{"prefix": "/zarr/lab?x=1"}"#,
            r#"{"prefix": "/zarr//"}"#,
            r#"{"prefix": "/zarr/l ab/"}"#,
            r#"{"prefix": 3}"#,
            r#"{"prefix": "/zarr/", "extra": 1}"#,
            "not json",
        ] {
            let e = parsed(bad).unwrap_err();
            assert_eq!(e.status(), StatusCode::BAD_REQUEST, "{bad}: {e}");
        }
    }
}
