//! numcodecs `delta` (Zarr v2 filter): the first element, then differences of neighbours,
//! over the chunk's flat buffer; decoding is a running sum in the element type (integers
//! wrap, floats round at every step, as `NumPy`'s `cumsum` into that type does).

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::numeric::{Kind, NumType, Scalar, map_elements};
use crate::zarr::json::MetadataError;

/// The element type of a numcodecs `delta` configuration (`dtype`, default the array's).
/// An `astype` other than `dtype` makes the running sum's type a `NumPy` promotion
/// question, so it is refused rather than guessed.
pub fn from_config(config: &Map<String, Value>, dtype: NumType) -> Result<NumType, MetadataError> {
    let ty = NumType::from_config(config, "delta", "dtype")?.unwrap_or(dtype);
    if ty.kind == Kind::Bool {
        return Err(MetadataError::Unsupported("delta filter on booleans".into()));
    }
    match NumType::from_config(config, "delta", "astype")? {
        Some(astype) if astype != ty => {
            Err(MetadataError::Unsupported(format!("delta filter with astype {astype:?} different from dtype {ty:?}")))
        }
        _ => Ok(ty),
    }
}

pub fn decode(input: &[u8], max_len: usize, ty: NumType) -> Result<Vec<u8>, CodecError> {
    let mut int_sum: i128 = 0;
    let mut float_sum: f64 = 0.0;
    map_elements(input, ty, ty, max_len, "delta", |v| match v {
        // Wrapping in the element type is the same as wrapping once at the end.
        Scalar::Int(i) => {
            int_sum = int_sum.wrapping_add(i) & i128::from(u64::MAX);
            Scalar::Int(int_sum)
        }
        Scalar::Float(f) => {
            float_sum = match (ty.kind, ty.size) {
                (Kind::Float, 2) => half::f16::from_f64(float_sum + f).to_f64(),
                (Kind::Float, 4) => f64::from(float_sum as f32 + f as f32),
                _ => float_sum + f,
            };
            Scalar::Float(float_sum)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_sums_wrap_in_the_type() {
        let i1 = NumType::parse("|i1").unwrap();
        // Stored bytes 100, 100, 200 (= -56) sum to 100, 200, 144 as wrapped i8 bytes.
        let stored = [100u8, 100, 200];
        assert_eq!(decode(&stored, 3, i1).unwrap(), [100, 200, 144]);
        let be = NumType::parse(">i4").unwrap();
        let stored: Vec<u8> = [5i32, -1, -1].iter().flat_map(|v| v.to_be_bytes()).collect();
        let want: Vec<u8> = [5i32, 4, 3].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(decode(&stored, 12, be).unwrap(), want);
        let f4 = NumType::parse("<f4").unwrap();
        let stored: Vec<u8> = [0.5f32, 0.25, 0.25].iter().flat_map(|v| v.to_le_bytes()).collect();
        let want: Vec<u8> = [0.5f32, 0.75, 1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decode(&stored, 12, f4).unwrap(), want);
        assert!(decode(&[1, 2, 3], 3, be).is_err());
        assert!(matches!(decode(&[1, 2, 3], 2, i1), Err(CodecError::TooLarge { .. })));
    }
}
