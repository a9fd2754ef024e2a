use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::query::need::{Pairs, progressions};

/// A grid of 1–3 dimensions (regular or rectilinear), per dimension needed indices
/// (increasing, or in any order), a subset of pairs of the first two, and a budget.
fn case() -> impl Strategy<Value = (ChunkGrid, Vec<Vec<u64>>, Option<Vec<(u64, u64)>>, u64)> {
    let dim = (2u64..40, proptest::collection::vec(1u64..7, 1..4), any::<bool>());
    (proptest::collection::vec(dim, 1..4), any::<bool>(), any::<bool>(), 1u64..200)
        .prop_flat_map(|(dims, sorted, sparse, budget)| {
            let grid = grid_of(&dims);
            let needs: Vec<BoxedStrategy<Vec<u64>>> = dims
                .iter()
                .map(|(extent, ..)| {
                    let extent = *extent;
                    proptest::collection::vec(0..extent, 1..12)
                        .prop_map(move |mut v| {
                            if sorted {
                                v.sort_unstable();
                                v.dedup();
                            } else {
                                // Distinct, in any order (a seam: two increasing runs).
                                let mut seen = BTreeSet::new();
                                v.retain(|x| seen.insert(*x));
                            }
                            v
                        })
                        .boxed()
                })
                .collect();
            (Just(grid), needs, Just(sparse && dims.len() >= 2), Just(budget))
        })
        .prop_flat_map(|(grid, needs, sparse, budget)| {
            let pairs = if sparse {
                let (n0, n1) = (needs[0].len() as u64, needs[1].len() as u64);
                proptest::collection::vec((0..n0, 0..n1), 1..10).prop_map(Some).boxed()
            } else {
                Just(None).boxed()
            };
            (Just(grid), Just(needs), pairs, Just(budget))
        })
}

/// A dimension marked regular keeps its first edge only.
fn grid_of(dims: &[(u64, Vec<u64>, bool)]) -> ChunkGrid {
    let dims: Vec<(u64, &[u64])> = dims.iter().map(|d| (d.0, if d.2 { &d.1[..1] } else { d.1.as_slice() })).collect();
    ChunkGrid::repeating(&dims)
}

/// Every needed cell (as positions), by brute force.
fn needed(needs: &[Vec<u64>], pairs: Option<&[(u64, u64)]>) -> Vec<Vec<u64>> {
    let mut cells: Vec<Vec<u64>> = vec![Vec::new()];
    for n in needs {
        cells =
            cells.into_iter().flat_map(|c| (0..n.len() as u64).map(move |p| [c.clone(), vec![p]].concat())).collect();
    }
    if let Some(pairs) = pairs {
        let wanted: BTreeSet<(u64, u64)> = pairs.iter().copied().collect();
        cells.retain(|c| wanted.contains(&(c[0], c[1])));
    }
    cells
}

proptest! {
    /// Every needed cell is read by exactly one read, at the offset of its stored index;
    /// reads of increasing needs share no chunk; reads stay within the budget unless one
    /// chunk's share is more; the chunk count is that of the chunks holding a needed cell.
    #[test]
    fn every_needed_cell_is_read_once_and_no_chunk_twice((grid, needs, pairs, budget) in case()) {
        let need = Need {
            dims: needs.iter().map(|n| progressions(n)).collect(),
            pairs: pairs.clone().map(|at| Pairs { dims: [0, 1], at }),
        };
        let rank = needs.len();
        let limits = Limits { block_cells: budget, order: (0..rank).rev().collect() };
        let plan = Plan::new(&grid, need, &limits).unwrap();
        prop_assert_eq!(plan.shape(), needs.iter().map(|n| n.len() as u64).collect::<Vec<_>>());
        let cells = needed(&needs, pairs.as_deref());
        let mut chunks_needed = BTreeSet::new();
        for cell in &cells {
            let holders: Vec<usize> = (0..plan.len()).filter(|&b| (0..rank).all(|d| plan.positions(b, d).contains(&cell[d]))).collect();
            prop_assert_eq!(holders.len(), 1, "cell {:?} is read by {:?}", cell, holders);
            let b = holders[0];
            for d in 0..rank {
                let s = plan.selection(b)[d];
                let off = plan.offset(b, d, cell[d]);
                prop_assert!(off < s.count);
                prop_assert_eq!(s.start + off * s.step, needs[d][cell[d] as usize]);
                prop_assert_eq!(plan.cells(b)[d][off as usize], cell[d] as usize);
            }
            let chunk: Vec<u64> = (0..rank).map(|d| grid.dims[d].chunk_index(needs[d][cell[d] as usize])).collect();
            chunks_needed.insert(chunk);
        }
        prop_assert_eq!(plan.chunks(), chunks_needed.len() as u128);
        // Reads of increasing needs share no chunk.
        let increasing = needs.iter().all(|n| n.windows(2).all(|w| w[0] < w[1]));
        let mut owner: BTreeMap<Vec<u64>, usize> = BTreeMap::new();
        for b in 0..plan.len() {
            let s = plan.selection(b);
            let mut chunks: Vec<Vec<u64>> = vec![Vec::new()];
            for (d, sel) in s.iter().enumerate() {
                let dim = &grid.dims[d];
                let (lo, hi) = (dim.chunk_index(sel.start), dim.chunk_index(sel.coord(sel.count - 1)));
                let touched: Vec<u64> = (lo..=hi)
                    .filter(|&c| (0..sel.count).any(|k| dim.chunk_index(sel.coord(k)) == c))
                    .collect();
                chunks = chunks.into_iter().flat_map(|c| touched.iter().map(move |&t| [c.clone(), vec![t]].concat())).collect();
            }
            if increasing {
                for c in chunks {
                    let before = owner.insert(c.clone(), b);
                    prop_assert!(before.is_none(), "chunk {:?} is read by {:?} and {}", c, before, b);
                }
            }
            let cells: u128 = s.iter().map(|d| u128::from(d.count)).product();
            let one_slab = (0..rank).all(|d| plan.blocks[b].slabs[d].len() == 1);
            prop_assert!(cells <= u128::from(budget) || one_slab, "read {} holds {} cells", b, cells);
        }
    }
}

