//! Web-map tiles (`docs/maps.md`): Web Mercator 256 × 256 tiles and `TileJSON` of any
//! array on a grid (latitude/longitude, projected, rotated, geostationary: `docs/grids.md`),
//! for `MapLibre`, `OpenLayers`, `Leaflet` and deck.gl.
//!
//! [`geometry`] is the pure tile geometry (pixel → cell, bounds, zooms), [`source`] finds
//! the grid (the grid model of `analysis::grids`, CF no-data values), [`tile`] reads the
//! cells a tile shows; pixels become PNG or JPEG through the shared renderer
//! (`images::render`), and rendered tiles share the IIIF tile cache. This module holds
//! what requests share: each tile's pixel → cell lookup per grid (projected once for every
//! step, level and array on that grid) and value windows. No axum here: the HTTP edge is
//! `http::routes::maps`.

pub mod geometry;
pub mod source;
pub mod tile;

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::analysis::grids::{Found, Grids};
use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::images::iiif::grammar::Identifier;
use crate::images::iiif::source::{Image, scan_range};
use crate::images::render::Window;
use geometry::{Lookup, Resampling, TileId};
use zarrd_core::grid::Kind;
use zarrd_core::ops::caches::get_or_try_load;
use zarrd_core::read::selection::DimSelection;

/// An array ready to be tiled: its plane (and overview levels), grid and no-data values.
pub struct MapSource {
    pub image: Image,
    /// The grid and its validators.
    pub grid: Arc<Found>,
    /// CF `_FillValue` / `missing_value` numbers, no data besides the fill value and NaN.
    pub no_data: Vec<f64>,
    /// The `GeoZarr` multiscales the array is a level of, when it is.
    pub pyramid: Option<Arc<Pyramid>>,
}

impl MapSource {
    /// 422 for a resampling its grid cannot draw: bilinear needs native axes to weigh
    /// along, which the cells of a curvilinear grid do not have.
    pub fn resampled(&self, resampling: Resampling) -> Result<()> {
        if resampling == Resampling::Bilinear && self.grid.grid.kind == Kind::Curvilinear {
            return Err(Error::Unsupported(format!(
                "`{}` is on a curvilinear grid (2-D latitude/longitude), which has no native axes to interpolate along; allowed: resampling=nearest",
                self.image.id.path
            )));
        }
        Ok(())
    }
}

/// The levels of a `GeoZarr` multiscales layout an array is in: per level (finest first)
/// its asset, the same array's path in it, and its cell width.
#[derive(Debug)]
pub struct Pyramid {
    pub levels: Vec<(zarrd_core::grid::geozarr::Level, String)>,
    /// Whether cell widths are in degrees (a geographic CRS).
    pub degrees: bool,
}

/// The `GeoZarr` multiscales layout `reader` is a level of: its group is an asset of the
/// layout in the group above (`design/API.md`, "`GeoZarr` multiscales").
async fn pyramid(
    catalog: &Catalog,
    dataset: &crate::catalog::Dataset,
    reader: &zarrd_core::read::ArrayReader,
    degrees: bool,
) -> Option<Pyramid> {
    let (level_group, name) = reader.path.rsplit_once('/')?;
    let (layout_group, asset) = level_group.rsplit_once('/').unwrap_or(("", level_group));
    let zarrd_core::zarr::metadata::Node::Group(group) = catalog.find(dataset, layout_group).await.ok()? else {
        return None;
    };
    let levels = zarrd_core::grid::geozarr::multiscales(&group.attributes)?;
    if !levels.iter().any(|l| l.asset == asset) {
        return None;
    }
    let join = |asset: &str| {
        if layout_group.is_empty() { format!("{asset}/{name}") } else { format!("{layout_group}/{asset}/{name}") }
    };
    Some(Pyramid {
        levels: levels
            .into_iter()
            .map(|l| {
                let path = join(&l.asset);
                (l, path)
            })
            .collect(),
        degrees,
    })
}

/// The lookups kept: 64 MiB (a projected tile's nearest lookup is 512 KiB).
const LOOKUP_BYTES: u64 = 64 << 20;

