//! Reductions near the data (`/v1/reduce`, the EDR queries): a selection's cells folded
//! into one accumulator per output element, chunk by chunk.
//!
//! A [`Reduction`] says, per array dimension, which stored indices to visit and which
//! output element each lands in (kept, grouped by period or block, or reduced away), the
//! weight of each index, and an optional mask of grid cells (a polygon). The query plan
//! ([`crate::query::Plan`]) cuts the cells to visit into blocks at chunk edges; each block
//! is one read (coalesced, decoded in the CPU pool), two in flight, folded as it arrives
//! and dropped — memory
//! holds the accumulators and two blocks, whatever the extent reduced (median and
//! percentiles hold the values of the groups in flight: kept dimensions are read
//! outermost, and a group is ranked and dropped when its last cell is in).

pub mod area;
pub mod op;
pub mod polygon;
pub mod request;

use std::sync::Arc;

use futures::TryStreamExt;

use crate::coords::cf::CfValues;
use crate::query::{BLOCK_CELLS, Limits, Need, Plan, UNNEEDED};
use crate::read::{ArrayReader, ObjectVersion, ReadError};
use op::{Acc, Op, percentile};

/// Where one dimension's cells go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Folded together with every other index of the dimension.
    Reduced,
    /// Index `i` (of the selected ones) lands in output index `ids[i]` of `len`.
    Grouped { ids: Vec<u32>, len: usize },
}

/// Which grid cells count: `inside[r * cols + c]` for row `r` of dimension `rows` and
/// column `c` of dimension `cols` (indices among the selected ones), and on grids whose
/// cell areas are no product of a row's and a column's, each cell's own weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Mask {
    pub rows: usize,
    pub cols: usize,
    pub inside: Vec<bool>,
    pub weights: Option<Vec<f64>>,
}

/// A reduction over an array.
#[derive(Debug, Clone)]
pub struct Reduction {
    pub op: Op,
    /// Per array dimension: the stored indices selected, in order.
    pub selected: Vec<Vec<u64>>,
    pub fates: Vec<Fate>,
    /// Per array dimension: a weight per selected index (weights multiply across dims).
    pub weights: Vec<Option<Vec<f64>>>,
    pub mask: Option<Mask>,
}

/// A reduction's result: one value per output element, in C order of [`Reduced::shape`].
#[derive(Debug)]
pub struct Reduced {
    pub values: Vec<f64>,
    pub shape: Vec<u64>,
    pub object_versions: Vec<(String, ObjectVersion)>,
}

impl Reduction {
    /// The output shape: one extent per grouped dimension.
    pub fn shape(&self) -> Vec<u64> {
        self.fates
            .iter()
            .filter_map(|f| match f {
                Fate::Grouped { len, .. } => Some(*len as u64),
                Fate::Reduced => None,
            })
            .collect()
    }

    /// Per dimension, the selected indices that hold a cell to visit: all of them, except
    /// the rows and columns of a mask with nothing inside.
    pub fn visited(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = self.selected.iter().map(|s| (0..s.len()).collect()).collect();
        if let Some(mask) = &self.mask {
            let (nr, nc) = (self.selected[mask.rows].len(), self.selected[mask.cols].len());
            out[mask.rows].retain(|&r| (0..nc).any(|c| mask.inside[r * nc + c]));
            out[mask.cols].retain(|&c| (0..nr).any(|r| mask.inside[r * nc + c]));
        }
        out
    }

    /// The cells the reduction visits (counted before any read).
    pub fn cells(&self) -> u128 {
        self.visited().iter().map(|v| v.len() as u128).product()
    }

    /// The values median and percentiles hold at most: a group's cells, or the cells of
    /// the blocks in flight, whichever is more (never more than all the cells).
    pub fn values_held(&self) -> u128 {
        let (visited, strides) = (self.visited(), self.strides());
        let largest = expected_cells(self, &visited, &strides, self.shape().iter().product::<u64>() as usize)
            .into_iter()
            .max()
            .unwrap_or(0);
        let cells = visited.iter().map(|v| v.len() as u128).product();
        u128::from(largest.max(2 * BLOCK_CELLS)).min(cells)
    }

    /// Output strides of the grouped dimensions (0 for reduced ones).
    fn strides(&self) -> Vec<usize> {
        let mut strides = vec![0usize; self.fates.len()];
        let mut stride = 1usize;
        for (d, fate) in self.fates.iter().enumerate().rev() {
            if let Fate::Grouped { len, .. } = fate {
                strides[d] = stride;
                stride *= len;
            }
        }
        strides
    }

