//! The metadata documents of a view: v3 `zarr.json` (groups carrying their subtree as
//! consolidated metadata) and v2 `.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`, built as the
//! types of `zarr_documents` from the view's tree; and the fill value as each format writes it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::compat::tree::{Flavor, ViewNode, ViewTree};
use crate::compat::zarr_documents::{
    Endian, Extension, KeySeparator, RegularChunkGrid, SEPARATOR, V2Array, V2Codec, V2Consolidated, V2Document,
    V2Group, V3Array, V3Codec, V3Consolidated, V3Group, V3Node,
};
use zarrd_core::zarr::data_type::DataType;
use zarrd_core::zarr::metadata::ArrayMetadata;
use zarrd_core::zarr::ome;

/// Renders one float given as its bits: a number, `"NaN"` for the canonical NaN (the only
/// one both v2 and v3 name), `"Infinity"`/`"-Infinity"`, and for other NaN payloads the v3
/// hex form (v2 has none, so they become `"NaN"` there).
fn float_json(value: f64, bits: u64, canonical_nan: u64, hex_digits: usize, flavor: Flavor) -> Value {
    if value.is_nan() {
        if bits == canonical_nan || flavor == Flavor::V2 {
            return Value::from("NaN");
        }
        return Value::String(format!("0x{bits:0hex_digits$x}"));
    }
    if value.is_infinite() {
        return Value::from(if value > 0.0 { "Infinity" } else { "-Infinity" });
    }
    Value::from(value)
}

fn scalar_json(data_type: DataType, b: &[u8], flavor: Flavor) -> Value {
    let mut a = [0u8; 8];
    a[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    let signed = |bits: u32| (i64::from_le_bytes(a) << (64 - bits)) >> (64 - bits);
    match data_type {
        DataType::Bool => Value::Bool(b[0] != 0),
        DataType::Int8 => Value::from(signed(8)),
        DataType::Int16 => Value::from(signed(16)),
        DataType::Int32 => Value::from(signed(32)),
        // Times as their count (`NaT` as `i64::MIN`), as zarr-python writes them in both formats.
        DataType::Int64 | DataType::DateTime64(_) | DataType::TimeDelta64(_) => Value::from(i64::from_le_bytes(a)),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => Value::from(u64::from_le_bytes(a)),
        DataType::Float16 => {
            let bits = u16::from_le_bytes([b[0], b[1]]);
            float_json(half::f16::from_bits(bits).to_f64(), u64::from(bits), 0x7e00, 4, flavor)
        }
        DataType::Float32 => {
            let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            float_json(f64::from(f32::from_bits(bits)), u64::from(bits), 0x7fc0_0000, 8, flavor)
        }
        DataType::Float64 => {
            let bits = u64::from_le_bytes(a);
            float_json(f64::from_bits(bits), bits, 0x7ff8_0000_0000_0000, 16, flavor)
        }
        DataType::Complex64 => Value::Array(vec![
            scalar_json(DataType::Float32, &b[..4], flavor),
            scalar_json(DataType::Float32, &b[4..8], flavor),
        ]),
        DataType::Complex128 => Value::Array(vec![
            scalar_json(DataType::Float64, &b[..8], flavor),
            scalar_json(DataType::Float64, &b[8..16], flavor),
        ]),
        // Text fill values are stored as their UTF-8 bytes.
        DataType::String => Value::String(String::from_utf8_lossy(b).into_owned()),
        DataType::FixedUtf32(_) => {
            let units = b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            let text: String = units.map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER)).collect();
            Value::from(text.trim_end_matches('\0'))
        }
        DataType::Bytes => {
            use base64::Engine as _;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        DataType::FixedBytes(_) => {
            use base64::Engine as _;
            let end = b.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
            Value::String(base64::engine::general_purpose::STANDARD.encode(&b[..end]))
        }
    }
}

/// The fill value (little-endian element bytes) as the view's metadata writes it.
pub fn fill_json(data_type: DataType, fill: &[u8], flavor: Flavor) -> Value {
    scalar_json(data_type, fill, flavor)
}

