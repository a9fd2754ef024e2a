//! Where an array's labels come from: for each dimension, the 1-D array of the same name
//! beside it in its group (the xarray / CF layout,
//! <https://cfconventions.org/cf-conventions/cf-conventions.html#coordinate-types>), read
//! once per version of that array and kept decoded ([`Coordinates`]).
//!
//! Dimension names are the array's own (v3 `dimension_names`) or the `_ARRAY_DIMENSIONS`
//! attribute xarray writes in v2. A coordinate's kind comes from its attributes: CF time
//! (`units = "<unit> since <date>"`, `calendar`), longitude (`degrees_east` and its CF
//! spellings, `standard_name = longitude`, or the names `lon`/`longitude`), latitude (the
//! same for north), else plain numbers.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, TryFutureExt};
use serde_json::Value;
use zarrd_core::ops::caches::{Cache, hasher};

use crate::catalog::{Catalog, Dataset};
use crate::config::Config;
use crate::error::{Error, Result};
use zarrd_core::coords::calendar::CfTime;
use zarrd_core::coords::cf::CfValues;
pub use zarrd_core::coords::dimension_names;
use zarrd_core::coords::labels::{Kind, Labels};
use zarrd_core::grid::Measure;
use zarrd_core::ops::caches::get_or_try_load;
use zarrd_core::read::ArrayReader;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::zarr::metadata::{ArrayMetadata, Node};

/// The most labels a coordinate array may hold (64 MiB as float64).
pub const MAX_LABELS: u64 = 1 << 23;

/// The path of the array named `name` in the group of the array at `path`.
pub fn sibling(path: &str, name: &str) -> String {
    match path.rsplit_once('/') {
        Some((parent, _)) => format!("{parent}/{name}"),
        None => name.to_owned(),
    }
}

/// The coordinate array of dimension `name` (of length `extent`) beside `reader`: `None`
/// when there is no array of that name or it is not 1-D real numbers of that length;
/// storage failures are errors.
pub async fn coordinate_array(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
    name: &str,
    extent: u64,
) -> Result<Option<ArrayReader>> {
    let path = sibling(&reader.path, name);
    match catalog.find(dataset, &path).await {
        Ok(Node::Array(_)) => {}
        Ok(Node::Group(_)) => return Ok(None),
        Err(e) if e.is_unservable() => return Ok(None),
        Err(e) => return Err(Error::from(e.as_ref())),
    }
    let coordinate = catalog.array(dataset, &path).await?;
    let meta = &coordinate.meta;
    Ok((meta.shape == [extent] && meta.data_type.is_real_number()).then_some(coordinate))
}

/// The labels of an array's dimensions.
pub struct ArrayLabels {
    pub names: Vec<Option<String>>,
    /// Per dimension, its labels when it has a coordinate array.
    pub labels: Vec<Option<Arc<Labels>>>,
    /// The coordinate arrays' metadata digests (0 where none): validators of the labels.
    pub digests: Vec<u128>,
}

impl ArrayLabels {
    /// Dimension `d`'s name, or `dim_{d}` when it has none.
    pub fn name(&self, d: usize) -> String {
        self.names.get(d).cloned().flatten().unwrap_or_else(|| format!("dim_{d}"))
    }
}

/// Decoded labels by coordinate-array version, and each array's labels by its own
/// version, shared by every request.
#[derive(Clone)]
pub struct Coordinates {
    /// `(dataset, coordinate path, its metadata digest)` → labels.
    labels: Cache<(Arc<str>, String, u128), Arc<Labels>>,
    /// `(dataset, array path, its metadata digest)` → the labels of its dimensions: a hot
    /// point series finds them with one lookup, no catalog walk per dimension.
    arrays: Cache<(Arc<str>, String, u128), Arc<ArrayLabels>>,
}

impl Coordinates {
    pub fn new(config: &Config) -> Self {
        // A rewritten coordinate array is seen once its metadata entry expires.
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        let labels = moka::future::Cache::builder()
            .max_capacity(256 << 20)
            .weigher(|_, l: &Arc<Labels>| u32::try_from(l.len() * 8 + 64).unwrap_or(u32::MAX))
            .time_to_live(ttl)
            .build_with_hasher(hasher());
        // Bounded by the coordinate labels above (each entry holds handles to those).
        let arrays = moka::future::Cache::builder().max_capacity(10_000).time_to_live(ttl).build_with_hasher(hasher());
        Self { labels, arrays }
    }

