//! OME-Zarr (OME-NGFF) image metadata, 0.4 and 0.5
//! (<https://ngff.openmicroscopy.org/0.4/>, <https://ngff.openmicroscopy.org/0.5/>): what an
//! image group says about its levels, axes, channels and labels, and the same metadata
//! rewritten for the other version.
//!
//! 0.4 (Zarr v2) keeps its keys at the top of the attributes, with a `version` in each
//! `multiscales` entry (and in `image-label`, `plate`, `well`); 0.5 (Zarr v3) keeps them
//! under `ome`, with one `version` there. Readers check the version against the store's
//! format (ome-zarr.js refuses 0.4 metadata in a v3 store), so the compatibility views
//! rewrite it: [`to_v04`] for `/compat/v2`, [`to_v05`] for `/compat/v3`.

use serde_json::{Map, Value, json};

/// The keys OME-Zarr defines in a node's attributes (0.4 at the top, 0.5 under `ome`).
const KEYS: &[&str] =
    &["multiscales", "omero", "labels", "image-label", "plate", "well", "bioformats2raw.layout", "series"];

/// Keys that carry their own `version` in 0.4.
const VERSIONED: &[&str] = &["image-label", "plate", "well"];

/// The OME metadata of a node's attributes: 0.5's `ome` object, else the 0.4 keys at the
/// top. `None` when the node has none.
pub fn metadata(attributes: &Map<String, Value>) -> Option<Map<String, Value>> {
    if let Some(Value::Object(ome)) = attributes.get("ome") {
        return Some(ome.clone());
    }
    let found: Map<String, Value> =
        KEYS.iter().filter_map(|k| attributes.get(*k).map(|v| ((*k).to_owned(), v.clone()))).collect();
    (!found.is_empty()).then_some(found)
}

/// One axis of a multiscale image.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    /// `space`, `time`, `channel` or a custom type; 0.3's bare names have none.
    pub kind: Option<String>,
    pub unit: Option<String>,
}

impl Axis {
    /// Whether this is the channel axis: typed `channel`, or (untyped) named `c`.
    pub fn is_channel(&self) -> bool {
        match &self.kind {
            Some(kind) => kind == "channel",
            None => self.name == "c",
        }
    }
}

/// One level of a multiscale image: its array's path below the image group and the scale
/// of its `coordinateTransformations` (combined with the multiscale's own, if any).
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub path: String,
    pub scale: Option<Vec<f64>>,
    /// The `translation` of its `coordinateTransformations`, applied after `scale` (and
    /// then the multiscale's own), as the spec orders them.
    pub translation: Option<Vec<f64>>,
}

/// One entry of `multiscales`.
#[derive(Debug, Clone, PartialEq)]
pub struct Multiscale {
    pub name: Option<String>,
    pub axes: Vec<Axis>,
    /// Finest first, as the spec orders them.
    pub levels: Vec<Level>,
}

/// One `omero` channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    pub label: Option<String>,
    pub color: Option<[u8; 3]>,
    /// `window.start`..`window.end`.
    pub window: Option<(f64, f64)>,
    pub active: bool,
}

fn transform_of(transforms: Option<&Value>, kind: &str) -> Option<Vec<f64>> {
    let list = transforms?.as_array()?;
    let found = list.iter().find(|t| t.get("type").and_then(Value::as_str) == Some(kind))?;
    found.get(kind)?.as_array()?.iter().map(Value::as_f64).collect()
}

fn scale_of(transforms: Option<&Value>) -> Option<Vec<f64>> {
    transform_of(transforms, "scale")
}

fn axis(v: &Value) -> Option<Axis> {
    if let Some(name) = v.as_str() {
        return Some(Axis { name: name.to_owned(), kind: None, unit: None });
    }
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(Axis { name: text("name")?, kind: text("type"), unit: text("unit") })
}

