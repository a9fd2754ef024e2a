//! Zarr attributes and values as NetCDF attributes: what a file copies of a node's
//! attributes (text, numbers, lists of numbers), the CF ones typed as their variable, and
//! the missing value xarray uses.

use serde_json::{Map, Value};
use zarrd_core::coords::cf;
use zarrd_core::zarr::data_type::{DataType, element_f64};
use zarrd_core::zarr::metadata::ArrayMetadata;

use crate::downloads::netcdf::{self, NcType, Values};

/// The NetCDF type of a Zarr data type (`None`: NetCDF cannot hold it).
pub fn nc_type(data_type: DataType) -> Option<NcType> {
    Some(match data_type {
        DataType::Bool | DataType::Int8 => NcType::Byte,
        DataType::UInt8 => NcType::UByte,
        DataType::Int16 => NcType::Short,
        DataType::UInt16 => NcType::UShort,
        DataType::Int32 => NcType::Int,
        DataType::UInt32 => NcType::UInt,
        DataType::Int64 => NcType::Int64,
        DataType::UInt64 => NcType::UInt64,
        DataType::Float32 => NcType::Float,
        DataType::Float64 => NcType::Double,
        _ => return None,
    })
}

/// Attributes that describe the Zarr layout or are written anew, never copied.
const NOT_COPIED: &[&str] = &["_ARRAY_DIMENSIONS", "coordinates", "grid_mapping", "_FillValue", "missing_value"];

/// Whether an attribute describes the Zarr group's layout (`GeoZarr`'s `proj:`/`spatial:`,
/// multiscales), which a file of a region would misstate.
pub fn is_layout(name: &str) -> bool {
    name.starts_with("proj:") || name.starts_with("spatial:") || name == "multiscales" || name == "_CRS"
}

/// Attributes whose values have the variable's own type (CF).
const TYPED: &[&str] = &["valid_min", "valid_max", "valid_range", "actual_range"];

/// The data variable's own attributes, its missing values typed as it is.
pub fn data_attributes(meta: &ArrayMetadata, data_type: NcType, fill: Option<f64>) -> Vec<(String, Values)> {
    let mut attributes = copied(&meta.attributes, data_type, meta.data_type);
    if let Some(fill) = fill {
        attributes.push(("_FillValue".into(), typed(&[fill], data_type)));
    }
    if let Some(missing) = meta.attributes.get("missing_value") {
        let values: Vec<f64> = match missing {
            Value::Array(list) => list.iter().filter_map(|v| cf::number(v, meta.data_type)).collect(),
            v => cf::number(v, meta.data_type).into_iter().collect(),
        };
        if !values.is_empty() {
            attributes.push(("missing_value".into(), typed(&values, data_type)));
        }
    }
    if meta.data_type == DataType::String {
        // How CF readers (xarray, netCDF4) learn that the characters are UTF-8 text.
        attributes.push(("_Encoding".into(), Values::text("utf-8")));
    }
    attributes
}

/// The data variable's missing value as xarray reads it: `_FillValue`, else (in Zarr v2,
/// whose backend reads it so) the Zarr fill.
pub fn fill_value(meta: &ArrayMetadata) -> Option<f64> {
    if let Some(v) = meta.attributes.get("_FillValue") {
        return cf::number(v, meta.data_type);
    }
    let v2_fill = meta.zarr_format == 2 && !meta.document.get("fill_value").is_none_or(Value::is_null);
    if v2_fill && !meta.attributes.contains_key("missing_value") {
        return element_f64(&meta.fill_value, meta.data_type);
    }
    None
}

