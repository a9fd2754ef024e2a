//! Operations: what keeps a replica observable and within its limits — metrics,
//! panics made visible, the CPU pool, the memory budget and reading through caches (the
//! access log and the HTTP series are the server's: `telemetry`).
//! Leaves: nothing here knows about Zarr or HTTP.

pub mod budget;
pub mod caches;
pub mod cpu;
pub mod metrics;
pub mod panics;
pub mod tally;
