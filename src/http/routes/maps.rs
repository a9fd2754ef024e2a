//! `GET /maps/{identifier}/tilejson.json` and `GET /maps/{identifier}/{z}/{x}/{y}.{png|jpg|npy}`:
//! Web Mercator tiles of an array on a latitude/longitude grid (`docs/maps.md`), for
//! `MapLibre`, `OpenLayers`, `Leaflet` and deck.gl. `identifier` as for IIIF; `colormap`,
//! `vmin`, `vmax` as for IIIF (PNG / JPEG); `npy` gives the values (float32, NaN: no data).

use axum::Extension;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use crate::auth::CapabilityPath;
use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Validators, Varies, cache_control};
use crate::http::extract::{base_url, path_error};
use crate::http::images::{deliver, identifier, respond};
use crate::http::query::{TileJsonQuery, TileQuery};
use crate::http::state::AppState;
use crate::images::iiif::grammar::{ImageFormat, Quality};
use crate::images::maps::geometry::{MAX_ZOOM, Resampling, TILE, TileId};
use crate::images::maps::tile;
use crate::images::render::{self, Colormap, Style};
use crate::images::rendered_key::{RenderedKey, TileKey};

const FORMATS: &str = "png, jpg or npy";

/// A tile's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TileFormat {
    Image(ImageFormat),
    Npy,
}

impl TileFormat {
    fn parse(text: &str) -> Result<Self> {
        match text {
            "png" => Ok(Self::Image(ImageFormat::Png)),
            "jpg" => Ok(Self::Image(ImageFormat::Jpg)),
            "npy" => Ok(Self::Npy),
            other => Err(Error::BadRequest(format!("tile format `{other}` is not supported; allowed: {FORMATS}"))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Image(f) => f.name(),
            Self::Npy => "npy",
        }
    }
}

/// `z`, `x` and `y.ext` of a tile path: 400 for an impossible tile or another format.
fn tile_address(z: &str, x: &str, y_ext: &str) -> Result<(TileId, TileFormat)> {
    let Some((y, ext)) = y_ext.rsplit_once('.') else {
        return Err(Error::BadRequest(format!("`{y_ext}` must be y.format, e.g. 3.png; formats: {FORMATS}")));
    };
    let format = TileFormat::parse(ext)?;
    let number = |what: &str, text: &str| {
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| Error::BadRequest(format!("tile {what} `{text}` is not a non-negative integer")))
    };
    let z = number("zoom", z)?;
    if z > u64::from(MAX_ZOOM) {
        return Err(Error::BadRequest(format!("zoom {z} is too deep; allowed: 0 to {MAX_ZOOM}")));
    }
    let n = 1u64 << z;
    let (x, y) = (number("x", x)?, number("y", y)?);
    if x >= n || y >= n {
        return Err(Error::BadRequest(format!(
            "tile {z}/{x}/{y} does not exist: at zoom {z}, x and y are 0 to {}",
            n - 1
        )));
    }
    Ok((TileId { z: z as u8, x: x as u32, y: y as u32 }, format))
}

/// A tile.
pub async fn tile(
    State(state): State<AppState>,
    path: Result<Path<(String, String, String, String)>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let Path((text, z, x, y_ext)) = path.map_err(|e| path_error(&e))?;
    let (address, format) = tile_address(&z, &x, &y_ext)?;
    let tile: TileQuery = crate::http::query::parse(query.as_deref())?;
    let (vmin, vmax) = tile.window().checked()?;
    let (colormap, resampling) = (tile.colormap, tile.resampling);
    let map = state.maps.open(&state.catalog, identifier(&text)?).await?;
    map.resampled(resampling)?;
    // A GeoZarr multiscales level draws the level the tile's zoom chooses.
    let (map, level) = state.maps.level(&state.catalog, map, address).await?;
    let style = match format {
        TileFormat::Image(_) => Some(Style {
            window: state.maps.window(&map, vmin, vmax).await?,
            quality: Quality::Color,
            colormap: colormap.unwrap_or(Colormap::Viridis),
        }),
        TileFormat::Npy => None,
    };
    let look = style.map(|s| (s.window, s.colormap));
    let key = RenderedKey::Tile(TileKey::new(&map, (address, resampling), format.name(), look));
    let config_cache_control = cache_control(&state.config, false).into_owned();
    if let Some(hit) = state.images.cached(&key).await {
        return Ok(with_level(respond(&hit, &headers, &config_cache_control), level.as_deref()));
    }
    let held = map.image.reader.budget.reserve(tile::WORKING_BYTES).await?;
    let lookup = state.maps.lookup(&map, address, resampling).await?;
    let pixels = tile::read(&map.image, &lookup, &map.no_data).await?;
    let plane = pixels.plane;
    let (bytes, media_type) = match (format, style) {
        (TileFormat::Image(image_format), Some(style)) => {
            let bytes = zarrd_core::ops::cpu::run(move || render::encode(&plane, &style, image_format))
                .await
                .map_err(Error::internal)??;
            (bytes, image_format.media_type())
        }
        _ => (npy(&plane.values), "application/octet-stream"),
    };
    drop(held);
    let response = deliver(&state, "maps", key, bytes, &pixels.object_versions, media_type, &headers).await;
    Ok(with_level(response, level.as_deref()))
}

