//! Chunk key encodings: `default` and `v2` (core spec, "Chunk key encodings"), and the
//! proposed `fanout` (zarr-extensions PR #31) exactly as its reference implementation
//! (Zarr-Fanout-CKE 0.3.0) writes keys.

use serde_json::Value;

use crate::zarr::json::MetadataError;

/// How chunk coordinates become store keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkKeyEncoding {
    /// `c/1/2` (or `c.1.2`); a 0-d array's only chunk is `c`.
    Default { separator: char },
    /// `1.2` (or `1/2`); a 0-d array's only chunk is `0`.
    V2 { separator: char },
    /// `c/0/012/1/001/234`: each coordinate split into groups of `digits` decimal digits
    /// (most significant first, the first group zero-padded), preceded by the number of
    /// groups minus one, so that no directory holds more than `10^digits` entries.
    Fanout { digits: u32 },
}

/// The draft's smallest `max_children`; smaller values MUST be rejected.
const FANOUT_MIN_CHILDREN: u64 = 100;
/// The draft's default when `max_children` is left out.
const FANOUT_DEFAULT_CHILDREN: u64 = 1000;

impl ChunkKeyEncoding {
    pub fn from_json(value: &Value) -> Result<Self, MetadataError> {
        let (name, config) = crate::zarr::json::extension_parts(value, "chunk_key_encoding")?;
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
            "fanout" => Self::fanout(config),
            other => Err(MetadataError::Unsupported(format!("chunk key encoding `{other}`"))),
        }
    }

    /// Parses the fanout configuration. The draft allows only `max_children` (an integer of
    /// at least 100); a value that is not a power of 10 is floored to one, as the reference
    /// implementation does (250 → 100, 1234 → 1000), since that is what its keys use.
    fn fanout(config: Option<&serde_json::Map<String, Value>>) -> Result<Self, MetadataError> {
        // An invalid configuration is a fanout variant the draft does not define: 422, naming it.
        let bad = |why: String| MetadataError::Unsupported(format!("fanout chunk key encoding: {why}"));
        let mut max_children = FANOUT_DEFAULT_CHILDREN;
        for (key, value) in config.into_iter().flatten() {
            if key != "max_children" {
                return Err(bad(format!("unknown configuration member `{key}` (only `max_children` is allowed)")));
            }
            max_children =
                value.as_u64().ok_or_else(|| bad(format!("`max_children` {value} is not a non-negative integer")))?;
        }
        if max_children < FANOUT_MIN_CHILDREN {
            return Err(bad(format!("`max_children` {max_children} is less than {FANOUT_MIN_CHILDREN}")));
        }
        // 10^(number of digits - 1): the largest power of 10 not above max_children; each
        // group then has log10 of it digits.
        Ok(Self::Fanout { digits: max_children.ilog10() })
    }

    /// The key of chunk `coords`, relative to the array's prefix.
    pub fn encode(&self, coords: &[u64]) -> String {
        let (prefix, separator, scalar) = match self {
            Self::Default { separator } => (Some('c'), *separator, "c"),
            Self::V2 { separator } => (None, *separator, "0"),
            Self::Fanout { digits } => return fanout_key(coords, *digits),
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

fn fanout_key(coords: &[u64], digits: u32) -> String {
    let width = digits as usize;
    let mut key = String::with_capacity(2 + coords.len() * (width + 3));
    key.push('c');
    for &c in coords {
        // Zero-pad the decimal form to a whole number of groups, then cut it into groups.
        let decimal = itoa::Buffer::new().format(c).to_owned();
        let groups = decimal.len().div_ceil(width);
        let padded = format!("{decimal:0>len$}", len = groups * width);
        key.push('/');
        key.push_str(itoa::Buffer::new().format(groups - 1));
        for g in 0..groups {
            key.push('/');
            key.push_str(&padded[g * width..(g + 1) * width]);
        }
    }
    key
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
        assert!(matches!(ChunkKeyEncoding::from_json(&json!({"name": "prefix"})), Err(MetadataError::Unsupported(_))));
    }

    #[test]
    fn fanout_as_the_reference_implementation() {
        // The examples of the Zarr-Fanout-CKE 0.3.0 README (zero-based group count).
        let thousand = ChunkKeyEncoding::from_json(&json!({"name": "fanout"})).unwrap();
        assert_eq!(thousand.encode(&[]), "c");
        assert_eq!(thousand.encode(&[0]), "c/0/000");
        assert_eq!(thousand.encode(&[12]), "c/0/012");
        assert_eq!(thousand.encode(&[1234, 5, 0, 6_789_012]), "c/1/001/234/0/005/0/000/2/006/789/012");
        let hundred =
            ChunkKeyEncoding::from_json(&json!({"name": "fanout", "configuration": {"max_children": 100}})).unwrap();
        assert_eq!(hundred.encode(&[100, 99, 12345]), "c/1/01/00/0/99/2/01/23/45");
        // Not a power of 10: floored, as the reference implementation does.
        for (given, digits) in [(150, 2), (999, 2), (1000, 3), (1234, 3), (12345, 4)] {
            let e = ChunkKeyEncoding::from_json(&json!({"name": "fanout", "configuration": {"max_children": given}}))
                .unwrap();
            assert_eq!(e, ChunkKeyEncoding::Fanout { digits }, "{given}");
        }
        for bad in [
            json!({"max_children": 99}),
            json!({"max_children": 0}),
            json!({"max_children": -5}),
            json!({"max_children": 1000.5}),
            json!({"max_children": "1000"}),
            json!({"max_children": 1000, "x": 1}),
        ] {
            let err = ChunkKeyEncoding::from_json(&json!({"name": "fanout", "configuration": bad})).unwrap_err();
            assert!(matches!(err, MetadataError::Unsupported(ref s) if s.contains("fanout")), "{bad}: {err}");
        }
    }
}
