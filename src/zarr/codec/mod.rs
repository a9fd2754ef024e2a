//! The codec pipeline (core spec "Codecs"): zero or more array→array codecs, exactly one
//! array→bytes codec, then zero or more bytes→bytes codecs; decoding runs them in reverse.
//!
//! The set of codecs is a closed enum: adding one is a file here and a variant below, and
//! the exhaustive `match`es show what else needs it.

mod astype;
mod blosc;
mod bytes;
mod bz2;
mod crc32c;
mod delta;
mod fixedscaleoffset;
mod gzip;
mod lz4;
mod lzma;
pub mod numeric;
pub mod sharding;
mod shuffle;
mod transpose;
pub mod vlen;
mod zlib;
mod zstd;

use std::io::Read;

use serde_json::Value;

use self::astype::AsType;
pub use self::bytes::BytesCodec;
use self::fixedscaleoffset::FixedScaleOffset;
use self::lzma::LzmaFormat;
use self::numeric::NumType;
pub use self::sharding::{IndexLocation, InnerChunk, ShardIndex, ShardingCodec};
pub use self::transpose::Transpose;
pub use self::vlen::VlenStrings;
use super::data_type::DataType;
use super::metadata::{MetadataError, extension_parts};

/// A failure to decode stored bytes: the data is corrupt or not what the metadata says.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("crc32c checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("{codec}: {detail}")]
    Corrupt { codec: &'static str, detail: String },
    #[error("{codec}: decoded data exceeds the expected {limit} bytes")]
    TooLarge { codec: &'static str, limit: usize },
    #[error("a chunk of {bytes} bytes decoded is larger than the {limit} bytes this server decodes at once")]
    ChunkTooLarge { bytes: u128, limit: usize },
    #[error("a shard of {entries} inner chunks has a larger index than the {limit} entries this server reads")]
    IndexTooLarge { entries: u128, limit: u64 },
}

/// The largest chunk (or shard, when it must be decoded whole) decoded in one piece:
/// metadata is untrusted, and a chunk shape must not make the server allocate without
/// bound.
pub const MAX_DECODED_CHUNK_BYTES: usize = 1 << 30;

/// The elements in a chunk of `shape`: 0 when any edge is 0 (whatever the others), `None`
/// when the count overflows. Shapes come from stored metadata and shard indexes, so a
/// plain product could overflow (a panic in debug builds, a wrong size in release ones).
pub fn element_count(shape: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
}

impl CodecError {
    pub(crate) fn corrupt(codec: &'static str, detail: impl Into<String>) -> Self {
        Self::Corrupt { codec, detail: detail.into() }
    }
}

/// Reads a decompressing stream to its end, failing once it yields more than `max_len`
/// bytes, so corrupt or hostile input cannot allocate without bound.
pub(crate) fn read_capped(
    reader: impl std::io::Read,
    max_len: usize,
    codec: &'static str,
) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(max_len.min(1 << 26));
    std::io::Read::take(reader, max_len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CodecError::corrupt(codec, e.to_string()))?;
    if out.len() > max_len {
        return Err(CodecError::TooLarge { codec, limit: max_len });
    }
    Ok(out)
}

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
}

/// The bytes→bytes codecs: the v3 ones, and the numcodecs compressors and filters of Zarr
/// v2 (a v2 filter works on the chunk's flat buffer in its stored element type, so it sits
/// after the `bytes` codec like a compressor does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesToBytes {
    Zstd,
    Gzip,
    Blosc,
    Crc32c,
    Zlib,
    Lz4,
    Bz2,
    Lzma(LzmaFormat),
    Shuffle { elementsize: usize },
    Delta(NumType),
    FixedScaleOffset(FixedScaleOffset),
    AsType(AsType),
}

