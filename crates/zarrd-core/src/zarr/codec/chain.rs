//! The codec pipeline of a chunk (core spec "Codecs"): zero or more array→array codecs,
//! exactly one array→bytes codec, then zero or more bytes→bytes codecs; decoding runs them
//! in reverse. Each codec is found by name here, once.

use serde_json::Value;

use crate::zarr::codec::bytes::BytesCodec;
use crate::zarr::codec::bytes_to_bytes::BytesToBytes;
use crate::zarr::codec::error::{CodecError, MAX_DECODED_CHUNK_BYTES, element_count};
use crate::zarr::codec::numeric::NumType;
use crate::zarr::codec::registry::{self, Codec, Serializer, Stage};
use crate::zarr::codec::sharding::{Chain, Sharding};
use crate::zarr::codec::transpose::Transpose;
use crate::zarr::codec::vlen::{self, VlenStrings};
use crate::zarr::codec::zstd;
use crate::zarr::data_type::DataType;
use crate::zarr::json::{MetadataError, extension_parts};

/// The sharding codec over zarrd's codec chains.
pub type ShardingCodec = Sharding<CodecChain>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrayToArray {
    Transpose(Transpose),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrayToBytes {
    Bytes(BytesCodec),
    Sharding(Box<ShardingCodec>),
    /// `vlen-utf8` (v3) or numcodecs `vlen-utf8` (v2 `|O`): text, for the `string` type only.
    VlenUtf8,
    /// `vlen-bytes` (v3) or numcodecs `vlen-bytes` (v2 `|O`): the same framing of any bytes,
    /// for `variable_length_bytes` only.
    VlenBytes,
}
/// A parsed `codecs` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecChain {
    pub array_to_array: Vec<ArrayToArray>,
    pub array_to_bytes: ArrayToBytes,
    pub bytes_to_bytes: Vec<BytesToBytes>,
}

impl CodecChain {
    /// The shape each array→array codec decodes to, outermost first: the chunk's shape,
    /// then as each transpose leaves it.
    fn decoded_shapes(&self, shape: &[u64]) -> Vec<Vec<u64>> {
        let mut shapes = vec![shape.to_vec()];
        for c in &self.array_to_array {
            let ArrayToArray::Transpose(t) = c;
            shapes.push(t.encoded_shape(shapes.last().map_or(shape, Vec::as_slice)));
        }
        shapes
    }

    /// Whether every codec decodes at hundreds of MB/s or more, so a small chunk may be
    /// decoded without leaving the async task (not nested sharding).
    pub fn decodes_fast(&self) -> bool {
        matches!(self.array_to_bytes, ArrayToBytes::Bytes(_)) && self.bytes_to_bytes.iter().all(|c| c.decodes_fast())
    }

