//! Where an array's grid comes from, read once per array version: the attributes and
//! arrays the conventions of `zarrd_core::grid` name — the array's and its group's `GeoZarr`
//! attributes, the CF grid-mapping variable, the 1-D coordinate arrays of its (Y, X)
//! dimensions, the 2-D latitude/longitude arrays CF `coordinates` names — and the grid
//! they make. What they mean is decided in the core; this module only fetches them
//! through the catalog (and keeps a curvilinear grid's look-up, once per pair of arrays).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Map, Value};
use zarrd_core::grid::{self, Axis, Coordinate, Crs, Grid, Measure, Mesh, Native};
use zarrd_core::ops::budget::Reservation;
use zarrd_core::ops::caches::{Cache, get_or_try_load, hasher};
use zarrd_core::read::ArrayReader;
use zarrd_core::zarr::metadata::Node;

use crate::analysis::coordinates::{coordinate_array, coordinate_values, dimension_names, sibling};
use crate::catalog::{Catalog, Dataset};
use crate::config::Config;
use crate::error::{Error, Result};

/// The most values a native coordinate array may hold (a 1 m global grid has 4e7 columns).
const MAX_COORDINATES: u64 = 1 << 26;

/// An array's grid and the versions of what it was read from.
#[derive(Debug)]
pub struct Found {
    pub grid: Grid,
    /// Validators of the grid: the digests of its Y and X coordinate arrays (0 where
    /// none), the grid mapping's folded into the first.
    pub digest: (u128, u128),
    /// Every cell's centre in lon/lat (NaN off the Earth), row-major: made on the first
    /// query that tests them (EDR area, cube, radius) and kept with the grid.
    centres: OnceLock<Arc<Vec<(f64, f64)>>>,
    /// A curvilinear grid's look-up and its share of the memory budget, held while any
    /// array's grid uses it.
    _mesh: Option<Arc<HeldMesh>>,
}

/// A curvilinear grid's look-up with the memory it is counted as.
#[derive(Debug)]
pub struct HeldMesh {
    mesh: Arc<Mesh>,
    _reservation: Reservation,
}

/// The most cells whose centres a grid keeps (16 bytes each: 64 MiB).
pub const MAX_CENTRES: u64 = 1 << 22;

impl Found {
    pub fn new(grid: Grid, digest: (u128, u128)) -> Self {
        Self { grid, digest, centres: OnceLock::new(), _mesh: None }
    }

    /// Every cell's centre (see [`Found`]); 413 for a grid of more than [`MAX_CENTRES`].
    pub fn centres(&self) -> Result<Arc<Vec<(f64, f64)>>> {
        let (rows, cols) = self.grid.shape();
        if rows.saturating_mul(cols) > MAX_CENTRES {
            return Err(Error::OverLimit(format!(
                "this query tests the centre of every cell of a {rows} × {cols} grid, more than {MAX_CENTRES}; ask for a point (position)"
            )));
        }
        let all = || {
            let (r, c): (Vec<u64>, Vec<u64>) = ((0..rows).collect(), (0..cols).collect());
            let centres = self.grid.centres(&r, &c);
            Arc::new(centres.into_iter().map(|p| p.unwrap_or((f64::NAN, f64::NAN))).collect())
        };
        Ok(Arc::clone(self.centres.get_or_init(all)))
    }
}

/// `(dataset, latitude array path, longitude array path, their metadata digests)`.
type MeshKey = (Arc<str>, String, String, u128, u128);

/// Grids by array version, shared by every request.
#[derive(Clone)]
pub struct Grids {
    /// `(dataset, array path, metadata digest)` → the grid, or none.
    cache: Cache<(Arc<str>, String, u128), Option<Arc<Found>>>,
    /// Curvilinear look-ups by the arrays they are made of: one per grid, however many
    /// arrays (and requests at once) use it.
    meshes: Cache<MeshKey, Arc<HeldMesh>>,
    /// `limits.max_grid_cells`.
    max_grid_cells: u64,
}

impl Grids {
    pub fn new(config: &Config) -> Self {
        // A rewritten coordinate array or grid mapping is seen once this entry expires.
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        Self {
            cache: moka::future::Cache::builder().max_capacity(10_000).time_to_live(ttl).build_with_hasher(hasher()),
            meshes: moka::future::Cache::builder().max_capacity(1_000).time_to_live(ttl).build_with_hasher(hasher()),
            max_grid_cells: config.limits.max_grid_cells,
        }
    }

