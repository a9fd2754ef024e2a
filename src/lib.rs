//! zarrd: an HTTP server for Zarr v3 and v2 arrays. The parts, from the edge inward
//! (docs/ARCHITECTURE.md): [`http`] (routes, layers, connections) over [`catalog`] (the
//! datasets), [`images`] (IIIF, overviews) and [`compat`] (views for plain Zarr clients),
//! which use [`read`] (selection → plan → fetch → decode → assemble), which uses [`zarr`]
//! (the format) and [`store`] (storage); [`ops`] (metrics, logs, panics, the CPU pool,
//! the memory budget), [`auth`] (who may read what), [`config`] and [`error`] serve them
//! all. [`app`] builds the router that `main` serves and that the tests drive in-process.

pub mod auth;
pub mod catalog;
pub mod compat;
pub mod config;
pub mod error;
pub mod http;
pub mod images;
pub mod ops;
pub mod read;
pub mod store;
pub mod zarr;

pub use http::{AppState, app};
