//! Response bodies for decoded data: `.npy`, raw little-endian, JSON and 8-bit PNG.

use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::numbers;
use zarrd_core::zarr::data_type::DataType;

/// The formats of decoded data (`docs/api.md` "Slices"; `format` in `openapi.yaml`), with
/// their media types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Npy,
    Bin,
    Json,
    Png,
    /// Labelled results only (`sel=`, `/v1/reduce`): a row per element.
    Csv,
}

impl Format {
    /// The formats `Accept` can choose (CSV only by name: it needs labels).
    pub const ALL: [Self; 4] = [Self::Npy, Self::Bin, Self::Json, Self::Png];

    pub fn name(self) -> &'static str {
        match self {
            Self::Npy => "npy",
            Self::Bin => "bin",
            Self::Json => "json",
            Self::Png => "png",
            Self::Csv => "csv",
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Self::Npy => "application/x-npy",
            Self::Bin => "application/octet-stream",
            Self::Json => "application/json",
            Self::Png => "image/png",
            Self::Csv => "text/csv; charset=utf-8",
        }
    }

    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.into_iter().chain([Self::Csv]).find(|f| f.name() == name).ok_or_else(|| {
            Error::BadRequest(format!("unknown format `{name}`; allowed: npy, bin, json, png, csv, nc (on /v1/slice)"))
        })
    }

    /// The format named by `format`, else the first acceptable one in `Accept`, else npy.
    pub fn negotiate(format: Option<&str>, accept: Option<&str>) -> Result<Self> {
        if let Some(name) = format {
            return Self::from_name(name);
        }
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
            return Ok(Self::Npy);
        };
        let mut offers: Vec<(f32, usize, &str)> = accept
            .split(',')
            .enumerate()
            .filter_map(|(i, part)| {
                let mut pieces = part.split(';');
                let media = pieces.next()?.trim();
                let q = pieces
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                (q > 0.0).then_some((q, i, media))
            })
            .collect();
        offers.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, _, media) in offers {
            if media == "*/*" || media == "application/*" {
                return Ok(Self::Npy);
            }
            if media == "image/*" {
                return Ok(Self::Png);
            }
            if let Some(f) = Self::ALL.into_iter().find(|f| f.media_type().eq_ignore_ascii_case(media)) {
                return Ok(f);
            }
        }
        Err(Error::NotAcceptable(format!(
            "none of the media types in Accept (`{accept}`) can be produced; use application/x-npy, application/octet-stream, application/json or image/png, or the `format` parameter"
        )))
    }
}

/// The `.npy` v1.0 header for little-endian C-order data.
pub fn npy_header(data_type: DataType, shape: &[u64]) -> Vec<u8> {
    npy_header_for(&data_type.npy_descr(), shape)
}

