//! The `sharding_indexed` codec (array→bytes), spec v1.0:
//! <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/index.html>.
//!
//! A shard holds inner chunks plus an index of `(offset, nbytes)` pairs at its start or
//! end. The read path fetches the index by a prefix or suffix range and then only the
//! inner chunks it needs; [`Sharding::decode`] decodes a whole shard for nested sharding
//! and for chains where byte ranges cannot be used.
//!
//! The codec is generic over the chains it nests ([`Chain`]; zarrd's is `CodecChain`, whose
//! alias `ShardingCodec` the rest of the code uses): the chain names this codec among its
//! array→bytes codecs, so this module names no chain, and the two modules import no cycle.
//! The number of inner chunks is computed per shard, since rectilinear shards differ.

use serde_json::{Map, Value};

use crate::zarr::codec::error::{CodecError, element_count};
use crate::zarr::copy::{Region, copy_region, filled};
use crate::zarr::data_type::DataType;
use crate::zarr::json::{MetadataError, u64_list};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexLocation {
    Start,
    End,
}

impl IndexLocation {
    pub fn name(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::End => "end",
        }
    }
}

/// What the sharding codec needs of the chains it nests (the inner chunks' and the
/// index's): parsing, a fixed encoded size, decoding.
pub trait Chain: Sized {
    /// Parses a codec list for chunks holding `data_type` with the given distinct edges.
    fn parse(value: &Value, data_type: DataType, chunk_edges: &[Vec<u64>], field: &str) -> Result<Self, MetadataError>;
    /// The encoded size of a chunk of `shape`, when the chain fixes it.
    fn fixed_encoded_size(&self, shape: &[u64], data_type: DataType) -> Option<u64>;
    /// Decodes one chunk of `shape`.
    fn decode(&self, encoded: &[u8], shape: &[u64], data_type: DataType, fill: &[u8]) -> Result<Vec<u8>, CodecError>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharding<C> {
    pub chunk_shape: Vec<u64>,
    pub codecs: C,
    pub index_codecs: C,
    pub index_location: IndexLocation,
}

/// Where an inner chunk is in its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InnerChunk {
    /// Never written: every element is the fill value.
    Empty,
    Stored {
        offset: u64,
        nbytes: u64,
    },
}

/// A decoded, validated shard index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardIndex {
    /// Inner chunks per dimension of this shard.
    pub chunks_per_shard: Vec<u64>,
    entries: Vec<InnerChunk>,
    /// The size of the shard object the index was read from.
    pub shard_len: u64,
    /// The shard object's `ETag` when the store reports one, to detect a rewrite.
    pub e_tag: Option<String>,
    /// Identifies the shard object's version (see `store::object_version`).
    pub version: String,
}

impl ShardIndex {
    /// The C-order position of inner chunk `coords` (per dimension, within the shard).
    pub fn linear(&self, coords: &[u64]) -> usize {
        coords.iter().zip(&self.chunks_per_shard).fold(0u64, |acc, (&c, &n)| acc * n + c) as usize
    }

    /// Inner chunk `linear` (C order within the shard).
    pub fn chunk(&self, linear: usize) -> InnerChunk {
        self.entries[linear]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Approximate memory held, for cache weighing.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.entries.len() * std::mem::size_of::<InnerChunk>()
            + self.chunks_per_shard.len() * 8
    }
}

/// The most inner chunks a shard may have (its index is 16 bytes per inner chunk).
pub const MAX_INNER_CHUNKS: u64 = 1 << 22;