/// The `multiscales` of a node's attributes (either version); entries that are not objects
/// with `datasets` are skipped.
pub fn multiscales(attributes: &Map<String, Value>) -> Vec<Multiscale> {
    let Some(ome) = metadata(attributes) else { return Vec::new() };
    let Some(Value::Array(list)) = ome.get("multiscales") else { return Vec::new() };
    list.iter()
        .filter_map(|m| {
            let datasets = m.get("datasets")?.as_array()?;
            let global = scale_of(m.get("coordinateTransformations"));
            let global_shift = transform_of(m.get("coordinateTransformations"), "translation");
            let levels = datasets
                .iter()
                .filter_map(|d| {
                    let path = d.get("path")?.as_str()?.trim_matches('/').to_owned();
                    let mut scale = scale_of(d.get("coordinateTransformations"));
                    let mut translation = transform_of(d.get("coordinateTransformations"), "translation");
                    if let Some(g) = &global {
                        for v in [scale.as_mut(), translation.as_mut()].into_iter().flatten() {
                            if v.len() == g.len() {
                                v.iter_mut().zip(g).for_each(|(a, b)| *a *= b);
                            }
                        }
                    }
                    if let Some(g) = &global_shift {
                        let t = translation.get_or_insert_with(|| vec![0.0; g.len()]);
                        if t.len() == g.len() {
                            t.iter_mut().zip(g).for_each(|(a, b)| *a += b);
                        }
                    }
                    Some(Level { path, scale, translation })
                })
                .collect();
            let axes = m.get("axes").and_then(Value::as_array).map(|a| a.iter().filter_map(axis).collect());
            Some(Multiscale {
                name: m.get("name").and_then(Value::as_str).map(str::to_owned),
                axes: axes.unwrap_or_default(),
                levels,
            })
        })
        .collect()
}

