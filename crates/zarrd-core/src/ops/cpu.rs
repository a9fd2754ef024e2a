//! CPU-bound work (decoding, assembling, encoding) off the async runtime, on rayon's pool.
//!
//! One hop: the task is pushed to rayon and the awaiting request is woken when it is done.
//! `spawn_blocking` would add a second one whenever the work fans out with rayon (a
//! blocking-pool thread waits on a latch while rayon works), and each hop is a futex wake
//! and a context switch — measurable next to a 250 µs tile decode (`docs/performance.md`
//! "Close to the hardware"). Work started here that uses rayon's parallel iterators joins
//! the pool's work stealing instead of blocking a thread.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Nanoseconds the pool's threads spent in tasks started by [`run`], since the start.
static BUSY_NANOS: AtomicU64 = AtomicU64::new(0);
/// Tasks handed to the pool and not yet started.
static QUEUED: AtomicU64 = AtomicU64::new(0);
/// Tasks running on the pool now.
static RUNNING: AtomicU64 = AtomicU64::new(0);

/// What the pool is doing: its busy time so far, and the tasks waiting and running now.
/// Busy seconds over wall seconds × threads, between two readings, is the fraction of the
/// pool a read kept busy (`zarrd_cpu_pool_busy_seconds_total` / `zarrd_cpu_pool_threads`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolStats {
    pub busy_seconds: f64,
    pub threads: usize,
    pub queued: u64,
    pub running: u64,
}

pub fn pool_stats() -> PoolStats {
    PoolStats {
        busy_seconds: BUSY_NANOS.load(Relaxed) as f64 / 1e9,
        threads: rayon::current_num_threads(),
        queued: QUEUED.load(Relaxed),
        running: RUNNING.load(Relaxed),
    }
}

/// The pool's series for `GET /metrics`.
pub fn render() -> String {
    let s = pool_stats();
    format!(
        "# TYPE zarrd_cpu_pool_busy_seconds_total counter\nzarrd_cpu_pool_busy_seconds_total {}\n\
         # TYPE zarrd_cpu_pool_threads gauge\nzarrd_cpu_pool_threads {}\n\
         # TYPE zarrd_cpu_tasks gauge\nzarrd_cpu_tasks{{state=\"queued\"}} {}\nzarrd_cpu_tasks{{state=\"running\"}} {}\n",
        s.busy_seconds, s.threads, s.queued, s.running
    )
}

/// Starts rayon's global pool: one thread per CPU this process may run on *now*, the same
/// count tokio's runtime takes when it is built (or `RAYON_NUM_THREADS` threads when that
/// is set to a positive number, as rayon itself reads it). Left to itself rayon sizes the pool at its
/// first use, from the CPUs allowed at that moment: a process moved onto fewer CPUs before
/// its first decode (`taskset`, a cgroup change) would keep that smaller pool for its whole
/// life. Threads are named `zarrd-cpu-N` for `top -H` and profiles.
pub fn start_pool() -> Result<(), String> {
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("zarrd-cpu-{i}"))
        .build_global()
        .map_err(|e| format!("cannot start the CPU pool: {e}"))
}

/// Runs `work` on rayon's pool and waits for it without blocking the runtime. A panic in
/// `work` (a bug) comes back as `Err` with its message instead of aborting the process,
/// which is what a panic in `rayon::spawn` would otherwise do (the panic hook has counted
/// and logged it: `panics`).
pub async fn run<T, F>(work: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    // The request may have gone away (client disconnected): nothing to tell then.
    counted(work, move |result| drop(tx.send(result)));
    rx.await.unwrap_or_else(|_| Err("a CPU task was dropped".to_owned()))
}

/// Hands `work` to rayon's pool (first in, first out among tasks handed over from outside
/// it) and returns at once, counting it in the pool's metrics. `work` must not panic: wrap
/// what may in [`catch`] (a panic that escapes is caught here, counted and logged by the
/// hook, and the task's result is lost).
pub fn spawn<F>(work: F)
where
    F: FnOnce() + Send + 'static,
{
    counted(work, drop);
}

/// Runs `work` on the pool, counted, and hands its result (or its panic's message) to
/// `then` once its time is in the busy total: a caller woken by `then` sees it counted.
fn counted<T, F, G>(work: F, then: G)
where
    F: FnOnce() -> T + Send + 'static,
    G: FnOnce(Result<T, String>) + Send + 'static,
{
    // The request's span goes along, so a panic here is logged with its request id.
    let span = tracing::Span::current();
    QUEUED.fetch_add(1, Relaxed);
    rayon::spawn(move || {
        let _entered = span.enter();
        QUEUED.fetch_sub(1, Relaxed);
        RUNNING.fetch_add(1, Relaxed);
        let started = Instant::now();
        let result = catch(work);
        BUSY_NANOS.fetch_add(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX), Relaxed);
        RUNNING.fetch_sub(1, Relaxed);
        then(result);
    });
}

/// `work`'s result, or the message of the panic it raised.
pub fn catch<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(work))
        .map_err(|panic| panic_message(panic.as_ref()).unwrap_or_else(|| "a CPU task panicked".to_owned()))
}

/// The message a panic was raised with, when it has one (`panic!("…")` gives a `&str` or a
/// `String`).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> Option<String> {
    panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn returns_results_and_reports_panics() {
        assert_eq!(super::run(|| 6 * 7).await, Ok(42));
        let err = super::run(|| -> u8 { panic!("boom") }).await.unwrap_err();
        assert!(err.contains("boom"), "{err}");
        // The pool survives a panicking task.
        assert_eq!(super::run(|| 1).await, Ok(1));
    }

    #[tokio::test]
    async fn the_pool_counts_its_busy_time() {
        let before = super::pool_stats();
        let slept = super::run(|| std::thread::sleep(std::time::Duration::from_millis(20))).await;
        assert_eq!(slept, Ok(()));
        let after = super::pool_stats();
        // Other tests share the pool: at least this task's 20 ms were added.
        assert!(after.busy_seconds - before.busy_seconds >= 0.019, "{before:?} → {after:?}");
        assert!(after.threads >= 1);
        let text = super::render();
        assert!(
            text.contains("zarrd_cpu_pool_busy_seconds_total ") && text.contains("zarrd_cpu_tasks{state=\"queued\"}"),
            "{text}"
        );
    }
}
