//! Compatibility views: any array zarrd reads, described and chunked the way the widest set
//! of Zarr clients reads — a `regular` chunk grid, `default` chunk keys with `/`, the
//! `bytes` codec (little endian) and `zstd`, no sharding, no transpose — as a Zarr v3
//! document, or as a Zarr v2 `.zarray` with the same chunks and compressor.
//!
//! Why zstd: zarr-python, `TensorStore`, `zarrita.js` (through `numcodecs.js`) and neuroglancer all
//! decode it, and it is zarr-python's default chain (`bytes` + `zstd`), so most stored chunks
//! are already what the view declares and are served as they are, without re-encoding.
//!
//! The view chunk shape ([`view_chunk_shape`]) is sized for the network (API.md
//! "Compatibility views"): a client reading a whole array makes about `⌈bytes ÷ chunk_bytes⌉`
//! requests, never one per tiny stored chunk.
//! - The read grid (the innermost chunks of a sharded array, the stored chunks otherwise) is
//!   kept when it is regular and its chunks hold at least `compat.min_chunk_bytes` decoded:
//!   a view chunk is then one stored or inner chunk, served as stored when it is already in
//!   the view's encoding.
//! - Otherwise (small chunks, rectilinear grids) view chunks of about `compat.chunk_bytes`
//!   are made, growing the last dimensions first (C order: a view chunk is then a few
//!   contiguous runs of the array, and a plane of `[time, y, x]` data is one or a few
//!   requests), each edge a multiple of the stored edge where that dimension is regular, so
//!   a view chunk covers whole stored chunks; the server assembles each from any number of
//!   stored chunks.
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

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::config::CompatConfig;
use crate::read::cache::MISSING;
use crate::read::locate::Located;
use crate::read::selection::DimSelection;
use crate::read::strings::{decode_chunk, decode_cost, fill_text};
use crate::read::{ArrayReader, ReadError};
use crate::zarr::chunk_grid::Dim;
use crate::zarr::codec::{ArrayToBytes, BytesToBytes, CodecChain, MAX_DECODED_CHUNK_BYTES, element_count};
use crate::zarr::copy::{Region, copy_region, filled};
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::ArrayMetadata;

/// The zstd level of re-encoded view chunks: zstd's default, a good speed/ratio balance for
/// chunks encoded on demand.
const ZSTD_LEVEL: i32 = 3;

/// Which store layout a view presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    V3,
    V2,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Self::V3 => "v3",
            Self::V2 => "v2",
        }
    }
}

/// A node of a view: a group (with its attributes) or an array zarrd can read.
#[derive(Debug, Clone)]
pub enum ViewNode {
    Group(Map<String, Value>),
    Array { meta: Arc<ArrayMetadata>, chunk_shape: Vec<u64> },
}

/// Every node of a dataset's view, by path ("" is the root). Intermediate directories
/// without metadata (implicit groups) become groups, since Zarr v3 has no implicit groups.
#[derive(Debug, Clone)]
pub struct ViewTree {
    pub nodes: BTreeMap<String, ViewNode>,
    /// Whether every node of the dataset is here. A tree of only the nodes along one key
    /// (a store that can neither list nor has consolidated metadata) must not claim a
    /// group's subtree: its groups then carry no consolidated metadata (and no `.zmetadata`),
    /// so clients look for members themselves instead of trusting an incomplete list.
    pub complete: bool,
}

impl Default for ViewTree {
    fn default() -> Self {
        Self { nodes: BTreeMap::new(), complete: true }
    }
}

fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    Some(path.rsplit_once('/').map_or("", |(p, _)| p))
}

impl ViewTree {
    /// Adds a node, and groups for any missing ancestors.
    pub fn insert(&mut self, path: String, node: ViewNode) {
        let mut p = parent(&path).map(str::to_owned);
        while let Some(ancestor) = p {
            p = parent(&ancestor).map(str::to_owned);
            self.nodes.entry(ancestor).or_insert_with(|| ViewNode::Group(Map::new()));
        }
        self.nodes.insert(path, node);
    }

    /// The nodes strictly below `group`, as (path relative to `group`, node).
    fn below<'a>(&'a self, group: &'a str) -> impl Iterator<Item = (&'a str, &'a ViewNode)> + 'a {
        self.nodes.iter().filter_map(move |(path, node)| {
            let rel = if group.is_empty() {
                (!path.is_empty()).then_some(path.as_str())?
            } else {
                path.strip_prefix(group)?.strip_prefix('/')?
            };
            Some((rel, node))
        })
    }

    /// The names of the direct children of `group`.
    pub fn children<'a>(&'a self, group: &'a str) -> Vec<&'a str> {
        self.below(group).map(|(rel, _)| rel).filter(|rel| !rel.contains('/')).collect()
    }

