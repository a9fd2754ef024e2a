//! A tile's pixels: the cells its lookup names, read touching each needed chunk once.
//!
//! The cells a tile needs (a few hundred rows and columns at most on a latitude/longitude
//! grid) are a sparse need of the query plan ([`zarrd_core::query`]): every chunk holding
//! one is read once, neighbouring chunks together, a tile across the antimeridian reads
//! the two column ranges at the grid's ends (not the width between), and a rotated or
//! curved footprint leaves the chunks of its box that hold no needed cell unread. With
//! overview levels, a coarse tile reads the coarsest level whose cells are still no larger
//! than its pixels (a level's cell is the mean of its block, so those tiles show block
//! means rather than single cells).

use crate::error::{Error, Result};
use crate::images::iiif::source::Image;
use crate::images::maps::geometry::{Lookup, TILE};
use crate::images::render::Plane;
use zarrd_core::query::{Limits, Need, Pairs, Plan, Progression, progressions};
use zarrd_core::read::ObjectVersion;
use zarrd_core::zarr::data_type::element_f64;

/// A tile's values (NaN: no data) and the versions of the objects read.
pub struct TilePixels {
    pub plane: Plane,
    pub object_versions: Vec<(String, ObjectVersion)>,
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
    let mut level_cells: Vec<(u64, u64)> =
        cells.iter().map(|&(r, c)| (at_level(r, height), at_level(c, width))).collect();
    level_cells.sort_unstable();
    level_cells.dedup();
    let rows_at: Vec<u64> = distinct_u64(level_cells.iter().map(|c| c.0).collect());
    let cols_at: Vec<u64> = distinct_u64(level_cells.iter().map(|c| c.1).collect());
    let position = |v: &[u64], i: u64| v.partition_point(|&x| x < i) as u64;
    let at = level_cells.iter().map(|&(r, c)| (position(&rows_at, r), position(&cols_at, c))).collect();
    let mut dims: Vec<Vec<Progression>> = image.id.indices.iter().map(|&i| vec![Progression::run(i, 1)]).collect();
    dims.push(progressions(&rows_at));
    dims.push(progressions(&cols_at));
    let need = Need { dims, pairs: Some(Pairs { dims: [rank - 2, rank - 1], at }) };
    let plan = Plan::new(&grid, &need, &Limits::blocks((0..rank).collect()))?;
    if plan.chunks() > u128::from(reader.max_chunks) {
        return Err(Error::TooManyChunks(format!(
            "this tile reads {} chunks of `{}`, more than limits.max_chunks_per_request ({}); ask for a deeper zoom, or write overviews with `zarrd overviews --dataset {} --array {} --out URL` so coarse zooms read a smaller level",
            plan.chunks(),
            image.id.path,
            reader.max_chunks,
            image.id.dataset,
            image.id.path
        )));
    }
    let gathered = plan.gather(reader).await?;
    let meta = &reader.meta;
    let item = meta.data_type.size();
    // The gathered elements come one per needed cell, in the order of `level_cells`.
    let value = |r: u32, c: u32| -> Option<f64> {
        let cell = (at_level(r, height), at_level(c, width));
        let k = level_cells.binary_search(&cell).ok()?;
        let element = gathered.data.get(k * item..(k + 1) * item)?;
        // As xarray reads it: with a CF `_FillValue`/`missing_value` the Zarr fill is a value
        // (a sea-ice concentration of 0 is open water).
        if no_data.is_empty() && element == meta.fill_value.as_slice() {
            return None;
        }
        element_f64(element, meta.data_type).filter(|v| !v.is_nan() && !no_data.contains(v))
    };
    let values = pixels(lookup, value);
    Ok(TilePixels { plane: Plane { width: TILE, height: TILE, values }, object_versions: gathered.object_versions })
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
