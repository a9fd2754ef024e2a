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

/// The memory a tile holds while it is made: the working raster (an f64 per pixel) and
/// the encoded image (at most 4 bytes per pixel), as an IIIF tile's.
pub const WORKING_BYTES: u64 = (TILE * TILE * 12) as u64;

/// A tile's values (NaN: no data) and the versions of the objects read.
pub struct TilePixels {
    pub plane: Plane,
    pub object_versions: Vec<(String, ObjectVersion)>,
}

/// How many full-resolution cells a pixel spans along an axis: the needed span over the
/// distinct cells needed (1 when pixels are denser than cells).
fn cells_per_pixel(distinct: &[u64]) -> f64 {
    match (distinct.first(), distinct.last()) {
        (Some(&lo), Some(&hi)) if distinct.len() > 1 => (hi - lo + 1) as f64 / distinct.len() as f64,
        _ => 1.0,
    }
}

/// The distinct values of `v` (each below `extent`), sorted: one pass over a bitmap of the
/// extent when it is not huge (a tile's 65 536 cells sort in ten times that).
fn distinct(v: impl Iterator<Item = u64>, extent: u64) -> Vec<u64> {
    if extent > 1 << 22 {
        let mut out: Vec<u64> = v.collect();
        out.sort_unstable();
        out.dedup();
        return out;
    }
    let mut seen = vec![false; extent as usize];
    for x in v {
        if let Some(s) = seen.get_mut(x as usize) {
            *s = true;
        }
    }
    seen.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i as u64).collect()
}

/// A full-resolution index's position among the distinct indices needed at a level: a
/// table over the level's extent (a few thousand entries), else a binary search.
enum Positions<'a> {
    Table(Vec<u32>, u32),
    Search(&'a [u64], u32, u64),
}

impl<'a> Positions<'a> {
    fn new(distinct: &'a [u64], extent: u64, log2: u32) -> Self {
        if extent > 1 << 22 {
            return Self::Search(distinct, log2, extent);
        }
        let mut table = vec![0u32; extent as usize];
        for (k, &i) in distinct.iter().enumerate() {
            table[i as usize] = k as u32;
        }
        Self::Table(table, log2)
    }

    fn of(&self, full: u32) -> usize {
        match self {
            Self::Table(table, log2) => {
                let i = ((full >> log2) as usize).min(table.len() - 1);
                table[i] as usize
            }
            Self::Search(distinct, log2, extent) => {
                let i = (u64::from(full) >> log2).min(extent - 1);
                distinct.partition_point(|&x| x < i)
            }
        }
    }
}

/// Each needed cell's number among the distinct ones (as first seen), by its positions
/// among the distinct rows and columns: a table over them, or a map when that is huge.
enum Numbering {
    Table { columns: usize, numbers: Vec<u32> },
    Map(std::collections::HashMap<(usize, usize), u32>),
}

impl Numbering {
    fn new(rows: usize, columns: usize) -> Self {
        match rows.checked_mul(columns).filter(|&n| n <= 1 << 24) {
            Some(n) => Self::Table { columns, numbers: vec![u32::MAX; n] },
            None => Self::Map(std::collections::HashMap::new()),
        }
    }

    /// The number of cell `(i, j)`, `next` when it is new.
    fn number(&mut self, i: usize, j: usize, next: u32) -> u32 {
        match self {
            Self::Table { columns, numbers } => {
                let n = &mut numbers[i * *columns + j];
                if *n == u32::MAX {
                    *n = next;
                }
                *n
            }
            Self::Map(map) => *map.entry((i, j)).or_insert(next),
        }
    }
}

