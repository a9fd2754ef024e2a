//! A region of an array as a CF NetCDF file (`../shared/design/API.md`, "Region downloads"):
//! its dimensions named as the array names them, the coordinate variables of every kept
//! dimension at the selected indices (scalar coordinates of dropped ones), the 2-D
//! auxiliary coordinates the array's `coordinates` name, its grid mapping (the store's own
//! variable, else one written from the grid model's CRS), and the attributes of each — the
//! stored values, so packed integers stay packed and CF readers decode them as they would
//! the Zarr array.
//!
//! Everything but the data variable is read here, before the data: it is small (bounded by
//! the region's extents, or its (Y, X) plane for 2-D coordinates), and its bytes come first
//! in the file, so the data variable can stream last.

use serde_json::Value;
use zarrd_core::ops::budget::Reservation;
use zarrd_core::query::{Limits, Need, Plan, Progression};
use zarrd_core::read::selection::DimSelection;
use zarrd_core::read::{ArrayReader, ObjectVersion};
use zarrd_core::zarr::data_type::{DataType, element_f64};
use zarrd_core::zarr::metadata::Node;

use crate::analysis::coordinates::{ArrayLabels, coordinate_array, sibling};
use crate::analysis::grids::Found;
use crate::analysis::select::Resolved;
use crate::catalog::{Catalog, Dataset};
pub use crate::downloads::attributes::nc_type;
use crate::downloads::attributes::{copied, data_attributes, element_bytes, fill_value, is_layout, plain, typed};
use crate::downloads::netcdf::{self, Dimension, File, Leading, NcType, Values, Variable};
use crate::error::{Error, Result};
use zarrd_core::coords::sel::Picked;
use zarrd_core::grid::Kind;
use zarrd_core::grid::native::Native;

/// The indices a download keeps of each of the array's dimensions.
#[derive(Debug, Clone)]
pub struct Region {
    pub dims: Vec<Vec<Progression>>,
    /// Dimensions selected by one index: not dimensions of the file.
    pub dropped: Vec<bool>,
}

impl Region {
    /// An index selection (`s=`).
    pub fn of_selection(selection: &[DimSelection]) -> Self {
        Self {
            dims: selection
                .iter()
                .map(|s| vec![Progression { start: s.start, step: s.step, count: s.count }])
                .collect(),
            dropped: selection.iter().map(|s| s.drop).collect(),
        }
    }

    /// A label selection (`sel=`), resolved: its need of the plan, one dimension at a time.
    pub fn of_resolved(resolved: &Resolved) -> Self {
        Self {
            dims: resolved.need().dims,
            dropped: resolved.picked.iter().map(|p| matches!(p, Picked::Index(_))).collect(),
        }
    }

    /// The data variable's shape: the extents kept (dropped dimensions left out).
    pub fn shape(&self) -> Vec<u64> {
        (0..self.dims.len()).filter(|&d| !self.dropped[d]).map(|d| self.count(d)).collect()
    }

    pub fn count(&self, d: usize) -> u64 {
        self.dims[d].iter().map(|p| p.count).sum()
    }

    /// The stored indices kept of dimension `d`, in order.
    pub fn indices(&self, d: usize) -> Vec<u64> {
        self.dims[d].iter().flat_map(|p| (0..p.count).map(move |i| p.start + i * p.step)).collect()
    }
}

/// A file, less the data variable's values: the header's description and the bytes of
/// every variable before the data variable (the last), padded.
pub struct Described {
    pub file: File,
    pub leading: Vec<u8>,
    /// The versions of the objects read for the coordinates.
    pub versions: Vec<(String, ObjectVersion)>,
    /// The validators of the coordinate and grid-mapping arrays' metadata.
    pub digests: Vec<u128>,
    /// The memory of the coordinates read.
    pub reservation: Option<Reservation>,
    /// The data variable's `_FillValue` as stored little-endian bytes, when it has one.
    pub fill: Option<Vec<u8>>,
}

