//! A tile's pixels: the cells its lookup names, read touching each needed chunk once.
//!
//! The rows and columns a tile needs are those of the cells its lookup names (a few
//! hundred along each axis at most on a latitude/longitude grid). Along each axis they are cut into runs where they do not
//! skip a whole read chunk (and at most [`RUN_MAX`] long), so a tile denser than the grid
//! reads its one bounding window, a coarse tile over a big grid reads each needed chunk
//! once (never the chunks between needed rows), and a tile across the antimeridian reads
//! the two column ranges at the grid's ends, not the width between. Each run pair is one
//! read through the read path (caches, budget, single flight), and only the pairs that
//! hold a needed cell are read (a rotated or curved footprint leaves corners of its box
//! unread); the cells are gathered from them. With overview levels, a coarse tile reads the coarsest level whose cells are
//! still no larger than its pixels (a level's cell is the mean of its block, so those
//! tiles show block means rather than single cells).

use std::ops::Range;

use futures::{StreamExt, TryStreamExt};

use crate::error::{Error, Result};
use crate::images::iiif::source::Image;
use crate::images::maps::geometry::{Lookup, TILE};
use crate::images::render::Plane;
use zarrd_core::read::ObjectVersion;
use zarrd_core::read::WholeRead;
use zarrd_core::read::selection::DimSelection;
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

/// The needed indices of one axis, cut into runs.
#[derive(Debug, PartialEq, Eq)]
pub struct AxisPlan {
    pub runs: Vec<Range<u64>>,
}

impl AxisPlan {
    /// Cuts `needed` (sorted, distinct, at the level's resolution) into runs over `dim`'s
    /// chunks.
    pub fn new(needed: &[u64], dim: &Dim) -> Self {
        let mut runs: Vec<Range<u64>> = Vec::new();
        for &i in needed {
            match runs.last_mut() {
                Some(run) if dim.chunk_index(i) <= dim.chunk_index(run.end - 1) + 1 && i - run.start < RUN_MAX => {
                    run.end = i + 1;
                }
                _ => runs.push(i..i + 1),
            }
        }
        Self { runs }
    }

    /// The run holding needed index `i` and its offset in the run.
    pub fn locate(&self, i: u64) -> (usize, u64) {
        let k = self.runs.partition_point(|r| r.end <= i);
        (k, i - self.runs[k].start)
    }
}

/// How many full-resolution cells a pixel spans along an axis: the needed span over the
/// distinct cells needed (1 when pixels are denser than cells).
fn cells_per_pixel(distinct: &[u32]) -> f64 {
    match (distinct.first(), distinct.last()) {
        (Some(&lo), Some(&hi)) if distinct.len() > 1 => f64::from(hi - lo + 1) / distinct.len() as f64,
        _ => 1.0,
    }
}

