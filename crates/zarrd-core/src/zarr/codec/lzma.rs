//! numcodecs `lzma` (Zarr v2 compressor): an `.xz` container (numcodecs' default, format 1)
//! or a legacy `.lzma` ("alone", format 2) stream, decoded by the pure-Rust `lzma-rs`.
//! The raw format (3) needs a filter chain stored beside the data and is not supported.

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LzmaFormat {
    /// `lzma.FORMAT_AUTO` (0): whichever container the bytes start with.
    Auto,
    Xz,
    Alone,
}

/// The `.xz` magic bytes.
const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];

impl LzmaFormat {
    /// The container a numcodecs `lzma` configuration names (`format`, default 1).
    pub fn from_config(config: &Map<String, Value>) -> Result<Self, MetadataError> {
        match config.get("format") {
            None | Some(Value::Null) => Ok(Self::Xz),
            Some(v) => match v.as_u64() {
                Some(0) => Ok(Self::Auto),
                Some(1) => Ok(Self::Xz),
                Some(2) => Ok(Self::Alone),
                _ => Err(MetadataError::Unsupported(format!("lzma format {v} (only 0, 1 and 2 are read)"))),
            },
        }
    }
}

/// A sink that refuses to grow past `limit`, so a hostile stream cannot allocate without bound.
struct Capped {
    out: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.limit {
            self.overflowed = true;
            return Err(std::io::Error::other("too large"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn decode(input: &[u8], max_len: usize, format: LzmaFormat) -> Result<Vec<u8>, CodecError> {
    let xz = match format {
        LzmaFormat::Xz => true,
        LzmaFormat::Alone => false,
        LzmaFormat::Auto => input.starts_with(XZ_MAGIC),
    };
    let mut sink = Capped { out: Vec::with_capacity(max_len.min(1 << 26)), limit: max_len, overflowed: false };
    let mut reader = input;
    let result = if xz {
        lzma_rs::xz_decompress(&mut reader, &mut sink)
    } else {
        lzma_rs::lzma_decompress(&mut reader, &mut sink)
    };
    match result {
        Ok(()) => Ok(sink.out),
        Err(_) if sink.overflowed => Err(CodecError::TooLarge { codec: "lzma", limit: max_len }),
        Err(e) => Err(CodecError::corrupt("lzma", e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_xz_and_alone_and_caps_them() {
        let data = b"lzma in zarr v2 ".repeat(100);
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut data.as_slice(), &mut xz).unwrap();
        let mut alone = Vec::new();
        lzma_rs::lzma_compress(&mut data.as_slice(), &mut alone).unwrap();
        assert_eq!(decode(&xz, data.len(), LzmaFormat::Xz).unwrap(), data);
        assert_eq!(decode(&xz, data.len(), LzmaFormat::Auto).unwrap(), data);
        assert_eq!(decode(&alone, data.len(), LzmaFormat::Alone).unwrap(), data);
        assert_eq!(decode(&alone, data.len(), LzmaFormat::Auto).unwrap(), data);
        assert!(matches!(decode(&xz, 10, LzmaFormat::Xz), Err(CodecError::TooLarge { .. })));
        assert!(decode(&xz[..xz.len() / 2], data.len(), LzmaFormat::Xz).is_err());
        assert!(decode(b"not lzma", 100, LzmaFormat::Alone).is_err());
        let config = |v: Value| LzmaFormat::from_config(v.as_object().unwrap());
        assert_eq!(config(json!({"id": "lzma", "format": 1, "check": -1})).unwrap(), LzmaFormat::Xz);
        assert_eq!(config(json!({"id": "lzma"})).unwrap(), LzmaFormat::Xz);
        assert!(matches!(config(json!({"format": 3})), Err(MetadataError::Unsupported(_))));
    }
}
