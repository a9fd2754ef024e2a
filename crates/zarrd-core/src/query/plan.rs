//! The plan, pure: a [`Need`] resolved on a read grid into reads.
//!
//! Along each dimension the needed indices are cut at chunk edges into slabs (one chunk's
//! share, increasing), and consecutive slabs are joined into windows wherever they skip no
//! whole chunk and keep increasing: a window is read as one index range — with the
//! needed indices' own step where they are evenly spaced, else every index from the first
//! to the last (the cells between cost no extra chunk). A longitude range across the
//! stored seam is two windows; a series' points in every other chunk are one window each.
//!
//! The reads are the products of one window per dimension; where only some pairs of two
//! dimensions are needed, only the products holding one, and a sparse product (fewer than
//! half its chunk pairs needed: points far apart, a thin diagonal) is read chunk pair by
//! chunk pair. A read larger than the block budget is split at chunk edges along the
//! dimensions in the given order, outermost first, so reads meet at chunk edges and every
//! chunk the question needs is read once, by one read.
//!
//! Tested against a brute-force reference that checks every needed cell is read once, by a
//! read holding it, and that no two reads share a chunk (`tests` below).

use std::ops::Range;

use super::need::{Need, Pairs, Progression};
use crate::read::ReadError;
use crate::read::selection::DimSelection;
use crate::zarr::chunk_grid::{ChunkGrid, Dim};

/// The most slabs one dimension of a plan holds, and the most reads a plan makes: a bound
/// on the plan's own memory whatever the question (each read is checked against
/// `limits.max_chunks_per_request` as it is made).
const MAX_SLABS: u64 = 1 << 22;

/// Cells one read holds at most (unless one chunk holds more): 4 Mi cells, 16 MiB of
/// float32 — a tile's window of 2048 × 2048 cells, a reduction's block.
pub const BLOCK_CELLS: u64 = 1 << 22;

/// Marks a cell of a read that the question does not need (read only because it lies
/// between needed ones in the same window).
pub const UNNEEDED: usize = usize::MAX;

/// How large a plan's reads may be.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Cells one read holds at most (one chunk's share may be more).
    pub block_cells: u64,
    /// The dimensions a read too large is split along, the first first (all of them).
    pub order: Vec<usize>,
}

impl Limits {
    /// Every window read whole (a slice: its size is checked before, by the route).
    pub fn whole(rank: usize) -> Self {
        Self { block_cells: u64::MAX, order: (0..rank).collect() }
    }

    /// Reads of at most [`BLOCK_CELLS`], split along `order` first.
    pub fn blocks(order: Vec<usize>) -> Self {
        Self { block_cells: BLOCK_CELLS, order }
    }
}

/// How a slab's (or span's) indices are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spacing {
    /// A single index.
    One,
    Every(u64),
    Irregular,
}

impl Spacing {
    /// The spacing of `self`, then a gap of `gap`, then `next`.
    fn then(self, gap: u64, next: Self) -> Self {
        for s in [self, next] {
            match s {
                Self::One => {}
                Self::Every(x) if x == gap => {}
                Self::Every(_) | Self::Irregular => return Self::Irregular,
            }
        }
        Self::Every(gap)
    }

    /// The step a read of these indices takes: every index when irregular.
    fn step(self) -> u64 {
        match self {
            Self::Every(s) => s,
            Self::One | Self::Irregular => 1,
        }
    }
}

/// One chunk's share of a dimension's needed indices: positions `first..first + len`
/// (among the needed), stored `start..=last`, increasing.
#[derive(Debug, Clone, Copy)]
struct Slab {
    first: u64,
    len: u64,
    start: u64,
    last: u64,
    spacing: Spacing,
    chunk: u64,
    window: usize,
}

/// One dimension of a plan.
#[derive(Debug, Clone)]
struct Axis {
    progressions: Vec<Progression>,
    /// Positions after each progression.
    ends: Vec<u64>,
    slabs: Vec<Slab>,
}

