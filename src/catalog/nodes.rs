//! How the node tree (`GET /v1/datasets/{ds}`) describes each node: path, type, an
//! array's shape and data type, and what an OME-Zarr group is (`collection::summary`).

use serde::Serialize;
use serde_json::Value;

use crate::catalog::collection::{self, OmeKind, OmeSummary};
use crate::catalog::error::NodeKind;
use zarrd_core::zarr::metadata::Node;

/// One node of the tree.
#[derive(Debug, Clone, Serialize)]
pub struct TreeNode {
    /// Relative to the dataset root; `""` is the root.
    pub path: String,
    /// `array` or `group`.
    pub node_type: &'static str,
    /// Arrays: the shape (as stored when listed from consolidated metadata).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Value>,
    /// Arrays: the Zarr v3 data type name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_type: Option<Value>,
    /// OME-Zarr groups: what the group is (`collection::summary`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ome: Option<OmeSummary>,
}

impl TreeNode {
    /// A node of `kind` that is described no further (one zarrd cannot serve).
    pub fn bare(path: &str, kind: NodeKind) -> Self {
        Self { path: path.to_owned(), node_type: kind.name(), shape: None, data_type: None, ome: None }
    }
}

pub(super) fn describe(path: &str, node: &Node) -> TreeNode {
    match node {
        Node::Array(a) => TreeNode {
            shape: Some(Value::from(a.shape.clone())),
            data_type: Some(Value::from(a.data_type.name())),
            ..TreeNode::bare(path, NodeKind::Array)
        },
        Node::Group(g) => TreeNode { ome: collection::summary(&g.attributes), ..TreeNode::bare(path, NodeKind::Group) },
    }
}

/// A consolidated entry, described without requiring the server to support it.
pub(super) fn describe_doc(path: &str, doc: &Value) -> TreeNode {
    if doc.get("node_type").and_then(Value::as_str) == Some("array") {
        return TreeNode {
            shape: Some(doc.get("shape").cloned().unwrap_or(Value::Null)),
            data_type: Some(match doc.get("data_type") {
                Some(Value::Object(o)) => o.get("name").cloned().unwrap_or(Value::Null),
                other => other.cloned().unwrap_or(Value::Null),
            }),
            ..TreeNode::bare(path, NodeKind::Array)
        };
    }
    let ome = doc.get("attributes").and_then(Value::as_object).and_then(collection::summary);
    TreeNode { ome, ..TreeNode::bare(path, NodeKind::Group) }
}

/// Fills in the series of bioformats2raw layouts: their child groups named by a number
/// (`0`, `1`, …) that are images.
pub(super) fn series(nodes: &mut [TreeNode]) {
    let is_image = |n: &TreeNode| n.ome.as_ref().is_some_and(|o| matches!(o.kind, OmeKind::Image(_)));
    let images: Vec<String> = nodes.iter().filter(|n| is_image(n)).map(|n| n.path.clone()).collect();
    for node in nodes.iter_mut() {
        let path = node.path.clone();
        let Some(OmeSummary { kind: OmeKind::Bioformats2raw { series, .. }, .. }) = &mut node.ome else { continue };
        let mut found: Vec<&str> = images
            .iter()
            .filter_map(|p| if path.is_empty() { Some(p.as_str()) } else { p.strip_prefix(&path)?.strip_prefix('/') })
            .filter(|rel| !rel.is_empty() && rel.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        found.sort_by_key(|s| s.parse::<u64>().unwrap_or(u64::MAX));
        *series = found.into_iter().map(str::to_owned).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bioformats2raw_layouts_list_their_series() {
        let m = |v: Value| -> serde_json::Map<String, Value> { serde_json::from_value(v).unwrap() };
        let summary = collection::summary;
        let group = |path: &str, ome: Option<OmeSummary>| TreeNode { ome, ..TreeNode::bare(path, NodeKind::Group) };
        let image = json!({"multiscales": [{"version": "0.4", "axes": [{"name": "y"}, {"name": "x"}],
            "datasets": [{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1.0, 1.0]}]}]}]});
        let mut nodes = vec![
            group("", summary(&m(json!({"bioformats2raw.layout": 3})))),
            group("1", summary(&m(image.clone()))),
            group("0", summary(&m(image))),
            group("OME", None),
        ];
        assert!(nodes[1].ome.is_some(), "an image");
        series(&mut nodes);
        assert_eq!(serde_json::to_value(&nodes[0].ome).unwrap()["series"], json!(["0", "1"]));
    }
}