/// The dimension names of an array (its own, else xarray's `_ARRAY_DIMENSIONS`), when
/// every dimension has one.
fn dimension_names(meta: &ArrayMetadata) -> Option<Vec<String>> {
    zarrd_core::coords::dimension_names(meta)?.into_iter().collect()
}

/// The view's codecs: `bytes` (little endian; no configuration for one-byte types, as
/// zarr-python writes it) and `zstd`; for text `vlen-utf8` and `zstd`, zarr-python 3's
/// default chain of a `string` array.
pub fn v3_codecs(data_type: DataType) -> Vec<V3Codec> {
    let bytes = if data_type == DataType::Bytes {
        V3Codec::VlenBytes {}
    } else if data_type.is_variable() {
        V3Codec::VlenUtf8 {}
    } else if data_type.swap_unit() == 1 {
        V3Codec::BytesUnordered
    } else {
        V3Codec::Bytes { endian: Endian::Little }
    };
    vec![bytes, V3Codec::Zstd { level: 0, checksum: false }]
}

/// The v3 `zarr.json` of an array in the view.
pub fn v3_array_document<'a>(meta: &'a ArrayMetadata, chunk_shape: &'a [u64]) -> V3Array<'a> {
    V3Array {
        zarr_format: 3,
        node_type: "array",
        shape: &meta.shape,
        data_type: meta.data_type.to_v3_json(),
        chunk_grid: Extension { name: "regular", configuration: RegularChunkGrid { chunk_shape } },
        chunk_key_encoding: Extension { name: "default", configuration: KeySeparator { separator: SEPARATOR } },
        fill_value: fill_json(meta.data_type, &meta.fill_value, Flavor::V3),
        codecs: v3_codecs(meta.data_type),
        attributes: &meta.attributes,
        storage_transformers: [],
        dimension_names: dimension_names(meta),
    }
}

/// A v3 group: OME-Zarr metadata as 0.5 writes it (under `ome`), whatever the stored version.
fn v3_group_document<'a>(attributes: &Map<String, Value>, consolidated: Option<V3Consolidated<'a>>) -> V3Group<'a> {
    V3Group {
        zarr_format: 3,
        node_type: "group",
        attributes: ome::to_v05(attributes),
        consolidated_metadata: consolidated,
    }
}

impl ViewTree {
    /// The v3 `zarr.json` of the node at `path`; a group's carries its whole subtree as
    /// consolidated metadata, flattened to relative paths as zarr-python writes it (child
    /// groups with their own, empty, block), so one request opens the hierarchy. (Readers
    /// rebuild the nesting from the paths, so the members' order does not matter.)
    pub fn v3_document<'a>(&'a self, path: &'a str) -> Option<V3Node<'a>> {
        match self.nodes.get(path)? {
            ViewNode::Array { meta, chunk_shape } => Some(V3Node::Array(v3_array_document(meta, chunk_shape))),
            ViewNode::Group(attributes) if !self.complete => Some(V3Node::Group(v3_group_document(attributes, None))),
            ViewNode::Group(attributes) => {
                let metadata = self
                    .below(path)
                    .map(|(rel, node)| {
                        let doc = match node {
                            ViewNode::Array { meta, chunk_shape } => {
                                V3Node::Array(v3_array_document(meta, chunk_shape))
                            }
                            ViewNode::Group(attributes) => V3Node::Group(v3_group_document(
                                attributes,
                                Some(V3Consolidated::inline(BTreeMap::new())),
                            )),
                        };
                        (rel, doc)
                    })
                    .collect();
                Some(V3Node::Group(v3_group_document(attributes, Some(V3Consolidated::inline(metadata)))))
            }
        }
    }