impl Axis {
    fn new(dim: &Dim, progressions: &[Progression]) -> Result<Self, ReadError> {
        let progressions: Vec<Progression> = progressions.iter().copied().filter(|p| p.count > 0).collect();
        let mut bound = 0u64;
        for p in &progressions {
            if p.step == 0 || p.last() >= dim.extent() {
                return Err(ReadError::Task(format!(
                    "a plan needs index {} of a dimension of {}",
                    p.last(),
                    dim.extent()
                )));
            }
            bound = bound.saturating_add(dim.chunk_index(p.last()) - dim.chunk_index(p.start) + 1);
        }
        if bound > MAX_SLABS {
            return Err(ReadError::TooManyChunks { chunks: u128::from(bound), limit: MAX_SLABS });
        }
        let mut slabs: Vec<Slab> = Vec::with_capacity(bound as usize);
        let mut ends = Vec::with_capacity(progressions.len());
        let mut pos = 0u64;
        for p in &progressions {
            let mut k = 0;
            while k < p.count {
                let i = p.start + k * p.step;
                let chunk = dim.chunk_index(i);
                let chunk_end = dim.chunk_start(chunk) + dim.chunk_size(chunk);
                let n = (chunk_end - i).div_ceil(p.step).min(p.count - k);
                let spacing = if n > 1 { Spacing::Every(p.step) } else { Spacing::One };
                let last = i + (n - 1) * p.step;
                match slabs.last_mut() {
                    Some(s) if s.chunk == chunk && i > s.last => {
                        s.spacing = s.spacing.then(i - s.last, spacing);
                        s.len += n;
                        s.last = last;
                    }
                    _ => slabs.push(Slab { first: pos + k, len: n, start: i, last, spacing, chunk, window: 0 }),
                }
                k += n;
            }
            pos += p.count;
            ends.push(pos);
        }
        for k in 1..slabs.len() {
            let (prev, s) = (slabs[k - 1], slabs[k]);
            let joins = s.start > prev.last && s.chunk <= prev.chunk + 1;
            slabs[k].window = prev.window + usize::from(!joins);
        }
        Ok(Self { progressions, ends, slabs })
    }

    /// The slab ranges of each window.
    fn windows(&self) -> Vec<Range<usize>> {
        let mut out: Vec<Range<usize>> = Vec::new();
        for (k, s) in self.slabs.iter().enumerate() {
            match out.last_mut() {
                Some(w) if self.slabs[w.start].window == s.window => w.end = k + 1,
                _ => out.push(k..k + 1),
            }
        }
        out
    }

    /// The slab holding needed position `pos`.
    fn slab_at(&self, pos: u64) -> usize {
        self.slabs.partition_point(|s| s.first + s.len <= pos)
    }

    /// The read of slabs `r` (one window).
    fn span(&self, r: &Range<usize>) -> DimSelection {
        let first = self.slabs[r.start];
        let (mut spacing, mut last) = (first.spacing, first.last);
        for s in &self.slabs[r.start + 1..r.end] {
            spacing = spacing.then(s.start - last, s.spacing);
            last = s.last;
        }
        let step = spacing.step();
        DimSelection { start: first.start, step, count: (last - first.start) / step + 1, drop: false }
    }

    /// The needed positions slabs `r` hold.
    fn positions(&self, r: &Range<usize>) -> Range<u64> {
        let last = self.slabs[r.end - 1];
        self.slabs[r.start].first..last.first + last.len
    }

    /// The stored indices of needed positions `range`, in order.
    fn stored(&self, range: Range<u64>) -> impl Iterator<Item = u64> + '_ {
        let k = self.ends.partition_point(|&e| e <= range.start);
        self.progressions[k..]
            .iter()
            .zip(&self.ends[k..])
            .take_while(move |(p, end)| **end - p.count < range.end)
            .flat_map(move |(p, &end)| {
                let begin = end - p.count;
                let from = range.start.max(begin) - begin;
                let to = range.end.min(end).saturating_sub(begin).max(from);
                (from..to).map(move |i| p.start + i * p.step)
            })
    }
}

