//! Inner-chunk reads coalesced across concurrent requests. A map or deep-zoom viewer asks
//! for a whole viewport at once, each tile a request of its own; read one by one, each
//! tile's inner chunk would be a storage request. Here the first read of a shard (one
//! version of it) opens a batch and waits a short window while concurrent reads of the
//! same shard join it; then the batch's ranges are read together, merged by the same gap
//! rule as the ranges of one request ([`crate::store::merged_count`]), and each reader gets
//! exactly its own ranges' bytes (slices of the merged reads, not copies).
//!
//! Only reads of remote objects wait by default: a storage request there costs a round
//! trip (tens of ms), and a window of 2 ms saves most of a viewport's requests. A file on
//! this machine is read in microseconds; holding its reads only added the window (a timer:
//! 3 ms in practice) to every cold tile of a local dataset — 3.6 ms where the read and
//! decode took 0.5 ms ([`Windows`]).
//!
//! The batch is read by a task of its own, so a reader that goes away (its client
//! disconnected) never strands the others; a failed read fails every reader of the batch
//! with the same error (shared), so a changed shard is retried by each as before.
//!
//! Generic over the error of the reads: the array reader's errors for shards, and
//! `object_store` errors for the files that virtual datasets reference.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::ops::metrics;
use crate::store::merged_count;

/// What may be read together: one version of one object (a shard) of one dataset.
pub type BatchKey = (Arc<str>, String, String);

type Outcome<E> = Result<Vec<Bytes>, Arc<E>>;

/// The errors a batch's readers may be given.
pub trait BatchError: Send + Sync + Sized + 'static {
    /// The batch's read returned fewer parts than it was asked for.
    fn short(key: &str) -> Self;
    /// The batch's task went away before answering.
    fn abandoned() -> Self;
    /// One reader's copy of the batch's (shared) error.
    fn unshare(shared: Arc<Self>) -> Self;
}

struct Batch<E> {
    ranges: Vec<Range<u64>>,
    /// Each reader's share of `ranges` (as indexes) and where its bytes go.
    readers: Vec<(Range<usize>, oneshot::Sender<Outcome<E>>)>,
}

impl<E> Default for Batch<E> {
    fn default() -> Self {
        Self { ranges: Vec::new(), readers: Vec::new() }
    }
}

/// How long a batch stays open, by where its object is; zero: reads go at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Windows {
    /// Objects of object stores and web servers (`storage.coalesce_window_ms`).
    pub remote: Duration,
    /// Files on this machine (`storage.local_coalesce_window_ms`).
    pub local: Duration,
}

impl Windows {
    /// The window for an object on this machine (`local`) or elsewhere.
    pub fn of(&self, local: bool) -> Duration {
        if local { self.local } else { self.remote }
    }
}

/// The open batches, shared by every reader of the catalog.
pub struct Coalescer<E> {
    windows: Windows,
    open: Arc<Mutex<HashMap<BatchKey, Batch<E>>>>,
}

impl<E> Clone for Coalescer<E> {
    fn clone(&self) -> Self {
        Self { windows: self.windows, open: Arc::clone(&self.open) }
    }
}

impl<E: BatchError> Coalescer<E> {
    /// Reads arriving within the window of a batch's first are merged.
    pub fn new(windows: Windows) -> Self {
        Self { windows, open: Arc::default() }
    }

    /// Whether reads of an object on this machine (`local`) or elsewhere wait for others.
    /// Callers ask first so that a read that goes at once builds no batch key and clones
    /// nothing for a batch's task; [`Self::read`] also reads at once without a window.
    pub fn enabled(&self, local: bool) -> bool {
        !self.windows.of(local).is_zero()
    }