#[test]
fn a_series_of_points_in_neighbouring_chunks_is_one_strided_read() {
    let grid = ChunkGrid::regular(&[73], &[1095]).unwrap();
    let plan = Plan::new(&grid, Need::of_indices(&[vec![0, 100, 200]]), &Limits::whole(1)).unwrap();
    assert_eq!(plan.selections(), &[vec![DimSelection { start: 0, step: 100, count: 3, drop: false }]]);
    // A chunk skipped: two reads.
    let plan = Plan::new(&grid, Need::of_indices(&[vec![0, 500]]), &Limits::whole(1)).unwrap();
    assert_eq!(plan.len(), 2);
    // Irregular indices in neighbouring chunks: every index between is read.
    let plan = Plan::new(&grid, Need::of_indices(&[vec![3, 5, 80]]), &Limits::whole(1)).unwrap();
    assert_eq!(plan.selections(), &[vec![DimSelection { start: 3, step: 1, count: 78, drop: false }]]);
    assert_eq!(plan.cells(0)[0][..3], [0, UNNEEDED, 1]);
    assert_eq!(plan.cells(0)[0][77], 2);
}

#[test]
fn a_longitude_range_across_the_seam_is_two_reads() {
    let grid = ChunkGrid::regular(&[36], &[144]).unwrap();
    let seam: Vec<u64> = (140..144).chain(0..5).collect();
    let plan = Plan::new(&grid, Need::of_indices(&[seam]), &Limits::whole(1)).unwrap();
    assert_eq!(
        plan.selections(),
        &[
            vec![DimSelection { start: 140, step: 1, count: 4, drop: false }],
            vec![DimSelection { start: 0, step: 1, count: 5, drop: false }]
        ]
    );
    assert_eq!((plan.positions(0, 0), plan.positions(1, 0)), (0..4, 4..9));
}

#[test]
fn points_far_apart_are_read_chunk_by_chunk_and_close_ones_together() {
    // Three points on a diagonal of a 10 × 10 grid of 10 × 10 chunks, in neighbouring
    // chunks: three of the nine chunk pairs of their window, so three reads.
    let grid = ChunkGrid::regular(&[10, 10], &[100, 100]).unwrap();
    let need = |rows: Vec<u64>, cols: Vec<u64>, at: Vec<(u64, u64)>| Need {
        dims: vec![progressions(&rows), progressions(&cols)],
        pairs: Some(Pairs { dims: [0, 1], at }),
    };
    let diagonal = vec![(0, 0), (1, 1), (2, 2)];
    let plan = Plan::new(&grid, need(vec![5, 15, 25], vec![5, 15, 25], diagonal), &Limits::whole(2)).unwrap();
    assert_eq!(plan.len(), 3);
    assert_eq!(plan.chunks(), 3);
    // Half of them: one read of the window.
    let plan = Plan::new(&grid, need(vec![5, 15], vec![5, 15], vec![(0, 0), (1, 1)]), &Limits::whole(2)).unwrap();
    assert_eq!(plan.len(), 1);
    // Three points in one chunk: one read.
    let plan =
        Plan::new(&grid, need(vec![1, 2, 3], vec![4, 5], vec![(0, 0), (1, 1), (2, 0)]), &Limits::whole(2)).unwrap();
    assert_eq!(plan.len(), 1);
    assert_eq!(
        plan.selection(0),
        &[
            DimSelection { start: 1, step: 1, count: 3, drop: false },
            DimSelection { start: 4, step: 1, count: 2, drop: false }
        ]
    );
}

