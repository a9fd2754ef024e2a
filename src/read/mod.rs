//! The read path: a resolved selection → the stored chunks it touches → for sharded
//! arrays the inner chunks it needs → byte ranges → decoded, assembled output.
//!
//! Shard indexes come from the [`ShardIndexCache`] (one suffix or prefix range per
//! shard on a miss); the needed inner chunks of a shard are fetched together with one
//! merged range read (with If-Match, so a rewritten shard is never mixed with its old
//! index), or one at a time through the decoded-chunk cache when only a few are needed.
//! Decoding and assembly run on the blocking pool in parallel bands of output rows,
//! every element written once, in contiguous runs: by its chunk, or with the fill value
//! for missing chunks and shards and empty inner chunks.

pub mod cache;
pub mod indexer;
pub mod listing;
pub mod locate;
pub mod selection;
pub mod strings;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use rayon::prelude::*;

use crate::ops::budget::{BudgetError, MemoryBudget, Reservation};
use crate::read::cache::{CachedIndex, ChunkCache, DecodedChunk, MISSING, ObjectKey, ShardIndexCache, VersionCache};
use crate::read::indexer::{Part, Walk};
use crate::read::selection::DimSelection;
use crate::store::{Fetched, Store, StoreError, merged_len, object_version};
use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::codec::{CodecChain, CodecError, IndexLocation, InnerChunk, ShardingCodec};
use crate::zarr::copy::{Region, copy_region, fill_region};
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::ArrayMetadata;
use object_store::GetOptions;

/// Stored chunks (or shards) read concurrently per request.
const FETCH_FAN_OUT: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("stored data in `{key}` is corrupt: {source}")]
    Corrupt {
        key: String,
        #[source]
        source: CodecError,
    },
    #[error("the selection touches {chunks} chunks; at most {limit} are read per request")]
    TooManyChunks { chunks: u128, limit: u64 },
    /// A result whose size is only known while it is read (text) outgrew the response limit.
    #[error("the {what} selected is at least {size} bytes, more than the {limit} bytes allowed per response")]
    TooLarge { what: &'static str, size: u128, limit: u64 },
    #[error("shard `{key}` changed while it was being read")]
    Changed { key: String },
    #[error("a decoding task failed: {0}")]
    Task(String),
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// The failure of a load shared by concurrent requests (single-flight).
    #[error(transparent)]
    Shared(Arc<ReadError>),
}

impl ReadError {
    /// The error of a shared (single-flight) load: the error itself when this caller holds
    /// the last reference, else a shared view of it.
    pub fn unshare(e: Arc<Self>) -> Self {
        Arc::try_unwrap(e).unwrap_or_else(Self::Shared)
    }

    /// Whether the shard changed under the read (possibly reported through a shared load).
    pub fn is_changed(&self) -> bool {
        match self {
            Self::Changed { .. } => true,
            Self::Shared(inner) => inner.is_changed(),
            _ => false,
        }
    }
}

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
    pub versions: VersionCache,
    /// Decoded chunks (hot tiles).
    pub chunks: ChunkCache,
    pub max_chunks: u64,
    /// The memory budget shared by all requests.
    pub budget: MemoryBudget,
    /// How long a streamed body waits for its consumer to take the next band.
    pub stream_idle: std::time::Duration,
}

/// A decoded selection and the versions of the objects it was read from.
#[derive(Debug)]
pub struct ReadOutput {
    pub data: Decoded,
    /// The memory budget held for `data`: keep it until the body is sent (a streamed
    /// body holds its own).
    pub reservation: Reservation,
    /// `(store key, version)` of every stored chunk or shard touched, missing ones as "-",
    /// sorted by key.
    pub versions: Vec<(String, String)>,
}

/// What one stored chunk or shard contributed: its version and the chunks to decode.
struct Fetch {
    key: String,
    version: String,
    jobs: Vec<DecodeJob>,
}

/// A chunk's elements: decoded already (from the cache), still encoded, or never written
/// (a missing chunk or shard, an empty inner chunk) and so the fill value.
enum Source {
    Fill,
    Decoded(Arc<DecodedChunk>),
    /// Encoded bytes; decoded chunks are put in the chunk cache under `cache_key`.
    Encoded {
        bytes: Bytes,
        chain: Arc<CodecChain>,
        cache_key: Option<ObjectKey>,
        version: String,
    },
}

/// A chunk and where its decoded elements go.
struct DecodeJob {
    key: Arc<str>,
    source: Source,
    shape: Vec<u64>,
    part: Part,
}

/// Results up to this size are assembled on the async task when no decoding is needed.
const INLINE_COPY_MAX: usize = 4 << 20;

/// A single chunk of at most this many decoded bytes, with a chain that decodes at
/// hundreds of MB/s ([`CodecChain::decodes_fast`]), is decoded on the async task: at most
/// about a quarter of a millisecond, less than the two thread wake-ups of handing it to
/// rayon and back cost a cold tile in CPU and latency (BENCHMARKS.md).
const INLINE_DECODE_MAX: usize = 256 << 10;

/// Whether a chunk of `shape` encoded with `chain` is decoded on the async task
/// ([`INLINE_DECODE_MAX`]).
fn decodes_inline(chain: &CodecChain, shape: &[u64], data_type: DataType) -> bool {
    shape.iter().product::<u64>().saturating_mul(data_type.size() as u64) <= INLINE_DECODE_MAX as u64
        && chain.decodes_fast()
}