    /// The grid of `reader` (`None` when it has none; 422 when its attributes name a grid
    /// zarrd cannot use).
    pub async fn of(&self, catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Result<Option<Arc<Found>>> {
        let key = (Arc::clone(&reader.dataset), reader.path.clone(), reader.meta.digest);
        // Boxed: finding walks the catalog (a large future), once per version.
        let find = || find(self, catalog, dataset, reader).map(|r| r.map(|f| f.map(Arc::new))).boxed();
        get_or_try_load(&self.cache, key, find).await.map_err(Arc::unwrap_or_clone)
    }
}

/// A 422 naming the array and what is wrong with its grid.
fn unusable(reader: &ArrayReader, why: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!("the grid of `{}` cannot be used: {why}", reader.path))
}

/// The attributes of the group holding `reader`, when it is in one.
async fn group_attributes(catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Option<Map<String, Value>> {
    let parent = reader.path.rsplit_once('/').map_or("", |(p, _)| p);
    match catalog.find(dataset, parent).await {
        Ok(Node::Group(group)) => Some(group.attributes.clone()),
        _ => None,
    }
}

async fn find(grids: &Grids, catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Result<Option<Found>> {
    let meta = &reader.meta;
    let rank = meta.shape.len();
    if rank < 2 {
        return Ok(None);
    }
    let names = dimension_names(meta).unwrap_or_else(|| vec![None; rank]);
    let group = group_attributes(catalog, dataset, reader).await;
    if let Some(geozarr) = grid::geozarr::spec(&meta.attributes, group.as_ref()).map_err(|e| unusable(reader, e))? {
        return geozarr_grid(catalog, dataset, reader, &names, geozarr).await.map(Some);
    }
    if let Some(mapping) = grid::cf::grid_mapping(&meta.attributes) {
        return mapped_grid(catalog, dataset, reader, &names, &mapping).await.map(Some);
    }
    if let Some(found) = grids.curvilinear(catalog, dataset, reader, &names).await? {
        return Ok(Some(found));
    }
    lonlat_grid(catalog, dataset, reader, &names).await
}

/// The grid `GeoZarr` attributes give: their CRS, on their transform or the coordinate
/// arrays of their dimensions.
async fn geozarr_grid(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
    names: &[Option<String>],
    geozarr: grid::geozarr::GeoZarr,
) -> Result<Found> {
    let meta = &reader.meta;
    let rank = meta.shape.len();
    let last_two = || [rank - 2, rank - 1];
    let dims = match &geozarr.dims {
        None => last_two(),
        Some(named) => {
            let at = |n: &str| names.iter().position(|d| d.as_deref() == Some(n));
            match (at(&named[0]), at(&named[1])) {
                (Some(y), Some(x)) => [y, x],
                _ => {
                    return Err(unusable(
                        reader,
                        format!("its `spatial:dimensions` {named:?} are not among its dimensions {names:?}"),
                    ));
                }
            }
        }
    };
    if let Some(declared) = geozarr.shape
        && declared != [meta.shape[dims[0]], meta.shape[dims[1]]]
    {
        return Err(unusable(
            reader,
            format!(
                "its `spatial:shape` {declared:?} does not fit its (Y, X) extent {:?}: the transform is another level's",
                [meta.shape[dims[0]], meta.shape[dims[1]]]
            ),
        ));
    }
    let crs_digest = u128::from(hash(&geozarr.crs.definition));
    let (native, digest) = match geozarr.transform {
        Some(transform) => {
            let (rows, cols) = (meta.shape[dims[0]], meta.shape[dims[1]]);
            let native = Native::Affine { transform, rows, cols, node: geozarr.node };
            // The lookups of tiles are shared by grids of the same CRS, transform and shape.
            let what = format!("{:?} {rows}x{cols} {}", transform.coefficients, geozarr.node);
            (native, (crs_digest, u128::from(hash(&what))))
        }
        None => match axes(catalog, dataset, reader, names, dims, &geozarr.crs).await? {
            Some((native, (y, x))) => (native, (y ^ crs_digest, x)),
            None => {
                return Err(unusable(
                    reader,
                    "it names a CRS but has neither `spatial:transform` nor 1-D coordinate arrays of its (Y, X) dimensions",
                ));
            }
        },
    };
    grid_of(reader, dims, names, geozarr.crs, native, digest)
}

/// The grid of CF grid-mapping variable `mapping`: its CRS, on the coordinate arrays of the
/// last two dimensions or its `GeoTransform`.
async fn mapped_grid(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
    names: &[Option<String>],
    mapping: &str,
) -> Result<Found> {
    let meta = &reader.meta;
    let rank = meta.shape.len();
    let path = sibling(&reader.path, mapping);
    let attributes = match catalog.find(dataset, &path).await {
        Ok(Node::Array(m)) => m.attributes.clone(),
        Ok(Node::Group(g)) => g.attributes.clone(),
        Err(e) if e.is_unservable() => {
            return Err(unusable(reader, format!("its `grid_mapping` names `{mapping}`, which is not beside it")));
        }
        Err(e) => return Err(Error::from(e.as_ref())),
    };
    let crs = grid::cf::crs(&attributes)
        .map_err(|e| unusable(reader, format!("its grid mapping `{mapping}` is not usable: {e}")))?;
    let dims = [rank - 2, rank - 1];
    let mapping_digest = u128::from(hash(&serde_json::to_string(&attributes).unwrap_or_default()));
    let (native, digest) = if let Some((native, (y, x))) = axes(catalog, dataset, reader, names, dims, &crs).await? {
        (native, (y ^ mapping_digest, x))
    } else {
        let transform = attributes.get("GeoTransform").and_then(geo_transform).ok_or_else(|| {
            unusable(
                reader,
                format!(
                    "it has no 1-D coordinate arrays of its dimensions {:?} and its grid mapping `{mapping}` no `GeoTransform`",
                    dims.map(|d| names[d].clone().unwrap_or_else(|| format!("dim_{d}")))
                ),
            )
        })?;
        let transform = transform.map_err(|e| unusable(reader, format!("its `GeoTransform` {e}")))?;
        let (rows, cols) = (meta.shape[dims[0]], meta.shape[dims[1]]);
        let native = Native::Affine { transform, rows, cols, node: false };
        (native, (mapping_digest, u128::from(hash(&format!("{rows}x{cols}")))))
    };
    grid_of(reader, dims, names, crs, native, digest)
}

impl Grids {
    /// The curvilinear grid of the 2-D latitude and longitude arrays the array's CF
    /// `coordinates` names beside it, of the shape of its last two dimensions; its look-up
    /// built once per pair of arrays (413 beyond `limits.max_grid_cells`).
    async fn curvilinear(
        &self,
        catalog: &Catalog,
        dataset: &Dataset,
        reader: &ArrayReader,
        names: &[Option<String>],
    ) -> Result<Option<Found>> {
        let meta = &reader.meta;
        let Some(listed) = meta.attributes.get("coordinates").and_then(Value::as_str) else { return Ok(None) };
        let rank = meta.shape.len();
        let dims = [rank - 2, rank - 1];
        let (rows, cols) = (meta.shape[dims[0]], meta.shape[dims[1]]);
        let (mut lat, mut lon) = (None, None);
        for name in listed.split_whitespace() {
            let path = sibling(&reader.path, name);
            match catalog.find(dataset, &path).await {
                Ok(Node::Array(m)) if m.shape == [rows, cols] && m.data_type.is_real_number() => {}
                Err(e) if !e.is_unservable() => return Err(Error::from(e.as_ref())),
                _ => continue,
            }
            let array = catalog.array(dataset, &path).await?;
            match grid::measure(name, &array.meta.attributes) {
                Measure::Latitude if lat.is_none() => lat = Some(array),
                Measure::Longitude if lon.is_none() => lon = Some(array),
                _ => {}
            }
        }
        let (Some(lat), Some(lon)) = (lat, lon) else { return Ok(None) };
        let cells = rows.saturating_mul(cols);
        if cells > self.max_grid_cells {
            return Err(Error::OverLimit(format!(
                "the curvilinear grid of `{}` ({} and {}) has {cells} cells ({rows} × {cols}), more than limits.max_grid_cells ({})",
                reader.path, lat.path, lon.path, self.max_grid_cells
            )));
        }
        let key = (Arc::clone(&reader.dataset), lat.path.clone(), lon.path.clone(), lat.meta.digest, lon.meta.digest);
        let build = || {
            async {
                let (lat_values, lon_values) = (values_of(&lat, cells).await?, values_of(&lon, cells).await?);
                let reservation = reader
                    .budget
                    .reserve(cells.saturating_mul(grid::mesh::BYTES_PER_CELL))
                    .await
                    .map_err(|e| Error::from(&e))?;
                let mesh = zarrd_core::ops::cpu::run(move || Mesh::new(rows, cols, lat_values, lon_values))
                    .await
                    .map_err(Error::internal)?
                    .map_err(|e| {
                        unusable(reader, format!("its 2-D coordinates `{}` and `{}` {e}", lat.path, lon.path))
                    })?;
                Ok::<_, Error>(Arc::new(HeldMesh { mesh: Arc::new(mesh), _reservation: reservation }))
            }
            .boxed()
        };
        let held = get_or_try_load(&self.meshes, key, build).await.map_err(Arc::unwrap_or_clone)?;
        let native = Native::Mesh(Arc::clone(&held.mesh));
        let found = grid_of(reader, dims, names, Crs::curvilinear(), native, (lat.meta.digest, lon.meta.digest))?;
        Ok(Some(Found { _mesh: Some(held), ..found }))
    }
}

/// The 1-D latitude/longitude grid of the last two dimensions, when they are latitude and
/// longitude by the one rule of `grid::is_geographic`.
async fn lonlat_grid(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
    names: &[Option<String>],
) -> Result<Option<Found>> {
    let rank = reader.meta.shape.len();
    let dims = [rank - 2, rank - 1];
    let Some((y, x)) = coordinates(catalog, dataset, reader, names, dims).await? else { return Ok(None) };
    let (y_values, x_values) = (values(&y).await?, values(&x).await?);
    let y_coordinate = Coordinate { name: name_of(&y.path), attributes: &y.meta.attributes, values: &y_values };
    let x_coordinate = Coordinate { name: name_of(&x.path), attributes: &x.meta.attributes, values: &x_values };
    if !grid::is_geographic(&y_coordinate, &x_coordinate) {
        return Ok(None);
    }
    let axis = |r: &ArrayReader, v: &[f64]| {
        Axis::new(v).map_err(|e| unusable(reader, format!("the coordinate array `{}` {e}", r.path)))
    };
    let native = Native::Axes { y: axis(&y, &y_values)?, x: axis(&x, &x_values)? };
    let crs = Crs::from_epsg(4326).map_err(|e| Error::internal_from("WGS 84", e))?;
    grid_of(reader, dims, names, crs, native, (y.meta.digest, x.meta.digest)).map(Some)
}

fn grid_of(
    reader: &ArrayReader,
    dims: [usize; 2],
    names: &[Option<String>],
    crs: Crs,
    native: Native,
    digest: (u128, u128),
) -> Result<Found> {
    let name = |d: usize| names[d].clone().unwrap_or_else(|| format!("dim_{d}"));
    let grid = Grid::new(dims, [name(dims[0]), name(dims[1])], crs, native).map_err(|e| unusable(reader, e))?;
    Ok(Found::new(grid, digest))
}

/// The 1-D coordinate arrays of dimensions `dims`, when both have one.
async fn coordinates(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
    names: &[Option<String>],
    dims: [usize; 2],
) -> Result<Option<(ArrayReader, ArrayReader)>> {
    let (Some(y), Some(x)) = (&names[dims[0]], &names[dims[1]]) else { return Ok(None) };
    let shape = &reader.meta.shape;
    let y = coordinate_array(catalog, dataset, reader, y, shape[dims[0]]).await?;
    let x = coordinate_array(catalog, dataset, reader, x, shape[dims[1]]).await?;
    Ok(y.zip(x))
}

/// The native axes of `dims` from their coordinate arrays in the units of `crs`, and the
/// arrays' digests.
async fn axes(
    catalog: &Catalog,
    dataset: &Dataset,
    reader: &ArrayReader,
    names: &[Option<String>],
    dims: [usize; 2],
    crs: &Crs,
) -> Result<Option<(Native, (u128, u128))>> {
    let Some((y, x)) = coordinates(catalog, dataset, reader, names, dims).await? else { return Ok(None) };
    let axis = async |r: &ArrayReader| -> Result<Axis> {
        let scale = grid::native_scale(crs, &r.meta.attributes)
            .map_err(|e| unusable(reader, format!("the coordinate array `{}` {e}", r.path)))?;
        Axis::scaled(&values(r).await?, scale)
            .map_err(|e| unusable(reader, format!("the coordinate array `{}` {e}", r.path)))
    };
    let native = Native::Axes { y: axis(&y).await?, x: axis(&x).await? };
    Ok(Some((native, (y.meta.digest, x.meta.digest))))
}

async fn values(coordinate: &ArrayReader) -> Result<Vec<f64>> {
    coordinate_values(coordinate, MAX_COORDINATES, "a grid's axis may hold").await
}

/// The `cells` values of a curvilinear grid's latitude or longitude array.
async fn values_of(coordinate: &ArrayReader, cells: u64) -> Result<Vec<f64>> {
    coordinate_values(coordinate, cells, "its grid has cells").await
}

/// A GDAL `GeoTransform` attribute (six numbers in a string, or a list).
fn geo_transform(value: &Value) -> Option<std::result::Result<grid::Affine, grid::native::AffineError>> {
    let numbers: Vec<f64> = match value {
        Value::String(s) => s.split_whitespace().map(str::parse).collect::<std::result::Result<_, _>>().ok()?,
        Value::Array(l) => l.iter().map(Value::as_f64).collect::<Option<_>>()?,
        _ => return None,
    };
    Some(grid::Affine::from_gdal(&numbers))
}

fn name_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

fn hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}
