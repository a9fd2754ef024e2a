//! The chunk plan, pure: which stored chunks (shards) a selection touches and each one's
//! share of the output (`indexer::Walk`), which inner chunks of a shard that share needs
//! and where each goes in the output, and — given the shard's index — which of them are
//! stored at which byte ranges and which are empty (fill). No I/O: the fetch stage turns a
//! plan into storage requests, the decode and assemble stages into output bytes.
//!
//! Tested against a brute-force reference that maps every output element to its stored
//! chunk, inner chunk and position one at a time (`tests` below).

use std::ops::Range;

use crate::read::indexer::{Part, Walk};
use crate::read::selection::DimSelection;
use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::codec::InnerChunk;
use crate::zarr::json::MetadataError;

/// The shape of the output (full rank: dropped dimensions have length 1) and the steps
/// of the selection.
#[derive(Debug, Clone)]
pub struct Layout {
    pub shape: Vec<u64>,
    pub steps: Vec<u64>,
}

impl Layout {
    /// The output layout of a resolved selection.
    pub fn of(selection: &[DimSelection]) -> Self {
        Self { shape: selection.iter().map(|s| s.count).collect(), steps: selection.iter().map(|s| s.step).collect() }
    }
}

/// The inner chunks of a shard of `shard_shape` (inner chunks of `inner_shape`) that
/// `part` (the shard's share of a selection with `steps`) needs, each with its position in
/// the whole output.
pub fn inner_parts(
    inner_shape: &[u64],
    shard_shape: &[u64],
    part: &Part,
    steps: &[u64],
) -> Result<Vec<Part>, MetadataError> {
    let inner_grid = ChunkGrid::regular(inner_shape, shard_shape)?;
    let inner_selection: Vec<DimSelection> = (0..part.coords.len())
        .map(|d| DimSelection { start: part.start[d], step: steps[d], count: part.count[d], drop: false })
        .collect();
    Ok(Walk::new(&inner_grid, &inner_selection)
        .parts()
        .map(|mut inner| {
            for (o, base) in inner.out.iter_mut().zip(&part.out) {
                *o += base;
            }
            inner
        })
        .collect())
}

/// One needed inner chunk of a shard, from the shard's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    /// Stored at this byte range of the shard.
    Stored(Range<u64>, Part),
    /// Never written: the fill value.
    Empty(Part),
}

/// Where each needed inner chunk is, given `locate` (the shard index: inner chunk coords
/// within the shard → where it is stored).
pub fn shard_plan(inner: Vec<Part>, locate: impl Fn(&[u64]) -> InnerChunk) -> Vec<Inner> {
    inner
        .into_iter()
        .map(|part| match locate(&part.coords) {
            InnerChunk::Stored { offset, nbytes } => Inner::Stored(offset..offset + nbytes, part),
            InnerChunk::Empty => Inner::Empty(part),
        })
        .collect()
}

