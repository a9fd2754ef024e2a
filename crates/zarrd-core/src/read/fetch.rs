//! The fetch stage: the bytes a chunk plan needs, from storage or the caches. Whole chunks
//! are read through the decoded-chunk cache (single flight: concurrent requests share one
//! read and one decode); a shard's index by one suffix or prefix range (cached); the inner
//! chunks a read needs by one coalesced range read with If-Match (so a rewritten shard is
//! never mixed with its old index), or, for a few chunks of a hot tile, one at a time
//! through the cache. Every byte read is reserved from the memory budget first. Inner-chunk
//! reads of one shard by concurrent requests are merged (`store/coalesce`).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::GetOptions;

use crate::ops::budget::Reservation;
use crate::read::cache::{CachedIndex, ChunkKey, DecodedChunk};
use crate::read::decode::{DecodeJob, Source, decode_off_runtime, extract, extracts_early};
use crate::read::error::ReadError;
use crate::read::indexer::Part;
use crate::read::object_version::ObjectVersion;
use crate::read::plan::{Inner, inner_parts, shard_plan};
use crate::read::reader::ArrayReader;
use crate::read::selection::DimSelection;
use crate::store::{Fetched, merged_len, object_version};
use crate::zarr::codec::{CodecChain, CodecError, IndexLocation, ShardIndex, ShardingCodec};

/// How a read takes its parts of whole chunks nobody caches.
#[derive(Clone, Copy)]
pub(super) struct Taking<'a> {
    /// The selection's step per dimension.
    pub(super) steps: &'a [u64],
    /// Whether small parts are cut out as their chunks arrive ([`extracts_early`]): for
    /// outputs assembled whole (a streamed one keeps only its bands in flight).
    pub(super) early: bool,
    /// Whether the read has a single chunk (which may then be decoded inline).
    pub(super) one_chunk: bool,
    /// Bytes of the parts cut out so far: they wait beside the output until it is
    /// assembled, reserved together as they grow.
    pub(super) parts: &'a std::sync::atomic::AtomicU64,
}

/// Stored chunks (or shards) read concurrently per request.
pub(super) const FETCH_FAN_OUT: usize = 16;

/// What one stored chunk or shard contributed: its version and the chunks to decode.
pub(super) struct Fetch {
    pub(super) key: String,
    pub(super) version: ObjectVersion,
    pub(super) jobs: Vec<DecodeJob>,
}

/// The memory one read has reserved while fetching, from concurrent fetches.
pub(super) type Ledger = std::sync::Mutex<Reservation>;

/// Adds `reservation` to `ledger`.
pub(super) fn hold(ledger: &Ledger, reservation: Reservation) {
    ledger.lock().unwrap_or_else(std::sync::PoisonError::into_inner).merge(reservation);
}

/// Single-flight per chunk is used when a shard read needs at most this many uncached
/// chunks (hot tiles); larger reads fetch their chunks in coalesced ranges instead.
const SINGLE_FLIGHT_MAX: usize = 4;

