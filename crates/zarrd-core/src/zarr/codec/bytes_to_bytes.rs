//! The codecs that turn bytes into bytes on decoding: the v3 bytes→bytes codecs, the
//! numcodecs compressors, checksums and filters of Zarr v2, and the numcodecs filters
//! zarr-python writes as v3 array→array codecs (a filter works element by element or on
//! the chunk's flat buffer in its stored element type, so it sits after the `bytes` codec
//! like a compressor does). Each is found by name in `registry`.

use crate::zarr::codec::astype::AsType;
use crate::zarr::codec::cast_value::CastValue;
use crate::zarr::codec::checksum::Checksum;
use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::fixedscaleoffset::FixedScaleOffset;
use crate::zarr::codec::lzma::LzmaFormat;
use crate::zarr::codec::numeric::NumType;
use crate::zarr::codec::scale_offset::ScaleOffset;
use crate::zarr::codec::{blosc, bz2, delta, gzip, lz4, lzma, packbits, pcodec, shuffle, zlib, zstd};

// `CastValue` keeps its scalar map inline (a few hundred bytes) so that codecs stay `Copy`;
// a chain holds a handful of codecs, so the size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesToBytes {
    Zstd,
    Gzip,
    Blosc,
    Checksum(Checksum),
    Zlib,
    Lz4,
    Bz2,
    Lzma(LzmaFormat),
    Shuffle {
        elementsize: usize,
    },
    Delta(NumType),
    FixedScaleOffset(FixedScaleOffset),
    AsType(AsType),
    ScaleOffset(ScaleOffset),
    CastValue(CastValue),
    PackBits,
    /// pcodec's numbers, decoded into elements of this type.
    Pcodec(NumType),
}

impl BytesToBytes {
    pub(super) fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            Self::Zstd => zstd::decode(input, max_len),
            Self::Gzip => gzip::decode(input, max_len),
            Self::Blosc => blosc::decode(input, max_len),
            Self::Checksum(c) => c.decode(input).map(<[u8]>::to_vec),
            Self::Zlib => zlib::decode(input, max_len),
            Self::Lz4 => lz4::decode(input, max_len),
            Self::Bz2 => bz2::decode(input, max_len),
            Self::Lzma(format) => lzma::decode(input, max_len, format),
            Self::Shuffle { elementsize } => shuffle::decode(input, max_len, elementsize),
            Self::Delta(ty) => delta::decode(input, max_len, ty),
            Self::FixedScaleOffset(f) => f.decode(input, max_len),
            Self::AsType(a) => a.decode(input, max_len),
            Self::ScaleOffset(s) => s.decode(input, max_len),
            Self::CastValue(c) => c.decode(input, max_len),
            Self::PackBits => packbits::decode(input, max_len),
            Self::Pcodec(ty) => pcodec::decode(input, max_len, ty),
        }
    }

    /// The largest encoded size for `len` input bytes, if it is fixed.
    pub(super) fn fixed_encoded_size(self, len: u64) -> Option<u64> {
        match self {
            Self::Checksum(_) => len.checked_add(4),
            Self::Shuffle { .. } | Self::Delta(_) | Self::ScaleOffset(_) => Some(len),
            Self::CastValue(c) => (len / c.decoded.size as u64).checked_mul(c.stored.size as u64),
            Self::FixedScaleOffset(f) => (len / f.dtype.size as u64).checked_mul(f.astype.size as u64),
            Self::AsType(a) => (len / a.decode.size as u64).checked_mul(a.encode.size as u64),
            Self::PackBits => Some(1 + len.div_ceil(8)),
            Self::Zstd
            | Self::Gzip
            | Self::Blosc
            | Self::Zlib
            | Self::Lz4
            | Self::Bz2
            | Self::Lzma(_)
            | Self::Pcodec(_) => None,
        }
    }

    /// A bound on what this codec's decoder may output, given a bound on what the codec
    /// after it (nearer the stored bytes) decodes to: exact for the fixed-size filters;
    /// for the others a little framing (checksums) on top.
    pub(super) fn encoded_bound(self, decoded_bound: usize) -> usize {
        match self.fixed_encoded_size(decoded_bound as u64) {
            Some(n) if !matches!(self, Self::Checksum(_)) => n as usize,
            _ => decoded_bound.saturating_add(64),
        }
    }

    /// Decodes at hundreds of MB/s or more (not gzip, zlib, bz2 or lzma; not blosc, whose
    /// inner compressor may be zlib), so a small chunk may be decoded in the async task.
    pub(super) fn decodes_fast(self) -> bool {
        !matches!(self, Self::Gzip | Self::Zlib | Self::Bz2 | Self::Lzma(_) | Self::Blosc)
    }

    /// The same codec working on elements stored in the given byte order: a v3 filter is
    /// parsed before the `bytes` codec that says the order, and works, like a v2 filter,
    /// on the elements as stored.
    pub(super) fn in_byte_order(self, big_endian: bool) -> Self {
        let order = |t: NumType| NumType { big_endian: big_endian && t.size > 1, ..t };
        match self {
            Self::Delta(t) => Self::Delta(order(t)),
            Self::FixedScaleOffset(f) => Self::FixedScaleOffset(f.retyped(order)),
            Self::AsType(a) => Self::AsType(AsType { encode: order(a.encode), decode: order(a.decode) }),
            Self::ScaleOffset(s) => Self::ScaleOffset(s.retyped(order)),
            Self::CastValue(c) => Self::CastValue(c.retyped(order)),
            Self::Pcodec(t) => Self::Pcodec(order(t)),
            other => other,
        }
    }
}
