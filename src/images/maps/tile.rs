//! A tile's pixels: the cells its lookup names, read touching each needed chunk once.
//!
//! The rows and columns a tile needs are a few hundred indices at most along each axis
//! (the lookup is separable). Along each axis they are cut into runs where they do not
//! skip a whole read chunk (and at most [`RUN_MAX`] long), so a tile denser than the grid
//! reads its one bounding window, a coarse tile over a big grid reads each needed chunk
//! once (never the chunks between needed rows), and a tile across the antimeridian reads
//! the two column ranges at the grid's ends, not the width between. Each run pair is one
//! read through the read path (caches, budget, single flight); the cells are gathered
//! from it. With overview levels, a coarse tile reads the coarsest level whose cells are
//! still no larger than its pixels (a level's cell is the mean of its block, so those
//! tiles show block means rather than single cells).

use std::ops::Range;

use futures::{StreamExt, TryStreamExt};

use crate::error::{Error, Result};
use crate::images::iiif::source::Image;
use crate::images::maps::geometry::{Lookup, TILE};
use crate::images::render::Plane;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::read::{ArrayReader, ObjectVersion};
use zarrd_core::zarr::chunk_grid::Dim;
use zarrd_core::zarr::data_type::element_f64;

/// The longest run read at once along an axis, so one read holds at most
/// `RUN_MAX²` elements whatever the grid.
pub const RUN_MAX: u64 = 2048;
/// Run pairs read concurrently.
const FAN_OUT: usize = 4;

/// A tile's values (NaN: no data) and the versions of the objects read.
pub struct TilePixels {
    pub plane: Plane,
    pub object_versions: Vec<(String, ObjectVersion)>,
}

/// The needed indices of one axis, cut into runs, and where each pixel's cell lies.
#[derive(Debug, PartialEq, Eq)]
pub struct AxisPlan {
    pub runs: Vec<Range<u64>>,
    /// Per pixel: `(run, offset in the run)`, or `None` outside the grid.
    pub at: Vec<Option<(usize, u64)>>,
}

impl AxisPlan {
    /// Cuts `cells` (per pixel, at the level's resolution) into runs over `dim`'s chunks.
    pub fn new(cells: &[Option<u64>], dim: &Dim) -> Self {
        let mut needed: Vec<u64> = cells.iter().flatten().copied().collect();
        needed.sort_unstable();
        needed.dedup();
        let mut runs: Vec<Range<u64>> = Vec::new();
        for &i in &needed {
            match runs.last_mut() {
                Some(run) if dim.chunk_index(i) <= dim.chunk_index(run.end - 1) + 1 && i - run.start < RUN_MAX => {
                    run.end = i + 1;
                }
                _ => runs.push(i..i + 1),
            }
        }
        let at = cells
            .iter()
            .map(|c| {
                let c = (*c)?;
                let k = runs.partition_point(|r| r.end <= c);
                Some((k, c - runs[k].start))
            })
            .collect();
        Self { runs, at }
    }

    /// The distinct chunks of `dim` the needed indices fall in.
    pub fn chunks(cells: &[Option<u64>], dim: &Dim) -> u64 {
        let mut chunks: Vec<u64> = cells.iter().flatten().map(|&c| dim.chunk_index(c)).collect();
        chunks.sort_unstable();
        chunks.dedup();
        chunks.len() as u64
    }
}

/// How many full-resolution cells a pixel spans along an axis: the needed span over the
/// distinct cells needed (1 when pixels are denser than cells).
fn cells_per_pixel(cells: &[Option<u32>]) -> f64 {
    let mut v: Vec<u32> = cells.iter().flatten().copied().collect();
    v.sort_unstable();
    v.dedup();
    match (v.first(), v.last()) {
        (Some(&lo), Some(&hi)) if v.len() > 1 => f64::from(hi - lo + 1) / v.len() as f64,
        _ => 1.0,
    }
}

