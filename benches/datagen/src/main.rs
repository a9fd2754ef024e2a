//! Writes the zarrd benchmark dataset with zarrs (never part of zarrd's build or tests).
//!
//! `datagen OUT_DIR` creates a Zarr v3 hierarchy in `OUT_DIR/data.zarr`:
//! - `tiles`: float32 8192×8192, rectilinear (uneven) shard grid with edges that are
//!   multiples of 256, `sharding_indexed` with 256×256 inner chunks, zstd level 3 inside,
//!   index at the end with crc32c;
//! - `large`: float32 6144×6144, regular 1024×1024 shards of 128×128 zstd inner chunks, so
//!   the 4096×4096 (64 MiB) benchmark region spans 16 shards and 1024 inner chunks;
//! - `rect`: float32 2000×3000, rectilinear unsharded (bytes + zstd) with uneven edges;
//!   the benchmark slice crosses 4×4 = 16 of its chunks.
//!
//! Then `virtual/`: `large` again as a kerchunk reference set and as Icechunk repositories
//! (native and virtual chunks) over the same bytes (`virtual_sets`).
//!
//! Beside it: `tile.bin`, the raw little-endian bytes of the hot tile (exactly the body
//! zarrd returns for it with `format=bin`, 256·256·4 bytes) for nginx to serve, and
//! `bench.env`, the selections the benchmark uses (sourced by `benches/run.sh`).

mod virtual_sets;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use zarrs::array::codec::ZstdCodec;
use zarrs::array::{Array, ArrayBuilder, ArrayBytes, ArraySubset, data_type};
use zarrs::filesystem::FilesystemStore;
use zarrs::group::GroupBuilder;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// `tiles` shard edges (each a multiple of 256), summing to 8192 per dimension.
const TILES_ROWS: [u64; 8] = [1024, 1536, 512, 2048, 768, 1280, 256, 768];
const TILES_COLS: [u64; 7] = [2048, 512, 1280, 1024, 768, 1536, 1024];
const TILES_SHAPE: [u64; 2] = [8192, 8192];
const TILE: u64 = 256;
/// The hot tile, in inner-chunk coordinates (inside shard (1, 1): rows 1024..2560, cols 2048..2560).
const HOT_TILE: [u64; 2] = [6, 9];
/// The viewport: 8×8 tiles starting at this inner-chunk coordinate (crosses several shards).
const VIEWPORT_ORIGIN: [u64; 2] = [7, 6];
const VIEWPORT_TILES: u64 = 8;

const LARGE_SHAPE: [u64; 2] = [6144, 6144];
const LARGE_SHARD: u64 = 1024;
const LARGE_INNER: u64 = 128;
/// 4096×4096 float32 = 64 MiB, aligned to shards: 16 shards, 1024 inner chunks.
const LARGE_REGION: [std::ops::Range<u64>; 2] = [1024..5120, 1024..5120];

const RECT_ROWS: [u64; 7] = [137, 311, 90, 402, 260, 500, 300];
const RECT_COLS: [u64; 6] = [450, 123, 677, 350, 900, 500];
const RECT_SHAPE: [u64; 2] = [2000, 3000];
/// Rows 130..545 touch row chunks 0..=3, columns 440..1260 column chunks 0..=3: 16 chunks.
const RECT_REGION: [std::ops::Range<u64>; 2] = [130..545, 440..1260];