/// The `.npy` v1.0 header for C-order data of `descr`.
fn npy_header_for(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6) + version (2) + length (2) + dict + '\n', padded to a multiple of 64.
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    dict.extend(std::iter::repeat_n(' ', total - 10 - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// An upper bound on the JSON text of one element, for the response-size limit.
pub fn json_bytes_per_element(data_type: DataType) -> u64 {
    match data_type {
        DataType::Bool => 6,
        DataType::Int8 | DataType::UInt8 => 5,
        DataType::Int16 | DataType::UInt16 => 7,
        DataType::Int32 | DataType::UInt32 => 12,
        DataType::Int64 | DataType::UInt64 | DataType::TimeDelta64(_) => 21,
        DataType::Float16 | DataType::Float32 => 17,
        DataType::Float64 => 26,
        DataType::Complex64 => 38,
        DataType::Complex128 => 56,
        // Text has no bound per element: string results are measured once read.
        DataType::String | DataType::Bytes => 0,
        // `"-146138510344-07-14T16:14:56.123456789012345678",`, with room to spare.
        DataType::DateTime64(_) => 80,
        // A code point takes at most 6 bytes in a JSON string (`\u001f`), plus quotes and comma.
        DataType::FixedUtf32(n) => u64::from(n) * 6 + 3,
        DataType::FixedBytes(n) => u64::from(n).div_ceil(3) * 4 + 3,
    }
}

/// An element of a text array (UTF-8, checked when it was decoded).
fn as_text(element: &[u8]) -> &str {
    std::str::from_utf8(element).unwrap_or_default()
}

/// Variable-length elements as `.npy`. Text: a `NumPy` `U` array (`<U{n}`, n the most code
/// points of any element, at least 1 as `NumPy` makes it), each element UTF-32LE padded with
/// NULs to n: exactly what `numpy.save` writes for an array of `str`. Bytes
/// (`variable_length_bytes`): a `NumPy` `S` array (`|S{n}`, n the longest element), each
/// element NUL-padded, what `numpy.save` writes for `numpy.array(list_of_bytes)` (so, as
/// in `NumPy`, trailing NULs of an element do not survive). Returns the header and the
/// body's total size, so the caller can check and reserve it before [`npy_text`] builds it.
pub fn npy_text_header(elements: &[Box<[u8]>], shape: &[u64], data_type: DataType) -> (Vec<u8>, u64) {
    let (kind, unit) = if data_type == DataType::Bytes { ("|S", 1) } else { ("<U", 4) };
    let width =
        elements.iter().map(|e| if unit == 1 { e.len() } else { as_text(e).chars().count() }).max().unwrap_or(0).max(1);
    let header = npy_header_for(&format!("{kind}{width}"), shape);
    let size = header.len() as u64 + elements.len() as u64 * width as u64 * unit;
    (header, size)
}

pub fn npy_text(elements: &[Box<[u8]>], header: Vec<u8>, size: u64, data_type: DataType) -> Vec<u8> {
    let unit = if data_type == DataType::Bytes { 1 } else { 4 };
    let width = ((size - header.len() as u64) / unit / (elements.len() as u64).max(1)) as usize;
    let mut out = header;
    out.reserve_exact(width * unit as usize * elements.len());
    for e in elements {
        if unit == 1 {
            out.extend_from_slice(e);
            out.resize(out.len() + (width - e.len()), 0);
            continue;
        }
        let mut n = 0;
        for c in as_text(e).chars() {
            out.extend_from_slice(&u32::from(c).to_le_bytes());
            n += 1;
        }
        out.resize(out.len() + (width - n) * 4, 0);
    }
    out
}

/// How a byte of text is written inside a JSON string: itself, a two-character escape, or
/// `\u00XX` (the control characters without a short form).
fn json_escape(b: u8) -> Option<&'static str> {
    const HEX: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\b", "\\t", "\\n",
        "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014",
        "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e",
        "\\u001f",
    ];
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..0x20 => Some(HEX[b as usize]),
        _ => None,
    }
}

fn json_string_len(text: &str) -> u64 {
    2 + text.bytes().map(|b| json_escape(b).map_or(1, str::len) as u64).sum::<u64>()
}

pub fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, b) in text.bytes().enumerate() {
        if let Some(escaped) = json_escape(b) {
            // Escaped bytes are ASCII, so `plain..i` ends on a character boundary.
            out.push_str(&text[plain..i]);
            out.push_str(escaped);
            plain = i + 1;
        }
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

/// `{"shape":[…],"data_type":…,"data":` (the JSON body up to its values), in a string
/// with room for `capacity` bytes.
fn json_head(shape: &[u64], data_type: DataType, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    out.push_str("{\"shape\":[");
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(itoa::Buffer::new().format(*d));
    }
    let _ = write!(out, "],\"data_type\":\"{}\",", data_type.name());
    push_type_details(&mut out, data_type);
    out.push_str("\"data\":");
    out
}

/// What a JSON body says besides the type's name to read its values: a time type's unit
/// (`"unit":"10ms"`), and that bytes are base64.
fn push_type_details(out: &mut String, data_type: DataType) {
    if let Some(unit) = data_type.time_unit() {
        let _ = write!(out, "\"unit\":\"{}\",", unit.numpy());
    }
    if matches!(data_type, DataType::FixedBytes(_) | DataType::Bytes) {
        out.push_str("\"encoding\":\"base64\",");
    }
}

/// The JSON string of one variable-length element: text as itself, bytes as base64.
fn json_element_len(element: &[u8], data_type: DataType) -> u64 {
    if data_type == DataType::Bytes {
        2 + (element.len() as u64).div_ceil(3) * 4
    } else {
        json_string_len(as_text(element))
    }
}

