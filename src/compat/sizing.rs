//! View chunk shapes sized for the network (the rule is in the module docs of `compat`).

use std::collections::BTreeMap;

use crate::config::CompatConfig;
use zarrd_core::zarr::chunk_grid::Dim;
use zarrd_core::zarr::metadata::ArrayMetadata;

/// The most read-grid chunks a grown view chunk holds (counted by the smallest one): each
/// is a storage request or a range of one, a request may touch only
/// `limits.max_chunks_per_request` (100,000 by default) of them, and thousands of requests
/// to object storage for one view chunk would outlast the request timeout. Arrays of
/// chunks this tiny get view chunks below `chunk_bytes`.
pub const MAX_STORED_PER_VIEW_CHUNK: u64 = 4096;

/// The view's chunk shape of an array (see the module docs for the rule).
pub fn view_chunk_shape(meta: &ArrayMetadata, configured: Option<&[u64]>, sizing: &CompatConfig) -> Vec<u64> {
    if let Some(shape) = configured.filter(|s| s.len() == meta.shape.len() && s.iter().all(|&e| e > 0)) {
        return shape.to_vec();
    }
    // The read grid's edge per dimension where it is regular.
    let read_grid = meta.read_grid();
    let regular: Vec<Option<u64>> = read_grid
        .dims
        .iter()
        .map(|d| match d {
            Dim::Fixed { edge, .. } => Some((*edge).max(1)),
            Dim::Varying { .. } => None,
        })
        .collect();
    if meta.data_type.is_variable() {
        return regular.iter().zip(&read_grid.dims).map(|(e, d)| e.unwrap_or_else(|| covering_edge(d))).collect();
    }
    let item = meta.data_type.size() as u64;
    if let Some(edges) = regular.iter().copied().collect::<Option<Vec<u64>>>()
        && edges.iter().try_fold(item, |n, &e| n.checked_mul(e)).is_none_or(|bytes| bytes >= sizing.min_chunk_bytes)
    {
        return edges;
    }
    // The smallest read chunk, in elements (the smallest edge of a rectilinear dimension).
    let smallest: u64 = regular
        .iter()
        .zip(&read_grid.dims)
        .map(|(e, d)| e.unwrap_or_else(|| d.distinct_edges().into_iter().min().unwrap_or(1)).max(1))
        .fold(1u64, u64::saturating_mul);
    let target = (sizing.chunk_bytes / item).min(smallest.saturating_mul(MAX_STORED_PER_VIEW_CHUNK));
    grown(&meta.shape, &regular, target.max(1))
}

/// View chunk edges of about `target` elements over an array of `shape`: the last
/// dimensions first, each edge the whole extent or a multiple of its stored edge (`units`,
/// `None` where the grid is rectilinear and any edge will do).
fn grown(shape: &[u64], units: &[Option<u64>], target: u64) -> Vec<u64> {
    let mut edges = vec![1u64; shape.len()];
    let mut elements = 1u64;
    for d in (0..shape.len()).rev() {
        let unit = units[d].unwrap_or(1);
        let room = (target / elements).max(1);
        edges[d] = if shape[d] <= room { shape[d].max(1) } else { (room / unit).max(1) * unit };
        elements = elements.saturating_mul(edges[d].min(shape[d]).max(1));
    }
    edges
}

/// The edge of a dimension that covers most of its extent (ties: the larger edge).
fn covering_edge(dim: &Dim) -> u64 {
    match dim {
        Dim::Fixed { edge, .. } => (*edge).max(1),
        Dim::Varying { .. } => {
            let extent = dim.extent();
            let mut coverage: BTreeMap<u64, u64> = BTreeMap::new();
            for run in dim.runs_between(0, extent.saturating_sub(1)) {
                let end = (run.start + run.edge * run.count).min(extent);
                *coverage.entry(run.edge).or_default() += end.saturating_sub(run.start);
            }
            coverage.into_iter().max_by_key(|&(edge, covered)| (covered, edge)).map_or(1, |(edge, _)| edge.max(1))
        }
    }
}