impl BytesToBytes {
    fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            Self::Zstd => zstd::decode(input, max_len),
            Self::Gzip => gzip::decode(input, max_len),
            Self::Blosc => blosc::decode(input, max_len),
            Self::Crc32c => crc32c::decode(input).map(<[u8]>::to_vec),
            Self::Zlib => zlib::decode(input, max_len),
            Self::Lz4 => lz4::decode(input, max_len),
            Self::Bz2 => bz2::decode(input, max_len),
            Self::Lzma(format) => lzma::decode(input, max_len, format),
            Self::Shuffle { elementsize } => shuffle::decode(input, max_len, elementsize),
            Self::Delta(ty) => delta::decode(input, max_len, ty),
            Self::FixedScaleOffset(f) => f.decode(input, max_len),
            Self::AsType(a) => a.decode(input, max_len),
        }
    }

    /// The largest encoded size for `len` input bytes, if it is fixed.
    fn fixed_encoded_size(self, len: u64) -> Option<u64> {
        match self {
            Self::Crc32c => len.checked_add(4),
            Self::Shuffle { .. } | Self::Delta(_) => Some(len),
            Self::FixedScaleOffset(f) => (len / f.dtype.size as u64).checked_mul(f.astype.size as u64),
            Self::AsType(a) => (len / a.decode.size as u64).checked_mul(a.encode.size as u64),
            Self::Zstd | Self::Gzip | Self::Blosc | Self::Zlib | Self::Lz4 | Self::Bz2 | Self::Lzma(_) => None,
        }
    }

    /// A bound on what this codec's decoder may output, given a bound on what the codec
    /// after it (nearer the stored bytes) decodes to: exact for the fixed-size filters;
    /// for the others a little framing (checksums) on top.
    fn encoded_bound(self, decoded_bound: usize) -> usize {
        match self.fixed_encoded_size(decoded_bound as u64) {
            Some(n) if !matches!(self, Self::Crc32c) => n as usize,
            _ => decoded_bound.saturating_add(64),
        }
    }

    /// A numcodecs compressor or filter configuration (`{"id": ..., ...}`) of a Zarr v2
    /// array whose stored elements are `dtype`.
    pub fn from_numcodecs(config: &serde_json::Map<String, Value>, dtype: NumType) -> Result<Self, MetadataError> {
        let Some(Value::String(id)) = config.get("id") else {
            return Err(MetadataError::invalid("compressor", "a numcodecs configuration without a string `id`"));
        };
        Ok(match id.as_str() {
            // Decoding needs only what the streams themselves carry.
            "zstd" => Self::Zstd,
            "gzip" => Self::Gzip,
            "blosc" => Self::Blosc,
            "zlib" => Self::Zlib,
            "lz4" => Self::Lz4,
            "bz2" => Self::Bz2,
            "lzma" => Self::Lzma(LzmaFormat::from_config(config)?),
            "shuffle" => Self::Shuffle {
                elementsize: match config.get("elementsize") {
                    None | Some(Value::Null) => 4,
                    Some(v) => v.as_u64().filter(|&n| (1..=1 << 16).contains(&n)).ok_or_else(|| {
                        MetadataError::invalid(
                            "filters",
                            &format!("shuffle `elementsize` {v} is not a small positive integer"),
                        )
                    })? as usize,
                },
            },
            "delta" => Self::Delta(delta::from_config(config, dtype)?),
            "fixedscaleoffset" => Self::FixedScaleOffset(FixedScaleOffset::from_config(config, dtype)?),
            "astype" => Self::AsType(AsType::from_config(config, dtype)?),
            other => return Err(MetadataError::Unsupported(format!("numcodecs codec `{other}`"))),
        })
    }
}

/// A parsed `codecs` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecChain {
    pub array_to_array: Vec<ArrayToArray>,
    pub array_to_bytes: ArrayToBytes,
    pub bytes_to_bytes: Vec<BytesToBytes>,
}

