//! The read path, in stages: a resolved selection (`selection`) → the chunk plan, pure
//! (`indexer`, `plan`) → fetch (`fetch`: caches, coalesced ranges, single flight, the
//! memory budget) → decode (`decode`) → assemble (`assemble`), whole or streamed
//! (`stream`). [`ArrayReader::read`] here runs them; `strings` reads text arrays, `listing`
//! lists chunks, `locate` finds one chunk's bytes.
//! Each stage's module says how it works; docs/ARCHITECTURE.md follows a request through
//! them.

mod assemble;
mod band;
pub mod cache;
pub mod chunk;
mod decode;
mod error;
mod fetch;
pub mod indexer;
pub mod listing;
pub mod locate;
pub mod object_version;
pub mod plan;
mod reader;
pub mod selection;
mod stream;
pub mod strings;

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

pub use self::error::ReadError;
pub use self::object_version::ObjectVersion;
pub use self::reader::{ArrayReader, Decoded, ReadOutput, STREAM_MIN_BYTES, WholeRead};
use crate::ops::budget::Reservation;
use crate::read::assemble::{Assembly, INLINE_COPY_MAX};
use crate::read::band::Group;
use crate::read::decode::{DecodeJob, Source, decodes_inline, elements_of};
use crate::read::fetch::{FETCH_FAN_OUT, Fetch, Ledger, Taking};
use crate::read::indexer::Walk;
use crate::read::plan::Layout;
use crate::read::selection::DimSelection;

impl ArrayReader {
    /// Reads a resolved selection whole (no header room, never streamed): what every
    /// reader but the slice route wants, without each checking for bands it never gets.
    pub async fn read_whole(&self, selection: &[DimSelection]) -> Result<WholeRead, ReadError> {
        let output = self.read(selection, 0, false).await?;
        let data =
            output.data.into_bytes().ok_or_else(|| ReadError::Task("a read without streaming gave bands".into()))?;
        Ok(WholeRead { data, reservation: output.reservation, object_versions: output.object_versions })
    }

    /// Reads a resolved selection into little-endian C-order elements: the whole output
    /// after `header_room` zero bytes (room for a header, so the body needs no second copy),
    /// or, when `stream` allows and the output is large, band by band.
    ///
    /// Memory is reserved from the budget before it is used: the decoded chunks (all of
    /// them when they pass through the chunk cache, else one group per core) before
    /// fetching; the fetched bytes and the output (or the bands in flight) after.
    pub async fn read(
        &self,
        selection: &[DimSelection],
        header_room: usize,
        stream: bool,
    ) -> Result<ReadOutput, ReadError> {
        if self.meta.data_type.is_variable() {
            return Err(ReadError::Task("text arrays are read by `read_strings`".into()));
        }
        let layout = Layout::of(selection);
        let n: u64 = layout.shape.iter().product();
        let out_bytes = header_room + n as usize * self.meta.data_type.size();
        if n == 0 {
            let reservation = self.budget.reserve(out_bytes as u64).await?;
            return Ok(ReadOutput {
                data: Decoded::Whole(vec![0u8; out_bytes]),
                reservation,
                object_versions: Vec::new(),
            });
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
        let parts = std::sync::atomic::AtomicU64::new(0);
        let taking = Taking { steps: &layout.steps, early: !streams, one_chunk: walk.count() == 1, parts: &parts };
        let (jobs, object_versions) = self.fetch_walk(&walk, taking, &ledger).await?;
        reservation.merge(ledger.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner));
        let assembly = Assembly::new(Arc::clone(&self.meta), layout, jobs);
        if streams && assembly.bands.len() > 1 {
            let band_max = assembly.bands.iter().map(|b| assembly.band_bytes(b)).max().unwrap_or(0);
            let more = (band_max * in_flight).saturating_sub(assembly_estimate);
            reservation.merge(self.budget.reserve(more as u64).await?);
            let group = Group { assembly, _reservation: Reservation::default() };
            let data =
                Decoded::Bands(self.stream_bands(futures::stream::once(async { Ok(group) }), reservation, in_flight));
            return Ok(ReadOutput { data, reservation: Reservation::default(), object_versions });
        }
        if assembly.is_single_chunk() {
            let Assembly { meta, mut jobs, .. } = assembly;
            let job = jobs.swap_remove(0);
            let (chunk, cache_key) = match job.source {
                Source::Decoded(chunk) | Source::Extracted(chunk) => (Some(chunk), None),
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
            return Ok(ReadOutput { data: Decoded::Elements(data), reservation, object_versions });
        }
        reservation.merge(self.budget.reserve(out_bytes.saturating_sub(assembly_estimate) as u64).await?);
        // Zeroed memory comes from the allocator untouched; every element is then written
        // exactly once, by its chunk or as fill.
        let data = vec![0u8; out_bytes];
        let (data, decoded) = if assembly.all_decoded() && out_bytes <= INLINE_COPY_MAX {
            // Cached chunks: a small copy is cheaper here than a hop to rayon.
            assembly.whole(data, header_room, false)?
        } else {
            crate::ops::cpu::run(move || assembly.whole(data, header_room, true)).await.map_err(ReadError::Task)??
        };
        for (chunk, cache_key) in decoded {
            self.chunks.insert(cache_key, chunk).await;
        }
        Ok(ReadOutput { data: Decoded::Whole(data), reservation, object_versions })
    }

    /// Fetches every chunk of `walk` (a few at a time, in any order), reserving what is
    /// read into `ledger`: the decode jobs, and the versions of the objects read, sorted
    /// (validators must not depend on the order fetches complete in).
    async fn fetch_walk(
        &self,
        walk: &Walk,
        taking: Taking<'_>,
        ledger: &Ledger,
    ) -> Result<(Vec<DecodeJob>, Vec<(String, ObjectVersion)>), ReadError> {
        let chain = Arc::new(self.meta.codecs.clone());
        let fetch = |part| async {
            match self.meta.sharding() {
                Some(sharding) => self.fetch_inner_chunks(sharding, part, taking.steps, ledger).await,
                None => self.fetch_chunk(&chain, part, taking, ledger).await,
            }
        };
        let fetched: Vec<Fetch> = if walk.count() == 1 {
            // One shard or chunk (a point's series, a tile): awaited on its own. A stream of
            // one cost a fifth of a cached point series' instructions (moving its large
            // futures into and out of the stream; docs/performance.md). Boxed, as in the
            // stream: inline, its ~27 KiB would swell every future that awaits a read.
            vec![Box::pin(fetch(walk.part(0))).await?]
        } else {
            futures::stream::iter(walk.parts()).map(fetch).buffer_unordered(FETCH_FAN_OUT).try_collect().await?
        };
        let mut object_versions = Vec::with_capacity(fetched.len());
        let mut jobs = Vec::with_capacity(fetched.iter().map(|f| f.jobs.len()).sum());
        for f in fetched {
            if self.meta.sharding().is_none() {
                self.object_versions.record((Arc::clone(&self.dataset), f.key.clone()), f.version.clone()).await;
            }
            object_versions.push((f.key, f.version));
            jobs.extend(f.jobs);
        }
        object_versions.sort_unstable();
        Ok((jobs, object_versions))
    }
}
