//! Selection → chunks, walked lazily: which chunks of a grid a resolved selection touches,
//! and which part of each, without building anything proportional to the grid.
//!
//! Along one dimension the touched chunks are counted and addressed arithmetically, run
//! by run of equal chunk edges (a regular dimension is one run): where the edge is at least
//! the selection's step every chunk between the first and last selected coordinate holds
//! one (dense), otherwise every selected coordinate lies in a chunk of its own (sparse).
//! So a request's cost (the number of chunks it touches) is known before any of them is
//! enumerated, and a listing page of `limit` entries costs O(limit) whatever the grid's
//! size. Memory is O(runs overlapping the selection) per dimension.
//! The approach follows zarrs' chunk iterators (`array_subset/iterators`), made random
//! access so listings can start a page at any position.

use crate::read::selection::DimSelection;
use crate::zarr::chunk_grid::{ChunkGrid, Dim};

/// The part of one chunk a selection covers along one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    pub chunk: u64,
    /// First selected coordinate, relative to the chunk start.
    pub start: u64,
    pub count: u64,
    /// Where these elements go in the output dimension.
    pub out: u64,
}

/// The touched chunks of one run of equal edges.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// Touches in the segments before this one.
    before: u64,
    edge: u64,
    /// The run's first chunk and the coordinate where it starts.
    run_chunk: u64,
    run_start: u64,
    /// Dense: touches are consecutive chunks from `first`; sparse: the selected
    /// coordinates from index `first` on, one chunk each.
    dense: bool,
    first: u64,
}

/// The chunks along one dimension that hold at least one selected coordinate, in order.
#[derive(Debug, Clone)]
pub struct DimWalk {
    sel: DimSelection,
    segments: Vec<Segment>,
    len: u64,
}

impl DimWalk {
    pub fn new(dim: &Dim, sel: &DimSelection) -> Self {
        let mut walk = Self { sel: *sel, segments: Vec::new(), len: 0 };
        if sel.count == 0 {
            return walk;
        }
        let (a, s, n) = (sel.start, sel.step.max(1), sel.count);
        let last = sel.coord(n - 1);
        for run in dim.runs_between(a, last) {
            let run_end = run.start.saturating_add(run.edge.saturating_mul(run.count));
            // Selection indices whose coordinate lies in [run.start, run_end).
            let lo = if run.start <= a { 0 } else { (run.start - a).div_ceil(s) };
            let hi = if run_end <= a { 0 } else { (run_end - a).div_ceil(s).min(n) };
            if lo >= hi {
                continue;
            }
            let chunk_of = |i: u64| run.first_chunk + (sel.coord(i) - run.start) / run.edge;
            let (dense, first, touches) = if run.edge >= s {
                let first = chunk_of(lo);
                (true, first, chunk_of(hi - 1) - first + 1)
            } else {
                (false, lo, hi - lo)
            };
            walk.segments.push(Segment {
                before: walk.len,

                edge: run.edge,
                run_chunk: run.first_chunk,
                run_start: run.start,
                dense,
                first,
            });
            walk.len += touches;
        }
        walk
    }

    /// How many chunks are touched.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `k`-th touched chunk (`k < len`).
    pub fn get(&self, k: u64) -> Touch {
        let seg = &self.segments[self.segments.partition_point(|s| s.before <= k) - 1];
        let nth = k - seg.before;
        let chunk = if seg.dense {
            seg.first + nth
        } else {
            seg.run_chunk + (self.sel.coord(seg.first + nth) - seg.run_start) / seg.edge
        };
        let chunk_start = seg.run_start + (chunk - seg.run_chunk) * seg.edge;
        let step = self.sel.step.max(1);
        let first = if chunk_start <= self.sel.start { 0 } else { (chunk_start - self.sel.start).div_ceil(step) };
        let x = self.sel.coord(first);
        let count = (chunk_start + seg.edge - x).div_ceil(step).min(self.sel.count - first);
        Touch { chunk, start: x - chunk_start, count, out: first }
    }

    /// Every touch in order (callers bound `len` first).
    pub fn iter(&self) -> impl Iterator<Item = Touch> + '_ {
        (0..self.len).map(|k| self.get(k))
    }
}

/// One chunk's share of a selection, in all dimensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub coords: Vec<u64>,
    /// First selected element in the chunk, per dimension.
    pub start: Vec<u64>,
    pub count: Vec<u64>,
    /// Where the elements go in the output.
    pub out: Vec<u64>,
}

