//! The bytes→bytes codecs: found by their v3 names in `chain` and by their numcodecs ids
//! here (Zarr v2 compressors and filters).

use serde_json::Value;

use crate::zarr::codec::astype::AsType;
use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::fixedscaleoffset::FixedScaleOffset;
use crate::zarr::codec::lzma::LzmaFormat;
use crate::zarr::codec::numeric::NumType;
use crate::zarr::codec::{blosc, bz2, crc32c, delta, gzip, lz4, lzma, shuffle, zlib, zstd};
use crate::zarr::json::MetadataError;

/// The bytes→bytes codecs: the v3 ones, and the numcodecs compressors and filters of Zarr
/// v2 (a v2 filter works on the chunk's flat buffer in its stored element type, so it sits
/// after the `bytes` codec like a compressor does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesToBytes {
    Zstd,
    Gzip,
    Blosc,
    Crc32c,
    Zlib,
    Lz4,
    Bz2,
    Lzma(LzmaFormat),
    Shuffle { elementsize: usize },
    Delta(NumType),
    FixedScaleOffset(FixedScaleOffset),
    AsType(AsType),
}

impl BytesToBytes {
    pub(super) fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            Self::Zstd => zstd::decode(input, max_len),
            Self::Gzip => gzip::decode(input, max_len),
            Self::Blosc => blosc::decode(input, max_len),
            Self::Crc32c => crc32c::decode(input).map(<[u8]>::to_vec),
            Self::Zlib => zlib::decode(input, max_len),
            Self::Lz4 => lz4::decode(input, max_len),
            Self::Bz2 => bz2::decode(input, max_len),
            Self::Lzma(format) => lzma::decode(input, max_len, format),
            Self::Shuffle { elementsize } => shuffle::decode(input, max_len, elementsize),
            Self::Delta(ty) => delta::decode(input, max_len, ty),
            Self::FixedScaleOffset(f) => f.decode(input, max_len),
            Self::AsType(a) => a.decode(input, max_len),
        }
    }

    /// The largest encoded size for `len` input bytes, if it is fixed.
    pub(super) fn fixed_encoded_size(self, len: u64) -> Option<u64> {
        match self {
            Self::Crc32c => len.checked_add(4),
            Self::Shuffle { .. } | Self::Delta(_) => Some(len),
            Self::FixedScaleOffset(f) => (len / f.dtype.size as u64).checked_mul(f.astype.size as u64),
            Self::AsType(a) => (len / a.decode.size as u64).checked_mul(a.encode.size as u64),
            Self::Zstd | Self::Gzip | Self::Blosc | Self::Zlib | Self::Lz4 | Self::Bz2 | Self::Lzma(_) => None,
        }
    }

    /// A bound on what this codec's decoder may output, given a bound on what the codec
    /// after it (nearer the stored bytes) decodes to: exact for the fixed-size filters;
    /// for the others a little framing (checksums) on top.
    pub(super) fn encoded_bound(self, decoded_bound: usize) -> usize {
        match self.fixed_encoded_size(decoded_bound as u64) {
            Some(n) if !matches!(self, Self::Crc32c) => n as usize,
            _ => decoded_bound.saturating_add(64),
        }
    }

    /// A numcodecs compressor or filter configuration (`{"id": ..., ...}`) of a Zarr v2
    /// array whose stored elements are `dtype`.
    pub fn from_numcodecs(config: &serde_json::Map<String, Value>, dtype: NumType) -> Result<Self, MetadataError> {
        let Some(Value::String(id)) = config.get("id") else {
            return Err(MetadataError::invalid("compressor", "a numcodecs configuration without a string `id`"));
        };
        Ok(match id.as_str() {
            // Decoding needs only what the streams themselves carry.
            "zstd" => Self::Zstd,
            "gzip" => Self::Gzip,
            "blosc" => Self::Blosc,
            "zlib" => Self::Zlib,
            "lz4" => Self::Lz4,
            "bz2" => Self::Bz2,
            "lzma" => Self::Lzma(LzmaFormat::from_config(config)?),
            "shuffle" => Self::Shuffle {
                elementsize: match config.get("elementsize") {
                    None | Some(Value::Null) => 4,
                    Some(v) => v.as_u64().filter(|&n| (1..=1 << 16).contains(&n)).ok_or_else(|| {
                        MetadataError::invalid(
                            "filters",
                            &format!("shuffle `elementsize` {v} is not a small positive integer"),
                        )
                    })? as usize,
                },
            },
            "delta" => Self::Delta(delta::from_config(config, dtype)?),
            "fixedscaleoffset" => Self::FixedScaleOffset(FixedScaleOffset::from_config(config, dtype)?),
            "astype" => Self::AsType(AsType::from_config(config, dtype)?),
            other => return Err(MetadataError::Unsupported(format!("numcodecs codec `{other}`"))),
        })
    }
}