fn distinct(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// Reads the pixels of `lookup` from `image` (its plane fixed by the identifier), treating
/// NaN and `no_data` as no data, and the Zarr fill value too when `no_data` is empty. Bilinear lookups read full resolution.
pub async fn read(image: &Image, lookup: &Lookup, no_data: &[f64]) -> Result<TilePixels> {
    let cells = lookup.cells();
    let rows_needed = distinct(cells.iter().map(|c| c.0).collect());
    let cols_needed = distinct(cells.iter().map(|c| c.1).collect());
    // The coarsest overview level whose cells still fit a pixel, along both axes.
    let spread = cells_per_pixel(&rows_needed).min(cells_per_pixel(&cols_needed));
    let wanted = if spread >= 2.0 && matches!(lookup, Lookup::Nearest(_)) { spread.log2().floor() as u32 } else { 0 };
    let (log2, reader) = image.level_for(wanted);
    let shape = &reader.meta.shape;
    let rank = shape.len();
    let (height, width) = (shape[rank - 2], shape[rank - 1]);
    let at_level = |c: u32, extent: u64| (u64::from(c) >> log2).min(extent - 1);
    let grid = reader.meta.read_grid();
    let (row_dim, col_dim) = (&grid.dims[rank - 2], &grid.dims[rank - 1]);
    let mut level_cells: Vec<(u64, u64)> =
        cells.iter().map(|&(r, c)| (at_level(r, height), at_level(c, width))).collect();
    level_cells.sort_unstable();
    level_cells.dedup();
    let mut chunks: Vec<(u64, u64)> =
        level_cells.iter().map(|&(r, c)| (row_dim.chunk_index(r), col_dim.chunk_index(c))).collect();
    chunks.sort_unstable();
    chunks.dedup();
    if chunks.len() as u64 > reader.max_chunks {
        return Err(Error::TooManyChunks(format!(
            "this tile reads {} chunks of `{}`, more than limits.max_chunks_per_request ({}); ask for a deeper zoom, or write overviews with `zarrd overviews --dataset {} --array {} --out URL` so coarse zooms read a smaller level",
            chunks.len(),
            image.id.path,
            reader.max_chunks,
            image.id.dataset,
            image.id.path
        )));
    }
    let rows_at: Vec<u64> = distinct_u64(level_cells.iter().map(|c| c.0).collect());
    let cols_at: Vec<u64> = distinct_u64(level_cells.iter().map(|c| c.1).collect());
    let (row_plan, col_plan) = (AxisPlan::new(&rows_at, row_dim), AxisPlan::new(&cols_at, col_dim));
    // Only the run pairs that hold a needed cell (a rotated or curved footprint leaves
    // corners of the box unread).
    let mut pairs: Vec<(usize, usize)> =
        level_cells.iter().map(|&(r, c)| (row_plan.locate(r).0, col_plan.locate(c).0)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let blocks: Vec<_> = futures::stream::iter(pairs)
        .map(|(r, c)| {
            let selection = selection(&image.id.indices, &row_plan.runs[r], &col_plan.runs[c]);
            async move { reader.read_whole(&selection).await.map(|whole| (r, c, whole)) }
        })
        .buffer_unordered(FAN_OUT)
        .try_collect()
        .await?;
    let n_cols = col_plan.runs.len();
    // Each block kept whole (its data with the budget it holds) until the pixels are made.
    let mut data: Vec<Option<WholeRead>> = std::iter::repeat_with(|| None).take(row_plan.runs.len() * n_cols).collect();
    let mut object_versions = Vec::new();
    for (r, c, mut whole) in blocks {
        object_versions.append(&mut whole.object_versions);
        data[r * n_cols + c] = Some(whole);
    }
    object_versions.sort_unstable();
    object_versions.dedup();
    let meta = &reader.meta;
    let item = meta.data_type.size();
    let value = |r: u32, c: u32| -> Option<f64> {
        let (row, col) = (at_level(r, height), at_level(c, width));
        let ((rr, dy), (cc, dx)) = (row_plan.locate(row), col_plan.locate(col));
        let block = &data[rr * n_cols + cc].as_ref()?.data;
        let run_width = col_plan.runs[cc].end - col_plan.runs[cc].start;
        let at = ((dy * run_width + dx) as usize) * item;
        let element = block.get(at..at + item)?;
        // As xarray reads it: with a CF `_FillValue`/`missing_value` the Zarr fill is a value
        // (a sea-ice concentration of 0 is open water).
        if no_data.is_empty() && element == meta.fill_value.as_slice() {
            return None;
        }
        element_f64(element, meta.data_type).filter(|v| !v.is_nan() && !no_data.contains(v))
    };
    let values = pixels(lookup, value);
    Ok(TilePixels { plane: Plane { width: TILE, height: TILE, values }, object_versions })
}

/// Each pixel's value from the cells' (`None`: no data): NaN where a cell it needs has none.
fn pixels(lookup: &Lookup, value: impl Fn(u32, u32) -> Option<f64>) -> Vec<f64> {
    match lookup {
        Lookup::Nearest(cells) => cells.iter().map(|p| p.and_then(|(r, c)| value(r, c)).unwrap_or(f64::NAN)).collect(),
        Lookup::Bilinear(around) => around
            .iter()
            .map(|p| {
                let Some(four) = p else { return f64::NAN };
                let at = |i: usize, j: usize| value(four.rows[i], four.cols[j]);
                match (at(0, 0), at(0, 1), at(1, 0), at(1, 1)) {
                    (Some(v00), Some(v01), Some(v10), Some(v11)) => {
                        let (t, u) = (four.t, four.u);
                        (1.0 - t) * (1.0 - u) * v00 + t * (1.0 - u) * v01 + (1.0 - t) * u * v10 + t * u * v11
                    }
                    _ => f64::NAN,
                }
            })
            .collect(),
    }
}

fn distinct_u64(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v.dedup();
    v
}

/// The selection of rows `rows` and columns `cols` of the plane fixed by `indices`.
fn selection(indices: &[u64], rows: &Range<u64>, cols: &Range<u64>) -> Vec<DimSelection> {
    let mut s: Vec<DimSelection> =
        indices.iter().map(|&i| DimSelection { start: i, step: 1, count: 1, drop: true }).collect();
    s.push(DimSelection { start: rows.start, step: 1, count: rows.end - rows.start, drop: false });
    s.push(DimSelection { start: cols.start, step: 1, count: cols.end - cols.start, drop: false });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_skip_unneeded_chunks_and_join_neighbours() {
        let dim = Dim::fixed(10, 100);
        let plan = AxisPlan::new(&[0, 3, 12, 41, 45, 57, 95, 99], &dim);
        assert_eq!(plan.runs, vec![0..13, 41..58, 95..100]);
        assert_eq!(
            [plan.locate(95), plan.locate(99), plan.locate(0), plan.locate(41)],
            [(2, 0), (2, 4), (0, 0), (1, 0)]
        );
        let long: Vec<u64> = (0..5000).collect();
        let plan = AxisPlan::new(&long, &Dim::fixed(5000, 5000));
        assert_eq!(plan.runs, vec![0..RUN_MAX, RUN_MAX..2 * RUN_MAX, 2 * RUN_MAX..5000]);
    }
}
