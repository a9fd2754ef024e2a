//! Streamed reads: large outputs sent band by band as they are assembled, with shards of a
//! sharded array fetched a row at a time ahead of the band being decoded, so the first
//! byte leaves after one storage round trip, not all of them.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::ops::budget::Reservation;
use crate::ops::metrics::{self, StreamWait};
use crate::read::assemble::Assembly;
use crate::read::band::{self, Group};
use crate::read::error::ReadError;
use crate::read::fetch::{FETCH_FAN_OUT, Fetch, Ledger};
use crate::read::indexer::{Part, Walk};
use crate::read::object_version::ObjectVersion;
use crate::read::plan::{Layout, rows};
use crate::read::reader::{ArrayReader, Decoded, ReadOutput};
use crate::zarr::codec::ShardingCodec;

/// Rows of shards a pipelined read fetches ahead of the one being decoded.
const PREFETCH_ROWS: usize = 2;

/// Work in a task of its own (a row of shards being fetched, a band being decoded), aborted
/// when dropped (the response went away).
///
/// A future inside the band stream makes progress only while that stream is polled, and it
/// is not polled while a finished band waits for the client to take it: fetched in place,
/// the rows "ahead" were read only between sends, so a slow client or a fast decoder left
/// the prefetch idle. In its own task a row is read (and its bands laid out) meanwhile, and
/// a band is decoded as soon as its row is there.
struct Spawned<T> {
    handle: tokio::task::JoinHandle<Result<T, ReadError>>,
    what: &'static str,
}

impl<T: Send + 'static> Spawned<T> {
    /// `work` started now, in the request's span (errors and panics are logged with its
    /// request id).
    fn start(
        what: &'static str,
        work: impl std::future::Future<Output = Result<T, ReadError>> + Send + 'static,
    ) -> Self {
        Self { handle: tokio::spawn(tracing::Instrument::in_current_span(work)), what }
    }
}

impl<T> std::future::Future for Spawned<T> {
    type Output = Result<T, ReadError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let what = self.what;
        std::pin::Pin::new(&mut self.handle)
            .poll(cx)
            .map(|joined| joined.unwrap_or_else(|e| Err(ReadError::Task(format!("{what} failed: {e}")))))
    }
}

impl<T> Drop for Spawned<T> {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl ArrayReader {
    /// A streamed read of a sharded array, fetching overlapped with decoding and sending:
    /// shards are fetched a row of shards at a time ([`PREFETCH_ROWS`] rows ahead, each in a
    /// task of its own: [`Spawned`]), and
    /// each row's bands are decoded and sent while the next rows are read, instead of
    /// reading every shard before the first byte (the difference between one storage
    /// round trip and all of them before the response starts, over S3).
    ///
    /// The response's validators are the shards' index versions, known before any chunk
    /// is read (from the index cache, or read now); a shard found rewritten when its row
    /// is read ends the body with an error rather than mixing versions under one `ETag`.
    pub(super) async fn read_pipelined(
        &self,
        sharding: &ShardingCodec,
        walk: &Walk,
        layout: Layout,
        reservation: Reservation,
        in_flight: usize,
        assembly_estimate: usize,
    ) -> Result<ReadOutput, ReadError> {
        let parts: Vec<Part> = walk.parts().collect();
        let object_versions = self.object_versions_of(parts.iter().map(|p| p.coords.clone()).collect()).await?;
        let expected: Arc<HashMap<String, ObjectVersion>> = Arc::new(object_versions.iter().cloned().collect());
        let (reader, sharding) = (self.clone(), sharding.clone());
        let groups = futures::stream::iter(rows(parts))
            .map(move |row| {
                let (reader, sharding, layout, expected) =
                    (reader.clone(), sharding.clone(), layout.clone(), Arc::clone(&expected));
                let fetch = async move {
                    reader.fetch_group(&sharding, row, layout, &expected, in_flight, assembly_estimate).await
                };
                Spawned::start("fetching a row of shards", fetch)
            })
            .buffered(PREFETCH_ROWS);
        let data = Decoded::Bands(self.stream_bands(groups, reservation, in_flight));
        Ok(ReadOutput { data, reservation: Reservation::default(), object_versions })
    }

    /// Fetches one row of shards for [`Self::read_pipelined`] and cuts it into bands,
    /// with the memory its bytes and bands need beyond the up-front estimate.
    pub(super) async fn fetch_group(
        &self,
        sharding: &ShardingCodec,
        row: Vec<Part>,
        layout: Layout,
        expected: &HashMap<String, ObjectVersion>,
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

    /// Assembles the bands of `groups` and sends them in order, each as soon as it and
    /// those before it are done. Each band starts decoding as soon as its row of shards is
    /// there, up to `in_flight` bands ahead of the one being sent, whatever the sender is
    /// waiting for. A consumer that takes no band for `stream_idle` (a stalled client) or
    /// goes away ends the work, and the reservation is given back.
    pub(super) fn stream_bands<S>(
        &self,
        groups: S,
        reservation: Reservation,
        in_flight: usize,
    ) -> tokio::sync::mpsc::Receiver<Result<Bytes, ReadError>>
    where
        S: futures::Stream<Item = Result<Group, ReadError>> + Send + 'static,
    {
        // Bands started and not yet sent: those queued here, the one the starter holds
        // while the queue is full and the one being sent make `in_flight`.
        let (started_tx, mut started) = tokio::sync::mpsc::channel(in_flight.saturating_sub(2).max(1));
        let starter = Spawned::start("starting bands", async move {
            let mut bands = std::pin::pin!(
                groups
                    .map_ok(|group| {
                        let group = Arc::new(group);
                        futures::stream::iter(0..group.assembly.bands.len()).map(move |b| Ok((Arc::clone(&group), b)))
                    })
                    .try_flatten()
            );
            while let Some(band) = bands.next().await {
                let failed = band.is_err();
                let band = band.map(|(group, b)| Spawned::start("decoding a band", band::decode(group, b)));
                if started_tx.send(band).await.is_err() || failed {
                    break;
                }
            }
            Ok(())
        });
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let (cache, idle) = (self.chunks.clone(), self.stream_idle);
        let task = async move {
            let (_reservation, _starter) = (reservation, starter);
            loop {
                let waited = std::time::Instant::now();
                let done = match started.recv().await {
                    None => break,
                    Some(Ok(band)) => band.await,
                    Some(Err(e)) => Err(e),
                };
                metrics::stream_waited(StreamWait::Band, waited.elapsed());
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
                let waited = std::time::Instant::now();
                let sent = matches!(tokio::time::timeout(idle, tx.send(item)).await, Ok(Ok(())));
                metrics::stream_waited(StreamWait::Client, waited.elapsed());
                if !sent || failed {
                    return;
                }
            }
        };
        // In the request's span: a panic while assembling is logged with its request id.
        tokio::spawn(tracing::Instrument::in_current_span(task));
        rx
    }
}