impl ArrayReader {
    /// A whole stored chunk (unsharded, or a shard whose chain hides byte ranges).
    pub(super) async fn fetch_chunk(
        &self,
        chain: &Arc<CodecChain>,
        mut part: Part,
        how: Taking<'_>,
        ledger: &Ledger,
    ) -> Result<Fetch, ReadError> {
        let key = self.chunk_key(&part.coords);
        let shape = self.grid().chunk_shape(&part.coords);
        if !self.chunks.enabled() {
            let Some(object) = self.get_reserved(&key, ledger).await? else {
                let job = DecodeJob { key: key.as_str().into(), source: Source::Fill, shape, part };
                return Ok(Fetch { key, version: ObjectVersion::Missing, jobs: vec![job] });
            };
            let version = ObjectVersion::Present(object.version);
            if how.early && extracts_early(&shape, &part) {
                let part_bytes = part.count.iter().product::<u64>() * self.meta.data_type.size() as u64;
                hold(ledger, self.budget.reserve_growth(how.parts, part_bytes).await?);
                let encoded = (key.as_str(), object.bytes, Arc::clone(chain), shape);
                let data = extract(&self.meta, encoded, &part, how.steps, how.one_chunk).await?;
                let chunk = Arc::new(DecodedChunk { data: Some(data), version: version.clone() });
                part.start.fill(0);
                let job = DecodeJob {
                    key: key.as_str().into(),
                    source: Source::Extracted(chunk),
                    shape: part.count.clone(),
                    part,
                };
                return Ok(Fetch { key, version, jobs: vec![job] });
            }
            let source = Source::Encoded {
                bytes: object.bytes,
                chain: Arc::clone(chain),
                cache_key: None,
                version: version.clone(),
            };
            let job = DecodeJob { key: key.as_str().into(), source, shape, part };
            return Ok(Fetch { key, version, jobs: vec![job] });
        }
        // Cached by key: a rewritten chunk is seen once the entry expires (metadata TTL).
        let cache_key = ChunkKey::whole(&self.dataset, &key);
        let chunk = self
            .chunks
            .get_or_load(cache_key, || async {
                let Some(object) = self.get_reserved(&key, ledger).await? else {
                    return Ok(Arc::new(DecodedChunk { data: None, version: ObjectVersion::Missing }));
                };
                let data = decode_off_runtime(&self.meta, &key, object.bytes, Arc::clone(chain), shape.clone()).await?;
                Ok(Arc::new(DecodedChunk { data: Some(Bytes::from(data)), version: object.version.into() }))
            })
            .await
            .map_err(ReadError::unshare)?;
        let version = chunk.version.clone();
        let source = if chunk.data.is_some() { Source::Decoded(chunk) } else { Source::Fill };
        Ok(Fetch { key: key.clone(), version, jobs: vec![DecodeJob { key: key.as_str().into(), source, shape, part }] })
    }

