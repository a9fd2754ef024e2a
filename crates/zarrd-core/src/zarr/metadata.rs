//! The `zarr.json` documents of arrays and groups (core spec "Metadata").
//!
//! Unknown top-level members are accepted only as `{"must_understand": false}` objects;
//! anything else the server cannot interpret is [`MetadataError::Unsupported`], which
//! the API answers with 422 naming the feature.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::chunk_key::ChunkKeyEncoding;
use crate::zarr::codec::{CodecChain, ShardingCodec};
use crate::zarr::data_type::DataType;
use crate::zarr::json::{MetadataError, extension_parts, u64_list};

/// A parsed array `zarr.json`.
#[derive(Debug, Clone)]
pub struct ArrayMetadata {
    /// 3 for a `zarr.json`, 2 for a `.zarray` read into the same model.
    pub zarr_format: u8,
    pub shape: Vec<u64>,
    pub data_type: DataType,
    pub chunk_grid: ChunkGrid,
    pub chunk_key_encoding: ChunkKeyEncoding,
    /// Little-endian bytes of one element.
    pub fill_value: Vec<u8>,
    pub codecs: CodecChain,
    pub dimension_names: Option<Vec<Option<String>>>,
    pub attributes: Map<String, Value>,
    /// The document as stored (`zarr.json`, or `.zarray` for v2), for reporting codecs and
    /// fill value verbatim.
    pub document: Map<String, Value>,
    /// A hash of the document, so validators need not re-serialize it per request.
    pub digest: u128,
}

impl ArrayMetadata {
    /// The sharding codec when inner chunks can be read by byte range.
    pub fn sharding(&self) -> Option<&ShardingCodec> {
        self.codecs.sharding()
    }

    /// The shape of the innermost chunks that can be read on their own (the read grid),
    /// or `None` when the stored chunks are the smallest unit.
    pub fn read_chunk_shape(&self) -> Option<Vec<u64>> {
        let mut shard = self.sharding()?;
        while let Some(inner) = shard.codecs.sharding() {
            shard = inner;
        }
        Some(shard.chunk_shape.clone())
    }

    /// The read grid: the innermost chunks of a sharded array (regular, since shard edges
    /// are multiples of the inner edges), else the stored chunks.
    pub fn read_grid(&self) -> ChunkGrid {
        match self.read_chunk_shape() {
            Some(inner) => ChunkGrid::regular(&inner, &self.shape).unwrap_or_else(|_| self.chunk_grid.clone()),
            None => self.chunk_grid.clone(),
        }
    }
}

/// A parsed group `zarr.json`.
#[derive(Debug, Clone, Default)]
pub struct GroupMetadata {
    pub attributes: Map<String, Value>,
    /// Inline consolidated metadata: path relative to this group -> node document.
    pub consolidated: Option<Map<String, Value>>,
    /// The consolidated nodes zarrd can serve, parsed: a dataset's tree and its arrays'
    /// metadata then come from the root document alone, without a request per node.
    pub consolidated_nodes: Vec<(String, Node)>,
}

#[derive(Debug, Clone)]
pub enum Node {
    Array(Arc<ArrayMetadata>),
    Group(Arc<GroupMetadata>),
}

const ARRAY_KEYS: &[&str] = &[
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "storage_transformers",
    "dimension_names",
];
const GROUP_KEYS: &[&str] = &["zarr_format", "node_type", "attributes", "consolidated_metadata"];

impl Node {
    /// Parses the bytes of a `zarr.json`.
    pub fn parse(bytes: &[u8]) -> Result<Self, MetadataError> {
        Self::from_value(crate::zarr::json::from_slice(bytes)?)
    }

    pub fn from_value(value: Value) -> Result<Self, MetadataError> {
        let Value::Object(doc) = value else {
            return Err(MetadataError::invalid("zarr.json", "not a JSON object"));
        };
        match doc.get("zarr_format") {
            Some(v) if v.as_u64() == Some(3) => {}
            Some(v) => {
                return Err(MetadataError::Unsupported(format!("zarr_format {v} (only 3 is served)")));
            }
            None => return Err(MetadataError::invalid("zarr_format", "missing")),
        }
        match doc.get("node_type").and_then(Value::as_str) {
            Some("array") => {
                check_extra_keys(&doc, ARRAY_KEYS)?;
                Ok(Self::Array(Arc::new(parse_array(doc)?)))
            }
            Some("group") => {
                check_extra_keys(&doc, GROUP_KEYS)?;
                Ok(Self::Group(Arc::new(parse_group(&doc)?)))
            }
            _ => Err(MetadataError::invalid("node_type", "must be \"array\" or \"group\"")),
        }
    }
}

fn check_extra_keys(doc: &Map<String, Value>, known: &[&str]) -> Result<(), MetadataError> {
    for (key, value) in doc {
        if !known.contains(&key.as_str()) && value.get("must_understand").and_then(Value::as_bool) != Some(false) {
            return Err(MetadataError::Unsupported(format!("metadata extension `{key}` (must be understood)")));
        }
    }
    Ok(())
}

fn attributes(doc: &Map<String, Value>) -> Result<Map<String, Value>, MetadataError> {
    match doc.get("attributes") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(a)) => Ok(a.clone()),
        Some(_) => Err(MetadataError::invalid("attributes", "not an object")),
    }
}

