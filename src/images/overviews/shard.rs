//! One level's shard: reduced values as the level's data type, inner chunks encoded with
//! zstd (fill-only chunks left out), and the index with its `crc32c`.

use crate::images::overviews::error::{OverviewsError, Result};
use zarrd_core::zarr::data_type::DataType;

/// Inner chunks per shard along each of the last two dimensions.
pub const SHARD_TILES: u64 = 4;

/// Appends `v` (a mean of valid values) as a little-endian element of `data_type`:
/// integers rounded half to even and clamped to the type's range.
pub fn element_bytes(v: f64, data_type: DataType, out: &mut Vec<u8>) {
    let int = |lo: f64, hi: f64| v.round_ties_even().clamp(lo, hi);
    match data_type {
        DataType::Bool => out.push(u8::from(int(0.0, 1.0) >= 1.0)),
        DataType::Int8 => out.extend((int(-128.0, 127.0) as i8).to_le_bytes()),
        DataType::Int16 => out.extend((int(-32768.0, 32767.0) as i16).to_le_bytes()),
        DataType::Int32 => out.extend((int(f64::from(i32::MIN), f64::from(i32::MAX)) as i32).to_le_bytes()),
        DataType::Int64 => out.extend((int(i64::MIN as f64, i64::MAX as f64) as i64).to_le_bytes()),
        DataType::UInt8 => out.push(int(0.0, 255.0) as u8),
        DataType::UInt16 => out.extend((int(0.0, 65535.0) as u16).to_le_bytes()),
        DataType::UInt32 => out.extend((int(0.0, f64::from(u32::MAX)) as u32).to_le_bytes()),
        DataType::UInt64 => out.extend((int(0.0, u64::MAX as f64) as u64).to_le_bytes()),
        DataType::Float16 => out.extend(half::f16::from_f64(v).to_le_bytes()),
        DataType::Float32 => out.extend((v as f32).to_le_bytes()),
        DataType::Float64 => out.extend(v.to_le_bytes()),
        // Refused before any read.
        _ => {}
    }
}

/// The extent of one shard's data: `rows` × `cols` elements (at most four tiles on a
/// side; fewer at the array's edge), cut into `tile` × `tile` inner chunks.
#[derive(Debug, Clone, Copy)]
pub struct ShardGeometry {
    pub rows: u64,
    pub cols: u64,
    pub tile: u64,
}

/// One shard: its inner chunks in C order, each padded to a whole tile with `fill`, coded
/// with `bytes` + `zstd`, then the index (`offset`, `nbytes` little-endian u64 pairs;
/// `2^64 - 1` twice for an inner chunk holding only fill, which is not stored) and its
/// `crc32c`. `None` when every inner chunk holds only fill.
pub fn encode_shard(values: &[u8], g: ShardGeometry, fill: &[u8]) -> Result<Option<Vec<u8>>> {
    let item = fill.len();
    let t = g.tile as usize;
    let (rows, cols) = (g.rows as usize, g.cols as usize);
    let per_side = SHARD_TILES as usize;
    let mut data = Vec::new();
    let mut index = Vec::with_capacity(per_side * per_side * 16 + 4);
    let mut tile = vec![0u8; t * t * item];
    let mut any = false;
    for cy in 0..per_side {
        for cx in 0..per_side {
            let (r0, c0) = (cy * t, cx * t);
            let mut only_fill = true;
            if r0 < rows && c0 < cols {
                for (dst, src) in tile.chunks_exact_mut(item).zip(std::iter::repeat(fill)) {
                    dst.copy_from_slice(src);
                }
                let w = (cols - c0).min(t);
                for r in 0..(rows - r0).min(t) {
                    let from = ((r0 + r) * cols + c0) * item;
                    tile[r * t * item..(r * t + w) * item].copy_from_slice(&values[from..from + w * item]);
                }
                only_fill = tile.chunks_exact(item).all(|e| e == fill);
            }
            if only_fill {
                index.extend(u64::MAX.to_le_bytes());
                index.extend(u64::MAX.to_le_bytes());
                continue;
            }
            let coded = zstd::bulk::compress(&tile, 0).map_err(OverviewsError::Compress)?;
            index.extend((data.len() as u64).to_le_bytes());
            index.extend((coded.len() as u64).to_le_bytes());
            data.extend_from_slice(&coded);
            any = true;
        }
    }
    if !any {
        return Ok(None);
    }
    let crc = crc32c::crc32c(&index);
    index.extend(crc.to_le_bytes());
    data.extend_from_slice(&index);
    Ok(Some(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_half_to_even_and_clamp() {
        let bytes = |v: f64, t: DataType| {
            let mut out = Vec::new();
            element_bytes(v, t, &mut out);
            out
        };
        assert_eq!(bytes(2.5, DataType::UInt8), [2]);
        assert_eq!(bytes(3.5, DataType::UInt8), [4]);
        assert_eq!(bytes(-0.5, DataType::Int8), [0]);
        assert_eq!(bytes(300.0, DataType::UInt8), [255]);
        assert_eq!(bytes(2.0 / 3.0, DataType::Float32), (2.0f32 / 3.0).to_le_bytes());
    }

    #[test]
    fn shards_skip_fill_only_chunks_and_end_with_a_checked_index() {
        // 5 x 3 uint8 values, tile 2: inner chunks (0,0), (0,1), (1,0)... of a 4 x 4 grid.
        let mut values = vec![0u8; 15];
        values[0] = 7; // chunk (0, 0)
        values[14] = 9; // row 4, column 2: chunk (2, 1)
        let shard = encode_shard(&values, ShardGeometry { rows: 5, cols: 3, tile: 2 }, &[0]).unwrap().unwrap();
        let index = &shard[shard.len() - 16 * 16 - 4..];
        let (entries, crc) = index.split_at(16 * 16);
        assert_eq!(crc, crc32c::crc32c(entries).to_le_bytes());
        let entry = |i: usize| {
            let e = &entries[i * 16..i * 16 + 16];
            (u64::from_le_bytes(e[..8].try_into().unwrap()), u64::from_le_bytes(e[8..].try_into().unwrap()))
        };
        let stored: Vec<usize> = (0..16).filter(|&i| entry(i).0 != u64::MAX).collect();
        assert_eq!(stored, [0, 9]);
        let chunk = |i: usize| {
            let (o, n) = entry(i);
            zstd::bulk::decompress(&shard[o as usize..(o + n) as usize], 4).unwrap()
        };
        assert_eq!(chunk(0), [7, 0, 0, 0]);
        assert_eq!(chunk(9), [9, 0, 0, 0]);
        assert!(encode_shard(&[0; 15], ShardGeometry { rows: 5, cols: 3, tile: 2 }, &[0]).unwrap().is_none());
    }
}