    /// The reads, planned: the visited indices per dimension, and the plan over them.
    fn plan(&self, array: &ArrayReader) -> Result<(Vec<Vec<usize>>, Plan), ReadError> {
        let visited = self.visited();
        let stored: Vec<Vec<u64>> =
            visited.iter().enumerate().map(|(d, v)| v.iter().map(|&i| self.selected[d][i]).collect()).collect();
        // Kept dimensions outermost: the blocks of one output element come together, so
        // median and percentiles finish each group (and drop its values) early.
        let grouped = |d: &usize| matches!(self.fates[*d], Fate::Grouped { .. });
        let order: Vec<usize> =
            (0..self.fates.len()).filter(grouped).chain((0..self.fates.len()).filter(|d| !grouped(d))).collect();
        let plan = Plan::new(&array.meta.read_grid(), Need::of_indices(&stored), &Limits::blocks(order))?;
        Ok((visited, plan))
    }

    /// The versions of the objects the reduction's reads touch (for revalidation), as
    /// [`Reduced::object_versions`] lists them.
    pub async fn versions(&self, array: &ArrayReader) -> Result<Vec<(String, ObjectVersion)>, ReadError> {
        self.plan(array)?.1.versions(array).await
    }

    /// Reads and folds every cell to visit (shared with the folder, which travels to the
    /// CPU pool and back).
    pub async fn run(self: Arc<Self>, array: &ArrayReader) -> Result<Reduced, ReadError> {
        let (visited, plan) = self.plan(array)?;
        let shape = self.shape();
        let n_out: usize = shape.iter().product::<u64>() as usize;
        // Folding runs in the CPU pool (the runtime's threads only wait), the next block's
        // read in flight meanwhile; the folder travels there and back.
        let mut folder = Folder::new(Arc::clone(&self), n_out, &visited);
        let cf = Arc::new(CfValues::of(&array.meta));
        let item = array.meta.data_type.size();
        let mut versions = Vec::new();
        let mut reads = std::pin::pin!(plan.reads(array, 2));
        let mut b = 0;
        while let Some(whole) = reads.try_next().await? {
            let (cells, cf) = (cells_of(&plan, b, &visited), Arc::clone(&cf));
            b += 1;
            let data = whole.data;
            folder = crate::ops::cpu::run(move || {
                folder.fold(&data, &cf, &cells, item);
                folder
            })
            .await
            .map_err(ReadError::Task)?;
            versions.extend(whole.object_versions);
        }
        versions.sort_unstable();
        versions.dedup();
        Ok(Reduced { values: folder.finish(), shape, object_versions: versions })
    }
}

/// Along each dimension, the selected index of each cell of read `b` ([`UNNEEDED`] for
/// cells read only because they lie between visited ones).
fn cells_of(plan: &Plan, b: usize, visited: &[Vec<usize>]) -> Vec<Vec<usize>> {
    plan.cells(b)
        .into_iter()
        .zip(visited)
        .map(|(cells, v)| cells.into_iter().map(|k| if k == UNNEEDED { UNNEEDED } else { v[k] }).collect())
        .collect()
}

/// The accumulators, and how a cell finds its own.
struct Folder {
    reduction: Arc<Reduction>,
    accs: Vec<Acc>,
    values: Vec<Vec<f64>>,
    /// Output strides of the grouped dimensions (0 for reduced ones).
    strides: Vec<usize>,
    /// Median and percentiles: the cells each output element still waits for; at zero its
    /// result is computed and its values dropped.
    remaining: Vec<u64>,
    results: Vec<f64>,
}

impl Folder {
    fn new(reduction: Arc<Reduction>, n_out: usize, visited: &[Vec<usize>]) -> Self {
        let strides = reduction.strides();
        let holds = reduction.op.holds_values();
        Self {
            accs: if holds { Vec::new() } else { vec![Acc::default(); n_out] },
            values: if holds { vec![Vec::new(); n_out] } else { Vec::new() },
            remaining: if holds { expected_cells(&reduction, visited, &strides, n_out) } else { Vec::new() },
            results: if holds { vec![f64::NAN; n_out] } else { Vec::new() },
            strides,
            reduction,
        }
    }