    /// The array and chunk coordinates named by a chunk key of the view, if it is one:
    /// `ARRAY/c/i/j` (v3; `ARRAY/c` for 0-d) or `ARRAY/i/j` (v2; `ARRAY/0` for 0-d).
    pub fn chunk(&self, key: &str, flavor: Flavor) -> Option<(&str, Vec<u64>)> {
        let segments: Vec<&str> = key.split('/').collect();
        for split in 0..segments.len() {
            let prefix = segments[..split].join("/");
            let Some((path, ViewNode::Array { meta, .. })) = self.nodes.get_key_value(&prefix) else { continue };
            let rest = &segments[split..];
            let indices = match flavor {
                Flavor::V3 => match rest.split_first() {
                    Some((&"c", indices)) => indices,
                    _ => continue,
                },
                Flavor::V2 if meta.shape.is_empty() && rest == ["0"] => &[][..],
                Flavor::V2 => rest,
            };
            if indices.len() != meta.shape.len() {
                continue;
            }
            let coords: Option<Vec<u64>> = indices
                .iter()
                .map(|s| s.parse::<u64>().ok().filter(|_| s.bytes().all(|b| b.is_ascii_digit())))
                .collect();
            return coords.map(|c| (path.as_str(), c));
        }
        None
    }
}

/// The view's chunk shape of an array (see the module docs for the rule).
pub fn view_chunk_shape(meta: &ArrayMetadata, configured: Option<&[u64]>, sizing: &CompatConfig) -> Vec<u64> {
    if let Some(shape) = configured.filter(|s| s.len() == meta.shape.len() && s.iter().all(|&e| e > 0)) {
        return shape.to_vec();
    }
    // The read grid's edge per dimension where it is regular.
    let regular: Vec<Option<u64>> = match meta.read_chunk_shape() {
        Some(inner) => inner.into_iter().map(|e| Some(e.max(1))).collect(),
        None => meta
            .chunk_grid
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed { edge, .. } => Some((*edge).max(1)),
                Dim::Varying { .. } => None,
            })
            .collect(),
    };
    if meta.data_type.is_variable() {
        return regular.iter().zip(&meta.chunk_grid.dims).map(|(e, d)| e.unwrap_or_else(|| covering_edge(d))).collect();
    }
    let item = meta.data_type.size() as u64;
    if let Some(edges) = regular.iter().copied().collect::<Option<Vec<u64>>>()
        && edges.iter().try_fold(item, |n, &e| n.checked_mul(e)).is_none_or(|bytes| bytes >= sizing.min_chunk_bytes)
    {
        return edges;
    }
    grown(&meta.shape, &regular, (sizing.chunk_bytes / item).max(1))
}

/// View chunk edges of about `target` elements over an array of `shape`: the last
/// dimensions first, each edge the whole extent or a multiple of its stored edge (`units`,
/// `None` where the grid is rectilinear and any edge will do).
fn grown(shape: &[u64], units: &[Option<u64>], target: u64) -> Vec<u64> {
    let mut edges = vec![1u64; shape.len()];
    let mut elements = 1u64;
    for d in (0..shape.len()).rev() {
        let unit = units[d].unwrap_or(1);
        let room = (target / elements).max(1);
        edges[d] = if shape[d] <= room { shape[d].max(1) } else { (room / unit).max(1) * unit };
        elements = elements.saturating_mul(edges[d].min(shape[d]).max(1));
    }
    edges
}

/// The edge of a dimension that covers most of its extent (ties: the larger edge).
fn covering_edge(dim: &Dim) -> u64 {
    match dim {
        Dim::Fixed { edge, .. } => (*edge).max(1),
        Dim::Varying { .. } => {
            let extent = dim.extent();
            let mut coverage: BTreeMap<u64, u64> = BTreeMap::new();
            for run in dim.runs_between(0, extent.saturating_sub(1)) {
                let end = (run.start + run.edge * run.count).min(extent);
                *coverage.entry(run.edge).or_default() += end.saturating_sub(run.start);
            }
            coverage.into_iter().max_by_key(|&(edge, covered)| (covered, edge)).map_or(1, |(edge, _)| edge.max(1))
        }
    }
}

/// The number of view chunks along each dimension.
pub fn view_grid_shape(shape: &[u64], chunk_shape: &[u64]) -> Vec<u64> {
    shape.iter().zip(chunk_shape).map(|(&n, &e)| n.div_ceil(e.max(1))).collect()
}

/// Renders one float given as its bits: a number, `"NaN"` for the canonical NaN (the only
/// one both v2 and v3 name), `"Infinity"`/`"-Infinity"`, and for other NaN payloads the v3
/// hex form (v2 has none, so they become `"NaN"` there).
fn float_json(value: f64, bits: u64, canonical_nan: u64, hex_digits: usize, flavor: Flavor) -> Value {
    if value.is_nan() {
        if bits == canonical_nan || flavor == Flavor::V2 {
            return json!("NaN");
        }
        return json!(format!("0x{bits:0hex_digits$x}"));
    }
    if value.is_infinite() {
        return json!(if value > 0.0 { "Infinity" } else { "-Infinity" });
    }
    json!(value)
}

