//! No panic goes unseen (`docs/api.md` "Operations: probes, metrics, logs"). A panic is a
//! bug; wherever it happens — a handler, a response body being sent, a decode on the CPU
//! pool, a background task — the process-wide hook installed here counts it in
//! `zarrd_panics_total` and logs it once, at ERROR with target `zarrd::panic`, inside the
//! span that was current: the request's span (request id, method, target, route) for
//! handlers and bodies, which the CPU pool and the read path's band tasks carry along. The
//! places that catch panics (the handler layer, the response body, `cpu::run`) only turn
//! them into a 500 or an aborted body: they never log them again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, PoisonError};

static PANICS: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();
/// Where the last few panics happened, as `file:line: message`.
static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const KEPT: usize = 16;

/// The panics seen by this process since it started.
pub fn count() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// The last panics (at most 16), oldest first, as `file:line: message`: the tests fail on
/// any of the server's, telling them apart from their own failed assertions by the file.
pub fn recent() -> Vec<String> {
    RECENT.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
}

/// Installs the hook once per process. Where no tracing subscriber would take the message
/// (before logging is set up) a panic is still printed by the hook that was there before.
pub fn install_hook() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("zarrd_panics_total").increment(1);
            let message = crate::ops::cpu::panic_message(info.payload()).unwrap_or_else(|| "(no message)".to_owned());
            let location = info.location().map(ToString::to_string).unwrap_or_default();
            {
                let mut recent = RECENT.lock().unwrap_or_else(PoisonError::into_inner);
                if recent.len() == KEPT {
                    recent.pop_front();
                }
                recent.push_back(format!("{location}: {message}"));
            }
            // No subscriber where the panic happened (before logging is set up, or on a
            // thread that only ever had a scoped one): the message would go nowhere, so the
            // hook that was there before prints it.
            if tracing::dispatcher::get_default(tracing::Dispatch::is::<tracing::subscriber::NoSubscriber>) {
                previous(info);
                return;
            }
            let thread = std::thread::current();
            let backtrace = std::backtrace::Backtrace::capture();
            if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
                tracing::error!(target: "zarrd::panic", %location, thread = thread.name(), %backtrace, "panic: {message}");
            } else {
                tracing::error!(target: "zarrd::panic", %location, thread = thread.name(), "panic: {message}");
            }
        }));
    });
}
