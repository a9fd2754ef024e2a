//! Prometheus metrics (`docs/api.md` "Operations: probes, metrics, logs"): those every
//! request updates are counted per thread (`tally`), the rest recorded through the
//! `metrics` facade and rendered by `metrics-exporter-prometheus`; [`render`] gives both
//! for `GET /metrics`.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the global recorder once per process and returns the renderer.
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            // A recorder may already be set by an embedding program; ours then stays local.
            if metrics::set_global_recorder(recorder).is_ok() {
                // Shown from the start, so an alert on it has a series to watch.
                metrics::counter!("zarrd_panics_total").absolute(0);
            }
            handle
        })
        .clone()
}

/// Everything for `GET /metrics`: the exporter's series, the per-thread tallies and the
/// CPU pool's busy time and tasks.
pub fn render() -> String {
    let mut text = handle().render();
    text.push_str(&super::tally::render());
    text.push_str(&super::cpu::render());
    text.push_str(&render_stream_waits());
    text
}

/// What a streamed read's sender waited on between bands: the next band (its fetch and
/// decode), or the client taking the band before it.
#[derive(Debug, Clone, Copy)]
pub enum StreamWait {
    Band = 0,
    Client = 1,
}

/// Nanoseconds streamed reads' senders waited, by [`StreamWait`], since the start.
static STREAM_WAIT_NANOS: [std::sync::atomic::AtomicU64; 2] =
    [std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0)];

/// One wait of a streamed read's sender (`zarrd_stream_wait_seconds_total{on}`): a read
/// whose sender mostly waits on `band` is bound by fetching and decoding, one that waits
/// on `client` by the connection; two scrapes around a read say which.
pub fn stream_waited(on: StreamWait, waited: std::time::Duration) {
    let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
    STREAM_WAIT_NANOS[on as usize].fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
}

fn render_stream_waits() -> String {
    let [band, client] =
        STREAM_WAIT_NANOS.each_ref().map(|n| n.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9);
    format!(
        "# TYPE zarrd_stream_wait_seconds_total counter\nzarrd_stream_wait_seconds_total{{on=\"band\"}} {band}\n\
         zarrd_stream_wait_seconds_total{{on=\"client\"}} {client}\n"
    )
}

/// One storage request, counted in all (`zarrd_storage_requests_total`) and by what it
/// was for (`zarrd_storage_requests_by_reason_total{reason}`: `object`, `index`, `ranges`,
/// `head`, `list`, `archive`).
pub fn storage_request(reason: &'static str) {
    super::tally::count("zarrd_storage_requests_total", "", "", 1);
    super::tally::count("zarrd_storage_requests_by_reason_total", "reason", reason, 1);
}

/// Inner-chunk reads asked for by requests, and the storage requests that served them,
/// since the start (for the coalescing ratio).
static COALESCING: [std::sync::atomic::AtomicU64; 2] =
    [std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0)];

/// One coalesced batch: `reads` inner-chunk reads of concurrent requests served by
/// `requests` storage requests. `zarrd_coalescing_ratio` is reads per storage request
/// over all batches (1: nothing merged).
pub fn coalesced(reads: u64, requests: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    metrics::counter!("zarrd_coalesced_reads_total").increment(reads);
    metrics::counter!("zarrd_coalesced_storage_requests_total").increment(requests);
    let total_reads = COALESCING[0].fetch_add(reads, Relaxed) + reads;
    let total_requests = COALESCING[1].fetch_add(requests, Relaxed) + requests;
    if total_requests > 0 {
        metrics::gauge!("zarrd_coalescing_ratio").set(total_reads as f64 / total_requests as f64);
    }
}

pub fn storage_bytes(n: usize) {
    super::tally::count("zarrd_storage_bytes_read_total", "", "", n as u64);
}

pub fn cache_lookup(cache: &'static str, hit: bool) {
    let name = if hit { "zarrd_cache_hits_total" } else { "zarrd_cache_misses_total" };
    super::tally::count(name, "cache", cache, 1);
}

/// An entry a cache took in that it does not take on every miss (the response cache keeps
/// an answer only when its request comes again within the lifetime of a kept copy).
pub fn cache_kept(cache: &'static str) {
    super::tally::count("zarrd_cache_kept_total", "cache", cache, 1);
}

pub fn cache_size(cache: &'static str, bytes: u64) {
    metrics::gauge!("zarrd_cache_size_bytes", "cache" => cache).set(bytes as f64);
}

/// 1 when the dataset's root passed its last background health check, else 0.
pub fn dataset_up(dataset: &str, up: bool) {
    metrics::gauge!("zarrd_dataset_up", "dataset" => dataset.to_owned()).set(if up { 1.0 } else { 0.0 });
}