fn scalar_json(data_type: DataType, b: &[u8], flavor: Flavor) -> Value {
    let mut a = [0u8; 8];
    a[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    let signed = |bits: u32| (i64::from_le_bytes(a) << (64 - bits)) >> (64 - bits);
    match data_type {
        DataType::Bool => json!(b[0] != 0),
        DataType::Int8 => json!(signed(8)),
        DataType::Int16 => json!(signed(16)),
        DataType::Int32 => json!(signed(32)),
        DataType::Int64 => json!(i64::from_le_bytes(a)),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => json!(u64::from_le_bytes(a)),
        DataType::Float16 => {
            let bits = u16::from_le_bytes([b[0], b[1]]);
            float_json(half::f16::from_bits(bits).to_f64(), u64::from(bits), 0x7e00, 4, flavor)
        }
        DataType::Float32 => {
            let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            float_json(f64::from(f32::from_bits(bits)), u64::from(bits), 0x7fc0_0000, 8, flavor)
        }
        DataType::Float64 => {
            let bits = u64::from_le_bytes(a);
            float_json(f64::from_bits(bits), bits, 0x7ff8_0000_0000_0000, 16, flavor)
        }
        DataType::Complex64 => {
            json!([scalar_json(DataType::Float32, &b[..4], flavor), scalar_json(DataType::Float32, &b[4..8], flavor)])
        }
        DataType::Complex128 => {
            json!([scalar_json(DataType::Float64, &b[..8], flavor), scalar_json(DataType::Float64, &b[8..16], flavor)])
        }
        // Text fill values are stored as their UTF-8 bytes.
        DataType::String => json!(String::from_utf8_lossy(b)),
    }
}

/// The fill value (little-endian element bytes) as the view's metadata writes it.
pub fn fill_json(data_type: DataType, fill: &[u8], flavor: Flavor) -> Value {
    scalar_json(data_type, fill, flavor)
}

/// The dimension names of an array: its own, else (for v2 arrays) the `_ARRAY_DIMENSIONS`
/// attribute xarray writes, when it has one string per dimension.
fn dimension_names(meta: &ArrayMetadata) -> Option<Vec<Option<String>>> {
    if let Some(names) = &meta.dimension_names {
        return Some(names.clone());
    }
    let Some(Value::Array(list)) = meta.attributes.get("_ARRAY_DIMENSIONS") else { return None };
    let names: Option<Vec<Option<String>>> = list.iter().map(|v| v.as_str().map(|s| Some(s.to_owned()))).collect();
    names.filter(|n| n.len() == meta.shape.len())
}

/// The view's codecs: `bytes` (little endian; no configuration for one-byte types, as
/// zarr-python writes it) and `zstd`; for text `vlen-utf8` and `zstd`, zarr-python 3's
/// default chain of a `string` array.
pub fn v3_codecs(data_type: DataType) -> Value {
    let bytes = if data_type.is_variable() {
        json!({"name": "vlen-utf8", "configuration": {}})
    } else if data_type.size() == 1 {
        json!({"name": "bytes"})
    } else {
        json!({"name": "bytes", "configuration": {"endian": "little"}})
    };
    json!([bytes, {"name": "zstd", "configuration": {"level": 0, "checksum": false}}])
}

/// The v3 `zarr.json` of an array in the view.
pub fn v3_array_document(meta: &ArrayMetadata, chunk_shape: &[u64]) -> Value {
    let mut doc = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": meta.shape,
        "data_type": meta.data_type.name(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_json(meta.data_type, &meta.fill_value, Flavor::V3),
        "codecs": v3_codecs(meta.data_type),
        "attributes": meta.attributes,
        "storage_transformers": [],
    });
    if let Some(names) = dimension_names(meta) {
        doc["dimension_names"] = json!(names);
    }
    doc
}

fn v3_group_document(attributes: &Map<String, Value>) -> Value {
    json!({"zarr_format": 3, "node_type": "group", "attributes": attributes})
}

impl ViewTree {
    /// The v3 `zarr.json` of the node at `path`; a group's carries its whole subtree as
    /// consolidated metadata, flattened to relative paths as zarr-python writes it (child
    /// groups with their own, empty, block), so one request opens the hierarchy. (Readers
    /// rebuild the nesting from the paths, so the members' order does not matter.)
    pub fn v3_document(&self, path: &str) -> Option<Value> {
        match self.nodes.get(path)? {
            ViewNode::Array { meta, chunk_shape } => Some(v3_array_document(meta, chunk_shape)),
            ViewNode::Group(attributes) if !self.complete => Some(v3_group_document(attributes)),
            ViewNode::Group(attributes) => {
                let mut metadata = Map::new();
                for (rel, node) in self.below(path) {
                    let doc = match node {
                        ViewNode::Array { meta, chunk_shape } => v3_array_document(meta, chunk_shape),
                        ViewNode::Group(attributes) => {
                            let mut doc = v3_group_document(attributes);
                            doc["consolidated_metadata"] = empty_consolidated();
                            doc
                        }
                    };
                    metadata.insert(rel.to_owned(), doc);
                }
                let mut doc = v3_group_document(attributes);
                doc["consolidated_metadata"] =
                    json!({"kind": "inline", "must_understand": false, "metadata": metadata});
                Some(doc)
            }
        }
    }

