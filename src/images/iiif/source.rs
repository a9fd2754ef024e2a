//! Where an image's pixels come from: the array (one 2-D plane of it), its overview levels
//! when it belongs to an OME-NGFF 0.4/0.5 `multiscales` group
//! (<https://ngff.openmicroscopy.org/0.5/#multiscale-md>), and its value window.
//!
//! A reduced size reads the coarsest level that still has at least the pixels asked for
//! (never the full resolution when a level fits), in bands of rows so only the output and
//! one band are in memory, and averages the valid values of each block.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::catalog::{Catalog, Dataset};
use crate::error::{Error, Result};
use crate::images::iiif::grammar::{Identifier, Rect};
use crate::images::render::{Plane, Reducer, Window};
use crate::read::selection::DimSelection;
use crate::read::{ArrayReader, ReadError};
use crate::zarr::metadata::Node;

/// Bytes of decoded elements read per band: large enough that a band spans whole chunk
/// rows, small enough that many tiles render at once within the memory budget.
const BAND_BYTES: u64 = 16 << 20;

/// An overview level: the array holding the image reduced by `2^log2`.
#[derive(Clone)]
pub struct Level {
    pub log2: u32,
    pub reader: ArrayReader,
}

/// A 2-D image over an array: the plane fixed by `indices`, `height` × `width` (the last
/// two dimensions), and its overview levels, finest first.
#[derive(Clone)]
pub struct Image {
    pub id: Identifier,
    pub reader: ArrayReader,
    pub width: u64,
    pub height: u64,
    pub levels: Vec<Level>,
    /// Attributes of the enclosing multiscales group (for an OME-NGFF `omero` window).
    pub group_attributes: Option<Arc<Map<String, Value>>>,
}

/// The pixels of a request and the versions of the objects they were read from.
pub struct Pixels {
    pub plane: Plane,
    pub versions: Vec<(String, String)>,
}

impl Image {
    /// Opens the image an identifier names: an array of at least two numeric dimensions,
    /// with one index per leading dimension.
    pub async fn open(catalog: &Catalog, id: Identifier) -> Result<Self> {
        let dataset = &catalog.dataset(&id.dataset).await?;
        let reader = catalog.array(dataset, &id.path).await?;
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
        let leading = &meta.shape[..rank - 2];
        if id.indices.len() != leading.len() {
            return Err(Error::BadRequest(format!(
                "`{}` has {rank} dimensions (shape {:?}): the identifier must fix the {} leading one(s) as {}/{}[i{}] with 0 <= index < extent, got {} index(es)",
                id.path,
                meta.shape,
                leading.len(),
                id.dataset,
                id.path,
                ",j".repeat(leading.len().saturating_sub(1)),
                id.indices.len()
            )));
        }
        for (d, (&i, &n)) in id.indices.iter().zip(leading).enumerate() {
            if i >= n {
                return Err(Error::NotFound(format!(
                    "index {i} of leading dimension {d} is out of range: that dimension has extent {n} (0 to {})",
                    n.saturating_sub(1)
                )));
            }
        }
        let (height, width) = (meta.shape[rank - 2], meta.shape[rank - 1]);
        if width == 0 || height == 0 {
            return Err(Error::Unsupported(format!(
                "`{}` is empty (shape {:?}): nothing to show",
                id.path, meta.shape
            )));
        }
        let (levels, group_attributes) = multiscale_levels(catalog, dataset, &reader).await?;
        Ok(Self { id, reader, width, height, levels, group_attributes })
    }

    /// A selection of rows `y0..y1`, columns `x0..x1` of this image's plane in `reader`.
    fn selection(&self, y: std::ops::Range<u64>, x: std::ops::Range<u64>) -> Vec<DimSelection> {
        let mut s: Vec<DimSelection> =
            self.id.indices.iter().map(|&i| DimSelection { start: i, step: 1, count: 1, drop: true }).collect();
        s.push(DimSelection { start: y.start, step: 1, count: y.end - y.start, drop: false });
        s.push(DimSelection { start: x.start, step: 1, count: x.end - x.start, drop: false });
        s
    }