/// Outputs at least this large are streamed band by band when the caller allows it.
pub const STREAM_MIN_BYTES: usize = 4 << 20;

/// Newly decoded chunks to put in the chunk cache.
type Fresh = Vec<(Arc<DecodedChunk>, ObjectKey)>;

/// The elements of one job, decoding them if needed.
fn elements_of(meta: &ArrayMetadata, job: &DecodeJob) -> Result<Option<Arc<DecodedChunk>>, ReadError> {
    match &job.source {
        Source::Fill => Ok(None),
        Source::Decoded(chunk) => Ok(Some(Arc::clone(chunk))),
        Source::Encoded { bytes, chain, version, .. } => chain
            .decode(bytes, &job.shape, meta.data_type, &meta.fill_value)
            .map(|data| Some(Arc::new(DecodedChunk { data: Some(Bytes::from(data)), version: version.clone() })))
            .map_err(|source| ReadError::Corrupt { key: job.key.to_string(), source }),
    }
}

/// Writes one job's share of the output into `band`, which holds output rows
/// `band_start..` along the first dimension (the whole output for 0-d arrays).
fn place(
    meta: &ArrayMetadata,
    layout: &Layout,
    band: &mut [u8],
    band_start: u64,
    job: &DecodeJob,
    chunk: Option<&DecodedChunk>,
) {
    let item = meta.data_type.size();
    let mut dst_shape = layout.shape.clone();
    let mut dst_start = job.part.out.clone();
    if let (Some(rows), Some(first)) = (dst_shape.first_mut(), dst_start.first_mut()) {
        *rows = (band.len() / item) as u64 / layout.shape[1..].iter().product::<u64>().max(1);
        *first -= band_start;
    }
    match chunk.and_then(|c| c.data.as_deref()) {
        Some(data) => {
            let region = Region {
                src_shape: &job.shape,
                src_start: &job.part.start,
                src_step: &layout.steps,
                dst_shape: &dst_shape,
                dst_start: &dst_start,
                count: &job.part.count,
            };
            copy_region(data, band, &region, item);
        }
        // The buffer starts zeroed, so a zero fill value needs no writing.
        None if meta.fill_value.iter().all(|&b| b == 0) => {}
        None => fill_region(band, &dst_shape, &dst_start, &job.part.count, &meta.fill_value),
    }
}

/// Output rows `start..start + rows` along the first dimension, which no job crosses, and
/// the jobs that write them.
#[derive(Debug)]
struct Band {
    start: u64,
    rows: u64,
    members: Vec<usize>,
}

/// Everything needed to assemble the output: the jobs, cut into bands of rows in order
/// (one per chunk row along the first dimension; a missing shard's fill spans the rows of
/// several inner chunks of its neighbours, so bands merge where jobs overlap).
struct Assembly {
    meta: Arc<ArrayMetadata>,
    layout: Layout,
    jobs: Vec<DecodeJob>,
    bands: Vec<Band>,
}