    /// A v2 metadata document (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`) at `path`.
    pub fn v2_document(&self, path: &str, name: &str) -> Option<Value> {
        let node = self.nodes.get(path)?;
        match (node, name) {
            (ViewNode::Array { meta, chunk_shape }, ".zarray") => Some(v2_array_document(meta, chunk_shape)),
            (ViewNode::Array { meta, .. }, ".zattrs") => Some(Value::Object(v2_attributes(meta))),
            (ViewNode::Group(_), ".zgroup") => Some(json!({"zarr_format": 2})),
            (ViewNode::Group(attributes), ".zattrs") => Some(Value::Object(attributes.clone())),
            (ViewNode::Group(attributes), ".zmetadata") if self.complete => {
                let mut metadata = Map::new();
                metadata.insert(".zgroup".into(), json!({"zarr_format": 2}));
                metadata.insert(".zattrs".into(), Value::Object(attributes.clone()));
                for (rel, node) in self.below(path) {
                    match node {
                        ViewNode::Array { meta, chunk_shape } => {
                            metadata.insert(format!("{rel}/.zarray"), v2_array_document(meta, chunk_shape));
                            metadata.insert(format!("{rel}/.zattrs"), Value::Object(v2_attributes(meta)));
                        }
                        ViewNode::Group(attributes) => {
                            metadata.insert(format!("{rel}/.zgroup"), json!({"zarr_format": 2}));
                            metadata.insert(format!("{rel}/.zattrs"), Value::Object(attributes.clone()));
                        }
                    }
                }
                Some(json!({"metadata": metadata, "zarr_consolidated_format": 1}))
            }
            _ => None,
        }
    }

    /// The metadata documents a node has in a view.
    pub fn documents(&self, path: &str, flavor: Flavor) -> &'static [&'static str] {
        match (self.nodes.get(path), flavor) {
            (None, _) => &[],
            (Some(_), Flavor::V3) => &["zarr.json"],
            (Some(ViewNode::Array { .. }), Flavor::V2) => &[".zarray", ".zattrs"],
            (Some(ViewNode::Group(_)), Flavor::V2) if self.complete => &[".zattrs", ".zgroup", ".zmetadata"],
            (Some(ViewNode::Group(_)), Flavor::V2) => &[".zattrs", ".zgroup"],
        }
    }
}

fn empty_consolidated() -> Value {
    json!({"kind": "inline", "must_understand": false, "metadata": {}})
}

/// A v2 array's attributes, with `_ARRAY_DIMENSIONS` (how v2 readers such as xarray find
/// dimension names) added from the array's dimension names when it has all of them.
fn v2_attributes(meta: &ArrayMetadata) -> Map<String, Value> {
    let mut attributes = meta.attributes.clone();
    if !attributes.contains_key("_ARRAY_DIMENSIONS")
        && let Some(names) = dimension_names(meta)
        && names.iter().all(Option::is_some)
    {
        attributes.insert("_ARRAY_DIMENSIONS".into(), json!(names));
    }
    attributes
}

/// The `.zarray` of an array in the v2 view: the same chunks and bytes as the v3 view, with
/// numcodecs' zstd as the compressor (text: `|O` objects with the `vlen-utf8` filter, which
/// frames them as the v3 codec does).
pub fn v2_array_document(meta: &ArrayMetadata, chunk_shape: &[u64]) -> Value {
    let filters = if meta.data_type.is_variable() { json!([{"id": "vlen-utf8"}]) } else { Value::Null };
    json!({
        "zarr_format": 2,
        "shape": meta.shape,
        "chunks": chunk_shape,
        "dtype": meta.data_type.npy_descr(),
        "compressor": {"id": "zstd", "level": 0},
        "fill_value": fill_json(meta.data_type, &meta.fill_value, Flavor::V2),
        "order": "C",
        "filters": filters,
        "dimension_separator": "/",
    })
}

/// Whether chunks encoded with `chain` are already what the view declares, so their stored
/// bytes can be served as they are. A zstd frame must also state its decoded size: some
/// decoders (`numcodecs.js`) need it, and `TensorStore` leaves it out.
fn is_view_encoding(chain: &CodecChain, bytes: &[u8]) -> bool {
    chain.array_to_array.is_empty()
        && matches!(chain.array_to_bytes, ArrayToBytes::Bytes(b) if !b.big_endian)
        && chain.bytes_to_bytes == [BytesToBytes::Zstd]
        && matches!(::zstd::zstd_safe::get_frame_content_size(bytes), Ok(Some(_)))
}

fn encode(data: &[u8]) -> Result<Bytes, ReadError> {
    ::zstd::bulk::compress(data, ZSTD_LEVEL)
        .map(Bytes::from)
        .map_err(|e| ReadError::Task(format!("zstd encoding of a view chunk failed: {e}")))
}

/// One encoded view chunk and the stored objects it came from.
#[derive(Debug, Clone)]
pub struct ViewChunk {
    pub bytes: Bytes,
    /// `(store key, version)` of what was read (with a byte range for inner chunks).
    pub versions: Vec<(String, String)>,
    /// Whether the stored bytes were served as they are.
    pub passthrough: bool,
}

