//! The `zstd` codec (bytes→bytes). Spec: zarr-extensions `codecs/zstd`.
//!
//! `TensorStore` writes frames without the content-size field, so a frame without it is
//! decoded by streaming; either way the output is capped at `max_len`.

use std::cell::RefCell;

use crate::zarr::codec::error::{CodecError, read_capped};

thread_local! {
    /// A decompression context per thread: creating one per chunk is measurable.
    static DECOMPRESSOR: RefCell<Option<::zstd::bulk::Decompressor<'static>>> =
        RefCell::new(::zstd::bulk::Decompressor::new().ok());
}

pub fn decode(input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |e: std::io::Error| CodecError::corrupt("zstd", e.to_string());
    if let Ok(Some(size)) = ::zstd::zstd_safe::get_frame_content_size(input) {
        if size > max_len as u64 {
            return Err(CodecError::TooLarge { codec: "zstd", limit: max_len });
        }
        // One frame with a known size decodes in one call, with this thread's reusable
        // context; several frames fall through to streaming.
        if let Ok(out) = DECOMPRESSOR.with_borrow_mut(|d| match d {
            Some(d) => d.decompress(input, size as usize),
            None => ::zstd::bulk::decompress(input, size as usize),
        }) && out.len() == size as usize
        {
            return Ok(out);
        }
    }
    let decoder = ::zstd::stream::read::Decoder::with_buffer(input).map_err(corrupt)?;
    read_capped(decoder, max_len, "zstd")
}

/// Decodes a single frame that records its content size of exactly `out.len()` straight
/// into `out`, with this thread's context. `Ok(false)` (nothing decided) for any other
/// input, which the caller then decodes the general way, errors included.
pub fn decode_into(input: &[u8], out: &mut [u8]) -> Result<bool, CodecError> {
    if !matches!(::zstd::zstd_safe::get_frame_content_size(input), Ok(Some(size)) if size == out.len() as u64) {
        return Ok(false);
    }
    let decoded = DECOMPRESSOR.with_borrow_mut(|d| match d {
        Some(d) => d.decompress_to_buffer(input, out),
        None => ::zstd::bulk::decompress_to_buffer(input, out),
    });
    match decoded {
        Ok(n) if n == out.len() => Ok(true),
        Ok(n) => Err(CodecError::corrupt("zstd", format!("frame decoded to {n} bytes, its header says {}", out.len()))),
        // Several frames, or a frame that does not decode: the general path reports it.
        Err(_) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_with_and_without_content_size() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|v| (v % 251).to_le_bytes()).collect();
        let framed = ::zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(decode(&framed, data.len()).unwrap(), data);
        // A streaming encoder without pledged size omits the content size, as TensorStore does.
        let mut enc = ::zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        let unsized_frame = enc.finish().unwrap();
        assert_eq!(::zstd::zstd_safe::get_frame_content_size(&unsized_frame).unwrap(), None);
        assert_eq!(decode(&unsized_frame, data.len()).unwrap(), data);
        assert!(matches!(decode(&unsized_frame, 100), Err(CodecError::TooLarge { .. })));
        assert!(matches!(decode(&framed, 100), Err(CodecError::TooLarge { .. })));
        assert!(decode(b"not zstd at all", 100).is_err());
        assert!(decode(&framed[..framed.len() / 2], data.len()).is_err());
    }

    #[test]
    fn decodes_into_a_buffer_only_when_the_frame_says_its_size() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|v| (v % 251).to_le_bytes()).collect();
        let framed = ::zstd::bulk::compress(&data, 3).unwrap();
        let mut out = vec![0u8; data.len()];
        assert!(decode_into(&framed, &mut out).unwrap());
        assert_eq!(out, data);
        // A different size than the frame declares, or no declared size: not decided here.
        let mut short = vec![0u8; data.len() - 1];
        assert!(!decode_into(&framed, &mut short).unwrap());
        let mut enc = ::zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        assert!(!decode_into(&enc.finish().unwrap(), &mut out).unwrap());
        assert!(!decode_into(&framed[..framed.len() / 2], &mut out).unwrap());
    }
}
