//! The pyramid's documents: the group's OME-NGFF `multiscales` and each level's array
//! metadata.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::compat::{
    Endian, Extension, Flavor, KeySeparator, RegularChunkGrid, V3Array, V3Codec, fill_json, v3_codecs,
};
use crate::images::overviews::shard::SHARD_TILES;
use zarrd_core::read::ArrayReader;

/// One OME-NGFF axis: its name and, where the name says it, its type.
#[derive(Debug, Serialize)]
struct Axis {
    name: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
}

/// The OME-NGFF axes: the source's dimension names when it has distinct ones, else
/// `dim_i` for leading dimensions and `y`, `x`; types where the name says it.
fn axes(source: &ArrayReader) -> Vec<Axis> {
    let rank = source.meta.shape.len();
    let given: Option<Vec<String>> =
        source.meta.dimension_names.as_ref().and_then(|names| names.iter().cloned().collect());
    let distinct = given
        .filter(|n| n.len() == rank && n.iter().all(|a| !a.is_empty() && n.iter().filter(|b| *b == a).count() == 1));
    let names = distinct.unwrap_or_else(|| {
        let mut n: Vec<String> = (0..rank - 2).map(|i| format!("dim_{i}")).collect();
        n.extend(["y".into(), "x".into()]);
        n
    });
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let kind = if i >= rank - 2 {
                Some("space")
            } else {
                match name.as_str() {
                    "t" | "time" => Some("time"),
                    "c" | "channel" => Some("channel"),
                    "z" => Some("space"),
                    _ => None,
                }
            };
            Axis { name, kind }
        })
        .collect()
}

/// The group's attributes: `{"ome": {"version": "0.5", "multiscales": [...]}}`.
#[derive(Debug, Serialize)]
pub(super) struct GroupAttributes {
    ome: Ome,
}

#[derive(Debug, Serialize)]
struct Ome {
    version: &'static str,
    multiscales: [Multiscale; 1],
}

/// The `multiscales` entry of the pyramid.
#[derive(Debug, Serialize)]
struct Multiscale {
    name: String,
    axes: Vec<Axis>,
    datasets: Vec<Dataset>,
    #[serde(rename = "type")]
    kind: &'static str,
    metadata: Made,
}

/// One level: its path and how its pixels sit on level 0's.
#[derive(Debug, Serialize)]
struct Dataset {
    path: String,
    #[serde(rename = "coordinateTransformations")]
    transforms: Vec<Transform>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Transform {
    Scale { scale: Vec<f64> },
    Translation { translation: Vec<f64> },
}

/// How the levels were made.
#[derive(Debug, Serialize)]
struct Made {
    method: &'static str,
    version: &'static str,
    description: &'static str,
}

/// The group's attributes with its `multiscales` entry: level `k` scaled by `2^k` along the
/// last two axes, and shifted by `(2^k - 1) / 2` so its pixel centres sit at the centres of
/// the blocks they average.
pub(super) fn group_attributes(source: &ArrayReader, name: &str, top: u32) -> GroupAttributes {
    let rank = source.meta.shape.len();
    let datasets = (0..=top)
        .map(|k| {
            let f = 2f64.powi(k as i32);
            let mut scale = vec![1.0; rank];
            let mut translation = vec![0.0; rank];
            for d in rank - 2..rank {
                scale[d] = f;
                translation[d] = (f - 1.0) / 2.0;
            }
            let mut transforms = vec![Transform::Scale { scale }];
            if k > 0 {
                transforms.push(Transform::Translation { translation });
            }
            Dataset { path: k.to_string(), transforms }
        })
        .collect();
    let multiscale = Multiscale {
        name: name.to_owned(),
        axes: axes(source),
        datasets,
        kind: "mean",
        metadata: Made {
            method: "zarrd overviews",
            version: env!("CARGO_PKG_VERSION"),
            description: "each element of level k is the mean of the valid values (neither fill nor NaN) of its 2^k x 2^k block of level 0; partial blocks at odd edges average what they hold; integers are rounded half to even; a block without valid values is the fill value",
        },
    };
    GroupAttributes { ome: Ome { version: "0.5", multiscales: [multiscale] } }
}

/// Level `k`'s `zarr.json`: `shape`, sharded in shards of `SHARD_TILES` x `SHARD_TILES` tiles
/// of `tile` x `tile`, each tile zstd-compressed, the index checksummed.
pub(super) fn level_metadata(source: &ArrayReader, shape: &[u64], tile: u64) -> Vec<u8> {
    let meta = &source.meta;
    let rank = shape.len();
    let mut inner = vec![1u64; rank];
    inner[rank - 2] = tile;
    inner[rank - 1] = tile;
    let shard: Vec<u64> =
        inner.iter().enumerate().map(|(d, &e)| if d >= rank - 2 { e * SHARD_TILES } else { e }).collect();
    let attributes = Map::new();
    let document = V3Array {
        zarr_format: 3,
        node_type: "array",
        shape,
        data_type: Value::from(meta.data_type.name()),
        chunk_grid: Extension { name: "regular", configuration: RegularChunkGrid { chunk_shape: &shard } },
        chunk_key_encoding: Extension { name: "default", configuration: KeySeparator { separator: "/" } },
        fill_value: fill_json(meta.data_type, &meta.fill_value, Flavor::V3),
        codecs: vec![V3Codec::ShardingIndexed {
            chunk_shape: inner,
            codecs: v3_codecs(meta.data_type),
            index_codecs: vec![V3Codec::Bytes { endian: Endian::Little }, V3Codec::Crc32c],
            index_location: "end",
        }],
        attributes: &attributes,
        storage_transformers: [],
        dimension_names: Some(axes(source).into_iter().map(|a| a.name).collect()),
    };
    serde_json::to_vec(&document).unwrap_or_default()
}
