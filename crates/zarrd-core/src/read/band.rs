//! The bands of a streamed read (a [`Group`] of them per row of shards), each decoded on
//! the CPU pool in pieces: its members are dealt
//! into at most one piece per pool thread, each piece a task of its own, and the piece that
//! finishes last places every decoded chunk into the band.
//!
//! Why pieces rather than one task per band with a parallel iterator inside: the pool takes
//! tasks handed over from outside it first in, first out, so the pieces of the first band
//! are decoded by every thread at once and bands finish in the order they are sent. With a
//! task per band, every started band shared the threads and the first one finished with the
//! rest: on 16 cores the sender waited for the whole first row of shards to be decoded
//! before the first band left, and the 64 MiB read sent nothing while decoding it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use crate::ops::budget::Reservation;
use crate::read::assemble::Assembly;
use crate::read::cache::DecodedChunk;
use crate::read::decode::{Fresh, Source, elements_of};
use crate::read::error::ReadError;

/// Bands to assemble, and the memory held for them (their fetched bytes) until the last
/// one is done.
pub(super) struct Group {
    pub(super) assembly: Assembly,
    pub(super) _reservation: Reservation,
}

type Done = tokio::sync::oneshot::Sender<Result<(Bytes, Fresh), ReadError>>;

/// Band `band` of `group`, its bytes and the decoded chunks to cache.
pub(super) async fn decode(group: Arc<Group>, band: usize) -> Result<(Bytes, Fresh), ReadError> {
    let a = &group.assembly;
    let members = a.bands[band].members.len();
    let encoded = a.bands[band].members.iter().filter(|&&i| matches!(a.jobs[i].source, Source::Encoded { .. })).count();
    let pieces = rayon::current_num_threads().min(encoded);
    if pieces <= 1 {
        // Nothing to share out: one task (which decodes a chunk spanning whole output rows
        // straight into place).
        return crate::ops::cpu::run(move || whole(&group, band)).await.map_err(ReadError::Task)?;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let state = Arc::new(Pieces {
        group,
        band,
        decoded: Mutex::new(Vec::with_capacity(members)),
        left: AtomicUsize::new(pieces),
        done: Mutex::new(Some(tx)),
    });
    for piece in 0..pieces {
        let state = Arc::clone(&state);
        let range = piece * members / pieces..(piece + 1) * members / pieces;
        crate::ops::cpu::spawn(move || state.decode_piece(range));
    }
    rx.await.unwrap_or_else(|_| Err(ReadError::Task("decoding a band was dropped".into())))
}

/// The band in one task, as when it is not shared out.
fn whole(group: &Group, band: usize) -> Result<(Bytes, Fresh), ReadError> {
    let a = &group.assembly;
    let mut buf = vec![0u8; a.band_bytes(&a.bands[band])];
    let fresh = a.fill_band(&a.bands[band], &mut buf)?;
    Ok((Bytes::from(buf), fresh))
}

struct Pieces {
    group: Arc<Group>,
    band: usize,
    /// Each decoded member (job index, its elements) until the band is placed.
    decoded: Mutex<Vec<(usize, Option<Arc<DecodedChunk>>)>>,
    /// Pieces not finished yet.
    left: AtomicUsize,
    /// Taken by the first error, or by the last piece with the band.
    done: Mutex<Option<Done>>,
}

impl Pieces {
    /// Decodes the band's members `range` (positions in its member list); the last piece
    /// to finish places them all. A failed or panicking piece answers at once with its
    /// error, and no band is placed.
    fn decode_piece(&self, range: std::ops::Range<usize>) {
        let a = &self.group.assembly;
        let members = &a.bands[self.band].members[range];
        let decoded = crate::ops::cpu::catch(|| {
            members.iter().map(|&i| Ok((i, elements_of(&a.meta, &a.jobs[i])?))).collect::<Result<Vec<_>, ReadError>>()
        })
        .map_err(ReadError::Task)
        .and_then(|r| r);
        match decoded {
            Ok(chunks) => self.decoded.lock().unwrap_or_else(PoisonError::into_inner).extend(chunks),
            Err(e) => self.answer(Err(e)),
        }
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Placed only if no piece failed (the answer is still to give).
            if self.done.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
                let placed = crate::ops::cpu::catch(|| self.place()).map_err(ReadError::Task);
                self.answer(placed);
            }
        }
    }

    fn place(&self) -> (Bytes, Fresh) {
        let a = &self.group.assembly;
        let band = &a.bands[self.band];
        let mut buf = vec![0u8; a.band_bytes(band)];
        let mut fresh = Vec::new();
        let decoded = std::mem::take(&mut *self.decoded.lock().unwrap_or_else(PoisonError::into_inner));
        for (i, chunk) in decoded {
            a.place_decoded(band, &mut buf, i, chunk, &mut fresh);
        }
        (Bytes::from(buf), fresh)
    }

    /// Gives the band's answer, once: later answers (after an error) are dropped.
    fn answer(&self, result: Result<(Bytes, Fresh), ReadError>) {
        if let Some(done) = self.done.lock().unwrap_or_else(PoisonError::into_inner).take() {
            // The read may have gone away (client disconnected): nothing to tell then.
            let _ = done.send(result);
        }
    }
}
