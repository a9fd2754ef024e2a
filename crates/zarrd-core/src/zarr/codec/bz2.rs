//! numcodecs `bz2` (Zarr v2 compressor): one bzip2 stream, as Python's `bz2.compress`
//! writes it, decoded by the pure-Rust port of libbzip2.

use bzip2::read::MultiBzDecoder;

use crate::zarr::codec::error::{CodecError, read_capped};

pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    read_capped(MultiBzDecoder::new(input), max_len, "bz2")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn decodes_a_bzip2_stream_and_caps_it() {
        let data = b"bzip2 for zarr v2 ".repeat(60);
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(5));
        e.write_all(&data).unwrap();
        let stored = e.finish().unwrap();
        assert_eq!(decode(&stored, data.len()).unwrap(), data);
        assert!(matches!(decode(&stored, 10), Err(CodecError::TooLarge { .. })));
        assert!(decode(&stored[..stored.len() / 2], data.len()).is_err());
        assert!(decode(b"BZh9 but not really", 100).is_err());
    }
}
