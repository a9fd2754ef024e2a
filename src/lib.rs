//! zarrd: an HTTP server for Zarr v3 and v2 arrays. The parts, from the edge inward
//! (docs/ARCHITECTURE.md): [`http`] (routes, layers, connections) over [`catalog`] (the
//! datasets), [`images`] (IIIF, maps, overviews) and [`compat`] (views for plain Zarr
//! clients), which use the `zarrd-core` crate: `read` (selection → plan → fetch → decode
//! → assemble) over `zarr` (the format) and `store` (storage), with `ops` (metrics, logs,
//! panics, the CPU pool, the memory budget). [`auth`] (who may read what) and
//! [`config`] serve the server; [`error`] maps every layer's typed errors to HTTP once.
//! [`app`] builds the router that `main` serves and that the tests drive in-process.

pub mod analysis;
pub mod auth;
pub mod catalog;
pub mod compat;
pub mod config;
pub mod csv;
pub mod downloads;
pub mod edr;
pub mod error;
pub mod http;
pub mod images;
pub mod markup;
pub mod numbers;
pub mod telemetry;

pub use http::{AppState, app};
