//! The chunk grid: `regular` (core spec) and `rectilinear` (zarr-extensions
//! `chunk-grids/rectilinear`, plus the legacy ZEP 3 `rectangular` form) in one type.
//!
//! Every dimension is either [`Dim::Fixed`] (O(1) arithmetic) or [`Dim::Varying`], kept as
//! run-length segments with prefix sums so lookups are a binary search and memory grows
//! with the number of runs in the metadata, never with the number of chunks.
//! A chunk's *size* is its declared (codec) edge; its *data size* is that edge clipped to
//! the array extent. Edges wholly past the extent (allowed after a shrink) are ignored.

use serde_json::{Value, json};

use crate::zarr::json::MetadataError;

/// One run of equal edges along a varying dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    edge: u64,
    count: u64,
    /// Index of the first chunk of this run.
    first_chunk: u64,
    /// Array coordinate where the run starts.
    start: u64,
}

/// A run of `count` chunks of equal `edge`, the first being chunk `first_chunk` at
/// coordinate `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunView {
    pub edge: u64,
    pub count: u64,
    pub first_chunk: u64,
    pub start: u64,
}

/// The chunking of one dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// Every chunk has the same edge; the last one is padded past the extent.
    Fixed { edge: u64, extent: u64 },
    /// Explicit edges, run-length encoded.
    Varying { runs: Vec<Run>, extent: u64 },
}

impl Dim {
    pub fn fixed(edge: u64, extent: u64) -> Self {
        Self::Fixed { edge, extent }
    }

    fn varying(edges: &[(u64, u64)], extent: u64, dim: usize) -> Result<Self, MetadataError> {
        let mut runs: Vec<Run> = Vec::new();
        let (mut first_chunk, mut start) = (0u64, 0u64);
        for &(edge, count) in edges {
            if let Some(last) = runs.last_mut().filter(|r| r.edge == edge) {
                last.count += count;
            } else {
                runs.push(Run { edge, count, first_chunk, start });
            }
            let overflow = || MetadataError::invalid("chunk_grid", &format!("dimension {dim}: edge lengths overflow"));
            first_chunk = first_chunk.checked_add(count).ok_or_else(overflow)?;
            start = edge.checked_mul(count).and_then(|len| start.checked_add(len)).ok_or_else(overflow)?;
        }
        if start < extent {
            return Err(MetadataError::invalid(
                "chunk_grid",
                &format!("dimension {dim}: chunk edges sum to {start}, less than the extent {extent}"),
            ));
        }
        Ok(Self::Varying { runs, extent })
    }

    /// The array extent of this dimension.
    pub fn extent(&self) -> u64 {
        match self {
            Self::Fixed { extent, .. } | Self::Varying { extent, .. } => *extent,
        }
    }

    /// The number of chunks that overlap `[0, extent)`.
    pub fn n_chunks(&self) -> u64 {
        match self.extent() {
            0 => 0,
            extent => self.chunk_index(extent - 1) + 1,
        }
    }

    /// The chunk holding coordinate `x` (`x` must be below the extent).
    pub fn chunk_index(&self, x: u64) -> u64 {
        match self {
            Self::Fixed { edge, .. } => x / edge,
            Self::Varying { runs, .. } => {
                let run = &runs[runs.partition_point(|r| r.start <= x) - 1];
                run.first_chunk + ((x - run.start) / run.edge).min(run.count - 1)
            }
        }
    }

    /// Where chunk `k` starts.
    pub fn chunk_start(&self, k: u64) -> u64 {
        match self {
            Self::Fixed { edge, .. } => k * edge,
            Self::Varying { runs, .. } => {
                let run = Self::run_of(runs, k);
                run.start + (k - run.first_chunk) * run.edge
            }
        }
    }

    /// The declared edge of chunk `k`: the extent its codecs encode.
    pub fn chunk_size(&self, k: u64) -> u64 {
        match self {
            Self::Fixed { edge, .. } => *edge,
            Self::Varying { runs, .. } => Self::run_of(runs, k).edge,
        }
    }

    /// The part of chunk `k` inside the array.
    pub fn data_size(&self, k: u64) -> u64 {
        self.chunk_size(k).min(self.extent().saturating_sub(self.chunk_start(k)))
    }