    /// Folds one cell's value into output element `out` with weight `w`.
    #[inline]
    fn add(&mut self, out: usize, x: f64, w: f64) {
        if self.values.is_empty() {
            self.accs[out].add(x, w);
            return;
        }
        if !x.is_nan() {
            self.values[out].push(x);
        }
        self.remaining[out] = self.remaining[out].saturating_sub(1);
        if self.remaining[out] == 0 {
            let q = match self.reduction.op {
                Op::Percentile(q) => q,
                _ => 50.0,
            };
            self.results[out] = percentile(&mut std::mem::take(&mut self.values[out]), q);
        }
    }

    /// Folds a block's decoded cells: `cells[d]` are the selected indices along `d`.
    fn fold(&mut self, data: &[u8], cf: &CfValues, cells: &[Vec<usize>], item: usize) {
        let r = Arc::clone(&self.reduction);
        let rank = cells.len();
        // Per dimension and cell: its output offset and weight.
        let offsets: Vec<Vec<usize>> = (0..rank)
            .map(|d| {
                cells[d]
                    .iter()
                    .map(|&i| match &r.fates[d] {
                        _ if i == UNNEEDED => 0,
                        Fate::Grouped { ids, .. } => ids[i] as usize * self.strides[d],
                        Fate::Reduced => 0,
                    })
                    .collect()
            })
            .collect();
        let weights: Vec<Option<Vec<f64>>> = (0..rank)
            .map(|d| {
                r.weights[d]
                    .as_ref()
                    .map(|w| cells[d].iter().map(|&i| if i == UNNEEDED { 0.0 } else { w[i] }).collect())
            })
            .collect();
        let mask_cols = r.mask.as_ref().map(|m| r.selected[m.cols].len());
        // Row by row along the last dimension: what the other dimensions give (offset,
        // weight, mask row) once per row, the row's values decoded in one loop.
        let last = rank.saturating_sub(1);
        let row_len = cells.get(last).map_or(1, Vec::len);
        let rows = if rank == 0 { 1 } else { data.len() / item / row_len.max(1) };
        let mut values = vec![0f64; row_len];
        let mut index = vec![0usize; rank];
        for row in 0..rows {
            // A row read only because it lies between visited ones.
            let needed = (0..last).all(|d| cells[d][index[d]] != UNNEEDED);
            let (mut base, mut weight) = (0usize, 1.0);
            for d in 0..last {
                base += offsets[d][index[d]];
                if let Some(ws) = &weights[d] {
                    weight *= ws[index[d]];
                }
            }
            if needed {
                cf.values_into(&data[row * row_len * item..(row + 1) * row_len * item], &mut values);
            }
            for (j, &x) in values.iter().enumerate().filter(|_| needed) {
                if rank > 0 {
                    index[last] = j;
                    if cells[last][j] == UNNEEDED {
                        continue;
                    }
                }
                let (inside, cell_weight) = match (&r.mask, mask_cols) {
                    (Some(m), Some(nc)) => {
                        let k = cells[m.rows][index[m.rows]] * nc + cells[m.cols][index[m.cols]];
                        (m.inside[k], m.weights.as_ref().map_or(1.0, |w| w[k]))
                    }
                    _ => (true, 1.0),
                };
                // NaN is skipped, but median and percentiles count it towards the group.
                if inside && (!x.is_nan() || !self.values.is_empty()) {
                    let (out, w) = if rank == 0 {
                        (0, 1.0)
                    } else {
                        let w = weights[last].as_ref().map_or(weight, |ws| weight * ws[j]);
                        (base + offsets[last][j], w * cell_weight)
                    };
                    self.add(out, x, w);
                }
            }
            // The next row: the odometer over all but the last dimension.
            for d in (0..last).rev() {
                index[d] += 1;
                if index[d] < cells[d].len() {
                    break;
                }
                index[d] = 0;
            }
        }
    }

    fn finish(self) -> Vec<f64> {
        match self.reduction.op {
            Op::Median | Op::Percentile(_) => self.results,
            op => self.accs.iter().map(|a| a.finish(op)).collect(),
        }
    }
}

