//! Where an image's pixels come from: one 2-D plane of an array (or several, one per
//! channel of an OME-Zarr image to composite), the stored levels of its multiscales
//! (`levels`), and its value window.
//!
//! A reduced size reads the coarsest level that still has at least the pixels asked for
//! (never the full resolution when a level fits), in bands of rows so only the output and
//! one band are in memory, and averages the valid values of each block (labels keep one
//! value per block: ids are not averaged).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::images::composite::default_color;
use crate::images::iiif::axes;
use crate::images::iiif::grammar::{Identifier, Rect};
use crate::images::iiif::levels;
use crate::images::render::{Plane, Reducer, Window};
use zarrd_core::read::selection::DimSelection;
use zarrd_core::read::{ArrayReader, ObjectVersion, ReadError};
use zarrd_core::zarr::ome;

pub use crate::images::iiif::levels::Level;

/// Bytes of decoded elements read per band: large enough that a band spans whole chunk
/// rows, small enough that many tiles render at once within the memory budget.
const BAND_BYTES: u64 = 16 << 20;

/// Channels composited at most: each is a read of its own.
pub const MAX_CHANNELS: usize = 16;

/// One channel of a composite: its index on the channel axis, colour and window (`None`
/// until the value range is found, where `omero` gives none).
#[derive(Debug, Clone, PartialEq)]
pub struct CompositeChannel {
    pub index: u64,
    pub color: [u8; 3],
    pub window: Option<Window>,
}

/// How an image is drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum Drawing {
    /// One plane through a window and a colormap (arrays; one channel picked by `[c=K]`).
    Plane,
    /// The active `omero` channels on `axis`, each in its colour and window.
    Composite { axis: usize, channels: Vec<CompositeChannel> },
    /// A label image (`image-label`): ids in their colours, 0 transparent.
    Labels { colors: Vec<(f64, [u8; 4])> },
}

/// A 2-D image over an array: the plane fixed by `fixed`, `height` × `width` (the last two
/// dimensions), and its overview levels, finest first.
#[derive(Clone)]
pub struct Image {
    pub id: Identifier,
    pub reader: ArrayReader,
    pub width: u64,
    pub height: u64,
    pub levels: Vec<Level>,
    /// Attributes of the enclosing image (multiscales) group, for `omero` and labels.
    pub group_attributes: Option<Arc<Map<String, Value>>>,
    /// The index fixed on each leading dimension.
    pub fixed: Vec<u64>,
    /// The channel axis of an OME-Zarr image, composited or not.
    pub channel_axis: Option<usize>,
    pub drawing: Drawing,
    /// The physical size of a full-resolution pixel along x and its axis unit (OME-Zarr).
    pub physical: Option<(f64, String)>,
}

/// The pixels of a request and the versions of the objects they were read from.
pub struct Pixels {
    pub plane: Plane,
    pub object_versions: Vec<(String, ObjectVersion)>,
}

