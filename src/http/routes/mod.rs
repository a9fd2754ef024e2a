//! The route handlers, one module per resource: each extracts its parameters (`extract`),
//! calls the catalog and the read path, and encodes (`encode`, `conditional`); none parses
//! Zarr bytes.

pub mod arrays;
pub mod chunks;
pub mod compat;
pub mod datasets;
pub mod download;
pub mod edr;
pub mod geotiff;
pub mod iiif;
pub mod labelled;
pub mod maps;
pub mod ops;
pub mod reduce;
pub mod slice;
pub mod tokens;
pub mod viewer;
pub mod zarr_store;
