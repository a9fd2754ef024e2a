//! What every request served counts, per route: `zarrd_http_requests_total{route,status}`,
//! `zarrd_request_duration_seconds{route}` and `zarrd_http_response_bytes_total{route}`,
//! counted per thread and summed when `/metrics` is scraped, as the core counts its
//! storage and cache series (`zarrd_core::ops::tally`, which says why per thread).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use zarrd_core::ops::tally::{PerThread, escape, family};

/// Upper bounds of `zarrd_request_duration_seconds`, in seconds.
pub const DURATION_BUCKETS: [f64; 13] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// What one route served.
#[derive(Default, Clone)]
struct Route {
    /// Requests by status code.
    statuses: Vec<(u16, u64)>,
    bytes: u64,
    /// Requests at most each bound of [`DURATION_BUCKETS`] (not cumulative).
    buckets: [u64; DURATION_BUCKETS.len()],
    seconds: f64,
    count: u64,
}

impl Route {
    fn add(&mut self, other: &Route) {
        for &(status, n) in &other.statuses {
            self.count_status(status, n);
        }
        self.bytes += other.bytes;
        for (a, b) in self.buckets.iter_mut().zip(other.buckets) {
            *a += b;
        }
        self.seconds += other.seconds;
        self.count += other.count;
    }

    fn count_status(&mut self, status: u16, n: u64) {
        match self.statuses.iter_mut().find(|(s, _)| *s == status) {
            Some((_, count)) => *count += n,
            None => self.statuses.push((status, n)),
        }
    }
}

/// Each thread's routes, hashed with foldhash: every request looks its route up here.
type Routes = HashMap<String, Route, foldhash::fast::RandomState>;

static TALLIES: PerThread<Routes> = PerThread::new();

/// One request served: `zarrd_http_requests_total{route,status}`,
/// `zarrd_request_duration_seconds{route}` and `zarrd_http_response_bytes_total{route}`.
pub fn request(route: &str, status: u16, seconds: f64, bytes_out: u64) {
    let mut routes = TALLIES.mine();
    let entry =
        if let Some(entry) = routes.get_mut(route) { entry } else { routes.entry(route.to_owned()).or_default() };
    entry.count_status(status, 1);
    entry.bytes += bytes_out;
    if let Some(i) = DURATION_BUCKETS.iter().position(|&bound| seconds <= bound) {
        entry.buckets[i] += 1;
    }
    entry.seconds += seconds;
    entry.count += 1;
}

/// Prometheus text of the routes' series, summed over the threads.
pub fn render() -> String {
    let mut routes: BTreeMap<String, Route> = BTreeMap::new();
    TALLIES.each(|tally| {
        for (route, counts) in tally {
            routes.entry(route.clone()).or_default().add(counts);
        }
    });
    let mut out = String::new();
    if !routes.is_empty() {
        family(&mut out, "zarrd_http_requests_total", "counter", &mut |out| {
            for (route, r) in &routes {
                let mut statuses = r.statuses.clone();
                statuses.sort_unstable();
                for (status, n) in statuses {
                    let _ = writeln!(
                        out,
                        "zarrd_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}",
                        escape(route)
                    );
                }
            }
        });
        family(&mut out, "zarrd_request_duration_seconds", "histogram", &mut |out| {
            for (route, r) in &routes {
                let route = escape(route);
                let mut cumulative = 0;
                for (bound, n) in DURATION_BUCKETS.iter().zip(r.buckets) {
                    cumulative += n;
                    let _ = writeln!(
                        out,
                        "zarrd_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {cumulative}"
                    );
                }
                let _ =
                    writeln!(out, "zarrd_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", r.count);
                let _ = writeln!(out, "zarrd_request_duration_seconds_sum{{route=\"{route}\"}} {}", r.seconds);
                let _ = writeln!(out, "zarrd_request_duration_seconds_count{{route=\"{route}\"}} {}", r.count);
            }
        });
        family(&mut out, "zarrd_http_response_bytes_total", "counter", &mut |out| {
            for (route, r) in &routes {
                let _ = writeln!(out, "zarrd_http_response_bytes_total{{route=\"{}\"}} {}", escape(route), r.bytes);
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_threads_into_cumulative_buckets() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    request("/tally-test", 200, 0.0005, 10);
                    request("/tally-test", 200, 0.02, 10);
                    request("/tally-test", 404, 20.0, 1);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = render();
        for line in [
            "zarrd_http_requests_total{route=\"/tally-test\",status=\"200\"} 8",
            "zarrd_http_requests_total{route=\"/tally-test\",status=\"404\"} 4",
            "zarrd_request_duration_seconds_bucket{route=\"/tally-test\",le=\"0.001\"} 4",
            "zarrd_request_duration_seconds_bucket{route=\"/tally-test\",le=\"0.01\"} 4",
            "zarrd_request_duration_seconds_bucket{route=\"/tally-test\",le=\"0.025\"} 8",
            "zarrd_request_duration_seconds_bucket{route=\"/tally-test\",le=\"10\"} 8",
            "zarrd_request_duration_seconds_bucket{route=\"/tally-test\",le=\"+Inf\"} 12",
            "zarrd_request_duration_seconds_count{route=\"/tally-test\"} 12",
            "zarrd_http_response_bytes_total{route=\"/tally-test\"} 84",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
        let sum: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("zarrd_request_duration_seconds_sum{route=\"/tally-test\"} "))
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 4.0 * 20.0205).abs() < 1e-9, "{sum}");
        assert_eq!(text.matches("# TYPE zarrd_http_requests_total counter").count(), 1);
    }
}
