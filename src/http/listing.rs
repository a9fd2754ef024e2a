//! Directory listings for the store routes (`/zarr`, `/compat/v3`, `/compat/v2`): a
//! directory URL (with a trailing slash) answers with its entries, so clients that find a
//! hierarchy by listing (zarr-python's `members()`, xarray with `consolidated=False`, both
//! through fsspec's HTTP filesystem) and people with a browser see the tree.
//!
//! The default is an HTML page of relative links, the form fsspec's `HTTPFileSystem.ls`
//! parses and a browser shows; `Accept: application/json` gives
//! `{"path", "entries": [{"name", "kind": "directory"|"object", "size"?}]}`. Directory
//! links end in `/`. A directory URL without the trailing slash is redirected to it, so
//! relative links resolve the same in a browser and in fsspec (which joins them to the URL
//! it asked for).

use crate::markup::escape;
use std::fmt::Write as _;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Ranged, Validators};
use crate::http::schema::{Directory, DirectoryEntry};

/// Entries one listing may hold; a larger directory is 413 (chunk directories of huge
/// arrays), so a listing's cost stays bounded.
pub const MAX_ENTRIES: usize = 10_000;

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub directory: bool,
    pub size: Option<u64>,
}

impl Entry {
    pub fn directory(name: impl Into<String>) -> Self {
        Self { name: name.into(), directory: true, size: None }
    }

    pub fn object(name: impl Into<String>, size: Option<u64>) -> Self {
        Self { name: name.into(), directory: false, size }
    }
}

/// A link target: the name percent-encoded as one path segment.
fn href(name: &str) -> String {
    url::form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>().replace('+', "%20")
}

/// The listing response for directory `path` (the URL path, for the title).
pub fn respond(path: &str, mut entries: Vec<Entry>, headers: &HeaderMap, cache_control: &str) -> Result<Response> {
    if entries.len() > MAX_ENTRIES {
        return Err(Error::TooManyChunks(format!(
            "`{path}` has {} entries; listings hold at most {MAX_ENTRIES} (read the metadata instead)",
            entries.len()
        )));
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.split(',').any(|m| m.split(';').next().is_some_and(|m| m.trim() == "application/json")));
    let (body, content_type) = if json {
        let entries = entries
            .iter()
            .map(|e| DirectoryEntry {
                name: &e.name,
                kind: if e.directory { "directory" } else { "object" },
                size: e.size,
            })
            .collect();
        let document = serde_json::to_string(&Directory { path, entries })
            .map_err(|e| Error::internal_from("a directory listing", e))?;
        (document, "application/json")
    } else {
        let title = escape(path);
        let mut html = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {title}</title></head>\n<body><h1>Index of {title}</h1>\n<ul>\n"
        );
        for e in &entries {
            let slash = if e.directory { "/" } else { "" };
            let _ =
                writeln!(html, "<li><a href=\"{}{slash}\">{}{slash}</a></li>", escape(&href(&e.name)), escape(&e.name));
        }
        html.push_str("</ul></body></html>\n");
        (html, "text/html; charset=utf-8")
    };
    let etag = EtagBuilder::new("listing").text(content_type).text(&body).finish();
    // Ranges and validators as for any object of the store routes.
    let mut response =
        Ranged::new(&Bytes::from(body), content_type).respond(Validators::new(etag, cache_control), headers)?;
    response.headers_mut().append(header::VARY, HeaderValue::from_static("accept"));
    Ok(response)
}

/// A redirect from a directory URL without its trailing slash to the one with it.
pub fn to_directory(uri_path: &str) -> Response {
    let target = format!("{uri_path}/");
    let mut response = StatusCode::PERMANENT_REDIRECT.into_response();
    if let Ok(v) = HeaderValue::from_str(&target) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_and_encoded() {
        assert_eq!(escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
        assert_eq!(href("a b/c"), "a%20b%2Fc");
        assert_eq!(href("zarr.json"), "zarr.json");
    }
}
