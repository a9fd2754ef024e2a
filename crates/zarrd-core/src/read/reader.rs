//! An array ready to be read ([`ArrayReader`]: its metadata, store and caches) and what a
//! read gives back ([`ReadOutput`], [`Decoded`]).

use std::sync::Arc;

use bytes::Bytes;

use crate::ops::budget::{MemoryBudget, Reservation};
use crate::read::cache::{ChunkCache, ObjectVersionCache, ShardIndexCache};
use crate::read::error::ReadError;
use crate::read::indexer::Walk;
use crate::read::object_version::ObjectVersion;
use crate::read::plan::Layout;
use crate::read::selection::DimSelection;
use crate::store::Store;
use crate::store::coalesce::{Coalescer, Windows};
use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::metadata::ArrayMetadata;

/// An array ready to be read: its metadata, where its objects live, and the caches.
#[derive(Clone)]
pub struct ArrayReader {
    pub dataset: Arc<str>,
    pub store: Store,
    /// The array's path in the dataset ("" for a root array).
    pub path: String,
    pub meta: Arc<ArrayMetadata>,
    pub indexes: ShardIndexCache,
    /// Versions of unsharded chunk objects seen by earlier reads.
    pub object_versions: ObjectVersionCache,
    /// Decoded chunks (hot tiles).
    pub chunks: ChunkCache,
    pub max_chunks: u64,
    /// The memory budget shared by all requests.
    pub budget: MemoryBudget,
    /// How long a streamed body waits for its consumer to take the next band.
    pub stream_idle: std::time::Duration,
    /// Inner-chunk reads of concurrent requests merged (`storage.coalesce_window_ms`).
    pub coalescer: Coalescer<ReadError>,
}

/// A decoded selection and the versions of the objects it was read from.
#[derive(Debug)]
pub struct ReadOutput {
    pub data: Decoded,
    /// The memory budget held for `data`: keep it until the body is sent (a streamed
    /// body holds its own).
    pub reservation: Reservation,
    /// `(store key, version)` of every stored chunk or shard touched (missing ones too),
    /// sorted by key.
    pub object_versions: Vec<(String, ObjectVersion)>,
}

/// A selection read whole, never streamed ([`ArrayReader::read_whole`]).
#[derive(Debug)]
pub struct WholeRead {
    /// The elements, owned or shared with the chunk cache.
    pub data: Bytes,
    /// The memory budget held for `data`.
    pub reservation: Reservation,
    /// As [`ReadOutput::object_versions`].
    pub object_versions: Vec<(String, ObjectVersion)>,
}

/// Outputs at least this large are streamed band by band when the caller allows it.
pub const STREAM_MIN_BYTES: usize = 4 << 20;

/// Decoded output.
pub enum Decoded {
    /// `header_room` bytes (for a header), then the elements.
    Whole(Vec<u8>),
    /// The elements alone (no room for a header): the output was exactly one chunk, and
    /// these are its decoded bytes (shared with the chunk cache when it holds them).
    Elements(Bytes),
    /// The elements, a band of rows at a time, assembled as the receiver takes them. The
    /// stream ends early with an error if decoding fails, and is abandoned (freeing its
    /// memory) if the receiver takes no band for the idle timeout.
    Bands(tokio::sync::mpsc::Receiver<Result<Bytes, ReadError>>),
}

impl Decoded {
    /// The elements of a read made without header room and without streaming (a
    /// stream is `None`): owned or shared, as bytes.
    pub fn into_bytes(self) -> Option<Bytes> {
        match self {
            Self::Whole(data) => Some(Bytes::from(data)),
            Self::Elements(data) => Some(data),
            Self::Bands(_) => None,
        }
    }
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Whole(data) => write!(f, "Whole({} bytes)", data.len()),
            Self::Elements(data) => write!(f, "Elements({} bytes)", data.len()),
            Self::Bands(_) => write!(f, "Bands"),
        }
    }
}

impl ArrayReader {
    /// The same array read without the cross-request coalescing window: for planned reads
    /// (label selections, reductions) that already merge their own ranges and would only
    /// wait for other requests — a point's series is one request of a few inner chunks,
    /// where the window (a timer, 2 ms or more) was most of a cold answer's time.
    #[must_use]
    pub fn planned(&self) -> Self {
        Self { coalescer: Coalescer::new(Windows::default()), ..self.clone() }
    }

    /// The store key of the stored chunk (or shard) at `coords`.
    pub fn chunk_key(&self, coords: &[u64]) -> String {
        let key = self.meta.chunk_key_encoding.encode(coords);
        if self.path.is_empty() { key } else { format!("{}/{key}", self.path) }
    }

    pub(crate) fn grid(&self) -> &ChunkGrid {
        &self.meta.chunk_grid
    }

    /// The chunks a selection touches, checked against the limit before any is built:
    /// both the stored chunks (shards) and the read-grid chunks inside them count.
    pub(crate) fn walk(&self, selection: &[DimSelection]) -> Result<Walk, ReadError> {
        let walk = Walk::new(self.grid(), selection);
        let mut chunks = walk.count();
        if self.meta.sharding().is_some() {
            chunks = chunks.max(Walk::new(&self.meta.read_grid(), selection).count());
        }
        if chunks > u128::from(self.max_chunks) {
            return Err(ReadError::TooManyChunks { chunks, limit: self.max_chunks });
        }
        Ok(walk)
    }

    /// Checks, without reading anything, that a read of `selection` stays within the
    /// per-request chunk limit (callers that read a region in several bands check the
    /// whole region first).
    pub fn check_chunks(&self, selection: &[DimSelection]) -> Result<(), ReadError> {
        self.walk(selection).map(drop)
    }

    /// The bytes of one decoded chunk of the read grid (or of a whole stored chunk when
    /// inner chunks cannot be read on their own), at its largest.
    pub(super) fn decode_unit_bytes(&self) -> u64 {
        let shape: Vec<u64> = match self.meta.read_chunk_shape() {
            Some(inner) => inner,
            None => self.grid().dims.iter().map(|d| d.distinct_edges().into_iter().max().unwrap_or(1)).collect(),
        };
        shape.iter().product::<u64>().saturating_mul(self.meta.data_type.size() as u64)
    }

    /// The bytes of one streamed band, estimated: the output rows one row of read chunks
    /// covers along the first dimension.
    pub(super) fn band_estimate(&self, layout: &Layout) -> usize {
        let edge = match self.meta.read_chunk_shape() {
            Some(inner) => inner.first().copied(),
            None => self.grid().dims.first().map(|d| d.distinct_edges().into_iter().max().unwrap_or(1)),
        };
        let (Some(edge), Some(&rows), Some(&step)) = (edge, layout.shape.first(), layout.steps.first()) else {
            return 0;
        };
        let row_bytes = layout.shape[1..].iter().product::<u64>() * self.meta.data_type.size() as u64;
        (rows.min(edge.div_ceil(step.max(1))) * row_bytes) as usize
    }
}
