//! The Zarr (v3, and v2 read into the same model) domain: metadata, grids, keys, codecs and the read path. Nothing here
//! knows about HTTP.

pub mod chunk_grid;
pub mod chunk_key;
pub mod codec;
pub mod compat;
pub mod copy;
pub mod data_type;
pub mod indexer;
pub mod json;
pub mod listing;
pub mod locate;
pub mod metadata;
pub mod read;
pub mod selection;
pub mod strings;
pub mod v2;
