//! Where a map's grid comes from: the array's last two dimension names (v3
//! `dimension_names`, or the v2 `_ARRAY_DIMENSIONS` attribute xarray writes) and the 1-D
//! coordinate arrays of those names beside it in the same group — the xarray / CF layout
//! (<https://cfconventions.org/cf-conventions/cf-conventions.html#coordinate-types>).
//! Also the array's no-data values beyond its Zarr fill: the CF `_FillValue` and
//! `missing_value` attributes (xarray writes `_FillValue` as base64 of a float64 in v3).

use base64::Engine;
use serde_json::Value;

use crate::catalog::{Catalog, Dataset};
use crate::error::{Error, Result};
use crate::images::maps::geometry::{Axis, Grid};
use zarrd_core::read::ArrayReader;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::zarr::data_type::{DataType, element_f64};
use zarrd_core::zarr::metadata::{ArrayMetadata, Node};

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

/// The dimension names of an array: its own, else the `_ARRAY_DIMENSIONS` attribute.
pub fn dimension_names(meta: &ArrayMetadata) -> Option<Vec<Option<String>>> {
    if let Some(names) = &meta.dimension_names {
        return Some(names.clone());
    }
    let Some(Value::Array(list)) = meta.attributes.get("_ARRAY_DIMENSIONS") else { return None };
    let names: Vec<Option<String>> = list.iter().map(|v| v.as_str().map(str::to_owned)).collect();
    (names.len() == meta.shape.len()).then_some(names)
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
    let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    let sibling = |name: &str| if parent.is_empty() { name.to_owned() } else { format!("{parent}/{name}") };
    let open = |name: String, extent: u64| async move {
        // No array of that name there (nothing, a group, or one zarrd cannot read) is the
        // array's shortcoming; a storage failure is the answer as it is.
        let missing =
            || Error::Unsupported(format!("`{path}` has no coordinate array `{name}` beside it; {}", needs(path)));
        match catalog.find(dataset, &name).await {
            Ok(Node::Array(_)) => {}
            Ok(Node::Group(_)) => return Err(missing()),
            Err(e) if e.is_unservable() => return Err(missing()),
            Err(e) => return Err(Error::from(e.as_ref())),
        }
        let coordinate = catalog.array(dataset, &name).await?;
        let meta = &coordinate.meta;
        if meta.shape != [extent] || !meta.data_type.is_real_number() {
            return Err(Error::Unsupported(format!(
                "the coordinate array `{name}` must be 1-D of real numbers with {extent} values (the extent of `{path}`'s dimension), it is {} with shape {:?}",
                meta.data_type.name(),
                meta.shape
            )));
        }
        Ok(coordinate)
    };
    let shape = &reader.meta.shape;
    Ok(Coordinates { lat: open(sibling(lat), shape[n - 2]).await?, lon: open(sibling(lon), shape[n - 1]).await? })
}

/// Reads a 1-D coordinate array as numbers and makes its axis (422 naming the problem).
async fn axis(reader: &ArrayReader) -> Result<Axis> {
    let n = reader.meta.shape[0];
    if n > MAX_COORDINATES {
        return Err(Error::Unsupported(format!(
            "the coordinate array `{}` has {n} values, more than map tiles read ({MAX_COORDINATES})",
            reader.path
        )));
    }
    let output = reader.read(&[DimSelection::all(n)], 0, false).await?;
    let Some(data) = output.data.into_bytes() else {
        return Err(Error::internal("an unstreamed read gave bands"));
    };
    let item = reader.meta.data_type.size();
    let values: Vec<f64> =
        data.chunks_exact(item).map(|b| element_f64(b, reader.meta.data_type).unwrap_or(f64::NAN)).collect();
    Axis::new(&values).map_err(|e| Error::Unsupported(format!("the coordinate array `{}` {e}", reader.path)))
}

/// The grid of `coordinates`.
pub async fn grid(coordinates: &Coordinates) -> Result<Grid> {
    Ok(Grid { lat: axis(&coordinates.lat).await?, lon: axis(&coordinates.lon).await? })
}

/// The CF no-data values of an array (`_FillValue`, `missing_value`) that are numbers
/// other than NaN (NaN is no data anyway).
pub fn cf_no_data(meta: &ArrayMetadata) -> Vec<f64> {
    let mut out = Vec::new();
    for name in ["_FillValue", "missing_value"] {
        match meta.attributes.get(name) {
            Some(Value::Array(list)) => out.extend(list.iter().filter_map(|v| number(v, meta.data_type))),
            Some(v) => out.extend(number(v, meta.data_type)),
            None => {}
        }
    }
    out.retain(|v| !v.is_nan());
    out
}

/// An attribute's number: a JSON number, or base64 of its bytes (xarray's v3 encoding of
/// a float `_FillValue` is the float64's; of others, the element's).
fn number(v: &Value, data_type: DataType) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
            match bytes.len() {
                8 if data_type.is_float() => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
                n if n == data_type.size() => element_f64(&bytes, data_type),
                _ => None,
            }
        }
        _ => None,
    }
}
