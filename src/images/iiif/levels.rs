//! What an identifier's path names and where its reduced levels are: an OME-Zarr image
//! group (its first level is the image), an array that is a level of an image group above
//! it at any depth (`0`, `s1`, `scale0/image`), or a plain array with an overview source
//! configured (`datasets.NAME.overviews`).
//!
//! A level is used for reduced sizes when it reduces y and x equally by a power of two and
//! keeps every other extent (a level that also reduces z or c would hold other planes), with
//! the same data type. The factor is read from the shapes (written by floor or ceil
//! division); the level's scale, when given, must agree within a quarter, since writers
//! such as ngff-zarr adjust scales for odd sizes.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::catalog::{Catalog, Dataset};
use crate::error::{Error, Result};
use zarrd_core::read::ArrayReader;
use zarrd_core::zarr::metadata::Node;
use zarrd_core::zarr::ome::{self, Multiscale};

/// How many ancestors of an array are looked at for the image group holding it
/// (`scale0/image` is two below its group).
const MAX_LEVEL_DEPTH: usize = 4;

/// An overview level: the array holding the image reduced by `2^log2`.
#[derive(Clone)]
pub struct Level {
    pub log2: u32,
    pub reader: ArrayReader,
}

/// The image an identifier's path names.
pub struct Found {
    /// The full-resolution array (the image group's first level, or the array named).
    pub reader: ArrayReader,
    /// The coarser levels, finest first.
    pub levels: Vec<Level>,
    /// The enclosing image group's attributes (or the parent group's, for `omero` windows).
    pub group_attributes: Option<Arc<Map<String, Value>>>,
    /// The image's multiscale, when it is an OME-Zarr image, and the index of `reader` in it.
    pub multiscale: Option<(Multiscale, usize)>,
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_owned() } else { format!("{parent}/{name}") }
}

/// Finds the image at `path` of `dataset`.
pub async fn find(catalog: &Catalog, dataset: &Dataset, path: &str) -> Result<Found> {
    let node = catalog.node(dataset, path).await?;
    if let Node::Group(group) = &node {
        let Some(multiscale) = ome::multiscales(&group.attributes).into_iter().next() else {
            return Err(Error::NotFound(format!(
                "`{path}` in dataset `{}` is a group without OME-Zarr `multiscales`, not an image; GET /v1/datasets/{} lists its arrays",
                dataset.name, dataset.name
            )));
        };
        let Some(first) = multiscale.levels.first() else {
            return Err(Error::NotFound(format!("the OME-Zarr image `{path}` lists no datasets (levels)")));
        };
        let reader = catalog.array(dataset, &join(path, &first.path)).await?;
        let attributes = Arc::new(group.attributes.clone());
        let levels = levels_of(catalog, dataset, path, &multiscale, 0, &reader).await;
        return Ok(Found { reader, levels, group_attributes: Some(attributes), multiscale: Some((multiscale, 0)) });
    }
    let reader = catalog.array(dataset, path).await?;
    let segments: Vec<&str> = path.split('/').collect();
    let mut parent_attributes = None;
    for depth in 1..=MAX_LEVEL_DEPTH.min(segments.len()) {
        let (group_path, rel) =
            (segments[..segments.len() - depth].join("/"), segments[segments.len() - depth..].join("/"));
        // The levels below an image group are reached through groups (`scale0` of
        // `scale0/image` is one): the first ancestor that is not a group ends the search,
        // so arrays under implicit groups cost no more probes than before.
        let Ok(Node::Group(group)) = catalog.node(dataset, &group_path).await else { break };
        if depth == 1 {
            parent_attributes = Some(Arc::new(group.attributes.clone()));
        }
        let found = ome::multiscales(&group.attributes)
            .into_iter()
            .find_map(|m| m.levels.iter().position(|l| l.path == rel).map(|i| (m, i)));
        if let Some((multiscale, index)) = found {
            let levels = levels_of(catalog, dataset, &group_path, &multiscale, index, &reader).await;
            let attributes = Some(Arc::new(group.attributes.clone()));
            return Ok(Found { reader, levels, group_attributes: attributes, multiscale: Some((multiscale, index)) });
        }
        if group_path.is_empty() {
            break;
        }
    }
    let levels = match dataset.overviews.get(path) {
        Some(overview) => configured_levels(catalog, overview, &reader).await,
        None => Vec::new(),
    };
    Ok(Found { reader, levels, group_attributes: parent_attributes, multiscale: None })
}

