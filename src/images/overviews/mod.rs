//! `zarrd overviews`: writes an OME-NGFF 0.5 multiscale pyramid
//! (<https://ngff.openmicroscopy.org/0.5/#multiscale-md>) of an array, so IIIF reduced
//! sizes read a small level instead of the full resolution (configured as the array's
//! overview source, `datasets.NAME.overviews`).
//!
//! The pyramid is a group whose `zarr.json` carries `attributes.ome.multiscales`, and one
//! Zarr v3 array per level, `0` (the full resolution, a bit-for-bit copy) to `n`, each
//! `sharding_indexed` (inner chunks `tile` × `tile` in the last two dimensions, shards
//! four inner chunks on a side, index at the end with a `crc32c`), inner chunks `bytes`
//! (little endian) + `zstd`, with the source's data type, fill value and leading
//! dimensions.
//!
//! Level `k` is the source reduced by `2^k` along the last two dimensions, with exactly
//! the rule of IIIF reduced sizes ([`Reducer`], one implementation): each element is the
//! mean of the valid values (not the fill value, not NaN) of its `2^k` × `2^k` block of
//! the *source*; at an odd edge the last block is partial (`ceil(n / 2^k)` elements) and
//! averages what it holds; a block with no valid value is the fill value. Integer (and
//! boolean) means are rounded half to even, as `numpy.rint`. Levels stop at the first one
//! that fits one tile (largest side `<= tile`).
//!
//! Memory stays bounded whatever the array's size: each shard is computed on its own from
//! bands of source rows read through the read engine (under the memory budget and the
//! per-request chunk limit), then written with one PUT; only one shard and one band are in
//! memory at a time. The group's `zarr.json` is written last, so an interrupted run leaves
//! no pyramid that looks complete.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::compat::V3Group;
use object_store::ObjectStoreExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;

use crate::catalog::open_url;
use crate::images::overviews::error::Result;
use crate::images::render::Reducer;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::read::{ArrayReader, ReadError};
use zarrd_core::store::Store;

pub mod error;
mod metadata;
mod shard;

pub use error::OverviewsError;
use metadata::{group_attributes, level_metadata};
pub use shard::{SHARD_TILES, ShardGeometry, element_bytes, encode_shard};

/// The largest `--tile-size`: a shard is then 4096 × 4096 elements, whose working copy
/// (16 bytes an element while averaging) is 256 MiB.
pub const MAX_TILE: u64 = 1024;

/// What to write.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Inner chunk edge in the last two dimensions, and the size the coarsest level fits.
    pub tile: u64,
    /// Source columns averaged at once (see [`level_region`]).
    pub piece_columns: u64,
    /// Bytes of decoded source elements read at once (at least one row of a piece).
    pub band_bytes: u64,
}

impl Options {
    /// The defaults for tiles of `tile` pixels: pieces of 4096 columns, bands of 16 MiB.
    pub fn with_tile(tile: u64) -> Self {
        Self { tile, piece_columns: 4096, band_bytes: 16 << 20 }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::with_tile(crate::images::iiif::TILE_SIZE)
    }
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The shape of each level, finest first.
    pub levels: Vec<Vec<u64>>,
    /// Shard objects written (shards holding only fill are not written).
    pub shards: u64,
    pub bytes: u64,
}

/// The number of halvings until the larger of `height` and `width` is at most `tile`.
pub fn coarsest_level(height: u64, width: u64, tile: u64) -> u32 {
    let mut k = 0;
    while k < 62 && height.max(width).div_ceil(1 << k) > tile.max(1) {
        k += 1;
    }
    k
}

/// Opens the destination of `--out`: a local directory (a plain path or `file://`,
/// created if missing) or an object store URL (`s3://`, `gs://`, `az://`) opened with
/// `options` (the credentials of the source dataset's configuration).
pub fn open_output(url: &str, options: (&str, &BTreeMap<String, String>)) -> Result<Store> {
    let local = if url.contains("://") {
        let parsed = url::Url::parse(url).map_err(|e| OverviewsError::Destination(format!("--out `{url}`: {e}")))?;
        if parsed.scheme() == "file" {
            Some(
                parsed
                    .to_file_path()
                    .map_err(|()| OverviewsError::Destination(format!("--out `{url}` is not a valid file URL")))?,
            )
        } else {
            None
        }
    } else {
        Some(std::path::PathBuf::from(url))
    };
    match local {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| OverviewsError::Destination(format!("cannot create `{}`: {e}", dir.display())))?;
            let fs = LocalFileSystem::new_with_prefix(&dir)
                .map_err(|e| OverviewsError::Destination(format!("cannot open `{}`: {e}", dir.display())))?;
            Ok(Store::new(Arc::new(fs), ObjectPath::default()))
        }
        None => open_url("--out", url, options).map_err(|e| OverviewsError::Destination(e.to_string())),
    }
}

