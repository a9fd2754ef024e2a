//! Access control at the HTTP edge (`docs/access-control.md`), in one layer in front of the
//! response cache and every route, so no route can forget it:
//!
//! 1. Before routing, [`rewrite`] turns `/t/TOKEN/REST` into `/REST` and remembers the token
//!    (`auth::CapabilityPath`), so a capability URL reaches the same routes as any request.
//! 2. [`layer`] finds the caller (the capability token; else `Authorization: Bearer` with
//!    an API key or a JWT; else anonymous): a bad credential is a 401 with
//!    `WWW-Authenticate: Bearer` on any route.
//! 3. It takes the dataset the route names from the router's own path parameters (`{ds}`,
//!    or `{identifier}` parsed as IIIF does; a `@ref` suffix names the same dataset), so it
//!    reads the path exactly as the handler will. A dataset the caller may not read is
//!    answered with the very 404 an unknown dataset gets, compressed as the handler's
//!    would be, so the two cannot be told apart.
//! 4. Responses of private datasets, and those that depend on the caller (`/v1/datasets`,
//!    `/metrics`, `/v1/tokens`), are marked `Cache-Control: private` and `Vary:
//!    Authorization`; behind a capability URL, redirects stay behind it.
//!
//! Every refusal is counted (`zarrd_auth_denied_total{reason}`) and logged once with the
//! request id, the caller, the dataset and the reason, never the credential.

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{Auth, Caller, CapabilityPath, Denied, Identity};
use crate::error::Error;
use crate::http::state::AppState;

/// Before routing: `/t/TOKEN/REST?QUERY` → `/REST?QUERY`, keeping the token aside.
pub fn rewrite(mut request: Request) -> Request {
    let Some(rest) = request.uri().path().strip_prefix("/t/") else { return request };
    let (token, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let target = match request.uri().query() {
        Some(q) => format!("/{tail}?{q}"),
        None => format!("/{tail}"),
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = target.parse().ok();
    if let Ok(uri) = Uri::from_parts(parts) {
        let capability = CapabilityPath { token: token.to_owned() };
        *request.uri_mut() = uri;
        request.extensions_mut().insert(capability);
    }
    request
}

/// The access-control layer (see the module documentation).
pub async fn layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let per_caller_route = matches!(crate::http::route::label(&request), "/v1/datasets" | "/metrics" | "/v1/tokens")
        || request.uri().path().trim_end_matches('/') == "/edr/collections";
    let (mut parts, body) = request.into_parts();
    let capability = parts.extensions.get::<CapabilityPath>().cloned();
    let caller = match identify(&state.auth, &parts, capability.as_ref()).await {
        Ok(caller) => caller,
        Err((denied, who)) => return refuse(&state, &parts, denied, who.as_deref(), None).await,
    };
    // Without private datasets every caller may read everything: no need to look.
    let dataset = if state.auth.any_private() { dataset_of(&mut parts).await } else { None };
    if let Some(ds) = &dataset
        && !state.auth.may_read(caller.as_ref(), ds)
    {
        let who = caller.as_ref().map(|c| c.name.as_str());
        return refuse(&state, &parts, Denied::NotAllowed, who, Some(ds)).await;
    }
    let private = dataset.as_deref().is_some_and(|d| state.auth.is_private(d));
    let per_caller = dataset.is_none() && per_caller_route;
    let personal = private || (per_caller && caller.is_some());
    let varies = private || (per_caller && state.auth.reads_credentials());
    parts.extensions.insert(Identity(caller));
    let mut response = next.run(Request::from_parts(parts, body)).await;
    let headers = response.headers_mut();
    if personal {
        mark_private(headers);
    }
    if varies {
        headers.append(header::VARY, HeaderValue::from_static("authorization"));
    }
    if let Some(capability) = capability {
        keep_behind(headers, &capability);
    }
    response
}

/// The caller of a request, or why it is refused (with the caller's name when known).
async fn identify(
    auth: &Auth,
    parts: &Parts,
    capability: Option<&CapabilityPath>,
) -> Result<Option<Caller>, (Denied, Option<String>)> {
    if let Some(capability) = capability {
        let grant = auth.capability(&capability.token).map_err(|d| (d, None))?;
        if !grant.covers(parts.uri.path()) {
            return Err((Denied::OutsidePrefix, Some(grant.caller.name)));
        }
        return Ok(Some(grant.caller));
    }
    if !auth.reads_credentials() {
        return Ok(None);
    }
    let mut values = parts.headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err((Denied::Malformed, None));
    }
    let credential = bearer(value).ok_or((Denied::Malformed, None))?;
    auth.bearer(credential).await.map(Some).map_err(|d| (d, None))
}

/// The credential of `Bearer CREDENTIAL` (the scheme in any case, RFC 9110).
pub fn bearer(value: &HeaderValue) -> Option<&str> {
    let (scheme, credential) = value.to_str().ok()?.split_once(' ')?;
    let credential = credential.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !credential.is_empty()).then_some(credential)
}

