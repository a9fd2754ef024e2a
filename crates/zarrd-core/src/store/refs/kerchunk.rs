//! kerchunk reference sets in JSON (<https://fsspec.github.io/kerchunk/spec.html>):
//! version 0 (`{key: value}`) and version 1 (`{"version": 1, "templates", "gen", "refs"}`).
//! A value is the object's bytes (text, or `base64:`-prefixed), `[url]` (a whole file) or
//! `[url, offset, length]` (a byte range of one).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;

use super::error::{MAX_REFS, RefsError};
use super::template::{Var, dimensions, for_each_point, render};

/// A reference file read at most (bytes of JSON).
pub const MAX_JSON_BYTES: u64 = 512 << 20;

/// Where a key's bytes are.
#[derive(Clone, Debug, PartialEq)]
pub enum Ref {
    /// The bytes themselves.
    Inline(Bytes),
    /// `length` bytes at `offset` in the file at `url`.
    Range { url: Arc<str>, offset: u64, length: u64 },
    /// The whole file at `url`.
    Whole { url: Arc<str> },
}

/// The references of a JSON reference set, by key.
pub fn parse(json: &[u8]) -> Result<BTreeMap<Box<str>, Ref>, RefsError> {
    let doc: Value =
        crate::zarr::json::from_slice(json).map_err(|e| RefsError::Invalid(format!("not a JSON document: {e}")))?;
    let Value::Object(top) = doc else {
        return Err(RefsError::Invalid("the reference document is not a JSON object".into()));
    };
    let mut out = BTreeMap::new();
    if top.get("version").and_then(Value::as_i64) != Some(1) {
        // Version 0: the document is the references.
        for (key, value) in &top {
            out.insert(key.as_str().into(), value_ref(key, value, &BTreeMap::new())?);
        }
        return Ok(out);
    }
    let templates: BTreeMap<String, Var> = match top.get("templates") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(t)) => t
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), Var::Text(s.clone()))),
                _ => Err(RefsError::Invalid(format!("template `{k}` is not a string"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(RefsError::Invalid("`templates` is not an object".into())),
    };
    match top.get("refs") {
        Some(Value::Object(refs)) => {
            if refs.len() > MAX_REFS {
                return Err(RefsError::TooMany);
            }
            for (key, value) in refs {
                out.insert(key.as_str().into(), value_ref(key, value, &templates)?);
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err(RefsError::Invalid("`refs` is not an object".into())),
    }
    match top.get("gen") {
        None | Some(Value::Null) => {}
        Some(Value::Array(gens)) => {
            for entry in gens {
                generate(entry, &templates, &mut out)?;
            }
        }
        Some(_) => return Err(RefsError::Invalid("`gen` is not a list".into())),
    }
    Ok(out)
}

/// One value of `refs` (or of a version 0 document).
fn value_ref(key: &str, value: &Value, templates: &BTreeMap<String, Var>) -> Result<Ref, RefsError> {
    let bad = |why: &str| RefsError::Invalid(format!("the reference of `{key}` {why}"));
    match value {
        Value::String(s) => match s.strip_prefix("base64:") {
            Some(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map(|b| Ref::Inline(b.into()))
                .map_err(|e| bad(&format!("is not valid base64: {e}"))),
            None => Ok(Ref::Inline(Bytes::copy_from_slice(s.as_bytes()))),
        },
        // Metadata some writers keep as JSON rather than as its text.
        Value::Object(_) => Ok(Ref::Inline(value.to_string().into())),
        Value::Array(items) => {
            let url = match items.first() {
                Some(Value::String(u)) => render(u, templates)?,
                _ => return Err(bad("does not start with a URL")),
            };
            let url: Arc<str> = url.into();
            let number = |i: usize, what: &str| {
                items[i].as_u64().ok_or_else(|| bad(&format!("has a {what} that is not a non-negative integer")))
            };
            match items.len() {
                1 => Ok(Ref::Whole { url }),
                3 => Ok(Ref::Range { url, offset: number(1, "offset")?, length: number(2, "length")? }),
                _ => Err(bad("is neither `[url]` nor `[url, offset, length]`")),
            }
        }
        _ => Err(bad("is neither text, base64 bytes nor a list")),
    }
}

/// The keys a `gen` entry makes.
fn generate(
    entry: &Value,
    templates: &BTreeMap<String, Var>,
    out: &mut BTreeMap<Box<str>, Ref>,
) -> Result<(), RefsError> {
    let text = |field: &str| entry.get(field).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    let (Some(key), Some(url)) = (text("key"), text("url")) else {
        return Err(RefsError::Invalid("a `gen` entry needs `key` and `url`".into()));
    };
    let (offset, length) = (text("offset"), text("length"));
    let dims = dimensions(entry)?;
    for_each_point(&dims, templates, |vars| {
        let url: Arc<str> = render(&url, vars)?.into();
        let number = |field: &Option<String>, what: &str| -> Result<Option<u64>, RefsError> {
            let Some(f) = field else { return Ok(None) };
            let rendered = render(f, vars)?;
            rendered.trim().parse::<u64>().map(Some).map_err(|_| {
                RefsError::Invalid(format!("a `gen` {what} renders as `{rendered}`, not a non-negative integer"))
            })
        };
        let reference = match (number(&offset, "offset")?, number(&length, "length")?) {
            (Some(offset), Some(length)) => Ref::Range { url, offset, length },
            _ => Ref::Whole { url },
        };
        out.insert(render(&key, vars)?.into(), reference);
        if out.len() > MAX_REFS { Err(RefsError::TooMany) } else { Ok(()) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(u: &str) -> Arc<str> {
        u.into()
    }

    #[test]
    fn version_0_values() {
        let refs = parse(
            br#"{".zgroup": "{\"zarr_format\": 2}", "a/0": "base64:AAEC", "a/1": ["f.nc", 8, 4], "a/2": ["s3://b/k"]}"#,
        )
        .unwrap();
        assert_eq!(refs[".zgroup"], Ref::Inline(Bytes::from_static(br#"{"zarr_format": 2}"#)));
        assert_eq!(refs["a/0"], Ref::Inline(Bytes::from_static(&[0, 1, 2])));
        assert_eq!(refs["a/1"], Ref::Range { url: url("f.nc"), offset: 8, length: 4 });
        assert_eq!(refs["a/2"], Ref::Whole { url: url("s3://b/k") });
    }

    #[test]
    fn version_1_templates_and_gen() {
        let doc = br#"{"version": 1, "templates": {"u": "s3://bucket/data.bin"},
            "refs": {"x/.zarray": {"zarr_format": 2}, "x/0": ["{{u}}", 0, 10]},
            "gen": [{"key": "y/{{i}}", "url": "{{u}}", "offset": "{{(i + 1) * 100}}", "length": "100",
                     "dimensions": {"i": {"stop": 3}}},
                    {"key": "z/{{f}}.{{j}}", "url": "http://h/{{f}}", "dimensions": {"f": ["a", "b"], "j": [0, 1]}}]}"#;
        let refs = parse(doc).unwrap();
        assert_eq!(refs["x/.zarray"], Ref::Inline(Bytes::from_static(br#"{"zarr_format":2}"#)));
        assert_eq!(refs["x/0"], Ref::Range { url: url("s3://bucket/data.bin"), offset: 0, length: 10 });
        for i in 0..3u64 {
            let want = Ref::Range { url: url("s3://bucket/data.bin"), offset: (i + 1) * 100, length: 100 };
            assert_eq!(refs[format!("y/{i}").as_str()], want);
        }
        assert_eq!(refs["z/b.1"], Ref::Whole { url: url("http://h/b") });
        assert_eq!(refs.len(), 2 + 3 + 4);
    }

    #[test]
    fn malformed_sets_are_errors_not_panics() {
        for doc in [
            &b"[]"[..],
            b"{",
            br#"{"a": 1}"#,
            br#"{"a": ["u", 1]}"#,
            br#"{"a": ["u", -1, 2]}"#,
            br#"{"a": [3, 1, 2]}"#,
            br#"{"a": "base64:!!"}"#,
            br#"{"version": 1, "refs": []}"#,
            br#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "u", "dimensions": {"i": {"stop": 5, "step": 0}}}]}"#,
            br#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "u", "dimensions": {"i": {"stop": 9000000000}}}]}"#,
            br#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "u", "offset": "{{i-5}}", "length": "1", "dimensions": {"i": [1]}}]}"#,
        ] {
            assert!(parse(doc).is_err(), "{}", String::from_utf8_lossy(doc));
        }
    }
}