/// The number of view chunks along each dimension.
pub fn view_grid_shape(shape: &[u64], chunk_shape: &[u64]) -> Vec<u64> {
    shape.iter().zip(chunk_shape).map(|(&n, &e)| n.div_ceil(e.max(1))).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn the_covering_edge_of_a_rectilinear_dimension() {
        let json = json!({"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[[31, 1], [28, 1], [31, 1], [30, 1], [31, 1], [30, 1]], [1, 2, 3, 10, 10]]}});
        let grid = zarrd_core::zarr::chunk_grid::ChunkGrid::from_json(&json, &[181, 26]).unwrap();
        assert_eq!(covering_edge(&grid.dims[0]), 31);
        assert_eq!(covering_edge(&grid.dims[1]), 10);
    }

    fn array(shape: &[u64], data_type: &str, grid: &Value, codecs: &Value) -> Arc<ArrayMetadata> {
        let doc = json!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
            "chunk_grid": grid, "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs});
        let zarrd_core::zarr::metadata::Node::Array(m) = zarrd_core::zarr::metadata::Node::from_value(doc).unwrap()
        else {
            panic!("not an array")
        };
        m
    }

    fn regular(chunks: &[u64]) -> Value {
        json!({"name": "regular", "configuration": {"chunk_shape": chunks}})
    }

    fn sharded(inner: &[u64]) -> Value {
        json!([{"name": "sharding_indexed", "configuration": {"chunk_shape": inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}])
    }

    #[test]
    fn view_chunks_are_sized_for_the_network() {
        let sizing = CompatConfig::default();
        let bytes = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
        // The sample's t2m: shards of [31|28|30, 36, 36] holding [1, 36, 36] inner chunks of
        // 5 KiB: one view chunk of the 1 MiB wanted holds 25 whole days.
        let grid = json!({"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[31, 28, 31, 30, 31, 30, [31, 2], 30, 31, 30, 31], [[36, 2]], [[36, 4]]]}});
        let t2m = array(&[365, 72, 144], "float32", &grid, &sharded(&[1, 36, 36]));
        assert_eq!(view_chunk_shape(&t2m, None, &sizing), [25, 72, 144]);
        // 32 KiB inner chunks of a regular sharded grid grow by whole inner chunks.
        let elevation = array(&[1024, 1024], "uint16", &regular(&[512, 512]), &sharded(&[128, 128]));
        assert_eq!(view_chunk_shape(&elevation, None, &sizing), [512, 1024]);
        // Stored chunks of at least min_chunk_bytes are kept, however large.
        let big = array(&[4096, 4096], "float64", &regular(&[256, 256]), &bytes);
        assert_eq!(view_chunk_shape(&big, None, &sizing), [256, 256]);
        let huge = array(&[100_000, 100_000], "uint8", &regular(&[8192, 8192]), &bytes);
        assert_eq!(view_chunk_shape(&huge, None, &sizing), [8192, 8192]);
        // A rectilinear grid of tiny edges (like many_edges: 4,950 float32 in 3,000 chunks of
        // 1 to 451): two view chunks of at most 4,096 of the smallest chunks.
        let edges: Vec<u64> = (0..3000).map(|i| if i % 2 == 0 { 1 } else { 2 } + u64::from(i == 2999) * 450).collect();
        let n: u64 = edges.iter().sum();
        let grid = json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [edges]}});
        let many = array(&[n], "float32", &grid, &bytes);
        assert_eq!(view_chunk_shape(&many, None, &sizing), [MAX_STORED_PER_VIEW_CHUNK]);
        let few = array(&[n], "float64", &regular(&[n]), &bytes);
        assert_eq!(view_chunk_shape(&few, None, &sizing), [n], "one small stored chunk");
        // Chunks of one byte: a view chunk holds at most MAX_STORED_PER_VIEW_CHUNK of them,
        // within the per-request chunk limit.
        let tiny = array(&[1_000_000], "uint8", &regular(&[1]), &bytes);
        assert_eq!(view_chunk_shape(&tiny, None, &sizing), [MAX_STORED_PER_VIEW_CHUNK]);
        // A configured shape wins; 0-d arrays have no edges.
        assert_eq!(view_chunk_shape(&t2m, Some(&[1, 72, 144]), &sizing), [1, 72, 144]);
        assert_eq!(view_chunk_shape(&array(&[], "int8", &regular(&[]), &bytes), None, &sizing), Vec::<u64>::new());
    }

    proptest::proptest! {
        /// Grown view chunks: whole stored chunks (edges multiples of the stored edge, or the
        /// whole extent), never larger than wanted unless one stored chunk is, and a whole
        /// array takes at most about twice ⌈elements / target⌉ of them.
        #[test]
        fn grown_view_chunks_cover_whole_stored_chunks(
            dims in proptest::collection::vec((1u64..2000, proptest::option::of(1u64..64)), 0..4),
            target in 1u64..100_000,
        ) {
            let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let units: Vec<Option<u64>> = dims.iter().map(|d| d.1).collect();
            let edges = grown(&shape, &units, target);
            for d in 0..shape.len() {
                let unit = units[d].unwrap_or(1);
                proptest::prop_assert!(edges[d] >= 1);
                proptest::prop_assert!(edges[d].is_multiple_of(unit) || edges[d] == shape[d], "{edges:?} {units:?}");
                // An edge grown beyond one stored chunk keeps the chunk within the target.
                let from_here: u64 = edges[d..].iter().zip(&shape[d..]).map(|(&e, &n)| e.min(n)).product();
                proptest::prop_assert!(edges[d].min(shape[d]) <= unit || from_here <= target, "{edges:?} > {target}");
            }
            if units.iter().all(Option::is_none) {
                let chunks: u64 = shape.iter().zip(&edges).map(|(&n, &e)| n.div_ceil(e)).product();
                let total: u64 = shape.iter().product();
                proptest::prop_assert!(chunks <= 2 * total.div_ceil(target), "{chunks} chunks of {edges:?} for {shape:?}");
            }
        }
    }
}
