//! Data values as `xarray.decode_cf` gives them: packing (`scale_factor`, `add_offset`)
//! applied and missing values (`_FillValue`, `missing_value`) made NaN.
//!
//! Which type comes out follows xarray's `CFScaleOffsetCoder` and `CFMaskCoder`: packed
//! data is float64 (the attributes are JSON numbers, so Python floats), except an 8- or
//! 16-bit integer scaled by `scale_factor` alone (float64 too, since the factor is a
//! float64); masked integers become float32 up to 16 bits and float64 beyond; floats keep
//! their type. The Zarr `fill_value` is a missing value where xarray makes it one: in Zarr
//! v2 (its backend reads it as `_FillValue`; a `null` fill is none), not in v3 (there
//! `_FillValue` is an attribute of its own, which xarray writes beside the fill).

use base64::Engine as _;
use serde_json::Value;

use crate::zarr::data_type::{DataType, element_f64};
use crate::zarr::metadata::ArrayMetadata;

/// How an array's stored elements become decoded values.
#[derive(Debug, Clone, PartialEq)]
pub struct CfValues {
    /// The stored type.
    pub stored: DataType,
    /// The decoded type: the stored one when nothing is to be decoded.
    pub decoded: DataType,
    scale: Option<f64>,
    offset: Option<f64>,
    /// Stored values that mean "missing", besides NaN.
    missing: Vec<f64>,
}

impl CfValues {
    /// The decoding of `meta`'s elements from its attributes.
    pub fn of(meta: &ArrayMetadata) -> Self {
        let stored = meta.data_type;
        let attr = |name: &str| meta.attributes.get(name).and_then(|v| number(v, stored));
        let (scale, offset) =
            if stored.is_real_number() { (attr("scale_factor"), attr("add_offset")) } else { (None, None) };
        let mut missing = if stored.is_real_number() { cf_no_data(meta) } else { Vec::new() };
        // A v2 `fill_value: null` is "no fill" (zarrd reads it as zeros): nothing missing;
        // and with a CF `_FillValue`/`missing_value` the fill is a value (as xarray reads it).
        let v2_fill = meta.zarr_format == 2 && !meta.document.get("fill_value").is_none_or(Value::is_null);
        if v2_fill
            && missing.is_empty()
            && let Some(fill) = element_f64(&meta.fill_value, stored).filter(|f| !f.is_nan())
            && stored.is_real_number()
        {
            missing.push(fill);
        }
        let decoded = if scale.is_some() || offset.is_some() {
            DataType::Float64
        } else if missing.is_empty() || stored.is_float() {
            stored
        } else if stored.size() <= 2 {
            DataType::Float32
        } else {
            DataType::Float64
        };
        Self { stored, decoded, scale, offset, missing }
    }

    /// Whether decoding changes anything: elements can then be served as stored.
    /// The same decoding into float32 or float64 (integers and float16 become float64), for
    /// answers that must hold NaN where a cell is not taken.
    #[must_use]
    pub fn floating(&self) -> Self {
        let decoded = if matches!(self.decoded, DataType::Float32 | DataType::Float64) {
            self.decoded
        } else {
            DataType::Float64
        };
        Self { decoded, ..self.clone() }
    }

    pub fn is_identity(&self) -> bool {
        self.decoded == self.stored && self.missing.is_empty() && self.scale.is_none() && self.offset.is_none()
    }

    /// One stored element as its decoded value, NaN when missing (`None`: not a real
    /// number, e.g. complex).
    pub fn value(&self, element: &[u8]) -> Option<f64> {
        let raw = element_f64(element, self.stored)?;
        if self.missing.contains(&raw) {
            return Some(f64::NAN);
        }
        Some(match (self.scale, self.offset) {
            (None, None) => raw,
            (scale, offset) => raw * scale.unwrap_or(1.0) + offset.unwrap_or(0.0),
        })
    }

    /// Stored little-endian elements as their decoded values (NaN where missing) into `out`
    /// (one per element): a plain loop for floats with nothing to decode.
    pub fn values_into(&self, stored: &[u8], out: &mut [f64]) {
        let plain = self.scale.is_none() && self.offset.is_none() && self.missing.is_empty();
        match self.stored {
            DataType::Float32 if plain => {
                for (o, b) in out.iter_mut().zip(stored.chunks_exact(4)) {
                    *o = f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                }
            }
            DataType::Float64 if plain => {
                for (o, b) in out.iter_mut().zip(stored.chunks_exact(8)) {
                    *o = f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                }
            }
            _ => {
                for (o, b) in out.iter_mut().zip(stored.chunks_exact(self.stored.size().max(1))) {
                    *o = self.value(b).unwrap_or(f64::NAN);
                }
            }
        }
    }