    /// Parses a codec list for chunks of `rank` dimensions holding `data_type`.
    /// `chunk_edges` lists, per dimension, every distinct chunk edge this chain will see,
    /// so that sharding can check its inner chunks divide them.
    pub fn from_json(
        value: &Value,
        data_type: DataType,
        chunk_edges: &[Vec<u64>],
        field: &str,
    ) -> Result<Self, MetadataError> {
        let Value::Array(items) = value else {
            return Err(MetadataError::invalid(field, "expected a list of codecs"));
        };
        let mut edges = chunk_edges.to_vec();
        let mut array_to_array = Vec::new();
        let mut array_to_bytes = None;
        // Filters (v3 array→array numcodecs codecs) decode after the bytes→bytes codecs,
        // as v2 filters do; a numbers codec (pcodec) decodes between them.
        let mut filters: Vec<(BytesToBytes, bool)> = Vec::new();
        let mut numbers = None;
        let mut bytes_to_bytes = Vec::new();
        let mut elements = NumType::of(data_type);
        for item in items {
            let (name, config) = extension_parts(item, field)?;
            let misplaced =
                |kind: &str| MetadataError::invalid(field, &format!("{kind} codec `{name}` is out of order"));
            let stage = Stage { data_type, elements, edges: &edges };
            let codec = match registry::parse_v3(name, config, &stage) {
                Some(codec) => codec?,
                None if item.get("must_understand").and_then(Value::as_bool) == Some(false) => continue,
                None => return Err(MetadataError::Unsupported(format!("codec `{name}`"))),
            };
            match codec {
                Codec::Transpose(t) => {
                    if array_to_bytes.is_some() {
                        return Err(misplaced("array→array"));
                    }
                    // A transpose moves elements under the filters given them before it,
                    // which undo in flat order: only element-by-element ones commute.
                    if filters.iter().any(|&(_, elementwise)| !elementwise) {
                        return Err(MetadataError::Unsupported(format!(
                            "`{name}` after a delta or packbits filter in `{field}`"
                        )));
                    }
                    edges = t.order().iter().map(|&i| edges[i].clone()).collect();
                    array_to_array.push(ArrayToArray::Transpose(t));
                }
                Codec::Filter { codec, encoded, elementwise } => {
                    if array_to_bytes.is_some() {
                        return Err(misplaced("array→array"));
                    }
                    filters.push((codec, elementwise));
                    elements = Some(encoded);
                }
                Codec::Identity if array_to_bytes.is_some() => return Err(misplaced("array→array")),
                Codec::Identity => {}
                Codec::ArrayToBytes(_) | Codec::Numbers(_) if array_to_bytes.is_some() => {
                    return Err(MetadataError::invalid(field, "more than one array→bytes codec"));
                }
                Codec::ArrayToBytes(serializer) => {
                    array_to_bytes = Some(array_to_bytes_codec(serializer, config, data_type, &edges, field)?);
                }
                Codec::Numbers(codec) => {
                    array_to_bytes = Some(ArrayToBytes::Bytes(BytesCodec { big_endian: false }));
                    numbers = Some(codec);
                }
                Codec::BytesToBytes(codec) => {
                    if array_to_bytes.is_none() {
                        return Err(misplaced("bytes→bytes"));
                    }
                    bytes_to_bytes.push(codec);
                }
            }
        }
        let array_to_bytes = array_to_bytes.ok_or_else(|| {
            MetadataError::invalid(field, "no array→bytes codec (`bytes`, `vlen-utf8` or `sharding_indexed`)")
        })?;
        let big_endian = matches!(array_to_bytes, ArrayToBytes::Bytes(BytesCodec { big_endian: true }));
        let bytes_to_bytes: Vec<BytesToBytes> = filters
            .into_iter()
            .map(|(codec, _)| codec.in_byte_order(big_endian))
            .chain(numbers)
            .chain(bytes_to_bytes)
            .collect();
        // Text is read one read-grid chunk at a time (`strings.rs`), through shard indexes;
        // a shard behind other codecs would have to be decoded whole, which only the
        // fixed-size engine does.
        if data_type.is_variable()
            && matches!(array_to_bytes, ArrayToBytes::Sharding(_))
            && !(array_to_array.is_empty() && bytes_to_bytes.is_empty())
        {
            return Err(MetadataError::Unsupported(
                "sharding of a `string` array combined with other codecs at the same level".into(),
            ));
        }
        Ok(Self { array_to_array, array_to_bytes, bytes_to_bytes })
    }

    /// The sharding codec when it is the whole chain, so that inner chunks can be read
    /// by byte range without touching the rest of the shard.
    pub fn sharding(&self) -> Option<&ShardingCodec> {
        match &self.array_to_bytes {
            ArrayToBytes::Sharding(s) if self.array_to_array.is_empty() && self.bytes_to_bytes.is_empty() => Some(s),
            _ => None,
        }
    }

    /// The shape the array→bytes codec sees for a chunk of `shape`.
    fn encoded_shape(&self, shape: &[u64]) -> Vec<u64> {
        self.array_to_array.iter().fold(shape.to_vec(), |s, c| match c {
            ArrayToArray::Transpose(t) => t.encoded_shape(&s),
        })
    }

    /// The encoded size of a chunk of `shape`, when no codec in the chain compresses and
    /// the size fits in a u64 (shapes come from stored metadata: never trust a product).
    pub fn fixed_encoded_size(&self, shape: &[u64], data_type: DataType) -> Option<u64> {
        let ArrayToBytes::Bytes(_) = self.array_to_bytes else {
            return None;
        };
        let len = element_count(shape)?.checked_mul(data_type.size() as u64)?;
        self.bytes_to_bytes.iter().try_fold(len, |len, c| c.fixed_encoded_size(len))
    }