/// The chunks of a grid a selection touches, in C order, addressed by position.
#[derive(Debug, Clone)]
pub struct Walk {
    dims: Vec<DimWalk>,
}

impl Walk {
    pub fn new(grid: &ChunkGrid, selection: &[DimSelection]) -> Self {
        Self { dims: grid.dims.iter().zip(selection).map(|(d, s)| DimWalk::new(d, s)).collect() }
    }

    /// How many chunks are touched (0 for an empty selection; 1 for a 0-d array).
    pub fn count(&self) -> u128 {
        self.dims.iter().map(|d| u128::from(d.len())).product()
    }

    /// The part at position `pos` (< `count`) in C order.
    pub fn part(&self, pos: u128) -> Part {
        let rank = self.dims.len();
        let mut part = Part { coords: vec![0; rank], start: vec![0; rank], count: vec![0; rank], out: vec![0; rank] };
        let mut rest = pos;
        for (d, walk) in self.dims.iter().enumerate().rev() {
            let n = u128::from(walk.len());
            let t = walk.get((rest % n) as u64);
            rest /= n;
            (part.coords[d], part.start[d], part.count[d], part.out[d]) = (t.chunk, t.start, t.count, t.out);
        }
        part
    }

    /// Every part in C order (callers bound `count` first).
    pub fn parts(&self) -> impl Iterator<Item = Part> + '_ {
        (0..self.count()).map(|p| self.part(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The touches by brute force: walk every selected coordinate.
    fn brute(dim: &Dim, sel: &DimSelection) -> Vec<Touch> {
        let mut out: Vec<Touch> = Vec::new();
        for i in 0..sel.count {
            let x = sel.coord(i);
            let chunk = dim.chunk_index(x);
            match out.last_mut() {
                Some(t) if t.chunk == chunk => t.count += 1,
                _ => out.push(Touch { chunk, start: x - dim.chunk_start(chunk), count: 1, out: i }),
            }
        }
        out
    }

    fn rect(edges: &[u64], extent: u64) -> Dim {
        let json = serde_json::json!({
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": [edges]}
        });
        ChunkGrid::from_json(&json, &[extent]).unwrap().dims.remove(0)
    }

    #[test]
    fn matches_a_brute_force_walk() {
        let dims = [
            Dim::fixed(1, 37),
            Dim::fixed(4, 37),
            Dim::fixed(10, 37),
            Dim::fixed(64, 37),
            rect(&[1, 1, 5, 5, 5, 2, 7, 3, 3, 3, 1, 1], 37),
            rect(&[10, 1, 1, 1, 20, 4], 37),
        ];
        for dim in &dims {
            for start in 0..37u64 {
                for step in 1..12 {
                    let max = (37 - start).div_ceil(step);
                    for count in [0, 1, 2, max / 2, max].into_iter().filter(|&c| c <= max) {
                        let sel = DimSelection { start, step, count, drop: false };
                        let walk = DimWalk::new(dim, &sel);
                        assert_eq!(walk.iter().collect::<Vec<_>>(), brute(dim, &sel), "{dim:?} {sel:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn counts_huge_grids_without_enumerating_them() {
        let sel = DimSelection::all(1_000_000_000_000);
        let walk = DimWalk::new(&Dim::fixed(1, 1_000_000_000_000), &sel);
        assert_eq!(walk.len(), 1_000_000_000_000);
        assert_eq!(
            walk.get(999_999_999_999),
            Touch { chunk: 999_999_999_999, start: 0, count: 1, out: 999_999_999_999 }
        );
        let sparse = DimSelection { start: 3, step: 1_000_000, count: 1_000_000, drop: false };
        let walk = DimWalk::new(&Dim::fixed(7, 1_000_000_000_000), &sparse);
        assert_eq!(walk.len(), 1_000_000);
        assert_eq!(walk.get(5), Touch { chunk: 5_000_003 / 7, start: 5_000_003 % 7, count: 1, out: 5 });
    }

    #[test]
    fn parts_come_in_c_order() {
        let grid = ChunkGrid::regular(&[2, 3], &[4, 7]).unwrap();
        let walk = Walk::new(&grid, &[DimSelection::all(4), DimSelection::all(7)]);
        assert_eq!(walk.count(), 6);
        let coords: Vec<Vec<u64>> = walk.parts().map(|p| p.coords).collect();
        assert_eq!(coords, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
        assert_eq!(walk.part(5).count, [2, 1]);
        assert_eq!(Walk::new(&ChunkGrid::regular(&[], &[]).unwrap(), &[]).count(), 1);
    }
}
