//! numcodecs `lz4` (Zarr v2 compressor): a little-endian `u32` decoded size, then one LZ4
//! block (numcodecs' `LZ4.encode` with `store_size` on, how every zarr writes it).

use crate::zarr::codec::error::CodecError;

pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    let Some((header, block)) = input.split_first_chunk::<4>() else {
        return Err(CodecError::corrupt("lz4", format!("{} bytes cannot hold the size header", input.len())));
    };
    let size = u32::from_le_bytes(*header) as usize;
    // The header is untrusted: check it before allocating.
    if size > max_len {
        return Err(CodecError::TooLarge { codec: "lz4", limit: max_len });
    }
    let out = lz4_flex::block::decompress(block, size).map_err(|e| CodecError::corrupt("lz4", e.to_string()))?;
    if out.len() != size {
        return Err(CodecError::corrupt("lz4", format!("{} bytes decoded where the header says {size}", out.len())));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_size_prefixed_block() {
        let data: Vec<u8> = (0..5000u32).map(|v| (v / 7) as u8).collect();
        let stored = lz4_flex::block::compress_prepend_size(&data);
        assert_eq!(decode(&stored, data.len()).unwrap(), data);
        assert!(matches!(decode(&stored, 100), Err(CodecError::TooLarge { .. })));
        assert!(decode(&stored[..stored.len() / 2], data.len()).is_err());
        assert!(decode(&[1, 2], 100).is_err());
        // A header that promises more than the block holds.
        let mut lying = stored.clone();
        lying[..4].copy_from_slice(&4999u32.to_le_bytes());
        assert!(decode(&lying, data.len()).is_err());
    }
}