/// One read: a range of slabs (within one window) along every dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    slabs: Vec<Range<usize>>,
}

/// A question's reads, planned.
#[derive(Debug, Clone)]
pub struct Plan {
    axes: Vec<Axis>,
    blocks: Vec<Block>,
    selections: Vec<Vec<DimSelection>>,
    /// The pairs of a sparse need.
    pairs: Option<Pairs>,
    chunks: u128,
}

impl Plan {
    /// Resolves `need` on `grid` (the array's read grid: its shards when sharded).
    pub fn new(grid: &ChunkGrid, need: Need, limits: &Limits) -> Result<Self, ReadError> {
        let axes = grid.dims.iter().zip(&need.dims).map(|(dim, p)| Axis::new(dim, p)).collect::<Result<Vec<_>, _>>()?;
        let mut plan = Self { axes, blocks: Vec::new(), selections: Vec::new(), pairs: need.pairs, chunks: 0 };
        if plan.axes.iter().any(|a| a.slabs.is_empty()) || plan.pairs.as_ref().is_some_and(|p| p.at.is_empty()) {
            return Ok(plan);
        }
        let distinct_chunks = |a: &Axis| {
            let mut c: Vec<u64> = a.slabs.iter().map(|s| s.chunk).collect();
            c.sort_unstable();
            c.dedup();
            c.len() as u128
        };
        let windows: Vec<Vec<Range<usize>>> = plan.axes.iter().map(Axis::windows).collect();
        let candidates = match plan.pairs() {
            None => {
                plan.chunks = plan.axes.iter().map(distinct_chunks).product();
                product(&windows, None)?
            }
            Some((dims, at)) => {
                let [a, b] = dims;
                let cells = plan.slab_pairs(a, b, at);
                let mut chunk_pairs: Vec<(u64, u64)> =
                    cells.iter().map(|&(i, j)| (plan.axes[a].slabs[i].chunk, plan.axes[b].slabs[j].chunk)).collect();
                chunk_pairs.sort_unstable();
                chunk_pairs.dedup();
                let others: u128 = (0..plan.axes.len())
                    .filter(|d| !dims.contains(d))
                    .map(|d| distinct_chunks(&plan.axes[d]))
                    .product();
                plan.chunks = chunk_pairs.len() as u128 * others;
                product(&windows, Some(&(dims, plan.sparse_pairs(dims, &cells, &windows))))?
            }
        };
        for block in candidates {
            plan.split(block, limits);
        }
        Ok(plan)
    }

    /// The slab pairs along `dims` to read: per window pair holding a needed cell, the
    /// whole pair of windows, or its needed chunk pairs one by one when they are fewer
    /// than half of it.
    fn sparse_pairs(
        &self,
        dims: [usize; 2],
        cells: &[(usize, usize)],
        windows: &[Vec<Range<usize>>],
    ) -> Vec<(Range<usize>, Range<usize>)> {
        let [a, b] = dims;
        let window_of = |d: usize, slab: usize| self.axes[d].slabs[slab].window;
        let mut groups: std::collections::BTreeMap<(usize, usize), Vec<(usize, usize)>> =
            std::collections::BTreeMap::new();
        for &(i, j) in cells {
            groups.entry((window_of(a, i), window_of(b, j))).or_default().push((i, j));
        }
        let mut out = Vec::new();
        for ((wa, wb), group) in groups {
            let (wa, wb) = (&windows[a][wa], &windows[b][wb]);
            if 2 * group.len() < wa.len() * wb.len() {
                out.extend(group.iter().map(|&(i, j)| (i..i + 1, j..j + 1)));
            } else {
                out.push((wa.clone(), wb.clone()));
            }
        }
        out.sort_by_key(|(ra, rb)| (ra.start, rb.start));
        out
    }