/// NetCDF's default fill of the integer `data_type` (`NC_FILL_BYTE` …), one little-endian
/// element: what a NetCDF library writes where nothing was.
pub fn default_fill(data_type: DataType) -> Option<Vec<u8>> {
    Some(match data_type {
        DataType::Bool | DataType::Int8 => (-127i8).to_le_bytes().to_vec(),
        DataType::UInt8 => vec![255],
        DataType::Int16 => (-32767i16).to_le_bytes().to_vec(),
        DataType::UInt16 => u16::MAX.to_le_bytes().to_vec(),
        DataType::Int32 => (-2_147_483_647i32).to_le_bytes().to_vec(),
        DataType::UInt32 => u32::MAX.to_le_bytes().to_vec(),
        DataType::Int64 => (-9_223_372_036_854_775_806i64).to_le_bytes().to_vec(),
        DataType::UInt64 => (u64::MAX - 1).to_le_bytes().to_vec(),
        _ => return None,
    })
}

/// `value` as one little-endian element of `data_type` (a type NetCDF holds).
pub fn element_bytes(value: f64, data_type: DataType) -> Option<Vec<u8>> {
    let mut bytes = typed(&[value], nc_type(data_type)?).bytes;
    bytes.reverse();
    Some(bytes)
}

/// `values` as attribute values of `nc_type` (CF: `_FillValue` and the valid range have
/// the variable's type).
pub fn typed(values: &[f64], nc_type: NcType) -> Values {
    let bytes = values
        .iter()
        .flat_map(|&v| match nc_type {
            NcType::Byte => (v as i8).to_be_bytes().to_vec(),
            NcType::UByte | NcType::Char => vec![v as u8],
            NcType::Short => (v as i16).to_be_bytes().to_vec(),
            NcType::UShort => (v as u16).to_be_bytes().to_vec(),
            NcType::Int => (v as i32).to_be_bytes().to_vec(),
            NcType::UInt => (v as u32).to_be_bytes().to_vec(),
            NcType::Int64 => (v as i64).to_be_bytes().to_vec(),
            NcType::UInt64 => (v as u64).to_be_bytes().to_vec(),
            NcType::Float => (v as f32).to_be_bytes().to_vec(),
            NcType::Double => v.to_be_bytes().to_vec(),
        })
        .collect();
    Values { nc_type, bytes }
}

/// The attributes of a Zarr node NetCDF can hold: text, numbers and lists of numbers (a
/// number that fits `int` is one, else a double), the CF ones of the variable's type
/// typed so (`stored`: the Zarr type they are written in).
pub fn copied(attributes: &Map<String, Value>, nc_type: NcType, stored: DataType) -> Vec<(String, Values)> {
    let mut out = Vec::new();
    for (name, value) in attributes {
        if NOT_COPIED.contains(&name.as_str()) || is_layout(name) {
            continue;
        }
        let values = if TYPED.contains(&name.as_str()) {
            let list: Vec<f64> = match value {
                Value::Array(list) => list.iter().filter_map(|v| cf::number(v, stored)).collect(),
                v => cf::number(v, stored).into_iter().collect(),
            };
            (!list.is_empty()).then(|| typed(&list, nc_type))
        } else {
            plain(value)
        };
        if let Some(values) = values {
            out.push((netcdf::name(name), values));
        }
    }
    out
}

/// An attribute's value as NetCDF holds it, when it can.
pub fn plain(value: &Value) -> Option<Values> {
    let numbers = |list: &[Value]| -> Option<Values> {
        let ints: Option<Vec<i32>> =
            list.iter().map(|v| v.as_i64().and_then(|i| i32::try_from(i).ok()).filter(|_| !v.is_f64())).collect();
        if let Some(ints) = ints {
            return Some(Values::ints(&ints));
        }
        let doubles: Option<Vec<f64>> = list.iter().map(Value::as_f64).collect();
        doubles.map(|d| Values::doubles(&d))
    };
    match value {
        Value::String(s) => Some(Values::text(s)),
        Value::Number(_) => numbers(std::slice::from_ref(value)),
        Value::Bool(b) => Some(Values { nc_type: NcType::Byte, bytes: vec![u8::from(*b)] }),
        Value::Array(list) if !list.is_empty() => numbers(list),
        _ => None,
    }
}
