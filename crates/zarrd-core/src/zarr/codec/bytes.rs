//! The `bytes` codec (array→bytes): elements in C order with a fixed byte order.
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/bytes/index.html>.

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::data_type::DataType;
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BytesCodec {
    pub big_endian: bool,
}

impl BytesCodec {
    pub fn from_config(config: Option<&Map<String, Value>>, data_type: DataType) -> Result<Self, MetadataError> {
        let endian = config.and_then(|c| c.get("endian"));
        let big_endian = match endian {
            Some(Value::String(e)) if e == "big" => true,
            Some(Value::String(e)) if e == "little" => false,
            // Required for multi-byte types by the spec, but a missing value can only mean
            // the writer's native order, which is little-endian for every known writer.
            None => false,
            Some(other) => {
                return Err(MetadataError::invalid(
                    "bytes codec",
                    &format!("endian {other} is not \"little\" or \"big\""),
                ));
            }
        };
        Ok(Self { big_endian: big_endian && data_type.swap_unit() > 1 })
    }

    /// Checks the length and returns little-endian elements, reusing `input`'s buffer.
    pub fn decode(self, input: Vec<u8>, shape: &[u64], data_type: DataType) -> Result<Vec<u8>, CodecError> {
        // No input is as long as an overflowing size.
        let expected = crate::zarr::codec::error::element_count(shape)
            .and_then(|n| n.checked_mul(data_type.size() as u64))
            .unwrap_or(u64::MAX);
        if input.len() as u64 != expected {
            return Err(CodecError::corrupt(
                "bytes",
                format!("{} bytes where the chunk shape needs {expected}", input.len()),
            ));
        }
        let mut out = input;
        if self.big_endian {
            for unit in out.chunks_exact_mut(data_type.swap_unit()) {
                unit.reverse();
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codec(endian: &str, dt: DataType) -> BytesCodec {
        BytesCodec::from_config(json!({"endian": endian}).as_object(), dt).unwrap()
    }

    #[test]
    fn swaps_big_endian_units() {
        let out = codec("big", DataType::UInt32).decode(vec![0, 0, 1, 2, 0, 0, 0, 7], &[2], DataType::UInt32).unwrap();
        assert_eq!(out, [2, 1, 0, 0, 7, 0, 0, 0]);
        // complex64 swaps each f32 half separately.
        let c =
            codec("big", DataType::Complex64).decode(vec![1, 2, 3, 4, 5, 6, 7, 8], &[1], DataType::Complex64).unwrap();
        assert_eq!(c, [4, 3, 2, 1, 8, 7, 6, 5]);
        let le = codec("little", DataType::Int16).decode(vec![1, 2], &[1], DataType::Int16).unwrap();
        assert_eq!(le, [1, 2]);
    }

    #[test]
    fn wrong_length_is_corrupt() {
        assert!(codec("little", DataType::Int16).decode(vec![1, 2, 3], &[2], DataType::Int16).is_err());
        assert!(BytesCodec::from_config(json!({"endian": "middle"}).as_object(), DataType::Int16).is_err());
    }
}
