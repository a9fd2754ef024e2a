//! numcodecs `pcodec` (`numcodecs.pcodec` in v3, an array→bytes codec there; a compressor
//! in v2): the chunk's numbers in pcodec's standalone format, decoded by the `pco` crate
//! into the element type the array metadata names.

use pco::standalone::simple_decompress_into;

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::numeric::{Kind, NumType};
use crate::zarr::json::MetadataError;

/// Refuses element types pcodec has no format for.
pub fn check(ty: NumType) -> Result<NumType, MetadataError> {
    match (ty.kind, ty.size) {
        (Kind::Int | Kind::UInt, 1 | 2 | 4 | 8) | (Kind::Float, 2 | 4 | 8) => Ok(ty),
        _ => Err(MetadataError::Unsupported(format!("pcodec on {:?} elements of {} bytes", ty.kind, ty.size))),
    }
}

/// Decodes at most `max_len` bytes of elements of `ty`, written in `ty`'s byte order.
pub fn decode(input: &[u8], max_len: usize, ty: NumType) -> Result<Vec<u8>, CodecError> {
    macro_rules! numbers {
        ($t:ty) => {{
            // Room for exactly the bound: a stream of more numbers is refused, not grown into.
            let mut numbers = vec![<$t>::default(); max_len / std::mem::size_of::<$t>()];
            let progress = simple_decompress_into::<$t>(input, &mut numbers)
                .map_err(|e| CodecError::corrupt("pcodec", e.to_string()))?;
            if !progress.finished {
                return Err(CodecError::TooLarge { codec: "pcodec", limit: max_len });
            }
            numbers.truncate(progress.n_processed);
            let mut out = Vec::with_capacity(numbers.len() * std::mem::size_of::<$t>());
            for n in numbers {
                if ty.big_endian {
                    out.extend_from_slice(&n.to_be_bytes());
                } else {
                    out.extend_from_slice(&n.to_le_bytes());
                }
            }
            Ok(out)
        }};
    }
    match (ty.kind, ty.size) {
        (Kind::UInt, 1) => numbers!(u8),
        (Kind::UInt, 2) => numbers!(u16),
        (Kind::UInt, 4) => numbers!(u32),
        (Kind::UInt, 8) => numbers!(u64),
        (Kind::Int, 1) => numbers!(i8),
        (Kind::Int, 2) => numbers!(i16),
        (Kind::Int, 4) => numbers!(i32),
        (Kind::Int, 8) => numbers!(i64),
        (Kind::Float, 2) => numbers!(half::f16),
        (Kind::Float, 4) => numbers!(f32),
        (Kind::Float, 8) => numbers!(f64),
        _ => Err(CodecError::corrupt("pcodec", format!("no pcodec format for {ty:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_bounds() {
        let values: Vec<i32> = (0..1000).map(|i| i * i - 500).collect();
        let stored = pco::standalone::simple_compress(&values, &pco::ChunkConfig::default()).unwrap();
        let ty = NumType::parse("<i4").unwrap();
        let want: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decode(&stored, 4000, ty).unwrap(), want);
        let big: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(decode(&stored, 4000, NumType { big_endian: true, ..ty }).unwrap(), big);
        assert!(matches!(decode(&stored, 3996, ty), Err(CodecError::TooLarge { .. })));
        assert!(decode(&stored[..stored.len() / 2], 4000, ty).is_err());
        assert!(decode(b"not pcodec", 4000, ty).is_err());
        assert!(check(NumType::parse("<c8").unwrap()).is_err());
    }
}