/// Builds the file of `region` of `array` (its labels `labels`, its grid `grid` if any):
/// reads every coordinate it holds. `source` names the dataset and path, `request` the
/// selection, for the global attributes.
pub async fn describe(
    catalog: &Catalog,
    dataset: &Dataset,
    array: &ArrayReader,
    (labels, grid): (&ArrayLabels, Option<&Found>),
    region: &Region,
    (source, request): (&str, &str),
    text_width: Option<u64>,
) -> Result<Described> {
    let meta = &array.meta;
    // Text is `char` with a last dimension of the longest element's bytes.
    let data_type = match text_width {
        Some(_) => NcType::Char,
        None => nc_type(meta.data_type).ok_or_else(|| unsupported(array))?,
    };
    let rank = meta.shape.len();
    let mut builder = Builder::default();
    // The file's dimensions: the array's kept ones, in order.
    let mut nc_dim = vec![None; rank];
    for d in (0..rank).filter(|&d| !region.dropped[d]) {
        nc_dim[d] = Some(builder.out.file.dims.len());
        builder.out.file.dims.push(Dimension { name: netcdf::name(&labels.name(d)), len: region.count(d) });
    }
    // The variables the data variable's `coordinates` names: scalar and auxiliary ones.
    let mut scalars = Vec::new();
    let mut data_dims: Vec<usize> = nc_dim.iter().flatten().copied().collect();
    if let Some(width) = text_width {
        data_dims.push(builder.out.file.dims.len());
        builder.out.file.dims.push(Dimension { name: format!("string{width}"), len: width });
    }
    // Coordinate variables, from the arrays named as the dimensions.
    let mut covered = vec![false; rank];
    for d in 0..rank {
        let Some(name) = labels.names[d].as_deref() else { continue };
        let Some(coordinate) = coordinate_array(catalog, dataset, array, name, meta.shape[d]).await? else {
            continue;
        };
        let dims: Vec<usize> = nc_dim[d].into_iter().collect();
        builder.coordinate(&coordinate, &[d], region, dims, netcdf::name(name)).await?;
        covered[d] = true;
        if region.dropped[d] {
            scalars.push(netcdf::name(name));
        }
    }
    // A grid's x/y from its transform, where no array gives them (GeoZarr).
    if let Some(found) = grid {
        builder.native_axes(found, region, &nc_dim, &mut covered, &mut scalars);
    }
    // Auxiliary coordinates the array names (2-D latitude/longitude of a curvilinear or
    // projected grid), over dimensions the array has.
    let names = crate::analysis::coordinates::dimension_names(meta).unwrap_or_default();
    let listed = meta.attributes.get("coordinates").and_then(Value::as_str).unwrap_or("");
    for aux in listed.split_whitespace() {
        let nc = netcdf::name(aux);
        if builder.out.file.variables.iter().any(|v| v.name == nc) {
            continue;
        }
        let path = sibling(&array.path, aux);
        let Ok(Node::Array(_)) = catalog.find(dataset, &path).await else { continue };
        let coordinate = catalog.array(dataset, &path).await?;
        let Some(own) = crate::analysis::coordinates::dimension_names(&coordinate.meta) else { continue };
        let on: Option<Vec<usize>> =
            own.iter().map(|n| n.as_ref().and_then(|n| names.iter().position(|m| m.as_ref() == Some(n)))).collect();
        let Some(on) =
            on.filter(|on| !on.is_empty() && on.iter().zip(&coordinate.meta.shape).all(|(&d, &n)| meta.shape[d] == n))
        else {
            continue;
        };
        let dims: Vec<usize> = on.iter().filter_map(|&d| nc_dim[d]).collect();
        builder.coordinate(&coordinate, &on, region, dims, nc.clone()).await?;
        scalars.push(nc);
    }
    // The grid mapping: the store's variable, else one written from the grid's CRS.
    let mapping = builder.grid_mapping(catalog, dataset, array, grid).await?;
    // A mapping the store lists as a coordinate (rioxarray's `spatial_ref`) stays one.
    if let Some(name) = mapping.as_ref().filter(|m| listed.split_whitespace().any(|l| netcdf::name(l) == **m)) {
        scalars.push(name.clone());
    }
    // The data variable, last.
    let fill = fill_value(meta);
    let mut attributes = data_attributes(meta, data_type, fill);
    if !scalars.is_empty() {
        attributes.push(("coordinates".into(), Values::text(&scalars.join(" "))));
    }
    if let Some(mapping) = mapping {
        attributes.push(("grid_mapping".into(), Values::text(&mapping)));
    }
    let name = array.path.rsplit('/').next().unwrap_or(&array.path);
    builder.out.file.variables.push(Variable {
        name: netcdf::name(if name.is_empty() { "data" } else { name }),
        dims: data_dims,
        nc_type: data_type,
        attributes,
    });
    builder.globals(catalog, dataset, array, source, request).await;
    Ok(Described {
        file: builder.out.file,
        leading: builder.out.bytes,
        versions: builder.versions,
        digests: builder.digests,
        reservation: builder.reservation,
        fill: fill.and_then(|f| element_bytes(f, meta.data_type)),
    })
}

