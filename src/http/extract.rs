//! What route handlers take from a request: the dataset and node path of a route, query
//! parameters checked against the names an endpoint accepts (with the display window every
//! image and slice route shares), path rejections as problems, and the server's base URL as
//! the client sees it.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// The `{ds}` and optional `{*path}` of a node route: the same handler serves
/// `/v1/x/{ds}` (the dataset root, path "") and `/v1/x/{ds}/{*path}`.
#[derive(Debug)]
pub struct NodePath {
    pub ds: String,
    pub path: String,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for NodePath {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self> {
        let axum::extract::Path(mut params) =
            axum::extract::Path::<std::collections::HashMap<String, String>>::from_request_parts(parts, state)
                .await
                .map_err(|e| Error::BadRequest(e.body_text()))?;
        let ds = params.remove("ds").ok_or_else(|| Error::internal("route without {ds}"))?;
        Ok(Self { ds, path: params.remove("path").unwrap_or_default() })
    }
}

/// Query parameters, checked against the names an endpoint accepts.
#[derive(Debug, Default)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Self> {
        let mut map = BTreeMap::new();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            if !allowed.contains(&k.as_ref()) {
                let allowed = if allowed.is_empty() {
                    "this route takes no query parameters".to_owned()
                } else {
                    format!("allowed: {}", allowed.join(", "))
                };
                return Err(Error::BadRequest(format!("unknown query parameter `{k}`; {allowed}")));
            }
            if map.insert(k.to_string(), v.to_string()).is_some() {
                return Err(Error::BadRequest(format!("query parameter `{k}` is given more than once")));
            }
        }
        Ok(Self(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// A path that did not match its route's parameters, as a problem.
pub fn path_error(e: &axum::extract::rejection::PathRejection) -> Error {
    Error::BadRequest(e.body_text())
}

/// This server's base URL as the client sees it: `X-Forwarded-Proto`/`X-Forwarded-Host`
/// (first value) behind a proxy or load balancer, else `http` and `Host`.
pub fn base_url(headers: &axum::http::HeaderMap) -> String {
    let first = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_owned)
    };
    let proto = first("x-forwarded-proto").filter(|p| p == "http" || p == "https").unwrap_or_else(|| "http".into());
    let host = first("x-forwarded-host").or_else(|| first("host")).unwrap_or_else(|| "localhost".into());
    format!("{proto}://{host}")
}
