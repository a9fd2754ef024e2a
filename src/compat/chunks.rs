//! View chunks: a stored or inner chunk served as stored when it is already in the view's
//! encoding, else read (any region, through the read path), padded with the fill value to
//! the whole chunk shape and encoded with zstd; text chunks framed with `vlen-utf8`.

use std::sync::Arc;

use bytes::Bytes;

use zarrd_core::read::locate::Located;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::read::strings::{decode_chunk, decode_cost};
use zarrd_core::read::{ArrayReader, ObjectVersion, ReadError, WholeRead};
use zarrd_core::zarr::chunk_grid::Dim;
use zarrd_core::zarr::codec::{ArrayToBytes, BytesToBytes, CodecChain, MAX_DECODED_CHUNK_BYTES, element_count};
use zarrd_core::zarr::copy::{Region, copy_region, filled};
use zarrd_core::zarr::data_type::DataType;
use zarrd_core::zarr::metadata::ArrayMetadata;

/// The zstd level of re-encoded view chunks: zstd's default, a good speed/ratio balance for
/// chunks encoded on demand.
const ZSTD_LEVEL: i32 = 3;

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
    pub object_versions: Vec<(String, ObjectVersion)>,
    /// Whether the stored bytes were served as they are.
    pub passthrough: bool,
}