    /// Splits `block` until each part holds at most `limits.block_cells` cells (or one
    /// slab along every dimension of `limits.order`), and adds the parts.
    fn split(&mut self, block: Block, limits: &Limits) {
        let spans: Vec<DimSelection> = block.slabs.iter().zip(&self.axes).map(|(r, a)| a.span(r)).collect();
        let total: u128 = spans.iter().map(|s| u128::from(s.count)).product();
        let splittable = limits.order.iter().copied().find(|&d| block.slabs[d].len() > 1);
        let Some(d) = splittable.filter(|_| total > u128::from(limits.block_cells)) else {
            self.blocks.push(block);
            self.selections.push(spans);
            return;
        };
        let others = total / u128::from(spans[d].count.max(1));
        let axis = &self.axes[d];
        let r = block.slabs[d].clone();
        let mut groups = Vec::new();
        let mut g0 = r.start;
        let (mut spacing, mut last) = (axis.slabs[g0].spacing, axis.slabs[g0].last);
        for i in r.start + 1..r.end {
            let s = axis.slabs[i];
            let grown = spacing.then(s.start - last, s.spacing);
            let count = (s.last - axis.slabs[g0].start) / grown.step() + 1;
            if u128::from(count) * others > u128::from(limits.block_cells) {
                groups.push(g0..i);
                g0 = i;
                spacing = s.spacing;
            } else {
                spacing = grown;
            }
            last = s.last;
        }
        groups.push(g0..r.end);
        for g in groups {
            let mut part = block.clone();
            part.slabs[d] = g;
            self.split(part, limits);
        }
    }

    /// How many reads the plan makes.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether the plan reads nothing.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The index selection of read `b` (every dimension kept).
    pub fn selection(&self, b: usize) -> &[DimSelection] {
        &self.selections[b]
    }

    /// Every read's index selection.
    pub fn selections(&self) -> &[Vec<DimSelection>] {
        &self.selections
    }

    /// The stored chunks holding a needed cell.
    pub fn chunks(&self) -> u128 {
        self.chunks
    }

    /// Cells every read holds together (needed ones and those between them).
    pub fn cells_read(&self) -> u128 {
        self.selections.iter().map(|s| s.iter().map(|d| u128::from(d.count)).product::<u128>()).sum()
    }

    /// The needed cells' extent along every dimension.
    pub fn shape(&self) -> Vec<u64> {
        self.axes.iter().map(|a| a.ends.last().copied().unwrap_or(0)).collect()
    }

    /// The pairs of a sparse need: their dimensions and positions.
    pub fn pairs(&self) -> Option<([usize; 2], &[(u64, u64)])> {
        self.pairs.as_ref().map(|p| (p.dims, p.at.as_slice()))
    }

    /// Along dimension `d` of read `b`: the needed positions it holds.
    pub fn positions(&self, b: usize, d: usize) -> Range<u64> {
        self.axes[d].positions(&self.blocks[b].slabs[d])
    }

    /// Along dimension `d` of read `b`: each held needed position's offset in the read.
    pub fn offsets(&self, b: usize, d: usize) -> Vec<u64> {
        let s = self.selections[b][d];
        self.axes[d].stored(self.positions(b, d)).map(|i| (i - s.start) / s.step).collect()
    }

    /// The offset of needed position `pos` along `d` in read `b` (which holds it).
    pub fn offset(&self, b: usize, d: usize, pos: u64) -> u64 {
        let s = self.selections[b][d];
        let stored = self.axes[d].stored(pos..pos + 1).next().unwrap_or(s.start);
        (stored - s.start) / s.step
    }

