//! The viewer page: `GET /` and `GET /view/{ds}/{*path}` (deep links) serve one HTML page
//! that lists the datasets and shows any numeric array in `OpenSeadragon` over the IIIF
//! service; `GET /viewer/{file}` serves its script, style and the vendored `OpenSeadragon`
//! (with its licence). Everything is compiled into the binary: no CDN, works offline.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};
use crate::http::extract::NodePath;
use crate::http::state::AppState;

const INDEX: &str = include_str!("../../viewer/index.html");

/// The files under `/viewer/`: name, media type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    ("viewer.js", "text/javascript; charset=utf-8", include_str!("../../viewer/viewer.js")),
    ("viewer.css", "text/css; charset=utf-8", include_str!("../../viewer/viewer.css")),
    ("openseadragon.min.js", "text/javascript; charset=utf-8", include_str!("../../viewer/openseadragon.min.js")),
    ("openseadragon-LICENSE.txt", "text/plain; charset=utf-8", include_str!("../../viewer/openseadragon-LICENSE.txt")),
];

/// The page; the script reads the dataset and array to open from the URL.
pub async fn index() -> Response {
    // The page is small and changes with the binary; revalidate rather than cache long.
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], INDEX).into_response()
}

/// A deep link: the page, once the dataset and node it names are known to exist (a link
/// to nothing is a 404 problem document, not a page that fails later in the browser).
pub async fn deep_link(State(state): State<AppState>, NodePath { ds, path }: NodePath) -> Result<Response> {
    let dataset = &state.catalog.dataset(&ds).await?;
    state.catalog.node(dataset, &path).await?;
    Ok(index().await)
}

pub async fn asset(Path(file): Path<String>) -> Result<Response> {
    let Some((_, media, body)) = ASSETS.iter().find(|(name, ..)| *name == file) else {
        let names: Vec<&str> = ASSETS.iter().map(|(n, ..)| *n).collect();
        return Err(Error::NotFound(format!("no viewer file `{file}`; the viewer serves {}", names.join(", "))));
    };
    Ok(([(header::CONTENT_TYPE, *media), (header::CACHE_CONTROL, "public, max-age=3600")], *body).into_response())
}
