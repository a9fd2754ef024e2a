//! zarr-python 3.4's `scale_offset` (zarr-extensions): elements stored as
//! `(x - offset) * scale` in the array's own data type; decoding computes `x / scale + offset`
//! in that type's arithmetic, as zarr-python does with `NumPy`: floats in their own precision
//! (float16 through float32, rounded after each operation, as `NumPy`'s half loops do),
//! integers by exact division. An integer that does not divide, or a result outside the
//! type, is an error: such bytes are not what the codec writes.

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::numeric::{Kind, NumType, Param, Scalar, int_range, try_map_elements};
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleOffset {
    /// The elements, decoded and stored alike.
    pub ty: NumType,
    scale: Param,
    offset: Param,
}

impl ScaleOffset {
    pub fn from_config(config: Option<&Map<String, Value>>, ty: NumType) -> Result<Self, MetadataError> {
        const CODEC: &str = "scale_offset";
        if !matches!(ty.kind, Kind::Int | Kind::UInt | Kind::Float) {
            return Err(MetadataError::Unsupported(format!("scale_offset on `{}` data", ty.data_type().name())));
        }
        let param = |key: &str, default: i64| match config.and_then(|c| c.get(key)) {
            None => Param::of_json(&Value::from(default), ty, key, CODEC),
            Some(v) => Param::of_json(v, ty, key, CODEC),
        };
        let (scale, offset) = (param("scale", 1)?, param("offset", 0)?);
        if scale.float() == 0.0 {
            return Err(MetadataError::invalid(CODEC, "`scale` is 0, which cannot be undone"));
        }
        Ok(Self { ty, scale, offset })
    }

    /// The same codec on elements stored in another byte order.
    pub fn retyped(self, f: impl Fn(NumType) -> NumType) -> Self {
        Self { ty: f(self.ty), ..self }
    }

    pub fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        let ty = self.ty;
        try_map_elements(input, ty, ty, max_len, "scale_offset", |v| {
            match (v, self.scale.scalar(), self.offset.scalar()) {
                (Scalar::Int(x), Scalar::Int(scale), Scalar::Int(offset)) => {
                    if x % scale != 0 {
                        return Err(format!("stored {x} is not a multiple of the scale {scale}"));
                    }
                    let y = x / scale + offset;
                    let (lo, hi) = int_range(ty);
                    if y < lo || y > hi {
                        return Err(format!(
                            "{x} / {scale} + {offset} is outside the range of {}",
                            ty.data_type().name()
                        ));
                    }
                    Ok(Scalar::Int(y))
                }
                (Scalar::Float(x), _, _) => {
                    let (scale, offset) = (self.scale.float(), self.offset.float());
                    Ok(Scalar::Float(match ty.size {
                        2 => {
                            let half = |f: f32| half::f16::from_f32(f).to_f32();
                            f64::from(half(half(x as f32 / scale as f32) + offset as f32))
                        }
                        4 => f64::from(x as f32 / scale as f32 + offset as f32),
                        _ => x / scale + offset,
                    }))
                }
                _ => Err("parameters of another kind than the elements".into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codec(config: &Value, ty: &str) -> Result<ScaleOffset, MetadataError> {
        ScaleOffset::from_config(config.as_object(), NumType::parse(ty).unwrap())
    }

    #[test]
    fn integers_divide_exactly_or_the_chunk_is_corrupt() {
        let c = codec(&json!({"offset": 100, "scale": 4}), "<i2").unwrap();
        let stored: Vec<u8> = [-400i16, 8, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let want: Vec<u8> = [0i16, 102, 100].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(c.decode(&stored, 6).unwrap(), want);
        let err = c.decode(&7i16.to_le_bytes(), 2).unwrap_err().to_string();
        assert!(err.contains("not a multiple of the scale 4"), "{err}");
        // 32767 / 1 + 100 does not fit in int16.
        let c = codec(&json!({"offset": 100}), "<i2").unwrap();
        assert!(c.decode(&32767i16.to_le_bytes(), 2).unwrap_err().to_string().contains("outside the range"));
    }

    #[test]
    fn parameters_are_values_of_the_type_and_the_scale_is_not_zero() {
        assert!(codec(&json!({"scale": 0}), "<f4").unwrap_err().to_string().contains("cannot be undone"));
        assert!(codec(&json!({"scale": 0.5}), "<i4").is_err(), "an integer array's scale is an integer");
        assert!(codec(&json!({"offset": 300}), "|u1").is_err(), "300 is not a uint8");
        assert!(codec(&json!({"scale": "NaN"}), "<f8").is_ok());
        assert!(ScaleOffset::from_config(None, NumType::parse("<f8").unwrap()).is_ok(), "defaults 0 and 1");
        assert!(ScaleOffset::from_config(None, NumType::parse("|b1").unwrap()).is_err());
    }

    #[test]
    fn floats_keep_their_precision() {
        // float32 arithmetic: 4000 / 10000 + (-0.1) is 0.3 rounded twice in float32.
        let c = codec(&json!({"offset": -0.1, "scale": 10000}), "<f4").unwrap();
        let out = c.decode(&4000f32.to_le_bytes(), 4).unwrap();
        assert_eq!(f32::from_le_bytes(out.try_into().unwrap()).to_bits(), (4000f32 / 10000f32 + -0.1f32).to_bits());
    }
}