/// The cells each output element gathers: per kept dimension the visited indices of its
/// group, per reduced one all of them, and for a mask the inside cells of each pair of
/// latitude and longitude groups.
fn expected_cells(r: &Reduction, visited: &[Vec<usize>], strides: &[usize], n_out: usize) -> Vec<u64> {
    let group = |d: usize, i: usize| match &r.fates[d] {
        Fate::Grouped { ids, .. } => ids[i] as usize,
        Fate::Reduced => 0,
    };
    let groups = |d: usize| match &r.fates[d] {
        Fate::Grouped { len, .. } => *len,
        Fate::Reduced => 1,
    };
    // Per factor: (offset in the output, cells) entries; their product is every element.
    let mut factors: Vec<Vec<(usize, u64)>> = Vec::new();
    let masked = r.mask.as_ref().map(|m| (m.rows, m.cols));
    for d in 0..r.fates.len() {
        if masked.is_some_and(|(a, b)| d == a || d == b) {
            continue;
        }
        let mut counts = vec![0u64; groups(d)];
        for &i in &visited[d] {
            counts[group(d, i)] += 1;
        }
        factors.push(counts.into_iter().enumerate().map(|(g, c)| (g * strides[d], c)).collect());
    }
    if let (Some(m), Some((rows, cols))) = (&r.mask, masked) {
        let nc = r.selected[cols].len();
        let gc = groups(cols);
        let mut table = vec![0u64; groups(rows) * gc];
        for &i in &visited[rows] {
            for &j in &visited[cols] {
                if m.inside[i * nc + j] {
                    table[group(rows, i) * gc + group(cols, j)] += 1;
                }
            }
        }
        factors.push(
            table.iter().enumerate().map(|(k, &c)| ((k / gc) * strides[rows] + (k % gc) * strides[cols], c)).collect(),
        );
    }
    let mut out = vec![1u64; n_out];
    let mut partial = vec![(0usize, 1u64)];
    for factor in &factors {
        partial = partial.iter().flat_map(|&(o, c)| factor.iter().map(move |&(fo, fc)| (o + fo, c * fc))).collect();
    }
    for (o, c) in partial {
        if let Some(slot) = out.get_mut(o) {
            *slot = c;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // small exact values
mod tests {
    use super::*;
    use crate::zarr::data_type::DataType;

    fn f64_values(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn identity() -> CfValues {
        let doc = serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": "NaN",
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        });
        let crate::zarr::metadata::Node::Array(meta) = crate::zarr::metadata::Node::from_value(doc).unwrap() else {
            panic!("not an array")
        };
        CfValues::of(&meta)
    }

    #[test]
    fn medians_finish_each_group_as_soon_as_its_cells_are_in() {
        // time × lat, 2 × 3, the median over lat for each time: group 0 is complete after
        // the first row (one block), and its values are gone then.
        let reduction = Reduction {
            op: Op::Median,
            selected: vec![vec![0, 1], vec![0, 1, 2]],
            fates: vec![Fate::Grouped { ids: vec![0, 1], len: 2 }, Fate::Reduced],
            weights: vec![None, None],
            mask: None,
        };
        let visited = reduction.visited();
        let mut folder = Folder::new(Arc::new(reduction.clone()), 2, &visited);
        assert_eq!(folder.remaining, vec![3, 3]);
        let cf = identity();
        assert_eq!(cf.decoded, DataType::Float64);
        folder.fold(&f64_values(&[3.0, f64::NAN, 1.0]), &cf, &[vec![0], vec![0, 1, 2]], 8);
        assert_eq!(folder.results[0], 2.0, "the median of 3 and 1, NaN skipped");
        assert_eq!(folder.values[0].capacity(), 0, "its values are dropped");
        folder.fold(&f64_values(&[5.0, 7.0, 6.0]), &cf, &[vec![1], vec![0, 1, 2]], 8);
        assert_eq!(folder.finish(), vec![2.0, 6.0]);
    }

    #[test]
    fn a_mask_counts_only_its_inside_cells() {
        // lat × lon 2 × 2 with one cell outside, everything reduced: 3 cells to wait for.
        let reduction = Reduction {
            op: Op::Percentile(100.0),
            selected: vec![vec![0, 1], vec![0, 1]],
            fates: vec![Fate::Reduced, Fate::Reduced],
            weights: vec![None, None],
            mask: Some(Mask { rows: 0, cols: 1, inside: vec![true, true, false, true], weights: None }),
        };
        let visited = reduction.visited();
        let folder = Folder::new(Arc::new(reduction), 1, &visited);
        assert_eq!(folder.remaining, vec![3]);
    }
}