impl CodecChain {
    /// Whether every codec decodes at hundreds of MB/s or more, so a small chunk may be
    /// decoded without leaving the async task. Not gzip, zlib, bz2 or lzma (tens of MB/s),
    /// not blosc (its inner compressor may be zlib), not nested sharding.
    pub fn decodes_fast(&self) -> bool {
        matches!(self.array_to_bytes, ArrayToBytes::Bytes(_))
            && self.bytes_to_bytes.iter().all(|codec| {
                matches!(
                    codec,
                    BytesToBytes::Zstd
                        | BytesToBytes::Crc32c
                        | BytesToBytes::Lz4
                        | BytesToBytes::Shuffle { .. }
                        | BytesToBytes::Delta(_)
                        | BytesToBytes::FixedScaleOffset(_)
                        | BytesToBytes::AsType(_)
                )
            })
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
        let rank = chunk_edges.len();
        let mut edges = chunk_edges.to_vec();
        let mut array_to_array = Vec::new();
        let mut array_to_bytes = None;
        let mut bytes_to_bytes = Vec::new();
        for item in items {
            let (name, config) = extension_parts(item, field)?;
            let misplaced =
                |kind: &str| MetadataError::invalid(field, &format!("{kind} codec `{name}` is out of order"));
            match name {
                "transpose" => {
                    if array_to_bytes.is_some() {
                        return Err(misplaced("array→array"));
                    }
                    let t = Transpose::from_config(config, rank)?;
                    edges = t.order().iter().map(|&i| edges[i].clone()).collect();
                    array_to_array.push(ArrayToArray::Transpose(t));
                }
                "bytes" | "sharding_indexed" | "vlen-utf8" => {
                    if array_to_bytes.is_some() {
                        return Err(MetadataError::invalid(field, "more than one array→bytes codec"));
                    }
                    // Text has no fixed-size layout for `bytes`, and `vlen-utf8` frames text only.
                    match (name, data_type.is_variable()) {
                        ("bytes", true) => {
                            return Err(MetadataError::invalid(
                                field,
                                "the `string` data type needs the `vlen-utf8` codec, not `bytes`",
                            ));
                        }
                        ("vlen-utf8", false) => {
                            return Err(MetadataError::invalid(
                                field,
                                &format!("`vlen-utf8` encodes the `string` data type, not `{}`", data_type.name()),
                            ));
                        }
                        _ => {}
                    }
                    array_to_bytes = Some(match name {
                        "bytes" => ArrayToBytes::Bytes(BytesCodec::from_config(config, data_type)?),
                        "vlen-utf8" => ArrayToBytes::VlenUtf8,
                        _ => ArrayToBytes::Sharding(Box::new(ShardingCodec::from_config(config, data_type, &edges)?)),
                    });
                }
                "zstd" | "gzip" | "blosc" | "crc32c" => {
                    if array_to_bytes.is_none() {
                        return Err(misplaced("bytes→bytes"));
                    }
                    bytes_to_bytes.push(match name {
                        "zstd" => BytesToBytes::Zstd,
                        "gzip" => BytesToBytes::Gzip,
                        "blosc" => BytesToBytes::Blosc,
                        _ => BytesToBytes::Crc32c,
                    });
                }
                other => {
                    let optional = item.get("must_understand").and_then(Value::as_bool) == Some(false);
                    if !optional {
                        return Err(MetadataError::Unsupported(format!("codec `{other}`")));
                    }
                }
            }
        }
        let array_to_bytes = array_to_bytes.ok_or_else(|| {
            MetadataError::invalid(field, "no array→bytes codec (`bytes`, `vlen-utf8` or `sharding_indexed`)")
        })?;
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
            ArrayToBytes::VlenUtf8 => {
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
            ArrayToBytes::VlenUtf8 => Vec::new(),
        };

        let mut shapes = vec![shape.to_vec()];
        for c in &self.array_to_array {
            let ArrayToArray::Transpose(t) = c;
            shapes.push(t.encoded_shape(shapes.last().map_or(shape, Vec::as_slice)));
        }
        for (c, decoded_shape) in self.array_to_array.iter().zip(&shapes).rev() {
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
        while let [rest @ .., BytesToBytes::Crc32c] = codecs {
            input = input.get(..input.len().checked_sub(4)?)?;
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
        let ArrayToBytes::VlenUtf8 = self.array_to_bytes else {
            return Err(CodecError::corrupt("vlen-utf8", "this chain does not decode text"));
        };
        let elements = element_count(shape).ok_or(CodecError::ChunkTooLarge { bytes: u128::MAX, limit: max_len })?;
        let owned = self.decode_bytes_stages(encoded, max_len)?;
        let framed = match owned {
            Some(bytes) => bytes,
            None if encoded.len() > max_len => return Err(CodecError::TooLarge { codec: "vlen-utf8", limit: max_len }),
            None => encoded.to_vec(),
        };
        let mut strings = vlen::decode(framed, elements)?;
        // A transpose permutes elements: move the (start, end) spans as 8-byte items.
        let mut shapes = vec![shape.to_vec()];
        for c in &self.array_to_array {
            let ArrayToArray::Transpose(t) = c;
            shapes.push(t.encoded_shape(shapes.last().map_or(shape, Vec::as_slice)));
        }
        for (c, decoded_shape) in self.array_to_array.iter().zip(&shapes).rev() {
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
        let unknown = parse(json!([{"name": "bytes"}, {"name": "bitround", "configuration": {}}])).unwrap_err();
        assert!(matches!(unknown, MetadataError::Unsupported(ref s) if s.contains("bitround")), "{unknown}");
        let skipped = parse(json!([{"name": "bytes"}, {"name": "bitround", "must_understand": false}])).unwrap();
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