/// Reads the pixels of `lookup` from `image` (its plane fixed by the identifier), treating
/// the fill value, NaN and `no_data` as no data.
pub async fn read(image: &Image, lookup: &Lookup, no_data: &[f64]) -> Result<TilePixels> {
    // The coarsest overview level whose cells still fit a pixel, along both axes.
    let spread = cells_per_pixel(&lookup.rows).min(cells_per_pixel(&lookup.cols));
    let k = if spread >= 2.0 { spread.log2().floor() as u32 } else { 0 };
    let (log2, reader) = image.level_for(k);
    let shape = &reader.meta.shape;
    let rank = shape.len();
    let (h, w) = (shape[rank - 2], shape[rank - 1]);
    let at_level = |cells: &[Option<u32>], extent: u64| -> Vec<Option<u64>> {
        cells.iter().map(|c| c.map(|c| (u64::from(c) >> log2).min(extent - 1))).collect()
    };
    let (rows, cols) = (at_level(&lookup.rows, h), at_level(&lookup.cols, w));
    let grid = reader.meta.read_grid();
    let (row_dim, col_dim) = (&grid.dims[rank - 2], &grid.dims[rank - 1]);
    let chunks = u128::from(AxisPlan::chunks(&rows, row_dim)) * u128::from(AxisPlan::chunks(&cols, col_dim));
    if chunks > u128::from(reader.max_chunks) {
        return Err(Error::TooManyChunks(format!(
            "this tile reads {chunks} chunks of `{}`, more than limits.max_chunks_per_request ({}); ask for a deeper zoom, or write overviews with `zarrd overviews --dataset {} --array {} --out URL` so coarse zooms read a smaller level",
            image.id.path, reader.max_chunks, image.id.dataset, image.id.path
        )));
    }
    let (row_plan, col_plan) = (AxisPlan::new(&rows, row_dim), AxisPlan::new(&cols, col_dim));
    let mut values = vec![f64::NAN; TILE * TILE];
    let pairs: Vec<(usize, usize)> =
        (0..row_plan.runs.len()).flat_map(|r| (0..col_plan.runs.len()).map(move |c| (r, c))).collect();
    let blocks: Vec<_> = futures::stream::iter(pairs)
        .map(|(r, c)| {
            let selection = selection(&image.id.indices, &row_plan.runs[r], &col_plan.runs[c]);
            async move { reader.read_whole(&selection).await.map(|whole| (r, c, whole)) }
        })
        .buffer_unordered(FAN_OUT)
        .try_collect()
        .await?;
    let mut object_versions = Vec::new();
    for (r, c, whole) in blocks {
        gather(reader, &whole.data, (&row_plan, r), (&col_plan, c), no_data, &mut values);
        object_versions.extend(whole.object_versions);
    }
    object_versions.sort_unstable();
    object_versions.dedup();
    Ok(TilePixels { plane: Plane { width: TILE, height: TILE, values }, object_versions })
}

/// The selection of rows `rows` and columns `cols` of the plane fixed by `indices`.
fn selection(indices: &[u64], rows: &Range<u64>, cols: &Range<u64>) -> Vec<DimSelection> {
    let mut s: Vec<DimSelection> =
        indices.iter().map(|&i| DimSelection { start: i, step: 1, count: 1, drop: true }).collect();
    s.push(DimSelection { start: rows.start, step: 1, count: rows.end - rows.start, drop: false });
    s.push(DimSelection { start: cols.start, step: 1, count: cols.end - cols.start, drop: false });
    s
}

/// Copies the cells of block (`r`, `c`) into the pixels that show them.
fn gather(
    reader: &ArrayReader,
    data: &[u8],
    (rows, r): (&AxisPlan, usize),
    (cols, c): (&AxisPlan, usize),
    no_data: &[f64],
    values: &mut [f64],
) {
    let meta = &reader.meta;
    let item = meta.data_type.size();
    let width = cols.runs[c].end - cols.runs[c].start;
    let in_block: Vec<(usize, u64)> =
        cols.at.iter().enumerate().filter_map(|(i, a)| a.filter(|a| a.0 == c).map(|a| (i, a.1))).collect();
    for (j, a) in rows.at.iter().enumerate() {
        let Some((run, dy)) = *a else { continue };
        if run != r {
            continue;
        }
        for &(i, dx) in &in_block {
            let at = ((dy * width + dx) as usize) * item;
            let element = &data[at..at + item];
            if element == meta.fill_value.as_slice() {
                continue;
            }
            if let Some(v) = element_f64(element, meta.data_type).filter(|v| !v.is_nan() && !no_data.contains(v)) {
                values[j * TILE + i] = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_skip_unneeded_chunks_and_join_neighbours() {
        let dim = Dim::fixed(10, 100);
        let cells = [Some(95), Some(99), None, Some(0), Some(3), Some(12), Some(41), Some(45), Some(57)];
        let plan = AxisPlan::new(&cells, &dim);
        assert_eq!(plan.runs, vec![0..13, 41..58, 95..100]);
        assert_eq!(plan.at[..4], [Some((2, 0)), Some((2, 4)), None, Some((0, 0))]);
        assert_eq!(plan.at[6], Some((1, 0)));
        assert_eq!(AxisPlan::chunks(&cells, &dim), 5);
        let long: Vec<Option<u64>> = (0..5000).map(Some).collect();
        let plan = AxisPlan::new(&long, &Dim::fixed(5000, 5000));
        assert_eq!(plan.runs, vec![0..RUN_MAX, RUN_MAX..2 * RUN_MAX, 2 * RUN_MAX..5000]);
    }
}
