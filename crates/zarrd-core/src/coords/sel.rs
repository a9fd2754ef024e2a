//! Label selection, `sel=`: comma-separated items `NAME:VALUE` (the exact label),
//! `NAME:~VALUE` (the nearest), `NAME:A..B`, `NAME:A..`, `NAME:..B` (every label within,
//! in stored order). Parsed here without the array; resolved against its dimension names
//! and labels into index selections.

use crate::coords::labels::{LabelError, Labels, Run};
use crate::read::selection::DimSelection;

/// What one item picks along its dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    Exact(String),
    Nearest(String),
    /// Either end may be open.
    Range(Option<String>, Option<String>),
}

/// One parsed item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub dim: String,
    pub pick: Pick,
}

/// The most items a `sel` may have (more than any array has dimensions).
const MAX_ITEMS: usize = 64;

/// Why a `sel` could not be parsed or resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelError {
    #[error(
        "sel item {item} (`{text}`) is not valid: {why}; allowed are NAME:VALUE (the exact label), NAME:~VALUE (the nearest), NAME:A..B, NAME:A.. and NAME:..B (ranges), comma-separated"
    )]
    Syntax { item: usize, text: String, why: &'static str },
    #[error("sel names dimension `{0}` twice")]
    Repeated(String),
    #[error("sel names `{dim}`, which is not a dimension of this array; its dimensions are {known}")]
    UnknownDimension { dim: String, known: String },
    #[error(
        "dimension `{dim}` has no labels (no 1-D coordinate array of that name beside the array); select it by index with s="
    )]
    NoLabels { dim: String },
    #[error("sel `{dim}`: {source}")]
    Label { dim: String, source: LabelError },
    /// A point on a grid that is not 1-D latitude/longitude, asked for wrongly.
    #[error(
        "sel `{0}`; on this array's grid, latitude and longitude select the cell containing a point (lat:~LAT,lon:~LON) or the cells whose centre lies in a box (lat:A..B,lon:C..D), in degrees, with the grid's own dimensions left out"
    )]
    Point(String),
    /// A box holding no cell centre (404).
    #[error("no cell centre of this array's grid lies in the box {0}")]
    EmptyBox(String),
    /// A point outside the grid (404).
    #[error("the point lon {lon}, lat {lat} is outside the grid of this array (its cells lie within {bbox})")]
    Outside { lon: f64, lat: f64, bbox: String },
}

impl SelError {
    /// Whether the error is a label that does not exist (404), not a malformed request.
    pub fn is_absent(&self) -> bool {
        matches!(self, Self::Label { source: LabelError::Absent { .. }, .. } | Self::Outside { .. } | Self::EmptyBox(_))
    }
}

/// Names a point's latitude may have in `sel=` (compared without case).
pub const LATITUDE: [&str; 2] = ["lat", "latitude"];
/// Names a point's longitude may have.
pub const LONGITUDE: [&str; 2] = ["lon", "longitude"];

/// Whether `items` name a latitude or longitude that is none of the dimensions `names`
/// (a point to find on the array's grid).
pub fn names_point(items: &[Item], names: &[Option<String>]) -> bool {
    items.iter().any(|it| is_point_name(&it.dim) && !names.iter().any(|n| n.as_deref() == Some(it.dim.as_str())))
}

fn is_point_name(name: &str) -> bool {
    LATITUDE.iter().chain(&LONGITUDE).any(|n| n.eq_ignore_ascii_case(name))
}

/// What latitude and longitude items pick on a grid that is not 1-D latitude/longitude.
#[derive(Debug, Clone, PartialEq)]
pub enum GridPick {
    /// The cell holding point (lon, lat).
    Point(f64, f64),
    /// The cells whose centre lies within these latitudes and longitudes (either end of each
    /// may be open; longitudes eastwards from the first to the second).
    Box { lat: (Option<f64>, Option<f64>), lon: (Option<f64>, Option<f64>) },
}

impl GridPick {
    /// Whether (lon, lat) is in the box (a point picks no box).
    pub fn holds(&self, lon: f64, lat: f64) -> bool {
        let Self::Box { lat: (south, north), lon: (west, east) } = self else { return false };
        let lat_ok = south.is_none_or(|s| lat >= s) && north.is_none_or(|n| lat <= n);
        let lon_ok = match (west, east) {
            (Some(w), Some(e)) => crate::coords::geo::in_arc(lon, *w, *e),
            (Some(w), None) => crate::coords::geo::in_arc(lon, *w, 180.0),
            (None, Some(e)) => crate::coords::geo::in_arc(lon, -180.0, *e),
            (None, None) => true,
        };
        lat_ok && lon_ok
    }
}

