//! Which groups are EDR collections and what they hold: a group with arrays on one grid
//! (found as every route finds it, `analysis::grids`: 1-D latitude/longitude, projected,
//! rotated or geostationary, with its last two dimensions as (Y, X)), each such array a
//! parameter, the dimensions before the grid a CF time axis and a vertical one. Found once
//! per version of the arrays ([`Collections`]).

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use serde_json::Value;

use crate::analysis::coordinates::MAX_LABELS;
use crate::analysis::coordinates::{ArrayLabels, Coordinates, sibling};
use crate::analysis::grids::{Found, Grids};
use crate::catalog::{Catalog, Dataset};
use crate::config::Config;
use crate::error::{Error, Result};
use zarrd_core::coords::calendar::CfTime;
use zarrd_core::coords::cf::CfValues;
use zarrd_core::coords::labels::{Kind, Labels};
use zarrd_core::grid::{Grid, Kind as GridKind, Native};
use zarrd_core::ops::caches::get_or_try_load;
use zarrd_core::zarr::data_type::DataType;
use zarrd_core::zarr::metadata::{ArrayMetadata, Node};

/// Names a vertical dimension may have (compared without case), besides CF `axis: Z`.
pub const VERTICAL_NAMES: [&str; 5] = ["level", "plev", "depth", "height", "z"];

/// What one dimension of a parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    T,
    Z,
    Y,
    X,
}

/// One array of a collection.
#[derive(Debug, Clone)]
pub struct Parameter {
    /// The array's name in its group.
    pub name: String,
    /// Its path in the dataset.
    pub path: String,
    /// `long_name`, else `standard_name`, else the name.
    pub label: String,
    pub standard_name: Option<String>,
    pub units: Option<String>,
    /// Per dimension, what it is.
    pub axes: Vec<Axis>,
    /// The type of its decoded values (CF: packed → float64; with missing values, float).
    pub decoded: DataType,
    /// The array's metadata digest, and its labels' (validators of an answer).
    pub digests: Vec<u128>,
}

impl Parameter {
    /// The position of `axis` among the dimensions.
    pub fn dim(&self, axis: Axis) -> Option<usize> {
        self.axes.iter().position(|&a| a == axis)
    }

    /// The URI of its CF standard name (NERC's vocabulary server), the observed property
    /// of both the collection document and CoverageJSON.
    pub fn standard_name_uri(&self) -> Option<String> {
        self.standard_name.as_ref().map(|s| format!("http://vocab.nerc.ac.uk/standard_name/{s}/"))
    }
}

/// The levels of a collection.
#[derive(Debug, Clone)]
pub struct Vertical {
    pub labels: Arc<Labels>,
    pub name: String,
    pub units: Option<String>,
    pub positive: Option<String>,
}

/// A group holding arrays on one grid.
#[derive(Debug)]
pub struct Collection {
    pub id: String,
    pub dataset: Arc<Dataset>,
    /// The group's path (`""`: the root).
    pub group: String,
    pub title: String,
    pub description: Option<String>,
    pub parameters: Vec<Parameter>,
    /// The labels of the grid's rows and columns: latitudes and longitudes on a
    /// latitude/longitude grid, else the native y and x.
    pub lat: Arc<Labels>,
    pub lon: Arc<Labels>,
    /// The grid when it is not 1-D latitude/longitude (queries are then answered on it).
    pub grid: Option<Arc<Found>>,
    pub time: Option<Arc<Labels>>,
    pub vertical: Option<Vertical>,
    /// Whether it is in a versioned dataset (with instances: its branches and tags).
    pub versioned: bool,
}

impl Collection {
    /// The parameter named `name`.
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }
}

/// The id of the collection of group `group` of dataset `dataset` (`None`: a group path
/// with `:` in it, which an id cannot name).
pub fn collection_id(dataset: &str, group: &str) -> Option<String> {
    if group.is_empty() {
        return Some(dataset.to_owned());
    }
    (!group.contains(':')).then(|| format!("{dataset}:{}", group.replace('/', ":")))
}