/// The reduction `log2` of `level` relative to `base` when it is a usable level: same data
/// type and leading extents, y and x both reduced by `2^log2` (floor or ceil division).
fn reduction(base: &ArrayReader, level: &ArrayReader) -> Option<u32> {
    let (a, b) = (&base.meta.shape, &level.meta.shape);
    let n = a.len();
    if n < 2 || b.len() != n || a[..n - 2] != b[..n - 2] || base.meta.data_type != level.meta.data_type {
        return None;
    }
    let fits = |l: u32, i: usize| b[i] == a[i] >> l || b[i] == a[i].div_ceil(1 << l);
    (1..62).find(|&l| fits(l, n - 2) && fits(l, n - 1))
}

/// Whether the levels' scales (when both given) agree with a reduction by `2^log2`.
fn scales_agree(base: Option<&Vec<f64>>, level: Option<&Vec<f64>>, log2: u32) -> bool {
    let (Some(a), Some(b)) = (base, level) else { return true };
    let n = a.len();
    if n < 2 || b.len() != n {
        return true;
    }
    let factor = f64::from(1u32 << log2.min(31));
    (n - 2..n).all(|i| a[i] > 0.0 && ((b[i] / a[i]) / factor - 1.0).abs() <= 0.25)
}

/// The levels of `multiscale` (paths below `group`) coarser than the one at `base_index`.
async fn levels_of(
    catalog: &Catalog,
    dataset: &Dataset,
    group: &str,
    multiscale: &Multiscale,
    base_index: usize,
    reader: &ArrayReader,
) -> Vec<Level> {
    let base_scale = multiscale.levels.get(base_index).and_then(|l| l.scale.as_ref());
    let mut levels = Vec::new();
    for level in multiscale.levels.iter().skip(base_index + 1) {
        let Ok(level_reader) = catalog.array(dataset, &join(group, &level.path)).await else { continue };
        let Some(log2) = reduction(reader, &level_reader) else { continue };
        if scales_agree(base_scale, level.scale.as_ref(), log2) {
            levels.push(Level { log2, reader: level_reader });
        }
    }
    levels.sort_by_key(|l| l.log2);
    levels.dedup_by_key(|l| l.log2);
    levels
}

/// The reduced levels of a configured overview source: the datasets of its root group's
/// first multiscale, relative to the first (full-resolution) one. A source that cannot be
/// read is logged and ignored, so images still render on the fly.
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
    let Some(multiscale) = ome::multiscales(&group.attributes).into_iter().next() else {
        tracing::warn!(overviews = %overview.name, "the overview source has no OME-NGFF multiscales");
        return Vec::new();
    };
    // The first dataset is the full resolution (the array itself, stored elsewhere).
    levels_of(catalog, overview, "", &multiscale, 0, reader).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_must_roughly_agree() {
        let s = |v: f64| Some(vec![1.0, v, v]);
        assert!(scales_agree(s(0.5).as_ref(), s(1.0).as_ref(), 1));
        assert!(scales_agree(s(0.5).as_ref(), s(1.0079).as_ref(), 1), "ngff-zarr's odd-size spacing");
        assert!(!scales_agree(s(0.5).as_ref(), s(1.5).as_ref(), 1));
        assert!(scales_agree(None, s(9.0).as_ref(), 1));
    }
}