/// Writes the pyramid of `source` into `out` (which must hold no `zarr.json` or
/// `0/zarr.json` yet).
/// `name` names the image in the multiscales metadata.
pub async fn write(source: &ArrayReader, out: &Store, name: &str, options: Options) -> Result<Summary> {
    let meta = &source.meta;
    let rank = meta.shape.len();
    if rank < 2 {
        return Err(OverviewsError::Refused(format!(
            "`{}` has {rank} dimension(s); overviews reduce the last two, so it needs at least two",
            source.path
        )));
    }
    if !meta.data_type.is_real_number() {
        return Err(OverviewsError::Refused(format!(
            "`{}` holds {} values, which have no mean; overviews need real numbers",
            source.path,
            meta.data_type.name()
        )));
    }
    if !(1..=MAX_TILE).contains(&options.tile) {
        return Err(OverviewsError::Refused(format!("the tile size must be 1 to {MAX_TILE}, got {}", options.tile)));
    }
    // A finished pyramid, or the start of an interrupted run (whose shards might not be
    // overwritten by this one's, with another tile size), is never written over.
    for key in ["zarr.json", "0/zarr.json"] {
        if out.get(key).await?.is_some() {
            return Err(OverviewsError::Refused(format!(
                "the output already holds {key}; remove what is there (or choose another --out) to write overviews"
            )));
        }
    }
    let (height, width) = (meta.shape[rank - 2], meta.shape[rank - 1]);
    let leading = meta.shape[..rank - 2].to_vec();
    // A band (with the chunks it decodes and the bytes it fetches, each about its size)
    // and the reducer must fit the memory budget together.
    let options = Options { band_bytes: options.band_bytes.min((source.budget.total() / 8).max(1)), ..options };
    let top = coarsest_level(height, width, options.tile);
    let shard_edge = options.tile * SHARD_TILES;
    let mut summary = Summary { levels: Vec::new(), shards: 0, bytes: 0 };
    for k in 0..=top {
        let (lh, lw) = (height.div_ceil(1 << k), width.div_ceil(1 << k));
        let mut shape = leading.clone();
        shape.extend([lh, lw]);
        tracing::info!(level = k, shape = ?shape, "writing overview level");
        put(out, &format!("{k}/zarr.json"), level_metadata(source, &shape, options.tile)).await?;
        let mut plane = vec![0u64; leading.len()];
        let planes = leading.iter().fold(1u64, |n, &e| n.saturating_mul(e));
        for _ in 0..planes {
            for sy in 0..lh.div_ceil(shard_edge) {
                for sx in 0..lw.div_ceil(shard_edge) {
                    let rows = sy * shard_edge..((sy + 1) * shard_edge).min(lh);
                    let cols = sx * shard_edge..((sx + 1) * shard_edge).min(lw);
                    let values = level_region(source, &plane, k, (rows.clone(), cols.clone()), options).await?;
                    let geometry =
                        ShardGeometry { rows: rows.end - rows.start, cols: cols.end - cols.start, tile: options.tile };
                    let shard = encode_shard(&values, geometry, &meta.fill_value)?;
                    if let Some(bytes) = shard {
                        let coords: Vec<String> = plane.iter().chain([&sy, &sx]).map(u64::to_string).collect();
                        summary.shards += 1;
                        summary.bytes += bytes.len() as u64;
                        put(out, &format!("{k}/c/{}", coords.join("/")), bytes).await?;
                    }
                }
            }
            // The next plane, in C order of the leading indices.
            for d in (0..plane.len()).rev() {
                plane[d] += 1;
                if plane[d] < leading[d] {
                    break;
                }
                plane[d] = 0;
            }
        }
        summary.levels.push(shape);
    }
    let attributes = match serde_json::to_value(group_attributes(source, name, top)) {
        Ok(serde_json::Value::Object(attributes)) => attributes,
        _ => serde_json::Map::new(),
    };
    let group = V3Group { zarr_format: 3, node_type: "group", attributes, consolidated_metadata: None };
    put(out, "zarr.json", serde_json::to_vec(&group).unwrap_or_default()).await?;
    Ok(summary)
}

async fn put(out: &Store, key: &str, bytes: Vec<u8>) -> Result<()> {
    let path = out.path(key)?;
    out.backend()
        .put(&path, bytes.into())
        .await
        .map_err(|e| OverviewsError::Write(format!("cannot write `{key}` of the overviews: {e}")))?;
    Ok(())
}