/// The stored bytes of read-grid chunk `coords` with their key and version; `None` when
/// missing or empty.
async fn located_bytes(reader: &ArrayReader, coords: &[u64]) -> Result<Option<(String, Bytes, String)>, ReadError> {
    Ok(match reader.locate(coords).await? {
        Located::Object { key } => {
            reader.store.get_object(&key).await?.map(|object| (key, object.bytes, object.version))
        }
        Located::MissingShard { .. } | Located::Empty { .. } => None,
        Located::InShard { key, range, e_tag, version } => {
            let mut parts = reader.read_ranges(&key, e_tag.as_deref(), std::slice::from_ref(&range)).await?;
            let version = format!("{version}#{}-{}", range.start, range.end);
            Some((key, parts.pop().unwrap_or_default(), version))
        }
    })
}

/// Whether every JSON reader gets the fill value right: 64-bit integers beyond 2^53 become
/// inexact in readers that parse JSON numbers as doubles (JavaScript's `JSON.parse`, so
/// zarrita.js), which would fill missing chunks with a wrong value. For such arrays missing
/// view chunks are served filled instead of as 404, so no client depends on the fill value.
fn fill_is_exact_everywhere(meta: &ArrayMetadata) -> bool {
    const EXACT: u64 = 1 << 53;
    let mut a = [0u8; 8];
    a[..meta.fill_value.len().min(8)].copy_from_slice(&meta.fill_value[..meta.fill_value.len().min(8)]);
    match meta.data_type {
        DataType::Int64 => i64::from_le_bytes(a).unsigned_abs() <= EXACT,
        DataType::UInt64 => u64::from_le_bytes(a) <= EXACT,
        _ => true,
    }
}

/// A whole chunk of fill values, for a missing view chunk of an array whose fill value not
/// every client reads exactly.
async fn filled_chunk(reader: &ArrayReader, chunk_shape: &[u64]) -> Result<Option<ViewChunk>, ReadError> {
    if fill_is_exact_everywhere(&reader.meta) {
        return Ok(None);
    }
    let n = chunk_shape.iter().product::<u64>() as usize;
    let _held = reader.budget.reserve((n * reader.meta.data_type.size()) as u64 * 2).await?;
    let meta = Arc::clone(&reader.meta);
    let bytes = crate::ops::cpu::run(move || encode(&filled(n, &meta.fill_value))).await.map_err(ReadError::Task)??;
    Ok(Some(ViewChunk { bytes, versions: vec![(String::new(), MISSING.to_owned())], passthrough: false }))
}

/// Reads view chunk `coords` of `reader`'s array, whose view chunk shape is `chunk_shape`:
/// `None` when its stored data is entirely missing.
pub async fn view_chunk(
    reader: &ArrayReader,
    chunk_shape: &[u64],
    coords: &[u64],
) -> Result<Option<ViewChunk>, ReadError> {
    if reader.meta.data_type.is_variable() {
        return Box::pin(text_view_chunk(reader, chunk_shape, coords)).await;
    }
    let meta = &reader.meta;
    // A view chunk is a read-grid chunk (an inner chunk, or a stored chunk of a regular
    // grid): its bytes are found directly.
    if is_read_grid(reader, chunk_shape) {
        // A shard rewritten between reading its index and its bytes is retried once.
        let found = match located_bytes(reader, coords).await {
            Err(e) if e.is_changed() => located_bytes(reader, coords).await?,
            other => other?,
        };
        let Some((key, bytes, version)) = found else { return filled_chunk(reader, chunk_shape).await };
        let chain = reader.read_chain();
        let versions = vec![(key.clone(), version)];
        if is_view_encoding(chain, &bytes) {
            return Ok(Some(ViewChunk { bytes, versions, passthrough: true }));
        }
        let decoded_bytes = chunk_shape.iter().product::<u64>() * meta.data_type.size() as u64;
        let _held = reader.budget.reserve(decoded_bytes.saturating_mul(2)).await?;
        let (chain, meta, shape) = (chain.clone(), Arc::clone(meta), chunk_shape.to_vec());
        let encoded = crate::ops::cpu::run(move || {
            let data = chain
                .decode(&bytes, &shape, meta.data_type, &meta.fill_value)
                .map_err(|source| ReadError::Corrupt { key, source })?;
            encode(&data)
        })
        .await
        .map_err(ReadError::Task)??;
        return Ok(Some(ViewChunk { bytes: encoded, versions, passthrough: false }));
    }
    // Otherwise the view chunk is a region of the array, read like any slice and padded to
    // the full chunk shape with the fill value (regular grids store boundary chunks whole).
    let selection: Vec<DimSelection> = coords
        .iter()
        .zip(chunk_shape)
        .zip(&meta.shape)
        .map(|((&c, &e), &n)| {
            let start = c * e;
            DimSelection { start, step: 1, count: e.min(n.saturating_sub(start)), drop: false }
        })
        .collect();
    let output = Box::pin(reader.read(&selection, 0, false)).await?;
    if output.versions.iter().all(|(_, v)| v == MISSING) {
        return filled_chunk(reader, chunk_shape).await;
    }
    let Some(data) = output.data.into_bytes() else {
        return Err(ReadError::Task("a view chunk was read as a stream".into()));
    };
    let clipped: Vec<u64> = selection.iter().map(|s| s.count).collect();
    let item = meta.data_type.size();
    let full_bytes = chunk_shape.iter().product::<u64>() as usize * item;
    let _held = reader.budget.reserve(full_bytes as u64 * 2).await?;
    let (meta, shape) = (Arc::clone(meta), chunk_shape.to_vec());
    let reservation = output.reservation;
    let encoded = crate::ops::cpu::run(move || {
        let _reservation = reservation;
        if clipped == shape {
            return encode(&data);
        }
        let zeros = vec![0u64; shape.len()];
        let ones = vec![1u64; shape.len()];
        let mut full = filled(full_bytes / item, &meta.fill_value);
        let region = Region {
            src_shape: &clipped,
            src_start: &zeros,
            src_step: &ones,
            dst_shape: &shape,
            dst_start: &zeros,
            count: &clipped,
        };
        copy_region(&data, &mut full, &region, item);
        encode(&full)
    })
    .await
    .map_err(ReadError::Task)??;
    Ok(Some(ViewChunk { bytes: encoded, versions: output.versions, passthrough: false }))
}

