//! numcodecs `fixedscaleoffset` (Zarr v2 filter): stored `round((x - offset) * scale)` as
//! `astype`; decoding computes `enc / scale + offset` and casts to `dtype`, in the precision
//! `NumPy` 2 uses for it: float64 for integer (and float64) encodings, the encoding's own
//! precision for float32/float16 ones (a Python scalar does not widen them).

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::numeric::{Kind, NumType, Scalar, map_elements};
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedScaleOffset {
    /// `f64` bits, so that the codec chain stays `Eq`.
    scale: u64,
    offset: u64,
    pub dtype: NumType,
    pub astype: NumType,
}

impl FixedScaleOffset {
    pub fn from_config(config: &Map<String, Value>, dtype: NumType) -> Result<Self, MetadataError> {
        let bad = |why: String| MetadataError::invalid("filters", &format!("fixedscaleoffset: {why}"));
        let number = |key: &str| -> Result<f64, MetadataError> {
            config.get(key).and_then(Value::as_f64).ok_or_else(|| bad(format!("`{key}` is not a number")))
        };
        let dtype = NumType::from_config(config, "fixedscaleoffset", "dtype")?.unwrap_or(dtype);
        let astype = NumType::from_config(config, "fixedscaleoffset", "astype")?.unwrap_or(dtype);
        let scale = number("scale")?;
        if scale == 0.0 || !scale.is_finite() {
            return Err(bad(format!("`scale` {scale} cannot be inverted")));
        }
        Ok(Self { scale: scale.to_bits(), offset: number("offset")?.to_bits(), dtype, astype })
    }

    /// The same filter with its two element types mapped (their byte order changed).
    pub fn retyped(self, f: impl Fn(NumType) -> NumType) -> Self {
        Self { dtype: f(self.dtype), astype: f(self.astype), ..self }
    }

    pub fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        let (scale, offset) = (f64::from_bits(self.scale), f64::from_bits(self.offset));
        let precision = if self.astype.kind == Kind::Float { self.astype.size } else { 8 };
        map_elements(input, self.astype, self.dtype, max_len, "fixedscaleoffset", |v| {
            let x = match v {
                Scalar::Int(i) => i as f64,
                Scalar::Float(f) => f,
            };
            Scalar::Float(match precision {
                2 => {
                    let q = half::f16::from_f64(x / f64::from(half::f16::from_f64(scale)));
                    (q + half::f16::from_f64(offset)).to_f64()
                }
                4 => f64::from(x as f32 / scale as f32 + offset as f32),
                _ => x / scale + offset,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scales_back_into_the_dtype() {
        let config = json!({"id": "fixedscaleoffset", "scale": 10, "offset": 1000, "dtype": "<f8", "astype": "|u1"});
        let f = FixedScaleOffset::from_config(config.as_object().unwrap(), NumType::parse("<f8").unwrap()).unwrap();
        let out = f.decode(&[0, 15, 255], 24).unwrap();
        let got: Vec<f64> = out.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(got, [1000.0, 1001.5, 1025.5]);
        assert!(matches!(f.decode(&[0, 15, 255], 16), Err(CodecError::TooLarge { .. })));
        let zero = json!({"scale": 0, "offset": 0, "dtype": "<f8", "astype": "|u1"});
        assert!(FixedScaleOffset::from_config(zero.as_object().unwrap(), NumType::parse("<f8").unwrap()).is_err());
    }
}