impl Image {
    /// Opens the image an identifier names: an array of at least two numeric dimensions
    /// (its leading ones fixed), or an OME-Zarr image group or level (axes fixed by name or
    /// position, 0 where not; the channel axis composited unless fixed).
    pub async fn open(catalog: &Catalog, id: Identifier) -> Result<Self> {
        let dataset = &catalog.dataset(&id.dataset).await?;
        let found = levels::find(catalog, dataset, &id.path).await?;
        let reader = found.reader;
        let meta = &reader.meta;
        let rank = meta.shape.len();
        if rank < 2 {
            return Err(Error::Unsupported(format!(
                "`{}` in dataset `{}` has {rank} dimension(s); an image needs at least two (height, width)",
                id.path, id.dataset
            )));
        }
        if !meta.data_type.is_real_number() {
            return Err(Error::Unsupported(format!(
                "`{}` holds {} values, which have no brightness; images need real numbers",
                id.path,
                meta.data_type.name()
            )));
        }
        let (height, width) = (meta.shape[rank - 2], meta.shape[rank - 1]);
        if width == 0 || height == 0 {
            return Err(Error::Unsupported(format!(
                "`{}` is empty (shape {:?}): nothing to show",
                id.path, meta.shape
            )));
        }
        let image = found.multiscale.is_some();
        let ome_axes = found.multiscale.as_ref().map(|(m, _)| m.axes.clone()).filter(|a| a.len() == rank);
        let names: Vec<Option<String>> = match (&ome_axes, &meta.dimension_names) {
            (Some(axes), _) => axes.iter().map(|a| Some(a.name.clone())).collect(),
            (None, Some(names)) if names.len() == rank => names.clone(),
            _ => vec![None; rank],
        };
        let channel_axis = match &ome_axes {
            Some(axes) => axes.iter().position(ome::Axis::is_channel),
            None if image => names.iter().position(|n| n.as_deref() == Some("c")),
            None => None,
        }
        .filter(|&c| c + 2 < rank);
        let fixed = axes::resolve(&id, &meta.shape, &names, channel_axis, image)?;
        let attributes = found.group_attributes.as_deref();
        let label_colors = attributes.filter(|_| image).and_then(ome::label_colors);
        let drawing = match (label_colors, channel_axis) {
            (Some(colors), _) => Drawing::Labels { colors },
            (None, Some(axis)) if fixed.composite => {
                Drawing::Composite { axis, channels: composite_channels(attributes, meta.shape[axis]) }
            }
            _ => Drawing::Plane,
        };
        let physical = found.multiscale.as_ref().and_then(|(m, i)| {
            let unit = ome_axes.as_ref()?.last()?.unit.clone()?;
            let scale = *m.levels.get(*i)?.scale.as_ref()?.get(rank - 1)?;
            (scale.is_finite() && scale > 0.0).then_some((scale, unit))
        });
        Ok(Self {
            id,
            reader,
            width,
            height,
            levels: found.levels,
            group_attributes: found.group_attributes,
            fixed: fixed.indices,
            channel_axis,
            drawing,
            physical,
        })
    }

    /// A selection of rows `y0..y1`, columns `x0..x1` of the plane `fixed` in `reader`.
    fn selection(fixed: &[u64], y: std::ops::Range<u64>, x: std::ops::Range<u64>) -> Vec<DimSelection> {
        let mut s: Vec<DimSelection> =
            fixed.iter().map(|&i| DimSelection { start: i, step: 1, count: 1, drop: true }).collect();
        s.push(DimSelection { start: y.start, step: 1, count: y.end - y.start, drop: false });
        s.push(DimSelection { start: x.start, step: 1, count: x.end - x.start, drop: false });
        s
    }

    /// The stored levels as `(log2, width, height)`, full resolution first; empty when the
    /// image has no reduced level (its sizes are then computed reductions).
    pub fn multiscale_levels(&self) -> Vec<(u32, u64, u64)> {
        if self.levels.is_empty() {
            return Vec::new();
        }
        let plane = |shape: &[u64]| (shape[shape.len() - 1], shape[shape.len() - 2]);
        let mut out = vec![(0, self.width, self.height)];
        out.extend(self.levels.iter().map(|l| {
            let (w, h) = plane(&l.reader.meta.shape);
            (l.log2, w, h)
        }));
        out
    }

    /// The level to read for a reduction by `2^k`: the coarsest with `log2 <= k`, or the
    /// array itself.
    pub fn level_for(&self, k: u32) -> (u32, &ArrayReader) {
        self.levels.iter().rev().find(|l| l.log2 <= k).map_or((0, &self.reader), |l| (l.log2, &l.reader))
    }

    /// The region `rect` (full-resolution pixels) reduced by `2^k`: each output pixel the
    /// mean of the valid values of its `2^k` × `2^k` block (for labels, its first valid
    /// value). The plane drawn is `self.fixed`.
    pub async fn reduced(&self, rect: Rect, k: u32) -> Result<Pixels> {
        self.reduced_at(&self.fixed, rect, k).await
    }

    /// The plane of channel `index` of a composite, reduced as [`Self::reduced`].
    pub async fn channel(&self, axis: usize, index: u64, rect: Rect, k: u32) -> Result<Pixels> {
        let mut fixed = self.fixed.clone();
        if let Some(i) = fixed.get_mut(axis) {
            *i = index;
        }
        self.reduced_at(&fixed, rect, k).await
    }

