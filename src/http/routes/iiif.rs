//! `GET /iiif/3/{identifier}/info.json` and
//! `GET /iiif/3/{identifier}/{region}/{size}/{rotation}/{quality}.{format}`: the IIIF
//! Image API 3.0 (<https://iiif.io/api/image/3.0/>), so `OpenSeadragon`, `Leaflet-IIIF` and
//! `Mirador` can show any array. `vmin`, `vmax` and `colormap` query parameters (outside
//! IIIF) override the window and colormap; on an OME-Zarr composite, `channels`, `windows`
//! and `colors` pick the channels drawn and their windows and colours
//! (`images::iiif::channels`).

use axum::Extension;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::auth::CapabilityPath;
use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Validators, Varies, cache_control};
use crate::http::extract::{Params, base_url, path_error};
use crate::http::images::{deliver, identifier, respond};
use crate::http::query::ImageQuery;
use crate::http::state::AppState;
use crate::images::iiif;
use crate::images::iiif::channels::Choice;
use crate::images::iiif::grammar::{ImageRequest, Quality};
use crate::images::iiif::info::{self, CONTEXT};
use crate::images::iiif::source::{Drawing, Image};
use crate::images::render::{Colormap, Style, Window};
use crate::images::rendered_key::{IiifKey, RenderedKey};

/// `GET /iiif/3/{identifier}`: the spec's base URI redirects to `info.json` (an unknown
/// dataset is a 404 here too, as it is for a private one the caller may not read).
pub async fn base(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> Result<Response> {
    let Path(text) = path.map_err(|e| path_error(&e))?;
    let id = identifier(&text)?;
    state.catalog.dataset(&id.dataset).await?;
    let location = format!("/iiif/3/{}/info.json", id.encoded());
    let mut response = StatusCode::SEE_OTHER.into_response();
    response.headers_mut().insert(
        header::LOCATION,
        HeaderValue::from_str(&location).map_err(|e| Error::internal_from("the Location header", e))?,
    );
    Ok(response)
}

/// `info.json`: size, tiles down to a whole-image tile, preferred sizes and what this
/// server supports beyond level 2.
pub async fn info(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    capability: Option<Extension<CapabilityPath>>,
) -> Result<Response> {
    let Path(text) = path.map_err(|e| path_error(&e))?;
    Params::parse(query.as_deref(), &[])?;
    let image = Image::open(&state.catalog, identifier(&text)?).await?;
    // Behind a capability URL, the tiles a viewer asks for stay behind it.
    let behind = capability.map(|Extension(c)| c.public_prefix()).unwrap_or_default();
    let id = format!("{}{behind}/iiif/3/{}", base_url(&headers), image.id.encoded());
    let doc = info::document(&image, &id);
    // JSON-LD media type for clients that ask for it (the spec's content negotiation): a
    // representation of its own, with its own validator.
    let wants_ld =
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("application/ld+json"));
    let media = if wants_ld { format!("application/ld+json;profile=\"{CONTEXT}\"") } else { "application/json".into() };
    let mut tag = EtagBuilder::new("iiif-info");
    tag.text(&media).text(&id).digest(image.reader.meta.digest);
    for level in &image.levels {
        tag.number(u64::from(level.log2)).digest(level.reader.meta.digest);
    }
    let validators = Validators::new(tag.finish(), cache_control(&state.config, false))
        .varying(Varies { accept: true, encoding: true });
    let body = serde_json::to_string(&doc).map_err(|e| Error::internal_from("info.json", e))?;
    validators.respond(&headers, async { Ok(([(header::CONTENT_TYPE, media)], body).into_response()) }).await
}

