//! Operations: what keeps a replica observable and within its limits — metrics, batched
//! logs, panics made visible, the CPU pool, the memory budget and reading through caches.
//! Leaves: nothing here knows about Zarr or HTTP.

pub mod budget;
pub mod caches;
pub mod cpu;
pub mod logbuf;
pub mod metrics;
pub mod panics;
pub mod tally;