    /// [`Self::reduced`] of the plane `fixed`. The result is at the resolution read (a level
    /// written by floor division may be a pixel short at the edges); the renderer resamples
    /// it to the size asked for.
    async fn reduced_at(&self, fixed: &[u64], rect: Rect, k: u32) -> Result<Pixels> {
        let (level_log2, reader) = self.level_for(k);
        let shape = &reader.meta.shape;
        let (lh, lw) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        // The region at the level's resolution; levels written by floor or ceil division
        // both contain it when clipped.
        let scale = 1u64 << level_log2;
        let x0 = (rect.x / scale).min(lw.saturating_sub(1));
        let y0 = (rect.y / scale).min(lh.saturating_sub(1));
        let x1 = (rect.x + rect.w).div_ceil(scale).min(lw).max(x0 + 1);
        let y1 = (rect.y + rect.h).div_ceil(scale).min(lh).max(y0 + 1);
        let factor = 1u64 << (k - level_log2);
        let whole = Self::selection(fixed, y0..y1, x0..x1);
        reader.check_chunks(&whole).map_err(|e| too_many_chunks(&e, &self.id))?;
        let out_w = rect.w.div_ceil(1 << k) as usize;
        let out_h = rect.h.div_ceil(1 << k) as usize;
        let held = reader.budget.reserve(Reducer::bytes(factor, x1 - x0, y1 - y0)).await?;
        let mut reducer = if matches!(self.drawing, Drawing::Labels { .. }) {
            Reducer::nearest(factor, x1 - x0, y1 - y0)
        } else {
            Reducer::new(factor, x1 - x0, y1 - y0)
        };
        let item = reader.meta.data_type.size() as u64;
        let band_rows = ((BAND_BYTES / ((x1 - x0) * item).max(1)) / factor).max(1) * factor;
        let mut object_versions = Vec::new();
        let mut y = y0;
        while y < y1 {
            let end = (y + band_rows).min(y1);
            let whole = reader.read_whole(&Self::selection(fixed, y..end, x0..x1)).await?;
            reducer.add_rows(y - y0, &whole.data, x1 - x0, reader.meta.data_type, &reader.meta.fill_value);
            object_versions.extend(whole.object_versions);
            y = end;
        }
        let mut plane = reducer.finish();
        drop(held);
        // Reduced on the fly, the plane is exactly the reduction; read from a stored level
        // that is a pixel short of (or past) it at the edges, it is resampled as it is, so a
        // size equal to the level's own reads the level's pixels unchanged.
        if level_log2 == 0 && (plane.width != out_w || plane.height != out_h) {
            plane = fit(&plane, out_w, out_h);
        }
        object_versions.sort_unstable();
        object_versions.dedup();
        Ok(Pixels { plane, object_versions })
    }

    /// The window from the array's (or its multiscales group's) attributes, if any:
    /// `valid_min`/`valid_max`, `valid_range`, OME-NGFF `omero.channels[c].window`.
    pub fn attribute_window(&self) -> (Option<f64>, Option<f64>) {
        let attrs = &self.reader.meta.attributes;
        let num = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|f| f.is_finite());
        let mut lo = num(attrs.get("valid_min"));
        let mut hi = num(attrs.get("valid_max"));
        if let Some(Value::Array(range)) = attrs.get("valid_range")
            && let [a, b] = range.as_slice()
        {
            lo = lo.or(num(Some(a)));
            hi = hi.or(num(Some(b)));
        }
        if (lo.is_none() || hi.is_none())
            && let Some(group) = &self.group_attributes
        {
            let omero = group.get("omero").or_else(|| group.get("ome").and_then(|o| o.get("omero")));
            let channels = omero.and_then(|o| o.get("channels")).and_then(Value::as_array);
            // The channel is the index fixed on the channel axis, else the first.
            let c = self.channel_axis.and_then(|axis| self.fixed.get(axis).copied()).unwrap_or(0);
            if let Some(window) = channels.and_then(|cs| cs.get(c as usize)).and_then(|ch| ch.get("window")) {
                lo = lo.or(num(window.get("start")));
                hi = hi.or(num(window.get("end")));
            }
        }
        (lo, hi)
    }

    /// The minimum and maximum valid value of the whole array (every plane, so the window
    /// is the same whatever the leading indices): a scan of the array when it fits the
    /// per-request chunk limit, else of the coarsest overview level.
    pub async fn value_range(&self) -> Result<Window> {
        let mut candidates: Vec<&ArrayReader> = vec![&self.reader];
        candidates.extend(self.levels.iter().rev().map(|l| &l.reader));
        let whole =
            |r: &ArrayReader| -> Vec<DimSelection> { r.meta.shape.iter().map(|&n| DimSelection::all(n)).collect() };
        let Some(reader) = candidates.into_iter().find(|r| r.check_chunks(&whole(r)).is_ok()) else {
            return Err(Error::TooManyChunks(format!(
                "`{}` is too large to find its value range within limits.max_chunks_per_request and it has no overview levels; pass `vmin` and `vmax`, or write overviews with `zarrd overviews --dataset {} --array {} --out URL`",
                self.id.path, self.id.dataset, self.id.path
            )));
        };
        scan_range(reader, &[]).await
    }
}

