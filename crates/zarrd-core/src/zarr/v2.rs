//! Zarr v2 metadata (`.zarray`, `.zgroup`, `.zattrs`, consolidated `.zmetadata`), read into
//! the same [`ArrayMetadata`] and [`GroupMetadata`] as v3, so that the read path, listings
//! and chunk lookups serve both without knowing the difference.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html>. The v2 pipeline maps onto a
//! v3 codec chain (as the v3 core spec's "Zarr v2 compatibility" notes describe):
//! `order: "F"` is a `transpose` that reverses the axes (a chunk stored in Fortran order is the
//! C-order bytes of its transpose); the `dtype`'s byte order is the `bytes` codec's endianness;
//! the numcodecs `filters`, then the `compressor`, are bytes→bytes codecs (numcodecs filters
//! work on the chunk's flat buffer in its stored element type).

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::chunk_key::ChunkKeyEncoding;
use crate::zarr::codec::numeric::{Kind, NumType};
use crate::zarr::codec::{ArrayToArray, ArrayToBytes, BytesCodec, CodecChain, Transpose, numcodecs_v2};
use crate::zarr::data_type::DataType;
use crate::zarr::json::{MetadataError, u64_list};
use crate::zarr::metadata::{ArrayMetadata, GroupMetadata, Node};

/// The v2 metadata keys of a node, relative to its path.
pub const ZARRAY: &str = ".zarray";
pub const ZGROUP: &str = ".zgroup";
pub const ZATTRS: &str = ".zattrs";
pub const ZMETADATA: &str = ".zmetadata";

/// Parses `.zattrs` (missing means `{}`).
pub fn attributes(bytes: Option<&[u8]>) -> Result<Map<String, Value>, MetadataError> {
    attributes_of(bytes.map(crate::zarr::json::from_slice).transpose()?.as_ref())
}

/// A parsed `.zattrs` document (missing means `{}`).
fn attributes_of(zattrs: Option<&Value>) -> Result<Map<String, Value>, MetadataError> {
    match zattrs {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(a)) => Ok(a.clone()),
        Some(_) => Err(MetadataError::invalid(".zattrs", "not a JSON object")),
    }
}

fn check_format(doc: &Map<String, Value>, key: &str) -> Result<(), MetadataError> {
    match doc.get("zarr_format") {
        Some(v) if v.as_u64() == Some(2) => Ok(()),
        Some(v) => Err(MetadataError::Unsupported(format!("zarr_format {v} in {key}"))),
        None => Err(MetadataError::invalid("zarr_format", &format!("missing from {key}"))),
    }
}

/// A `.zgroup` and its `.zattrs`.
pub fn parse_group(zgroup: &[u8], zattrs: Option<&[u8]>) -> Result<GroupMetadata, MetadataError> {
    group_from_document(&crate::zarr::json::from_slice(zgroup)?, attributes(zattrs)?)
}

fn group_from_document(doc: &Value, attributes: Map<String, Value>) -> Result<GroupMetadata, MetadataError> {
    let Value::Object(doc) = doc else {
        return Err(MetadataError::invalid(ZGROUP, "not a JSON object"));
    };
    check_format(doc, ZGROUP)?;
    Ok(GroupMetadata { attributes, ..GroupMetadata::default() })
}

/// The nodes of a consolidated `.zmetadata`: path → a v3-like summary (`node_type`, and
/// for arrays `shape` and `data_type`) for the dataset tree, and the nodes zarrd can serve,
/// parsed, so that they need no request of their own.
pub fn consolidated(zmetadata: &[u8]) -> Result<(Map<String, Value>, Vec<(String, Node)>), MetadataError> {
    let doc: Value = crate::zarr::json::from_slice(zmetadata)?;
    let Some(Value::Object(entries)) = doc.get("metadata") else {
        return Err(MetadataError::invalid(ZMETADATA, "`metadata` is not an object"));
    };
    let mut nodes = Map::new();
    let mut parsed = Vec::new();
    for (key, value) in entries {
        let (path, name) = key.rsplit_once('/').unwrap_or(("", key.as_str()));
        // The root's own documents describe the group being consolidated, not a child.
        if path.is_empty() {
            continue;
        }
        let attributes = attributes_of(entries.get(&format!("{path}/{ZATTRS}")));
        match name {
            ZGROUP => {
                nodes.insert(path.to_owned(), json!({"node_type": "group"}));
                let group = attributes.and_then(|a| group_from_document(value, a)).ok();
                parsed.extend(group.map(|g| (path.to_owned(), Node::Group(Arc::new(g)))));
            }
            ZARRAY => {
                let array = match value {
                    Value::Object(doc) => attributes.and_then(|a| array_from_document(doc.clone(), a)).ok(),
                    _ => None,
                };
                let object_codec = value.pointer("/filters/0/id").and_then(Value::as_str);
                let data_type = value.get("dtype").and_then(Value::as_str).map(|d| match NumType::parse(d) {
                    Some(t) => Value::from(t.data_type().name()),
                    None if d == "|O" && object_codec == Some("vlen-utf8") => Value::from(DataType::String.name()),
                    None if d == "|O" && object_codec == Some("vlen-bytes") => Value::from(DataType::Bytes.name()),
                    None => match crate::zarr::v2_dtype::parse(d) {
                        Ok(Some((t, _, _))) => Value::from(t.name()),
                        _ => Value::from(d),
                    },
                });
                nodes.insert(
                    path.to_owned(),
                    json!({"node_type": "array", "shape": value.get("shape"), "data_type": data_type}),
                );
                parsed.extend(array.map(|a| (path.to_owned(), Node::Array(Arc::new(a)))));
            }
            _ => {}
        }
    }
    Ok((nodes, parsed))
}

