//! The read path of `string` arrays (v3 `string` + `vlen-utf8`, v2 `|O` + `VLenUTF8`) and of
//! `variable_length_bytes` ones (v3 `vlen-bytes`, v2 `|O` + `VLenBytes`): elements are kept
//! as bytes (for text, UTF-8 checked when decoded).
//!
//! Text has no fixed element size, so it does not go through the fixed-size engine (`plan`
//! → `fetch` → `decode` → `assemble`): the read-grid chunks a selection touches are located
//! one by one (through the cached shard indexes for sharded arrays), decoded into their
//! framed bytes plus element spans, and the selected elements copied into the output in C
//! order. Missing chunks, missing shards and empty inner chunks give the fill value
//! (zarr-python's is `""`).
//!
//! Memory: nothing says how much text a chunk holds before it is decoded, so every chunk
//! reserves from the budget what its compressor records as its decoded size (or, when it
//! records none, a fixed share), and the copied text is reserved and counted against the
//! response limit before it is copied. Decoded chunks are not cached.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};

use crate::ops::budget::Reservation;
use crate::read::error::ReadError;
use crate::read::indexer::{Part, Walk};
use crate::read::locate::Located;
use crate::read::object_version::ObjectVersion;
use crate::read::reader::ArrayReader;
use crate::read::selection::DimSelection;
use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::codec::{CodecChain, CodecError, MAX_DECODED_CHUNK_BYTES, VlenStrings, element_count};

/// Read-grid chunks of text fetched and decoded at once per request: each may reserve a
/// large decode buffer, so fewer than the fixed-size engine's fan-out.
const TEXT_FAN_OUT: usize = 4;

/// Memory of one output element besides its text (a boxed slice).
pub const ELEMENT_BYTES: u64 = std::mem::size_of::<Box<[u8]>>() as u64;

/// Decoded text in C order and the versions of the objects it was read from.
#[derive(Debug)]
pub struct TextOutput {
    /// Each element's bytes (UTF-8 for text).
    pub elements: Vec<Box<[u8]>>,
    /// The budget held for `elements`; keep it until the body is built.
    pub reservation: Reservation,
    /// `(store key, version)` of every chunk or shard touched (missing ones too), sorted.
    pub object_versions: Vec<(String, ObjectVersion)>,
}

/// Where selected elements come from and go to: a chunk of `shape` (as declared, with any
/// boundary padding), the first selected element `start` and `count` of them per dimension
/// every `steps`, written at `out` of an output of `out_shape`.
pub struct Gather<'a> {
    pub shape: &'a [u64],
    pub start: &'a [u64],
    pub count: &'a [u64],
    pub steps: &'a [u64],
    pub out: &'a [u64],
    pub out_shape: &'a [u64],
}