/// Names the `GeoZarr` multiscales level a tile was drawn from (`Zarr-Level`).
fn with_level(mut response: Response, level: Option<&str>) -> Response {
    if let Some(value) = level.and_then(|l| axum::http::HeaderValue::from_str(l).ok()) {
        response.headers_mut().insert("zarr-level", value);
    }
    response
}

/// A 256 × 256 float32 `.npy` (rows north to south), NaN where there is no data.
fn npy(values: &[f64]) -> Vec<u8> {
    let mut out = crate::http::encode::npy_header(zarrd_core::zarr::data_type::DataType::Float32, &[TILE as u64; 2]);
    out.reserve(values.len() * 4);
    for &v in values {
        out.extend_from_slice(&(v as f32).to_le_bytes());
    }
    out
}

/// `tilejson.json`: `TileJSON` 3.0.0 (<https://github.com/mapbox/tilejson-spec/tree/master/3.0.0>)
/// with the tile URL template (carrying `colormap`, `vmin`, `vmax` and `format` when given),
/// bounds and zooms from the grid, and what a viewer needs besides: the array, its units
/// and value window.
pub async fn tilejson(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    capability: Option<Extension<CapabilityPath>>,
) -> Result<Response> {
    let Path(text) = path.map_err(|e| path_error(&e))?;
    let asked: TileJsonQuery = crate::http::query::parse(query.as_deref())?;
    let (vmin, vmax) = asked.window().checked()?;
    let (colormap, resampling) = (asked.colormap, asked.resampling);
    let format = TileFormat::parse(asked.format.as_deref().unwrap_or("png"))?;
    let map = state.maps.open(&state.catalog, identifier(&text)?).await?;
    map.resampled(resampling)?;
    let behind = capability.map(|Extension(c)| c.public_prefix()).unwrap_or_default();
    let mut query: Vec<String> = Vec::new();
    if let Some(c) = colormap {
        query.push(format!("colormap={}", c.name()));
    }
    query.extend(vmin.map(|v| format!("vmin={v}")));
    query.extend(vmax.map(|v| format!("vmax={v}")));
    if resampling != Resampling::Nearest {
        query.push(format!("resampling={}", resampling.name()));
    }
    let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
    let template = format!(
        "{}{behind}/maps/{}/{{z}}/{{x}}/{{y}}.{}{query}",
        base_url(&headers),
        map.image.id.encoded(),
        format.name()
    );
    // The window when it can be had within limits (a huge array without overviews and
    // without vmin/vmax has none to offer; its tiles then need them).
    let window = state.maps.window(&map, vmin, vmax).await.ok();
    let doc = crate::images::maps::tilejson(&map, &template, window, colormap.unwrap_or(Colormap::Viridis));
    let body = serde_json::to_string(&doc).map_err(|e| Error::internal_from("TileJSON", e))?;
    let validators =
        Validators::new(EtagBuilder::new("maps-tilejson").text(&body).finish(), cache_control(&state.config, false))
            .varying(Varies { accept: false, encoding: true });
    validators
        .respond(&headers, async { Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response()) })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_addresses() {
        let (t, f) = tile_address("3", "7", "0.png").unwrap();
        assert_eq!((t, f), (TileId { z: 3, x: 7, y: 0 }, TileFormat::Image(ImageFormat::Png)));
        assert_eq!(tile_address("0", "0", "0.npy").unwrap().1, TileFormat::Npy);
        for (z, x, y) in [("3", "8", "0.png"), ("3", "0", "8.png"), ("25", "0", "0.png"), ("-1", "0", "0.png")] {
            assert!(tile_address(z, x, y).is_err(), "{z}/{x}/{y}");
        }
        for y in ["0.webp", "0", "a.png", "0.PNG"] {
            assert!(tile_address("1", "0", y).is_err(), "{y}");
        }
    }
}