    /// The level to read for a reduction by `2^k`: the coarsest with `log2 <= k`, or the
    /// array itself.
    pub fn level_for(&self, k: u32) -> (u32, &ArrayReader) {
        self.levels.iter().rev().find(|l| l.log2 <= k).map_or((0, &self.reader), |l| (l.log2, &l.reader))
    }

    /// The region `rect` (full-resolution pixels) reduced by `2^k`: each output pixel the
    /// mean of the valid values of its `2^k` × `2^k` block.
    pub async fn reduced(&self, rect: Rect, k: u32) -> Result<Pixels> {
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
        let whole = self.selection(y0..y1, x0..x1);
        reader.check_chunks(&whole).map_err(|e| too_many_chunks(&e, &self.id))?;
        let out_w = rect.w.div_ceil(1 << k) as usize;
        let out_h = rect.h.div_ceil(1 << k) as usize;
        let held = reader.budget.reserve(Reducer::bytes(factor, x1 - x0, y1 - y0)).await?;
        let mut reducer = Reducer::new(factor, x1 - x0, y1 - y0);
        let item = reader.meta.data_type.size() as u64;
        let band_rows = ((BAND_BYTES / ((x1 - x0) * item).max(1)) / factor).max(1) * factor;
        let mut versions = Vec::new();
        let mut y = y0;
        while y < y1 {
            let end = (y + band_rows).min(y1);
            let output = reader.read(&self.selection(y..end, x0..x1), 0, false).await?;
            let Some(data) = output.data.into_bytes() else {
                return Err(Error::Internal("an unstreamed read gave bands".into()));
            };
            reducer.add_rows(y - y0, &data, x1 - x0, reader.meta.data_type, &reader.meta.fill_value);
            versions.extend(output.versions);
            y = end;
        }
        let mut plane = reducer.finish();
        drop(held);
        // The level may be a pixel short of (or past) the exact reduction at its edges.
        if plane.width != out_w || plane.height != out_h {
            plane = fit(&plane, out_w, out_h);
        }
        versions.sort_unstable();
        versions.dedup();
        Ok(Pixels { plane, versions })
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
            // The channel is the index fixed on a leading axis named `c`, else the first.
            let c = self
                .reader
                .meta
                .dimension_names
                .as_ref()
                .and_then(|names| names.iter().position(|n| n.as_deref() == Some("c")))
                .and_then(|axis| self.id.indices.get(axis).copied())
                .unwrap_or(0);
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

/// The smallest and largest valid value of a whole array (not fill, NaN or one of
/// `no_data`), read in slabs along its first dimension.
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
        let output = reader.read(&selection, 0, false).await?;
        let Some(data) = output.data.into_bytes() else {
            return Err(Error::Internal("an unstreamed read gave bands".into()));
        };
        for element in data.chunks_exact(item) {
            if element == reader.meta.fill_value.as_slice() {
                continue;
            }
            if let Some(v) = crate::zarr::data_type::element_f64(element, reader.meta.data_type)
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

/// The overview levels of `reader`: those of its configured overview source (a pyramid
/// written by `zarrd overviews`, `datasets.NAME.overviews`) when it has one, else, when its
/// parent group is an OME-NGFF multiscales image holding it, the other datasets whose
/// scale along the last two axes is the array's times a power of two, with the same
/// leading extents; and the parent group's attributes.
async fn multiscale_levels(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
) -> Result<(Vec<Level>, Option<Arc<Map<String, Value>>>)> {
    let (parent, name) = match reader.path.rsplit_once('/') {
        Some((parent, name)) => (parent.to_owned(), name.to_owned()),
        None => (String::new(), reader.path.clone()),
    };
    let group = if reader.path.is_empty() {
        None
    } else {
        match catalog.node(dataset, &parent).await {
            Ok(Node::Group(group)) => Some(group),
            _ => None,
        }
    };
    let attributes = group.as_ref().map(|g| Arc::new(g.attributes.clone()));
    if let Some(overview) = dataset.overviews.get(&reader.path) {
        return Ok((configured_levels(catalog, overview, reader).await, attributes));
    }
    let Some(group) = group else {
        return Ok((Vec::new(), None));
    };
    let Some(multiscale) = multiscales_of(&group.attributes).and_then(|ms| {
        ms.iter().find(|m| datasets_of(m).iter().any(|d| d.get("path").and_then(Value::as_str) == Some(&name)))
    }) else {
        return Ok((Vec::new(), attributes));
    };
    let datasets = datasets_of(multiscale);
    let base_doc = datasets.iter().find(|d| d.get("path").and_then(Value::as_str) == Some(&name));
    let Some(base_scale) = base_doc.and_then(scale_of) else {
        return Ok((Vec::new(), attributes));
    };
    Ok((levels_of(catalog, dataset, &parent, &datasets, base_scale, reader).await, attributes))
}

/// The reduced levels of a configured overview source: the datasets of its root group's
/// first multiscale, scaled relative to the first (full-resolution) one. A source that
/// cannot be read is logged and ignored, so images still render on the fly.
async fn configured_levels(catalog: &Catalog, overview: &Dataset, reader: &ArrayReader) -> Vec<Level> {
    let group = match catalog.node(overview, "").await {
        Ok(Node::Group(group)) => group,
        Ok(Node::Array(_)) => {
            tracing::warn!(overviews = %overview.name, "the overview source is an array, not a multiscales group");
            return Vec::new();
        }
        Err(e) => {
            tracing::warn!(overviews = %overview.name, error = %e, "cannot read the overview source");
            return Vec::new();
        }
    };
    let Some(multiscale) = multiscales_of(&group.attributes).and_then(|ms| ms.first()) else {
        tracing::warn!(overviews = %overview.name, "the overview source has no OME-NGFF multiscales");
        return Vec::new();
    };
    let datasets = datasets_of(multiscale);
    let Some(base_scale) = datasets.first().and_then(scale_of) else { return Vec::new() };
    levels_of(catalog, overview, "", &datasets, base_scale, reader).await
}

/// `multiscales` of OME-NGFF 0.5 (under `ome`) or 0.4 (at the top).
fn multiscales_of(attrs: &Map<String, Value>) -> Option<&Vec<Value>> {
    attrs.get("multiscales").or_else(|| attrs.get("ome").and_then(|o| o.get("multiscales"))).and_then(Value::as_array)
}

/// The scale of a multiscales dataset along its last two axes.
fn scale_of(d: &Value) -> Option<(f64, f64)> {
    let t = d.get("coordinateTransformations")?.as_array()?;
    let s = t.iter().find(|t| t.get("type").and_then(Value::as_str) == Some("scale"))?.get("scale")?.as_array()?;
    let n = s.len();
    (n >= 2).then(|| Some((s[n - 2].as_f64()?, s[n - 1].as_f64()?))).flatten()
}

/// The datasets (paths relative to `parent` in `dataset`) reducing `reader` by a power of
/// two equally along the last two axes, with its leading extents and data type.
async fn levels_of(
    catalog: &Catalog,
    dataset: &Dataset,
    parent: &str,
    datasets: &[Value],
    base_scale: (f64, f64),
    reader: &ArrayReader,
) -> Vec<Level> {
    let mut levels = Vec::new();
    for d in datasets {
        let (Some(path), Some((sy, sx))) = (d.get("path").and_then(Value::as_str), scale_of(d)) else { continue };
        let (ry, rx) = (sy / base_scale.0, sx / base_scale.1);
        // Only levels reduced equally along both axes by a power of two are used.
        if (ry - rx).abs() > 1e-9 || rx < 2.0 - 1e-9 || (rx.log2() - rx.log2().round()).abs() > 1e-9 {
            continue;
        }
        let log2 = rx.log2().round() as u32;
        let full = if parent.is_empty() { path.to_owned() } else { format!("{parent}/{path}") };
        let Ok(level) = catalog.array(dataset, &full).await else { continue };
        let (a, b) = (&reader.meta.shape, &level.meta.shape);
        let n = a.len();
        let fits = b.len() == n
            && a[..n - 2] == b[..n - 2]
            && level.meta.data_type == reader.meta.data_type
            && (n - 2..n).all(|i| b[i] == a[i] >> log2 || b[i] == a[i].div_ceil(1 << log2));
        if fits {
            levels.push(Level { log2, reader: level });
        }
    }
    levels.sort_by_key(|l| l.log2);
    levels.dedup_by_key(|l| l.log2);
    levels
}

fn datasets_of(multiscale: &Value) -> Vec<Value> {
    multiscale.get("datasets").and_then(Value::as_array).cloned().unwrap_or_default()
}
