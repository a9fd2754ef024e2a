//! The Zarr metadata documents a view writes, as types (`design/ZARR_FORMAT.md`): v3
//! `zarr.json` of arrays and of groups (with inline consolidated metadata), and v2
//! `.zarray`, `.zgroup`, `.zattrs` and `.zmetadata`, serialized by serde in the order
//! written here. What the specification leaves free stays a JSON value: attributes, the
//! fill value (its JSON shape follows the data type) and the v3 data type (the core's
//! `DataType::to_v3_json`: a name, or a name and configuration).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

/// The view's one chunk key separator, in both formats.
pub const SEPARATOR: &str = "/";

/// A v3 extension object with a configuration: `{"name": …, "configuration": {…}}`.
#[derive(Debug, Serialize)]
pub struct Extension<C> {
    pub name: &'static str,
    pub configuration: C,
}

/// The configuration of the `regular` chunk grid.
#[derive(Debug, Serialize)]
pub struct RegularChunkGrid<'a> {
    pub chunk_shape: &'a [u64],
}

/// The configuration of the `default` and `v2` chunk key encodings.
#[derive(Debug, Serialize)]
pub struct KeySeparator<'a> {
    pub separator: &'a str,
}

/// The v3 codecs a view declares (`name`, and `configuration` where the codec has one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "name", content = "configuration", rename_all = "kebab-case")]
pub enum V3Codec {
    /// `bytes` of a one-byte type: no byte order, no configuration (as zarr-python writes it).
    #[serde(rename = "bytes")]
    BytesUnordered,
    Bytes {
        endian: Endian,
    },
    /// Text: an empty configuration.
    VlenUtf8 {},
    VlenBytes {},
    Zstd {
        level: i32,
        checksum: bool,
    },
    /// A shard of inner chunks (the overviews zarrd writes): their shape and codecs, and
    /// the index's codecs and place.
    #[serde(rename = "sharding_indexed")]
    ShardingIndexed {
        chunk_shape: Vec<u64>,
        codecs: Vec<V3Codec>,
        index_codecs: Vec<V3Codec>,
        index_location: &'static str,
    },
    Crc32c,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    Little,
}

/// A v3 node's `zarr.json`, as the members of consolidated metadata are too.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum V3Node<'a> {
    Array(V3Array<'a>),
    Group(V3Group<'a>),
}

/// A v3 array `zarr.json`.
#[derive(Debug, Serialize)]
pub struct V3Array<'a> {
    /// 3.
    pub zarr_format: u8,
    /// `array`.
    pub node_type: &'static str,
    pub shape: &'a [u64],
    pub data_type: Value,
    pub chunk_grid: Extension<RegularChunkGrid<'a>>,
    pub chunk_key_encoding: Extension<KeySeparator<'a>>,
    pub fill_value: Value,
    pub codecs: Vec<V3Codec>,
    pub attributes: &'a Map<String, Value>,
    /// Always empty: a view has none.
    pub storage_transformers: [Value; 0],
    /// Absent unless every dimension has a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimension_names: Option<Vec<String>>,
}

/// A v3 group `zarr.json`.
#[derive(Debug, Serialize)]
pub struct V3Group<'a> {
    /// 3.
    pub zarr_format: u8,
    /// `group`.
    pub node_type: &'static str,
    pub attributes: Map<String, Value>,
    /// Absent where the view does not hold the whole subtree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consolidated_metadata: Option<V3Consolidated<'a>>,
}

/// A group's inline consolidated metadata: every node below it by relative path.
#[derive(Debug, Serialize)]
pub struct V3Consolidated<'a> {
    /// `inline`.
    pub kind: &'static str,
    pub must_understand: bool,
    pub metadata: BTreeMap<&'a str, V3Node<'a>>,
}

impl<'a> V3Consolidated<'a> {
    pub fn inline(metadata: BTreeMap<&'a str, V3Node<'a>>) -> Self {
        Self { kind: "inline", must_understand: false, metadata }
    }
}

/// A v2 metadata document, as the members of `.zmetadata` are too.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum V2Document<'a> {
    Array(V2Array<'a>),
    Group(V2Group),
    /// `.zattrs`.
    Attributes(Map<String, Value>),
    Consolidated(V2Consolidated<'a>),
}

/// A v2 `.zarray`.
#[derive(Debug, Serialize)]
pub struct V2Array<'a> {
    /// 2.
    pub zarr_format: u8,
    pub shape: &'a [u64],
    pub chunks: &'a [u64],
    /// The `NumPy` type string (`<f4`, `|O`…).
    pub dtype: String,
    pub compressor: V2Codec,
    pub fill_value: Value,
    /// `C`.
    pub order: &'static str,
    /// `null` when there are none.
    pub filters: Option<Vec<V2Codec>>,
    pub dimension_separator: &'static str,
}

/// A numcodecs codec configuration: its `id` and its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "id", rename_all = "kebab-case")]
pub enum V2Codec {
    Zstd { level: i32 },
    VlenUtf8,
    VlenBytes,
}

/// A v2 `.zgroup`.
#[derive(Debug, Serialize)]
pub struct V2Group {
    /// 2.
    pub zarr_format: u8,
}

impl V2Group {
    pub const DOCUMENT: Self = Self { zarr_format: 2 };
}

/// A v2 `.zmetadata`: the documents of a group and everything below it, by key.
#[derive(Debug, Serialize)]
pub struct V2Consolidated<'a> {
    pub metadata: BTreeMap<String, V2Document<'a>>,
    /// 1.
    pub zarr_consolidated_format: u8,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn value(doc: impl Serialize) -> Value {
        serde_json::to_value(doc).unwrap()
    }

    #[test]
    fn codecs_as_zarr_python_writes_them() {
        assert_eq!(value(V3Codec::BytesUnordered), json!({"name": "bytes"}));
        assert_eq!(
            value(V3Codec::Bytes { endian: Endian::Little }),
            json!({"name": "bytes", "configuration": {"endian": "little"}})
        );
        assert_eq!(value(V3Codec::VlenUtf8 {}), json!({"name": "vlen-utf8", "configuration": {}}));
        assert_eq!(value(V3Codec::VlenBytes {}), json!({"name": "vlen-bytes", "configuration": {}}));
        assert_eq!(
            value(V3Codec::Zstd { level: 0, checksum: false }),
            json!({"name": "zstd", "configuration": {"level": 0, "checksum": false}})
        );
        assert_eq!(value(V2Codec::Zstd { level: 0 }), json!({"id": "zstd", "level": 0}));
        assert_eq!(value(V2Codec::VlenUtf8), json!({"id": "vlen-utf8"}));
        assert_eq!(value(V2Codec::VlenBytes), json!({"id": "vlen-bytes"}));
    }
}
