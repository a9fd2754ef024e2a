//! The `gzip` codec (bytes→bytes): an RFC 1952 member, as numcodecs writes it. A zlib
//! stream is accepted too, since some writers produce one under this name.

use flate2::read::{MultiGzDecoder, ZlibDecoder};

use crate::zarr::codec::error::{CodecError, read_capped};

pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    if input.starts_with(&[0x1f, 0x8b]) {
        read_capped(MultiGzDecoder::new(input), max_len, "gzip")
    } else {
        read_capped(ZlibDecoder::new(input), max_len, "gzip")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_and_zlib_round_trip() {
        let data = b"zarr zarr zarr zarr zarr".repeat(50);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(5));
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decode(&gz, data.len()).unwrap(), data);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(1));
        z.write_all(&data).unwrap();
        assert_eq!(decode(&z.finish().unwrap(), data.len()).unwrap(), data);
        assert!(matches!(decode(&gz, 10), Err(CodecError::TooLarge { .. })));
        assert!(decode(&gz[..gz.len() - 12], data.len()).is_err());
        assert!(decode(b"\x1f\x8bgarbage", 100).is_err());
    }
}