impl Assembly {
    fn new(meta: Arc<ArrayMetadata>, layout: Layout, jobs: Vec<DecodeJob>) -> Self {
        let mut bands: Vec<Band> = Vec::new();
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&i| jobs[i].part.out.first().copied().unwrap_or(0));
        for i in order {
            let start = jobs[i].part.out.first().copied().unwrap_or(0);
            let end = start + jobs[i].part.count.first().copied().unwrap_or(1);
            match bands.last_mut() {
                Some(band) if start < band.start + band.rows => {
                    band.rows = band.rows.max(end - band.start);
                    band.members.push(i);
                }
                _ => bands.push(Band { start, rows: end - start, members: vec![i] }),
            }
        }
        Self { meta, layout, jobs, bands }
    }

    /// Bytes of one output row (the whole output for 0-d arrays).
    fn row_bytes(&self) -> usize {
        self.layout.shape.iter().skip(1).product::<u64>() as usize * self.meta.data_type.size()
    }

    fn band_bytes(&self, band: &Band) -> usize {
        if self.layout.shape.is_empty() { self.row_bytes() } else { band.rows as usize * self.row_bytes() }
    }

    fn all_decoded(&self) -> bool {
        self.jobs.iter().all(|j| !matches!(j.source, Source::Encoded { .. }))
    }

    /// Decodes and places every member of `band` into `buf` (the band's rows). Members
    /// are decoded in parallel groups of one per core, so at most that many decoded
    /// chunks are alive per band.
    fn fill_band(&self, band: &Band, buf: &mut [u8]) -> Result<Fresh, ReadError> {
        let group = rayon::current_num_threads().max(1);
        let mut fresh = Vec::new();
        for members in band.members.chunks(group) {
            let encoded = members.iter().filter(|&&i| matches!(self.jobs[i].source, Source::Encoded { .. })).count();
            if encoded <= 1 {
                for &i in members {
                    self.fill_one(band, buf, i, &mut fresh)?;
                }
                continue;
            }
            let decoded: Vec<Option<Arc<DecodedChunk>>> =
                members.par_iter().map(|&i| elements_of(&self.meta, &self.jobs[i])).collect::<Result<_, _>>()?;
            for (&i, chunk) in members.iter().zip(decoded) {
                self.place_decoded(band, buf, i, chunk, &mut fresh);
            }
        }
        Ok(fresh)
    }

    /// Writes job `i` into `buf` (the rows of `band`): a chunk nobody caches whose
    /// elements are one contiguous run of the band (a whole chunk spanning full output
    /// rows, such as a tile) is decoded straight into place; anything else is decoded on
    /// its own, then copied.
    fn fill_one(&self, band: &Band, buf: &mut [u8], i: usize, fresh: &mut Fresh) -> Result<(), ReadError> {
        let job = &self.jobs[i];
        if let Source::Encoded { bytes, chain, cache_key: None, .. } = &job.source
            && let Some(run) = self.contiguous_run(band, job)
            && let Some(out) = buf.get_mut(run)
        {
            return chain
                .decode_into(bytes, &job.shape, self.meta.data_type, &self.meta.fill_value, out)
                .map_err(|source| ReadError::Corrupt { key: job.key.to_string(), source });
        }
        let chunk = elements_of(&self.meta, job)?;
        self.place_decoded(band, buf, i, chunk, fresh);
        Ok(())
    }

    fn place_decoded(
        &self,
        band: &Band,
        buf: &mut [u8],
        i: usize,
        chunk: Option<Arc<DecodedChunk>>,
        fresh: &mut Fresh,
    ) {
        let job = &self.jobs[i];
        place(&self.meta, &self.layout, buf, band.start, job, chunk.as_deref());
        if let (Source::Encoded { cache_key: Some(key), .. }, Some(chunk)) = (&job.source, chunk) {
            fresh.push((chunk, key.clone()));
        }
    }

    /// The bytes of `band`'s buffer that job `j` fills, when they are one contiguous run
    /// holding the whole chunk in its own order: the job takes every element of its chunk
    /// (step 1), and its chunk spans whole output rows (every dimension but the first is
    /// taken in full by both).
    fn contiguous_run(&self, band: &Band, job: &DecodeJob) -> Option<Range<usize>> {
        let part = &job.part;
        let whole_chunk = job.shape.len() == part.count.len()
            && part.start.iter().all(|&s| s == 0)
            && part.count == job.shape
            && self.layout.steps.iter().all(|&s| s == 1);
        let full_rows = self.layout.shape.iter().zip(&part.count).skip(1).all(|(out, count)| out == count);
        if !(whole_chunk && full_rows) {
            return None;
        }
        let Some((&first, &rows)) = part.out.first().zip(part.count.first()) else {
            return Some(0..self.row_bytes()); // a 0-d array: one element
        };
        let start = usize::try_from(first.checked_sub(band.start)?).ok()?.checked_mul(self.row_bytes())?;
        Some(start..start + rows as usize * self.row_bytes())
    }

    /// Whether the output is exactly the one stored chunk of the only job, in the chunk's
    /// own order: then the chunk's decoded bytes are the output, sent as they are (no
    /// output buffer to zero, no copy).
    fn is_single_chunk(&self) -> bool {
        let ([job], Some(band)) = (self.jobs.as_slice(), self.bands.first()) else { return false };
        job.part.count == self.layout.shape
            && !matches!(job.source, Source::Fill)
            && self.contiguous_run(band, job).is_some_and(|run| run.start == 0)
    }

    /// Assembles the whole output after `reserve` bytes of `data`, the bands in parallel,
    /// every element written once, so no pass over the whole buffer is serial.
    fn whole(&self, mut data: Vec<u8>, reserve: usize) -> Result<(Vec<u8>, Fresh), ReadError> {
        let row_bytes = self.row_bytes();
        let mut slices: Vec<(&Band, &mut [u8])> = Vec::with_capacity(self.bands.len());
        let mut rest = &mut data[reserve..];
        let mut at = 0u64;
        for band in &self.bands {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(((band.start - at) as usize) * row_bytes);
            let (buf, tail) = tail.split_at_mut(self.band_bytes(band).min(tail.len()));
            slices.push((band, buf));
            rest = tail;
            at = band.start + band.rows;
        }
        if let [(band, buf)] = slices.as_mut_slice() {
            let fresh = self.fill_band(band, buf)?;
            return Ok((data, fresh));
        }
        let fresh: Vec<Fresh> =
            slices.into_par_iter().map(|(band, buf)| self.fill_band(band, buf)).collect::<Result<_, ReadError>>()?;
        Ok((data, fresh.into_iter().flatten().collect()))
    }
}

/// Bands to assemble, and the memory held for them (their fetched bytes) until the last
/// one is done.
struct Group {
    assembly: Assembly,
    _reservation: Reservation,
}

/// Rows of shards a pipelined read fetches ahead of the one being decoded.
const PREFETCH_ROWS: usize = 2;

/// The memory one read has reserved while fetching, from concurrent fetches.
type Ledger = std::sync::Mutex<Reservation>;

/// Adds `reservation` to `ledger`.
fn hold(ledger: &Ledger, reservation: Reservation) {
    ledger.lock().unwrap_or_else(std::sync::PoisonError::into_inner).merge(reservation);
}

/// Single-flight per chunk is used when a shard read needs at most this many uncached
/// chunks (hot tiles); larger reads fetch their chunks in coalesced ranges instead.
const SINGLE_FLIGHT_MAX: usize = 4;

/// The shape of the output (full rank: dropped dimensions have length 1) and the steps
/// of the selection.
#[derive(Clone)]
struct Layout {
    shape: Vec<u64>,
    steps: Vec<u64>,
}

/// Decoded output.
pub enum Decoded {
    /// `reserve` header bytes, then the elements.
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
    /// The elements of a read made without a header reserve and without streaming (a
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
    /// The store key of the stored chunk (or shard) at `coords`.
    pub fn chunk_key(&self, coords: &[u64]) -> String {
        let key = self.meta.chunk_key_encoding.encode(coords);
        if self.path.is_empty() { key } else { format!("{}/{key}", self.path) }
    }