    /// A v2 metadata document (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`) at `path`.
    pub fn v2_document<'a>(&'a self, path: &'a str, name: &str) -> Option<V2Document<'a>> {
        let node = self.nodes.get(path)?;
        match (node, name) {
            (ViewNode::Array { meta, chunk_shape }, ".zarray") => {
                Some(V2Document::Array(v2_array_document(meta, chunk_shape)))
            }
            (ViewNode::Array { meta, .. }, ".zattrs") => Some(V2Document::Attributes(v2_attributes(meta))),
            (ViewNode::Group(_), ".zgroup") => Some(V2Document::Group(V2Group::DOCUMENT)),
            (ViewNode::Group(attributes), ".zattrs") => Some(V2Document::Attributes(ome::to_v04(attributes))),
            (ViewNode::Group(attributes), ".zmetadata") if self.complete => {
                let mut metadata = BTreeMap::new();
                metadata.insert(".zgroup".into(), V2Document::Group(V2Group::DOCUMENT));
                metadata.insert(".zattrs".into(), V2Document::Attributes(ome::to_v04(attributes)));
                for (rel, node) in self.below(path) {
                    match node {
                        ViewNode::Array { meta, chunk_shape } => {
                            metadata.insert(
                                format!("{rel}/.zarray"),
                                V2Document::Array(v2_array_document(meta, chunk_shape)),
                            );
                            metadata.insert(format!("{rel}/.zattrs"), V2Document::Attributes(v2_attributes(meta)));
                        }
                        ViewNode::Group(attributes) => {
                            metadata.insert(format!("{rel}/.zgroup"), V2Document::Group(V2Group::DOCUMENT));
                            metadata.insert(format!("{rel}/.zattrs"), V2Document::Attributes(ome::to_v04(attributes)));
                        }
                    }
                }
                Some(V2Document::Consolidated(V2Consolidated { metadata, zarr_consolidated_format: 1 }))
            }
            _ => None,
        }
    }

    /// The metadata documents a node has in a view.
    pub fn documents(&self, path: &str, flavor: Flavor) -> &'static [&'static str] {
        match (self.nodes.get(path), flavor) {
            (None, _) => &[],
            (Some(_), Flavor::V3) => &["zarr.json"],
            (Some(ViewNode::Array { .. }), Flavor::V2) => &[".zarray", ".zattrs"],
            (Some(ViewNode::Group(_)), Flavor::V2) if self.complete => &[".zattrs", ".zgroup", ".zmetadata"],
            (Some(ViewNode::Group(_)), Flavor::V2) => &[".zattrs", ".zgroup"],
        }
    }
}

/// A v2 array's attributes, with `_ARRAY_DIMENSIONS` (how v2 readers such as xarray find
/// dimension names) added from the array's dimension names when it has all of them.
fn v2_attributes(meta: &ArrayMetadata) -> Map<String, Value> {
    let mut attributes = meta.attributes.clone();
    if !attributes.contains_key("_ARRAY_DIMENSIONS")
        && let Some(names) = dimension_names(meta)
    {
        attributes.insert("_ARRAY_DIMENSIONS".into(), Value::Array(names.into_iter().map(Value::String).collect()));
    }
    attributes
}