/// An image request.
pub async fn image(
    State(state): State<AppState>,
    path: Result<Path<(String, String, String, String, String)>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let Path((text, region, size, rotation, quality)) = path.map_err(|e| path_error(&e))?;
    let request = ImageRequest::parse(&region, &size, &rotation, &quality).map_err(|e| Error::BadRequest(e.0))?;
    let query: ImageQuery = crate::http::query::parse(query.as_deref())?;
    let mut image = Image::open(&state.catalog, identifier(&text)?).await?;
    let (colormap, vmin, vmax) = drawing_params(&query, &request, &mut image)?;
    state.images.resolve_channels(&mut image).await?;
    // Sizes are checked before any data is read, so a huge output is refused at once.
    let working = working_memory(&request, &image, state.config.limits.max_response_bytes)?;
    // A composite's or labels' colours are their own; only a plane needs the window.
    let window = match image.drawing {
        Drawing::Plane => state.images.window(&image, vmin, vmax).await?,
        _ => Window { lo: 0.0, hi: 0.0 },
    };
    let style = Style { window, quality: request.quality, colormap: colormap.unwrap_or(Colormap::Viridis) };
    let key = RenderedKey::Iiif(IiifKey::new(&image, &request, style.window, style.colormap));
    let config_cache_control = cache_control(&state.config, false).into_owned();
    if let Some(hit) = state.images.cached(&key).await {
        return Ok(respond(&hit, &headers, &config_cache_control));
    }
    let held = image.reader.budget.reserve(working).await?;
    let (bytes, versions) = iiif::render(&image, &request, style).await?;
    drop(held);
    Ok(deliver(&state, "iiif", key, bytes, &versions, request.format.media_type(), &headers).await)
}

/// The colormap and window of a request, checked against how `image` is drawn; a choice of
/// an OME-Zarr composite's channels (`channels`, `windows`, `colors`) is applied to it.
fn drawing_params(
    query: &ImageQuery,
    request: &ImageRequest,
    image: &mut Image,
) -> Result<(Option<Colormap>, Option<f64>, Option<f64>)> {
    let colormap = query.colormap;
    if colormap.is_some() && matches!(request.quality, Quality::Gray | Quality::Bitonal) {
        return Err(Error::BadRequest(format!(
            "`colormap` applies to the `default` and `color` qualities, not `{}`",
            request.quality.name()
        )));
    }
    let (vmin, vmax) = query.window().checked()?;
    if !matches!(image.drawing, Drawing::Plane) && (vmin.is_some() || vmax.is_some() || colormap.is_some()) {
        return Err(Error::BadRequest(format!(
            "`{}` is drawn in its OME-Zarr colours (a composite of its `omero` channels, or labels), so `vmin`, `vmax` and `colormap` do not apply; pick one channel with [c=K] in the identifier to use them",
            image.id.path
        )));
    }
    let choice = Choice::parse(|k| match k {
        "channels" => query.channels.clone(),
        "windows" => query.windows.clone(),
        "colors" => query.colors.clone(),
        _ => None,
    })?;
    if !choice.is_empty() {
        if !matches!(image.drawing, Drawing::Composite { .. }) {
            return Err(Error::BadRequest(format!(
                "`channels`, `windows` and `colors` apply to a composite of an OME-Zarr image's channels; `{}` is drawn as {}",
                image.id.path,
                if matches!(image.drawing, Drawing::Labels { .. }) {
                    "labels"
                } else {
                    "one plane (use vmin, vmax and colormap)"
                }
            )));
        }
        let extent = image.channel_axis.map_or(0, |axis| image.reader.meta.shape[axis]);
        image.drawing = choice.apply(&image.drawing, image.group_attributes.as_deref(), extent)?;
    }
    Ok((colormap, vmin, vmax))
}

/// The bytes rendering the request's output takes (an RGBA pixel is 4 bytes; the working
/// raster holds an f64 per pixel besides), refused beyond the response limit.
fn working_memory(request: &ImageRequest, image: &Image, limit: u64) -> Result<u64> {
    let rect = request.region.resolve(image.width, image.height).map_err(|e| Error::BadRequest(e.0))?;
    let (width, height) = request.size.resolve(rect.w, rect.h).map_err(|e| Error::BadRequest(e.0))?;
    let bytes = u128::from(width) * u128::from(height) * 12;
    if bytes > u128::from(limit) {
        return Err(Error::TooLarge { what: "an image (12 bytes of working memory per pixel)", size: bytes, limit });
    }
    Ok(bytes as u64)
}
