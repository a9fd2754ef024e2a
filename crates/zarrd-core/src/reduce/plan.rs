//! The reads of a reduction, planned before any is made: the cells to visit along each
//! dimension are cut at the read grid's chunk edges into pieces, and the pieces grouped
//! into blocks — each one index selection (`start`, `step`, `count` per dimension) no
//! larger than a byte budget unless a single chunk is. Blocks meet at chunk edges, so every
//! stored chunk the reduction needs is read once, by one block, and chunks holding no
//! cell to visit (outside a polygon's rows and columns, between the points of a series)
//! are not read at all.

use crate::read::selection::DimSelection;
use crate::zarr::chunk_grid::ChunkGrid;

/// Consecutive cells to visit along one dimension, within one chunk and evenly spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Index of the first cell among the dimension's cells to visit.
    pub first: usize,
    pub len: usize,
    /// Stored index of the first cell, and the spacing of stored indices.
    pub start: u64,
    pub step: u64,
    /// Pieces of one run continue each other's spacing: a block may span them.
    run: usize,
}

/// One read: a range of pieces along every dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub pieces: Vec<std::ops::Range<usize>>,
}

/// Cuts the stored indices to visit along dimension `d` (increasing or not) into pieces.
pub fn pieces(grid: &ChunkGrid, d: usize, stored: &[u64]) -> Vec<Piece> {
    let dim = &grid.dims[d];
    let mut out: Vec<Piece> = Vec::new();
    let mut run = 0;
    for (i, &s) in stored.iter().enumerate() {
        if let Some(last) = out.last_mut() {
            let prev = last.start + (last.len as u64 - 1) * last.step;
            let step = s.checked_sub(prev).filter(|&st| st > 0);
            let continues = step.is_some_and(|st| last.len == 1 || st == last.step);
            if continues && dim.chunk_index(s) == dim.chunk_index(last.start) {
                if last.len == 1 {
                    last.step = step.unwrap_or(1);
                }
                last.len += 1;
                continue;
            }
            // A new chunk along the same progression stays in the run.
            let same_run = continues && (last.len > 1 || step == Some(last.step));
            if !same_run {
                run += 1;
            }
            let step = if same_run { last.step } else { 1 };
            out.push(Piece { first: i, len: 1, start: s, step, run });
            continue;
        }
        out.push(Piece { first: i, len: 1, start: s, step: 1, run });
    }
    out
}

/// Groups pieces into blocks of at most `budget` cells each (unless one piece per
/// dimension is more), every block one evenly spaced run per dimension. Blocks are split
/// along the dimensions in `order` first (all dimensions, the outermost first): the
/// blocks of one piece of `order[0]` come together.
pub fn blocks(pieces: &[Vec<Piece>], budget: u64, order: &[usize]) -> Vec<Block> {
    let mut out = Vec::new();
    let whole = Block { pieces: pieces.iter().map(|p| 0..p.len()).collect() };
    if pieces.iter().any(Vec::is_empty) {
        return out;
    }
    split(pieces, whole, budget.max(1), order, &mut out);
    out
}

fn cells(pieces: &[Vec<Piece>], block: &Block) -> u128 {
    block.pieces.iter().zip(pieces).map(|(r, p)| p[r.clone()].iter().map(|x| x.len as u128).sum::<u128>()).product()
}

fn one_run(p: &[Piece]) -> bool {
    p.first().is_none_or(|first| p.iter().all(|x| x.run == first.run))
}

fn split(pieces: &[Vec<Piece>], block: Block, budget: u64, order: &[usize], out: &mut Vec<Block>) {
    let total = cells(pieces, &block);
    let fits = total <= u128::from(budget);
    let splittable = order.iter().copied().find(|&d| {
        let r = &block.pieces[d];
        r.len() > 1 && (!fits || !one_run(&pieces[d][r.clone()]))
    });
    let Some(d) = splittable else {
        out.push(block);
        return;
    };
    // Cells of the block per piece-cell along `d`.
    let others = total / block.pieces[d].clone().map(|i| pieces[d][i].len as u128).sum::<u128>().max(1);
    let mut group_start = block.pieces[d].start;
    let mut group_cells = 0u128;
    for i in block.pieces[d].clone() {
        let piece = pieces[d][i];
        let grown = (group_cells + piece.len as u128) * others;
        let breaks = i > group_start && (grown > u128::from(budget) || piece.run != pieces[d][i - 1].run);
        if breaks {
            let mut part = block.clone();
            part.pieces[d] = group_start..i;
            split(pieces, part, budget, order, out);
            group_start = i;
            group_cells = 0;
        }
        group_cells += piece.len as u128;
    }
    let mut part = block;
    part.pieces[d] = group_start..part.pieces[d].end;
    split(pieces, part, budget, order, out);
}

