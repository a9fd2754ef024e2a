//! The viewer page: `GET /` and `GET /view/{ds}/{*path}` (deep links) serve one HTML page
//! that lists the datasets and shows any numeric array: arrays on a latitude/longitude grid
//! as a map (`OpenLayers` over the `/maps/` tiles and a Natural Earth outline), others in
//! `OpenSeadragon` over the IIIF service. `GET /viewer/{file}` serves its script, style
//! and the vendored libraries with their licences (`src/viewer/VENDORED.md`). Everything
//! is compiled into the binary: no CDN, works offline.
//!
//! Two small JSON documents exist for the page's colorbar, so that it shows exactly what
//! the images show rather than a copy that could drift: `/viewer/colormaps.json` (the
//! server's own 256-entry colormap tables) and `/viewer/window/{identifier}` (the value
//! window images use when no `vmin`/`vmax` is given).

use std::sync::OnceLock;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::http::extract::NodePath;
use crate::http::state::AppState;
use crate::images::iiif::grammar::Identifier;
use crate::images::iiif::source::Image;
use crate::images::render::Colormap;

const INDEX: &str = include_str!("../../viewer/index.html");

/// The generated colormap tables' name under `/viewer/`.
const COLORMAPS: &str = "colormaps.json";

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// The files under `/viewer/`: name, media type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    ("viewer.js", JS, include_str!("../../viewer/viewer.js")),
    ("viewer.css", CSS, include_str!("../../viewer/viewer.css")),
    ("cf.js", JS, include_str!("../../viewer/cf.js")),
    ("views.js", JS, include_str!("../../viewer/views.js")),
    ("series.js", JS, include_str!("../../viewer/series.js")),
    ("ome.js", JS, include_str!("../../viewer/ome.js")),
    ("ome.css", CSS, include_str!("../../viewer/ome.css")),
    ("openseadragon.min.js", JS, include_str!("../../viewer/openseadragon.min.js")),
    ("openseadragon-LICENSE.txt", TEXT, include_str!("../../viewer/openseadragon-LICENSE.txt")),
    ("ol.js", JS, include_str!("../../viewer/ol.js")),
    ("ol.css", CSS, include_str!("../../viewer/ol.css")),
    ("ol-LICENSE.md", TEXT, include_str!("../../viewer/ol-LICENSE.md")),
    ("uPlot.iife.min.js", JS, include_str!("../../viewer/uPlot.iife.min.js")),
    ("uPlot.min.css", CSS, include_str!("../../viewer/uPlot.min.css")),
    ("uPlot-LICENSE.txt", TEXT, include_str!("../../viewer/uPlot-LICENSE.txt")),
    ("countries-110m.json", "application/json", include_str!("../../viewer/countries-110m.json")),
    ("world-atlas-LICENSE.txt", TEXT, include_str!("../../viewer/world-atlas-LICENSE.txt")),
    ("VENDORED.md", TEXT, include_str!("../../viewer/VENDORED.md")),
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
    let cached = |media: &'static str, body: &'static str| {
        ([(header::CONTENT_TYPE, media), (header::CACHE_CONTROL, "public, max-age=3600")], body).into_response()
    };
    if file == COLORMAPS {
        return Ok(cached("application/json", colormaps()));
    }
    let Some((_, media, body)) = ASSETS.iter().find(|(name, ..)| *name == file) else {
        let names: Vec<&str> = ASSETS.iter().map(|(n, ..)| *n).chain([COLORMAPS]).collect();
        return Err(Error::NotFound(format!("no viewer file `{file}`; the viewer serves {}", names.join(", "))));
    };
    Ok(cached(media, body))
}

/// `[{"name": "viridis", "colors": ["#440154", ... 256 colours]}, ...]` in the order of
/// `colormap=`'s names: the tables every image route renders with, so the colorbar cannot
/// disagree with the tiles.
fn colormaps() -> &'static str {
    static TABLES: OnceLock<String> = OnceLock::new();
    TABLES.get_or_init(|| {
        let tables: Vec<ColormapTable> = Colormap::ALL
            .iter()
            .map(|c| ColormapTable {
                name: c.name(),
                colors: c.table().iter().map(|[r, g, b]| format!("#{r:02x}{g:02x}{b:02x}")).collect(),
            })
            .collect();
        serde_json::to_string(&tables).unwrap_or_default()
    })
}

/// One colormap of the viewer's colorbar: its name and 256 colours as `#rrggbb`.
#[derive(Serialize)]
struct ColormapTable {
    name: &'static str,
    colors: Vec<String>,
}

/// The window of an array's images.
#[derive(Serialize)]
struct Window {
    vmin: f64,
    vmax: f64,
}

/// `GET /viewer/window/{identifier}`: `{"vmin", "vmax"}`, the window that images of the
/// array (IIIF and map tiles) use without `vmin`/`vmax`: the attributes, else the min/max
/// of the array's valid values (scanned once per array version, shared with the images).
pub async fn window(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> Result<Response> {
    let Path(text) = path.map_err(|e| Error::BadRequest(e.body_text()))?;
    let id = Identifier::parse(&text).map_err(|e| Error::NotFound(e.0))?;
    let image = Image::open(&state.catalog, id).await?;
    let window = state.images.window(&image, None, None).await?;
    let body = serde_json::to_string(&Window { vmin: window.lo, vmax: window.hi }).unwrap_or_default();
    // Data can be rewritten: ask again rather than keep a stale legend.
    Ok(([(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-cache")], body).into_response())
}
