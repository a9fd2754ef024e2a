//! How the node tree (`GET /v1/datasets/{ds}`) describes each node: path, type, an
//! array's shape and data type, and what an OME-Zarr group is (`collection::summary`).

use serde_json::{Value, json};

use crate::catalog::collection;
use zarrd_core::zarr::metadata::Node;

pub(super) fn describe(path: &str, node: &Node) -> Value {
    match node {
        Node::Array(a) => {
            json!({"path": path, "node_type": "array", "shape": a.shape, "data_type": a.data_type.name()})
        }
        Node::Group(g) => {
            let mut out = json!({"path": path, "node_type": "group"});
            if let Some(summary) = collection::summary(&g.attributes) {
                out["ome"] = summary;
            }
            out
        }
    }
}

/// A consolidated entry, described without requiring the server to support it.
pub(super) fn describe_doc(path: &str, doc: &Value) -> Value {
    let node_type = doc.get("node_type").and_then(Value::as_str).unwrap_or("group");
    let mut out = json!({"path": path, "node_type": node_type});
    if node_type == "array" {
        out["shape"] = doc.get("shape").cloned().unwrap_or(Value::Null);
        out["data_type"] = match doc.get("data_type") {
            Some(Value::Object(o)) => o.get("name").cloned().unwrap_or(Value::Null),
            other => other.cloned().unwrap_or(Value::Null),
        };
    } else if let Some(summary) = doc.get("attributes").and_then(Value::as_object).and_then(collection::summary) {
        out["ome"] = summary;
    }
    out
}