    /// Stored little-endian elements as decoded little-endian elements of
    /// [`Self::decoded`]; the input itself when decoding changes nothing.
    pub fn decode(&self, stored: Vec<u8>) -> Vec<u8> {
        if self.is_identity() {
            return stored;
        }
        let item = self.stored.size();
        let n = stored.len() / item.max(1);
        let mut out = Vec::with_capacity(n * self.decoded.size());
        for element in stored.chunks_exact(item) {
            let v = self.value(element).unwrap_or(f64::NAN);
            match self.decoded {
                DataType::Float64 => out.extend_from_slice(&v.to_le_bytes()),
                // Floats that keep their type: only missing values change (to NaN).
                DataType::Float32 if self.stored == DataType::Float32 => {
                    if v.is_nan() {
                        out.extend_from_slice(&f32::NAN.to_le_bytes());
                    } else {
                        out.extend_from_slice(element);
                    }
                }
                DataType::Float32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
                DataType::Float16 => {
                    if v.is_nan() {
                        out.extend_from_slice(&half::f16::NAN.to_le_bytes());
                    } else {
                        out.extend_from_slice(element);
                    }
                }
                _ => out.extend_from_slice(element),
            }
        }
        out
    }
}

/// The CF no-data values of an array (`_FillValue`, `missing_value`, each a number or a
/// list) that are numbers other than NaN (NaN is no data anyway).
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

/// An attribute's number: a JSON number, a float named as Zarr names them (`"NaN"`), or
/// base64 of its bytes (xarray's v3 encoding of a float `_FillValue` is the float64's; of
/// others, the element's).
pub fn number(v: &Value, data_type: DataType) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => s.parse().ok(),
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

#[cfg(test)]
#[allow(clippy::float_cmp)] // the expected values are computed the same way, exactly
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(data_type: &str, fill: &Value, attributes: &Value, zarr_format: u8) -> ArrayMetadata {
        let doc = json!({
            "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": attributes,
        });
        let crate::zarr::metadata::Node::Array(m) = crate::zarr::metadata::Node::from_value(doc).unwrap() else {
            panic!("not an array")
        };
        let mut m = (*m).clone();
        m.zarr_format = zarr_format;
        // As a v2 `.zarray` keeps it (the fill is read from it).
        m.document.insert("fill_value".into(), fill.clone());
        m
    }

    #[test]
    fn packed_integers_are_float64_with_the_fill_missing() {
        // xarray: int16 * 0.01 + 5.0, -32768 (the _FillValue) → NaN.
        let cf = CfValues::of(&meta(
            "int16",
            &json!(-32768),
            &json!({"scale_factor": 0.01, "add_offset": 5.0, "_FillValue": -32768}),
            3,
        ));
        assert_eq!(cf.decoded, DataType::Float64);
        let stored: Vec<u8> = [100i16, -32768, -500].iter().flat_map(|v| v.to_le_bytes()).collect();
        let out = cf.decode(stored);
        let values: Vec<f64> = out.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(values[0], 100.0 * 0.01 + 5.0);
        assert!(values[1].is_nan());
        assert_eq!(values[2], -500.0 * 0.01 + 5.0);
    }

    #[test]
    fn masked_integers_widen_as_xarray_does_and_floats_keep_their_type() {
        let small = CfValues::of(&meta("uint8", &json!(0), &json!({"_FillValue": 255}), 3));
        assert_eq!(small.decoded, DataType::Float32);
        assert!(small.value(&[255]).unwrap().is_nan());
        assert_eq!(small.value(&[7]), Some(7.0));
        assert_eq!(
            CfValues::of(&meta("int32", &json!(0), &json!({"missing_value": [-1, -2]}), 3)).decoded,
            DataType::Float64
        );
        // xarray's v3 `_FillValue` of a float: base64 of the float64's bytes.
        let fill = base64::engine::general_purpose::STANDARD.encode((-9999f64).to_le_bytes());
        let float = CfValues::of(&meta("float32", &json!("NaN"), &json!({"_FillValue": fill}), 3));
        assert_eq!(float.decoded, DataType::Float32);
        let out = float.decode([-9999f32, 1.5].iter().flat_map(|v| v.to_le_bytes()).collect());
        assert!(f32::from_le_bytes(out[..4].try_into().unwrap()).is_nan());
        assert_eq!(f32::from_le_bytes(out[4..].try_into().unwrap()), 1.5);
    }

    #[test]
    fn the_zarr_fill_is_missing_in_v2_only() {
        assert!(CfValues::of(&meta("int16", &json!(-1), &json!({}), 3)).is_identity());
        let v2 = CfValues::of(&meta("int16", &json!(-1), &json!({}), 2));
        assert_eq!(v2.decoded, DataType::Float32);
        assert!(v2.value(&(-1i16).to_le_bytes()).unwrap().is_nan());
        // xarray writes `fill_value: null` for coordinates in v2: no value is missing (zarrd
        // reads such a fill as zeros, which must stay values).
        let mut no_fill = meta("int64", &json!(0), &json!({}), 2);
        no_fill.document.insert("fill_value".into(), Value::Null);
        assert!(CfValues::of(&no_fill).is_identity());
    }
}