fn parse_array(doc: Map<String, Value>) -> Result<ArrayMetadata, MetadataError> {
    let shape = u64_list(doc.get("shape"), "shape")?;
    let data_type = DataType::from_json(doc.get("data_type").unwrap_or(&Value::Null))?;
    let chunk_grid = ChunkGrid::from_json(doc.get("chunk_grid").unwrap_or(&Value::Null), &shape)?;
    let chunk_key_encoding = ChunkKeyEncoding::from_json(doc.get("chunk_key_encoding").unwrap_or(&Value::Null))?;
    let fill_value = data_type
        .parse_fill_value(doc.get("fill_value").ok_or_else(|| MetadataError::invalid("fill_value", "missing"))?)?;
    let edges: Vec<Vec<u64>> = chunk_grid.dims.iter().map(crate::zarr::chunk_grid::Dim::distinct_edges).collect();
    let codecs = CodecChain::from_json(doc.get("codecs").unwrap_or(&Value::Null), data_type, &edges, "codecs")?;
    match doc.get("storage_transformers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for t in list {
                if t.get("must_understand").and_then(Value::as_bool) != Some(false) {
                    let (name, _) = extension_parts(t, "storage_transformers")?;
                    return Err(MetadataError::Unsupported(format!("storage transformer `{name}`")));
                }
            }
        }
        Some(_) => return Err(MetadataError::invalid("storage_transformers", "not a list")),
    }
    let dimension_names = match doc.get("dimension_names") {
        None | Some(Value::Null) => None,
        Some(Value::Array(names)) if names.len() == shape.len() => Some(
            names
                .iter()
                .map(|n| match n {
                    Value::String(s) => Ok(Some(s.clone())),
                    Value::Null => Ok(None),
                    other => {
                        Err(MetadataError::invalid("dimension_names", &format!("{other} is not a string or null")))
                    }
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => {
            return Err(MetadataError::invalid("dimension_names", "must be a list with one entry per dimension"));
        }
    };
    let attributes = attributes(&doc)?;
    let digest = xxhash_rust::xxh3::xxh3_128(Value::Object(doc.clone()).to_string().as_bytes());
    Ok(ArrayMetadata {
        zarr_format: 3,
        shape,
        data_type,
        chunk_grid,
        chunk_key_encoding,
        fill_value,
        codecs,
        dimension_names,
        attributes,
        document: doc,
        digest,
    })
}

fn parse_group(doc: &Map<String, Value>) -> Result<GroupMetadata, MetadataError> {
    let consolidated = match doc.get("consolidated_metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => {
            match c.get("kind").and_then(Value::as_str) {
                Some("inline") => {}
                other => {
                    return Err(MetadataError::Unsupported(format!("consolidated metadata kind {other:?}")));
                }
            }
            match c.get("metadata") {
                Some(Value::Object(m)) => Some(m.clone()),
                _ => {
                    return Err(MetadataError::invalid("consolidated_metadata", "`metadata` is not an object"));
                }
            }
        }
        Some(_) => {
            return Err(MetadataError::invalid("consolidated_metadata", "not an object"));
        }
    };
    // A node that does not parse is left to be read (and its error reported) on its own.
    let consolidated_nodes = consolidated
        .iter()
        .flatten()
        .filter_map(|(path, doc)| Some((path.clone(), Node::from_value(doc.clone()).ok()?)))
        .collect();
    Ok(GroupMetadata { attributes: attributes(doc)?, consolidated, consolidated_nodes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn array_doc() -> Value {
        json!({
            "zarr_format": 3, "node_type": "array", "shape": [5, 7], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "NaN",
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 0, "checksum": false}}],
            "attributes": {"units": "K"}, "storage_transformers": [], "dimension_names": ["y", null]
        })
    }

    #[test]
    fn parses_a_zarr_python_array() {
        let Node::Array(a) = Node::from_value(array_doc()).unwrap() else { panic!("not an array") };
        assert_eq!(a.shape, [5, 7]);
        assert_eq!(a.data_type, DataType::Float32);
        assert_eq!(a.fill_value, 0x7fc0_0000u32.to_le_bytes());
        assert_eq!(a.dimension_names, Some(vec![Some("y".into()), None]));
        assert_eq!(a.attributes["units"], "K");
        assert!(a.read_chunk_shape().is_none());
    }

    #[test]
    fn extensions_must_be_understood_unless_marked() {
        let mut doc = array_doc();
        doc["foo"] = json!({"must_understand": false, "x": 1});
        assert!(Node::from_value(doc.clone()).is_ok());
        doc["bar"] = json!(1);
        let err = Node::from_value(doc).unwrap_err();
        assert!(matches!(err, MetadataError::Unsupported(ref s) if s.contains("bar")), "{err}");
        let mut st = array_doc();
        st["storage_transformers"] = json!([{"name": "chunk-manifest"}]);
        assert!(matches!(Node::from_value(st).unwrap_err(), MetadataError::Unsupported(_)));
    }

    #[test]
    fn groups_with_consolidated_metadata_or_null() {
        let Node::Group(g) =
            Node::from_value(json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata": null})).unwrap()
        else {
            panic!()
        };
        assert!(g.consolidated.is_none());
        let doc = json!({"zarr_format": 3, "node_type": "group", "attributes": {"a": 1},
            "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {"x": array_doc()}}});
        let Node::Group(g) = Node::from_value(doc).unwrap() else { panic!() };
        assert!(g.consolidated.as_ref().unwrap().contains_key("x"));
    }

    #[test]
    fn invalid_documents() {
        assert!(Node::parse(b"{not json").is_err());
        assert!(matches!(
            Node::from_value(json!({"zarr_format": 2, "node_type": "array"})),
            Err(MetadataError::Unsupported(_))
        ));
        assert!(Node::from_value(json!({"zarr_format": 3, "node_type": "table"})).is_err());
        let mut names = array_doc();
        names["dimension_names"] = json!(["only-one"]);
        assert!(Node::from_value(names).is_err());
        let mut no_fill = array_doc();
        no_fill.as_object_mut().unwrap().remove("fill_value");
        assert!(Node::from_value(no_fill).is_err());
    }
}
