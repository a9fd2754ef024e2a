//! The nodes of a view: groups and readable arrays by path, implicit groups made explicit.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use zarrd_core::zarr::metadata::ArrayMetadata;
use zarrd_core::zarr::ome;

/// Which store layout a view presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    V3,
    V2,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Self::V3 => "v3",
            Self::V2 => "v2",
        }
    }
}

/// A node of a view: a group (with its attributes) or an array zarrd can read.
#[derive(Debug, Clone)]
pub enum ViewNode {
    Group(Map<String, Value>),
    Array { meta: Arc<ArrayMetadata>, chunk_shape: Vec<u64> },
}

/// Every node of a dataset's view, by path ("" is the root). Intermediate directories
/// without metadata (implicit groups) become groups, since Zarr v3 has no implicit groups.
#[derive(Debug, Clone)]
pub struct ViewTree {
    pub nodes: BTreeMap<String, ViewNode>,
    /// Whether every node of the dataset is here. A tree of only the nodes along one key
    /// (a store that can neither list nor has consolidated metadata) must not claim a
    /// group's subtree: its groups then carry no consolidated metadata (and no `.zmetadata`),
    /// so clients look for members themselves instead of trusting an incomplete list.
    pub complete: bool,
}

impl Default for ViewTree {
    fn default() -> Self {
        Self { nodes: BTreeMap::new(), complete: true }
    }
}

fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    Some(path.rsplit_once('/').map_or("", |(p, _)| p))
}

impl ViewTree {
    /// Adds a node, and groups for any missing ancestors.
    pub fn insert(&mut self, path: String, node: ViewNode) {
        let mut p = parent(&path).map(str::to_owned);
        while let Some(ancestor) = p {
            p = parent(&ancestor).map(str::to_owned);
            self.nodes.entry(ancestor).or_insert_with(|| ViewNode::Group(Map::new()));
        }
        self.nodes.insert(path, node);
    }

    /// Gives the levels of OME-Zarr images their axes as dimension names where they have
    /// none (OME-Zarr 0.4 keeps them in `multiscales` only; 0.5 asks v3 arrays to carry
    /// them, and a v2 view passes them on as `_ARRAY_DIMENSIONS`).
    pub fn name_ome_axes(&mut self) {
        let mut named: Vec<(String, Vec<Option<String>>)> = Vec::new();
        for (path, node) in &self.nodes {
            let ViewNode::Group(attributes) = node else { continue };
            for multiscale in ome::multiscales(attributes) {
                let names: Vec<Option<String>> = multiscale.axes.iter().map(|a| Some(a.name.clone())).collect();
                for level in &multiscale.levels {
                    let full = if path.is_empty() { level.path.clone() } else { format!("{path}/{}", level.path) };
                    named.push((full, names.clone()));
                }
            }
        }
        for (path, names) in named {
            if let Some(ViewNode::Array { meta, .. }) = self.nodes.get_mut(&path)
                && meta.dimension_names.is_none()
                && meta.shape.len() == names.len()
                && !names.is_empty()
            {
                let mut renamed = ArrayMetadata::clone(meta);
                renamed.dimension_names = Some(names);
                *meta = Arc::new(renamed);
            }
        }
    }

    /// The nodes strictly below `group`, as (path relative to `group`, node).
    pub(super) fn below<'a>(&'a self, group: &'a str) -> impl Iterator<Item = (&'a str, &'a ViewNode)> + 'a {
        self.nodes.iter().filter_map(move |(path, node)| {
            let rel = if group.is_empty() {
                (!path.is_empty()).then_some(path.as_str())?
            } else {
                path.strip_prefix(group)?.strip_prefix('/')?
            };
            Some((rel, node))
        })
    }

    /// The names of the direct children of `group`.
    pub fn children<'a>(&'a self, group: &'a str) -> Vec<&'a str> {
        self.below(group).map(|(rel, _)| rel).filter(|rel| !rel.contains('/')).collect()
    }

    /// The array and chunk coordinates named by a chunk key of the view, if it is one:
    /// `ARRAY/c/i/j` (v3; `ARRAY/c` for 0-d) or `ARRAY/i/j` (v2; `ARRAY/0` for 0-d).
    pub fn chunk(&self, key: &str, flavor: Flavor) -> Option<(&str, Vec<u64>)> {
        let segments: Vec<&str> = key.split('/').collect();
        for split in 0..segments.len() {
            let prefix = segments[..split].join("/");
            let Some((path, ViewNode::Array { meta, .. })) = self.nodes.get_key_value(&prefix) else { continue };
            let rest = &segments[split..];
            let indices = match flavor {
                Flavor::V3 => match rest.split_first() {
                    Some((&"c", indices)) => indices,
                    _ => continue,
                },
                Flavor::V2 if meta.shape.is_empty() && rest == ["0"] => &[][..],
                Flavor::V2 => rest,
            };
            if indices.len() != meta.shape.len() {
                continue;
            }
            let coords: Option<Vec<u64>> = indices
                .iter()
                .map(|s| s.parse::<u64>().ok().filter(|_| s.bytes().all(|b| b.is_ascii_digit())))
                .collect();
            return coords.map(|c| (path.as_str(), c));
        }
        None
    }
}
