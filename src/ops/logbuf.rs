//! The log writer: lines go into a shared buffer and one thread writes them out in
//! batches: a line after a quiet spell at once, under load the lines of each
//! [`FLUSH_EVERY`] together.
//!
//! A request's access-log line then costs a copy under an uncontended lock. With a writer
//! thread woken per line (what `tracing_appender::non_blocking` does) each line also cost
//! a thread wake-up and a `write` system call — about a tenth of the CPU of serving a
//! cached tile (BENCHMARKS.md). Logging never blocks a request: when the output does not
//! keep up (a stuck pipe) and [`MAX_BUFFERED`] bytes are waiting, further lines are
//! dropped, and how many is reported in the output once it moves again.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a line may wait in the buffer: batches lines under load, and is still
/// immediate for a person watching the log.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Bytes waiting beyond which lines are dropped rather than buffered.
pub const MAX_BUFFERED: usize = 16 << 20;

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    dropped: u64,
    /// The writer thread waits for a first line (so the next one must wake it).
    idle: bool,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    max: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a buffer of whole lines: still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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

/// A batched writer to `out`, holding at most `max` bytes of lines not yet written.
pub fn spawn<W: Write + Send + 'static>(out: W, max: usize) -> std::io::Result<(Batched, Guard)> {
    let shared = Arc::new(Shared { state: Mutex::new(State::default()), wake: Condvar::new(), max });
    let thread = std::thread::Builder::new().name("zarrd-log".into()).spawn({
        let shared = Arc::clone(&shared);
        move || write_out(&shared, out)
    })?;
    Ok((Batched { shared: Arc::clone(&shared) }, Guard { shared, thread: Some(thread) }))
}

fn write_out<W: Write>(shared: &Shared, mut out: W) {
    let mut spare = Vec::new();
    loop {
        let mut state = shared.lock();
        while state.buf.is_empty() && state.dropped == 0 && !state.closed {
            state.idle = true;
            state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.idle = false;
        let batch = std::mem::replace(&mut state.buf, std::mem::take(&mut spare));
        let dropped = std::mem::take(&mut state.dropped);
        let closed = state.closed;
        drop(state);
        // Nowhere to report a failing log output but the output itself: ignored.
        if dropped > 0 {
            let _ = writeln!(out, "zarrd: {dropped} log lines dropped: the log output did not keep up");
        }
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        spare = batch;
        spare.clear();
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
        let mut state = self.shared.lock();
        if state.buf.len() + line.len() > self.shared.max {
            state.dropped += 1;
        } else {
            state.buf.extend_from_slice(line);
        }
        if state.idle {
            state.idle = false;
            self.shared.wake.notify_one();
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
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
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
        let (writer, guard) = spawn(output.clone(), 100).unwrap();
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