/// Whether view chunk shape `chunk_shape` is the read grid of `reader` (each view chunk is
/// one stored or inner chunk).
fn is_read_grid(reader: &ArrayReader, chunk_shape: &[u64]) -> bool {
    let grid = reader.read_grid();
    grid.kind == crate::zarr::chunk_grid::GridKind::Regular
        && grid.dims.iter().zip(chunk_shape).all(|(d, &e)| matches!(d, Dim::Fixed { edge, .. } if *edge == e))
}

/// Whether text chunks encoded with `chain` are already what the view declares (`vlen-utf8`
/// then `zstd` stating its decoded size), so their stored bytes can be served as they are.
fn is_text_view_encoding(chain: &CodecChain, bytes: &[u8]) -> bool {
    chain.array_to_array.is_empty()
        && matches!(chain.array_to_bytes, ArrayToBytes::VlenUtf8)
        && chain.bytes_to_bytes == [BytesToBytes::Zstd]
        && matches!(::zstd::zstd_safe::get_frame_content_size(bytes), Ok(Some(_)))
}

/// The `vlen-utf8` framing of `n` elements: a u32 LE count, then each element's u32 LE byte
/// length and UTF-8 bytes. An element longer than 4 GiB cannot be framed (the decoders'
/// per-chunk limit keeps text far below that).
fn vlen_frame<'a>(n: usize, text_bytes: usize, elements: impl Iterator<Item = &'a str>) -> Result<Vec<u8>, ReadError> {
    let too_long = || ReadError::Task("a view chunk has more text than vlen-utf8 can frame".into());
    let mut out = Vec::with_capacity(4 + 4 * n + text_bytes);
    out.extend(u32::try_from(n).map_err(|_| too_long())?.to_le_bytes());
    for e in elements {
        out.extend(u32::try_from(e.len()).map_err(|_| too_long())?.to_le_bytes());
        out.extend(e.as_bytes());
    }
    Ok(out)
}