    /// The runs of equal edges that hold coordinates `lo..=hi` (a fixed dimension is one
    /// run), so a walk over a selection costs O(runs it overlaps), never O(chunks).
    pub fn runs_between(&self, lo: u64, hi: u64) -> Vec<RunView> {
        match self {
            Self::Fixed { edge, .. } => {
                vec![RunView { edge: *edge, count: hi / edge + 1, first_chunk: 0, start: 0 }]
            }
            Self::Varying { runs, .. } => {
                let first = runs.partition_point(|r| r.start <= lo).saturating_sub(1);
                let end = runs.partition_point(|r| r.start <= hi).max(first + 1);
                runs[first..end]
                    .iter()
                    .map(|r| RunView { edge: r.edge, count: r.count, first_chunk: r.first_chunk, start: r.start })
                    .collect()
            }
        }
    }

    fn run_of(runs: &[Run], k: u64) -> &Run {
        &runs[runs.partition_point(|r| r.first_chunk <= k) - 1]
    }

    /// Every distinct declared edge of the chunks that overlap the array.
    pub fn distinct_edges(&self) -> Vec<u64> {
        match self {
            Self::Fixed { edge, .. } => vec![*edge],
            Self::Varying { runs, extent } => {
                let mut edges: Vec<u64> =
                    runs.iter().filter(|r| r.start < *extent || *extent == 0).map(|r| r.edge).collect();
                edges.sort_unstable();
                edges.dedup();
                edges
            }
        }
    }

    /// The run-length form of the rectilinear spec: a bare integer, or a list of edges
    /// and `[edge, count]` pairs.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Fixed { edge, .. } => json!(edge),
            Self::Varying { runs, .. } => Value::Array(
                runs.iter().map(|r| if r.count == 1 { json!(r.edge) } else { json!([r.edge, r.count]) }).collect(),
            ),
        }
    }
}

/// The kind of grid as stored, reported by the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridKind {
    Regular,
    Rectilinear,
}

impl GridKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Regular => "regular",
            Self::Rectilinear => "rectilinear",
        }
    }
}

/// A regular or rectilinear chunk grid over an array of known shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkGrid {
    pub kind: GridKind,
    pub dims: Vec<Dim>,
}

