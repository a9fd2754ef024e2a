//! Web-map tiles (`docs/maps.md`): Web Mercator 256 × 256 tiles and `TileJSON` of any
//! array on a latitude/longitude grid, for `MapLibre`, `OpenLayers`, `Leaflet` and deck.gl.
//!
//! [`geometry`] is the pure tile geometry (pixel → cell, bounds, zooms), [`source`] finds
//! the grid (dimension names, coordinate arrays, CF no-data values), [`tile`] reads the
//! cells a tile shows; pixels become PNG or JPEG through the shared renderer
//! (`images::render`), and rendered tiles share the IIIF tile cache. This module holds
//! what requests share: the decoded grid of each coordinate-array version. No axum here:
//! the HTTP edge is `http::routes::maps`.

pub mod geometry;
pub mod source;
pub mod tile;

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::images::iiif::grammar::Identifier;
use crate::images::iiif::source::{Image, scan_range};
use crate::images::render::Window;
use geometry::Grid;
use zarrd_core::ops::caches::get_or_try_load;
use zarrd_core::read::selection::DimSelection;

/// An array ready to be tiled: its plane (and overview levels), grid and no-data values.
pub struct MapSource {
    pub image: Image,
    pub grid: Arc<Grid>,
    /// CF `_FillValue` / `missing_value` numbers, no data besides the fill value and NaN.
    pub no_data: Vec<f64>,
    /// The coordinate arrays' metadata digests (validators of the grid).
    pub grid_digest: (u128, u128),
    /// The latitude and longitude dimension names.
    pub names: (String, String),
}

/// What every map request shares: grids by coordinate-array version, value windows by
/// array version.
#[derive(Clone)]
pub struct Maps {
    /// `(dataset, lat path, lat digest, lon path, lon digest)` → the grid.
    grids: Cache<(Arc<str>, String, u128, String, u128), Arc<Grid>>,
    /// `(dataset, path, metadata digest)` → min/max of the valid values (CF no-data too,
    /// which is why this is not the IIIF window cache).
    windows: Cache<(Arc<str>, String, u128), Window>,
}

impl Maps {
    pub fn new(config: &Config) -> Self {
        // A rewritten coordinate array is seen once its metadata entry expires.
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        Self {
            grids: Cache::builder().max_capacity(1_000).time_to_live(ttl).build(),
            windows: Cache::builder().max_capacity(10_000).time_to_live(ttl).build(),
        }
    }

    /// The window of `map`: `vmin`/`vmax` when given, else the attributes (as for IIIF),
    /// else the array-wide min/max of its valid values (scanned once per array version,
    /// from its coarsest overview level when the array is too large to scan).
    pub async fn window(&self, map: &MapSource, vmin: Option<f64>, vmax: Option<f64>) -> Result<Window> {
        let image = &map.image;
        let (attr_lo, attr_hi) = image.attribute_window();
        let (mut lo, mut hi) = (vmin.or(attr_lo), vmax.or(attr_hi));
        if lo.is_none() || hi.is_none() {
            let key = (Arc::clone(&image.reader.dataset), image.reader.path.clone(), image.reader.meta.digest);
            let scan = async {
                let whole = |r: &zarrd_core::read::ArrayReader| -> Vec<DimSelection> {
                    r.meta.shape.iter().map(|&n| DimSelection::all(n)).collect()
                };
                let mut candidates = vec![&image.reader];
                candidates.extend(image.levels.iter().rev().map(|l| &l.reader));
                let Some(reader) = candidates.into_iter().find(|r| r.check_chunks(&whole(r)).is_ok()) else {
                    return Err(Error::TooManyChunks(format!(
                        "`{}` is too large to find its value range within limits.max_chunks_per_request and it has no overview levels; pass `vmin` and `vmax`",
                        image.id.path
                    )));
                };
                scan_range(reader, &map.no_data).await
            };
            let scanned = get_or_try_load(&self.windows, key, || scan).await.map_err(Arc::unwrap_or_clone)?;
            lo = lo.or(Some(scanned.lo));
            hi = hi.or(Some(scanned.hi));
        }
        Ok(Window { lo: lo.unwrap_or(0.0), hi: hi.unwrap_or(0.0) })
    }

