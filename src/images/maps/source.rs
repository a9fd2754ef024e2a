//! Where a map's grid comes from: the array's last two dimension names and their 1-D
//! coordinate arrays, found as every labelled route finds them
//! ([`crate::analysis::coordinates`], the xarray / CF layout). The array's no-data values
//! beyond its Zarr fill are the CF ones of the core (`zarrd_core::coords::cf`).

use crate::analysis::coordinates::{coordinate_array, coordinate_values};
use crate::catalog::{Catalog, Dataset};
use crate::error::{Error, Result};
use crate::images::maps::geometry::{Axis, Grid};
use zarrd_core::read::ArrayReader;

pub use zarrd_core::coords::cf::cf_no_data;
pub use zarrd_core::coords::dimension_names;

/// Names a row (latitude) dimension may have, compared without case.
pub const LAT_NAMES: [&str; 3] = ["lat", "latitude", "y"];
/// Names a column (longitude) dimension may have, compared without case.
pub const LON_NAMES: [&str; 3] = ["lon", "longitude", "x"];

/// The most values a coordinate array may hold (a 1 m global grid has 4e7 columns).
const MAX_COORDINATES: u64 = 1 << 26;

/// The coordinate arrays of an array's last two dimensions.
pub struct Coordinates {
    pub lat: ArrayReader,
    pub lon: ArrayReader,
}

fn needs(path: &str) -> String {
    format!(
        "map tiles need `{path}`'s last two dimensions named latitude ({}) and longitude ({}), with 1-D coordinate arrays of those names beside it (the xarray/CF layout)",
        LAT_NAMES.join(", "),
        LON_NAMES.join(", ")
    )
}

/// Finds the coordinate arrays of `reader`'s last two dimensions (422 when it has none).
pub async fn coordinates(catalog: &Catalog, dataset: &Dataset, reader: &ArrayReader) -> Result<Coordinates> {
    let path = &reader.path;
    let Some(names) = dimension_names(&reader.meta) else {
        return Err(Error::Unsupported(format!("`{path}` has no dimension names; {}", needs(path))));
    };
    let n = names.len();
    let (Some(Some(lat)), Some(Some(lon))) = (names.get(n.wrapping_sub(2)), names.get(n.wrapping_sub(1))) else {
        return Err(Error::Unsupported(format!("`{path}`'s last two dimensions have no names; {}", needs(path))));
    };
    let is = |name: &str, list: &[&str]| list.iter().any(|l| l.eq_ignore_ascii_case(name));
    if !is(lat, &LAT_NAMES) || !is(lon, &LON_NAMES) {
        return Err(Error::Unsupported(format!(
            "`{path}`'s last two dimensions are `{lat}` and `{lon}`; {}",
            needs(path)
        )));
    }
    let open = |name: String, extent: u64| async move {
        match coordinate_array(catalog, dataset, reader, &name, extent).await? {
            Some(coordinate) => Ok(coordinate),
            None => Err(Error::Unsupported(format!(
                "`{path}` has no 1-D coordinate array `{name}` of {extent} real numbers beside it; {}",
                needs(path)
            ))),
        }
    };
    let shape = &reader.meta.shape;
    Ok(Coordinates { lat: open(lat.clone(), shape[n - 2]).await?, lon: open(lon.clone(), shape[n - 1]).await? })
}

/// Reads a 1-D coordinate array as numbers and makes its axis (422 naming the problem).
async fn axis(reader: &ArrayReader) -> Result<Axis> {
    let values = coordinate_values(reader, MAX_COORDINATES, "map tiles read").await?;
    Axis::new(&values).map_err(|e| Error::Unsupported(format!("the coordinate array `{}` {e}", reader.path)))
}

/// The grid of `coordinates`.
pub async fn grid(coordinates: &Coordinates) -> Result<Grid> {
    Ok(Grid { lat: axis(&coordinates.lat).await?, lon: axis(&coordinates.lon).await? })
}