    /// The whole object at `key`, its bytes reserved from the budget (into `ledger`) as
    /// soon as the response says how many there are, before they are read.
    pub(super) async fn get_reserved(&self, key: &str, ledger: &Ledger) -> Result<Option<Fetched>, ReadError> {
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

    /// The index of the shard at `key` with declared `shard_shape`, from the cache.
    pub async fn shard_index(
        &self,
        sharding: &ShardingCodec,
        key: &str,
        shard_shape: &[u64],
    ) -> Result<CachedIndex, ReadError> {
        let cache_key = (Arc::clone(&self.dataset), key.to_owned());
        self.indexes
            .get_or_load(cache_key, || async {
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
    pub(super) async fn fetch_inner_chunks(
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

    pub(super) async fn try_fetch_inner_chunks(
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
            return Ok(Fetch { key, version: ObjectVersion::Missing, jobs: vec![job] });
        };
        let version = ObjectVersion::Present(index.version.clone());
        let inner = inner_parts(&sharding.chunk_shape, &shard_shape, part, steps)
            .map_err(|e| ReadError::Task(e.to_string()))?;
        let shared_key: Arc<str> = key.as_str().into();
        let chain = Arc::new(sharding.codecs.clone());
        let shape = sharding.chunk_shape.clone();
        let plan = shard_plan(inner, |coords| index.chunk(index.linear(coords)));
        let mut jobs = Vec::with_capacity(plan.len());
        let mut misses: Vec<(Range<u64>, Part, Option<ChunkKey>)> = Vec::new();
        for needed in plan {
            let (range, inner) = match needed {
                Inner::Empty(inner) => {
                    let (key, source) = (Arc::clone(&shared_key), Source::Fill);
                    jobs.push(DecodeJob { key, source, shape: Vec::new(), part: inner });
                    continue;
                }
                Inner::Stored(range, inner) => (range, inner),
            };
            // The index version is in the key, so a rewritten shard never hits stale entries.
            let cache_key =
                self.chunks.enabled().then(|| ChunkKey::inner(&self.dataset, &key, range.clone(), &index.version));
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
                    .get_or_load(cache_key, || async {
                        hold(ledger, self.budget.reserve(range.end - range.start).await?);
                        let mut parts = self.read_inner(&key, &index, std::slice::from_ref(&range)).await?;
                        let bytes = parts.pop().unwrap_or_default();
                        let data =
                            decode_off_runtime(&self.meta, &key, bytes, Arc::clone(&chain), shape.clone()).await?;
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
            let chunks = self.read_inner(&key, &index, &ranges).await?;
            for (bytes, (_, inner, cache_key)) in chunks.into_iter().zip(misses) {
                let source = Source::Encoded { bytes, chain: Arc::clone(&chain), cache_key, version: version.clone() };
                jobs.push(DecodeJob { key: Arc::clone(&shared_key), source, shape: shape.clone(), part: inner });
            }
        }
        Ok(Fetch { key, version, jobs })
    }

    /// Reads inner-chunk ranges of the shard at `key`, merged with concurrent requests'
    /// reads of the same version of it that arrive within the coalescing window (when on
    /// for a store of its kind; `store/coalesce`). Each caller gets exactly its ranges'
    /// bytes, which it has reserved.
    async fn read_inner(&self, key: &str, index: &ShardIndex, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, ReadError> {
        let local = self.store.is_local();
        if !self.coalescer.enabled(local) {
            return self.read_ranges(key, index.e_tag.as_deref(), ranges).await;
        }
        let batch = (Arc::clone(&self.dataset), key.to_owned(), index.version.clone());
        let (reader, key, e_tag) = (self.clone(), key.to_owned(), index.e_tag.clone());
        let read =
            move |merged: Vec<Range<u64>>| async move { reader.read_ranges(&key, e_tag.as_deref(), &merged).await };
        self.coalescer.read(batch, local, ranges, read).await
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

    /// The object versions a read of `selection` would record, found without reading chunk data:
    /// from the caches when the objects were seen recently (then with no storage request
    /// at all), else from shard indexes (sharded arrays) or HEAD requests. Lets a
    /// conditional request be answered 304 before any chunk is fetched or decoded.
    pub async fn validation_object_versions(
        &self,
        selection: &[DimSelection],
    ) -> Result<Vec<(String, ObjectVersion)>, ReadError> {
        if selection.iter().any(|s| s.count == 0) {
            return Ok(Vec::new());
        }
        let walk = self.walk(selection)?;
        self.object_versions_of(walk.parts().map(|part| part.coords).collect()).await
    }

    /// The versions of the stored chunks (shards) at `coords`, sorted by key, without
    /// reading chunk data: a shard's from its index (cached, or read now), an unsharded
    /// chunk's from the object-version cache or a HEAD request.
    pub(super) async fn object_versions_of(
        &self,
        coords: Vec<Vec<u64>>,
    ) -> Result<Vec<(String, ObjectVersion)>, ReadError> {
        let mut object_versions: Vec<(String, ObjectVersion)> = futures::stream::iter(coords)
            .map(|coords| async move {
                let key = self.chunk_key(&coords);
                let cache_key = (Arc::clone(&self.dataset), key.clone());
                let version = match self.meta.sharding() {
                    Some(sharding) => {
                        let shard_shape = self.grid().chunk_shape(&coords);
                        match self.shard_index(sharding, &key, &shard_shape).await? {
                            Some(index) => ObjectVersion::Present(index.version.clone()),
                            None => ObjectVersion::Missing,
                        }
                    }
                    None => {
                        if let Some(v) = self.object_versions.get(&cache_key).await {
                            v
                        } else {
                            let head = self.store.head(&key).await?;
                            let v = head.map_or(ObjectVersion::Missing, |m| ObjectVersion::Present(object_version(&m)));
                            self.object_versions.insert(cache_key, v.clone()).await;
                            v
                        }
                    }
                };
                Ok::<_, ReadError>((key, version))
            })
            .buffer_unordered(FETCH_FAN_OUT)
            .try_collect()
            .await?;
        object_versions.sort_unstable();
        Ok(object_versions)
    }
}
