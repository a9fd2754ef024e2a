//! Every codec zarrd decodes, found by name: its Zarr v3 name (`zstd`), the name
//! zarr-python gives a numcodecs codec in v3 (`numcodecs.zstd`), or its numcodecs id in a
//! Zarr v2 `filters` or `compressor` (`{"id": "zstd"}`). Each codec is implemented once, in
//! a file of its own; adding one is that file and a line in [`CODECS`].

use serde_json::{Map, Value};

use crate::zarr::codec::astype::AsType;
use crate::zarr::codec::bytes::BytesCodec;
use crate::zarr::codec::bytes_to_bytes::BytesToBytes;
use crate::zarr::codec::cast_value::CastValue;
use crate::zarr::codec::checksum::{Algorithm, Checksum};
use crate::zarr::codec::fixedscaleoffset::FixedScaleOffset;
use crate::zarr::codec::lzma::LzmaFormat;
use crate::zarr::codec::numeric::{Kind, NumType};
use crate::zarr::codec::scale_offset::ScaleOffset;
use crate::zarr::codec::transpose::Transpose;
use crate::zarr::codec::{delta, pcodec};
use crate::zarr::data_type::DataType;
use crate::zarr::json::MetadataError;

/// What a codec is, once its configuration is read.
#[derive(Debug, Clone)]
pub enum Codec {
    Transpose(Transpose),
    /// A numcodecs filter (a v3 array→array codec, a v2 filter): `encoded` is the element
    /// type it stores; `elementwise` filters commute with a transpose, the others (delta,
    /// packbits) work on the flat buffer in the order they were given it.
    Filter {
        codec: BytesToBytes,
        encoded: NumType,
        elementwise: bool,
    },
    ArrayToBytes(Serializer),
    /// An array→bytes codec with a format of its own for numbers (pcodec): decoded like a
    /// bytes→bytes codec whose output is little-endian `bytes`.
    Numbers(BytesToBytes),
    BytesToBytes(BytesToBytes),
    /// Nothing to undo on reading (bitround: the rounded floats are stored as floats).
    Identity,
}

/// An array→bytes codec. Sharding nests a codec chain, so the chain parses its
/// configuration itself (the registry stays below the chain).
#[derive(Debug, Clone, Copy)]
pub enum Serializer {
    Bytes(BytesCodec),
    Sharding,
    VlenUtf8,
    VlenBytes,
}

/// What a codec is given to parse its configuration against.
pub struct Stage<'a> {
    /// The array's data type.
    pub data_type: DataType,
    /// The elements this codec sees (after the filters before it), little-endian; `None`
    /// for text, which has no numeric elements.
    pub elements: Option<NumType>,
    /// Every distinct chunk edge per dimension this codec sees.
    pub edges: &'a [Vec<u64>],
}

impl Stage<'_> {
    fn elements(&self, codec: &str) -> Result<NumType, MetadataError> {
        self.elements
            .ok_or_else(|| MetadataError::Unsupported(format!("`{codec}` on `{}` data", self.data_type.name())))
    }
}

type Config<'a> = Option<&'a Map<String, Value>>;

struct Entry {
    name: &'static str,
    /// A numcodecs codec: also found as `numcodecs.<name>` (v3) and as a v2 id.
    numcodecs: bool,
    parse: fn(Config, &Stage) -> Result<Codec, MetadataError>,
}

const fn core(name: &'static str, parse: fn(Config, &Stage) -> Result<Codec, MetadataError>) -> Entry {
    Entry { name, numcodecs: false, parse }
}

const fn numcodecs(name: &'static str, parse: fn(Config, &Stage) -> Result<Codec, MetadataError>) -> Entry {
    Entry { name, numcodecs: true, parse }
}

fn empty() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

fn checksum(algorithm: Algorithm, config: Config) -> Result<Codec, MetadataError> {
    Ok(Codec::BytesToBytes(BytesToBytes::Checksum(Checksum::from_config(algorithm, config)?)))
}

