//! numcodecs `packbits` (a filter of booleans): one byte saying how many padding bits end
//! the last byte, then the booleans eight to a byte, most significant bit first (`NumPy`'s
//! `packbits`).

use crate::zarr::codec::error::CodecError;

/// Unpacks into one byte (0 or 1) per boolean.
pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    let Some((&padding, packed)) = input.split_first() else {
        return Err(CodecError::corrupt("packbits", "no header byte"));
    };
    let bits = (packed.len() * 8).checked_sub(usize::from(padding)).filter(|_| padding < 8);
    let Some(bits) = bits else {
        return Err(CodecError::corrupt("packbits", format!("{padding} padding bits after {} bytes", packed.len())));
    };
    if bits > max_len {
        return Err(CodecError::TooLarge { codec: "packbits", limit: max_len });
    }
    let mut out: Vec<u8> = packed.iter().flat_map(|&byte| (0..8).rev().map(move |i| (byte >> i) & 1)).collect();
    out.truncate(bits);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpacks_like_numpy() {
        // numcodecs' own example: [True, False, False, True] packs to [4, 144].
        assert_eq!(decode(&[4, 144], 4).unwrap(), [1, 0, 0, 1]);
        assert_eq!(decode(&[0, 0xff], 8).unwrap(), [1; 8]);
        assert_eq!(decode(&[0], 0).unwrap(), Vec::<u8>::new());
        assert!(decode(&[4, 144], 3).is_err());
        assert!(decode(&[8, 144], 8).is_err());
        assert!(decode(&[1], 8).is_err());
        assert!(decode(&[], 8).is_err());
    }
}
