//! The `blosc` codec (bytes→bytes), decoded by c-blosc 1.x (the library numcodecs uses).
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/index.html>.
//! Decoding needs only the blosc header, so the stored configuration is not consulted.
#![allow(unsafe_code)]

use crate::zarr::codec::error::CodecError;

pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    let mut nbytes: usize = 0;
    // SAFETY: `blosc_cbuffer_validate` reads at most `input.len()` bytes of `input` and
    // writes one `usize` through a valid pointer.
    let valid = unsafe { blosc_src::blosc_cbuffer_validate(input.as_ptr().cast(), input.len(), &raw mut nbytes) };
    if valid != 0 {
        return Err(CodecError::corrupt("blosc", "invalid blosc header"));
    }
    if nbytes > max_len {
        return Err(CodecError::TooLarge { codec: "blosc", limit: max_len });
    }
    let mut out = vec![0u8; nbytes];
    if nbytes == 0 {
        return Ok(out);
    }
    // SAFETY: the header was validated against `input.len()`; blosc writes at most
    // `out.len()` bytes into `out`. The context API takes no global lock and is thread-safe.
    let written =
        unsafe { blosc_src::blosc_decompress_ctx(input.as_ptr().cast(), out.as_mut_ptr().cast(), out.len(), 1) };
    if written < 0 || written as usize != nbytes {
        return Err(CodecError::corrupt("blosc", format!("decompression failed ({written})")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(data: &[u8], typesize: usize, shuffle: i32, cname: &str) -> Vec<u8> {
        let mut out = vec![0u8; data.len() + 16];
        let cname = std::ffi::CString::new(cname).unwrap();
        // SAFETY: buffers are valid for the lengths given; test-only encoder.
        let n = unsafe {
            blosc_src::blosc_compress_ctx(
                5,
                shuffle,
                typesize,
                data.len(),
                data.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                out.len(),
                cname.as_ptr(),
                0,
                1,
            )
        };
        assert!(n > 0);
        out.truncate(n as usize);
        out
    }

    #[test]
    fn decodes_every_compressor_and_shuffle() {
        let data: Vec<u8> = (0..4096u32).flat_map(|v| (v / 3).to_le_bytes()).collect();
        for cname in ["lz4", "lz4hc", "blosclz", "zstd", "zlib"] {
            for shuffle in [0, 1, 2] {
                let c = compress(&data, 4, shuffle, cname);
                assert_eq!(decode(&c, data.len()).unwrap(), data, "{cname} shuffle {shuffle}");
            }
        }
        let c = compress(&data, 4, 1, "lz4");
        assert!(matches!(decode(&c, 100), Err(CodecError::TooLarge { .. })));
        assert!(decode(&c[..10], data.len()).is_err());
        assert!(decode(b"definitely not blosc", 1000).is_err());
    }
}
