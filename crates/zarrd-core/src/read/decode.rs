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
use crate::zarr::copy::{Region, copy_region};
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::ArrayMetadata;

/// A chunk's elements: decoded already (from the cache), still encoded, or never written
/// (a missing chunk or shard, an empty inner chunk) and so the fill value.
pub(super) enum Source {
    Fill,
    Decoded(Arc<DecodedChunk>),
    /// Only the elements the read takes, decoded and cut out as the chunk arrived (see
    /// [`extracts_early`]): the job's `shape` is its part's `count`, its `start` zeros,
    /// and its elements are consecutive (step 1 in every dimension).
    Extracted(Arc<DecodedChunk>),
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

/// Whether a fetched chunk nobody caches is decoded as soon as it arrives and only its
/// part kept ([`Source::Extracted`]), rather than kept encoded until the whole read has
/// been fetched: when the part is at most a quarter of the chunk (a point's series
/// through map-major chunks takes one element of each). Decoding then overlaps the
/// fetching of the next chunks, and at most a part's elements stay alive per chunk
/// instead of its encoded bytes. Larger parts are decoded straight into the output later,
/// which needs no second copy.
pub(super) fn extracts_early(shape: &[u64], part: &Part) -> bool {
    part.count.iter().product::<u64>().saturating_mul(4) <= shape.iter().product::<u64>()
}

/// Decodes `bytes` (a chunk of `shape`) and cuts out `part` taken with `steps`, in the
/// form [`Source::Extracted`] describes. On rayon, unless the read has `one_chunk` and it
/// decodes inline: the chunks of a larger read are decoded side by side on the pool
/// while the request's task goes on fetching.
pub(super) async fn extract(
    meta: &Arc<ArrayMetadata>,
    (key, bytes, chain, shape): (&str, Bytes, Arc<CodecChain>, Vec<u64>),
    part: &Part,
    steps: &[u64],
    one_chunk: bool,
) -> Result<Bytes, ReadError> {
    let (meta, key, part, steps) = (Arc::clone(meta), key.to_owned(), part.clone(), steps.to_vec());
    let inline = one_chunk && decodes_inline(&chain, &shape, meta.data_type);
    off_runtime(inline, move || {
        let data = chain
            .decode(&bytes, &shape, meta.data_type, &meta.fill_value)
            .map_err(|source| ReadError::Corrupt { key, source })?;
        let item = meta.data_type.size();
        let n = part.count.iter().product::<u64>() as usize;
        let mut out = vec![0u8; n * item];
        let zeros = vec![0; part.count.len()];
        let region = Region {
            src_shape: &shape,
            src_start: &part.start,
            src_step: &steps,
            dst_shape: &part.count,
            dst_start: &zeros,
            count: &part.count,
        };
        copy_region(&data, &mut out, &region, item);
        Ok(Bytes::from(out))
    })
    .await
}

/// Runs `work` right here when `inline`, else on the CPU pool.
async fn off_runtime<T: Send + 'static>(
    inline: bool,
    work: impl FnOnce() -> Result<T, ReadError> + Send + 'static,
) -> Result<T, ReadError> {
    if inline {
        return work();
    }
    crate::ops::cpu::run(work).await.map_err(ReadError::Task)?
}

/// Newly decoded chunks to put in the chunk cache.
pub(super) type Fresh = Vec<(Arc<DecodedChunk>, ChunkKey)>;

/// The elements of one job, decoding them if needed.
pub(super) fn elements_of(meta: &ArrayMetadata, job: &DecodeJob) -> Result<Option<Arc<DecodedChunk>>, ReadError> {
    match &job.source {
        Source::Fill => Ok(None),
        Source::Decoded(chunk) | Source::Extracted(chunk) => Ok(Some(Arc::clone(chunk))),
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
    off_runtime(inline, move || {
        chain
            .decode(&bytes, &shape, meta.data_type, &meta.fill_value)
            .map_err(|source| ReadError::Corrupt { key, source })
    })
    .await
}
