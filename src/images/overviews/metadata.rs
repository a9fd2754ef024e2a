//! The pyramid's documents: the group's OME-NGFF `multiscales` and each level's array
//! metadata.

use serde_json::{Value, json};

use crate::compat::{Flavor, fill_json, v3_codecs};
use crate::images::overviews::shard::SHARD_TILES;
use zarrd_core::read::ArrayReader;

/// The OME-NGFF axes: the source's dimension names when it has distinct ones, else
/// `dim_i` for leading dimensions and `y`, `x`; types where the name says it.
fn axes(source: &ArrayReader) -> Vec<Value> {
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
            match kind {
                Some(kind) => json!({"name": name, "type": kind}),
                None => json!({"name": name}),
            }
        })
        .collect()
}

/// The `multiscales` entry: level `k` scaled by `2^k` along the last two axes, and shifted
/// by `(2^k - 1) / 2` so its pixel centres sit at the centres of the blocks they average.
pub(super) fn multiscale(source: &ArrayReader, name: &str, top: u32) -> Value {
    let rank = source.meta.shape.len();
    let datasets: Vec<Value> = (0..=top)
        .map(|k| {
            let f = 2f64.powi(k as i32);
            let mut scale = vec![1.0; rank];
            let mut translation = vec![0.0; rank];
            for d in rank - 2..rank {
                scale[d] = f;
                translation[d] = (f - 1.0) / 2.0;
            }
            let mut transforms = vec![json!({"type": "scale", "scale": scale})];
            if k > 0 {
                transforms.push(json!({"type": "translation", "translation": translation}));
            }
            json!({"path": k.to_string(), "coordinateTransformations": transforms})
        })
        .collect();
    json!({
        "name": name,
        "axes": axes(source),
        "datasets": datasets,
        "type": "mean",
        "metadata": {
            "method": "zarrd overviews",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "each element of level k is the mean of the valid values (neither fill nor NaN) of its 2^k x 2^k block of level 0; partial blocks at odd edges average what they hold; integers are rounded half to even; a block without valid values is the fill value",
        },
    })
}

pub(super) fn level_metadata(source: &ArrayReader, shape: &[u64], tile: u64) -> Value {
    let meta = &source.meta;
    let rank = shape.len();
    let mut inner = vec![1u64; rank];
    inner[rank - 2] = tile;
    inner[rank - 1] = tile;
    let shard: Vec<u64> =
        inner.iter().enumerate().map(|(d, &e)| if d >= rank - 2 { e * SHARD_TILES } else { e }).collect();
    let names: Vec<Value> = axes(source).into_iter().map(|a| a["name"].clone()).collect();
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": meta.data_type.name(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_json(meta.data_type, &meta.fill_value, Flavor::V3),
        "codecs": [{
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": inner,
                "codecs": v3_codecs(meta.data_type),
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                "index_location": "end",
            },
        }],
        "dimension_names": names,
        "attributes": {},
    })
}
