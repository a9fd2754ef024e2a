//! Images of arrays for deep-zoom viewers: the IIIF Image API 3.0
//! (<https://iiif.io/api/image/3.0/>) over any array of two or more numeric dimensions.
//!
//! [`grammar`] parses requests, [`source`] finds and reads the pixels (overview levels of
//! OME-NGFF multiscales, banded area-averaged reduction), the shared renderer
//! (`images::render`) turns values into PNG or JPEG. This module holds what is shared between requests: the value window of
//! each array version, computed once, and the rendered-image cache. No axum here: the HTTP
//! edge is `http::routes::iiif`.

pub mod axes;
pub mod channels;
pub mod grammar;
pub mod identifier;
pub mod info;
pub mod levels;
pub mod source;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use moka::future::Cache;
use zarrd_core::read::ObjectVersion;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::images::composite::{self, ChannelStyle};
use crate::images::render::{self, Style, Window};
use crate::images::rendered_key::RenderedKey;
use grammar::{ImageRequest, Rect};
use source::{Drawing, Image};
use zarrd_core::ops::caches::get_or_try_load;

/// Tiles advertised in `info.json`: `OpenSeadragon`'s and `Leaflet-IIIF`'s default edge.
pub const TILE_SIZE: u64 = 256;

/// A rendered image, as cached and sent.
#[derive(Debug)]
pub struct Rendered {
    pub bytes: Bytes,
    pub etag: String,
    pub media_type: &'static str,
}

/// What every IIIF request shares: windows per array version, rendered images.
#[derive(Clone)]
pub struct Images {
    /// `(dataset, path, metadata digest)` → the array's min/max of valid values. Only the
    /// scan is cached: attributes are read from the metadata each time (they are cheap).
    windows: Cache<(Arc<str>, String, u128), Window>,
    /// Everything an image depends on besides the objects read → the rendered image.
    tiles: Option<Cache<RenderedKey, Arc<Rendered>>>,
}

impl Images {
    pub fn new(config: &Config) -> Self {
        // A rewritten chunk is seen once entries expire, like the decoded-chunk cache.
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        let tiles = (config.cache.tile_bytes > 0).then(|| {
            Cache::builder()
                .max_capacity(config.cache.tile_bytes)
                .weigher(|k: &RenderedKey, v: &Arc<Rendered>| {
                    u32::try_from(k.weight() + v.bytes.len() + v.etag.len() + 64).unwrap_or(u32::MAX)
                })
                .time_to_live(ttl)
                .build()
        });
        Self { windows: Cache::builder().max_capacity(10_000).time_to_live(ttl).build(), tiles }
    }

    /// The window of `image`: `vmin`/`vmax` when given, else the attributes, else the
    /// array-wide min/max of valid values (scanned once per array version).
    pub async fn window(&self, image: &Image, vmin: Option<f64>, vmax: Option<f64>) -> Result<Window> {
        let (attr_lo, attr_hi) = image.attribute_window();
        let (mut lo, mut hi) = (vmin.or(attr_lo), vmax.or(attr_hi));
        if lo.is_none() || hi.is_none() {
            let key = (Arc::clone(&image.reader.dataset), image.reader.path.clone(), image.reader.meta.digest);
            let scanned =
                get_or_try_load(&self.windows, key, || image.value_range()).await.map_err(Arc::unwrap_or_clone)?;
            lo = lo.or(Some(scanned.lo));
            hi = hi.or(Some(scanned.hi));
        }
        Ok(Window { lo: lo.unwrap_or(0.0), hi: hi.unwrap_or(0.0) })
    }

    /// Fills in the windows of a composite's channels that `omero` gives none: the
    /// array-wide value range (scanned once per array version, as for one plane).
    pub async fn resolve_channels(&self, image: &mut Image) -> Result<()> {
        if let Drawing::Composite { channels, .. } = &image.drawing
            && channels.iter().any(|c| c.window.is_none())
        {
            let key = (Arc::clone(&image.reader.dataset), image.reader.path.clone(), image.reader.meta.digest);
            let scanned =
                get_or_try_load(&self.windows, key, || image.value_range()).await.map_err(Arc::unwrap_or_clone)?;
            if let Drawing::Composite { channels, .. } = &mut image.drawing {
                for c in channels.iter_mut().filter(|c| c.window.is_none()) {
                    c.window = Some(scanned);
                }
            }
        }
        Ok(())
    }

    pub async fn cached(&self, key: &RenderedKey) -> Option<Arc<Rendered>> {
        let hit = self.tiles.as_ref()?.get(key).await;
        zarrd_core::ops::metrics::cache_lookup("tile", hit.is_some());
        hit
    }