    /// Decodes one chunk of declared `shape` into little-endian C-order elements.
    /// `fill` is the fill value, needed for empty inner chunks of a shard.
    pub fn decode(
        &self,
        encoded: &[u8],
        shape: &[u64],
        data_type: DataType,
        fill: &[u8],
    ) -> Result<Vec<u8>, CodecError> {
        let bytes = element_count(shape).map_or(u128::MAX, |n| u128::from(n) * data_type.size() as u128);
        if bytes > MAX_DECODED_CHUNK_BYTES as u128 {
            return Err(CodecError::ChunkTooLarge { bytes, limit: MAX_DECODED_CHUNK_BYTES });
        }
        let decoded_len = bytes as usize;
        let encoded_shape = self.encoded_shape(shape);
        // The array→bytes input size: exact for `bytes`; for a shard, generously bounded by
        // the decoded size plus index and per-chunk overhead so corrupt data cannot balloon.
        let bytes_len = match &self.array_to_bytes {
            ArrayToBytes::Bytes(_) => decoded_len,
            ArrayToBytes::Sharding(_) => decoded_len.saturating_mul(2).saturating_add(1 << 20),
            ArrayToBytes::VlenUtf8 | ArrayToBytes::VlenBytes => {
                return Err(CodecError::corrupt("vlen-utf8", "text decodes through the string path"));
            }
        };
        // What each bytes→bytes codec may decode to: the one nearest the array→bytes codec
        // knows its exact output size, fixed-size filters carry it on, and compressors
        // further out can add at most a little framing (checksums).
        let owned = self.decode_bytes_stages(encoded, bytes_len)?;
        let mut array = match &self.array_to_bytes {
            // The last bytes→bytes output (or a copy of the stored bytes) becomes the array.
            ArrayToBytes::Bytes(b) => b.decode(owned.unwrap_or_else(|| encoded.to_vec()), &encoded_shape, data_type)?,
            ArrayToBytes::Sharding(s) => {
                s.decode(owned.as_deref().unwrap_or(encoded), &encoded_shape, data_type, fill)?
            }
            ArrayToBytes::VlenUtf8 | ArrayToBytes::VlenBytes => Vec::new(),
        };

        for (c, decoded_shape) in self.array_to_array.iter().zip(&self.decoded_shapes(shape)).rev() {
            let ArrayToArray::Transpose(t) = c;
            array = t.decode(&array, decoded_shape, data_type.size());
        }
        Ok(array)
    }
}

impl CodecChain {
    /// Decodes a chunk of `shape` straight into `out`, which is exactly its decoded size.
    /// The common chain — little-endian `bytes` and at most one `zstd` — decompresses into
    /// `out` with no buffer in between (no allocation, no page faults on fresh memory, no
    /// copy); any other chain decodes the general way and copies.
    pub fn decode_into(
        &self,
        encoded: &[u8],
        shape: &[u64],
        data_type: DataType,
        fill: &[u8],
        out: &mut [u8],
    ) -> Result<(), CodecError> {
        let expected = element_count(shape).map(|n| u128::from(n) * data_type.size() as u128);
        if expected != Some(out.len() as u128) {
            return Err(CodecError::corrupt(
                "bytes",
                format!("{} bytes of room for a chunk of shape {shape:?}", out.len()),
            ));
        }
        if self.array_to_array.is_empty()
            && let ArrayToBytes::Bytes(b) = &self.array_to_bytes
            && (!b.big_endian || data_type.swap_unit() == 1)
        {
            match self.bytes_to_bytes.as_slice() {
                [] if encoded.len() == out.len() => {
                    out.copy_from_slice(encoded);
                    return Ok(());
                }
                [BytesToBytes::Zstd] if zstd::decode_into(encoded, out)? => return Ok(()),
                _ => {}
            }
        }
        let data = self.decode(encoded, shape, data_type, fill)?;
        if data.len() != out.len() {
            return Err(CodecError::corrupt(
                "bytes",
                format!("{} bytes decoded for {} bytes of room", data.len(), out.len()),
            ));
        }
        out.copy_from_slice(&data);
        Ok(())
    }