/// A cheap deterministic hash in [0, 1) for a little roughness.
fn hash01(y: u64, x: u64) -> f32 {
    let mut h = y.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ x.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// Smooth, terrain-like field (metres), quantized to 1/8 m as real elevation products
/// are, so zstd finds the redundancy a real raster has (neither constant nor noise).
fn field(y: u64, x: u64) -> f32 {
    let (fy, fx) = (y as f32, x as f32);
    let v = 1200.0
        + 600.0 * (fx * 0.0021 + 0.8 * (fy * 0.0013).sin()).sin()
        + 350.0 * (fy * 0.0029 - fx * 0.0007).cos()
        + 80.0 * (fx * 0.017).sin() * (fy * 0.011).cos()
        + 12.0 * (fx * 0.09 + fy * 0.05).sin()
        + 0.75 * hash01(y, x);
    (v * 8.0).round() / 8.0
}

/// Values of the region `rows × cols` (global coordinates), C order.
fn block(rows: std::ops::Range<u64>, cols: std::ops::Range<u64>) -> Vec<f32> {
    let mut out = Vec::with_capacity(((rows.end - rows.start) * (cols.end - cols.start)) as usize);
    for y in rows {
        for x in cols.clone() {
            out.push(field(y, x));
        }
    }
    out
}

fn rectilinear(rows: &[u64], cols: &[u64]) -> String {
    serde_json::json!({
        "name": "rectilinear",
        "configuration": {"kind": "inline", "chunk_shapes": [rows, cols]}
    })
    .to_string()
}

fn prefix(edges: &[u64]) -> Vec<u64> {
    let mut starts = vec![0];
    for e in edges {
        starts.push(starts.last().unwrap() + e);
    }
    starts
}

/// Writes every chunk (shard) of `array` from [`field`], in parallel.
fn write_all(array: &Array<FilesystemStore>, row_starts: &[u64], col_starts: &[u64]) -> Result<(), Error> {
    let chunks: Vec<(u64, u64)> = (0..row_starts.len() as u64 - 1)
        .flat_map(|i| (0..col_starts.len() as u64 - 1).map(move |j| (i, j)))
        .collect();
    chunks.par_iter().try_for_each(|&(i, j)| -> Result<(), Error> {
        let (i, j) = (i as usize, j as usize);
        let data = block(row_starts[i]..row_starts[i + 1], col_starts[j]..col_starts[j + 1]);
        array.store_chunk(&[i as u64, j as u64], data)?;
        Ok(())
    })
}

fn dir_size(path: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                total += dir_size(&p);
            } else if p.file_name().is_some_and(|n| n != "zarr.json") {
                total += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    total
}

fn range_sel(r: &[std::ops::Range<u64>; 2]) -> String {
    format!("{}:{},{}:{}", r[0].start, r[0].end, r[1].start, r[1].end)
}

fn main() -> Result<(), Error> {
    let out: PathBuf = std::env::args().nth(1).ok_or("usage: datagen OUT_DIR")?.into();
    let root = out.join("data.zarr");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    std::fs::create_dir_all(&root)?;
    let store = Arc::new(FilesystemStore::new(&root)?);
    GroupBuilder::new().build(store.clone(), "/")?.store_metadata()?;
    let zstd3 = || -> Arc<ZstdCodec> { Arc::new(ZstdCodec::new(3, false)) };

    // tiles: rectilinear shards of 256×256 zstd inner chunks.
    let t0 = Instant::now();
    let tiles = ArrayBuilder::new(
        TILES_SHAPE.to_vec(),
        rectilinear(&TILES_ROWS, &TILES_COLS).as_str(),
        data_type::float32(),
        f32::NAN,
    )
    .subchunk_shape(vec![TILE, TILE])
    .bytes_to_bytes_codecs(vec![zstd3()])
    .dimension_names(["y", "x"].into())
    .build(store.clone(), "/tiles")?;
    tiles.store_metadata()?;
    write_all(&tiles, &prefix(&TILES_ROWS), &prefix(&TILES_COLS))?;
    let raw = TILES_SHAPE.iter().product::<u64>() * 4;
    let stored = dir_size(&root.join("tiles"));
    println!(
        "tiles: {:?} f32, {} shards, stored {:.1} MiB of {:.1} MiB raw (zstd ratio {:.2}), {:.1} s",
        TILES_SHAPE,
        TILES_ROWS.len() * TILES_COLS.len(),
        stored as f64 / 1048576.0,
        raw as f64 / 1048576.0,
        raw as f64 / stored as f64,
        t0.elapsed().as_secs_f64()
    );

    // large: regular shards, 128×128 inner chunks.
    let t0 = Instant::now();
    let large = ArrayBuilder::new(LARGE_SHAPE.to_vec(), vec![LARGE_SHARD, LARGE_SHARD], data_type::float32(), f32::NAN)
        .subchunk_shape(vec![LARGE_INNER, LARGE_INNER])
        .bytes_to_bytes_codecs(vec![zstd3()])
        .dimension_names(["y", "x"].into())
        .build(store.clone(), "/large")?;
    large.store_metadata()?;
    let edges = vec![LARGE_SHARD; (LARGE_SHAPE[0] / LARGE_SHARD) as usize];
    write_all(&large, &prefix(&edges), &prefix(&edges))?;
    let raw = LARGE_SHAPE.iter().product::<u64>() * 4;
    let stored = dir_size(&root.join("large"));
    println!(
        "large: {:?} f32, stored {:.1} MiB of {:.1} MiB raw (zstd ratio {:.2}), {:.1} s",
        LARGE_SHAPE,
        stored as f64 / 1048576.0,
        raw as f64 / 1048576.0,
        raw as f64 / stored as f64,
        t0.elapsed().as_secs_f64()
    );

    virtual_sets::write(&root, &out, LARGE_SHAPE[0] / LARGE_SHARD)?;

    // rect: rectilinear, unsharded.
    let rect = ArrayBuilder::new(
        RECT_SHAPE.to_vec(),
        rectilinear(&RECT_ROWS, &RECT_COLS).as_str(),
        data_type::float32(),
        f32::NAN,
    )
    .bytes_to_bytes_codecs(vec![zstd3()])
    .dimension_names(["y", "x"].into())
    .build(store.clone(), "/rect")?;
    rect.store_metadata()?;
    write_all(&rect, &prefix(&RECT_ROWS), &prefix(&RECT_COLS))?;
    println!("rect: {:?} f32, {}×{} uneven chunks", RECT_SHAPE, RECT_ROWS.len(), RECT_COLS.len());

    // The hot tile's decoded bytes, read back with zarrs: the nginx reference body.
    let hot = [HOT_TILE[0] * TILE..(HOT_TILE[0] + 1) * TILE, HOT_TILE[1] * TILE..(HOT_TILE[1] + 1) * TILE];
    let bytes: ArrayBytes<'static> = tiles.retrieve_array_subset(&ArraySubset::new_with_ranges(&hot))?;
    let bytes = bytes.into_fixed()?;
    assert_eq!(bytes.len() as u64, TILE * TILE * 4);
    std::fs::write(out.join("tile.bin"), &bytes)?;

    // What the benchmark reads.
    let mut env = String::new();
    writeln!(env, "TILE_SEL={}", range_sel(&hot))?;
    writeln!(env, "TILE_BYTES={}", TILE * TILE * 4)?;
    let mut viewport = Vec::new();
    for i in 0..VIEWPORT_TILES {
        for j in 0..VIEWPORT_TILES {
            let (r, c) = ((VIEWPORT_ORIGIN[0] + i) * TILE, (VIEWPORT_ORIGIN[1] + j) * TILE);
            viewport.push(format!("{}:{},{}:{}", r, r + TILE, c, c + TILE));
        }
    }
    writeln!(env, "VIEWPORT_SELS=\"{}\"", viewport.join(" "))?;
    // Shards the viewport touches (rectilinear lookup).
    let (rs, cs) = (prefix(&TILES_ROWS), prefix(&TILES_COLS));
    let span = |starts: &[u64], a: u64, b: u64| starts.windows(2).filter(|w| w[0] < b && a < w[1]).count();
    let v0 = VIEWPORT_ORIGIN.map(|o| o * TILE);
    let v1 = VIEWPORT_ORIGIN.map(|o| (o + VIEWPORT_TILES) * TILE);
    writeln!(env, "VIEWPORT_SHARDS={}", span(&rs, v0[0], v1[0]) * span(&cs, v0[1], v1[1]))?;
    writeln!(env, "LARGE_SEL={}", range_sel(&LARGE_REGION))?;
    let large_bytes: u64 = LARGE_REGION.iter().map(|r| r.end - r.start).product::<u64>() * 4;
    writeln!(env, "LARGE_BYTES={large_bytes}")?;
    let shards = |r: &std::ops::Range<u64>| r.end.div_ceil(LARGE_SHARD) - r.start / LARGE_SHARD;
    writeln!(env, "LARGE_SHARDS={}", shards(&LARGE_REGION[0]) * shards(&LARGE_REGION[1]))?;
    let inner = |r: &std::ops::Range<u64>| r.end.div_ceil(LARGE_INNER) - r.start / LARGE_INNER;
    writeln!(env, "LARGE_INNER_CHUNKS={}", inner(&LARGE_REGION[0]) * inner(&LARGE_REGION[1]))?;
    // A 256×256 tile of `large` (2×2 inner chunks of one shard), for the virtual datasets.
    writeln!(env, "VTILE_SEL={}", range_sel(&[2048..2304, 2048..2304]))?;
    writeln!(env, "RECT_SEL={}", range_sel(&RECT_REGION))?;
    let rect_chunks =
        span(&prefix(&RECT_ROWS), RECT_REGION[0].start, RECT_REGION[0].end)
            * span(&prefix(&RECT_COLS), RECT_REGION[1].start, RECT_REGION[1].end);
    writeln!(env, "RECT_CHUNKS={rect_chunks}")?;
    std::fs::write(out.join("bench.env"), env)?;
    // Written last: its presence means the data set is complete.
    std::fs::write(out.join("COMPLETE"), "datagen v2\n")?;
    println!("wrote {}", out.display());
    Ok(())
}
