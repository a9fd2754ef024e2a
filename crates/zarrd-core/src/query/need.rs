//! What a question needs of one array, before any grid is known.

/// Stored indices `start, start + step, …` (`count` of them, `step` ≥ 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progression {
    pub start: u64,
    pub step: u64,
    pub count: u64,
}

impl Progression {
    /// `count` consecutive indices from `start`.
    pub fn run(start: u64, count: u64) -> Self {
        Self { start, step: 1, count }
    }

    /// The last index.
    pub fn last(&self) -> u64 {
        self.start + self.count.saturating_sub(1) * self.step
    }
}

/// In-order indices as increasing progressions (a new one wherever the order falls or the
/// spacing changes).
pub fn progressions(indices: &[u64]) -> Vec<Progression> {
    let mut out: Vec<Progression> = Vec::new();
    for &i in indices {
        if let Some(p) = out.last_mut() {
            let last = p.last();
            if i > last && (p.count == 1 || i - last == p.step) {
                p.step = i - last;
                p.count += 1;
                continue;
            }
        }
        out.push(Progression { start: i, step: 1, count: 1 });
    }
    out
}

/// What a question needs of one array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// Per dimension: the stored indices to visit, in the question's order.
    pub dims: Vec<Vec<Progression>>,
    /// Only these cells of two dimensions, as positions among each one's needed indices
    /// (a tile's pixels, EDR's points); `None`: every combination.
    pub pairs: Option<Pairs>,
}

/// Positions `(i, j)` along dimensions `dims[0]` and `dims[1]` of a need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairs {
    pub dims: [usize; 2],
    pub at: Vec<(u64, u64)>,
}

impl Need {
    /// Every combination of each dimension's `indices` (in order).
    pub fn of_indices(indices: &[Vec<u64>]) -> Self {
        Self { dims: indices.iter().map(|i| progressions(i)).collect(), pairs: None }
    }

    /// How many indices dimension `d` visits.
    pub fn len(&self, d: usize) -> u64 {
        self.dims[d].iter().map(|p| p.count).sum()
    }

    /// The needed cells' extent along every dimension.
    pub fn shape(&self) -> Vec<u64> {
        (0..self.dims.len()).map(|d| self.len(d)).collect()
    }
}