#[test]
fn a_whole_field_under_a_budget_is_read_in_whole_chunks() {
    let grid = ChunkGrid::regular(&[73, 24, 36], &[1095, 72, 144]).unwrap();
    let all = |n: u64| (0..n).collect::<Vec<u64>>();
    let need = Need::of_indices(&[all(1095), all(72), all(144)]);
    let plan =
        Plan::new(&grid, need.clone(), &Limits { block_cells: 2 * 73 * 72 * 144, order: vec![0, 1, 2] }).unwrap();
    assert_eq!(plan.len(), 8);
    assert!(plan.selections().iter().all(|s| s[0].start % 73 == 0));
    assert_eq!(plan.cells_read(), 1095 * 72 * 144);
    // One chunk per read, split along longitude first.
    let plan = Plan::new(&grid, need, &Limits { block_cells: 1, order: vec![2, 1, 0] }).unwrap();
    assert_eq!(plan.len(), 15 * 3 * 4);
    assert_eq!(plan.selections()[..45].iter().map(|s| s[2].start).max(), Some(0));
}

#[test]
fn a_need_beyond_the_extent_is_refused() {
    let grid = ChunkGrid::regular(&[10], &[100]).unwrap();
    assert!(Plan::new(&grid, Need::of_indices(&[vec![100]]), &Limits::whole(1)).is_err());
    let empty = Plan::new(&grid, Need::of_indices(&[vec![]]), &Limits::whole(1)).unwrap();
    assert!(empty.is_empty());
}

/// A stored cell's value in the gather test: its stored indices, one per two digits.
fn encode(indices: &[u64]) -> u64 {
    indices.iter().rev().fold(0, |acc, &i| acc * 100 + i)
}

proptest! {
    /// Gathering copies every needed cell from its read to its place: C order over the
    /// needed positions, or pair by pair with the other dimensions in C order.
    #[test]
    fn gathered_cells_are_the_needed_ones_in_order((grid, needs, pairs, budget) in case()) {
        let need = Need {
            dims: needs.iter().map(|n| progressions(n)).collect(),
            pairs: pairs.clone().map(|at| Pairs { dims: [0, 1], at }),
        };
        let rank = needs.len();
        let plan = Plan::new(&grid, need, &Limits { block_cells: budget, order: (0..rank).collect() }).unwrap();
        let shape = plan.gathered_shape();
        let mut out = vec![0u8; shape.iter().product::<u64>() as usize * 8];
        let by_read = plan.pairs_by_read();
        for b in 0..plan.len() {
            let s = plan.selection(b);
            let total: u64 = s.iter().map(|d| d.count).product();
            let data: Vec<u8> = (0..total)
                .flat_map(|flat| {
                    let mut rest = flat;
                    let mut idx = vec![0u64; rank];
                    for d in (0..rank).rev() {
                        idx[d] = s[d].coord(rest % s[d].count);
                        rest /= s[d].count;
                    }
                    encode(&idx).to_le_bytes()
                })
                .collect();
            match &by_read {
                None => plan.place(b, &data, &mut out, 8),
                Some(p) => plan.place_pairs(b, &p[b], &data, &mut out, 8),
            }
        }
        let got: Vec<u64> = out.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        let cells = needed(&needs, None);
        let expected: Vec<u64> = match &pairs {
            None => cells.iter().map(|c| encode(&(0..rank).map(|d| needs[d][c[d] as usize]).collect::<Vec<_>>())).collect(),
            Some(at) => at
                .iter()
                .flat_map(|&(i, j)| {
                    cells
                        .iter()
                        .filter(move |c| c[0] == i && c[1] == j)
                        .map(|c| encode(&(0..rank).map(|d| needs[d][c[d] as usize]).collect::<Vec<_>>()))
                        .collect::<Vec<_>>()
                })
                .collect(),
        };
        prop_assert_eq!(got, expected);
    }
}
