//! The decode stage: a chunk's elements from where the fetch stage found them (the chunk
//! cache, encoded bytes, or nowhere: the fill value), through the codec chain. Small chunks
//! with fast codecs are decoded on the async task, others on the CPU pool.

use std::sync::Arc;

use bytes::Bytes;

use crate::read::cache::{ChunkKey, DecodedChunk};
use crate::read::error::ReadError;
use crate::read::indexer::Part;
use crate::read::object_version::ObjectVersion;
use crate::zarr::codec::CodecChain;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::ArrayMetadata;

/// A chunk's elements: decoded already (from the cache), still encoded, or never written
/// (a missing chunk or shard, an empty inner chunk) and so the fill value.
pub(super) enum Source {
    Fill,
    Decoded(Arc<DecodedChunk>),
    /// Encoded bytes; decoded chunks are put in the chunk cache under `cache_key`.
    Encoded {
        bytes: Bytes,
        chain: Arc<CodecChain>,
        cache_key: Option<ChunkKey>,
        version: ObjectVersion,
    },
}

/// A chunk and where its decoded elements go.
pub(super) struct DecodeJob {
    pub(super) key: Arc<str>,
    pub(super) source: Source,
    pub(super) shape: Vec<u64>,
    pub(super) part: Part,
}

/// A single chunk of at most this many decoded bytes, with a chain that decodes at
/// hundreds of MB/s ([`CodecChain::decodes_fast`]), is decoded on the async task: at most
/// about a quarter of a millisecond, less than the two thread wake-ups of handing it to
/// rayon and back cost a cold tile in CPU and latency (`docs/performance.md`, "Close to
/// the hardware").
pub(super) const INLINE_DECODE_MAX: usize = 256 << 10;

/// Whether a chunk of `shape` encoded with `chain` is decoded on the async task
/// ([`INLINE_DECODE_MAX`]).
pub(super) fn decodes_inline(chain: &CodecChain, shape: &[u64], data_type: DataType) -> bool {
    shape.iter().product::<u64>().saturating_mul(data_type.size() as u64) <= INLINE_DECODE_MAX as u64
        && chain.decodes_fast()
}

/// Newly decoded chunks to put in the chunk cache.
pub(super) type Fresh = Vec<(Arc<DecodedChunk>, ChunkKey)>;

/// The elements of one job, decoding them if needed.
pub(super) fn elements_of(meta: &ArrayMetadata, job: &DecodeJob) -> Result<Option<Arc<DecodedChunk>>, ReadError> {
    match &job.source {
        Source::Fill => Ok(None),
        Source::Decoded(chunk) => Ok(Some(Arc::clone(chunk))),
        Source::Encoded { bytes, chain, version, .. } => chain
            .decode(bytes, &job.shape, meta.data_type, &meta.fill_value)
            .map(|data| Some(Arc::new(DecodedChunk { data: Some(Bytes::from(data)), version: version.clone() })))
            .map_err(|source| ReadError::Corrupt { key: job.key.to_string(), source }),
    }
}

/// Decodes one chunk of `meta`'s array: on rayon, or right here when it is small and fast to decode.
pub(super) async fn decode_off_runtime(
    meta: &Arc<ArrayMetadata>,
    key: &str,
    bytes: Bytes,
    chain: Arc<CodecChain>,
    shape: Vec<u64>,
) -> Result<Vec<u8>, ReadError> {
    let meta = Arc::clone(meta);
    let key = key.to_owned();
    let inline = decodes_inline(&chain, &shape, meta.data_type);
    let decode = move || {
        chain
            .decode(&bytes, &shape, meta.data_type, &meta.fill_value)
            .map_err(|source| ReadError::Corrupt { key, source })
    };
    if inline {
        return decode();
    }
    crate::ops::cpu::run(decode).await.map_err(ReadError::Task)?
}