/// Takes the latitude and longitude items out of `items` (see [`names_point`]): a point
/// (`lat:~φ,lon:~λ`, both) or a box (`lat:A..B`, `lon:C..D`, either or both, ends open or
/// not), in degrees.
pub fn take_grid_pick(items: &mut Vec<Item>) -> Result<GridPick, SelError> {
    let is = |list: &[&str], it: &Item| list.iter().any(|n| n.eq_ignore_ascii_case(&it.dim));
    let find = |list: &[&str]| items.iter().find(|it| is(list, it)).cloned();
    let (lat, lon) = (find(&LATITUDE), find(&LONGITUDE));
    let ranges = [&lat, &lon].iter().any(|it| it.as_ref().is_some_and(|it| matches!(it.pick, Pick::Range(..))));
    if !ranges {
        return take_point(items);
    }
    let number = |item: &Item, text: &Option<String>, range: f64| -> Result<Option<f64>, SelError> {
        text.as_deref()
            .map(|t| {
                t.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && v.abs() <= range)
                    .ok_or_else(|| SelError::Point(format!("`{}:{t}` is not in degrees (within ±{range})", item.dim)))
            })
            .transpose()
    };
    let ends = |item: &Option<Item>, range: f64| -> Result<(Option<f64>, Option<f64>), SelError> {
        match item {
            None => Ok((None, None)),
            Some(it) => match &it.pick {
                Pick::Range(a, b) => Ok((number(it, a, range)?, number(it, b, range)?)),
                _ => Err(SelError::Point(format!("`{}` mixes a range with a point; give both as ranges", it.dim))),
            },
        }
    };
    let pick = GridPick::Box { lat: ends(&lat, 90.0)?, lon: ends(&lon, 360.0)? };
    items.retain(|it| !is_point_name(&it.dim));
    Ok(pick)
}

/// Takes the latitude and longitude items out of `items` (see [`names_point`]): the
/// point (lon, lat) in degrees they name.
fn take_point(items: &mut Vec<Item>) -> Result<GridPick, SelError> {
    let is = |list: &[&str], it: &Item| list.iter().any(|n| n.eq_ignore_ascii_case(&it.dim));
    let value = |list: &[&str], what: &str, range: f64| -> Result<f64, SelError> {
        let item = items.iter().find(|it| is(list, it)).ok_or_else(|| SelError::Point(format!("names no {what}")))?;
        let Pick::Nearest(text) = &item.pick else {
            return Err(SelError::Point(format!("`{}` is not a nearest pick (`~VALUE`)", item.dim)));
        };
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && v.abs() <= range)
            .ok_or_else(|| SelError::Point(format!("`{}:~{text}` is not a {what} in degrees", item.dim)))
    };
    let point = GridPick::Point(value(&LONGITUDE, "longitude", 360.0)?, value(&LATITUDE, "latitude", 90.0)?);
    items.retain(|it| !is_point_name(&it.dim));
    Ok(point)
}

/// Parses `sel` (an empty text selects everything).
pub fn parse(text: &str) -> Result<Vec<Item>, SelError> {
    let mut items: Vec<Item> = Vec::new();
    for (i, raw) in text.split(',').enumerate().filter(|(_, r)| !r.trim().is_empty()) {
        let bad = |why| SelError::Syntax { item: i, text: raw.to_owned(), why };
        if i >= MAX_ITEMS {
            return Err(bad("too many items"));
        }
        let (dim, value) = raw.split_once(':').ok_or_else(|| bad("no `:` between the name and the value"))?;
        let (dim, value) = (dim.trim(), value.trim());
        if dim.is_empty() {
            return Err(bad("the dimension name is empty"));
        }
        let pick = if let Some(nearest) = value.strip_prefix('~') {
            Pick::Nearest(nearest.trim().to_owned())
        } else if let Some((a, b)) = value.split_once("..") {
            let end = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
            if end(a).is_none() && end(b).is_none() {
                return Err(bad("a range needs at least one end"));
            }
            Pick::Range(end(a), end(b))
        } else {
            Pick::Exact(value.to_owned())
        };
        if matches!(&pick, Pick::Exact(v) | Pick::Nearest(v) if v.is_empty()) {
            return Err(bad("the value is empty"));
        }
        if items.iter().any(|it| it.dim == dim) {
            return Err(SelError::Repeated(dim.to_owned()));
        }
        items.push(Item { dim: dim.to_owned(), pick });
    }
    Ok(items)
}

/// What a dimension resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Picked {
    /// One index; the dimension is dropped from the result.
    Index(u64),
    /// Runs of indices (two only for a longitude range across the stored seam).
    Runs(Vec<Run>),
}

impl Picked {
    /// The selected indices of this dimension, in order, as (start, count) runs.
    pub fn runs(&self) -> Vec<Run> {
        match self {
            Self::Index(i) => vec![Run { start: *i, count: 1 }],
            Self::Runs(r) => r.clone(),
        }
    }

    /// The number of indices selected.
    pub fn count(&self) -> u64 {
        match self {
            Self::Index(_) => 1,
            Self::Runs(r) => r.iter().map(|r| r.count).sum(),
        }
    }
}