/// The channels of a composite over a channel axis of `extent`: the active `omero`
/// channels in their colours and windows, or (without `omero` channels for every index)
/// every channel in a default colour; at most [`MAX_CHANNELS`].
fn composite_channels(attributes: Option<&Map<String, Value>>, extent: u64) -> Vec<CompositeChannel> {
    let listed = attributes.map(ome::channels).unwrap_or_default();
    let count = usize::try_from(extent).unwrap_or(usize::MAX);
    if listed.len() == count {
        return listed
            .iter()
            .enumerate()
            .filter(|(_, c)| c.active)
            .take(MAX_CHANNELS)
            .map(|(i, c)| CompositeChannel {
                index: i as u64,
                color: c.color.unwrap_or_else(|| default_color(i, count)),
                window: c.window.map(|(lo, hi)| Window { lo, hi }),
            })
            .collect();
    }
    (0..count.min(MAX_CHANNELS))
        .map(|i| CompositeChannel { index: i as u64, color: default_color(i, count), window: None })
        .collect()
}

/// Fits `plane` to exactly `width` × `height`, padding with "no value" or cropping.
fn fit(plane: &Plane, width: usize, height: usize) -> Plane {
    let mut values = vec![f64::NAN; width * height];
    for y in 0..height.min(plane.height) {
        for x in 0..width.min(plane.width) {
            values[y * width + x] = plane.values[y * plane.width + x];
        }
    }
    Plane { width, height, values }
}

fn too_many_chunks(e: &ReadError, id: &Identifier) -> Error {
    match e {
        ReadError::TooManyChunks { chunks, limit } => Error::TooManyChunks(format!(
            "this image request reads {chunks} chunks of `{}`, more than limits.max_chunks_per_request ({limit}); ask for a region nearer full resolution, or write overviews with `zarrd overviews --dataset {} --array {} --out URL` so reduced sizes read a smaller level",
            id.path, id.dataset, id.path
        )),
        other => Error::from(other),
    }
}

/// The smallest and largest valid value of a whole array (not NaN or one of `no_data`,
/// and not the Zarr fill unless `no_data` is empty: as xarray reads it, a `_FillValue`
/// makes the Zarr fill an ordinary value), read in slabs along its first dimension.
pub async fn scan_range(reader: &ArrayReader, no_data: &[f64]) -> Result<Window> {
    let shape = reader.meta.shape.clone();
    let row_bytes = shape[1..].iter().product::<u64>() * reader.meta.data_type.size() as u64;
    let slab = (BAND_BYTES / row_bytes.max(1)).max(1);
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let item = reader.meta.data_type.size();
    let mut start = 0;
    while start < shape[0] {
        let end = (start + slab).min(shape[0]);
        let mut selection: Vec<DimSelection> = shape.iter().map(|&n| DimSelection::all(n)).collect();
        selection[0] = DimSelection { start, step: 1, count: end - start, drop: false };
        let data = reader.read_whole(&selection).await?.data;
        for element in data.chunks_exact(item) {
            if no_data.is_empty() && element == reader.meta.fill_value.as_slice() {
                continue;
            }
            if let Some(v) = zarrd_core::zarr::data_type::element_f64(element, reader.meta.data_type)
                .filter(|v| !v.is_nan() && !no_data.contains(v))
            {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        start = end;
    }
    if lo > hi {
        // No valid value at all: any window shows the same (transparent) image.
        return Ok(Window { lo: 0.0, hi: 0.0 });
    }
    Ok(Window { lo, hi })
}