impl Described {
    /// Declares `fill` (one little-endian element) the data variable's `_FillValue` in the
    /// file, in place of the one it has (`fill`, what the store declares, stays as it is).
    pub fn declare_fill(&mut self, fill: &[u8]) {
        let Some(data) = self.file.variables.last_mut() else { return };
        let value = Values::from_le(data.nc_type, fill.to_vec());
        match data.attributes.iter_mut().find(|(name, _)| name == "_FillValue") {
            Some(slot) => slot.1 = value,
            None => data.attributes.push(("_FillValue".into(), value)),
        }
    }
}

/// The 422 for an array of a type NetCDF cannot hold.
pub fn unsupported(array: &ArrayReader) -> Error {
    Error::Unsupported(format!(
        "NetCDF cannot hold {} values (`{}`); use format=npy or format=json",
        array.meta.data_type.name(),
        array.path
    ))
}

/// Whether the array's elements are text or bytes of any length (written as `char`).
pub fn is_text(data_type: DataType) -> bool {
    matches!(data_type, DataType::String | DataType::Bytes)
}

#[derive(Default)]
struct Builder {
    out: Leading,
    versions: Vec<(String, ObjectVersion)>,
    digests: Vec<u128>,
    reservation: Option<Reservation>,
}

impl Builder {
    /// Adds the variable `name` on `dims` (the file's) holding `coordinate` (which lies on
    /// the array's dimensions `on`) at the region's indices.
    async fn coordinate(
        &mut self,
        coordinate: &ArrayReader,
        on: &[usize],
        region: &Region,
        dims: Vec<usize>,
        name: String,
    ) -> Result<()> {
        let meta = &coordinate.meta;
        let Some(stored_type) = nc_type(meta.data_type) else { return Ok(()) };
        let need = Need { dims: on.iter().map(|&d| region.dims[d].clone()).collect(), pairs: None };
        let plan = Plan::new(&meta.read_grid(), need, &Limits::whole(on.len()))?;
        let gathered = plan.gather(&coordinate.planned()).await?;
        self.versions.extend(gathered.object_versions);
        self.digests.push(meta.digest);
        match &mut self.reservation {
            Some(held) => held.merge(gathered.reservation),
            None => self.reservation = Some(gathered.reservation),
        }
        // Integers classic NetCDF lacks become doubles when every value is exact, so that
        // only a data variable's own type asks for CDF-5.
        let exact = |v: f64| v.abs() < 9_007_199_254_740_992.0;
        let widened: Option<Vec<f64>> = (!stored_type.is_classic() && meta.data_type.is_real_number())
            .then(|| {
                let elements = gathered.data.chunks_exact(meta.data_type.size());
                elements.map(|e| element_f64(e, meta.data_type).filter(|&v| exact(v))).collect()
            })
            .flatten();
        let (nc, values) = match widened {
            Some(doubles) => (NcType::Double, Values::doubles(&doubles)),
            None if meta.data_type == DataType::Bool => {
                (NcType::Byte, Values { nc_type: NcType::Byte, bytes: gathered.data.to_vec() })
            }
            None => (stored_type, Values::from_le(stored_type, gathered.data.to_vec())),
        };
        let mut attributes = copied(&meta.attributes, nc, meta.data_type);
        if let Some(fill) = fill_value(meta).filter(|f| !f.is_nan() || meta.data_type.is_float()) {
            attributes.push(("_FillValue".into(), typed(&[fill], nc)));
        }
        self.out.push(Variable { name, dims, nc_type: nc, attributes }, &values.bytes);
        Ok(())
    }

