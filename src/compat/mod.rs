//! Compatibility views: any array zarrd reads, described and chunked the way the widest set
//! of Zarr clients reads — a `regular` chunk grid, `default` chunk keys with `/`, the
//! `bytes` codec (little endian) and `zstd`, no sharding, no transpose — as a Zarr v3
//! document, or as a Zarr v2 `.zarray` with the same chunks and compressor.
//!
//! Why zstd: zarr-python, `TensorStore`, `zarrita.js` (through `numcodecs.js`) and neuroglancer all
//! decode it, and it is zarr-python's default chain (`bytes` + `zstd`), so most stored chunks
//! are already what the view declares and are served as they are, without re-encoding.
//!
//! The view chunk shape ([`view_chunk_shape`]) is sized for the network (docs/clients.md
//! "View chunks"): a client reading a whole array makes about `⌈bytes ÷ chunk_bytes⌉`
//! requests, never one per tiny stored chunk.
//! - The read grid (the innermost chunks of a sharded array, the stored chunks otherwise) is
//!   kept when it is regular and its chunks hold at least `compat.min_chunk_bytes` decoded:
//!   a view chunk is then one stored or inner chunk, served as stored when it is already in
//!   the view's encoding.
//! - Otherwise (small chunks, rectilinear grids) view chunks of about `compat.chunk_bytes`
//!   are made, growing the last dimensions first (C order: a view chunk is then a few
//!   contiguous runs of the array, and a plane of `[time, y, x]` data is one or a few
//!   requests), each edge a multiple of the stored edge where that dimension is regular, so
//!   a view chunk covers whole stored chunks; the server assembles each from up to
//!   `sizing::MAX_STORED_PER_VIEW_CHUNK` (4,096) stored chunks, so arrays of chunks of a
//!   few bytes get view chunks below `chunk_bytes`.
//! - `datasets.NAME.compat."PATH" = [..]` overrides the shape of one array.
//! - Text arrays keep the read grid (regular) or the edge covering most of each rectilinear
//!   dimension: their decoded size is unknown until read.
//!
//! A view chunk whose stored data is entirely missing is reported as missing (HTTP 404:
//! clients read the fill value), exactly as a missing stored chunk is.
//!
//! Text (`string`) arrays are declared the way zarr-python 3 writes them: `vlen-utf8` then
//! `zstd` in v3, and `dtype "|O"` with the `vlen-utf8` filter and numcodecs' zstd in v2 (the
//! framing is the same). Their view chunks come from the text read path (`strings.rs`):
//! stored chunks already framed and zstd-compressed are served as they are, others are
//! decoded, framed again (boundary padding: the fill value) and compressed.

mod chunks;
mod documents;
mod sizing;
mod tree;
mod zarr_documents;

pub use self::chunks::{ViewChunk, view_chunk};
pub use self::documents::{fill_json, v2_array_document, v3_array_document, v3_codecs};
pub use self::sizing::{view_chunk_shape, view_grid_shape};
pub use self::tree::{Flavor, ViewNode, ViewTree};
pub use self::zarr_documents::{
    Endian, Extension, KeySeparator, RegularChunkGrid, V2Array, V2Document, V3Array, V3Codec, V3Group, V3Node,
};