    /// What the bytes→bytes codecs of this chain say `encoded` decodes to, when the
    /// outermost compressor records it (zstd's frame content size, gzip's ISIZE, blosc's
    /// header, numcodecs lz4's prefix; crc32c only strips its 4 bytes) and no second
    /// compressor hides the innermost size. A lying header only makes decoding fail: the
    /// decoders never produce more than the bound they are given.
    pub fn declared_decoded_len(&self, encoded: &[u8]) -> Option<u64> {
        let mut codecs = self.bytes_to_bytes.as_slice();
        let mut input = encoded;
        while let [rest @ .., BytesToBytes::Checksum(c)] = codecs {
            input = if c.at_end { input.get(..input.len().checked_sub(4)?)? } else { input.get(4..)? };
            codecs = rest;
        }
        let le32 = |b: &[u8]| -> Option<u64> { Some(u64::from(u32::from_le_bytes(b.try_into().ok()?))) };
        match codecs {
            [] => Some(input.len() as u64),
            [BytesToBytes::Zstd] => ::zstd::zstd_safe::get_frame_content_size(input).ok().flatten(),
            [BytesToBytes::Gzip] => le32(input.get(input.len().checked_sub(4)?..)?),
            [BytesToBytes::Blosc] => le32(input.get(4..8)?),
            [BytesToBytes::Lz4] => le32(input.get(..4)?),
            _ => None,
        }
    }

    /// Decodes one chunk of text of declared `shape`: the bytes→bytes codecs (each capped
    /// near `max_len`, the most the framed text may take), the `vlen-utf8` framing, then
    /// Undoes the bytes→bytes codecs, outermost first, each bounded by what the next one
    /// (or the array→bytes codec, whose output is at most `bytes_len`) may take; `None`
    /// when there are none and the stored bytes are the array→bytes input.
    fn decode_bytes_stages(&self, encoded: &[u8], bytes_len: usize) -> Result<Option<Vec<u8>>, CodecError> {
        let mut bound = bytes_len;
        let bounds: Vec<usize> = self
            .bytes_to_bytes
            .iter()
            .map(|c| {
                let own = bound;
                bound = c.encoded_bound(bound);
                own
            })
            .collect();
        let mut owned: Option<Vec<u8>> = None;
        for (codec, &max_len) in self.bytes_to_bytes.iter().zip(&bounds).rev() {
            let input = owned.as_deref().unwrap_or(encoded);
            owned = Some(codec.decode(input, max_len)?);
        }
        Ok(owned)
    }

    /// any `transpose` applied to the element order.
    pub fn decode_strings(&self, encoded: &[u8], shape: &[u64], max_len: usize) -> Result<VlenStrings, CodecError> {
        let utf8 = match self.array_to_bytes {
            ArrayToBytes::VlenUtf8 => true,
            ArrayToBytes::VlenBytes => false,
            _ => return Err(CodecError::corrupt("vlen-utf8", "this chain does not decode text")),
        };
        let elements = element_count(shape).ok_or(CodecError::ChunkTooLarge { bytes: u128::MAX, limit: max_len })?;
        let owned = self.decode_bytes_stages(encoded, max_len)?;
        let framed = match owned {
            Some(bytes) => bytes,
            None if encoded.len() > max_len => return Err(CodecError::TooLarge { codec: "vlen-utf8", limit: max_len }),
            None => encoded.to_vec(),
        };
        let mut strings = vlen::decode_framed(framed, elements, utf8)?;
        // A transpose permutes elements: move the (start, end) spans as 8-byte items.
        for (c, decoded_shape) in self.array_to_array.iter().zip(&self.decoded_shapes(shape)).rev() {
            let ArrayToArray::Transpose(t) = c;
            let packed: Vec<u8> =
                strings.spans.iter().flat_map(|&(a, b)| (u64::from(a) | (u64::from(b) << 32)).to_le_bytes()).collect();
            let moved = t.decode(&packed, decoded_shape, 8);
            strings.spans = moved
                .chunks_exact(8)
                .map(|b| {
                    let v = u64::from_le_bytes(b.try_into().unwrap_or_default());
                    (v as u32, (v >> 32) as u32)
                })
                .collect();
        }
        Ok(strings)
    }
}

