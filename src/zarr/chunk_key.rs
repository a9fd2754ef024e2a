//! Chunk key encodings: `default` and `v2` (core spec, "Chunk key encodings").

use serde_json::Value;

use super::metadata::MetadataError;

/// How chunk coordinates become store keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkKeyEncoding {
    /// `c/1/2` (or `c.1.2`); a 0-d array's only chunk is `c`.
    Default { separator: char },
    /// `1.2` (or `1/2`); a 0-d array's only chunk is `0`.
    V2 { separator: char },
}

impl ChunkKeyEncoding {
    pub fn from_json(value: &Value) -> Result<Self, MetadataError> {
        let (name, config) = super::metadata::extension_parts(value, "chunk_key_encoding")?;
        let separator = |default: char| -> Result<char, MetadataError> {
            match config.and_then(|c| c.get("separator")) {
                None => Ok(default),
                Some(Value::String(s)) if s == "/" => Ok('/'),
                Some(Value::String(s)) if s == "." => Ok('.'),
                Some(other) => Err(MetadataError::invalid(
                    "chunk_key_encoding",
                    &format!("separator {other} is not \"/\" or \".\""),
                )),
            }
        };
        match name {
            "default" => Ok(Self::Default { separator: separator('/')? }),
            "v2" => Ok(Self::V2 { separator: separator('.')? }),
            other => Err(MetadataError::Unsupported(format!("chunk key encoding `{other}`"))),
        }
    }

    /// The key of chunk `coords`, relative to the array's prefix.
    pub fn encode(&self, coords: &[u64]) -> String {
        let (prefix, separator, scalar) = match self {
            Self::Default { separator } => (Some('c'), *separator, "c"),
            Self::V2 { separator } => (None, *separator, "0"),
        };
        if coords.is_empty() {
            return scalar.to_owned();
        }
        let mut key = String::with_capacity(coords.len() * 4 + 2);
        if let Some(p) = prefix {
            key.push(p);
        }
        for (i, c) in coords.iter().enumerate() {
            if i > 0 || prefix.is_some() {
                key.push(separator);
            }
            key.push_str(itoa::Buffer::new().format(*c));
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_as_the_spec_table() {
        let enc = |v: Value| ChunkKeyEncoding::from_json(&v).unwrap();
        let coords = [1, 23, 45];
        assert_eq!(enc(json!({"name": "default", "configuration": {"separator": "/"}})).encode(&coords), "c/1/23/45");
        assert_eq!(enc(json!({"name": "default", "configuration": {"separator": "."}})).encode(&coords), "c.1.23.45");
        assert_eq!(enc(json!({"name": "v2", "configuration": {"separator": "."}})).encode(&coords), "1.23.45");
        assert_eq!(enc(json!({"name": "v2", "configuration": {"separator": "/"}})).encode(&coords), "1/23/45");
        assert_eq!(enc(json!({"name": "default"})).encode(&coords), "c/1/23/45");
        assert_eq!(enc(json!({"name": "v2"})).encode(&coords), "1.23.45");
        assert_eq!(enc(json!("default")).encode(&[]), "c");
        assert_eq!(enc(json!({"name": "v2"})).encode(&[]), "0");
        assert!(ChunkKeyEncoding::from_json(&json!({"name": "default", "configuration": {"separator": "-"}})).is_err());
        assert!(matches!(ChunkKeyEncoding::from_json(&json!({"name": "fanout"})), Err(MetadataError::Unsupported(_))));
    }
}