fn push_json_element(out: &mut String, element: &[u8], data_type: DataType) {
    use base64::Engine as _;
    if data_type == DataType::Bytes {
        out.push('"');
        out.push_str(&base64::engine::general_purpose::STANDARD.encode(element));
        out.push('"');
    } else {
        push_json_string(out, as_text(element));
    }
}

/// The exact length of [`json_text`]'s body, so it can be checked and reserved first.
pub fn json_text_len(elements: &[Box<[u8]>], shape: &[u64], data_type: DataType) -> u64 {
    // Brackets and commas: each list of n items has 2 + (n - 1) of them.
    let mut punctuation = 0u64;
    let mut lists = 1u64;
    for &n in shape {
        punctuation += lists * (2 + n.saturating_sub(1));
        lists *= n;
    }
    json_head(shape, data_type, 0).len() as u64
        + punctuation
        + elements.iter().map(|e| json_element_len(e, data_type)).sum::<u64>()
        + 1
}

/// `{"shape", "data_type": "string", "data"}` with the text as nested lists of JSON strings
/// (`variable_length_bytes`: base64 strings, with `"encoding": "base64"`).
pub fn json_text(elements: &[Box<[u8]>], shape: &[u64], len: u64, data_type: DataType) -> Vec<u8> {
    let mut out = json_head(shape, data_type, len as usize);
    let mut items = elements.iter();
    nested(&mut out, shape, &mut |out| push_json_element(out, items.next().map_or(&[][..], AsRef::as_ref), data_type));
    out.push('}');
    out.into_bytes()
}

/// `{"shape", "data_type", "data"}` with `data` as nested lists (a scalar for 0-d).
pub fn json(data: &[u8], data_type: DataType, shape: &[u64]) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    let mut out = json_head(shape, data_type, 64 + (n * json_bytes_per_element(data_type) / 2) as usize);
    let item = data_type.size();
    let mut elements = data.chunks_exact(item);
    nested(&mut out, shape, &mut |out| write_element(out, elements.next().unwrap_or(&[]), data_type));
    out.push('}');
    out.into_bytes()
}

fn nested(out: &mut String, shape: &[u64], element: &mut dyn FnMut(&mut String)) {
    let Some((&n, rest)) = shape.split_first() else {
        element(out);
        return;
    };
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        nested(out, rest, element);
    }
    out.push(']');
}

pub fn write_element(out: &mut String, b: &[u8], data_type: DataType) {
    let mut int = itoa::Buffer::new();
    let bytes = |n: usize| -> [u8; 8] {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&b[..n]);
        a
    };
    match data_type {
        DataType::Bool => out.push_str(if b[0] != 0 { "true" } else { "false" }),
        DataType::Int8 => out.push_str(int.format(b[0] as i8)),
        DataType::Int16 => out.push_str(int.format(i16::from_le_bytes([b[0], b[1]]))),
        DataType::Int32 => out.push_str(int.format(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DataType::Int64 => out.push_str(int.format(i64::from_le_bytes(bytes(8)))),
        DataType::UInt8 => out.push_str(int.format(b[0])),
        DataType::UInt16 => out.push_str(int.format(u16::from_le_bytes([b[0], b[1]]))),
        DataType::UInt32 => out.push_str(int.format(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DataType::UInt64 => out.push_str(int.format(u64::from_le_bytes(bytes(8)))),
        DataType::Float16 => numbers::float(out, half::f16::from_le_bytes([b[0], b[1]]).to_f64(), true, "null"),
        DataType::Float32 => numbers::float(out, f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])), true, "null"),
        DataType::Float64 => numbers::float(out, f64::from_le_bytes(bytes(8)), false, "null"),
        DataType::Complex64 | DataType::Complex128 => {
            let part = if data_type == DataType::Complex64 { DataType::Float32 } else { DataType::Float64 };
            let half_len = data_type.size() / 2;
            out.push('[');
            write_element(out, &b[..half_len], part);
            out.push(',');
            write_element(out, &b[half_len..], part);
            out.push(']');
        }
        // Text never reaches the fixed-size encoder (see `json_text`).
        DataType::String | DataType::Bytes => out.push_str("null"),
        DataType::DateTime64(unit) => match zarrd_core::zarr::time::datetime_string(i64::from_le_bytes(bytes(8)), unit)
        {
            Some(text) => push_json_string(out, &text),
            None => out.push_str("null"),
        },
        DataType::TimeDelta64(_) => match i64::from_le_bytes(bytes(8)) {
            zarrd_core::zarr::time::NAT => out.push_str("null"),
            v => out.push_str(int.format(v)),
        },
        DataType::FixedUtf32(_) => {
            // `NumPy` drops trailing NULs from a `U` value; a code point that is not a
            // character (a surrogate, beyond U+10FFFF) is written as U+FFFD.
            let units: Vec<u32> = b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            let end = units.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
            let text: String =
                units[..end].iter().map(|&u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER)).collect();
            push_json_string(out, &text);
        }
        DataType::FixedBytes(_) => {
            use base64::Engine as _;
            let end = b.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
            out.push('"');
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(&b[..end]));
            out.push('"');
        }
    }
}