/// A `.zarray` and its `.zattrs`.
pub fn parse_array(zarray: &[u8], zattrs: Option<&[u8]>) -> Result<ArrayMetadata, MetadataError> {
    let Value::Object(doc) = crate::zarr::json::from_slice(zarray)? else {
        return Err(MetadataError::invalid(ZARRAY, "not a JSON object"));
    };
    array_from_document(doc, attributes(zattrs)?)
}

pub fn array_from_document(
    doc: Map<String, Value>,
    attributes: Map<String, Value>,
) -> Result<ArrayMetadata, MetadataError> {
    check_format(&doc, ZARRAY)?;
    let shape = u64_list(doc.get("shape"), "shape")?;
    let chunks = u64_list(doc.get("chunks"), "chunks")?;
    let chunk_grid = ChunkGrid::regular(&chunks, &shape)?;
    let filters = match doc.get("filters") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(filters)) => filters.as_slice(),
        Some(_) => return Err(MetadataError::invalid("filters", "not a list or null")),
    };
    let (dtype, data_type, filters, special) = element_types(doc.get("dtype"), filters)?;
    let separator = match doc.get("dimension_separator") {
        None | Some(Value::Null) => '.',
        Some(Value::String(s)) if s == "." => '.',
        Some(Value::String(s)) if s == "/" => '/',
        Some(other) => {
            return Err(MetadataError::invalid("dimension_separator", &format!("{other} is not \".\" or \"/\"")));
        }
    };
    let fill_value = match doc.get("fill_value").unwrap_or(&Value::Null) {
        // zarr-python writes `""`, zarr-python 2 also `0` and `null`: read as zarr-python
        // 3.4.2 reads them (`str()` of the value; `null` is `""`).
        // zarr-python reads a `null` fill of bytes as no bytes, any other as base64.
        Value::Null if data_type == DataType::Bytes => Vec::new(),
        value if data_type == DataType::Bytes => data_type.parse_fill_value(value)?,
        value if data_type.is_variable() => crate::zarr::v2_dtype::text_fill(value)?.into_bytes(),
        value if special.is_some() => crate::zarr::v2_dtype::special_fill(value, data_type)?,
        value => fill_value(value, dtype)?,
    };

    let array_to_array = match doc.get("order").and_then(Value::as_str) {
        // Reversing the axes of a chunk turns its Fortran-order bytes into C order.
        Some("F") if shape.len() > 1 => {
            let order: Vec<usize> = (0..shape.len()).rev().collect();
            vec![ArrayToArray::Transpose(Transpose::from_config(json!({"order": order}).as_object(), shape.len())?)]
        }
        // C order, or F order of fewer than two dimensions (the same bytes).
        Some("C" | "F") => Vec::new(),
        _ => return Err(MetadataError::invalid("order", "must be \"C\" or \"F\"")),
    };
    // Each filter works on the elements as the one before it left them; the compressor
    // on whatever bytes the last filter stored.
    let mut bytes_to_bytes = Vec::new();
    let mut elements = dtype;
    for f in filters {
        let Value::Object(config) = f else {
            return Err(MetadataError::invalid("filters", "a filter is not an object"));
        };
        if let Some((codec, stored)) = numcodecs_v2(config, elements, data_type, "filters")? {
            bytes_to_bytes.push(codec);
            elements = stored;
        }
    }
    match doc.get("compressor") {
        None | Some(Value::Null) => {}
        Some(Value::Object(config)) => {
            bytes_to_bytes.extend(numcodecs_v2(config, elements, data_type, "compressor")?.map(|(codec, _)| codec));
        }
        Some(_) => return Err(MetadataError::invalid("compressor", "not an object or null")),
    }
    let codecs = CodecChain {
        array_to_array,
        array_to_bytes: if data_type == DataType::Bytes {
            ArrayToBytes::VlenBytes
        } else if data_type.is_variable() {
            ArrayToBytes::VlenUtf8
        } else {
            let big_endian = special.unwrap_or(dtype.big_endian);
            ArrayToBytes::Bytes(BytesCodec { big_endian: big_endian && data_type.swap_unit() > 1 })
        },
        bytes_to_bytes,
    };
    let mut hashed = doc.clone();
    hashed.insert(ZATTRS.to_owned(), Value::Object(attributes.clone()));
    let digest = xxhash_rust::xxh3::xxh3_128(Value::Object(hashed).to_string().as_bytes());
    Ok(ArrayMetadata {
        zarr_format: 2,
        shape,
        data_type,
        chunk_grid,
        chunk_key_encoding: ChunkKeyEncoding::V2 { separator },
        fill_value,
        codecs,
        dimension_names: None,
        attributes,
        document: doc,
        digest,
    })
}

