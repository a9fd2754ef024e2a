//! The log writer: lines go into per-thread buffers and one thread writes them out in
//! batches: a line after a quiet spell at once, under load the lines of each
//! [`FLUSH_EVERY`] together.
//!
//! A request's access-log line then costs a copy under a lock no other request thread
//! takes. With a writer thread woken per line (what `tracing_appender::non_blocking` does)
//! each line also cost a thread wake-up and a `write` system call — about a tenth of the
//! CPU of serving a cached tile (`docs/performance.md` "Close to the hardware"). One buffer
//! behind one mutex for every thread was the next cost as cores grew: every request on
//! every core took the same lock (and the same cache line; "Every core"), so the buffer is
//! sharded — each thread writes to its own shard, and the writer thread collects them all.
//! Lines of one thread stay in order; within a batch, lines of different threads are
//! grouped by thread (each line carries its own timestamp). Logging never blocks a request:
//! when the output does not keep up (a stuck pipe) and a shard holds its part of
//! [`MAX_BUFFERED`] bytes, further lines are dropped, and how many is reported in the
//! output once it moves again.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a line may wait in the buffer: batches lines under load, and is still
/// immediate for a person watching the log.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Bytes waiting beyond which lines are dropped rather than buffered (all shards).
pub const MAX_BUFFERED: usize = 16 << 20;
/// The longest the writer thread sleeps when idle, should a wake-up ever be missed.
const IDLE_RECHECK: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shard {
    buf: Vec<u8>,
    dropped: u64,
}

/// A shard on a cache line of its own, so that two threads writing to neighbouring shards
/// do not take turns at one line.
#[repr(align(128))]
#[derive(Default)]
struct Padded(Mutex<Shard>);

struct Shared {
    shards: Box<[Padded]>,
    /// Bytes one shard may hold.
    max: usize,
    /// The writer thread waits for a first line (so the next one must wake it). Read by
    /// every line, written only around the writer's sleep: the line stays shared in every
    /// core's cache instead of moving between them.
    idle: AtomicBool,
    closed: AtomicBool,
    sleep: Mutex<()>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a buffer of whole lines: still usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// The shard of the calling thread: threads are given shards round-robin at their
    /// first line, so up to `shards` threads never share one.
    fn shard(&self) -> &Mutex<Shard> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local!(static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed));
        &self.shards[MINE.with(|i| *i) % self.shards.len()].0
    }

    fn is_empty(&self) -> bool {
        self.shards.iter().all(|s| {
            let s = lock(&s.0);
            s.buf.is_empty() && s.dropped == 0
        })
    }
}

/// The `MakeWriter` for `tracing_subscriber`: every event is one `write` of a whole line.
#[derive(Clone)]
pub struct Batched {
    shared: Arc<Shared>,
}

/// Writes out what is buffered and stops the writer thread when dropped: keep it until
/// the process exits.
pub struct Guard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// A batched writer to `out`, holding at most `max` bytes of lines not yet written, in a
/// shard per CPU (twice as many: the runtime's and the CPU pool's threads both log).
pub fn spawn<W: Write + Send + 'static>(out: W, max: usize) -> std::io::Result<(Batched, Guard)> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    spawn_sharded(out, max, 2 * cpus)
}

/// [`spawn`] with `shards` buffers of `max / shards` bytes each.
pub fn spawn_sharded<W: Write + Send + 'static>(
    out: W,
    max: usize,
    shards: usize,
) -> std::io::Result<(Batched, Guard)> {
    let shards = shards.max(1);
    let shared = Arc::new(Shared {
        shards: (0..shards).map(|_| Padded::default()).collect(),
        max: max / shards,
        idle: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        sleep: Mutex::new(()),
        wake: Condvar::new(),
    });
    let thread = std::thread::Builder::new().name("zarrd-log".into()).spawn({
        let shared = Arc::clone(&shared);
        move || write_out(&shared, out)
    })?;
    Ok((Batched { shared: Arc::clone(&shared) }, Guard { shared, thread: Some(thread) }))
}