/// A JSON body with the configured `Cache-Control`.
pub fn json_response(value: &impl serde::Serialize, cache_control: &str) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    use axum::response::IntoResponse;
    // Serializing types made of strings, numbers and maps with string keys cannot fail.
    let body = serde_json::to_string(value).unwrap_or_default();
    let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Ok(v) = HeaderValue::from_str(cache_control) {
        response.headers_mut().insert(header::CACHE_CONTROL, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_are_aligned_and_numpy_shaped() {
        for shape in [vec![], vec![7], vec![3, 4, 5]] {
            let h = npy_header(DataType::Float32, &shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(*h.last().unwrap(), b'\n');
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': ("), "{text}");
        }
        let text = String::from_utf8(npy_header(DataType::Int8, &[7])[10..].to_vec()).unwrap();
        assert!(text.contains("'shape': (7,)"));
    }

    #[test]
    fn json_renders_every_kind_of_value() {
        let f: Vec<u8> = [1.5f32, f32::NAN, f32::INFINITY, 0.1].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            String::from_utf8(json(&f, DataType::Float32, &[2, 2])).unwrap(),
            r#"{"shape":[2,2],"data_type":"float32","data":[[1.5,null],[null,0.1]]}"#
        );
        let big = u64::MAX.to_le_bytes();
        assert_eq!(
            String::from_utf8(json(&big, DataType::UInt64, &[])).unwrap(),
            r#"{"shape":[],"data_type":"uint64","data":18446744073709551615}"#
        );
        let c: Vec<u8> = [1.0f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            String::from_utf8(json(&c, DataType::Complex64, &[1])).unwrap(),
            r#"{"shape":[1],"data_type":"complex64","data":[[1.0,-2.0]]}"#
        );
        assert_eq!(
            String::from_utf8(json(&[1, 0], DataType::Bool, &[2])).unwrap(),
            r#"{"shape":[2],"data_type":"bool","data":[true,false]}"#
        );
        assert_eq!(
            String::from_utf8(json(&[], DataType::Int8, &[0, 3])).unwrap(),
            r#"{"shape":[0,3],"data_type":"int8","data":[]}"#
        );
    }

    #[test]
    fn negotiation_follows_format_then_accept() {
        assert_eq!(Format::negotiate(None, None).unwrap(), Format::Npy);
        assert_eq!(Format::negotiate(Some("json"), Some("image/png")).unwrap(), Format::Json);
        assert_eq!(Format::negotiate(None, Some("text/html;q=0.9, image/png")).unwrap(), Format::Png);
        assert_eq!(
            Format::negotiate(None, Some("application/json;q=0.5, application/octet-stream")).unwrap(),
            Format::Bin
        );
        assert_eq!(Format::negotiate(None, Some("text/html, */*;q=0.1")).unwrap(), Format::Npy);
        assert!(matches!(Format::negotiate(None, Some("text/html")), Err(Error::NotAcceptable(_))));
        assert!(matches!(Format::negotiate(Some("tiff"), None), Err(Error::BadRequest(_))));
    }
}