/// What every map request shares: tile lookups by grid, value windows by array version.
#[derive(Clone)]
pub struct Maps {
    /// `(dataset, grid digest, tile, resampling)` → which cells each pixel shows.
    lookups: Cache<(Arc<str>, (u128, u128), TileId, Resampling), Arc<Lookup>>,
    /// `(dataset, path, metadata digest)` → min/max of the valid values (CF no-data too,
    /// which is why this is not the IIIF window cache).
    windows: Cache<(Arc<str>, String, u128), Window>,
    grids: Grids,
}

impl Maps {
    pub fn new(config: &Config, grids: Grids) -> Self {
        // A rewritten coordinate array is seen once its metadata entry expires.
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        Self {
            lookups: Cache::builder()
                .max_capacity(LOOKUP_BYTES)
                .weigher(|_, l: &Arc<Lookup>| u32::try_from(l.weight()).unwrap_or(u32::MAX))
                .time_to_live(ttl)
                .build(),
            windows: Cache::builder().max_capacity(10_000).time_to_live(ttl).build(),
            grids,
        }
    }

    /// Which cells each pixel of `tile` shows on `map`'s grid: computed once per (grid,
    /// tile, resampling) and shared by every step, level and array on that grid (on a
    /// latitude/longitude grid it costs 512 lookups and is not kept).
    pub async fn lookup(&self, map: &MapSource, tile: TileId, resampling: Resampling) -> Result<Arc<Lookup>> {
        let grid = Arc::clone(&map.grid);
        let compute = move || geometry::lookup(&grid.grid, tile, resampling);
        if map.grid.grid.kind == Kind::Geographic && resampling == Resampling::Nearest {
            return Ok(Arc::new(compute()));
        }
        let key = (Arc::clone(&map.image.reader.dataset), map.grid.digest, tile, resampling);
        let load = || async { zarrd_core::ops::cpu::run(compute).await.map(Arc::new).map_err(Error::internal) };
        get_or_try_load(&self.lookups, key, load).await.map_err(Arc::unwrap_or_clone)
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

    /// Opens the array `id` names as a map: an image (422 / 400 / 404 as for IIIF) on a
    /// grid whose (Y, X) are its last two dimensions (else 422).
    pub async fn open(&self, catalog: &Catalog, id: Identifier) -> Result<MapSource> {
        let image = Image::open(catalog, id).await?;
        let dataset = catalog.dataset(&image.id.dataset).await?;
        let grid = source::grid(&self.grids, catalog, &dataset, &image.reader).await?;
        let rank = image.reader.meta.shape.len();
        if grid.grid.dims != [rank - 2, rank - 1] {
            return Err(Error::Unsupported(format!(
                "map tiles draw an array's last two dimensions; the grid of `{}` is on its dimensions {} and {}",
                image.id.path, grid.grid.names[0], grid.grid.names[1]
            )));
        }
        let no_data = source::cf_no_data(&image.reader.meta);
        let degrees = grid.grid.kind == Kind::Geographic;
        let pyramid = pyramid(catalog, &dataset, &image.reader, degrees).await.map(Arc::new);
        Ok(MapSource { image, grid, no_data, pyramid })
    }

    /// The map a tile draws: on a `GeoZarr` multiscales level, the level the tile's zoom and
    /// latitude choose (whichever level was asked), with its asset; else `map` itself.
    pub async fn level(&self, catalog: &Catalog, map: MapSource, tile: TileId) -> Result<(MapSource, Option<String>)> {
        let Some(pyramid) = map.pyramid.clone() else { return Ok((map, None)) };
        let n = f64::from(1u32 << tile.z);
        let lat = (std::f64::consts::PI * (1.0 - 2.0 * (f64::from(tile.y) + 0.5) / n)).sinh().atan().to_degrees();
        let levels: Vec<zarrd_core::grid::geozarr::Level> = pyramid.levels.iter().map(|(l, _)| l.clone()).collect();
        let (level, path) =
            &pyramid.levels[zarrd_core::grid::geozarr::level_for(&levels, tile.z, lat, pyramid.degrees)];
        if *path == map.image.id.path {
            return Ok((map, Some(level.asset.clone())));
        }
        let id = Identifier { path: path.clone(), ..map.image.id.clone() };
        Ok((Box::pin(self.open(catalog, id)).await?, Some(level.asset.clone())))
    }
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
    let grid = &map.grid.grid;
    let bounds = geometry::bounds(grid);
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
        maxzoom: geometry::maxzoom(grid),
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
            latitude: &grid.names[0],
            longitude: &grid.names[1],
        },
    }
}