const CODECS: &[Entry] = &[
    core("transpose", |c, s| Ok(Codec::Transpose(Transpose::from_config(c, s.edges.len())?))),
    core("bytes", |c, s| {
        // The stored elements are the last filter's, when a filter changed the type.
        let stored = s.elements.map_or(s.data_type, NumType::data_type);
        Ok(Codec::ArrayToBytes(Serializer::Bytes(BytesCodec::from_config(c, stored)?)))
    }),
    core("sharding_indexed", |_, _| Ok(Codec::ArrayToBytes(Serializer::Sharding))),
    // zarr-python 3.4's array→array codecs of GeoZarr writers: element by element, on the
    // elements as stored (after `bytes`), like the numcodecs filters.
    core("scale_offset", |c, s| {
        let f = ScaleOffset::from_config(c, s.elements("scale_offset")?)?;
        Ok(Codec::Filter { codec: BytesToBytes::ScaleOffset(f), encoded: f.ty, elementwise: true })
    }),
    core("cast_value", |c, s| {
        let f = CastValue::from_config(c, s.elements("cast_value")?)?;
        Ok(Codec::Filter { codec: BytesToBytes::CastValue(f), encoded: f.stored, elementwise: true })
    }),
    core("vlen-utf8", |_, _| Ok(Codec::ArrayToBytes(Serializer::VlenUtf8))),
    core("vlen-bytes", |_, _| Ok(Codec::ArrayToBytes(Serializer::VlenBytes))),
    numcodecs("zstd", |_, _| Ok(Codec::BytesToBytes(BytesToBytes::Zstd))),
    numcodecs("gzip", |_, _| Ok(Codec::BytesToBytes(BytesToBytes::Gzip))),
    numcodecs("blosc", |_, _| Ok(Codec::BytesToBytes(BytesToBytes::Blosc))),
    numcodecs("zlib", |_, _| Ok(Codec::BytesToBytes(BytesToBytes::Zlib))),
    numcodecs("lz4", |_, _| Ok(Codec::BytesToBytes(BytesToBytes::Lz4))),
    numcodecs("bz2", |_, _| Ok(Codec::BytesToBytes(BytesToBytes::Bz2))),
    numcodecs("lzma", |c, _| {
        Ok(Codec::BytesToBytes(BytesToBytes::Lzma(LzmaFormat::from_config(c.unwrap_or_else(|| empty()))?)))
    }),
    numcodecs("shuffle", |c, _| {
        let elementsize = match c.and_then(|c| c.get("elementsize")) {
            // numcodecs' default.
            None | Some(Value::Null) => 4,
            Some(v) => v.as_u64().filter(|&n| (1..=1 << 16).contains(&n)).ok_or_else(|| {
                MetadataError::invalid("shuffle", &format!("`elementsize` {v} is not a small positive integer"))
            })? as usize,
        };
        Ok(Codec::BytesToBytes(BytesToBytes::Shuffle { elementsize }))
    }),
    numcodecs("crc32c", |c, _| checksum(Algorithm::Crc32c, c)),
    numcodecs("crc32", |c, _| checksum(Algorithm::Crc32, c)),
    numcodecs("adler32", |c, _| checksum(Algorithm::Adler32, c)),
    numcodecs("fletcher32", |c, _| checksum(Algorithm::Fletcher32, c)),
    numcodecs("jenkins_lookup3", |c, _| checksum(Algorithm::JenkinsLookup3 { initval: 0 }, c)),
    numcodecs("delta", |c, s| {
        let ty = delta::from_config(c.unwrap_or_else(|| empty()), s.elements("delta")?)?;
        Ok(Codec::Filter { codec: BytesToBytes::Delta(ty), encoded: ty, elementwise: false })
    }),
    numcodecs("fixedscaleoffset", |c, s| {
        let f = FixedScaleOffset::from_config(c.unwrap_or_else(|| empty()), s.elements("fixedscaleoffset")?)?;
        Ok(Codec::Filter { codec: BytesToBytes::FixedScaleOffset(f), encoded: f.astype, elementwise: true })
    }),
    numcodecs("astype", |c, s| {
        let a = AsType::from_config(c.unwrap_or_else(|| empty()), s.elements("astype")?)?;
        Ok(Codec::Filter { codec: BytesToBytes::AsType(a), encoded: a.encode, elementwise: true })
    }),
    // Quantized floats are stored as `astype`; reading them back is that cast.
    numcodecs("quantize", |c, s| {
        let a = AsType::quantized(c.unwrap_or_else(|| empty()), s.elements("quantize")?)?;
        Ok(Codec::Filter { codec: BytesToBytes::AsType(a), encoded: a.encode, elementwise: true })
    }),
    numcodecs("bitround", |c, s| {
        let keepbits = c.and_then(|c| c.get("keepbits")).and_then(Value::as_u64);
        match (s.elements("bitround")?.kind, keepbits) {
            (Kind::Float, Some(_)) => Ok(Codec::Identity),
            (Kind::Float, None) => Err(MetadataError::invalid("bitround", "`keepbits` is not a non-negative integer")),
            _ => Err(MetadataError::Unsupported(format!("bitround on `{}` data", s.data_type.name()))),
        }
    }),
    numcodecs("packbits", |_, s| {
        if s.elements("packbits")?.kind != Kind::Bool {
            return Err(MetadataError::Unsupported(format!("packbits on `{}` data", s.data_type.name())));
        }
        let bytes = NumType { kind: Kind::UInt, size: 1, big_endian: false };
        Ok(Codec::Filter { codec: BytesToBytes::PackBits, encoded: bytes, elementwise: false })
    }),
    numcodecs("pcodec", |_, s| Ok(Codec::Numbers(BytesToBytes::Pcodec(pcodec::check(s.elements("pcodec")?)?)))),
];

/// The codec a v3 `codecs` entry names (`None`: not one zarrd knows).
pub fn parse_v3(name: &str, config: Config, stage: &Stage) -> Option<Result<Codec, MetadataError>> {
    let entry = match name.strip_prefix("numcodecs.") {
        Some(id) => CODECS.iter().find(|e| e.numcodecs && e.name == id),
        None => CODECS.iter().find(|e| e.name == name),
    }?;
    Some((entry.parse)(config, stage))
}

/// A Zarr v2 filter or compressor (`{"id": ..., ...}`) working on `elements` as stored:
/// the codec, and the element type it stores (`None` when it undoes nothing).
pub fn parse_v2(
    config: &Map<String, Value>,
    elements: NumType,
    data_type: DataType,
    field: &str,
) -> Result<Option<(BytesToBytes, NumType)>, MetadataError> {
    let Some(Value::String(id)) = config.get("id") else {
        return Err(MetadataError::invalid(field, "a numcodecs configuration without a string `id`"));
    };
    let Some(entry) = CODECS.iter().find(|e| e.numcodecs && e.name == id) else {
        return Err(MetadataError::Unsupported(format!("numcodecs codec `{id}`")));
    };
    let stage = Stage { data_type, elements: Some(elements), edges: &[] };
    Ok(match (entry.parse)(Some(config), &stage)? {
        Codec::Filter { codec, encoded, .. } => Some((codec, encoded)),
        Codec::BytesToBytes(codec) | Codec::Numbers(codec) => Some((codec, elements)),
        Codec::Identity => None,
        Codec::Transpose(_) | Codec::ArrayToBytes(_) => {
            return Err(MetadataError::Unsupported(format!("numcodecs codec `{id}` as a v2 filter or compressor")));
        }
    })
}