/// View chunk `coords` of a text array: the stored (or inner) chunk when the view's grid is
/// the read grid (served as it is when already `vlen-utf8` + `zstd`, else decoded and
/// encoded again), otherwise the region read through the text read path and padded with
/// the fill value. `None` when its stored data is entirely missing.
async fn text_view_chunk(
    reader: &ArrayReader,
    chunk_shape: &[u64],
    coords: &[u64],
) -> Result<Option<ViewChunk>, ReadError> {
    let n = element_count(chunk_shape)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n as u64 <= MAX_DECODED_CHUNK_BYTES as u64 / 4)
        .ok_or(ReadError::TooLarge {
            what: "view chunk of text",
            size: chunk_shape.iter().map(|&e| u128::from(e)).product(),
            limit: MAX_DECODED_CHUNK_BYTES as u64 / 4,
        })?;
    // At most what a client decodes of one chunk, and a quarter of the memory budget.
    let limit = (MAX_DECODED_CHUNK_BYTES as u64).min(reader.budget.total() / 4);
    if is_read_grid(reader, chunk_shape) {
        let found = match located_bytes(reader, coords).await {
            Err(e) if e.is_changed() => located_bytes(reader, coords).await?,
            other => other?,
        };
        // Text fill values are exact in every JSON reader: a missing chunk is a 404.
        let Some((key, bytes, version)) = found else { return Ok(None) };
        let chain = reader.read_chain();
        let versions = vec![(key.clone(), version)];
        if is_text_view_encoding(chain, &bytes) {
            return Ok(Some(ViewChunk { bytes, versions, passthrough: true }));
        }
        let cost = decode_cost(chain, &bytes, n as u64, limit);
        let _held = reader.budget.reserve(cost.reserve.saturating_add(cost.bound as u64 * 2)).await?;
        let (chain, shape) = (chain.clone(), chunk_shape.to_vec());
        let encoded = tokio::task::spawn_blocking(move || {
            let strings = decode_chunk(&chain, &bytes, &shape, cost, &key)?;
            // Without a transpose the decoded bytes are the framing itself.
            let framed = if chain.array_to_array.is_empty() {
                strings.bytes
            } else {
                vlen_frame(n, strings.bytes.len(), (0..n).map(|i| strings.get(i)))?
            };
            encode(&framed)
        })
        .await
        .map_err(|e| ReadError::Task(e.to_string()))??;
        return Ok(Some(ViewChunk { bytes: encoded, versions, passthrough: false }));
    }
    let selection: Vec<DimSelection> = coords
        .iter()
        .zip(chunk_shape)
        .zip(&reader.meta.shape)
        .map(|((&c, &e), &len)| {
            let start = c.saturating_mul(e);
            DimSelection { start, step: 1, count: e.min(len.saturating_sub(start)), drop: false }
        })
        .collect();
    let output = reader.read_strings(&selection, limit).await?;
    if output.versions.iter().all(|(_, v)| v == MISSING) {
        return Ok(None);
    }
    let clipped: Vec<u64> = selection.iter().map(|s| s.count).collect();
    let fill = fill_text(&reader.meta.fill_value).to_owned();
    let text_bytes: usize = output.elements.iter().map(|e| e.len()).sum::<usize>() + fill.len() * n;
    let _held = reader.budget.reserve((4 + 4 * n as u64 + text_bytes as u64).saturating_mul(2)).await?;
    let shape = chunk_shape.to_vec();
    let reservation = output.reservation;
    let elements = output.elements;
    let encoded = tokio::task::spawn_blocking(move || {
        let _reservation = reservation;
        // The chunk's elements in C order: the read region, then the fill value outside the
        // array (a boundary chunk is stored whole).
        let strides: Vec<u64> = (0..shape.len()).map(|d| clipped[d + 1..].iter().product()).collect();
        let element = |flat: usize| -> &str {
            let (mut rest, mut at, mut inside) = (flat as u64, 0u64, true);
            for d in (0..shape.len()).rev() {
                let x = rest % shape[d];
                rest /= shape[d];
                inside &= x < clipped[d];
                at += x * strides[d];
            }
            if inside { elements.get(at as usize).map_or(fill.as_str(), AsRef::as_ref) } else { fill.as_str() }
        };
        encode(&vlen_frame(n, text_bytes, (0..n).map(element))?)
    })
    .await
    .map_err(|e| ReadError::Task(e.to_string()))??;
    Ok(Some(ViewChunk { bytes: encoded, versions: output.versions, passthrough: false }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_covering_edge_of_a_rectilinear_dimension() {
        let json = json!({"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[[31, 1], [28, 1], [31, 1], [30, 1], [31, 1], [30, 1]], [1, 2, 3, 10, 10]]}});
        let grid = crate::zarr::chunk_grid::ChunkGrid::from_json(&json, &[181, 26]).unwrap();
        assert_eq!(covering_edge(&grid.dims[0]), 31);
        assert_eq!(covering_edge(&grid.dims[1]), 10);
    }

    fn array(shape: &[u64], data_type: &str, grid: &Value, codecs: &Value) -> Arc<ArrayMetadata> {
        let doc = json!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
            "chunk_grid": grid, "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs});
        let crate::zarr::metadata::Node::Array(m) = crate::zarr::metadata::Node::from_value(doc).unwrap() else {
            panic!("not an array")
        };
        m
    }

    fn regular(chunks: &[u64]) -> Value {
        json!({"name": "regular", "configuration": {"chunk_shape": chunks}})
    }

    fn sharded(inner: &[u64]) -> Value {
        json!([{"name": "sharding_indexed", "configuration": {"chunk_shape": inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}])
    }

    #[test]
    fn view_chunks_are_sized_for_the_network() {
        let sizing = CompatConfig::default();
        let bytes = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
        // The sample's t2m: shards of [31|28|30, 36, 36] holding [1, 36, 36] inner chunks of
        // 5 KiB: one view chunk of the 1 MiB wanted holds 25 whole days.
        let grid = json!({"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[31, 28, 31, 30, 31, 30, [31, 2], 30, 31, 30, 31], [[36, 2]], [[36, 4]]]}});
        let t2m = array(&[365, 72, 144], "float32", &grid, &sharded(&[1, 36, 36]));
        assert_eq!(view_chunk_shape(&t2m, None, &sizing), [25, 72, 144]);
        // 32 KiB inner chunks of a regular sharded grid grow by whole inner chunks.
        let elevation = array(&[1024, 1024], "uint16", &regular(&[512, 512]), &sharded(&[128, 128]));
        assert_eq!(view_chunk_shape(&elevation, None, &sizing), [512, 1024]);
        // Stored chunks of at least min_chunk_bytes are kept, however large.
        let big = array(&[4096, 4096], "float64", &regular(&[256, 256]), &bytes);
        assert_eq!(view_chunk_shape(&big, None, &sizing), [256, 256]);
        let huge = array(&[100_000, 100_000], "uint8", &regular(&[8192, 8192]), &bytes);
        assert_eq!(view_chunk_shape(&huge, None, &sizing), [8192, 8192]);
        // A rectilinear grid of tiny edges (many_edges: 5,949 float32 in 3,000 chunks): one
        // view chunk.
        let edges: Vec<u64> = (0..3000).map(|i| if i % 2 == 0 { 1 } else { 2 } + u64::from(i == 2999) * 450).collect();
        let n: u64 = edges.iter().sum();
        let grid = json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [edges]}});
        let many = array(&[n], "float32", &grid, &bytes);
        assert_eq!(view_chunk_shape(&many, None, &sizing), [n]);
        // A configured shape wins; 0-d arrays have no edges.
        assert_eq!(view_chunk_shape(&t2m, Some(&[1, 72, 144]), &sizing), [1, 72, 144]);
        assert_eq!(view_chunk_shape(&array(&[], "int8", &regular(&[]), &bytes), None, &sizing), Vec::<u64>::new());
    }

    proptest::proptest! {
        /// Grown view chunks: whole stored chunks (edges multiples of the stored edge, or the
        /// whole extent), never larger than wanted unless one stored chunk is, and a whole
        /// array takes at most about twice ⌈elements / target⌉ of them.
        #[test]
        fn grown_view_chunks_cover_whole_stored_chunks(
            dims in proptest::collection::vec((1u64..2000, proptest::option::of(1u64..64)), 0..4),
            target in 1u64..100_000,
        ) {
            let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let units: Vec<Option<u64>> = dims.iter().map(|d| d.1).collect();
            let edges = grown(&shape, &units, target);
            for d in 0..shape.len() {
                let unit = units[d].unwrap_or(1);
                proptest::prop_assert!(edges[d] >= 1);
                proptest::prop_assert!(edges[d].is_multiple_of(unit) || edges[d] == shape[d], "{edges:?} {units:?}");
                // An edge grown beyond one stored chunk keeps the chunk within the target.
                let from_here: u64 = edges[d..].iter().zip(&shape[d..]).map(|(&e, &n)| e.min(n)).product();
                proptest::prop_assert!(edges[d].min(shape[d]) <= unit || from_here <= target, "{edges:?} > {target}");
            }
            if units.iter().all(Option::is_none) {
                let chunks: u64 = shape.iter().zip(&edges).map(|(&n, &e)| n.div_ceil(e)).product();
                let total: u64 = shape.iter().product();
                proptest::prop_assert!(chunks <= 2 * total.div_ceil(target), "{chunks} chunks of {edges:?} for {shape:?}");
            }
        }
    }

    #[test]
    fn fill_values_in_both_flavors() {
        assert_eq!(fill_json(DataType::Float32, &0x7fc0_0000u32.to_le_bytes(), Flavor::V3), json!("NaN"));
        assert_eq!(fill_json(DataType::Float32, &0x7fc0_0001u32.to_le_bytes(), Flavor::V3), json!("0x7fc00001"));
        assert_eq!(fill_json(DataType::Float32, &0x7fc0_0001u32.to_le_bytes(), Flavor::V2), json!("NaN"));
        assert_eq!(fill_json(DataType::Float16, &half::f16::INFINITY.to_le_bytes(), Flavor::V3), json!("Infinity"));
        assert_eq!(fill_json(DataType::Float64, &1.5f64.to_le_bytes(), Flavor::V3), json!(1.5));
        assert_eq!(fill_json(DataType::Int8, &[0xff], Flavor::V3), json!(-1));
        assert_eq!(fill_json(DataType::UInt64, &u64::MAX.to_le_bytes(), Flavor::V3), json!(u64::MAX));
        let mut c = 1f32.to_le_bytes().to_vec();
        c.extend(f32::NEG_INFINITY.to_le_bytes());
        assert_eq!(fill_json(DataType::Complex64, &c, Flavor::V2), json!([1.0, "-Infinity"]));
        assert_eq!(fill_json(DataType::Bool, &[1], Flavor::V3), json!(true));
    }

    #[test]
    fn chunk_keys_name_an_array_and_its_coordinates() {
        let meta = |shape: Vec<u64>| {
            let doc = json!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": vec![1u64; shape.len()]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]});
            let crate::zarr::metadata::Node::Array(m) = crate::zarr::metadata::Node::from_value(doc).unwrap() else {
                panic!()
            };
            m
        };
        let mut tree = ViewTree::default();
        tree.insert("a/b".into(), ViewNode::Array { meta: meta(vec![4, 4]), chunk_shape: vec![1, 1] });
        tree.insert("s".into(), ViewNode::Array { meta: meta(vec![]), chunk_shape: vec![] });
        assert!(matches!(tree.nodes.get("a"), Some(ViewNode::Group(_))), "implicit parents become groups");
        assert!(matches!(tree.nodes.get(""), Some(ViewNode::Group(_))));
        assert_eq!(tree.chunk("a/b/c/1/2", Flavor::V3), Some(("a/b", vec![1, 2])));
        assert_eq!(tree.chunk("a/b/1/2", Flavor::V2), Some(("a/b", vec![1, 2])));
        assert_eq!(tree.chunk("s/c", Flavor::V3), Some(("s", vec![])));
        assert_eq!(tree.chunk("s/0", Flavor::V2), Some(("s", vec![])));
        assert_eq!(tree.chunk("a/b/c/1", Flavor::V3), None);
        assert_eq!(tree.chunk("a/b/c/1/+2", Flavor::V3), None);
        assert_eq!(tree.children(""), ["a", "s"]);
        let root = tree.v3_document("").unwrap();
        let keys: Vec<&String> = root["consolidated_metadata"]["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "a/b", "s"], "every node below the root");
    }
}