/// Reads the pixels of `lookup` from `image` (its plane fixed by the identifier), treating
/// NaN and `no_data` as no data, and the Zarr fill value too when `no_data` is empty.
/// Bilinear lookups read full resolution.
pub async fn read(image: &Image, lookup: &Lookup, no_data: &[f64]) -> Result<TilePixels> {
    let cells = lookup.cells();
    let rows_needed = distinct(cells.iter().map(|c| u64::from(c.0)), image.height);
    let cols_needed = distinct(cells.iter().map(|c| u64::from(c.1)), image.width);
    // The coarsest overview level whose cells still fit a pixel, along both axes.
    let spread = cells_per_pixel(&rows_needed).min(cells_per_pixel(&cols_needed));
    let wanted = if spread >= 2.0 && matches!(lookup, Lookup::Nearest(_)) { spread.log2().floor() as u32 } else { 0 };
    let (log2, reader) = image.level_for(wanted);
    let shape = &reader.meta.shape;
    let rank = shape.len();
    let (height, width) = (shape[rank - 2], shape[rank - 1]);
    // Full-resolution indices at the level (monotone: sorted stays sorted).
    let at_level = |c: u64, extent: u64| (c >> log2).min(extent - 1);
    let level = |v: &[u64], extent: u64| {
        let mut out: Vec<u64> = v.iter().map(|&c| at_level(c, extent)).collect();
        out.dedup();
        out
    };
    let (rows_at, cols_at) = (level(&rows_needed, height), level(&cols_needed, width));
    let (row_of, col_of) = (Positions::new(&rows_at, height, log2), Positions::new(&cols_at, width, log2));
    // The distinct cells at the level, numbered as first seen, and each lookup cell's number.
    let mut numbering = Numbering::new(rows_at.len(), cols_at.len());
    let mut at: Vec<(u64, u64)> = Vec::new();
    let numbers: Vec<u32> = cells
        .iter()
        .map(|&(r, c)| {
            let (i, j) = (row_of.of(r), col_of.of(c));
            let n = numbering.number(i, j, at.len() as u32);
            if n as usize == at.len() {
                at.push((i as u64, j as u64));
            }
            n
        })
        .collect();
    let mut dims: Vec<Vec<Progression>> = image.id.indices.iter().map(|&i| vec![Progression::run(i, 1)]).collect();
    dims.push(progressions(&rows_at));
    dims.push(progressions(&cols_at));
    let need = Need { dims, pairs: Some(Pairs { dims: [rank - 2, rank - 1], at }) };
    let plan = Plan::new(&reader.meta.read_grid(), need, &Limits::blocks((0..rank).collect()))?;
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
    // Each distinct cell's value once (NaN: no data); the gathered elements come in the
    // cells' numbering.
    let values: Vec<f64> = gathered
        .data
        .chunks_exact(meta.data_type.size())
        .map(|element| {
            // As xarray reads it: with a CF `_FillValue`/`missing_value` the Zarr fill is a
            // value (a sea-ice concentration of 0 is open water).
            if no_data.is_empty() && element == meta.fill_value.as_slice() {
                return f64::NAN;
            }
            element_f64(element, meta.data_type).filter(|v| !no_data.contains(v)).unwrap_or(f64::NAN)
        })
        .collect();
    let in_order = numbers.iter().map(|&n| values.get(n as usize).copied().unwrap_or(f64::NAN));
    let values = pixels(lookup, in_order);
    Ok(TilePixels { plane: Plane { width: TILE, height: TILE, values }, object_versions: gathered.object_versions })
}

/// Each pixel's value from its cells' values (NaN: no data), given in the order of
/// [`Lookup::cells`]: NaN where a cell it needs has none.
fn pixels(lookup: &Lookup, mut cells: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut next = || cells.next().unwrap_or(f64::NAN);
    match lookup {
        Lookup::Nearest(pixels) => pixels.iter().map(|p| if p.is_some() { next() } else { f64::NAN }).collect(),
        Lookup::Bilinear(around) => around
            .iter()
            .map(|p| {
                let Some(four) = p else { return f64::NAN };
                // `cells` lists rows outer, columns inner.
                let (v00, v01, v10, v11) = (next(), next(), next(), next());
                let (t, u) = (four.t, four.u);
                // NaN in any of the four makes the pixel NaN.
                (1.0 - t) * (1.0 - u) * v00 + t * (1.0 - u) * v01 + (1.0 - t) * u * v10 + t * u * v11
            })
            .collect(),
    }
}
