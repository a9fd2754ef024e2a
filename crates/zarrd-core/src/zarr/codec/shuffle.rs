//! numcodecs `shuffle` (Zarr v2 filter): byte `b` of element `i` is stored at
//! `b * count + i`, grouping the same byte of every element. Bytes past the last whole
//! element are left where they are.

use crate::zarr::codec::error::CodecError;

pub fn decode(input: &[u8], max_len: usize, elementsize: usize) -> Result<Vec<u8>, CodecError> {
    if input.len() > max_len {
        return Err(CodecError::TooLarge { codec: "shuffle", limit: max_len });
    }
    let mut out = input.to_vec();
    if elementsize <= 1 {
        return Ok(out);
    }
    let count = input.len() / elementsize;
    for (b, plane) in input.chunks_exact(count.max(1)).take(elementsize).enumerate() {
        if count == 0 {
            break;
        }
        for (i, &byte) in plane.iter().enumerate() {
            out[i * elementsize + b] = byte;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshuffles_byte_planes() {
        // Three u16 elements 0x0201, 0x0403, 0x0605 shuffled into planes [1,3,5][2,4,6].
        assert_eq!(decode(&[1, 3, 5, 2, 4, 6], 6, 2).unwrap(), [1, 2, 3, 4, 5, 6]);
        // A trailing partial element stays in place.
        assert_eq!(decode(&[1, 3, 2, 4, 9], 5, 2).unwrap(), [1, 2, 3, 4, 9]);
        assert_eq!(decode(&[7, 8], 2, 1).unwrap(), [7, 8]);
        assert_eq!(decode(&[7], 1, 4).unwrap(), [7]);
        assert!(matches!(decode(&[1, 2, 3], 2, 1), Err(CodecError::TooLarge { .. })));
    }
}
