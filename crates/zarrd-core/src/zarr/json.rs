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

/// A JSON document as Python's `json` module writes it: strict JSON, or JSON with the bare
/// `NaN`, `Infinity` and `-Infinity` it writes for such floats (zarr-python 2 attributes,
/// `VirtualiZarr`'s metadata), which are read as the strings Zarr uses for them.
pub fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(bytes).or_else(|strict| match python_floats_quoted(bytes) {
        Some(quoted) => serde_json::from_slice(&quoted).map_err(|_| strict),
        None => Err(strict),
    })
}

/// `bytes` with bare `NaN`, `Infinity` and `-Infinity` tokens (outside strings) quoted;
/// `None` when there are none.
fn python_floats_quoted(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            (escaped, in_string) = (!escaped && b == b'\\', escaped || b != b'"');
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) =
            [&b"-Infinity"[..], b"Infinity", b"NaN"].into_iter().find(|t| bytes[i..].starts_with(t))
        {
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
            (i, changed) = (i + token.len(), true);
            continue;
        }
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn python_json_floats_read_as_zarr_strings() {
        let doc = from_slice(br#"{"a": NaN, "b": [Infinity, -Infinity, 1.5], "c": "NaN \" NaN", "d": "x\\"}"#).unwrap();
        assert_eq!(doc, json!({"a": "NaN", "b": ["Infinity", "-Infinity", 1.5], "c": "NaN \" NaN", "d": "x\\"}));
        assert!(from_slice(b"{\"a\": Nope}").is_err());
        assert!(from_slice(b"{\"a\": NaN").is_err());
    }
}
