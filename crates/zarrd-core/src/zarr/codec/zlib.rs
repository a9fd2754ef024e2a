//! numcodecs `zlib` (Zarr v2 compressor): one zlib (RFC 1950) stream, as Python's
//! `zlib.compress` writes it.

use flate2::read::ZlibDecoder;

use crate::zarr::codec::error::{CodecError, read_capped};

pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    read_capped(ZlibDecoder::new(input), max_len, "zlib")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn decodes_a_zlib_stream_and_caps_it() {
        let data = b"zarr v2 zlib ".repeat(40);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(4));
        z.write_all(&data).unwrap();
        let z = z.finish().unwrap();
        assert_eq!(decode(&z, data.len()).unwrap(), data);
        assert!(matches!(decode(&z, 10), Err(CodecError::TooLarge { .. })));
        assert!(decode(&z[..z.len() / 2], data.len()).is_err());
        assert!(decode(b"not zlib", 100).is_err());
    }
}