fn write_out<W: Write>(shared: &Shared, mut out: W) {
    let mut batch = Vec::new();
    loop {
        {
            // Idle is set and the shards checked under `sleep`, which a line's wake-up
            // takes too: a line written after the check finds `idle` set and wakes us.
            let mut sleeping = lock(&shared.sleep);
            shared.idle.store(true, Ordering::SeqCst);
            while shared.is_empty() && !shared.closed.load(Ordering::SeqCst) {
                sleeping = shared.wake.wait_timeout(sleeping, IDLE_RECHECK).unwrap_or_else(PoisonError::into_inner).0;
            }
            shared.idle.store(false, Ordering::SeqCst);
        }
        let closed = shared.closed.load(Ordering::SeqCst);
        let mut dropped = 0;
        for shard in &shared.shards {
            let mut shard = lock(&shard.0);
            dropped += std::mem::take(&mut shard.dropped);
            if batch.is_empty() {
                // The shard keeps the spare capacity of the last batch.
                std::mem::swap(&mut batch, &mut shard.buf);
            } else {
                batch.extend_from_slice(&shard.buf);
                shard.buf.clear();
            }
        }
        // Nowhere to report a failing log output but the output itself: ignored.
        if dropped > 0 {
            let _ = writeln!(out, "zarrd: {dropped} log lines dropped: the log output did not keep up");
        }
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
        if closed {
            return;
        }
        // A line after a quiet spell is written at once (startup, errors); under load the
        // lines of the next FLUSH_EVERY go out together, with no wake-up per line.
        std::thread::sleep(FLUSH_EVERY);
    }
}

impl Write for &Batched {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let shared = &self.shared;
        {
            let mut shard = lock(shared.shard());
            if shard.buf.len() + line.len() > shared.max {
                shard.dropped += 1;
            } else {
                shard.buf.extend_from_slice(line);
            }
        }
        if shared.idle.load(Ordering::SeqCst) && shared.idle.swap(false, Ordering::SeqCst) {
            let _sleeping = lock(&shared.sleep);
            shared.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Batched {
    type Writer = &'a Batched;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        {
            let _sleeping = lock(&self.shared.sleep);
            self.shared.wake.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output shared with the test; `gate` holds writes back while locked.
    #[derive(Clone, Default)]
    struct Output {
        bytes: Arc<Mutex<Vec<u8>>>,
        gate: Arc<Mutex<()>>,
        writes: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Write for Output {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let _open = self.gate.lock().unwrap();
            self.writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.bytes.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_whole_in_batches_and_on_drop() {
        let output = Output::default();
        let (writer, guard) = spawn(output.clone(), MAX_BUFFERED).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        (&writer).write_all(format!("thread {t} line {i}\n").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(output.bytes.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2000);
        for t in 0..4 {
            let mine: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with(&format!("thread {t} "))).collect();
            let expected: Vec<String> = (0..500).map(|i| format!("thread {t} line {i}")).collect();
            assert_eq!(mine, expected, "thread {t}'s lines, in order");
        }
        // 2000 lines written in a few batches, not a write each.
        let writes = output.writes.load(std::sync::atomic::Ordering::SeqCst);
        assert!(writes < 100, "{writes} writes");
    }

    #[test]
    fn a_stuck_output_drops_lines_beyond_the_limit_and_says_so() {
        let output = Output::default();
        let held = output.gate.lock().unwrap();
        let (writer, guard) = spawn_sharded(output.clone(), 100, 1).unwrap();
        // The first line gets the writer thread going; it then blocks on the gate.
        (&writer).write_all(b"first\n").unwrap();
        std::thread::sleep(FLUSH_EVERY * 3);
        // 10 lines of 20 bytes: 5 fit under the limit of 100.
        for i in 0..10 {
            (&writer).write_all(format!("line {i:02} 0123456789\n").as_bytes()).unwrap();
        }
        drop(held);
        drop(guard);
        let text = String::from_utf8(output.bytes.lock().unwrap().clone()).unwrap();
        let kept: Vec<String> = (0..5).map(|i| format!("line {i:02} 0123456789\n")).collect();
        let notice = "zarrd: 5 log lines dropped: the log output did not keep up\n";
        assert_eq!(text, format!("first\n{notice}{}", kept.concat()));
    }
}