/// The array→bytes codec `serializer` names, checked against the data type: text has no
/// fixed-size layout for `bytes`; `vlen-utf8` frames text only and `vlen-bytes` bytes only.
fn array_to_bytes_codec(
    serializer: Serializer,
    config: Option<&serde_json::Map<String, Value>>,
    data_type: DataType,
    edges: &[Vec<u64>],
    field: &str,
) -> Result<ArrayToBytes, MetadataError> {
    let codec = match serializer {
        Serializer::Bytes(b) => ArrayToBytes::Bytes(b),
        Serializer::Sharding => ArrayToBytes::Sharding(Box::new(ShardingCodec::from_config(config, data_type, edges)?)),
        Serializer::VlenUtf8 => ArrayToBytes::VlenUtf8,
        Serializer::VlenBytes => ArrayToBytes::VlenBytes,
    };
    let vlen = if data_type == DataType::Bytes { "vlen-bytes" } else { "vlen-utf8" };
    let framing = match codec {
        ArrayToBytes::VlenUtf8 => Some(("vlen-utf8", DataType::String)),
        ArrayToBytes::VlenBytes => Some(("vlen-bytes", DataType::Bytes)),
        _ => None,
    };
    match (framing, data_type.is_variable()) {
        (None, true) if matches!(codec, ArrayToBytes::Bytes(_)) => {
            return Err(MetadataError::invalid(
                field,
                &format!("the `{}` data type needs the `{vlen}` codec, not `bytes`", data_type.name()),
            ));
        }
        (Some((name, encodes)), _) if encodes != data_type => {
            return Err(MetadataError::invalid(
                field,
                &format!("`{name}` encodes `{}`, not `{}`", encodes.name(), data_type.name()),
            ));
        }
        _ => {}
    }
    Ok(codec)
}

impl Chain for CodecChain {
    fn parse(value: &Value, data_type: DataType, chunk_edges: &[Vec<u64>], field: &str) -> Result<Self, MetadataError> {
        Self::from_json(value, data_type, chunk_edges, field)
    }

    fn fixed_encoded_size(&self, shape: &[u64], data_type: DataType) -> Option<u64> {
        Self::fixed_encoded_size(self, shape, data_type)
    }