/// `RRGGBB` as bytes.
fn color(text: &str) -> Option<[u8; 3]> {
    let text = text.trim_start_matches('#');
    if text.len() != 6 || !text.is_ascii() {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&text[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// The `omero` channels of an image group (either version).
pub fn channels(attributes: &Map<String, Value>) -> Vec<Channel> {
    let Some(ome) = metadata(attributes) else { return Vec::new() };
    let Some(list) = ome.get("omero").and_then(|o| o.get("channels")).and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(|c| {
            let window = c.get("window").and_then(|w| {
                let start = w.get("start")?.as_f64().filter(|v| v.is_finite())?;
                let end = w.get("end")?.as_f64().filter(|v| v.is_finite())?;
                Some((start, end))
            });
            Channel {
                label: c.get("label").and_then(Value::as_str).map(str::to_owned),
                color: c.get("color").and_then(Value::as_str).and_then(color),
                window,
                active: c.get("active").and_then(Value::as_bool).unwrap_or(true),
            }
        })
        .collect()
}

/// The colours of a label image (`image-label.colors`: label value → RGBA), or `None`
/// when the group is not a label image.
pub fn label_colors(attributes: &Map<String, Value>) -> Option<Vec<(f64, [u8; 4])>> {
    let ome = metadata(attributes)?;
    let label = ome.get("image-label")?;
    let colors = label.get("colors").and_then(Value::as_array).map(|list| {
        list.iter()
            .filter_map(|c| {
                let value = c.get("label-value")?.as_f64()?;
                let rgba: Vec<u8> = c
                    .get("rgba")?
                    .as_array()?
                    .iter()
                    .map(|v| v.as_u64().and_then(|v| u8::try_from(v).ok()))
                    .collect::<Option<_>>()?;
                Some((value, <[u8; 4]>::try_from(rgba).ok()?))
            })
            .collect()
    });
    Some(colors.unwrap_or_default())
}

/// The attributes that are not OME metadata (neither under `ome` nor 0.4's top-level keys),
/// kept as they are by both rewrites.
fn non_ome(attributes: &Map<String, Value>) -> Map<String, Value> {
    attributes
        .iter()
        .filter(|(k, _)| *k != "ome" && !KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The attributes as OME-Zarr 0.4 writes them (for a Zarr v2 view): the OME keys at the
/// top, `version: "0.4"` in each `multiscales` entry and in `image-label`, `plate`, `well`.
/// Attributes without OME metadata are returned as they are.
pub fn to_v04(attributes: &Map<String, Value>) -> Map<String, Value> {
    let Some(ome) = metadata(attributes) else { return attributes.clone() };
    let mut out = non_ome(attributes);
    out.extend(stamped(ome, "0.4"));
    out
}

/// The attributes as OME-Zarr 0.5 writes them (for a Zarr v3 view): the OME keys under
/// `ome` with `version: "0.5"`, none in `multiscales` entries or `image-label`.
pub fn to_v05(attributes: &Map<String, Value>) -> Map<String, Value> {
    let Some(ome) = metadata(attributes) else { return attributes.clone() };
    let mut out = non_ome(attributes);
    let mut inner = Map::new();
    inner.insert("version".into(), json!("0.5"));
    inner.extend(stamped(ome, "0.5"));
    out.insert("ome".into(), Value::Object(inner));
    out
}

/// The OME entries (their top-level `version` left out) with the version stamps `version`
/// puts inside them: 0.4 stamps each `multiscales` entry and the [`VERSIONED`] objects;
/// 0.5 removes those stamps, except in plates and wells that have one (ome-zarr-py keeps a
/// `version` there in 0.5, and ome-zarr-models reads it).
fn stamped(ome: Map<String, Value>, version: &'static str) -> impl Iterator<Item = (String, Value)> {
    let stamp = move |o: &mut Map<String, Value>, keeps: bool| {
        if version == "0.4" || (keeps && o.contains_key("version")) {
            o.insert("version".into(), json!(version));
        } else {
            o.remove("version");
        }
    };
    ome.into_iter().filter(|(key, _)| key != "version").map(move |(key, mut value)| {
        match &mut value {
            Value::Array(list) if key == "multiscales" => {
                list.iter_mut().filter_map(Value::as_object_mut).for_each(|m| stamp(m, false));
            }
            Value::Object(o) if VERSIONED.contains(&key.as_str()) => stamp(o, key != "image-label"),
            _ => {}
        }
        (key, value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(v: Value) -> Map<String, Value> {
        let Value::Object(map) = v else { panic!("not an object") };
        map
    }

    #[test]
    fn reads_both_versions_alike() {
        let ms = json!([{"version": "0.4", "axes": [{"name": "c", "type": "channel"}, {"name": "y", "type": "space", "unit": "micrometer"}, "x"],
            "datasets": [{"path": "scale0/image", "coordinateTransformations": [{"type": "scale", "scale": [1.0, 0.5, 0.5]}]}],
            "coordinateTransformations": [{"type": "scale", "scale": [1.0, 2.0, 2.0]}]}]);
        let omero = json!({"channels": [{"color": "FF8000", "window": {"start": 1, "end": 9}, "active": false}, {"label": "b"}]});
        let v04 = attrs(json!({"multiscales": ms, "omero": omero, "other": 1}));
        let v05 = to_v05(&v04);
        assert_eq!(v05["ome"]["version"], "0.5");
        assert!(v05["ome"]["multiscales"][0].get("version").is_none());
        assert_eq!(v05["other"], 1);
        assert!(v05.get("multiscales").is_none());
        for a in [&v04, &v05] {
            let m = &multiscales(a)[0];
            assert_eq!(m.levels[0].path, "scale0/image");
            assert_eq!(m.levels[0].scale, Some(vec![1.0, 1.0, 1.0]));
            assert!(m.axes[0].is_channel() && !m.axes[1].is_channel());
            assert_eq!(m.axes[1].unit.as_deref(), Some("micrometer"));
            assert_eq!(m.axes[2], Axis { name: "x".into(), kind: None, unit: None });
            let c = channels(a);
            assert_eq!((c[0].color, c[0].window, c[0].active), (Some([255, 128, 0]), Some((1.0, 9.0)), false));
            assert_eq!((c[1].label.as_deref(), c[1].color, c[1].active), (Some("b"), None, true));
        }
        let back = to_v04(&v05);
        assert_eq!(back["multiscales"][0]["version"], "0.4");
        assert!(back.get("ome").is_none() && back.get("version").is_none());
        assert_eq!(back["omero"], v04["omero"]);
        let plain = attrs(json!({"a": 1}));
        assert_eq!((to_v04(&plain), to_v05(&plain)), (plain.clone(), plain));
    }

    #[test]
    fn label_images_have_colours() {
        let a = attrs(
            json!({"ome": {"version": "0.5", "image-label": {"colors": [{"label-value": 2, "rgba": [1, 2, 3, 4]}, {"label-value": 3}]}}}),
        );
        assert_eq!(label_colors(&a), Some(vec![(2.0, [1, 2, 3, 4])]));
        assert_eq!(to_v04(&a)["image-label"]["version"], "0.4");
        assert_eq!(label_colors(&attrs(json!({"image-label": {}}))), Some(vec![]));
        assert_eq!(label_colors(&attrs(json!({"multiscales": []}))), None);
    }

    #[test]
    fn version_stamps_follow_each_version() {
        let v04 = attrs(json!({
            "multiscales": [{"version": "0.4", "datasets": []}],
            "image-label": {"version": "0.4"},
            "plate": {"version": "0.4", "rows": []},
            "well": {"images": []},
        }));
        let v05 = to_v05(&v04);
        let ome = &v05["ome"];
        assert_eq!(ome["version"], "0.5");
        assert!(ome["multiscales"][0].get("version").is_none() && ome["image-label"].get("version").is_none());
        // ome-zarr-py keeps a plate's or well's own `version` in 0.5, and adds none.
        assert_eq!(ome["plate"]["version"], "0.5");
        assert!(ome["well"].get("version").is_none());
        let back = to_v04(&v05);
        for key in ["image-label", "plate", "well"] {
            assert_eq!(back[key]["version"], "0.4", "{key}");
        }
        assert_eq!(back["multiscales"][0]["version"], "0.4");
    }
}