/// Rows `rows`, columns `cols` of level `k` of the plane at leading indices `plane`, as
/// little-endian elements of the source's type.
///
/// The source block behind them is read in pieces of at most `piece_columns` columns
/// and, within a piece, in bands of rows of at most `band_bytes`, so a coarse level's
/// shard (whose source block may be as wide as the whole array) never needs more than one
/// band in memory, and a band spans whole rows of chunks of usual shapes.
async fn level_region(
    source: &ArrayReader,
    plane: &[u64],
    k: u32,
    (rows, cols): (std::ops::Range<u64>, std::ops::Range<u64>),
    options: Options,
) -> Result<Vec<u8>> {
    let meta = &source.meta;
    let rank = meta.shape.len();
    let (height, width) = (meta.shape[rank - 2], meta.shape[rank - 1]);
    let f = 1u64 << k;
    let (y0, y1) = (rows.start.saturating_mul(f), rows.end.saturating_mul(f).min(height));
    let item = meta.data_type.size();
    let (out_h, out_w) = ((rows.end - rows.start) as usize, (cols.end - cols.start) as usize);
    // Pieces and bands also stay within the per-request chunk limit: narrower pieces (a
    // row of one must fit) and fewer rows where the chunks are small.
    let select = |y: std::ops::Range<u64>, x: std::ops::Range<u64>| -> Vec<DimSelection> {
        let mut s: Vec<DimSelection> =
            plane.iter().map(|&i| DimSelection { start: i, step: 1, count: 1, drop: true }).collect();
        s.push(DimSelection { start: y.start, step: 1, count: y.end - y.start, drop: false });
        s.push(DimSelection { start: x.start, step: 1, count: x.end - x.start, drop: false });
        s
    };
    let piece_columns = (options.piece_columns / f).max(1).min(cols.end - cols.start);
    // The output, and the reducer of one piece.
    let working =
        (out_h * out_w * item) as u64 + if k == 0 { 0 } else { Reducer::bytes(f, piece_columns * f, y1 - y0) };
    let held = source.budget.reserve(working).await?;
    let mut out = vec![0u8; out_h * out_w * item];
    let mut col = cols.start;
    while col < cols.end {
        let mut piece = piece_columns.min(cols.end - col);
        while piece > 1
            && source.check_chunks(&select(y0..y0 + 1, col * f..(col + piece).saturating_mul(f).min(width))).is_err()
        {
            piece /= 2;
        }
        let col_end = col + piece;
        let (x0, x1) = (col.saturating_mul(f), col_end.saturating_mul(f).min(width));
        let src_w = x1 - x0;
        let at = (col - cols.start) as usize * item;
        let piece_bytes = (col_end - col) as usize * item;
        let mut band_rows = (options.band_bytes / (src_w * item as u64).max(1)).max(1);
        let mut reducer = (k > 0).then(|| Reducer::new(f, src_w, y1 - y0));
        let mut y = y0;
        while y < y1 {
            let mut selection = select(y..(y + band_rows).min(y1), x0..x1);
            while band_rows > 1 && source.check_chunks(&selection).is_err() {
                band_rows /= 2;
                selection = select(y..(y + band_rows).min(y1), x0..x1);
            }
            let end = (y + band_rows).min(y1);
            let data = source.read_whole(&selection).await.map_err(|e| match e {
                ReadError::TooManyChunks { chunks, limit } => OverviewsError::Refused(format!(
                    "one row of {src_w} elements of `{}` spans {chunks} chunks, more than limits.max_chunks_per_request ({limit}) of the configuration; raise it for this command",
                    source.path
                )),
                other => OverviewsError::Read(other),
            })?
            .data;
            match &mut reducer {
                Some(reducer) => reducer.add_rows(y - y0, &data, src_w, meta.data_type, &meta.fill_value),
                None => {
                    // Level 0: the elements themselves, row by row into the output.
                    for (i, row) in data.chunks_exact(piece_bytes).enumerate() {
                        let from = ((y - y0) as usize + i) * out_w * item + at;
                        out[from..from + piece_bytes].copy_from_slice(row);
                    }
                }
            }
            y = end;
        }
        if let Some(reducer) = reducer {
            let reduced = reducer.finish();
            let mut bytes = Vec::with_capacity(piece_bytes);
            for (i, values) in reduced.values.chunks_exact(reduced.width).enumerate() {
                bytes.clear();
                for &v in values {
                    if v.is_nan() {
                        bytes.extend_from_slice(&meta.fill_value);
                    } else {
                        element_bytes(v, meta.data_type, &mut bytes);
                    }
                }
                let from = i * out_w * item + at;
                out[from..from + piece_bytes].copy_from_slice(&bytes);
            }
        }
        col = col_end;
    }
    drop(held);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_stop_when_the_image_fits_one_tile() {
        assert_eq!(coarsest_level(100, 100, 16), 3); // 100, 50, 25, 13
        assert_eq!(coarsest_level(256, 10, 256), 0);
        assert_eq!(coarsest_level(257, 10, 256), 1);
        assert_eq!(coarsest_level(6, 5, 4), 1);
    }
}
