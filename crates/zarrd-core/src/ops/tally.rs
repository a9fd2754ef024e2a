//! The counters every storage request and cache lookup updates, counted per thread and
//! summed when `/metrics` is scraped (the server counts its requests per route the same
//! way, with [`PerThread`], [`family`] and [`escape`]).
//!
//! Through the `metrics` facade each update looked its series up in the exporter's
//! registry (a shared lock word), allocated its labels, and bumped an atomic that every
//! core bumped too. On many cores those shared lines move between cores on every request.
//! Here each thread has its own tally behind its own lock, taken by that thread for each
//! update and by the scrape once per thread, so an update writes nothing another core
//! writes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use thread_local::ThreadLocal;

/// A counter series: metric name, label name (`""` for none) and label value.
type Series = (&'static str, &'static str, &'static str);

/// A tally kept per thread: each thread updates its own behind its own lock, and a scrape
/// visits every thread's once.
pub struct PerThread<T: Send>(LazyLock<ThreadLocal<Mutex<T>>>);

impl<T: Send + Default> PerThread<T> {
    pub const fn new() -> Self {
        Self(LazyLock::new(ThreadLocal::new))
    }

    /// This thread's tally.
    pub fn mine(&self) -> MutexGuard<'_, T> {
        lock(self.0.get_or_default())
    }

    /// Calls `f` with every thread's tally in turn.
    pub fn each(&self, mut f: impl FnMut(&T)) {
        for tally in self.0.iter() {
            f(&lock(tally));
        }
    }
}

impl<T: Send + Default> Default for PerThread<T> {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(tally: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counts stay counts after a panic elsewhere: still usable.
    tally.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hashed with foldhash: every cache hit looks a series up here, and the keys are the
/// server's own metric names.
type Counters = HashMap<Series, u64, foldhash::fast::RandomState>;

static TALLIES: PerThread<Counters> = PerThread::new();

/// Adds `n` to the counter `name{label="value"}` (`label` `""`: no label).
pub fn count(name: &'static str, label: &'static str, value: &'static str, n: u64) {
    *TALLIES.mine().entry((name, label, value)).or_default() += n;
}

/// Prometheus text of everything counted here, summed over the threads.
pub fn render() -> String {
    let mut counters: BTreeMap<Series, u64> = BTreeMap::new();
    TALLIES.each(|tally| {
        for (series, n) in tally {
            *counters.entry(*series).or_default() += n;
        }
    });
    let mut out = String::new();
    let mut names: Vec<&'static str> = counters.keys().map(|(name, ..)| *name).collect();
    names.dedup();
    for name in names {
        family(&mut out, name, "counter", &mut |out| {
            for ((_, label, value), n) in counters.range((name, "", "")..).take_while(|((n, ..), _)| *n == name) {
                if label.is_empty() {
                    let _ = writeln!(out, "{name} {n}");
                } else {
                    let _ = writeln!(out, "{name}{{{label}=\"{}\"}} {n}", escape(value));
                }
            }
        });
    }
    out
}

/// One metric family in the text format: its `# TYPE` line, the lines `lines` writes, a
/// blank line.
pub fn family(out: &mut String, name: &str, kind: &str, lines: &mut dyn FnMut(&mut String)) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    lines(out);
    out.push('\n');
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
pub fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_threads() {
        let threads: Vec<_> =
            (0..4).map(|_| std::thread::spawn(|| count("zarrd_tally_test_total", "cache", "a\"b", 2))).collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = render();
        let line = "zarrd_tally_test_total{cache=\"a\\\"b\"} 8";
        assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        assert_eq!(text.matches("# TYPE zarrd_tally_test_total counter").count(), 1);
    }
}