/// The `.zarray` of an array in the v2 view: the same chunks and bytes as the v3 view, with
/// numcodecs' zstd as the compressor (text: `|O` objects with the `vlen-utf8` filter, which
/// frames them as the v3 codec does).
pub fn v2_array_document<'a>(meta: &'a ArrayMetadata, chunk_shape: &'a [u64]) -> V2Array<'a> {
    let filters = match meta.data_type {
        DataType::Bytes => Some(vec![V2Codec::VlenBytes]),
        DataType::String => Some(vec![V2Codec::VlenUtf8]),
        _ => None,
    };
    V2Array {
        zarr_format: 2,
        shape: &meta.shape,
        chunks: chunk_shape,
        dtype: meta.data_type.npy_descr(),
        compressor: V2Codec::Zstd { level: 0 },
        fill_value: fill_json(meta.data_type, &meta.fill_value, Flavor::V2),
        order: "C",
        filters,
        dimension_separator: SEPARATOR,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fill_values_in_both_flavors() {
        assert_eq!(fill_json(DataType::Float32, &0x7fc0_0000u32.to_le_bytes(), Flavor::V3), json!("NaN"));
        assert_eq!(fill_json(DataType::Float32, &0x7fc0_0001u32.to_le_bytes(), Flavor::V3), json!("0x7fc00001"));
        assert_eq!(fill_json(DataType::Float32, &0x7fc0_0001u32.to_le_bytes(), Flavor::V2), json!("NaN"));
        assert_eq!(fill_json(DataType::Float16, &half::f16::INFINITY.to_le_bytes(), Flavor::V3), json!("Infinity"));
        assert_eq!(fill_json(DataType::Float64, &1.5f64.to_le_bytes(), Flavor::V3), json!(1.5));
        assert_eq!(fill_json(DataType::Int8, &[0xff], Flavor::V3), json!(-1));
        assert_eq!(fill_json(DataType::UInt64, &u64::MAX.to_le_bytes(), Flavor::V3), json!(u64::MAX));
        let mut c = 1f32.to_le_bytes().to_vec();
        c.extend(f32::NEG_INFINITY.to_le_bytes());
        assert_eq!(fill_json(DataType::Complex64, &c, Flavor::V2), json!([1.0, "-Infinity"]));
        assert_eq!(fill_json(DataType::Bool, &[1], Flavor::V3), json!(true));
    }

    #[test]
    fn members_null_or_absent_as_the_formats_write_them() {
        let doc = json!({"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]});
        let zarrd_core::zarr::metadata::Node::Array(meta) = zarrd_core::zarr::metadata::Node::from_value(doc).unwrap()
        else {
            panic!()
        };
        let v3 = serde_json::to_value(v3_array_document(&meta, &[2])).unwrap();
        assert!(v3.get("dimension_names").is_none(), "absent without names: {v3}");
        assert_eq!(v3["storage_transformers"], json!([]));
        let v2 = serde_json::to_value(v2_array_document(&meta, &[2])).unwrap();
        assert_eq!(v2["filters"], Value::Null);
        assert!(v2.as_object().unwrap().contains_key("filters"), "v2 writes `filters: null`");
        let mut tree = ViewTree { complete: false, ..ViewTree::default() };
        tree.insert("a".into(), ViewNode::Array { meta, chunk_shape: vec![2] });
        let root = serde_json::to_value(tree.v3_document("").unwrap()).unwrap();
        assert_eq!(
            root,
            json!({"zarr_format": 3, "node_type": "group", "attributes": {}}),
            "a partial tree claims no subtree"
        );
        assert!(tree.v2_document("", ".zmetadata").is_none());
    }

    #[test]
    fn chunk_keys_name_an_array_and_its_coordinates() {
        let meta = |shape: Vec<u64>| {
            let doc = json!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": vec![1u64; shape.len()]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]});
            let zarrd_core::zarr::metadata::Node::Array(m) = zarrd_core::zarr::metadata::Node::from_value(doc).unwrap()
            else {
                panic!()
            };
            m
        };
        let mut tree = ViewTree::default();
        tree.insert("a/b".into(), ViewNode::Array { meta: meta(vec![4, 4]), chunk_shape: vec![1, 1] });
        tree.insert("s".into(), ViewNode::Array { meta: meta(vec![]), chunk_shape: vec![] });
        assert!(matches!(tree.nodes.get("a"), Some(ViewNode::Group(_))), "implicit parents become groups");
        assert!(matches!(tree.nodes.get(""), Some(ViewNode::Group(_))));
        assert_eq!(tree.chunk("a/b/c/1/2", Flavor::V3), Some(("a/b", vec![1, 2])));
        assert_eq!(tree.chunk("a/b/1/2", Flavor::V2), Some(("a/b", vec![1, 2])));
        assert_eq!(tree.chunk("s/c", Flavor::V3), Some(("s", vec![])));
        assert_eq!(tree.chunk("s/0", Flavor::V2), Some(("s", vec![])));
        assert_eq!(tree.chunk("a/b/c/1", Flavor::V3), None);
        assert_eq!(tree.chunk("a/b/c/1/+2", Flavor::V3), None);
        assert_eq!(tree.children(""), ["a", "s"]);
        let root = serde_json::to_value(tree.v3_document("").unwrap()).unwrap();
        let keys: Vec<&String> = root["consolidated_metadata"]["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "a/b", "s"], "every node below the root");
    }
}