/// The element type the filters see, the data type, the filters after any object codec, and
/// for times, `S` and `U` whether they are stored big-endian, from a `.zarray`'s `dtype`.
#[allow(clippy::type_complexity)]
fn element_types<'a>(
    dtype: Option<&Value>,
    filters: &'a [Value],
) -> Result<(NumType, DataType, &'a [Value], Option<bool>), MetadataError> {
    // `|O` holds Python objects; what they are is said by the object codec, the first filter.
    // Text (numcodecs `VLenUTF8`, as zarr-python writes `str` arrays) and bytes (`VLenBytes`)
    // are served.
    Ok(match dtype {
        Some(Value::String(s)) if s == "|O" => match filters.split_first() {
            Some((first, rest))
                if matches!(first.get("id").and_then(Value::as_str), Some("vlen-utf8" | "vlen-bytes")) =>
            {
                // The filters after it and the compressor see the framed text as bytes.
                let text = first.get("id").and_then(Value::as_str) == Some("vlen-utf8");
                let bytes = NumType::parse("|u1").ok_or_else(|| MetadataError::invalid("dtype", "no byte type"))?;
                (bytes, if text { DataType::String } else { DataType::Bytes }, rest, None)
            }
            Some((first, _)) => {
                let id = first.get("id").map_or_else(|| "?".to_owned(), ToString::to_string);
                return Err(MetadataError::Unsupported(format!(
                    "Zarr v2 dtype `|O` with object codec {id} (only vlen-utf8 text and vlen-bytes are served)"
                )));
            }
            None => return Err(MetadataError::invalid("filters", "a `|O` array needs an object codec filter")),
        },
        Some(Value::String(s)) => {
            if let Some(dtype) = NumType::parse(s) {
                (dtype, dtype.data_type(), filters, None)
            } else {
                let (data_type, big_endian, dtype) = crate::zarr::v2_dtype::parse(s)?
                    .ok_or_else(|| MetadataError::Unsupported(format!("Zarr v2 dtype `{s}`")))?;
                (dtype, data_type, filters, Some(big_endian))
            }
        }
        Some(other) => return Err(MetadataError::Unsupported(format!("Zarr v2 structured dtype {other}"))),
        None => return Err(MetadataError::invalid("dtype", "missing")),
    })
}