impl ChunkGrid {
    /// A regular grid; an edge of 0 is accepted only on a 0-length dimension (old writers).
    pub fn regular(chunk_shape: &[u64], shape: &[u64]) -> Result<Self, MetadataError> {
        if chunk_shape.len() != shape.len() {
            return Err(MetadataError::invalid(
                "chunk_grid",
                &format!("chunk_shape has {} dimensions but the array has {}", chunk_shape.len(), shape.len()),
            ));
        }
        let dims = chunk_shape
            .iter()
            .zip(shape)
            .enumerate()
            .map(|(i, (&edge, &extent))| match (edge, extent) {
                (0, 0) => Ok(Dim::fixed(1, 0)),
                (0, _) => Err(MetadataError::invalid("chunk_grid", &format!("dimension {i}: chunk edge length 0"))),
                _ => Ok(Dim::fixed(edge, extent)),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { kind: GridKind::Regular, dims })
    }

    /// Parses the `chunk_grid` member of `zarr.json` for an array of `shape`.
    pub fn from_json(value: &Value, shape: &[u64]) -> Result<Self, MetadataError> {
        let (name, config) = crate::zarr::json::extension_parts(value, "chunk_grid")?;
        let config = config.ok_or_else(|| MetadataError::invalid("chunk_grid", "missing configuration"))?;
        match name {
            "regular" => {
                let chunk_shape =
                    crate::zarr::json::u64_list(config.get("chunk_shape"), "chunk_grid.configuration.chunk_shape")?;
                Self::regular(&chunk_shape, shape)
            }
            "rectilinear" => {
                match config.get("kind") {
                    Some(Value::String(k)) if k == "inline" => {}
                    Some(other) => {
                        return Err(MetadataError::Unsupported(format!("rectilinear chunk grid kind {other}")));
                    }
                    None => {
                        return Err(MetadataError::invalid("chunk_grid", "rectilinear grid without `kind`"));
                    }
                }
                Self::rectilinear(config.get("chunk_shapes"), shape, "chunk_shapes")
            }
            // The legacy ZEP 3 draft form, as zarrs reads it.
            "rectangular" => Self::rectilinear(config.get("chunk_shape"), shape, "chunk_shape"),
            other => Err(MetadataError::Unsupported(format!("chunk grid `{other}`"))),
        }
    }

    fn rectilinear(value: Option<&Value>, shape: &[u64], field: &str) -> Result<Self, MetadataError> {
        let bad = |why: String| MetadataError::invalid("chunk_grid", &format!("{field}: {why}"));
        let Some(Value::Array(per_dim)) = value else {
            return Err(bad("expected a list with one entry per dimension".into()));
        };
        if per_dim.len() != shape.len() {
            return Err(bad(format!("has {} entries but the array has {} dimensions", per_dim.len(), shape.len())));
        }
        let positive = |v: &Value, dim: usize| -> Result<u64, MetadataError> {
            v.as_u64().filter(|&n| n >= 1).ok_or_else(|| bad(format!("dimension {dim}: {v} is not an integer >= 1")))
        };
        let dims = per_dim
            .iter()
            .zip(shape)
            .enumerate()
            .map(|(dim, (entry, &extent))| match entry {
                Value::Array(items) => {
                    if items.is_empty() {
                        return Err(bad(format!("dimension {dim}: no chunk edges")));
                    }
                    let runs = items
                        .iter()
                        .map(|item| match item {
                            Value::Array(pair) if pair.len() == 2 => {
                                Ok((positive(&pair[0], dim)?, positive(&pair[1], dim)?))
                            }
                            Value::Array(_) => {
                                Err(bad(format!("dimension {dim}: run-length pair {item} must be [edge, count]")))
                            }
                            edge => Ok((positive(edge, dim)?, 1)),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    Dim::varying(&runs, extent, dim)
                }
                edge => Ok(Dim::fixed(positive(edge, dim)?, extent)),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { kind: GridKind::Rectilinear, dims })
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Chunks per dimension that overlap the array.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.dims.iter().map(Dim::n_chunks).collect()
    }

    /// The declared (codec) shape of chunk `coords`.
    pub fn chunk_shape(&self, coords: &[u64]) -> Vec<u64> {
        self.dims.iter().zip(coords).map(|(d, &k)| d.chunk_size(k)).collect()
    }

    /// Where chunk `coords` starts in array coordinates.
    pub fn chunk_origin(&self, coords: &[u64]) -> Vec<u64> {
        self.dims.iter().zip(coords).map(|(d, &k)| d.chunk_start(k)).collect()
    }

    /// The shape of chunk `coords` clipped to the array.
    pub fn data_shape(&self, coords: &[u64]) -> Vec<u64> {
        self.dims.iter().zip(coords).map(|(d, &k)| d.data_size(k)).collect()
    }

    /// Whether `coords` names a chunk that overlaps the array.
    pub fn contains(&self, coords: &[u64]) -> bool {
        coords.len() == self.rank() && self.dims.iter().zip(coords).all(|(d, &k)| k < d.n_chunks())
    }

    /// The run-length description of every dimension (API `chunk_sizes`).
    pub fn to_json(&self) -> Value {
        Value::Array(self.dims.iter().map(Dim::to_json).collect())
    }
}

#[cfg(test)]
impl ChunkGrid {
    /// A grid for tests: per dimension its extent and chunk edges — regular when every
    /// dimension has one edge, else rectilinear with each dimension's edges repeated until
    /// they cover its extent.
    pub(crate) fn repeating(dims: &[(u64, &[u64])]) -> Self {
        let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
        if dims.iter().all(|d| d.1.len() == 1) {
            let edges: Vec<u64> = dims.iter().map(|d| d.1[0]).collect();
            return Self::regular(&edges, &shape).unwrap();
        }
        let chunk_shapes: Vec<Vec<u64>> = dims
            .iter()
            .map(|&(extent, edges)| {
                let (mut covered, mut out) = (0, Vec::new());
                for e in edges.iter().cycle() {
                    if covered >= extent {
                        break;
                    }
                    out.push(*e);
                    covered += e;
                }
                out
            })
            .collect();
        let json = serde_json::json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": chunk_shapes}});
        Self::from_json(&json, &shape).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(shapes: &Value, shape: &[u64]) -> Result<ChunkGrid, MetadataError> {
        ChunkGrid::from_json(
            &json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes.clone()}}),
            shape,
        )
    }

    fn edges(d: &Dim) -> Vec<u64> {
        (0..d.n_chunks()).map(|k| d.chunk_size(k)).collect()
    }

    #[test]
    fn spec_example_expands_every_form() {
        let g = rect(&json!([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]), &[6; 5]).unwrap();
        assert_eq!(edges(&g.dims[0]), [4, 4]);
        assert_eq!(edges(&g.dims[1]), [1, 2, 3]);
        assert_eq!(edges(&g.dims[2]), [4, 4]);
        assert_eq!(edges(&g.dims[3]), [1, 1, 1, 3]);
        // Overflow edges past the extent are not chunks of the array.
        assert_eq!(edges(&g.dims[4]), [4, 4]);
        let data: Vec<u64> = (0..2).map(|k| g.dims[4].data_size(k)).collect();
        assert_eq!(data, [4, 2]);
    }

    #[test]
    fn spec_indexing_example() {
        let g = rect(&json!([[[16, 10]], [[24, 14]]]), &[160, 336]).unwrap();
        assert_eq!(g.dims[0].chunk_index(20), 1);
        assert_eq!(g.dims[1].chunk_index(15), 0);
        assert_eq!(g.dims[0].chunk_start(1), 16);
        assert_eq!(g.chunk_shape(&[0, 1]), [16, 24]);
    }

    #[test]
    fn varying_lookup_matches_brute_force() {
        let raw = [3u64, 3, 3, 1, 7, 7, 2, 5, 5, 5, 5];
        let list: Vec<Value> = raw.iter().map(|&e| json!(e)).collect();
        let total: u64 = raw.iter().sum();
        let g = rect(&json!([list]), &[total - 1]).unwrap();
        let d = &g.dims[0];
        let mut x = 0;
        for (k, &e) in raw.iter().enumerate() {
            assert_eq!(d.chunk_start(k as u64), x);
            assert_eq!(d.chunk_size(k as u64), e);
            for i in x..(x + e).min(total - 1) {
                assert_eq!(d.chunk_index(i), k as u64, "coordinate {i}");
            }
            x += e;
        }
        assert_eq!(d.data_size(10), 4);
        // Adjacent equal edges fold into one run.
        assert_eq!(d.to_json(), json!([[3, 3], 1, [7, 2], 2, [5, 4]]));
    }

    #[test]
    fn huge_run_lengths_use_no_memory() {
        let g = rect(&json!([[[1, 1_000_000_000_000u64], 5]]), &[1_000_000_000_003]).unwrap();
        assert_eq!(g.dims[0].n_chunks(), 1_000_000_000_001);
        assert_eq!(g.dims[0].chunk_index(1_000_000_000_002), 1_000_000_000_000);
        assert_eq!(g.dims[0].data_size(1_000_000_000_000), 3);
    }

    #[test]
    fn regular_grid_and_boundaries() {
        let g = ChunkGrid::regular(&[10, 3], &[25, 9]).unwrap();
        assert_eq!(g.grid_shape(), [3, 3]);
        assert_eq!(g.chunk_shape(&[2, 2]), [10, 3]);
        assert_eq!(g.data_shape(&[2, 2]), [5, 3]);
        assert!(g.contains(&[2, 2]) && !g.contains(&[3, 0]));
        let empty = ChunkGrid::regular(&[0], &[0]).unwrap();
        assert_eq!(empty.grid_shape(), [0]);
    }

    #[test]
    fn invalid_grids_are_named_errors() {
        for (shapes, shape) in [
            (json!([[0, 2]]), vec![2]),
            (json!([[[3, 0]]]), vec![3]),
            (json!([[]]), vec![1]),
            (json!([[2, 2]]), vec![5]),
            (json!([2, 2]), vec![4]),
            (json!([[[2, 2, 2]]]), vec![4]),
            (json!([-1]), vec![4]),
            (json!([[[u64::MAX, 2]]]), vec![4]),
        ] {
            let err = rect(&shapes, &shape).unwrap_err();
            assert!(matches!(err, MetadataError::Invalid { .. }), "{shapes}: {err}");
        }
        assert!(ChunkGrid::regular(&[0], &[4]).is_err());
        let no_kind = json!({"name": "rectilinear", "configuration": {"chunk_shapes": [2]}});
        assert!(ChunkGrid::from_json(&no_kind, &[4]).is_err());
        let unknown = json!({"name": "hexagonal", "configuration": {}});
        assert!(matches!(ChunkGrid::from_json(&unknown, &[4]), Err(MetadataError::Unsupported(_))));
    }

    #[test]
    fn legacy_rectangular_form() {
        let g = ChunkGrid::from_json(
            &json!({"name": "rectangular", "configuration": {"chunk_shape": [[5, 5, 15], 10]}}),
            &[25, 30],
        )
        .unwrap();
        assert_eq!(edges(&g.dims[0]), [5, 5, 15]);
        assert_eq!(edges(&g.dims[1]), [10, 10, 10]);
    }
}
