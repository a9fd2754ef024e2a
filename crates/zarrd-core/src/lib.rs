//! zarrd-core: what zarrd knows about Zarr without knowing about HTTP. From the bottom up:
//! [`zarr`] (the format: metadata, chunk grids, chunk keys, data types, codecs), [`store`]
//! (storage: object stores, zip archives, kerchunk references, Icechunk repositories),
//! [`read`] (selection → plan → fetch → decode → assemble), [`coords`] (labels as xarray
//! decodes them: CF time, longitudes, packing and missing values; label selection),
//! [`reduce`] (reductions planned chunk by chunk) and [`ops`] (the CPU pool, the memory
//! budget, metrics, batched logs, panics made visible). No axum, hyper, tower or
//! tower-http here — the workspace manifest keeps them out, so the compiler, not a test,
//! keeps the layer free of HTTP. Errors are typed per module (`StoreError`, `ReadError`,
//! `CodecError`, …) with their sources; the server maps them to HTTP once, at its edge.

pub mod coords;
pub mod grid;
pub mod ops;
pub mod query;
pub mod read;
pub mod reduce;
pub mod store;
pub mod zarr;