impl<C: Chain> Sharding<C> {
    /// `shard_edges` lists every distinct shard edge per dimension; each must be a multiple
    /// of the inner chunk edge (sharding v1.0; zarr-specs #370 would lift this).
    pub fn from_config(
        config: Option<&Map<String, Value>>,
        data_type: DataType,
        shard_edges: &[Vec<u64>],
    ) -> Result<Self, MetadataError> {
        let field = "sharding_indexed";
        let config = config.ok_or_else(|| MetadataError::invalid(field, "missing configuration"))?;
        let chunk_shape = u64_list(config.get("chunk_shape"), "sharding_indexed.chunk_shape")?;
        if chunk_shape.len() != shard_edges.len() {
            return Err(MetadataError::invalid(
                field,
                &format!("chunk_shape has {} dimensions but the array has {}", chunk_shape.len(), shard_edges.len()),
            ));
        }
        for (d, (&inner, edges)) in chunk_shape.iter().zip(shard_edges).enumerate() {
            if inner == 0 {
                return Err(MetadataError::invalid(field, &format!("inner chunk edge 0 in dimension {d}")));
            }
            if let Some(bad) = edges.iter().find(|&&e| e % inner != 0) {
                return Err(MetadataError::Unsupported(format!(
                    "sharding with inner chunk edge {inner} that does not divide shard edge {bad} in dimension {d}"
                )));
            }
        }
        let inner_edges: Vec<Vec<u64>> = chunk_shape.iter().map(|&e| vec![e]).collect();
        let codecs =
            C::parse(config.get("codecs").unwrap_or(&Value::Null), data_type, &inner_edges, "sharding_indexed.codecs")?;
        let index_edges = vec![Vec::new(); chunk_shape.len() + 1];
        let index_codecs = C::parse(
            config.get("index_codecs").unwrap_or(&Value::Null),
            DataType::UInt64,
            &index_edges,
            "sharding_indexed.index_codecs",
        )?;
        if index_codecs.fixed_encoded_size(&[1, 2], DataType::UInt64).is_none() {
            return Err(MetadataError::invalid(field, "index_codecs must have a fixed encoded size (no compression)"));
        }
        // The index of the largest shard must be decodable: its size is a product of
        // stored numbers, which must not overflow (or wrap, in release builds) later.
        let mut largest: Vec<u64> =
            chunk_shape.iter().zip(shard_edges).map(|(&c, edges)| edges.iter().max().map_or(0, |&e| e / c)).collect();
        largest.push(2);
        let entries = largest.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).map(|n| n / 2);
        if entries.is_none_or(|n| n > MAX_INNER_CHUNKS) {
            return Err(MetadataError::Unsupported(format!(
                "sharding with {:?} inner chunks per shard: this server reads shards of at most {MAX_INNER_CHUNKS} inner chunks (a 64 MiB index)",
                &largest[..largest.len() - 1]
            )));
        }
        let index_location = match config.get("index_location") {
            None => IndexLocation::End,
            Some(Value::String(s)) if s == "end" => IndexLocation::End,
            Some(Value::String(s)) if s == "start" => IndexLocation::Start,
            Some(other) => {
                return Err(MetadataError::invalid(
                    field,
                    &format!("index_location {other} is not \"start\" or \"end\""),
                ));
            }
        };
        Ok(Self { chunk_shape, codecs, index_codecs, index_location })
    }

    /// Inner chunks per dimension in a shard of `shard_shape`. Metadata is untrusted: a
    /// shard with more than [`MAX_INNER_CHUNKS`] inner chunks (an index of 64 MiB) is
    /// refused before its index is read or allocated.
    pub fn chunks_per_shard(&self, shard_shape: &[u64]) -> Result<Vec<u64>, CodecError> {
        let cps: Vec<u64> = shard_shape
            .iter()
            .zip(&self.chunk_shape)
            .map(|(&s, &c)| {
                if s % c == 0 {
                    Ok(s / c)
                } else {
                    Err(CodecError::corrupt(
                        "sharding_indexed",
                        format!("shard edge {s} is not a multiple of the inner chunk edge {c}"),
                    ))
                }
            })
            .collect::<Result<_, _>>()?;
        let entries: u128 = cps.iter().map(|&n| u128::from(n)).product();
        if entries > u128::from(MAX_INNER_CHUNKS) {
            return Err(CodecError::IndexTooLarge { entries, limit: MAX_INNER_CHUNKS });
        }
        Ok(cps)
    }

    /// The encoded index size for `n` inner chunks (16·n + 4 with the usual codecs).
    pub fn index_size(&self, chunks_per_shard: &[u64]) -> u64 {
        let mut shape = chunks_per_shard.to_vec();
        shape.push(2);
        // Checked at parse time to be fixed and, for the array's own shards, to fit; a size
        // that overflows is larger than any shard, so reading it fails as "too short".
        self.index_codecs.fixed_encoded_size(&shape, DataType::UInt64).unwrap_or(u64::MAX)
    }

    /// Decodes and validates an encoded index read from a shard of `shard_len` bytes.
    pub fn decode_index(
        &self,
        encoded: &[u8],
        chunks_per_shard: &[u64],
        shard_len: u64,
    ) -> Result<ShardIndex, CodecError> {
        let mut shape = chunks_per_shard.to_vec();
        shape.push(2);
        let raw = self.index_codecs.decode(encoded, &shape, DataType::UInt64, &[0; 8])?;
        let words: Vec<u64> =
            raw.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())).collect();
        let entries = words
            .chunks_exact(2)
            .enumerate()
            .map(|(i, pair)| match (pair[0], pair[1]) {
                // Only (2^64-1, 2^64-1) marks an empty chunk; any other entry pointing outside
                // the shard is corrupt.
                (u64::MAX, u64::MAX) => Ok(InnerChunk::Empty),
                (offset, nbytes) if nbytes > 0 && offset.checked_add(nbytes).is_some_and(|end| end <= shard_len) => {
                    Ok(InnerChunk::Stored { offset, nbytes })
                }
                (offset, nbytes) => Err(CodecError::corrupt(
                    "sharding_indexed",
                    format!(
                        "index entry {i} (offset {offset}, nbytes {nbytes}) lies outside the shard of {shard_len} bytes"
                    ),
                )),
            })
            .collect::<Result<_, _>>()?;
        Ok(ShardIndex {
            chunks_per_shard: chunks_per_shard.to_vec(),
            entries,
            shard_len,
            e_tag: None,
            version: String::new(),
        })
    }

    /// Splits a whole shard into its index and decodes it.
    pub fn index_of_shard(&self, shard: &[u8], shard_shape: &[u64]) -> Result<ShardIndex, CodecError> {
        let cps = self.chunks_per_shard(shard_shape)?;
        let size = self.index_size(&cps) as usize;
        if shard.len() < size {
            return Err(CodecError::corrupt(
                "sharding_indexed",
                format!("shard of {} bytes is shorter than its {size}-byte index", shard.len()),
            ));
        }
        let encoded = match self.index_location {
            IndexLocation::Start => &shard[..size],
            IndexLocation::End => &shard[shard.len() - size..],
        };
        self.decode_index(encoded, &cps, shard.len() as u64)
    }

    /// Decodes a whole shard of `shape` (nested sharding, or a chain that hides ranges).
    pub fn decode(&self, shard: &[u8], shape: &[u64], data_type: DataType, fill: &[u8]) -> Result<Vec<u8>, CodecError> {
        let index = self.index_of_shard(shard, shape)?;
        let item = data_type.size();
        // The chain's decode has bounded the size of `shape` before any codec runs.
        let mut out = filled(element_count(shape).unwrap_or(0) as usize, fill);
        let rank = shape.len();
        let mut coords = vec![0u64; rank];
        let ones = vec![1u64; rank];
        let zeros = vec![0u64; rank];
        for linear in 0..index.len() {
            if let InnerChunk::Stored { offset, nbytes } = index.chunk(linear) {
                let bytes = &shard[offset as usize..(offset + nbytes) as usize];
                let chunk = self.codecs.decode(bytes, &self.chunk_shape, data_type, fill)?;
                let origin: Vec<u64> = coords.iter().zip(&self.chunk_shape).map(|(c, e)| c * e).collect();
                let region = Region {
                    src_shape: &self.chunk_shape,
                    src_start: &zeros,
                    src_step: &ones,
                    dst_shape: shape,
                    dst_start: &origin,
                    count: &self.chunk_shape,
                };
                copy_region(&chunk, &mut out, &region, item);
            }
            // Next inner chunk in C order.
            for d in (0..rank).rev() {
                coords[d] += 1;
                if coords[d] < index.chunks_per_shard[d] {
                    break;
                }
                coords[d] = 0;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::zarr::codec::ShardingCodec;
    use serde_json::json;

    pub fn default_config(chunk_shape: &[u64], location: &str) -> Value {
        json!({
            "chunk_shape": chunk_shape,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": location,
        })
    }

    /// Builds a shard of u8 inner chunks from `(linear index, bytes)`; the rest empty.
    pub fn build_shard(n_chunks: usize, chunks: &[(usize, Vec<u8>)], location: IndexLocation) -> Vec<u8> {
        let index_len = 16 * n_chunks + 4;
        let mut entries = vec![(u64::MAX, u64::MAX); n_chunks];
        let mut data = Vec::new();
        let base = if location == IndexLocation::Start { index_len } else { 0 };
        for (i, bytes) in chunks {
            entries[*i] = ((base + data.len()) as u64, bytes.len() as u64);
            data.extend_from_slice(bytes);
        }
        let mut index: Vec<u8> =
            entries.iter().flat_map(|(o, n)| o.to_le_bytes().into_iter().chain(n.to_le_bytes())).collect();
        index.extend(::crc32c::crc32c(&index).to_le_bytes());
        match location {
            IndexLocation::Start => [index, data].concat(),
            IndexLocation::End => [data, index].concat(),
        }
    }

    fn codec(location: &str) -> ShardingCodec {
        ShardingCodec::from_config(default_config(&[2, 2], location).as_object(), DataType::UInt8, &[vec![4], vec![4]])
            .unwrap()
    }

    #[test]
    fn index_size_matches_the_spec_examples() {
        let c = codec("end");
        assert_eq!(c.index_size(&[2, 2]), 68);
        assert_eq!(c.index_size(&[4, 4]), 260);
        assert_eq!(c.chunks_per_shard(&[4, 4]).unwrap(), [2, 2]);
        assert!(c.chunks_per_shard(&[4, 3]).is_err());
    }

    // Found by tests/it/properties.rs: the index size of huge shards overflowed (a panic in
    // debug builds, a wrapped size in release ones).
    #[test]
    fn huge_shard_indexes_are_errors_not_overflows() {
        let c = codec("end");
        assert_eq!(c.index_size(&[u64::MAX, 2]), u64::MAX);
        assert!(c.decode_index(&[0; 64], &[u64::MAX, u64::MAX], 100).is_err());
        assert!(c.index_of_shard(&[0; 64], &[u64::MAX - 1, 4]).is_err());
        // An edge of 0 makes an empty index whatever the other edges are (no panic).
        assert_eq!(c.decode_index(&[0; 4], &[u64::MAX, 2, 0], 100).map(|i| i.len()).ok(), Some(0));
        let huge = ShardingCodec::from_config(
            default_config(&[1, 1], "end").as_object(),
            DataType::UInt8,
            &[vec![1 << 32], vec![1 << 32]],
        );
        assert!(matches!(huge, Err(MetadataError::Unsupported(_))), "{huge:?}");
        let large = ShardingCodec::from_config(
            default_config(&[1, 1], "end").as_object(),
            DataType::UInt8,
            &[vec![1 << 11], vec![1 << 11]],
        );
        assert!(large.is_ok(), "4 Mi inner chunks still fit: {large:?}");
    }

    #[test]
    fn decodes_a_whole_shard_with_empty_chunks() {
        for location in [IndexLocation::Start, IndexLocation::End] {
            let c = codec(location.name());
            // Inner chunk 1 (top right) and 2 (bottom left) stored, 0 and 3 empty.
            let shard = build_shard(4, &[(2, vec![5, 6, 7, 8]), (1, vec![1, 2, 3, 4])], location);
            let out = c.decode(&shard, &[4, 4], DataType::UInt8, &[9]).unwrap();
            assert_eq!(out, [9, 9, 1, 2, 9, 9, 3, 4, 5, 6, 9, 9, 7, 8, 9, 9]);
        }
    }

    #[test]
    fn corrupt_indexes_are_errors() {
        let c = codec("end");
        let mut shard = build_shard(4, &[(0, vec![1, 2, 3, 4])], IndexLocation::End);
        let n = shard.len();
        shard[n - 1] ^= 0xff;
        assert!(matches!(c.decode(&shard, &[4, 4], DataType::UInt8, &[0]), Err(CodecError::Checksum { .. })));
        let short = build_shard(4, &[], IndexLocation::End);
        assert!(c.decode(&short[..10], &[4, 4], DataType::UInt8, &[0]).is_err());
        // An entry pointing past the end of the shard.
        let mut index: Vec<u8> = [(0u64, 100u64), (u64::MAX, u64::MAX), (u64::MAX, u64::MAX), (u64::MAX, u64::MAX)]
            .iter()
            .flat_map(|(o, n)| o.to_le_bytes().into_iter().chain(n.to_le_bytes()))
            .collect();
        index.extend(::crc32c::crc32c(&index).to_le_bytes());
        let err = c.decode(&index, &[4, 4], DataType::UInt8, &[0]).unwrap_err();
        assert!(err.to_string().contains("outside the shard"), "{err}");
        // Only (2^64-1, 2^64-1) is empty: (2^64-1, 5) is corrupt, not fill.
        let mut index: Vec<u8> = [(u64::MAX, 5u64), (u64::MAX, u64::MAX), (u64::MAX, u64::MAX), (u64::MAX, u64::MAX)]
            .iter()
            .flat_map(|(o, n)| o.to_le_bytes().into_iter().chain(n.to_le_bytes()))
            .collect();
        index.extend(::crc32c::crc32c(&index).to_le_bytes());
        let err = c.decode(&index, &[4, 4], DataType::UInt8, &[0]).unwrap_err();
        assert!(err.to_string().contains("entry 0"), "{err}");
    }

    #[test]
    fn huge_shard_indexes_are_refused_before_reading() {
        // At parse time for the largest declared shard…
        let err =
            ShardingCodec::from_config(default_config(&[1], "end").as_object(), DataType::UInt8, &[vec![1 << 30]])
                .unwrap_err();
        assert!(matches!(err, MetadataError::Unsupported(ref m) if m.contains("inner chunks")), "{err}");
        // …and for each shard before its index is read.
        let c = ShardingCodec::from_config(
            default_config(&[1], "end").as_object(),
            DataType::UInt8,
            &[vec![MAX_INNER_CHUNKS]],
        )
        .unwrap();
        assert_eq!(c.chunks_per_shard(&[MAX_INNER_CHUNKS]).unwrap(), [MAX_INNER_CHUNKS]);
        let err = c.chunks_per_shard(&[MAX_INNER_CHUNKS + 1]).unwrap_err();
        assert!(matches!(err, CodecError::IndexTooLarge { .. }), "{err}");
    }

    #[test]
    fn inner_chunks_must_divide_shards() {
        let err = ShardingCodec::from_config(
            default_config(&[3, 2], "end").as_object(),
            DataType::UInt8,
            &[vec![4], vec![4]],
        )
        .unwrap_err();
        assert!(matches!(err, MetadataError::Unsupported(_)));
        let compressed_index = json!({"chunk_shape": [2], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}, {"name": "zstd"}]});
        assert!(ShardingCodec::from_config(compressed_index.as_object(), DataType::UInt8, &[vec![4]]).is_err());
        let bad_location = json!({"chunk_shape": [2], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}], "index_location": "middle"});
        assert!(ShardingCodec::from_config(bad_location.as_object(), DataType::UInt8, &[vec![4]]).is_err());
    }
}
