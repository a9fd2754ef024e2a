//! The `crc32c` codec (bytes→bytes): a little-endian CRC-32C of the data, appended.
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/index.html>.

use crate::zarr::codec::error::CodecError;

/// Verifies the checksum and returns the data without it.
pub fn decode(input: &[u8]) -> Result<&[u8], CodecError> {
    let Some(split) = input.len().checked_sub(4) else {
        return Err(CodecError::corrupt("crc32c", format!("{} bytes is too short to hold a checksum", input.len())));
    };
    let (data, tail) = input.split_at(split);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let computed = ::crc32c::crc32c(data);
    if stored != computed {
        return Err(CodecError::Checksum { stored, computed });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_the_castagnoli_checksum() {
        // RFC 3720 B.4 test vector: 32 bytes of zeros -> 0x8a9136aa.
        let mut data = vec![0u8; 32];
        data.extend(0x8a91_36aa_u32.to_le_bytes());
        assert_eq!(decode(&data).unwrap(), &[0u8; 32]);
        data[0] = 1;
        assert!(matches!(decode(&data), Err(CodecError::Checksum { stored: 0x8a91_36aa, .. })));
        assert!(decode(&[1, 2, 3]).is_err());
    }
}