    pub async fn remember(&self, key: RenderedKey, rendered: Arc<Rendered>) {
        if let Some(tiles) = &self.tiles {
            tiles.insert(key, rendered).await;
        }
    }
}

/// How many times to halve the region before resampling: the largest `k` whose level
/// still has at least the requested pixels in both directions (so only upsampling or
/// a small downsampling is left to nearest-neighbour).
pub fn reduction(rect: Rect, width: u64, height: u64) -> u32 {
    let mut k = 0;
    while k < 62
        && rect.w.div_ceil(1 << (k + 1)) >= width
        && rect.h.div_ceil(1 << (k + 1)) >= height
        && (rect.w > 1 << k || rect.h > 1 << k)
    {
        k += 1;
    }
    k
}

/// The largest reduction `info.json` advertises: until the whole image fits one tile.
pub fn max_scale_log2(width: u64, height: u64) -> u32 {
    let mut k = 0;
    while width.max(height).div_ceil(1 << k) > TILE_SIZE && k < 62 {
        k += 1;
    }
    k
}

/// Renders `request` of `image`: region, reduced + resampled size, rotation, style (a
/// composite's channels in their colours and windows, labels in theirs), encoded. Returns
/// the bytes and the versions of the objects read.
pub async fn render(
    image: &Image,
    request: &ImageRequest,
    style: Style,
) -> Result<(Vec<u8>, Vec<(String, ObjectVersion)>)> {
    let rect = request.region.resolve(image.width, image.height).map_err(|e| Error::BadRequest(e.0))?;
    let (width, height) = request.size.resolve(rect.w, rect.h).map_err(|e| Error::BadRequest(e.0))?;
    let k = reduction(rect, width, height);
    let (rotation, format, quality) = (request.rotation, request.format, request.quality);
    let place = move |plane: render::Plane| plane.resample(width as usize, height as usize).orient(rotation);
    match &image.drawing {
        Drawing::Plane => {}
        Drawing::Composite { axis, channels } => {
            let mut planes = Vec::with_capacity(channels.len());
            let mut styles = Vec::with_capacity(channels.len());
            let mut object_versions = Vec::new();
            for c in channels {
                let pixels = image.channel(*axis, c.index, rect, k).await?;
                planes.push(pixels.plane);
                object_versions.extend(pixels.object_versions);
                styles.push(ChannelStyle { color: c.color, window: c.window.unwrap_or(Window { lo: 0.0, hi: 0.0 }) });
            }
            let bytes = zarrd_core::ops::cpu::run(move || {
                let planes: Vec<render::Plane> = planes.into_iter().map(place).collect();
                let (w, h) = planes.first().map_or((width as usize, height as usize), |p| (p.width, p.height));
                let rgba = if planes.is_empty() { vec![0; w * h * 4] } else { composite::composite(&planes, &styles) };
                render::encode_rgba(&rgba, w, h, quality, format)
            })
            .await
            .map_err(Error::internal)??;
            return Ok((bytes, object_versions));
        }
        Drawing::Labels { colors } => {
            let pixels = image.reduced(rect, k).await?;
            let colors = colors.clone();
            let bytes = zarrd_core::ops::cpu::run(move || {
                let plane = place(pixels.plane);
                render::encode_rgba(&composite::labels(&plane, &colors), plane.width, plane.height, quality, format)
            })
            .await
            .map_err(Error::internal)??;
            return Ok((bytes, pixels.object_versions));
        }
    }
    let pixels = image.reduced(rect, k).await?;
    let bytes = zarrd_core::ops::cpu::run(move || {
        let plane = place(pixels.plane);
        render::encode(&plane, &style, format)
    })
    .await
    .map_err(Error::internal)??;
    Ok((bytes, pixels.object_versions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_picks_the_next_larger_power_of_two_level() {
        let rect = |w, h| Rect { x: 0, y: 0, w, h };
        assert_eq!(reduction(rect(1024, 1024), 1024, 1024), 0);
        assert_eq!(reduction(rect(1024, 1024), 512, 512), 1);
        assert_eq!(reduction(rect(1024, 1024), 256, 256), 2);
        assert_eq!(reduction(rect(1024, 1024), 300, 300), 1);
        assert_eq!(reduction(rect(1000, 600), 125, 75), 3);
        assert_eq!(reduction(rect(1000, 600), 125, 300), 1);
        assert_eq!(reduction(rect(37, 53), 5, 7), 3);
        assert_eq!(reduction(rect(10, 10), 1, 1), 4);
        assert_eq!(reduction(rect(100, 100), 400, 400), 0);
        assert_eq!(max_scale_log2(1024, 1024), 2);
        assert_eq!(max_scale_log2(100, 50), 0);
        assert_eq!(max_scale_log2(257, 10), 1);
    }
}