    pub(super) fn grid(&self) -> &ChunkGrid {
        &self.meta.chunk_grid
    }

    /// The chunks a selection touches, checked against the limit before any is built:
    /// both the stored chunks (shards) and the read-grid chunks inside them count.
    pub(super) fn walk(&self, selection: &[DimSelection]) -> Result<Walk, ReadError> {
        let walk = Walk::new(self.grid(), selection);
        let mut chunks = walk.count();
        if let Some(inner) = self.meta.read_chunk_shape()
            && let Ok(read_grid) = ChunkGrid::regular(&inner, &self.meta.shape)
        {
            chunks = chunks.max(Walk::new(&read_grid, selection).count());
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
    fn decode_unit_bytes(&self) -> u64 {
        let shape: Vec<u64> = match self.meta.read_chunk_shape() {
            Some(inner) => inner,
            None => self.grid().dims.iter().map(|d| d.distinct_edges().into_iter().max().unwrap_or(1)).collect(),
        };
        shape.iter().product::<u64>().saturating_mul(self.meta.data_type.size() as u64)
    }

    /// The bytes of one streamed band, estimated: the output rows one row of read chunks
    /// covers along the first dimension.
    fn band_estimate(&self, layout: &Layout) -> usize {
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

    /// Reads a resolved selection into little-endian C-order elements: the whole output
    /// after `reserve` zero bytes (room for a header, so the body needs no second copy),
    /// or, when `stream` allows and the output is large, band by band.
    ///
    /// Memory is reserved from the budget before it is used: the decoded chunks (all of
    /// them when they pass through the chunk cache, else one group per core) before
    /// fetching; the fetched bytes and the output (or the bands in flight) after.
    pub async fn read(
        &self,
        selection: &[DimSelection],
        reserve: usize,
        stream: bool,
    ) -> Result<ReadOutput, ReadError> {
        if self.meta.data_type.is_variable() {
            return Err(ReadError::Task("text arrays are read by `read_strings`".into()));
        }
        let shape: Vec<u64> = selection.iter().map(|s| s.count).collect();
        let n: u64 = shape.iter().product();
        let layout = Layout { shape, steps: selection.iter().map(|s| s.step).collect() };
        let out_bytes = reserve + n as usize * self.meta.data_type.size();
        if n == 0 {
            let reservation = self.budget.reserve(out_bytes as u64).await?;
            return Ok(ReadOutput { data: Decoded::Whole(vec![0u8; out_bytes]), reservation, versions: Vec::new() });
        }
        let walk = self.walk(selection)?;
        let concurrent_decodes = if self.chunks.enabled() {
            walk.count()
        } else {
            walk.count().min(2 * rayon::current_num_threads() as u128)
        };
        // Reserved up front: the decoded chunks, and the output (or, when streamed, the
        // bands in flight, estimated as one row of read chunks each). Fetched bytes are
        // reserved as each read learns its length; an underestimated band is topped up.
        let decode_bytes = u128::from(self.decode_unit_bytes()) * concurrent_decodes;
        // Bands are handed over in order and a new one starts only when the oldest is
        // taken, so with one per core (+1) a core idles whenever a band waits for the
        // socket; two per core keep both decoding and sending busy (the large-slice
        // benchmark: 4 % more throughput on 2 cores), for a few more MiB reserved.
        let in_flight = 2 * rayon::current_num_threads() + 2;
        let streams = stream && out_bytes >= STREAM_MIN_BYTES;
        let assembly_estimate = if streams { self.band_estimate(&layout) * in_flight } else { out_bytes };
        let upfront = decode_bytes + assembly_estimate as u128;
        let mut reservation = self.budget.reserve(u64::try_from(upfront).unwrap_or(u64::MAX)).await?;
        if streams && let Some(sharding) = self.meta.sharding() {
            return self.read_pipelined(sharding, &walk, layout, reservation, in_flight, assembly_estimate).await;
        }
        let ledger = Ledger::default();
        let chain = Arc::new(self.meta.codecs.clone());
        let steps = &layout.steps;
        let fetched: Vec<Fetch> = futures::stream::iter(walk.parts())
            .map(|part| async {
                match self.meta.sharding() {
                    Some(sharding) => self.fetch_inner_chunks(sharding, part, steps, &ledger).await,
                    None => self.fetch_chunk(&chain, part, &ledger).await,
                }
            })
            .buffer_unordered(FETCH_FAN_OUT)
            .try_collect()
            .await?;
        let mut versions = Vec::with_capacity(fetched.len());
        let mut jobs = Vec::new();
        for f in fetched {
            if self.meta.sharding().is_none() {
                self.versions.insert((Arc::clone(&self.dataset), f.key.clone()), &f.version).await;
            }
            versions.push((f.key, f.version));
            jobs.extend(f.jobs);
        }
        // Fetches complete in any order; validators must not depend on it.
        versions.sort_unstable();
        reservation.merge(ledger.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner));
        let assembly = Assembly::new(Arc::clone(&self.meta), layout, jobs);
        if streams && assembly.bands.len() > 1 {
            let band_max = assembly.bands.iter().map(|b| assembly.band_bytes(b)).max().unwrap_or(0);
            let more = (band_max * in_flight).saturating_sub(assembly_estimate);
            reservation.merge(self.budget.reserve(more as u64).await?);
            let group = Group { assembly, _reservation: Reservation::default() };
            let data =
                Decoded::Bands(self.stream_bands(futures::stream::once(async { Ok(group) }), reservation, in_flight));
            return Ok(ReadOutput { data, reservation: Reservation::default(), versions });
        }
        if assembly.is_single_chunk() {
            let Assembly { meta, mut jobs, .. } = assembly;
            let job = jobs.swap_remove(0);
            let (chunk, cache_key) = match job.source {
                Source::Decoded(chunk) => (Some(chunk), None),
                Source::Encoded { ref cache_key, ref chain, .. } => {
                    let cache_key = cache_key.clone();
                    let chunk = if decodes_inline(chain, &job.shape, meta.data_type) {
                        elements_of(&meta, &job)?
                    } else {
                        crate::ops::cpu::run(move || elements_of(&meta, &job)).await.map_err(ReadError::Task)??
                    };
                    (chunk, cache_key)
                }
                Source::Fill => (None, None),
            };
            let Some((chunk, data)) = chunk.and_then(|c| c.data.clone().map(|data| (c, data))) else {
                return Err(ReadError::Task("a single-chunk read decoded to nothing".into()));
            };
            if let Some(key) = cache_key {
                self.chunks.insert(key, chunk).await;
            }
            return Ok(ReadOutput { data: Decoded::Elements(data), reservation, versions });
        }
        reservation.merge(self.budget.reserve(out_bytes.saturating_sub(assembly_estimate) as u64).await?);
        // Zeroed memory comes from the allocator untouched; every element is then written
        // exactly once, by its chunk or as fill.
        let data = vec![0u8; out_bytes];
        let (data, decoded) = if assembly.all_decoded() && out_bytes <= INLINE_COPY_MAX {
            // Cached chunks: a small copy is cheaper here than a hop to rayon.
            assembly.whole(data, reserve)?
        } else {
            crate::ops::cpu::run(move || assembly.whole(data, reserve)).await.map_err(ReadError::Task)??
        };
        for (chunk, cache_key) in decoded {
            self.chunks.insert(cache_key, chunk).await;
        }
        Ok(ReadOutput { data: Decoded::Whole(data), reservation, versions })
    }

    /// A streamed read of a sharded array, fetching overlapped with decoding and sending:
    /// shards are fetched a row of shards at a time ([`PREFETCH_ROWS`] rows ahead), and
    /// each row's bands are decoded and sent while the next rows are read, instead of
    /// reading every shard before the first byte (the difference between one storage
    /// round trip and all of them before the response starts, over S3).
    ///
    /// The response's validators are the shards' index versions, known before any chunk
    /// is read (from the index cache, or read now); a shard found rewritten when its row
    /// is read ends the body with an error rather than mixing versions under one `ETag`.
    async fn read_pipelined(
        &self,
        sharding: &ShardingCodec,
        walk: &Walk,
        layout: Layout,
        reservation: Reservation,
        in_flight: usize,
        assembly_estimate: usize,
    ) -> Result<ReadOutput, ReadError> {
        let parts: Vec<Part> = walk.parts().collect();
        let versions = self.versions_of(parts.iter().map(|p| p.coords.clone()).collect()).await?;
        // Rows of shards: the parts sharing their first output row, in output order.
        let mut rows: Vec<Vec<Part>> = Vec::new();
        let mut parts = parts;
        parts.sort_by_key(|p| p.out.first().copied().unwrap_or(0));
        for part in parts {
            match rows.last_mut() {
                Some(row) if row[0].out.first() == part.out.first() => row.push(part),
                _ => rows.push(vec![part]),
            }
        }
        let expected: Arc<std::collections::HashMap<String, String>> = Arc::new(versions.iter().cloned().collect());
        let (reader, sharding) = (self.clone(), sharding.clone());
        let groups = futures::stream::iter(rows)
            .map(move |row| {
                let (reader, sharding, layout, expected) =
                    (reader.clone(), sharding.clone(), layout.clone(), Arc::clone(&expected));
                async move { reader.fetch_group(&sharding, row, layout, &expected, in_flight, assembly_estimate).await }
            })
            .buffered(PREFETCH_ROWS);
        let data = Decoded::Bands(self.stream_bands(groups, reservation, in_flight));
        Ok(ReadOutput { data, reservation: Reservation::default(), versions })
    }

    /// Fetches one row of shards for [`Self::read_pipelined`] and cuts it into bands,
    /// with the memory its bytes and bands need beyond the up-front estimate.
    async fn fetch_group(
        &self,
        sharding: &ShardingCodec,
        row: Vec<Part>,
        layout: Layout,
        expected: &std::collections::HashMap<String, String>,
        in_flight: usize,
        assembly_estimate: usize,
    ) -> Result<Group, ReadError> {
        let ledger = Ledger::default();
        let steps = &layout.steps;
        let fetched: Vec<Fetch> = futures::stream::iter(row)
            .map(|part| self.fetch_inner_chunks(sharding, part, steps, &ledger))
            .buffer_unordered(FETCH_FAN_OUT)
            .try_collect()
            .await?;
        let mut jobs = Vec::new();
        for f in fetched {
            if expected.get(&f.key) != Some(&f.version) {
                return Err(ReadError::Changed { key: f.key });
            }
            jobs.extend(f.jobs);
        }
        let mut reservation = ledger.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        let assembly = Assembly::new(Arc::clone(&self.meta), layout, jobs);
        let band_max = assembly.bands.iter().map(|b| assembly.band_bytes(b)).max().unwrap_or(0);
        reservation.merge(self.budget.reserve((band_max * in_flight).saturating_sub(assembly_estimate) as u64).await?);
        Ok(Group { assembly, _reservation: reservation })
    }

    /// Assembles the bands of `groups` in order, `in_flight` at a time, each sent as soon
    /// as it and those before it are done. A consumer that takes no band for
    /// `stream_idle` (a stalled client) or goes away ends the work, and the reservation
    /// is given back.
    fn stream_bands<S>(
        &self,
        groups: S,
        reservation: Reservation,
        in_flight: usize,
    ) -> tokio::sync::mpsc::Receiver<Result<Bytes, ReadError>>
    where
        S: futures::Stream<Item = Result<Group, ReadError>> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let (cache, idle) = (self.chunks.clone(), self.stream_idle);
        let task = async move {
            let _reservation = reservation;
            let mut bands = std::pin::pin!(
                groups
                    .map_ok(|group| {
                        let group = Arc::new(group);
                        futures::stream::iter(0..group.assembly.bands.len()).map(move |b| Ok((Arc::clone(&group), b)))
                    })
                    .try_flatten()
                    .map(|item: Result<(Arc<Group>, usize), ReadError>| async move {
                        let (group, b) = item?;
                        crate::ops::cpu::run(move || {
                            let assembly = &group.assembly;
                            let band = &assembly.bands[b];
                            let mut buf = vec![0u8; assembly.band_bytes(band)];
                            let fresh = assembly.fill_band(band, &mut buf)?;
                            Ok::<_, ReadError>((Bytes::from(buf), fresh))
                        })
                        .await
                        .map_err(ReadError::Task)?
                    })
                    .buffered(in_flight)
            );
            while let Some(done) = bands.next().await {
                let item = match done {
                    Ok((bytes, fresh)) => {
                        for (chunk, key) in fresh {
                            cache.insert(key, chunk).await;
                        }
                        Ok(bytes)
                    }
                    Err(e) => Err(e),
                };
                let failed = item.is_err();
                if !matches!(tokio::time::timeout(idle, tx.send(item)).await, Ok(Ok(()))) || failed {
                    return;
                }
            }
        };
        // In the request's span: a panic while assembling is logged with its request id.
        tokio::spawn(tracing::Instrument::in_current_span(task));
        rx
    }

    /// The versions a read of `selection` would record, found without reading chunk data:
    /// from the caches when the objects were seen recently (then with no storage request
    /// at all), else from shard indexes (sharded arrays) or HEAD requests. Lets a
    /// conditional request be answered 304 before any chunk is fetched or decoded.
    pub async fn validation_versions(&self, selection: &[DimSelection]) -> Result<Vec<(String, String)>, ReadError> {
        if selection.iter().any(|s| s.count == 0) {
            return Ok(Vec::new());
        }
        let walk = self.walk(selection)?;
        self.versions_of(walk.parts().map(|part| part.coords).collect()).await
    }

    /// The versions of the stored chunks (shards) at `coords`, sorted by key, without
    /// reading chunk data: a shard's from its index (cached, or read now), an unsharded
    /// chunk's from the version cache or a HEAD request.
    async fn versions_of(&self, coords: Vec<Vec<u64>>) -> Result<Vec<(String, String)>, ReadError> {
        let mut versions: Vec<(String, String)> = futures::stream::iter(coords)
            .map(|coords| async move {
                let key = self.chunk_key(&coords);
                let cache_key = (Arc::clone(&self.dataset), key.clone());
                let version = match self.meta.sharding() {
                    Some(sharding) => {
                        let shard_shape = self.grid().chunk_shape(&coords);
                        match self.shard_index(sharding, &key, &shard_shape).await? {
                            Some(index) => index.version.clone(),
                            None => MISSING.to_owned(),
                        }
                    }
                    None => {
                        if let Some(v) = self.versions.get(&cache_key).await {
                            v.to_string()
                        } else {
                            let head = self.store.head(&key).await?;
                            let v = head.map_or_else(|| MISSING.to_owned(), |m| object_version(&m));
                            self.versions.insert(cache_key, &v).await;
                            v
                        }
                    }
                };
                Ok::<_, ReadError>((key, version))
            })
            .buffer_unordered(FETCH_FAN_OUT)
            .try_collect()
            .await?;
        versions.sort_unstable();
        Ok(versions)
    }

    /// A whole stored chunk (unsharded, or a shard whose chain hides byte ranges).
    async fn fetch_chunk(&self, chain: &Arc<CodecChain>, part: Part, ledger: &Ledger) -> Result<Fetch, ReadError> {
        let key = self.chunk_key(&part.coords);
        let shape = self.grid().chunk_shape(&part.coords);
        if !self.chunks.enabled() {
            let Some(object) = self.get_reserved(&key, ledger).await? else {
                let job = DecodeJob { key: key.as_str().into(), source: Source::Fill, shape, part };
                return Ok(Fetch { key, version: MISSING.into(), jobs: vec![job] });
            };
            let source = Source::Encoded {
                bytes: object.bytes,
                chain: Arc::clone(chain),
                cache_key: None,
                version: object.version.clone(),
            };
            let job = DecodeJob { key: key.as_str().into(), source, shape, part };
            return Ok(Fetch { key, version: object.version, jobs: vec![job] });
        }
        // Cached by key: a rewritten chunk is seen once the entry expires (metadata TTL).
        let cache_key = (Arc::clone(&self.dataset), key.clone());
        let chunk = self
            .chunks
            .get_or_load(cache_key, async {
                let Some(object) = self.get_reserved(&key, ledger).await? else {
                    return Ok(Arc::new(DecodedChunk { data: None, version: MISSING.into() }));
                };
                let data = self.decode_off_runtime(&key, object.bytes, Arc::clone(chain), shape.clone()).await?;
                Ok(Arc::new(DecodedChunk { data: Some(Bytes::from(data)), version: object.version }))
            })
            .await
            .map_err(ReadError::unshare)?;
        let version = chunk.version.clone();
        let source = if chunk.data.is_some() { Source::Decoded(chunk) } else { Source::Fill };
        Ok(Fetch { key: key.clone(), version, jobs: vec![DecodeJob { key: key.as_str().into(), source, shape, part }] })
    }

    /// The whole object at `key`, its bytes reserved from the budget (into `ledger`) as
    /// soon as the response says how many there are, before they are read.
    async fn get_reserved(&self, key: &str, ledger: &Ledger) -> Result<Option<Fetched>, ReadError> {
        let Some((object, reservation)) = self.get_budgeted(key).await? else { return Ok(None) };
        hold(ledger, reservation);
        Ok(Some(object))
    }

    /// The whole object at `key`, with its bytes reserved from the budget before they
    /// are read (the reservation is the caller's to hold while it keeps the bytes).
    pub async fn get_budgeted(&self, key: &str) -> Result<Option<(Fetched, Reservation)>, ReadError> {
        let Some(result) = self.store.get_opts(key, GetOptions::default()).await? else { return Ok(None) };
        let reservation = self.budget.reserve(result.range.end - result.range.start).await?;
        Ok(Some((self.store.read_body(key, result).await?, reservation)))
    }

    /// Decodes one chunk: on rayon, or right here when it is small and fast to decode.
    async fn decode_off_runtime(
        &self,
        key: &str,
        bytes: Bytes,
        chain: Arc<CodecChain>,
        shape: Vec<u64>,
    ) -> Result<Vec<u8>, ReadError> {
        let meta = Arc::clone(&self.meta);
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

    /// The index of the shard at `key` with declared `shard_shape`, from the cache.
    pub async fn shard_index(
        &self,
        sharding: &ShardingCodec,
        key: &str,
        shard_shape: &[u64],
    ) -> Result<CachedIndex, ReadError> {
        let cache_key = (Arc::clone(&self.dataset), key.to_owned());
        self.indexes
            .get_or_load(cache_key, async {
                let cps = sharding
                    .chunks_per_shard(shard_shape)
                    .map_err(|source| ReadError::Corrupt { key: key.to_owned(), source })?;
                let size = sharding.index_size(&cps);
                let fetched = match sharding.index_location {
                    IndexLocation::End => self.store.get_suffix(key, size).await?,
                    IndexLocation::Start => self.store.get_prefix(key, size).await?,
                };
                let Some(fetched) = fetched else {
                    return Ok(None);
                };
                if (fetched.bytes.len() as u64) < size {
                    let source = CodecError::corrupt(
                        "sharding_indexed",
                        format!("shard of {} bytes is shorter than its {size}-byte index", fetched.object_size),
                    );
                    return Err(ReadError::Corrupt { key: key.to_owned(), source });
                }
                let mut index = sharding
                    .decode_index(&fetched.bytes, &cps, fetched.object_size)
                    .map_err(|source| ReadError::Corrupt { key: key.to_owned(), source })?;
                index.e_tag = fetched.e_tag;
                index.version = fetched.version;
                Ok(Some(Arc::new(index)))
            })
            .await
            .map_err(ReadError::unshare)
    }

    /// The inner chunks of one shard that `part` needs, read by byte range.
    /// If the shard changes between reading its index and its chunks, the stale index is
    /// dropped and the read retried once.
    async fn fetch_inner_chunks(
        &self,
        sharding: &ShardingCodec,
        part: Part,
        steps: &[u64],
        ledger: &Ledger,
    ) -> Result<Fetch, ReadError> {
        match self.try_fetch_inner_chunks(sharding, &part, steps, ledger).await {
            Err(e) if e.is_changed() => self.try_fetch_inner_chunks(sharding, &part, steps, ledger).await,
            other => other,
        }
    }

    async fn try_fetch_inner_chunks(
        &self,
        sharding: &ShardingCodec,
        part: &Part,
        steps: &[u64],
        ledger: &Ledger,
    ) -> Result<Fetch, ReadError> {
        let key = self.chunk_key(&part.coords);
        let shard_shape = self.grid().chunk_shape(&part.coords);
        let Some(index) = self.shard_index(sharding, &key, &shard_shape).await? else {
            let job =
                DecodeJob { key: key.as_str().into(), source: Source::Fill, shape: Vec::new(), part: part.clone() };
            return Ok(Fetch { key, version: MISSING.into(), jobs: vec![job] });
        };
        let version = index.version.clone();
        let inner_grid =
            ChunkGrid::regular(&sharding.chunk_shape, &shard_shape).map_err(|e| ReadError::Task(e.to_string()))?;
        let inner_selection: Vec<DimSelection> = (0..part.coords.len())
            .map(|d| DimSelection { start: part.start[d], step: steps[d], count: part.count[d], drop: false })
            .collect();
        let inner_walk = Walk::new(&inner_grid, &inner_selection);
        let shared_key: Arc<str> = key.as_str().into();
        let chain = Arc::new(sharding.codecs.clone());
        let shape = sharding.chunk_shape.clone();
        let mut jobs = Vec::new();
        let mut misses: Vec<(Range<u64>, Part, Option<ObjectKey>)> = Vec::new();
        for mut inner in inner_walk.parts() {
            for (o, base) in inner.out.iter_mut().zip(&part.out) {
                *o += base;
            }
            let linear = index.linear(&inner.coords);
            let InnerChunk::Stored { offset, nbytes } = index.chunk(linear) else {
                jobs.push(DecodeJob {
                    key: Arc::clone(&shared_key),
                    source: Source::Fill,
                    shape: Vec::new(),
                    part: inner,
                });
                continue;
            };
            let range = offset..offset + nbytes;
            // The index version is in the key, so a rewritten shard never hits stale entries.
            let cache_key = self
                .chunks
                .enabled()
                .then(|| (Arc::clone(&self.dataset), format!("{key}#{}-{}@{version}", range.start, range.end)));
            match &cache_key {
                Some(k) => match self.chunks.peek(k).await {
                    Some(chunk) => jobs.push(DecodeJob {
                        key: Arc::clone(&shared_key),
                        source: Source::Decoded(chunk),
                        shape: shape.clone(),
                        part: inner,
                    }),
                    None => misses.push((range, inner, cache_key)),
                },
                None => misses.push((range, inner, None)),
            }
        }
        if self.chunks.enabled() && misses.len() <= SINGLE_FLIGHT_MAX {
            // Few chunks (a hot tile): load each through the cache so concurrent requests
            // for the same chunk share one read and one decode.
            for (range, inner, cache_key) in misses {
                let Some(cache_key) = cache_key else { continue };
                let chunk = self
                    .chunks
                    .get_or_load(cache_key, async {
                        hold(ledger, self.budget.reserve(range.end - range.start).await?);
                        let mut parts =
                            self.read_ranges(&key, index.e_tag.as_deref(), std::slice::from_ref(&range)).await?;
                        let bytes = parts.pop().unwrap_or_default();
                        let data = self.decode_off_runtime(&key, bytes, Arc::clone(&chain), shape.clone()).await?;
                        Ok(Arc::new(DecodedChunk { data: Some(Bytes::from(data)), version: version.clone() }))
                    })
                    .await
                    .map_err(ReadError::unshare)?;
                jobs.push(DecodeJob {
                    key: Arc::clone(&shared_key),
                    source: Source::Decoded(chunk),
                    shape: shape.clone(),
                    part: inner,
                });
            }
        } else if !misses.is_empty() {
            // Many chunks: one coalesced read, decoded in parallel with the rest.
            let ranges: Vec<Range<u64>> = misses.iter().map(|(r, ..)| r.clone()).collect();
            for _ in &misses {
                self.chunks.count_miss();
            }
            hold(ledger, self.budget.reserve(merged_len(&ranges)).await?);
            let chunks = self.read_ranges(&key, index.e_tag.as_deref(), &ranges).await?;
            for (bytes, (_, inner, cache_key)) in chunks.into_iter().zip(misses) {
                let source = Source::Encoded { bytes, chain: Arc::clone(&chain), cache_key, version: version.clone() };
                jobs.push(DecodeJob { key: Arc::clone(&shared_key), source, shape: shape.clone(), part: inner });
            }
        }
        Ok(Fetch { key, version, jobs })
    }

    /// Reads ranges of a shard, guarding against the shard changing since its index was
    /// read: where the store gives `ETags`, the ranges are read with If-Match, and a mismatch
    /// drops the stale index and reports [`ReadError::Changed`].
    pub async fn read_ranges(
        &self,
        key: &str,
        e_tag: Option<&str>,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>, ReadError> {
        match self.store.get_ranges(key, ranges, e_tag).await {
            Ok(chunks) => Ok(chunks),
            Err(e) if e.is_precondition() => {
                self.indexes.invalidate(&(Arc::clone(&self.dataset), key.to_owned())).await;
                Err(ReadError::Changed { key: key.to_owned() })
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Read failures as problem documents.
impl From<ReadError> for crate::error::Error {
    fn from(e: ReadError) -> Self {
        crate::error::Error::from(&e)
    }
}

impl From<&ReadError> for crate::error::Error {
    fn from(e: &ReadError) -> Self {
        match e {
            ReadError::Store(s) => s.into(),
            ReadError::Shared(inner) => crate::error::Error::from(inner.as_ref()),
            ReadError::Corrupt {
                key,
                source:
                    source @ (crate::zarr::codec::CodecError::ChunkTooLarge { .. }
                    | crate::zarr::codec::CodecError::IndexTooLarge { .. }),
            } => crate::error::Error::Unsupported(format!("`{key}`: {source}")),
            corrupt @ (ReadError::Corrupt { .. } | ReadError::Changed { .. }) => {
                tracing::warn!(error = %corrupt, "unreadable stored data");
                crate::error::Error::Corrupt(corrupt.to_string())
            }
            too_many @ ReadError::TooManyChunks { .. } => crate::error::Error::TooManyChunks(too_many.to_string()),
            ReadError::TooLarge { what, size, limit } => {
                crate::error::Error::TooLarge { what, size: *size, limit: *limit }
            }
            ReadError::Task(detail) => crate::error::Error::Internal(detail.clone()),
            ReadError::Budget(e) => e.into(),
        }
    }
}