    /// x/y of a grid whose cells lie on an unrotated transform, for its dimensions without
    /// a coordinate array: cell centres in the CRS's units.
    fn native_axes(
        &mut self,
        found: &Found,
        region: &Region,
        nc_dim: &[Option<usize>],
        covered: &mut [bool],
        scalars: &mut Vec<String>,
    ) {
        let grid = &found.grid;
        let Native::Affine { transform, .. } = &grid.native else { return };
        let [_, b, _, d, _, _] = transform.coefficients;
        if b != 0.0 || d != 0.0 {
            return;
        }
        let [yd, xd] = grid.dims;
        for (dim, axis) in [(yd, "y"), (xd, "x")] {
            if covered[dim] {
                continue;
            }
            let centres: Vec<f64> = region
                .indices(dim)
                .iter()
                .map(|&i| if axis == "y" { grid.native.centre(i, 0).1 } else { grid.native.centre(0, i).0 })
                .collect();
            let name = grid.names[usize::from(axis == "x")].clone();
            let name = netcdf::name(&name);
            let (standard, long) = if grid.kind == Kind::Geographic {
                if axis == "y" { ("latitude", "latitude") } else { ("longitude", "longitude") }
            } else if axis == "y" {
                ("projection_y_coordinate", "y coordinate of projection")
            } else {
                ("projection_x_coordinate", "x coordinate of projection")
            };
            let units = match grid.kind {
                Kind::Geographic if axis == "y" => "degrees_north",
                Kind::Geographic => "degrees_east",
                _ => "m",
            };
            let attributes = vec![
                ("standard_name".into(), Values::text(standard)),
                ("long_name".into(), Values::text(long)),
                ("units".into(), Values::text(units)),
                ("axis".into(), Values::text(if axis == "y" { "Y" } else { "X" })),
            ];
            let dims: Vec<usize> = nc_dim[dim].into_iter().collect();
            if dims.is_empty() {
                scalars.push(name.clone());
            }
            self.out
                .push(Variable { name, dims, nc_type: NcType::Double, attributes }, &Values::doubles(&centres).bytes);
            covered[dim] = true;
        }
    }

    /// The grid-mapping variable: the array's `grid_mapping` copied from the store (a
    /// scalar `int` with its attributes), else, for a grid with a CRS, `spatial_ref`
    /// written from it (`crs_wkt`, and GDAL's `spatial_ref`). Returns its name.
    async fn grid_mapping(
        &mut self,
        catalog: &Catalog,
        dataset: &Dataset,
        array: &ArrayReader,
        grid: Option<&Found>,
    ) -> Result<Option<String>> {
        let named = array.meta.attributes.get("grid_mapping").and_then(Value::as_str);
        // CF's extended form is `name: coordinates [name: …]`: the first variable.
        if let Some(name) = named.and_then(|n| n.split([':', ' ']).find(|s| !s.is_empty())) {
            let path = sibling(&array.path, name);
            if let Ok(Node::Array(meta)) = catalog.find(dataset, &path).await {
                self.digests.push(meta.digest);
                let attributes = copied(&meta.attributes, NcType::Int, meta.data_type);
                let nc = netcdf::name(name);
                self.out.push(Variable { name: nc.clone(), dims: vec![], nc_type: NcType::Int, attributes }, &[0; 4]);
                return Ok(Some(nc));
            }
        }
        let Some(found) = grid.filter(|f| f.grid.kind != Kind::Curvilinear) else { return Ok(None) };
        let mut name = "spatial_ref".to_owned();
        while self.out.file.variables.iter().any(|v| v.name == name) {
            name.push('_');
        }
        let wkt = found.grid.crs_wkt();
        let mut attributes = Vec::new();
        if found.grid.kind == Kind::Geographic {
            attributes.push(("grid_mapping_name".into(), Values::text("latitude_longitude")));
        }
        attributes.push(("crs_wkt".into(), Values::text(&wkt)));
        attributes.push(("spatial_ref".into(), Values::text(&wkt)));
        self.out.push(Variable { name: name.clone(), dims: vec![], nc_type: NcType::Int, attributes }, &[0; 4]);
        Ok(Some(name))
    }

    /// The global attributes: the group's (text and numbers), then `Conventions`, `source`
    /// and `history` (which names no time, so the same request makes the same bytes).
    async fn globals(
        &mut self,
        catalog: &Catalog,
        dataset: &Dataset,
        array: &ArrayReader,
        source: &str,
        request: &str,
    ) {
        let parent = array.path.rsplit_once('/').map_or("", |(p, _)| p);
        let mut history = String::new();
        if let Ok(Node::Group(group)) = catalog.find(dataset, parent).await {
            for (name, value) in &group.attributes {
                if matches!(name.as_str(), "Conventions" | "source") || is_layout(name) {
                    continue;
                }
                if name == "history" {
                    value.as_str().unwrap_or_default().clone_into(&mut history);
                    continue;
                }
                if let Some(v) = plain(value) {
                    self.out.file.attributes.push((netcdf::name(name), v));
                }
            }
        }
        let ours = format!("zarrd {}: {source} {request}", env!("CARGO_PKG_VERSION"));
        let history = if history.is_empty() { ours } else { format!("{history}\n{ours}") };
        self.out.file.attributes.push(("Conventions".into(), Values::text("CF-1.10")));
        self.out.file.attributes.push(("source".into(), Values::text(source)));
        self.out.file.attributes.push(("history".into(), Values::text(&history)));
    }
}
