//! `GET /iiif/3/{identifier}/info.json` and
//! `GET /iiif/3/{identifier}/{region}/{size}/{rotation}/{quality}.{format}`: the IIIF
//! Image API 3.0 (<https://iiif.io/api/image/3.0/>), so `OpenSeadragon`, `Leaflet-IIIF` and
//! `Mirador` can show any array. `vmin`, `vmax` and `colormap` query parameters (outside
//! IIIF) override the window and colormap; on an OME-Zarr composite, `channels`, `windows`
//! and `colors` pick the channels drawn and their windows and colours
//! (`images::iiif::channels`).

use std::sync::Arc;

use axum::Extension;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::CapabilityPath;
use crate::error::{Error, Result};
use crate::http::conditional::{
    EtagBuilder, Varies, cache_control, not_modified, unchanged, with_validators, with_varying_validators,
};
use crate::http::extract::Params;
use crate::http::middleware::NoCompress;
use crate::http::state::AppState;
use crate::images::iiif::channels::Choice;
use crate::images::iiif::grammar::{Identifier, ImageRequest, Quality};
use crate::images::iiif::source::{Drawing, Image};
use crate::images::iiif::{self, Rendered, TILE_SIZE};
use crate::images::render::{Colormap, Style};
use crate::images::rendered_key::{IiifKey, RenderedKey};
use zarrd_core::read::ObjectVersion;

const IMAGE_PARAMS: &[&str] = &["vmin", "vmax", "colormap", "channels", "windows", "colors"];
const CONTEXT: &str = "http://iiif.io/api/image/3/context.json";

pub(crate) fn path_error(e: &PathRejection) -> Error {
    Error::BadRequest(e.body_text())
}

/// The identifier of a request path (already percent-decoded by the router); one that
/// does not parse names no image, so it is 404 like an unknown one.
pub(crate) fn identifier(text: &str) -> Result<Identifier> {
    Identifier::parse(text).map_err(|e| Error::NotFound(e.0))
}