/// The dataset a request names (its configured name: a `@ref` suffix, a version of the
/// dataset, is not part of it).
async fn dataset_of(parts: &mut Parts) -> Option<String> {
    let named = crate::http::versions::named_dataset(parts).await?;
    Some(named.split('@').next().unwrap_or_default().to_owned())
}

/// Counts, logs and answers a refusal.
pub async fn refuse(
    state: &AppState,
    parts: &Parts,
    denied: Denied,
    caller: Option<&str>,
    dataset: Option<&str>,
) -> Response {
    crate::telemetry::auth_denied(denied.reason());
    // Set on every request by `middleware::observe`, outside this layer.
    let request_id = parts.headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
    let (caller, dataset_name) = (caller.unwrap_or("-"), dataset.unwrap_or("-"));
    if matches!(denied, Denied::NotAllowed | Denied::OutsidePrefix) {
        tracing::info!(target: "zarrd::auth", request_id, caller, dataset = dataset_name, reason = denied.reason(), "request refused");
    } else {
        tracing::warn!(target: "zarrd::auth", request_id, caller, dataset = dataset_name, reason = denied.reason(), "request refused");
    }
    let error = match denied {
        Denied::NotAllowed => state.catalog.unknown_dataset(dataset.unwrap_or_default()),
        Denied::OutsidePrefix => {
            Error::NotFound("this capability URL does not reach this path: its prefix does not cover it".into())
        }
        Denied::KeysUnavailable => Error::Unavailable { detail: denied.to_string(), retry_after: 60 },
        Denied::Anonymous => Error::Unauthorized { detail: denied.to_string(), invalid_token: false },
        _ => Error::Unauthorized { detail: denied.to_string(), invalid_token: true },
    };
    crate::http::compress::compressed_as_handlers(&parts.headers, error.into_response()).await
}

/// `Cache-Control: private` in place of `public` (and of what only shared caches read),
/// keeping the other directives.
fn mark_private(headers: &mut HeaderMap) {
    let kept: Vec<&str> = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|d| {
            let name = d.split('=').next().unwrap_or_default().trim();
            !d.is_empty()
                && !["public", "private", "immutable", "s-maxage"].iter().any(|n| name.eq_ignore_ascii_case(n))
        })
        .collect();
    let value = std::iter::once("private").chain(kept).collect::<Vec<_>>().join(", ");
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(header::CACHE_CONTROL, v);
    }
}

/// A redirect answered behind a capability URL points behind it too.
fn keep_behind(headers: &mut HeaderMap, capability: &CapabilityPath) {
    let Some(location) = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()) else { return };
    if location.starts_with('/')
        && !location.starts_with("//")
        && let Ok(v) = HeaderValue::from_str(&format!("{}{location}", capability.public_prefix()))
    {
        headers.insert(header::LOCATION, v);
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;

    use super::*;

    fn rewritten(uri: &str) -> (String, Option<String>) {
        let request = rewrite(Request::get(uri).body(Body::empty()).unwrap());
        (request.uri().to_string(), request.extensions().get::<CapabilityPath>().map(|c| c.token.clone()))
    }

    #[test]
    fn capability_paths_are_routed_without_their_token() {
        assert_eq!(rewritten("/t/abc.def/zarr/lab/zarr.json"), ("/zarr/lab/zarr.json".into(), Some("abc.def".into())));
        assert_eq!(rewritten("/t/abc/v1/slice/x/y?s=0,1"), ("/v1/slice/x/y?s=0,1".into(), Some("abc".into())));
        assert_eq!(rewritten("/t/abc"), ("/".into(), Some("abc".into())));
        assert_eq!(rewritten("/t/"), ("/".into(), Some(String::new())));
        assert_eq!(rewritten("http://h:1/t/abc/iiif/3/x"), ("http://h:1/iiif/3/x".into(), Some("abc".into())));
        assert_eq!(rewritten("/zarr/t/abc"), ("/zarr/t/abc".into(), None));
        assert_eq!(rewritten("/t"), ("/t".into(), None));
    }

    #[test]
    fn private_replaces_public_and_keeps_the_rest() {
        for (before, after) in [
            (Some("public, max-age=60"), "private, max-age=60"),
            (Some("public, max-age=31536000, immutable, s-maxage=9"), "private, max-age=31536000"),
            (Some("no-cache"), "private, no-cache"),
            (Some("no-store"), "private, no-store"),
            (None, "private"),
        ] {
            let mut headers = HeaderMap::new();
            if let Some(v) = before {
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(v));
            }
            mark_private(&mut headers);
            assert_eq!(headers[header::CACHE_CONTROL], after, "{before:?}");
        }
    }

    #[test]
    fn only_bearer_credentials_are_read() {
        let read = |v: &'static str| bearer(&HeaderValue::from_static(v)).map(str::to_owned);
        assert_eq!(read("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(read("bearer  abc ").as_deref(), Some("abc"));
        assert_eq!(read("Basic YTpi"), None);
        assert_eq!(read("Bearer "), None);
        assert_eq!(read("Bearer"), None);
    }
}
