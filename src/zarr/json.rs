//! The JSON shapes every Zarr metadata document is built from (extension objects, lists of
//! integers) and the error they are reported with. A leaf: the documents' parsers
//! (`metadata`, `chunk_grid`, `chunk_key`, `data_type`, the codecs) all build on it.

use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("zarr.json is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("invalid `{field}`: {reason}")]
    Invalid { field: String, reason: String },
    #[error("unsupported {0}")]
    Unsupported(String),
}

impl MetadataError {
    pub fn invalid(field: &str, reason: &str) -> Self {
        Self::Invalid { field: field.to_owned(), reason: reason.to_owned() }
    }
}

/// The name and configuration of an extension object, in object or short-hand form.
pub fn extension_parts<'a>(
    value: &'a Value,
    field: &str,
) -> Result<(&'a str, Option<&'a Map<String, Value>>), MetadataError> {
    match value {
        Value::String(name) => Ok((name, None)),
        Value::Object(o) => {
            let Some(Value::String(name)) = o.get("name") else {
                return Err(MetadataError::invalid(field, "an extension object without a string `name`"));
            };
            match o.get("configuration") {
                None | Some(Value::Null) => Ok((name, None)),
                Some(Value::Object(c)) => Ok((name, Some(c))),
                Some(_) => Err(MetadataError::invalid(field, "`configuration` is not an object")),
            }
        }
        _ => Err(MetadataError::invalid(field, "expected an extension name or object")),
    }
}

/// A list of non-negative integers.
pub fn u64_list(value: Option<&Value>, field: &str) -> Result<Vec<u64>, MetadataError> {
    let Some(Value::Array(items)) = value else {
        return Err(MetadataError::invalid(field, "expected a list of non-negative integers"));
    };
    items
        .iter()
        .map(|v| v.as_u64().ok_or_else(|| MetadataError::invalid(field, &format!("{v} is not a non-negative integer"))))
        .collect()
}