/// The stored bytes of read-grid chunk `coords` with their key and version; `None` when
/// missing or empty.
async fn located_bytes(
    reader: &ArrayReader,
    coords: &[u64],
) -> Result<Option<(String, Bytes, ObjectVersion)>, ReadError> {
    Ok(match reader.locate(coords).await? {
        Located::Object { key } => {
            reader.store.get_object(&key).await?.map(|object| (key, object.bytes, object.version.into()))
        }
        Located::MissingShard { .. } | Located::Empty { .. } => None,
        Located::InShard { key, range, e_tag, version } => {
            let mut parts = reader.read_ranges(&key, e_tag.as_deref(), std::slice::from_ref(&range)).await?;
            let version = format!("{version}#{}-{}", range.start, range.end);
            Some((key, parts.pop().unwrap_or_default(), version.into()))
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
    let bytes =
        zarrd_core::ops::cpu::run(move || encode(&filled(n, &meta.fill_value))).await.map_err(ReadError::Task)??;
    let object_versions = vec![(String::new(), ObjectVersion::Missing)];
    Ok(Some(ViewChunk { bytes, object_versions, passthrough: false }))
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
        let object_versions = vec![(key.clone(), version)];
        if is_view_encoding(chain, &bytes) {
            return Ok(Some(ViewChunk { bytes, object_versions, passthrough: true }));
        }
        let decoded_bytes = chunk_shape.iter().product::<u64>() * meta.data_type.size() as u64;
        let _held = reader.budget.reserve(decoded_bytes.saturating_mul(2)).await?;
        let (chain, meta, shape) = (chain.clone(), Arc::clone(meta), chunk_shape.to_vec());
        let encoded = zarrd_core::ops::cpu::run(move || {
            let data = chain
                .decode(&bytes, &shape, meta.data_type, &meta.fill_value)
                .map_err(|source| ReadError::Corrupt { key, source })?;
            encode(&data)
        })
        .await
        .map_err(ReadError::Task)??;
        return Ok(Some(ViewChunk { bytes: encoded, object_versions, passthrough: false }));
    }
    // Otherwise the view chunk is a region of the array, read like any slice and padded to
    // the full chunk shape with the fill value (regular grids store boundary chunks whole).
    let selection = view_region(coords, chunk_shape, &meta.shape);
    let whole = Box::pin(reader.read_whole(&selection)).await?;
    if whole.object_versions.iter().all(|(_, v)| v.is_missing()) {
        return filled_chunk(reader, chunk_shape).await;
    }
    let WholeRead { data, reservation, object_versions } = whole;
    let clipped: Vec<u64> = selection.iter().map(|s| s.count).collect();
    let item = meta.data_type.size();
    let full_bytes = chunk_shape.iter().product::<u64>() as usize * item;
    let _held = reader.budget.reserve(full_bytes as u64 * 2).await?;
    let (meta, shape) = (Arc::clone(meta), chunk_shape.to_vec());
    let encoded = zarrd_core::ops::cpu::run(move || {
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
    Ok(Some(ViewChunk { bytes: encoded, object_versions, passthrough: false }))
}

/// The region of an array of `shape` that view chunk `coords` covers, clipped to the array
/// (a boundary view chunk is padded with the fill value afterwards).
fn view_region(coords: &[u64], chunk_shape: &[u64], shape: &[u64]) -> Vec<DimSelection> {
    coords
        .iter()
        .zip(chunk_shape)
        .zip(shape)
        .map(|((&c, &e), &n)| {
            let start = c.saturating_mul(e);
            DimSelection { start, step: 1, count: e.min(n.saturating_sub(start)), drop: false }
        })
        .collect()
}

/// Whether view chunk shape `chunk_shape` is the read grid of `reader` (each view chunk is
/// one stored or inner chunk).
fn is_read_grid(reader: &ArrayReader, chunk_shape: &[u64]) -> bool {
    let grid = reader.read_grid();
    grid.kind == zarrd_core::zarr::chunk_grid::GridKind::Regular
        && grid.dims.iter().zip(chunk_shape).all(|(d, &e)| matches!(d, Dim::Fixed { edge, .. } if *edge == e))
}

/// Whether text chunks encoded with `chain` are already what the view declares (`vlen-utf8`
/// then `zstd` stating its decoded size), so their stored bytes can be served as they are.
fn is_text_view_encoding(chain: &CodecChain, bytes: &[u8]) -> bool {
    // Either framing is what the view declares for its type (`vlen-utf8` or `vlen-bytes`).
    chain.array_to_array.is_empty()
        && matches!(chain.array_to_bytes, ArrayToBytes::VlenUtf8 | ArrayToBytes::VlenBytes)
        && chain.bytes_to_bytes == [BytesToBytes::Zstd]
        && matches!(::zstd::zstd_safe::get_frame_content_size(bytes), Ok(Some(_)))
}

/// The `vlen-utf8` framing of `n` elements: a u32 LE count, then each element's u32 LE byte
/// length and UTF-8 bytes. An element longer than 4 GiB cannot be framed (the decoders'
/// per-chunk limit keeps text far below that).
fn vlen_frame<'a>(n: usize, text_bytes: usize, elements: impl Iterator<Item = &'a [u8]>) -> Result<Vec<u8>, ReadError> {
    let too_long = || ReadError::Task("a view chunk has more text than vlen-utf8 can frame".into());
    let mut out = Vec::with_capacity(4 + 4 * n + text_bytes);
    out.extend(u32::try_from(n).map_err(|_| too_long())?.to_le_bytes());
    for e in elements {
        out.extend(u32::try_from(e.len()).map_err(|_| too_long())?.to_le_bytes());
        out.extend(e);
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
        let object_versions = vec![(key.clone(), version)];
        if is_text_view_encoding(chain, &bytes) {
            return Ok(Some(ViewChunk { bytes, object_versions, passthrough: true }));
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
                vlen_frame(n, strings.bytes.len(), (0..n).map(|i| strings.get_bytes(i)))?
            };
            encode(&framed)
        })
        .await
        .map_err(|e| ReadError::Task(e.to_string()))??;
        return Ok(Some(ViewChunk { bytes: encoded, object_versions, passthrough: false }));
    }
    let selection = view_region(coords, chunk_shape, &reader.meta.shape);
    let output = reader.read_strings(&selection, limit).await?;
    if output.object_versions.iter().all(|(_, v)| v.is_missing()) {
        return Ok(None);
    }
    let clipped: Vec<u64> = selection.iter().map(|s| s.count).collect();
    let fill = reader.meta.fill_value.clone();
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
        let element = |flat: usize| -> &[u8] {
            let (mut rest, mut at, mut inside) = (flat as u64, 0u64, true);
            for d in (0..shape.len()).rev() {
                let x = rest % shape[d];
                rest /= shape[d];
                inside &= x < clipped[d];
                at += x * strides[d];
            }
            if inside { elements.get(at as usize).map_or(fill.as_slice(), AsRef::as_ref) } else { fill.as_slice() }
        };
        encode(&vlen_frame(n, text_bytes, (0..n).map(element))?)
    })
    .await
    .map_err(|e| ReadError::Task(e.to_string()))??;
    Ok(Some(ViewChunk { bytes: encoded, object_versions: output.object_versions, passthrough: false }))
}