    /// The bytes of `ranges` of the object `key` names (on this machine when `local`), in
    /// order. The batch's first reader supplies `read` (its ranges in, their bytes in
    /// order out), run once for the whole batch after the window; the others' `read` is
    /// dropped unused. Without a window, `read` is run at once for these ranges alone.
    pub async fn read<F, Fut>(
        &self,
        key: BatchKey,
        local: bool,
        ranges: &[Range<u64>],
        read: F,
    ) -> Result<Vec<Bytes>, E>
    where
        F: FnOnce(Vec<Range<u64>>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Vec<Bytes>, E>> + Send + 'static,
    {
        let window = self.windows.of(local);
        if window.is_zero() {
            return read(ranges.to_vec()).await;
        }
        let (tx, rx) = oneshot::channel();
        let first = {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            let mut first = false;
            let batch = open.entry(key.clone()).or_insert_with(|| {
                first = true;
                Batch::default()
            });
            let start = batch.ranges.len();
            batch.ranges.extend_from_slice(ranges);
            batch.readers.push((start..batch.ranges.len(), tx));
            first
        };
        if first {
            let open = Arc::clone(&self.open);
            tokio::spawn(async move {
                tokio::time::sleep(window).await;
                // Closed before it is read: later readers open the next batch.
                let Batch { ranges, readers } =
                    open.lock().unwrap_or_else(PoisonError::into_inner).remove(&key).unwrap_or_default();
                metrics::coalesced(ranges.len() as u64, merged_count(&ranges) as u64);
                let outcome = read(ranges).await.map_err(Arc::new);
                for (share, tx) in readers {
                    let mine = match &outcome {
                        Ok(parts) => parts.get(share).map(<[Bytes]>::to_vec).ok_or_else(|| Arc::new(E::short(&key.1))),
                        Err(e) => Err(Arc::clone(e)),
                    };
                    // A reader that went away takes nothing.
                    let _ = tx.send(mine);
                }
            });
        }
        match rx.await {
            Ok(Ok(parts)) => Ok(parts),
            Ok(Err(e)) => Err(E::unshare(e)),
            Err(_) => Err(E::abandoned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors of the reads here.
    #[derive(Debug, PartialEq)]
    enum ReadError {
        Changed,
        Other(String),
    }

    impl BatchError for ReadError {
        fn short(key: &str) -> Self {
            Self::Other(format!("short {key}"))
        }
        fn abandoned() -> Self {
            Self::Other("abandoned".into())
        }
        fn unshare(shared: Arc<Self>) -> Self {
            match &*shared {
                Self::Changed => Self::Changed,
                Self::Other(s) => Self::Other(s.clone()),
            }
        }
    }

    /// Remote reads wait 20 ms for others; local ones go at once (the defaults' shape).
    fn coalescer() -> Coalescer<ReadError> {
        Coalescer::new(Windows { remote: Duration::from_millis(20), local: Duration::ZERO })
    }

    fn key() -> BatchKey {
        ("ds".into(), "a/c/0".into(), "v1".into())
    }

    /// Reads of a fake object whose byte `i` is `i % 251`, counting the calls.
    fn fake(
        calls: &Arc<std::sync::atomic::AtomicU32>,
    ) -> impl FnOnce(Vec<Range<u64>>) -> futures::future::Ready<Result<Vec<Bytes>, ReadError>> + Send + 'static {
        let calls = Arc::clone(calls);
        move |ranges| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            futures::future::ready(Ok(ranges
                .iter()
                .map(|r| (r.start..r.end).map(|i| (i % 251) as u8).collect())
                .collect()))
        }
    }

    #[tokio::test]
    async fn concurrent_reads_share_one_read_and_each_gets_its_bytes() {
        let coalescer = coalescer();
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let wanted: Vec<Vec<Range<u64>>> = vec![vec![0..10], vec![300..400, 10..20], vec![5..7], vec![]];
        let reads = wanted.iter().map(|ranges| coalescer.read(key(), false, ranges, fake(&calls)));
        let got = futures::future::join_all(reads).await;
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        for (ranges, got) in wanted.iter().zip(got) {
            let got = got.unwrap();
            assert_eq!(got.len(), ranges.len());
            for (r, bytes) in ranges.iter().zip(got) {
                let want: Vec<u8> = (r.start..r.end).map(|i| (i % 251) as u8).collect();
                assert_eq!(bytes.as_ref(), want.as_slice());
            }
        }
        // Another version of the object is another batch.
        let other = ("ds".into(), "a/c/0".into(), "v2".into());
        let (a, b) = tokio::join!(
            coalescer.read(key(), false, std::slice::from_ref(&(0..1)), fake(&calls)),
            coalescer.read(other, false, std::slice::from_ref(&(0..1)), fake(&calls))
        );
        assert_eq!((a.unwrap().len(), b.unwrap().len()), (1, 1));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_failed_read_fails_every_reader_alike() {
        let coalescer = coalescer();
        let changed = |_: Vec<Range<u64>>| futures::future::ready(Err(ReadError::Changed));
        let (a, b) = tokio::join!(
            coalescer.read(key(), false, std::slice::from_ref(&(0..1)), changed),
            coalescer.read(key(), false, std::slice::from_ref(&(1..2)), changed)
        );
        assert_eq!(a.unwrap_err(), ReadError::Changed);
        assert_eq!(b.unwrap_err(), ReadError::Changed);
    }

    #[tokio::test]
    async fn reads_of_local_files_go_at_once_unless_given_a_window() {
        let wanted: Vec<Vec<Range<u64>>> = vec![vec![0..10], vec![10..20], vec![5..7]];
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let default = coalescer();
        assert!(default.enabled(false) && !default.enabled(true));
        let reads = wanted.iter().map(|ranges| default.read(key(), true, ranges, fake(&calls)));
        let got = futures::future::join_all(reads).await;
        // One read each, none held: three calls, each with its own ranges only.
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 3);
        for (ranges, got) in wanted.iter().zip(got) {
            let want: Vec<Vec<u8>> =
                ranges.iter().map(|r| (r.start..r.end).map(|i| (i % 251) as u8).collect()).collect();
            assert_eq!(got.unwrap(), want);
        }
        // A local window (a network file system) merges them like remote reads.
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let windows = Windows { remote: Duration::ZERO, local: Duration::from_millis(20) };
        let nfs = Coalescer::<ReadError>::new(windows);
        assert!(nfs.enabled(true) && !nfs.enabled(false));
        let reads = wanted.iter().map(|ranges| nfs.read(key(), true, ranges, fake(&calls)));
        assert!(futures::future::join_all(reads).await.into_iter().all(|r| r.is_ok()));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
