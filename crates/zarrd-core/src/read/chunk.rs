//! One chunk of the read grid (the innermost chunks of a sharded array, the stored chunks
//! otherwise) on its own: its bytes as stored, cut from their shard, or decoded and clipped
//! to the array. What a client asking for a single chunk gets, raw or decoded.

use std::ops::Range;

use bytes::Bytes;

use crate::ops::budget::Reservation;
use crate::read::error::ReadError;
use crate::read::locate::Located;
use crate::read::reader::ArrayReader;
use crate::read::strings;
use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::copy::{Region, copy_region};

/// A read-grid chunk's encoded bytes and where they came from.
#[derive(Debug)]
pub struct StoredChunk {
    /// The store key of the object holding it (its shard, for an inner chunk).
    pub key: String,
    /// The byte range within its shard, when cut from one.
    pub range: Option<Range<u64>>,
    pub bytes: Bytes,
    /// The version of the object read (its `ETag`, else size and time).
    pub version: String,
    /// The memory budget held for `bytes`.
    pub reservation: Reservation,
}

/// The shapes of one read-grid chunk: as encoded, and clipped to the array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkShapes {
    /// The shape the codecs see.
    pub chunk: Vec<u64>,
    /// The part inside the array.
    pub data: Vec<u64>,
}

impl ChunkShapes {
    /// The shapes of chunk `coords` of `grid` (the array's read grid).
    pub fn of(grid: &ChunkGrid, coords: &[u64]) -> Self {
        Self { chunk: grid.chunk_shape(coords), data: grid.data_shape(coords) }
    }
}

/// Why a read-grid chunk has no stored bytes: it reads as the fill value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Absent {
    #[error("chunk `{0}` is missing (it reads as the fill value)")]
    Object(String),
    #[error("shard `{0}` is missing (the chunk reads as the fill value)")]
    Shard(String),
    #[error("the chunk is marked empty in shard `{0}` (it reads as the fill value)")]
    Empty(String),
}

impl ArrayReader {
    /// Read-grid chunk `coords` as stored, its bytes reserved from the budget before they
    /// are read. A shard rewritten between reading its index and its bytes is read again
    /// once.
    pub async fn stored_chunk(&self, coords: &[u64]) -> Result<Result<StoredChunk, Absent>, ReadError> {
        match self.fetch_stored(coords).await {
            Err(e) if e.is_changed() => self.fetch_stored(coords).await,
            other => other,
        }
    }

    async fn fetch_stored(&self, coords: &[u64]) -> Result<Result<StoredChunk, Absent>, ReadError> {
        Ok(match self.locate(coords).await? {
            Located::Object { key } => match self.get_budgeted(&key).await? {
                Some((object, reservation)) => {
                    Ok(StoredChunk { key, range: None, bytes: object.bytes, version: object.version, reservation })
                }
                None => Err(Absent::Object(key)),
            },
            Located::MissingShard { key } => Err(Absent::Shard(key)),
            Located::Empty { key } => Err(Absent::Empty(key)),
            Located::InShard { key, range, e_tag, version } => {
                let reservation = self.budget.reserve(range.end - range.start).await?;
                let mut parts = self.read_ranges(&key, e_tag.as_deref(), std::slice::from_ref(&range)).await?;
                let bytes = parts.pop().unwrap_or_default();
                Ok(StoredChunk { key, range: Some(range), bytes, version, reservation })
            }
        })
    }

    /// The memory decoding a chunk of `shapes` of a fixed-size type takes (the chunk
    /// decoded whole, and its copy clipped to the array), to reserve before it is read.
    pub fn decoded_chunk_bytes(&self, shapes: &ChunkShapes) -> u64 {
        let item = self.meta.data_type.size() as u64;
        (shapes.chunk.iter().product::<u64>() + shapes.data.iter().product::<u64>()) * item
    }

    /// A stored chunk of `shapes` of a fixed-size type, decoded on the CPU pool and
    /// clipped to the array (C order).
    pub async fn decode_chunk(&self, chunk: &StoredChunk, shapes: &ChunkShapes) -> Result<Vec<u8>, ReadError> {
        let (chunk_shape, clipped) = (shapes.chunk.clone(), shapes.data.clone());
        let (meta, chain, bytes, key) =
            (std::sync::Arc::clone(&self.meta), self.read_chain().clone(), chunk.bytes.clone(), chunk.key.clone());
        crate::ops::cpu::run(move || {
            let full = chain
                .decode(&bytes, &chunk_shape, meta.data_type, &meta.fill_value)
                .map_err(|source| ReadError::Corrupt { key, source })?;
            if clipped == chunk_shape {
                return Ok(full);
            }
            let item = meta.data_type.size();
            let mut out = vec![0u8; clipped.iter().product::<u64>() as usize * item];
            let (zeros, ones) = (vec![0; chunk_shape.len()], vec![1; chunk_shape.len()]);
            let region = Region {
                src_shape: &chunk_shape,
                src_start: &zeros,
                src_step: &ones,
                dst_shape: &clipped,
                dst_start: &zeros,
                count: &clipped,
            };
            copy_region(&full, &mut out, &region, item);
            Ok(out)
        })
        .await
        .map_err(ReadError::Task)?
    }

    /// A stored chunk of `shapes` of a variable-length type (text, bytes), decoded and
    /// clipped to the array, its elements in C order. The decode buffer is reserved from what the
    /// chunk's compressor records, and the clipped elements (at most `limit` bytes, else
    /// `TooLarge`) before they are made; both are held in `held`.
    pub async fn decode_text_chunk(
        &self,
        chunk: &StoredChunk,
        shapes: &ChunkShapes,
        limit: u64,
        held: &mut Reservation,
    ) -> Result<Vec<Box<[u8]>>, ReadError> {
        let (chunk_shape, clipped_shape) = (&shapes.chunk, &shapes.data);
        let chain = self.read_chain().clone();
        let elements = chunk_shape.iter().product::<u64>();
        let cost = strings::decode_cost(&chain, &chunk.bytes, elements, limit.min(self.budget.total() / 4));
        let scratch = self.budget.reserve(cost.reserve).await?;
        let (bytes, key, task_shape) = (chunk.bytes.clone(), chunk.key.clone(), chunk_shape.clone());
        let decoded = crate::ops::cpu::run(move || strings::decode_chunk(&chain, &bytes, &task_shape, cost, &key))
            .await
            .map_err(ReadError::Task)??;
        let n = clipped_shape.iter().product::<u64>();
        let size = strings::clipped_text_bytes(&decoded, chunk_shape, clipped_shape) + n * strings::ELEMENT_BYTES;
        if size > limit {
            return Err(ReadError::TooLarge { what: "text", size: u128::from(size), limit });
        }
        held.merge(self.budget.reserve(size).await?);
        let clipped = strings::clip(&decoded, chunk_shape, clipped_shape);
        drop((decoded, scratch));
        Ok(clipped)
    }
}