/// A v2 `fill_value` as little-endian element bytes. `null` means "undefined"; zarr-python
/// 3.4.2 reads it as zero (`0`, `0.0`, `false`, `0j`), so this does too. Besides the v3
/// forms (numbers, `"NaN"`, `"Infinity"`, `"-Infinity"`, `[re, im]`), a base64 string of the
/// element's stored bytes is accepted, the encoding v2 uses for values JSON cannot hold.
fn fill_value(value: &Value, dtype: NumType) -> Result<Vec<u8>, MetadataError> {
    let data_type = dtype.data_type();
    match value {
        Value::Null => Ok(vec![0; dtype.size]),
        Value::Number(n) if dtype.kind == Kind::Bool => Ok(vec![u8::from(n.as_f64() != Some(0.0))]),
        Value::Number(n) if dtype.kind == Kind::Complex => data_type.parse_fill_value(&json!([n, 0.0])),
        Value::String(s) if !matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") && !s.starts_with("0x") => {
            let mut bytes =
                base64::engine::general_purpose::STANDARD.decode(s).ok().filter(|b| b.len() == dtype.size).ok_or_else(
                    || {
                        MetadataError::invalid(
                            "fill_value",
                            &format!("{s:?} is not a {} value or its base64", data_type.name()),
                        )
                    },
                )?;
            if dtype.big_endian {
                for unit in bytes.chunks_exact_mut(data_type.swap_unit()) {
                    unit.reverse();
                }
            }
            Ok(bytes)
        }
        other => data_type.parse_fill_value(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zarr::codec::BytesToBytes;

    fn zarray(extra: &Value) -> Value {
        let mut doc = json!({"zarr_format": 2, "shape": [5, 4], "chunks": [2, 3], "dtype": "<f4", "fill_value": "NaN",
            "order": "C", "filters": null, "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}});
        for (k, v) in extra.as_object().unwrap() {
            doc[k] = v.clone();
        }
        doc
    }

    fn parse(doc: &Value) -> Result<ArrayMetadata, MetadataError> {
        parse_array(doc.to_string().as_bytes(), Some(br#"{"units": "K"}"#))
    }

    #[test]
    fn maps_a_zarray_onto_the_v3_model() {
        let a = parse(&zarray(&json!({}))).unwrap();
        assert_eq!(a.zarr_format, 2);
        assert_eq!(a.data_type, DataType::Float32);
        assert_eq!(a.fill_value, 0x7fc0_0000u32.to_le_bytes());
        assert_eq!(a.chunk_key_encoding.encode(&[1, 2]), "1.2");
        assert_eq!(a.chunk_key_encoding.encode(&[]), "0");
        assert_eq!(a.attributes["units"], "K");
        assert_eq!(a.codecs.bytes_to_bytes, [BytesToBytes::Blosc]);
        assert!(a.codecs.array_to_array.is_empty());

        let f = parse(&zarray(&json!({"order": "F", "dtype": ">i2", "fill_value": -7, "dimension_separator": "/",
            "compressor": null, "filters": [{"id": "delta", "dtype": ">i2"}, {"id": "shuffle", "elementsize": 2}]})))
        .unwrap();
        assert_eq!(f.data_type, DataType::Int16);
        assert_eq!(f.fill_value, (-7i16).to_le_bytes());
        assert_eq!(f.chunk_key_encoding.encode(&[1, 2]), "1/2");
        assert_eq!(f.codecs.array_to_array.len(), 1);
        assert_eq!(f.codecs.array_to_bytes, ArrayToBytes::Bytes(BytesCodec { big_endian: true }));
        assert_eq!(f.codecs.bytes_to_bytes.len(), 2);
        // Stored in Fortran order, big-endian: decoding gives C-order little-endian values.
        let logical: [i16; 6] = [1, 2, 3, 4, 5, 6]; // a 2x3 chunk
        let fortran: Vec<u8> = [1i16, 4, 2, 5, 3, 6].iter().flat_map(|v| v.to_be_bytes()).collect();
        let chain = CodecChain { bytes_to_bytes: Vec::new(), ..f.codecs.clone() };
        let out = chain.decode(&fortran, &[2, 3], DataType::Int16, &[0, 0]).unwrap();
        assert_eq!(out, logical.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
    }

    #[test]
    fn fill_values_in_every_v2_form() {
        let fill =
            |dtype: &str, v: Value| parse(&zarray(&json!({"dtype": dtype, "fill_value": v}))).map(|a| a.fill_value);
        assert_eq!(fill("<i8", Value::Null).unwrap(), [0; 8]);
        assert_eq!(fill("<f8", Value::Null).unwrap(), [0; 8]);
        assert_eq!(fill("|b1", json!(true)).unwrap(), [1]);
        assert_eq!(fill("<f4", json!("-Infinity")).unwrap(), f32::NEG_INFINITY.to_le_bytes());
        let c = fill("<c8", json!([1.0, "Infinity"])).unwrap();
        assert_eq!(c[4..], f32::INFINITY.to_le_bytes());
        // base64 of the stored (big-endian) bytes of 1.5f32 and -2.0f32.
        let be: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&be);
        let c = fill(">c8", json!(b64)).unwrap();
        assert_eq!(c, [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        assert!(fill("<i4", json!("not base64!")).is_err());
        assert!(fill("<i2", json!(70000)).is_err());
    }

    #[test]
    fn unsupported_features_are_named() {
        let unsupported = |extra: Value, what: &str| {
            let err = parse(&zarray(&extra)).unwrap_err();
            assert!(matches!(err, MetadataError::Unsupported(ref s) if s.contains(what)), "{extra}: {err}");
        };
        unsupported(json!({"compressor": {"id": "zfpy", "mode": 4}}), "zfpy");
        unsupported(json!({"filters": [{"id": "categorize", "labels": ["a"], "dtype": "<U1"}]}), "categorize");
        unsupported(json!({"dtype": "|O", "filters": [{"id": "vlen-array", "dtype": "<i4"}]}), "vlen-array");
        let b =
            parse(&zarray(&json!({"dtype": "|O", "fill_value": "YWI=", "filters": [{"id": "vlen-bytes"}]}))).unwrap();
        assert_eq!((b.data_type, b.fill_value.as_slice()), (DataType::Bytes, &b"ab"[..]));
        assert_eq!(b.codecs.array_to_bytes, ArrayToBytes::VlenBytes);
        unsupported(json!({"dtype": "|O", "filters": [{"id": "json2"}]}), "json2");
        assert!(parse(&zarray(&json!({"dtype": "|O", "filters": null}))).is_err());
        unsupported(json!({"dtype": [["r", "|u1"]]}), "structured");
        unsupported(json!({"zarr_format": 1}), "zarr_format");
        unsupported(json!({"compressor": {"id": "lzma", "format": 3, "filters": [{"id": 33}]}}), "lzma");
        assert!(parse(&zarray(&json!({"order": "K"}))).is_err());
        assert!(parse(&zarray(&json!({"chunks": [2]}))).is_err());
        assert!(parse(&zarray(&json!({"dimension_separator": "-"}))).is_err());
    }

    #[test]
    fn object_arrays_of_text() {
        let a = parse(&zarray(&json!({"dtype": "|O", "fill_value": "", "filters": [{"id": "vlen-utf8"}],
            "compressor": {"id": "zstd", "level": 0}})))
        .unwrap();
        assert_eq!(a.data_type, DataType::String);
        assert_eq!(a.codecs.array_to_bytes, ArrayToBytes::VlenUtf8);
        assert_eq!(a.codecs.bytes_to_bytes, [BytesToBytes::Zstd]);
        assert!(a.fill_value.is_empty());
        let f = parse(&zarray(&json!({"dtype": "|O", "fill_value": "n/a", "filters": [{"id": "vlen-utf8"}]}))).unwrap();
        assert_eq!(f.fill_value, b"n/a");
        // zarr-python 2 wrote `0` (and `null`) for text: zarr-python 3.4.2 reads `str(0)`.
        for (fill, want) in [(json!(0), &b"0"[..]), (json!(null), b""), (json!(""), b""), (json!(1.0), b"1.0")] {
            let a = parse(&zarray(&json!({"dtype": "|O", "fill_value": fill, "filters": [{"id": "vlen-utf8"}]})));
            assert_eq!(a.unwrap().fill_value, want, "{fill}");
        }
        assert!(parse(&zarray(&json!({"dtype": "|O", "fill_value": [3], "filters": [{"id": "vlen-utf8"}]}))).is_err());
    }

    #[test]
    fn consolidated_metadata_lists_children() {
        let z = json!({"zarr_format": 2, "metadata": {".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2},
            "g/a/.zarray": {"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": ">f8", "fill_value": 0,
                "order": "C", "filters": null, "compressor": null},
            "g/a/.zattrs": {"units": "m"}, "s/.zarray": {"shape": [], "dtype": "|O"},
            "t/.zarray": {"shape": [2], "dtype": "|O", "filters": [{"id": "vlen-utf8"}]}}});
        let (nodes, parsed) = consolidated(z.to_string().as_bytes()).unwrap();
        assert_eq!(nodes.len(), 4);
        assert_eq!(nodes["t"]["data_type"], "string");
        assert_eq!(nodes["g"]["node_type"], "group");
        assert_eq!(nodes["g/a"]["data_type"], "float64");
        assert_eq!(nodes["s"]["data_type"], "|O");
        // Whole documents parse into nodes (with their attributes); broken ones are left out.
        let paths: Vec<&str> = parsed.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["g", "g/a"]);
        let Node::Array(a) = &parsed[1].1 else { panic!("{parsed:?}") };
        assert_eq!((a.shape.as_slice(), a.attributes["units"].as_str()), (&[3u64][..], Some("m")));
    }
}