/// Parts grouped into rows that share their first output row, in output order: a streamed
/// read fetches a row of shards at a time.
pub fn rows(mut parts: Vec<Part>) -> Vec<Vec<Part>> {
    parts.sort_by_key(|p| p.out.first().copied().unwrap_or(0));
    let mut rows: Vec<Vec<Part>> = Vec::new();
    for part in parts {
        match rows.last_mut() {
            Some(row) if row[0].out.first() == part.out.first() => row.push(part),
            _ => rows.push(vec![part]),
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// Where one output element comes from: the stored chunk, the inner chunk within it
    /// (sharded arrays) and the element's position within that chunk.
    type Source = (Vec<u64>, Vec<u64>, Vec<u64>);

    /// Output position → source, by brute force: one element at a time, from the array
    /// coordinate each output position selects.
    fn brute(grid: &ChunkGrid, inner: Option<&[u64]>, selection: &[DimSelection]) -> BTreeMap<Vec<u64>, Source> {
        let shape: Vec<u64> = selection.iter().map(|s| s.count).collect();
        let total: u64 = shape.iter().product();
        let mut out = BTreeMap::new();
        for flat in 0..total {
            let mut position = vec![0u64; shape.len()];
            let mut rest = flat;
            for d in (0..shape.len()).rev() {
                position[d] = rest % shape[d];
                rest /= shape[d];
            }
            let (mut chunk, mut within, mut at) = (Vec::new(), Vec::new(), Vec::new());
            for (d, dim) in grid.dims.iter().enumerate() {
                let coord = selection[d].coord(position[d]);
                let index = dim.chunk_index(coord);
                let offset = coord - dim.chunk_start(index);
                chunk.push(index);
                match inner {
                    Some(inner) => {
                        within.push(offset / inner[d]);
                        at.push(offset % inner[d]);
                    }
                    None => at.push(offset),
                }
            }
            out.insert(position, (chunk, within, at));
        }
        out
    }

    /// Output position → source, from the plan; fails on an element planned twice.
    fn planned(grid: &ChunkGrid, inner: Option<&[u64]>, selection: &[DimSelection]) -> BTreeMap<Vec<u64>, Source> {
        let layout = Layout::of(selection);
        let mut out = BTreeMap::new();
        let mut add = |chunk: &[u64], within: &[u64], part: &Part| {
            let n: u64 = part.count.iter().product();
            for flat in 0..n {
                let mut i = vec![0u64; part.count.len()];
                let mut rest = flat;
                for d in (0..i.len()).rev() {
                    i[d] = rest % part.count[d];
                    rest /= part.count[d];
                }
                let o: Vec<u64> = (0..i.len()).map(|d| part.out[d] + i[d]).collect();
                let at: Vec<u64> = (0..i.len()).map(|d| part.start[d] + i[d] * layout.steps[d]).collect();
                let source = (chunk.to_vec(), within.to_vec(), at);
                assert!(out.insert(o.clone(), source).is_none(), "output {o:?} planned twice");
            }
        };
        for part in Walk::new(grid, selection).parts() {
            match inner {
                Some(inner_shape) => {
                    let shard_shape = grid.chunk_shape(&part.coords);
                    for p in inner_parts(inner_shape, &shard_shape, &part, &layout.steps).unwrap() {
                        add(&part.coords, &p.coords.clone(), &p);
                    }
                }
                None => add(&part.coords, &[], &part),
            }
        }
        out
    }

    /// A dimension: its extent, its stored (shard) edges as multiples of the inner edge
    /// (regular when one), the inner edge, and a selection of it.
    fn dimension() -> impl Strategy<Value = (u64, Vec<u64>, u64, (u64, u64, u64))> {
        (1u64..4, proptest::collection::vec(1u64..4, 1..4), 1u64..40, any::<bool>()).prop_flat_map(
            |(inner, multiples, extent, regular)| {
                let edges: Vec<u64> =
                    if regular { vec![multiples[0] * inner] } else { multiples.iter().map(|m| m * inner).collect() };
                (Just(extent), Just(edges), Just(inner), (0..extent, 1u64..5)).prop_flat_map(
                    |(extent, edges, inner, (start, step))| {
                        let max = (extent - start).div_ceil(step);
                        (Just(extent), Just(edges), Just(inner), (Just(start), Just(step), 0..=max))
                    },
                )
            },
        )
    }

    fn grid_of(dims: &[(u64, Vec<u64>, u64, (u64, u64, u64))]) -> ChunkGrid {
        let dims: Vec<(u64, &[u64])> = dims.iter().map(|d| (d.0, d.1.as_slice())).collect();
        ChunkGrid::repeating(&dims)
    }

    proptest! {
        /// The plan sends every selected element, once, from where a brute-force walk
        /// finds it: regular and rectilinear grids, sharded or not, any start and step.
        #[test]
        fn the_plan_matches_a_brute_force_reference(
            dims in proptest::collection::vec(dimension(), 1..4),
            sharded in any::<bool>(),
        ) {
            let grid = grid_of(&dims);
            let inner: Vec<u64> = dims.iter().map(|d| d.2).collect();
            let inner = sharded.then_some(inner.as_slice());
            let selection: Vec<DimSelection> = dims
                .iter()
                .map(|d| DimSelection { start: d.3.0, step: d.3.1, count: d.3.2, drop: false })
                .collect();
            prop_assert_eq!(planned(&grid, inner, &selection), brute(&grid, inner, &selection));
        }

        /// A shard's needed inner chunks keep their parts, stored ones with their ranges;
        /// rows hold every part once, in output order, each row one first output row.
        #[test]
        fn shard_plans_and_rows_keep_every_part(dims in proptest::collection::vec(dimension(), 1..4)) {
            let grid = grid_of(&dims);
            let selection: Vec<DimSelection> = dims
                .iter()
                .map(|d| DimSelection { start: d.3.0, step: d.3.1, count: d.3.2, drop: false })
                .collect();
            let parts: Vec<Part> = Walk::new(&grid, &selection).parts().collect();
            let locate = |c: &[u64]| {
                let n: u64 = c.iter().sum();
                if n.is_multiple_of(3) { InnerChunk::Empty } else { InnerChunk::Stored { offset: n * 10, nbytes: n } }
            };
            for (needed, part) in shard_plan(parts.clone(), locate).into_iter().zip(&parts) {
                let expected = match locate(&part.coords) {
                    InnerChunk::Empty => Inner::Empty(part.clone()),
                    InnerChunk::Stored { offset, nbytes } => Inner::Stored(offset..offset + nbytes, part.clone()),
                };
                prop_assert_eq!(needed, expected);
            }
            let grouped = rows(parts.clone());
            prop_assert_eq!(grouped.iter().map(Vec::len).sum::<usize>(), parts.len());
            let firsts: Vec<u64> = grouped.iter().map(|r| r[0].out.first().copied().unwrap_or(0)).collect();
            prop_assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{:?}", firsts);
            for row in &grouped {
                prop_assert!(row.iter().all(|p| p.out.first() == row[0].out.first()));
            }
        }
    }
}