impl Block {
    /// The block's index selection (every dimension kept).
    pub fn selection(&self, pieces: &[Vec<Piece>]) -> Vec<DimSelection> {
        self.pieces
            .iter()
            .zip(pieces)
            .map(|(r, p)| {
                let first = p[r.start];
                let count = p[r.clone()].iter().map(|x| x.len as u64).sum();
                DimSelection { start: first.start, step: first.step, count, drop: false }
            })
            .collect()
    }

    /// Along each dimension, the indices (among that dimension's cells to visit) of the
    /// block's cells, in order.
    pub fn cells(&self, pieces: &[Vec<Piece>]) -> Vec<Vec<usize>> {
        self.pieces
            .iter()
            .zip(pieces)
            .map(|(r, p)| p[r.clone()].iter().flat_map(|x| x.first..x.first + x.len).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(chunks: &[u64], shape: &[u64]) -> ChunkGrid {
        ChunkGrid::regular(chunks, shape).unwrap()
    }

    #[test]
    fn pieces_break_at_chunk_edges_and_gaps() {
        let g = grid(&[10], &[100]);
        let p = pieces(&g, 0, &[5, 6, 7, 8, 9, 10, 11, 40, 42, 44]);
        let spans: Vec<(u64, usize, u64)> = p.iter().map(|x| (x.start, x.len, x.step)).collect();
        assert_eq!(spans, vec![(5, 5, 1), (10, 2, 1), (40, 3, 2)]);
        assert_eq!(p[0].run, p[1].run, "10 continues 9");
        assert_ne!(p[1].run, p[2].run, "40 does not continue 11");
        // A longitude range across the seam: 140..143 then 0..4.
        let seam: Vec<u64> = (140..144).chain(0..5).collect();
        let p = pieces(&grid(&[36], &[144]), 0, &seam);
        assert_eq!(p.len(), 2);
        assert_ne!(p[0].run, p[1].run);
    }

    #[test]
    fn blocks_meet_at_chunk_edges_and_stay_within_the_budget() {
        let g = grid(&[73, 24, 36], &[1095, 72, 144]);
        let time: Vec<u64> = (0..1095).collect();
        let lat: Vec<u64> = vec![17];
        let lon: Vec<u64> = vec![114];
        let p = vec![pieces(&g, 0, &time), pieces(&g, 1, &lat), pieces(&g, 2, &lon)];
        assert_eq!(p[0].len(), 15);
        // A point's series: one read of 1095 cells from 15 chunks.
        let b = blocks(&p, 1 << 20, &[0, 1, 2]);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].selection(&p)[0], DimSelection { start: 0, step: 1, count: 1095, drop: false });
        // A whole field with a budget of two chunk-rows of time: blocks of whole chunks.
        let all = |n: u64| (0..n).collect::<Vec<u64>>();
        let p = vec![pieces(&g, 0, &all(1095)), pieces(&g, 1, &all(72)), pieces(&g, 2, &all(144))];
        let b = blocks(&p, 2 * 73 * 72 * 144, &[0, 1, 2]);
        assert_eq!(b.len(), 8);
        let mut covered = 0u128;
        for block in &b {
            let sel = block.selection(&p);
            assert_eq!(sel[0].start % 73, 0, "starts on a chunk edge");
            covered += sel.iter().map(|d| u128::from(d.count)).product::<u128>();
        }
        assert_eq!(covered, 1095 * 72 * 144);
        // A tiny budget: one block per chunk.
        assert_eq!(blocks(&p, 1, &[0, 1, 2]).len(), 15 * 3 * 4);
        // Split along longitude first: the first blocks are one column of chunks.
        let by_lon = blocks(&p, 1, &[2, 1, 0]);
        assert_eq!(by_lon[..45].iter().map(|b| b.pieces[2].start).max(), Some(0));
    }
}
