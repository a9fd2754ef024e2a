//! Where a map's grid comes from: the grid model of the array (`analysis::grids`, found as
//! every route finds it: `GeoZarr`, CF grid mappings, or 1-D latitude/longitude). The
//! array's no-data values beyond its Zarr fill are the CF ones of the core
//! (`zarrd_core::coords::cf`).

use std::sync::Arc;

use crate::analysis::grids::{Found, Grids};
use crate::catalog::{Catalog, Dataset};
use crate::error::{Error, Result};
use zarrd_core::read::ArrayReader;

pub use zarrd_core::coords::cf::cf_no_data;
pub use zarrd_core::coords::dimension_names;

/// The grid of `reader` (422 when it has none).
pub async fn grid(grids: &Grids, catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Result<Arc<Found>> {
    grids.of(catalog, dataset, reader).await?.ok_or_else(|| {
        Error::Unsupported(format!(
            "map tiles need `{}` on a grid: its last two dimensions with 1-D latitude/longitude coordinate arrays beside it (named lat/latitude and lon/longitude, or y/x in degrees: the xarray/CF layout), a CF `grid_mapping`, or GeoZarr `proj:code` with `spatial:transform` (docs/grids.md)",
            reader.path
        ))
    })
}
