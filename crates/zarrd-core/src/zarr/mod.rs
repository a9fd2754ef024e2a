//! The Zarr format (v3, and v2 read into the same model): metadata documents, data types,
//! chunk grids, chunk keys and the codecs. Nothing here reads storage or knows HTTP.

pub mod chunk_grid;
pub mod chunk_key;
pub mod codec;
pub mod copy;
pub mod data_type;
pub mod json;
pub mod metadata;
pub mod ome;
pub mod time;
pub mod v2;
pub mod v2_dtype;