    /// With pairs: per read, the pairs (indices among them) whose cell it holds — one read
    /// per pair, or several where a read was split along the other dimensions.
    pub(super) fn pairs_by_read(&self) -> Option<Vec<Vec<usize>>> {
        let ([a, b], at) = self.pairs()?;
        let columns = self.axes[b].slabs.len();
        // Slab pair → the reads holding it: a table over the slab pairs (a tile's are a few
        // hundred at most), else a map.
        let table = self.axes[a].slabs.len().checked_mul(columns).filter(|&n| n <= 1 << 22);
        let mut dense: Vec<Vec<usize>> = vec![Vec::new(); table.unwrap_or(0)];
        let mut sparse: std::collections::HashMap<(usize, usize), Vec<usize>> = std::collections::HashMap::new();
        for (k, block) in self.blocks.iter().enumerate() {
            for i in block.slabs[a].clone() {
                for j in block.slabs[b].clone() {
                    match table {
                        Some(_) => dense[i * columns + j].push(k),
                        None => sparse.entry((i, j)).or_default().push(k),
                    }
                }
            }
        }
        let mut out = vec![Vec::new(); self.blocks.len()];
        for (p, &(i, j)) in at.iter().enumerate() {
            let (i, j) = (self.axes[a].slab_at(i), self.axes[b].slab_at(j));
            let reads = match table {
                Some(_) => dense[i * columns + j].as_slice(),
                None => sparse.get(&(i, j)).map_or(&[][..], Vec::as_slice),
            };
            for &k in reads {
                out[k].push(p);
            }
        }
        Some(out)
    }

    /// The distinct slab pairs along `a` and `b` holding a pair of `at`, sorted.
    fn slab_pairs(&self, a: usize, b: usize, at: &[(u64, u64)]) -> Vec<(usize, usize)> {
        let (rows, columns) = (self.axes[a].slabs.len(), self.axes[b].slabs.len());
        let cells = at.iter().map(|&(i, j)| (self.axes[a].slab_at(i), self.axes[b].slab_at(j)));
        let Some(n) = rows.checked_mul(columns).filter(|&n| n <= 1 << 22) else {
            let mut out: Vec<(usize, usize)> = cells.collect();
            out.sort_unstable();
            out.dedup();
            return out;
        };
        // One pass over a table of the slab pairs (a tile's 65 536 cells sort in far more).
        let mut seen = vec![false; n];
        for (i, j) in cells {
            seen[i * columns + j] = true;
        }
        seen.iter().enumerate().filter(|(_, s)| **s).map(|(k, _)| (k / columns, k % columns)).collect()
    }

    /// Along each dimension, for each cell of read `b`, its position among the needed
    /// indices, or [`UNNEEDED`].
    pub fn cells(&self, b: usize) -> Vec<Vec<usize>> {
        (0..self.axes.len())
            .map(|d| {
                let mut out = vec![UNNEEDED; self.selections[b][d].count as usize];
                for (pos, off) in self.positions(b, d).zip(self.offsets(b, d)) {
                    out[off as usize] = pos as usize;
                }
                out
            })
            .collect()
    }
}

/// The candidate reads: one window per dimension in every combination, or — with pairs —
/// the given slab pairs along their two dimensions combined with every window of the others.
#[allow(clippy::type_complexity)]
fn product(
    windows: &[Vec<Range<usize>>],
    pairs: Option<&([usize; 2], Vec<(Range<usize>, Range<usize>)>)>,
) -> Result<Vec<Block>, ReadError> {
    let rank = windows.len();
    let skip = pairs.map(|p| p.0);
    let mut count: u128 = pairs.map_or(1, |p| p.1.len() as u128);
    for (d, w) in windows.iter().enumerate() {
        if !skip.is_some_and(|s| s.contains(&d)) {
            count *= w.len() as u128;
        }
    }
    if count > u128::from(MAX_SLABS) {
        return Err(ReadError::TooManyChunks { chunks: count, limit: MAX_SLABS });
    }
    let seeds: Vec<Block> = match pairs {
        None => vec![Block { slabs: vec![0..0; rank] }],
        Some(([a, b], ranges)) => ranges
            .iter()
            .map(|(ra, rb)| {
                let mut slabs = vec![0..0; rank];
                slabs[*a] = ra.clone();
                slabs[*b] = rb.clone();
                Block { slabs }
            })
            .collect(),
    };
    let mut out = seeds;
    for (d, w) in windows.iter().enumerate() {
        if skip.is_some_and(|s| s.contains(&d)) {
            continue;
        }
        out = out
            .into_iter()
            .flat_map(|block| {
                w.iter().map(move |r| {
                    let mut b = block.clone();
                    b.slabs[d] = r.clone();
                    b
                })
            })
            .collect();
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