/// This server's base URL as the client sees it: `X-Forwarded-Proto`/`X-Forwarded-Host`
/// (first value) behind a proxy or load balancer, else `http` and `Host`.
pub(crate) fn base_url(headers: &HeaderMap) -> String {
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

/// `GET /iiif/3/{identifier}`: the spec's base URI redirects to `info.json` (an unknown
/// dataset is a 404 here too, as it is for a private one the caller may not read).
pub async fn base(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> Result<Response> {
    let Path(text) = path.map_err(|e| path_error(&e))?;
    let id = identifier(&text)?;
    state.catalog.dataset(&id.dataset).await?;
    let location = format!("/iiif/3/{}/info.json", id.encoded());
    let mut response = StatusCode::SEE_OTHER.into_response();
    response
        .headers_mut()
        .insert(header::LOCATION, HeaderValue::from_str(&location).map_err(|e| Error::Internal(e.to_string()))?);
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
    let (width, height) = (image.width, image.height);
    let top = iiif::max_scale_log2(width, height);
    let stored = image.multiscale_levels();
    // Scale factors: down to a whole-image tile, and every stored level of an OME-Zarr image.
    let mut scale_factors: Vec<u64> = (0..=top).map(|k| 1u64 << k).collect();
    scale_factors.extend(stored.iter().map(|&(k, _, _)| 1u64 << k));
    scale_factors.sort_unstable();
    scale_factors.dedup();
    // Preferred sizes, smallest first, small enough to ask for whole: an OME-Zarr image's
    // stored levels as they are stored, else the reductions by powers of two.
    let candidates: Vec<(u64, u64)> = if stored.is_empty() {
        (0..=top).map(|k| (width.div_ceil(1 << k), height.div_ceil(1 << k))).collect()
    } else {
        stored.iter().map(|&(_, w, h)| (w, h)).collect()
    };
    let mut sizes: Vec<(u64, u64)> =
        candidates.into_iter().filter(|&(w, h)| w * h <= 1 << 20 || (w <= TILE_SIZE && h <= TILE_SIZE)).collect();
    sizes.sort_unstable();
    let sizes: Vec<serde_json::Value> =
        sizes.into_iter().map(|(w, h)| json!({"type": "Size", "width": w, "height": h})).collect();
    let mut doc = json!({
        "@context": CONTEXT,
        "id": id,
        "type": "ImageService3",
        "protocol": "http://iiif.io/api/image",
        "profile": "level2",
        "width": width,
        "height": height,
        "tiles": [{"type": "Tile", "width": TILE_SIZE, "height": TILE_SIZE, "scaleFactors": scale_factors}],
        "sizes": sizes,
        // PNG first: exact levels and transparent fill (JPEG is lossy and has no alpha).
        "preferredFormats": ["png"],
        "extraFormats": ["png", "jpg"],
        "extraQualities": ["color", "gray", "bitonal"],
        "extraFeatures": ["mirroring", "sizeUpscaling", "rotationBy90s", "regionSquare", "sizeByConfinedWh"],
    });
    if let Some((scale, units)) = image.physical.as_ref().and_then(|(s, u)| physical_dimensions(*s, u)) {
        doc["service"] = json!([{
            "@context": "http://iiif.io/api/annex/services/physdim/1/context.json",
            "profile": "http://iiif.io/api/annex/services/physdim",
            "physicalScale": scale,
            "physicalUnits": units,
        }]);
    }
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
    let etag = tag.finish();
    let cache_control = cache_control(&state.config, false);
    let varies = Varies { accept: true, encoding: true };
    if not_modified(&headers, &etag) {
        return Ok(unchanged(&etag, &cache_control, varies));
    }
    let response = ([(header::CONTENT_TYPE, media)], doc.to_string()).into_response();
    Ok(with_varying_validators(response, &etag, &cache_control, varies))
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
    let params = Params::parse(query.as_deref(), IMAGE_PARAMS)?;
    let colormap = params.get("colormap").map(Colormap::parse).transpose()?;
    if colormap.is_some() && matches!(request.quality, Quality::Gray | Quality::Bitonal) {
        return Err(Error::BadRequest(format!(
            "`colormap` applies to the `default` and `color` qualities, not `{}`",
            request.quality.name()
        )));
    }
    let (vmin, vmax) = window_params(&params)?;
    let mut image = Image::open(&state.catalog, identifier(&text)?).await?;
    if !matches!(image.drawing, Drawing::Plane) && (vmin.is_some() || vmax.is_some() || colormap.is_some()) {
        return Err(Error::BadRequest(format!(
            "`{}` is drawn in its OME-Zarr colours (a composite of its `omero` channels, or labels), so `vmin`, `vmax` and `colormap` do not apply; pick one channel with [c=K] in the identifier to use them",
            image.id.path
        )));
    }
    let choice = Choice::parse(|k| params.get(k).map(str::to_owned))?;
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
    state.images.resolve_channels(&mut image).await?;
    // Sizes are checked before any data is read, so a huge output is refused at once.
    let rect = request.region.resolve(image.width, image.height).map_err(|e| Error::BadRequest(e.0))?;
    let (width, height) = request.size.resolve(rect.w, rect.h).map_err(|e| Error::BadRequest(e.0))?;
    let pixels = u128::from(width) * u128::from(height);
    let limit = state.config.limits.max_response_bytes;
    // An RGBA pixel is 4 bytes; the working raster holds an f64 per pixel besides.
    if pixels * 12 > u128::from(limit) {
        return Err(Error::TooLarge {
            what: "an image (12 bytes of working memory per pixel)",
            size: pixels * 12,
            limit,
        });
    }
    // A composite's or labels' colours are their own; only a plane needs the window.
    let window = match image.drawing {
        Drawing::Plane => state.images.window(&image, vmin, vmax).await?,
        _ => crate::images::render::Window { lo: 0.0, hi: 0.0 },
    };
    let style = Style { window, quality: request.quality, colormap: colormap.unwrap_or(Colormap::Viridis) };
    let key = RenderedKey::Iiif(IiifKey::new(&image, &request, window, style.colormap));
    let config_cache_control = cache_control(&state.config, false).into_owned();
    if let Some(hit) = state.images.cached(&key).await {
        return Ok(respond(&hit, &headers, &config_cache_control));
    }
    let held = image.reader.budget.reserve((pixels * 12) as u64).await?;
    let (bytes, versions) = iiif::render(&image, &request, style).await?;
    drop(held);
    Ok(deliver(&state, "iiif", key, bytes, &versions, request.format.media_type(), &headers).await)
}

/// `vmin` and `vmax` (outside IIIF, also on map tiles): numbers, `vmin` not above `vmax`.
pub(crate) fn window_params(params: &Params) -> Result<(Option<f64>, Option<f64>)> {
    let (vmin, vmax) = (params.number("vmin")?, params.number("vmax")?);
    if let (Some(lo), Some(hi)) = (vmin, vmax)
        && lo > hi
    {
        return Err(Error::BadRequest(format!("`vmin` ({lo}) must not be greater than `vmax` ({hi})")));
    }
    Ok((vmin, vmax))
}

/// A freshly rendered image (IIIF or a map tile) sent and kept: its strong `ETag` from the
/// cache key and the versions of the objects read, remembered in the rendered-image cache
/// unless it holds fill for missing objects (a writer may add them soon).
pub(crate) async fn deliver(
    state: &AppState,
    scheme: &str,
    key: RenderedKey,
    bytes: Vec<u8>,
    versions: &[(String, ObjectVersion)],
    media_type: &'static str,
    headers: &HeaderMap,
) -> Response {
    let mut tag = EtagBuilder::new(scheme);
    tag.text(&key.etag_text());
    for (k, v) in versions {
        tag.text(k).text(v.as_str());
    }
    let any_missing = versions.iter().any(|(_, v)| v.is_missing());
    let rendered = Arc::new(Rendered { bytes: bytes.into(), etag: tag.finish(), media_type });
    if !any_missing {
        state.images.remember(key, Arc::clone(&rendered)).await;
    }
    respond(&rendered, headers, &cache_control(&state.config, any_missing))
}

/// The IIIF Physical Dimensions service's scale and units (`mm`, `cm` or `in`, the only
/// ones it allows) of a pixel `scale` long in OME-Zarr `unit` (UDUNITS-2 names); `None`
/// for units that are not lengths.
fn physical_dimensions(scale: f64, unit: &str) -> Option<(f64, &'static str)> {
    let mm = match unit {
        "inch" => return Some((scale, "in")),
        "centimeter" => return Some((scale, "cm")),
        "millimeter" => 1.0,
        "meter" => 1e3,
        "kilometer" => 1e6,
        "decimeter" => 1e2,
        "micrometer" => 1e-3,
        "nanometer" => 1e-6,
        "angstrom" => 1e-7,
        "picometer" => 1e-9,
        "foot" => 304.8,
        "yard" => 914.4,
        "mile" => 1_609_344.0,
        _ => return None,
    };
    Some((scale * mm, "mm"))
}

/// A rendered image (or its 304). PNG and JPEG are compressed already; a map tile's float
/// `npy` compresses (NaN and repeats), so only it is left to the compression layer.
pub(crate) fn respond(rendered: &Rendered, headers: &HeaderMap, cache_control: &str) -> Response {
    if not_modified(headers, &rendered.etag) {
        let varies = Varies { accept: false, encoding: rendered.media_type == "application/octet-stream" };
        return unchanged(&rendered.etag, cache_control, varies);
    }
    let mut response = ([(header::CONTENT_TYPE, rendered.media_type)], rendered.bytes.clone()).into_response();
    if rendered.media_type != "application/octet-stream" {
        response.extensions_mut().insert(NoCompress);
    }
    with_validators(response, &rendered.etag, cache_control)
}
