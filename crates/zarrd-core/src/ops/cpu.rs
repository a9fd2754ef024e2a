//! CPU-bound work (decoding, assembling, encoding) off the async runtime, on rayon's pool.
//!
//! One hop: the task is pushed to rayon and the awaiting request is woken when it is done.
//! `spawn_blocking` would add a second one whenever the work fans out with rayon (a
//! blocking-pool thread waits on a latch while rayon works), and each hop is a futex wake
//! and a context switch — measurable next to a 250 µs tile decode (`docs/performance.md`
//! "Close to the hardware"). Work started here that uses rayon's parallel iterators joins
//! the pool's work stealing instead of blocking a thread.

use std::panic::AssertUnwindSafe;

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
    // The request's span goes along, so a panic here is logged with its request id.
    let span = tracing::Span::current();
    rayon::spawn(move || {
        let _entered = span.enter();
        let result = std::panic::catch_unwind(AssertUnwindSafe(work))
            .map_err(|panic| panic_message(panic.as_ref()).unwrap_or_else(|| "a CPU task panicked".to_owned()));
        // The request may have gone away (client disconnected): nothing to tell then.
        let _ = tx.send(result);
    });
    rx.await.unwrap_or_else(|_| Err("a CPU task was dropped".to_owned()))
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
}