    /// Opens the array `id` names as a map: an image (422 / 400 / 404 as for IIIF) whose
    /// last two dimensions have latitude and longitude coordinate arrays (else 422).
    pub async fn open(&self, catalog: &Catalog, id: Identifier) -> Result<MapSource> {
        let image = Image::open(catalog, id).await?;
        let dataset = catalog.dataset(&image.id.dataset).await?;
        let coordinates = source::coordinates(catalog, &dataset, &image.reader).await?;
        let key = (
            Arc::clone(&image.reader.dataset),
            coordinates.lat.path.clone(),
            coordinates.lat.meta.digest,
            coordinates.lon.path.clone(),
            coordinates.lon.meta.digest,
        );
        let grid_digest = (coordinates.lat.meta.digest, coordinates.lon.meta.digest);
        let grid = get_or_try_load(&self.grids, key, || async { source::grid(&coordinates).await.map(Arc::new) })
            .await
            .map_err(Arc::unwrap_or_clone)?;
        let names = (name_of(&coordinates.lat.path), name_of(&coordinates.lon.path));
        let no_data = source::cf_no_data(&image.reader.meta);
        Ok(MapSource { image, grid, no_data, grid_digest, names })
    }
}

fn name_of(path: &str) -> String {
    path.rsplit_once('/').map_or(path, |(_, name)| name).to_owned()
}

/// A `TileJSON` 3.0.0 document (<https://github.com/mapbox/tilejson-spec/tree/master/3.0.0>),
/// with what a viewer needs besides: the array, its units, value window and colormaps.
#[derive(Debug, serde::Serialize)]
pub struct TileJson<'a> {
    pub tilejson: &'static str,
    pub name: &'a str,
    pub description: &'a str,
    pub tiles: [&'a str; 1],
    pub scheme: &'static str,
    pub minzoom: u8,
    pub maxzoom: u8,
    /// West, south, east, north in degrees, latitudes clipped to ±85.0511.
    pub bounds: [f64; 4],
    /// Longitude, latitude and zoom.
    pub center: (f64, f64, u8),
    pub units: Option<&'a str>,
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    pub colormap: &'static str,
    pub colormaps: Vec<&'static str>,
    pub formats: [&'static str; 3],
    pub array: TileJsonArray<'a>,
}

/// The array a map's tiles show.
#[derive(Debug, serde::Serialize)]
pub struct TileJsonArray<'a> {
    pub dataset: &'a str,
    pub path: &'a str,
    /// The indices of the leading dimensions.
    pub indices: &'a [u64],
    pub shape: &'a [u64],
    pub dimension_names: Option<Vec<Option<String>>>,
    pub latitude: &'a str,
    pub longitude: &'a str,
}

/// The `TileJSON` of `map` with the tile URL `template`: bounds and zooms from the grid,
/// the value `window` when known, and the `colormap`.
pub fn tilejson<'a>(
    map: &'a MapSource,
    template: &'a str,
    window: Option<crate::images::render::Window>,
    colormap: crate::images::render::Colormap,
) -> TileJson<'a> {
    let bounds = map.grid.bounds();
    let meta = &map.image.reader.meta;
    let attr = |name: &str| meta.attributes.get(name).and_then(serde_json::Value::as_str);
    let path = map.image.id.path.as_str();
    TileJson {
        tilejson: "3.0.0",
        name: path,
        description: attr("long_name").unwrap_or(path),
        tiles: [template],
        scheme: "xyz",
        minzoom: 0,
        maxzoom: map.grid.maxzoom(),
        bounds,
        center: (f64::midpoint(bounds[0], bounds[2]), f64::midpoint(bounds[1], bounds[3]), 0),
        units: attr("units"),
        vmin: window.map(|w| w.lo),
        vmax: window.map(|w| w.hi),
        colormap: colormap.name(),
        colormaps: crate::images::render::Colormap::ALL.iter().map(|c| c.name()).collect(),
        formats: ["png", "jpg", "npy"],
        array: TileJsonArray {
            dataset: &map.image.id.dataset,
            path,
            indices: &map.image.id.indices,
            shape: &meta.shape,
            dimension_names: source::dimension_names(meta),
            latitude: &map.names.0,
            longitude: &map.names.1,
        },
    }
}
