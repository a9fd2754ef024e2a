//! numcodecs `astype` (Zarr v2 filter): elements stored as `encode_dtype`, cast back to
//! `decode_dtype` on reading (integers wrap, floats round, floats truncate into integers,
//! as `NumPy`'s `astype` does).

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::numeric::{Kind, NumType, map_elements};
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsType {
    pub encode: NumType,
    pub decode: NumType,
}

impl AsType {
    pub fn from_config(config: &Map<String, Value>, dtype: NumType) -> Result<Self, MetadataError> {
        let encode = NumType::from_config(config, "astype", "encode_dtype")?
            .ok_or_else(|| MetadataError::invalid("astype", "`encode_dtype` is missing"))?;
        Ok(Self { encode, decode: NumType::from_config(config, "astype", "decode_dtype")?.unwrap_or(dtype) })
    }

    /// numcodecs `quantize` (`digits`, `dtype`, `astype`): floats rounded to `digits`
    /// decimal digits and stored as `astype`; reading them is the cast back to `dtype`.
    pub fn quantized(config: &Map<String, Value>, dtype: NumType) -> Result<Self, MetadataError> {
        if config.get("digits").and_then(Value::as_i64).is_none() {
            return Err(MetadataError::invalid("quantize", "`digits` is not an integer"));
        }
        let decode = NumType::from_config(config, "quantize", "dtype")?.unwrap_or(dtype);
        let encode = NumType::from_config(config, "quantize", "astype")?.unwrap_or(decode);
        if decode.kind != Kind::Float || encode.kind != Kind::Float {
            return Err(MetadataError::Unsupported(format!(
                "quantize between {decode:?} and {encode:?} (floats only)"
            )));
        }
        Ok(Self { encode, decode })
    }

    pub fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        map_elements(input, self.encode, self.decode, max_len, "astype", |v| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn casts_back_to_the_decode_dtype() {
        let config = json!({"id": "astype", "encode_dtype": "<i2", "decode_dtype": "<f8"});
        let a = AsType::from_config(config.as_object().unwrap(), NumType::parse("<f8").unwrap()).unwrap();
        let stored: Vec<u8> = [-3i16, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
        let want: Vec<u8> = [-3f64, 7.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(a.decode(&stored, 16).unwrap(), want);
        assert!(a.decode(&stored, 8).is_err());
        assert!(
            AsType::from_config(json!({"id": "astype"}).as_object().unwrap(), NumType::parse("<f8").unwrap()).is_err()
        );
    }
}