/// Resolves `items` on an array whose dimensions are `names` of lengths `shape`:
/// `labels(d)` gives dimension `d`'s labels, when it has any.
pub fn resolve<'a>(
    items: &[Item],
    names: &[Option<String>],
    shape: &[u64],
    mut labels: impl FnMut(usize) -> Option<&'a Labels>,
) -> Result<Vec<Picked>, SelError> {
    let mut out: Vec<Picked> = shape.iter().map(|&n| Picked::Runs(vec![Run { start: 0, count: n }])).collect();
    for item in items {
        let Some(d) = names.iter().position(|n| n.as_deref() == Some(item.dim.as_str())) else {
            let known = names.iter().map(|n| format!("`{}`", n.as_deref().unwrap_or("(unnamed)"))).collect::<Vec<_>>();
            return Err(SelError::UnknownDimension { dim: item.dim.clone(), known: known.join(", ") });
        };
        let Some(labels) = labels(d) else {
            return Err(SelError::NoLabels { dim: item.dim.clone() });
        };
        let label_error = |source| SelError::Label { dim: item.dim.clone(), source };
        out[d] = match &item.pick {
            Pick::Exact(text) => {
                Picked::Index(labels.exact(labels.parse(text).map_err(label_error)?, text).map_err(label_error)? as u64)
            }
            Pick::Nearest(text) => {
                Picked::Index(labels.nearest(labels.parse(text).map_err(label_error)?).map_err(label_error)? as u64)
            }
            Pick::Range(a, b) => {
                let end = |t: &Option<String>| t.as_deref().map(|t| labels.parse(t)).transpose();
                let (a, b) = (end(a).map_err(label_error)?, end(b).map_err(label_error)?);
                Picked::Runs(labels.range(a, b).map_err(label_error)?)
            }
        };
    }
    Ok(out)
}

/// The index selection of `picked`, when every dimension is one run (`None` for a range
/// across the seam, which takes two reads).
pub fn as_selection(picked: &[Picked]) -> Option<Vec<DimSelection>> {
    picked
        .iter()
        .map(|p| match p {
            Picked::Index(i) => Some(DimSelection { start: *i, step: 1, count: 1, drop: true }),
            Picked::Runs(r) if r.len() == 1 => {
                Some(DimSelection { start: r[0].start, step: 1, count: r[0].count, drop: false })
            }
            Picked::Runs(_) => None,
        })
        .collect()
}

/// An index selection in `s=` syntax, as the `Zarr-Selection` header gives it: `i` for an
/// index, `start:stop`, or `:` for a whole dimension of length `shape[d]`.
pub fn selection_text(selection: &[DimSelection], shape: &[u64]) -> String {
    let items: Vec<String> = selection
        .iter()
        .zip(shape)
        .map(|(d, &n)| {
            if d.drop {
                d.start.to_string()
            } else if d.start == 0 && d.count == n && d.step == 1 {
                ":".to_owned()
            } else if d.step == 1 {
                format!("{}:{}", d.start, d.start + d.count)
            } else {
                format!("{}:{}:{}", d.start, d.start + d.count * d.step, d.step)
            }
        })
        .collect();
    items.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::labels::Kind;

    #[test]
    fn parses_every_kind_of_item_and_names_what_is_wrong() {
        let items = parse("lat:~45.3, lon:10..20,time:2001-01-01..,level:..850,x:7").unwrap();
        assert_eq!(items[0], Item { dim: "lat".into(), pick: Pick::Nearest("45.3".into()) });
        assert_eq!(items[1].pick, Pick::Range(Some("10".into()), Some("20".into())));
        assert_eq!(items[2].pick, Pick::Range(Some("2001-01-01".into()), None));
        assert_eq!(items[3].pick, Pick::Range(None, Some("850".into())));
        assert_eq!(items[4].pick, Pick::Exact("7".into()));
        // Dates keep their colons: only the first separates the name.
        assert_eq!(parse("time:2001-01-01T06:00").unwrap()[0].pick, Pick::Exact("2001-01-01T06:00".into()));
        assert!(parse("").unwrap().is_empty());
        for bad in ["lat", ":3", "lat:", "lat:~", "lat:..", "lat:1,lat:2"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolves_against_names_and_labels() {
        let lat = Labels::new(vec![10.0, 5.0, 0.0], Kind::Plain);
        let names = [Some("time".to_owned()), Some("lat".to_owned())];
        let labels = |d: usize| (d == 1).then_some(&lat);
        let picked = resolve(&parse("lat:~6").unwrap(), &names, &[4, 3], labels).unwrap();
        assert_eq!(picked, vec![Picked::Runs(vec![Run { start: 0, count: 4 }]), Picked::Index(1)]);
        let selection = as_selection(&picked).unwrap();
        assert_eq!(selection_text(&selection, &[4, 3]), ":,1");
        let picked = resolve(&parse("lat:0..5").unwrap(), &names, &[4, 3], labels).unwrap();
        assert_eq!(selection_text(&as_selection(&picked).unwrap(), &[4, 3]), ":,1:3");
        let err = resolve(&parse("lat:3").unwrap(), &names, &[4, 3], labels).unwrap_err();
        assert!(err.is_absent(), "{err}");
        assert!(matches!(resolve(&parse("time:3").unwrap(), &names, &[4, 3], labels), Err(SelError::NoLabels { .. })));
        assert!(matches!(
            resolve(&parse("depth:3").unwrap(), &names, &[4, 3], labels),
            Err(SelError::UnknownDimension { .. })
        ));
    }
}
