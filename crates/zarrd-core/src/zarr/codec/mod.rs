//! The codecs (core spec "Codecs"): one door for the rest of zarrd. [`CodecChain`] (in
//! `chain`) parses a `codecs` list and decodes a chunk through it; each codec is a file
//! here, found by its v3 name, its `numcodecs.*` name or its v2 id in `registry`. Adding
//! one is a file, a line in the registry and a variant of the enum its kind decodes
//! through, whose exhaustive `match`es show what else needs it.

mod astype;
mod blosc;
mod bytes;
mod bytes_to_bytes;
mod bz2;
mod cast_value;
mod chain;
mod checksum;
mod delta;
mod error;
mod fixedscaleoffset;
mod gzip;
mod lookup3;
mod lz4;
mod lzma;
pub mod numeric;
mod packbits;
mod pcodec;
mod registry;
mod scale_offset;
pub mod sharding;
mod shuffle;
mod transpose;
pub mod vlen;
mod zlib;
mod zstd;

pub use crate::zarr::codec::bytes::BytesCodec;
pub use crate::zarr::codec::bytes_to_bytes::BytesToBytes;
pub use crate::zarr::codec::chain::{ArrayToArray, ArrayToBytes, CodecChain, ShardingCodec};
pub use crate::zarr::codec::error::{CodecError, MAX_DECODED_CHUNK_BYTES, element_count};
pub use crate::zarr::codec::registry::parse_v2 as numcodecs_v2;
pub use crate::zarr::codec::sharding::{IndexLocation, InnerChunk, ShardIndex};
pub use crate::zarr::codec::transpose::Transpose;
pub use crate::zarr::codec::vlen::VlenStrings;