    /// The labels of every dimension of `reader` that has a coordinate array, or a scale
    /// in the OME-Zarr multiscales of its group: found once per version of the array (a
    /// rewritten coordinate array is seen within `cache.metadata_ttl_secs`).
    pub async fn of(&self, catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Result<Arc<ArrayLabels>> {
        let key = (Arc::clone(&reader.dataset), reader.path.clone(), reader.meta.digest);
        // Boxed: finding walks the catalog per dimension (a large future), once per version.
        let find = || async { Box::pin(self.find(catalog, dataset, reader)).await.map(Arc::new) };
        get_or_try_load(&self.arrays, key, find).await.map_err(Arc::unwrap_or_clone)
    }

    async fn find(&self, catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Result<ArrayLabels> {
        let ome = ome_level(catalog, dataset, reader).await;
        let mut names = dimension_names(&reader.meta).unwrap_or_else(|| vec![None; reader.meta.shape.len()]);
        if let Some(level) = &ome {
            for (name, axis) in names.iter_mut().zip(&level.axes) {
                name.get_or_insert_with(|| axis.clone());
            }
        }
        let mut labels = Vec::with_capacity(names.len());
        let mut digests = Vec::with_capacity(names.len());
        for (d, (name, &extent)) in names.iter().zip(&reader.meta.shape).enumerate() {
            let coordinate = match name {
                Some(name) => coordinate_array(catalog, dataset, reader, name, extent).await?,
                None => None,
            };
            let Some(coordinate) = coordinate else {
                labels.push(ome.as_ref().and_then(|level| level.labels(d, extent)).map(Arc::new));
                digests.push(0);
                continue;
            };
            digests.push(coordinate.meta.digest);
            let key = (Arc::clone(&coordinate.dataset), coordinate.path.clone(), coordinate.meta.digest);
            // Type-erased: the read path nested in this cache lookup is too deep for the compiler to
            // prove `Send` through.
            let load = || read_labels(&coordinate).map_ok(Arc::new).boxed();
            let read = get_or_try_load(&self.labels, key, load);
            labels.push(Some(read.await.map_err(Arc::unwrap_or_clone)?));
        }
        Ok(ArrayLabels { names, labels, digests })
    }
}

/// An array that is a level of an OME-Zarr multiscale image: its axes' names, and the
/// scale and translation of its coordinate transformations.
struct OmeLevel {
    axes: Vec<String>,
    scale: Vec<f64>,
    translation: Vec<f64>,
}

impl OmeLevel {
    /// Dimension `d`'s labels, `translation + i × scale`, when the level has a scale for it
    /// (and the labels are few enough to hold).
    fn labels(&self, d: usize, extent: u64) -> Option<Labels> {
        let scale = *self.scale.get(d)?;
        let shift = self.translation.get(d).copied().unwrap_or(0.0);
        (extent <= MAX_LABELS && scale.is_finite() && scale != 0.0)
            .then(|| Labels::new((0..extent).map(|i| shift + i as f64 * scale).collect(), Kind::Plain))
    }
}

/// The OME-Zarr level `reader` is, from its group's `multiscales` (the metadata the
/// catalog caches; nothing is read for arrays outside an image).
async fn ome_level(catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Option<OmeLevel> {
    let (parent, name) = reader.path.rsplit_once('/').unwrap_or(("", reader.path.as_str()));
    let Ok(Node::Group(group)) = catalog.find(dataset, parent).await else { return None };
    zarrd_core::zarr::ome::multiscales(&group.attributes).into_iter().find_map(|m| {
        let level = m.levels.iter().find(|l| l.path == name)?;
        let rank = reader.meta.shape.len();
        (m.axes.len() == rank).then(|| OmeLevel {
            axes: m.axes.iter().map(|a| a.name.clone()).collect(),
            scale: level.scale.clone().unwrap_or_default(),
            translation: level.translation.clone().unwrap_or_default(),
        })
    })
}

/// Reads a coordinate array, CF-decoded, as labels of the kind its attributes say.
async fn read_labels(coordinate: &ArrayReader) -> Result<Labels> {
    let values = coordinate_values(coordinate, MAX_LABELS, "zarrd reads as labels").await?;
    Ok(Labels::new(values, kind(&coordinate.meta, &coordinate.path)))
}

/// The values of a coordinate array (row-major when 2-D), CF-decoded (NaN where missing), when it holds at
/// most `limit` (else 422 saying what `purpose` reads).
pub async fn coordinate_values(coordinate: &ArrayReader, limit: u64, purpose: &str) -> Result<Vec<f64>> {
    let meta = &coordinate.meta;
    let n = meta.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).unwrap_or(u64::MAX);
    if n > limit {
        return Err(Error::Unsupported(format!(
            "the coordinate array `{}` has {n} values, more than {purpose} ({limit})",
            coordinate.path
        )));
    }
    let whole: Vec<DimSelection> = meta.shape.iter().map(|&d| DimSelection::all(d)).collect();
    let data = coordinate.read_whole(&whole).await?.data;
    let cf = CfValues::of(meta);
    Ok(data.chunks_exact(meta.data_type.size()).map(|b| cf.value(b).unwrap_or(f64::NAN)).collect())
}

/// What a coordinate array's labels measure, from its attributes and name.
fn kind(meta: &ArrayMetadata, path: &str) -> Kind {
    let text = |name: &str| meta.attributes.get(name).and_then(Value::as_str);
    if let Some(units) = text("units").filter(|u| u.contains(" since "))
        && let Ok(time) = CfTime::parse(units, text("calendar"))
    {
        return Kind::Time(time);
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    match zarrd_core::grid::measure(name, &meta.attributes) {
        Measure::Longitude => Kind::Longitude,
        Measure::Latitude => Kind::Latitude,
        Measure::Other => Kind::Plain,
    }
}