    fn decode(&self, encoded: &[u8], shape: &[u64], data_type: DataType, fill: &[u8]) -> Result<Vec<u8>, CodecError> {
        Self::decode(self, encoded, shape, data_type, fill)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chain_order_is_enforced() {
        let edges = vec![vec![4]];
        let parse = |v: Value| CodecChain::from_json(&v, DataType::Int32, &edges, "codecs");
        assert!(parse(json!([{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"])).is_ok());
        assert!(parse(json!([{"name": "zstd", "configuration": {"level": 1}}, {"name": "bytes"}])).is_err());
        assert!(parse(json!([{"name": "bytes"}, {"name": "transpose", "configuration": {"order": [0]}}])).is_err());
        assert!(parse(json!([{"name": "bytes"}, {"name": "bytes"}])).is_err());
        assert!(parse(json!([{"name": "zstd"}])).is_err());
        assert!(parse(json!([])).is_err());
        let unknown = parse(json!([{"name": "numcodecs.zfpy", "configuration": {"mode": 4}}])).unwrap_err();
        assert!(matches!(unknown, MetadataError::Unsupported(ref s) if s.contains("zfpy")), "{unknown}");
        let skipped = parse(json!([{"name": "bytes"}, {"name": "no-such-codec", "must_understand": false}])).unwrap();
        assert!(skipped.bytes_to_bytes.is_empty());
    }

    #[test]
    fn only_fast_codecs_decode_on_the_async_task() {
        let edges = vec![vec![4]];
        let fast = |v: Value| CodecChain::from_json(&v, DataType::Int32, &edges, "codecs").unwrap().decodes_fast();
        let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
        assert!(fast(json!([bytes, {"name": "zstd", "configuration": {"level": 3}}, "crc32c"])));
        assert!(fast(json!([{"name": "transpose", "configuration": {"order": [0]}}, bytes])));
        for slow in [
            json!({"name": "gzip", "configuration": {"level": 5}}),
            json!({"name": "blosc", "configuration": {"cname": "zlib", "clevel": 5, "shuffle": "noshuffle", "typesize": 4, "blocksize": 0}}),
        ] {
            assert!(!fast(json!([bytes, {"name": "zstd", "configuration": {"level": 3}}, slow])), "{slow}");
        }
        let sharded = json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": [bytes], "index_codecs": [bytes, "crc32c"]}}]);
        assert!(!fast(sharded));
    }

    #[test]
    fn decodes_transpose_bytes_gzip_crc() {
        // A 2x3 int16 chunk stored transposed (3x2), big-endian, gzip, crc32c.
        use std::io::Write;
        let logical: [i16; 6] = [1, 2, 3, 4, 5, 6];
        let transposed = [1i16, 4, 2, 5, 3, 6];
        let raw: Vec<u8> = transposed.iter().flat_map(|v| v.to_be_bytes()).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&raw).unwrap();
        let mut stored = gz.finish().unwrap();
        stored.extend(::crc32c::crc32c(&stored).to_le_bytes());
        let chain = CodecChain::from_json(
            &json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}, {"name": "gzip", "configuration": {"level": 5}}, {"name": "crc32c"}]),
            DataType::Int16,
            &[vec![2], vec![3]],
            "codecs",
        )
        .unwrap();
        let out = chain.decode(&stored, &[2, 3], DataType::Int16, &[0, 0]).unwrap();
        let expected: Vec<u8> = logical.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(out, expected);
        assert_eq!(chain.fixed_encoded_size(&[2, 3], DataType::Int16), None);
        let last = stored.len() - 1;
        stored[last] ^= 1;
        assert!(matches!(chain.decode(&stored, &[2, 3], DataType::Int16, &[0, 0]), Err(CodecError::Checksum { .. })));
    }

    #[test]
    fn decodes_text_through_transpose_gzip_crc() {
        // A 2x3 chunk of text stored transposed (3x2): the framing lists elements in the
        // stored order. The expected layout is the one in ZARR_FORMAT.md (`vlen-utf8`).
        use std::io::Write;
        let logical = ["a", "", "déf", "x", "yz", "🦀"];
        let stored_order = [0, 3, 1, 4, 2, 5];
        let mut framed = 6u32.to_le_bytes().to_vec();
        for i in stored_order {
            framed.extend((logical[i].len() as u32).to_le_bytes());
            framed.extend(logical[i].as_bytes());
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&framed).unwrap();
        let mut stored = gz.finish().unwrap();
        stored.extend(::crc32c::crc32c(&stored).to_le_bytes());
        let chain = CodecChain::from_json(
            &json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "vlen-utf8", "configuration": {}}, {"name": "gzip", "configuration": {"level": 5}}, {"name": "crc32c"}]),
            DataType::String,
            &[vec![2], vec![3]],
            "codecs",
        )
        .unwrap();
        assert_eq!(chain.declared_decoded_len(&stored), Some(framed.len() as u64));
        let text = chain.decode_strings(&stored, &[2, 3], framed.len()).unwrap();
        assert_eq!((0..6).map(|i| text.get(i)).collect::<Vec<_>>(), logical);
        // One byte short of the recorded size is a decoder error, not a bigger buffer.
        assert!(chain.decode_strings(&stored, &[2, 3], framed.len() - 1).is_err());
        // The fixed-size engine refuses text instead of misreading it.
        assert!(chain.decode(&stored, &[2, 3], DataType::String, &[]).is_err());
    }

    #[test]
    fn text_codecs_match_the_data_type() {
        let parse = |v: Value, t: DataType| CodecChain::from_json(&v, t, &[vec![4]], "codecs");
        assert!(parse(json!([{"name": "vlen-utf8"}]), DataType::String).is_ok());
        assert!(parse(json!([{"name": "bytes"}]), DataType::String).is_err());
        assert!(parse(json!([{"name": "vlen-utf8"}]), DataType::Int32).is_err());
        let shard = json!({"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
            "codecs": [{"name": "vlen-utf8"}], "index_codecs": [{"name": "bytes"}], "index_location": "end"}});
        assert!(parse(json!([shard.clone()]), DataType::String).is_ok());
        let hidden = parse(json!([shard, {"name": "zstd"}]), DataType::String).unwrap_err();
        assert!(matches!(hidden, MetadataError::Unsupported(_)), "{hidden}");
    }
}