impl Gather<'_> {
    /// Calls `f(source index in the chunk, destination index in the output)` for every
    /// selected element, in C order.
    fn for_each(&self, mut f: impl FnMut(usize, usize)) {
        let rank = self.shape.len();
        if self.count.contains(&0) {
            return;
        }
        let strides = |shape: &[u64]| -> Vec<u64> {
            let mut s = vec![1u64; shape.len()];
            // Saturating: the shape of a missing chunk comes from metadata and is never
            // checked against stored bytes; its source indices are then never used.
            for d in (0..shape.len().saturating_sub(1)).rev() {
                s[d] = s[d + 1].saturating_mul(shape[d + 1]);
            }
            s
        };
        let (src_strides, dst_strides) = (strides(self.shape), strides(self.out_shape));
        let mut idx = vec![0u64; rank];
        loop {
            let mut src = 0u64;
            let mut dst = 0u64;
            for d in 0..rank {
                let coord = self.start[d].saturating_add(idx[d].saturating_mul(self.steps[d]));
                src = src.saturating_add(coord.saturating_mul(src_strides[d]));
                // The output holds at most the response limit's elements: no overflow.
                dst += (self.out[d] + idx[d]) * dst_strides[d];
            }
            f(usize::try_from(src).unwrap_or(usize::MAX), dst as usize);
            // Next index, last dimension fastest; done when the first one wraps.
            let mut d = rank;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < self.count[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// The selected elements: `count`'s product (callers bound it by the output's size).
    fn len(&self) -> u64 {
        self.count.iter().product()
    }

    /// Text bytes of the selected elements of `chunk` (`None`: the fill value).
    fn text_bytes(&self, chunk: Option<&VlenStrings>, fill: &[u8]) -> u64 {
        match chunk {
            None => fill.len() as u64 * self.len(),
            Some(chunk) => {
                let mut total = 0u64;
                self.for_each(|src, _| total += chunk.get_bytes(src).len() as u64);
                total
            }
        }
    }

    /// Copies the selected elements of `chunk` (or the fill value) into `out`.
    fn copy(&self, chunk: Option<&VlenStrings>, fill: &[u8], out: &mut [Box<[u8]>]) {
        self.for_each(|src, dst| {
            if let Some(slot) = out.get_mut(dst) {
                *slot = Box::from(chunk.map_or(fill, |c| c.get_bytes(src)));
            }
        });
    }
}

/// The budget a chunk's decoding takes and the bound its decoders get: what its
/// compressor records (see [`CodecChain::declared_decoded_len`]), else `fallback`; at most
/// the per-chunk decode limit. Returns `(bound, bytes to reserve)`: the stored bytes (and a
/// checksum codec's copy of them), the framed text and the span table.
pub fn decode_cost(chain: &CodecChain, encoded: &[u8], elements: u64, fallback: u64) -> DecodeCost {
    let declared = chain.declared_decoded_len(encoded);
    let bound = declared.unwrap_or(fallback).min(MAX_DECODED_CHUNK_BYTES as u64).max(4);
    let spans = elements.saturating_mul(8);
    DecodeCost {
        bound: bound as usize,
        declared: declared.is_some(),
        reserve: (encoded.len() as u64).saturating_mul(2).saturating_add(bound).saturating_add(spans),
    }
}

/// What decoding one chunk of text may take.
#[derive(Debug, Clone, Copy)]
pub struct DecodeCost {
    /// The most bytes the framed text may have.
    pub bound: usize,
    /// Whether `bound` is what the compressor recorded (then more is corruption) rather
    /// than this server's share for chunks that record nothing (then more is too large).
    pub declared: bool,
    /// Bytes to reserve from the budget before decoding.
    pub reserve: u64,
}

/// Decodes a chunk's text within `cost.bound`. Text beyond a bound the compressor did not
/// record is too large to decode here (413), not corrupt.
pub fn decode_chunk(
    chain: &CodecChain,
    encoded: &[u8],
    shape: &[u64],
    cost: DecodeCost,
    key: &str,
) -> Result<VlenStrings, ReadError> {
    chain.decode_strings(encoded, shape, cost.bound).map_err(|source| match source {
        CodecError::TooLarge { limit, .. } if !cost.declared => ReadError::TooLarge {
            what: "decoded text of one chunk (its compressor does not record its size)",
            size: limit as u128 + 1,
            limit: limit as u64,
        },
        source => ReadError::Corrupt { key: key.to_owned(), source },
    })
}

/// Selected text per request part, from one read-grid chunk.
struct PartText {
    key: String,
    /// `None` for an empty inner chunk: its shard's version is recorded per shard.
    version: Option<ObjectVersion>,
    /// The budget held for the copied text.
    reservation: Reservation,
}

impl ArrayReader {
    /// The budget share of a chunk whose decoded size is not recorded: the response limit,
    /// at most a quarter of the whole budget (so a few such chunks can be decoded at once).
    fn text_fallback(&self, limit: u64) -> u64 {
        limit.min(self.budget.total() / 4)
    }

    /// Reads a resolved selection of a `string` array: its elements in C order, at most
    /// `limit` bytes of text and element table together (else [`ReadError::TooLarge`]).
    pub async fn read_strings(&self, selection: &[DimSelection], limit: u64) -> Result<TextOutput, ReadError> {
        let shape: Vec<u64> = selection.iter().map(|s| s.count).collect();
        let n = element_count(&shape).unwrap_or(u64::MAX);
        let table = u128::from(n) * u128::from(ELEMENT_BYTES);
        if table > u128::from(limit) {
            return Err(ReadError::TooLarge { what: "text", size: table, limit });
        }
        let mut reservation = self.budget.reserve(table as u64).await?;
        if n == 0 {
            return Ok(TextOutput { elements: Vec::new(), reservation, object_versions: Vec::new() });
        }
        // Counts both the stored chunks and the read-grid chunks against the limit.
        self.walk(selection)?;
        let read_grid = self.read_grid();
        let walk = Walk::new(&read_grid, selection);
        let steps: Vec<u64> = selection.iter().map(|s| s.step).collect();
        let out = Arc::new(Mutex::new(vec![Box::<[u8]>::default(); n as usize]));
        let used = AtomicU64::new(table as u64);
        let parts: Vec<PartText> = futures::stream::iter(walk.parts())
            .map(|part| {
                let ctx = PartCtx { grid: &read_grid, steps: &steps, out_shape: &shape, limit, used: &used };
                let out = Arc::clone(&out);
                async move {
                    match self.read_text_part(&ctx, &part, &out).await {
                        Err(e) if e.is_changed() => self.read_text_part(&ctx, &part, &out).await,
                        other => other,
                    }
                }
            })
            .buffer_unordered(TEXT_FAN_OUT)
            .try_collect()
            .await?;
        let mut object_versions = Vec::new();
        for p in parts {
            reservation.merge(p.reservation);
            object_versions.extend(p.version.map(|version| (p.key, version)));
        }
        if let Some(sharding) = self.meta.sharding() {
            // One version per shard, from its index (cached by the reads just done).
            object_versions.clear();
            let outer = self.walk(selection)?;
            for part in outer.parts() {
                let key = self.chunk_key(&part.coords);
                let shard_shape = self.grid().chunk_shape(&part.coords);
                let version = match self.shard_index(sharding, &key, &shard_shape).await? {
                    Some(index) => ObjectVersion::Present(index.version.clone()),
                    None => ObjectVersion::Missing,
                };
                object_versions.push((key, version));
            }
        }
        object_versions.sort_unstable();
        object_versions.dedup();
        let elements = Arc::try_unwrap(out)
            .map_err(|_| ReadError::Task("text output still shared".into()))?
            .into_inner()
            .map_err(|e| ReadError::Task(e.to_string()))?;
        Ok(TextOutput { elements, reservation, object_versions })
    }

    /// Fetches, decodes and copies out the selected elements of one read-grid chunk.
    async fn read_text_part(
        &self,
        ctx: &PartCtx<'_>,
        part: &Part,
        out: &Arc<Mutex<Vec<Box<[u8]>>>>,
    ) -> Result<PartText, ReadError> {
        let (key, version, bytes) = match self.locate(&part.coords).await? {
            Located::Object { key } => match self.store.get_object(&key).await? {
                Some(object) => (key, Some(ObjectVersion::Present(object.version)), Some(object.bytes)),
                None => (key, Some(ObjectVersion::Missing), None),
            },
            Located::MissingShard { key } => (key, Some(ObjectVersion::Missing), None),
            // The shard's version is recorded per shard by the caller.
            Located::Empty { key } => (key, None, None),
            Located::InShard { key, range, e_tag, version } => {
                let mut parts = self.read_ranges(&key, e_tag.as_deref(), std::slice::from_ref(&range)).await?;
                (key, Some(ObjectVersion::Present(version)), Some(parts.pop().unwrap_or_default()))
            }
        };
        let shape = ctx.grid.chunk_shape(&part.coords);
        let chunk_elements = element_count(&shape).unwrap_or(u64::MAX);
        let mut scratch = Reservation::default();
        let decoded = match bytes {
            None => None,
            Some(bytes) => {
                let chain = self.read_chain().clone();
                let cost = decode_cost(&chain, &bytes, chunk_elements, self.text_fallback(ctx.limit));
                scratch = self.budget.reserve(cost.reserve).await?;
                let (task_key, task_shape) = (key.clone(), shape.clone());
                let chunk = crate::ops::cpu::run(move || decode_chunk(&chain, &bytes, &task_shape, cost, &task_key))
                    .await
                    .map_err(ReadError::Task)??;
                Some(chunk)
            }
        };
        let fill = self.meta.fill_value.as_slice();
        let gather = Gather {
            shape: &shape,
            start: &part.start,
            count: &part.count,
            steps: ctx.steps,
            out: &part.out,
            out_shape: ctx.out_shape,
        };
        let text = gather.text_bytes(decoded.as_ref(), fill);
        let total = ctx.used.fetch_add(text, Ordering::Relaxed).saturating_add(text);
        if total > ctx.limit {
            return Err(ReadError::TooLarge { what: "text", size: u128::from(total), limit: ctx.limit });
        }
        let reservation = self.budget.reserve(text).await?;
        {
            let mut out = out.lock().map_err(|e| ReadError::Task(e.to_string()))?;
            gather.copy(decoded.as_ref(), fill, &mut out);
        }
        drop(scratch);
        Ok(PartText { key, version, reservation })
    }
}

/// What every part of one read shares.
struct PartCtx<'a> {
    grid: &'a ChunkGrid,
    steps: &'a [u64],
    out_shape: &'a [u64],
    limit: u64,
    used: &'a AtomicU64,
}

/// The elements of a decoded chunk of `shape` inside `clipped` (the part within the array),
/// in C order: what `/v1/chunk?decoded=true` returns.
pub fn clip(chunk: &VlenStrings, shape: &[u64], clipped: &[u64]) -> Vec<Box<[u8]>> {
    let n = element_count(clipped).unwrap_or(0) as usize;
    let mut out = vec![Box::<[u8]>::default(); n];
    let zeros = vec![0; shape.len()];
    let ones = vec![1; shape.len()];
    let gather = Gather { shape, start: &zeros, count: clipped, steps: &ones, out: &zeros, out_shape: clipped };
    gather.copy(Some(chunk), b"", &mut out);
    out
}

/// Text bytes of the elements of a decoded chunk inside `clipped`.
pub fn clipped_text_bytes(chunk: &VlenStrings, shape: &[u64], clipped: &[u64]) -> u64 {
    let zeros = vec![0; shape.len()];
    let ones = vec![1; shape.len()];
    Gather { shape, start: &zeros, count: clipped, steps: &ones, out: &zeros, out_shape: clipped }
        .text_bytes(Some(chunk), b"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(items: &[&str]) -> VlenStrings {
        let mut bytes = (items.len() as u32).to_le_bytes().to_vec();
        for s in items {
            bytes.extend((s.len() as u32).to_le_bytes());
            bytes.extend(s.as_bytes());
        }
        crate::zarr::codec::vlen::decode(bytes, items.len() as u64).unwrap()
    }

    #[test]
    fn gathers_strided_parts_into_c_order() {
        // A 3x4 chunk; take rows 0 and 2, columns 1 and 3, into a 2x2 output at (0, 0).
        let c = chunk(&["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3", "c0", "c1", "c2", "c3"]);
        let mut out = vec![Box::<[u8]>::default(); 4];
        let g =
            Gather { shape: &[3, 4], start: &[0, 1], count: &[2, 2], steps: &[2, 2], out: &[0, 0], out_shape: &[2, 2] };
        assert_eq!(g.text_bytes(Some(&c), b""), 8);
        g.copy(Some(&c), b"", &mut out);
        assert_eq!(
            out.iter().map(|e| std::str::from_utf8(e).unwrap()).collect::<Vec<&str>>(),
            ["a1", "a3", "c1", "c3"]
        );
        // The fill value, for a missing chunk, into the second output row.
        let mut out = vec![Box::<[u8]>::default(); 4];
        let g =
            Gather { shape: &[3, 4], start: &[0, 0], count: &[1, 2], steps: &[1, 1], out: &[1, 0], out_shape: &[2, 2] };
        assert_eq!(g.text_bytes(None, b"n/a"), 6);
        g.copy(None, b"n/a", &mut out);
        assert_eq!(out.iter().map(|e| std::str::from_utf8(e).unwrap()).collect::<Vec<&str>>(), ["", "", "n/a", "n/a"]);
        // 0-d.
        let c = chunk(&["only"]);
        let mut out = vec![Box::<[u8]>::default(); 1];
        Gather { shape: &[], start: &[], count: &[], steps: &[], out: &[], out_shape: &[] }.copy(
            Some(&c),
            b"",
            &mut out,
        );
        assert_eq!(&*out[0], b"only");
        // Clipping a boundary chunk drops its padding.
        let c = chunk(&["x", "y", ""]);
        assert_eq!(
            clip(&c, &[3], &[2]).iter().map(|e| std::str::from_utf8(e).unwrap()).collect::<Vec<&str>>(),
            ["x", "y"]
        );
        assert_eq!(clipped_text_bytes(&c, &[3], &[2]), 2);
    }
}