/// The dataset name and group path a collection id names.
pub fn parse_id(id: &str) -> (&str, String) {
    match id.split_once(':') {
        Some((dataset, group)) => (dataset, group.replace(':', "/")),
        None => (id, String::new()),
    }
}

/// The collections of every dataset version, found once per version of their arrays.
#[derive(Clone)]
pub struct Collections {
    /// `(dataset, group path)` → the collection, or `None` when the group is none.
    groups: Cache<(Arc<str>, String), Option<Arc<Collection>>>,
    grids: Grids,
}

impl Collections {
    pub fn new(config: &Config, grids: Grids) -> Self {
        // A rewritten array is seen once its metadata entry expires.
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        Self { groups: Cache::builder().max_capacity(10_000).time_to_live(ttl).build(), grids }
    }

    /// Every collection of `dataset`, in the order of its node tree.
    pub async fn of_dataset(
        &self,
        catalog: &Catalog,
        coords: &Coordinates,
        dataset: &Arc<Dataset>,
        name: &str,
    ) -> Result<Vec<Arc<Collection>>> {
        let tree = catalog.tree(dataset).await?;
        let mut out = Vec::new();
        for node in tree.iter().filter(|n| n.node_type == "group") {
            if let Some(c) = self.group(catalog, coords, dataset, name, &node.path).await? {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The collection of group `group` (`name`: the dataset as the id names it), or
    /// `None` when the group holds no array on a latitude/longitude grid.
    pub async fn group(
        &self,
        catalog: &Catalog,
        coords: &Coordinates,
        dataset: &Arc<Dataset>,
        name: &str,
        group: &str,
    ) -> Result<Option<Arc<Collection>>> {
        let Some(id) = collection_id(name, group) else { return Ok(None) };
        let key = (Arc::clone(&dataset.name), group.to_owned());
        let find = || async {
            let found = Box::pin(find(catalog, (coords, &self.grids), dataset, id, group)).await?;
            Ok::<_, Error>(found.map(Arc::new))
        };
        get_or_try_load(&self.groups, key, find).await.map_err(Arc::unwrap_or_clone)
    }
}

/// Finds the parameters of a group.
async fn find(
    catalog: &Catalog,
    (coords, grids): (&Coordinates, &Grids),
    dataset: &Arc<Dataset>,
    id: String,
    group: &str,
) -> Result<Option<Collection>> {
    let tree = catalog.tree(dataset).await?;
    let Ok(Node::Group(group_meta)) = catalog.find(dataset, group).await else { return Ok(None) };
    let mut found: Option<Collection> = None;
    // A version of a versioned dataset is a dataset `NAME@SNAPSHOT` of its own.
    let base = dataset.name.split('@').next().unwrap_or_default();
    let versioned = catalog.configured(base).is_ok_and(|d| d.repo.is_some());
    let children = tree.iter().filter(|n| n.node_type == "array" && parent(&n.path) == group);
    for node in children {
        let Ok(reader) = catalog.array(dataset, &node.path).await else { continue };
        if !reader.meta.data_type.is_real_number() {
            continue;
        }
        // An array without a grid on its last two dimensions (or one that cannot be used)
        // is no parameter.
        let rank = reader.meta.shape.len();
        let on = grids.of(catalog, dataset, &reader).await.ok().flatten();
        let Some(on) = on.filter(|f| f.grid.dims == [rank - 2, rank - 1]) else {
            continue;
        };
        let projected = (on.grid.kind != GridKind::Geographic).then(|| Arc::clone(&on));
        let labels = with_offset_times(&reader.meta, &*coords.of(catalog, dataset, &reader).await?);
        let labels = with_grid_axes(labels, &on.grid);
        let Some(axes) = axes_of(catalog, dataset, &reader.path, &labels).await else { continue };
        let name = node.path.rsplit('/').next().unwrap_or(&node.path).to_owned();
        let meta = &reader.meta;
        // Empty texts say nothing (and EDR documents may not hold them).
        let text = |k: &str| text_of(&meta.attributes, k);
        let cf = CfValues::of(meta);
        let mut digests = vec![meta.digest];
        digests.extend(&labels.digests);
        let parameter = Parameter {
            label: text("long_name").or_else(|| text("standard_name")).unwrap_or_else(|| name.clone()),
            standard_name: text("standard_name"),
            units: text("units"),
            decoded: cf.decoded,
            name,
            path: node.path.clone(),
            axes: axes.clone(),
            digests,
        };
        let label = |axis: Axis| axes.iter().position(|&a| a == axis).and_then(|d| labels.labels[d].clone());
        let (Some(lat), Some(lon)) = (label(Axis::Y), label(Axis::X)) else { continue };
        let collection = found.get_or_insert_with(|| Collection {
            id: id.clone(),
            dataset: Arc::clone(dataset),
            group: group.to_owned(),
            title: text_of(&group_meta.attributes, "title").unwrap_or_else(|| id.clone()),
            description: text_of(&group_meta.attributes, "summary")
                .or_else(|| text_of(&group_meta.attributes, "description")),
            parameters: Vec::new(),
            lat: Arc::clone(&lat),
            lon: Arc::clone(&lon),
            grid: projected.clone(),
            time: None,
            vertical: None,
            versioned,
        });
        // Every parameter of a group shares its grid (the same coordinate arrays by name);
        // one on other coordinates of the same names would be a different size: left out.
        let same_grid = match (&collection.grid, &projected) {
            (None, None) => true,
            (Some(a), Some(b)) => a.digest == b.digest,
            _ => false,
        };
        if !same_grid || lat.values != collection.lat.values || lon.values != collection.lon.values {
            continue;
        }
        if collection.time.is_none() {
            collection.time = label(Axis::T);
        }
        if collection.vertical.is_none()
            && let Some(d) = parameter.dim(Axis::Z)
            && let Some(levels) = labels.labels[d].clone()
        {
            let name = labels.name(d);
            let coordinate = coordinate_meta(catalog, dataset, &reader.path, &name).await;
            let attr = |k: &str| coordinate.as_ref().and_then(|m| m.attributes.get(k)).and_then(Value::as_str);
            collection.vertical = Some(Vertical {
                labels: levels,
                units: attr("units").map(str::trim).filter(|u| !u.is_empty()).map(str::to_owned),
                positive: attr("positive").map(str::to_owned),
                name,
            });
        }
        collection.parameters.push(parameter);
    }
    Ok(found)
}

/// `labels`, with the rows and columns of a grid that has no coordinate arrays for them
/// labelled: by their native centres under an unrotated affine transform (`GeoZarr`
/// `spatial:transform`, GDAL `GeoTransform`), as a `Grid` domain names them; by their
/// indices on a curvilinear grid (whose cells are named by their centres' lon/lat).
fn with_grid_axes(mut labels: ArrayLabels, grid: &Grid) -> ArrayLabels {
    let (rows, cols) = grid.shape();
    if rows > MAX_LABELS || cols > MAX_LABELS {
        return labels;
    }
    let (row_label, col_label): (Box<dyn Fn(u64) -> f64>, Box<dyn Fn(u64) -> f64>) = match &grid.native {
        Native::Affine { transform, .. } => {
            let [_, b, _, d, _, _] = transform.coefficients;
            if b != 0.0 || d != 0.0 {
                return labels;
            }
            (Box::new(|r| grid.native.centre(r, 0).1), Box::new(|c| grid.native.centre(0, c).0))
        }
        Native::Mesh(_) => (Box::new(|r| r as f64), Box::new(|c| c as f64)),
        Native::Axes { .. } => return labels,
    };
    let [yd, xd] = grid.dims;
    if labels.labels[yd].is_none() {
        labels.labels[yd] = Some(Arc::new(Labels::new((0..rows).map(row_label).collect(), Kind::Plain)));
    }
    if labels.labels[xd].is_none() {
        labels.labels[xd] = Some(Arc::new(Labels::new((0..cols).map(col_label).collect(), Kind::Plain)));
    }
    labels
}

/// `labels`, with a leading dimension that has no coordinate array but whose offsets the
/// array's attributes give (`time_units: "days since 2025-01-01"`, `time_calendar`: the
/// viewer's convention, which the bundled sample follows) labelled as CF times 0, 1, 2…
fn with_offset_times(meta: &ArrayMetadata, labels: &ArrayLabels) -> ArrayLabels {
    let mut out =
        ArrayLabels { names: labels.names.clone(), labels: labels.labels.clone(), digests: labels.digests.clone() };
    let leading = out.names.len().saturating_sub(2);
    for d in 0..leading {
        let (Some(name), None) = (&out.names[d], &out.labels[d]) else { continue };
        let Some(units) = text_of(&meta.attributes, &format!("{name}_units")) else { continue };
        let calendar = text_of(&meta.attributes, &format!("{name}_calendar"));
        if let Ok(time) = CfTime::parse(&units, calendar.as_deref())
            && meta.shape[d] <= crate::analysis::coordinates::MAX_LABELS
        {
            let steps = (0..meta.shape[d]).map(|i| i as f64).collect();
            out.labels[d] = Some(Arc::new(Labels::new(steps, Kind::Time(time))));
        }
    }
    out
}

/// A text attribute.
fn text_of(attributes: &serde_json::Map<String, Value>, name: &str) -> Option<String> {
    attributes.get(name).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The parent group of a node path.
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// The metadata of the coordinate array `name` beside the array at `path`.
async fn coordinate_meta(catalog: &Catalog, dataset: &Dataset, path: &str, name: &str) -> Option<Arc<ArrayMetadata>> {
    match catalog.find(dataset, &sibling(path, name)).await {
        Ok(Node::Array(meta)) => Some(meta),
        _ => None,
    }
}

/// What each dimension of an array on a latitude/longitude grid (its last two) is, when
/// at most a time and a vertical dimension come before the grid.
async fn axes_of(catalog: &Catalog, dataset: &Dataset, path: &str, labels: &ArrayLabels) -> Option<Vec<Axis>> {
    let n = labels.names.len();
    if n < 2 || labels.labels[n - 2].is_none() || labels.labels[n - 1].is_none() {
        return None;
    }
    let named = |d: usize, list: &[&str]| {
        labels.names[d].as_deref().is_some_and(|name| list.iter().any(|l| l.eq_ignore_ascii_case(name)))
            && labels.labels[d].is_some()
    };
    let mut axes = Vec::with_capacity(n);
    for d in 0..n - 2 {
        let label = labels.labels[d].as_deref()?;
        let axis = if matches!(label.kind, Kind::Time(_)) {
            Axis::T
        } else if named(d, &VERTICAL_NAMES) || is_z(catalog, dataset, path, &labels.name(d)).await {
            Axis::Z
        } else {
            return None;
        };
        if axes.contains(&axis) {
            return None;
        }
        axes.push(axis);
    }
    axes.extend([Axis::Y, Axis::X]);
    Some(axes)
}

/// Whether the coordinate array `name` beside `path` says CF `axis: Z`.
async fn is_z(catalog: &Catalog, dataset: &Dataset, path: &str, name: &str) -> bool {
    let meta = coordinate_meta(catalog, dataset, path, name).await;
    meta.is_some_and(|m| m.attributes.get("axis").and_then(Value::as_str).is_some_and(|a| a.eq_ignore_ascii_case("z")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_a_dataset_and_a_group() {
        assert_eq!(collection_id("sample", "").as_deref(), Some("sample"));
        assert_eq!(collection_id("sample", "climate/daily").as_deref(), Some("sample:climate:daily"));
        assert_eq!(collection_id("sample", "a:b"), None);
        assert_eq!(parse_id("sample"), ("sample", String::new()));
        assert_eq!(parse_id("sample:climate:daily"), ("sample", "climate/daily".to_owned()));
        assert_eq!(parse_id("ic@v1:air"), ("ic@v1", "air".to_owned()));
    }
}
