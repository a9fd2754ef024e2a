//! An EDR query made into a plan before any read: its parameters parsed, the steps and
//! levels it takes (labels found by binary search), and the cells — the one containing
//! each point (position), or those whose centre lies in a polygon (area), a box (cube) or
//! a circle (radius), with the box that holds them.

use zarrd_core::coords::labels::{Kind as LabelKind, Labels, Run};

use crate::analysis::grids::Found;
use crate::edr::collection::{Axis, Collection, Parameter};
use crate::edr::params::EdrQuery;
use crate::edr::places;
pub use crate::edr::places::{DISTANCE_UNITS, Places, QueryType};
use crate::error::{Error, Result};

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CoverageJSON, as `application/vnd.cov+json` when that is what was asked for.
    CoverageJson {
        vnd: bool,
    },
    GeoJson,
    Csv,
    /// Area and cube only: a NetCDF classic file of the Grid coverage.
    NetCdf,
    /// Cube only: a Cloud Optimized GeoTIFF of one parameter.
    GeoTiff,
}

impl Format {
    /// `f`, else the first acceptable type of `accept`, else CoverageJSON.
    pub fn choose(f: Option<&str>, accept: Option<&str>) -> Result<Self> {
        if let Some(f) = f {
            return match f.to_ascii_lowercase().as_str() {
                "coveragejson" | "covjson" | "json" | "application/prs.coverage+json" => {
                    Ok(Self::CoverageJson { vnd: false })
                }
                "application/vnd.cov+json" => Ok(Self::CoverageJson { vnd: true }),
                "geojson" | "application/geo+json" => Ok(Self::GeoJson),
                "csv" | "text/csv" => Ok(Self::Csv),
                "netcdf" | "nc" | "application/x-netcdf" => Ok(Self::NetCdf),
                "geotiff" | "tif" | "tiff" | "cog" | "image/tiff" => Ok(Self::GeoTiff),
                _ => Err(Error::BadRequest(format!(
                    "f `{f}` is not an output format; allowed: CoverageJSON, GeoJSON, CSV, NetCDF (area and cube), GeoTIFF (cube)"
                ))),
            };
        }
        for item in accept.unwrap_or("").split(',') {
            let media = item.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
            match media.as_str() {
                "application/prs.coverage+json" => return Ok(Self::CoverageJson { vnd: false }),
                "application/vnd.cov+json" => return Ok(Self::CoverageJson { vnd: true }),
                "application/geo+json" => return Ok(Self::GeoJson),
                "text/csv" => return Ok(Self::Csv),
                "application/x-netcdf" => return Ok(Self::NetCdf),
                "image/tiff" => return Ok(Self::GeoTiff),
                _ => {}
            }
        }
        Ok(Self::CoverageJson { vnd: false })
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Self::CoverageJson { vnd: false } => "application/prs.coverage+json",
            Self::CoverageJson { vnd: true } => "application/vnd.cov+json",
            Self::GeoJson => "application/geo+json",
            Self::Csv => "text/csv; charset=utf-8",
            Self::NetCdf => crate::downloads::netcdf::MEDIA_TYPE,
            Self::GeoTiff => crate::downloads::tiff::MEDIA_TYPE,
        }
    }
}

/// A query, planned.
#[derive(Debug, Clone)]
pub struct Plan {
    pub query: QueryType,
    pub parameters: Vec<Parameter>,
    /// Per dimension of the parameters, what it is.
    pub axes: Vec<Axis>,
    /// The steps taken (empty without a time axis).
    pub times: Vec<Run>,
    /// The levels taken, in stored order (empty without a vertical axis).
    pub levels: Vec<u64>,
    pub places: Places,
}

impl Plan {
    pub fn step_count(&self) -> u64 {
        self.times.iter().map(|r| r.count).sum()
    }

    /// Values per parameter and place (a point, or a cell of the box).
    pub fn values_per_cell(&self) -> u64 {
        self.step_count().max(1) * (self.levels.len() as u64).max(1)
    }

    /// Cells read per parameter and step and level.
    pub fn cells(&self) -> u64 {
        match &self.places {
            Places::Points { cells, .. } => cells.len() as u64,
            Places::Box(taken) => (taken.rows.end - taken.rows.start) * taken.columns.len() as u64,
        }
    }

    /// Cells taken (those an answer lists in GeoJSON and CSV).
    pub fn cells_taken(&self) -> u64 {
        match &self.places {
            Places::Points { cells, .. } => cells.len() as u64,
            Places::Box(taken) => taken.mask.iter().filter(|&&m| m).count() as u64,
        }
    }

    /// Every value read.
    pub fn values(&self) -> u128 {
        u128::from(self.cells()) * u128::from(self.values_per_cell()) * self.parameters.len() as u128
    }
}

/// Plans query `query` on `collection`.
pub fn plan(collection: &Collection, query: QueryType, params: &EdrQuery) -> Result<Plan> {
    let native = crs(collection, params.crs.as_deref())?;
    let parameters = parameters(collection, params)?;
    let axes = parameters[0].axes.clone();
    let times = match (axes.contains(&Axis::T), &collection.time, params.datetime.as_deref()) {
        (true, Some(labels), text) => steps(labels, text)?,
        (false, _, Some(_)) | (true, None, Some(_)) => {
            return Err(Error::BadRequest(format!(
                "datetime: the parameters asked of `{}` have no time axis",
                collection.id
            )));
        }
        _ => Vec::new(),
    };
    let levels = match (axes.contains(&Axis::Z), &collection.vertical, params.z.as_deref()) {
        (true, Some(v), text) => levels(&v.labels, text)?,
        (false, _, Some(_)) | (true, None, Some(_)) => {
            return Err(Error::BadRequest(format!("z: the parameters asked of `{}` have no levels", collection.id)));
        }
        _ => Vec::new(),
    };
    let places = match &collection.grid {
        Some(found) => places::places_on_grid(found, query, params, native)?,
        None => places::places(collection, query, params)?,
    };
    Ok(Plan { query, parameters, axes, times, levels, places })
}

/// The EPSG URI of a grid's CRS, when it has a code.
pub fn native_uri(found: &Found) -> Option<String> {
    found.grid.crs.code.map(|code| format!("http://www.opengis.net/def/crs/EPSG/0/{code}"))
}

/// `crs`: CRS84 or EPSG:4326 (both read as longitude, latitude), or on a projected grid
/// with an EPSG code that code (then `coords` and `bbox` are native x/y): whether it was.
fn crs(collection: &Collection, text: Option<&str>) -> Result<bool> {
    let Some(text) = text else { return Ok(false) };
    let native = collection.grid.as_deref().and_then(|f| f.grid.crs.code.map(|code| (code, native_uri(f))));
    if let Some((code, Some(uri))) = &native {
        let t = text.trim().to_ascii_lowercase();
        if t == uri.to_ascii_lowercase()
            || t == uri.replace("http:", "https:").to_ascii_lowercase()
            || t == format!("epsg:{code}")
        {
            return Ok(true);
        }
    }
    let known = [
        "crs84",
        "epsg:4326",
        "http://www.opengis.net/def/crs/ogc/1.3/crs84",
        "https://www.opengis.net/def/crs/ogc/1.3/crs84",
        "http://www.opengis.net/def/crs/epsg/0/4326",
        "https://www.opengis.net/def/crs/epsg/0/4326",
    ];
    if known.contains(&text.trim().to_ascii_lowercase().as_str()) {
        Ok(false)
    } else {
        let also = native.map(|(code, _)| format!(", EPSG:{code}")).unwrap_or_default();
        Err(Error::BadRequest(format!("crs `{text}` is not supported; allowed: CRS84, EPSG:4326{also}")))
    }
}

/// The parameters asked for (`parameter-name`, or OWSLib's `parameter_names`), all by
/// default; they must share their dimensions.
fn parameters(collection: &Collection, params: &EdrQuery) -> Result<Vec<Parameter>> {
    let asked = match (params.parameter_name.as_deref(), params.parameter_names.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(Error::BadRequest("give parameter-name or parameter_names, not both".into()));
        }
        (Some(t), None) | (None, Some(t)) => Some(t),
        (None, None) => None,
    };
    let all = || collection.parameters.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ");
    let chosen: Vec<Parameter> = match asked {
        None => collection.parameters.clone(),
        Some(text) => {
            let mut out: Vec<Parameter> = Vec::new();
            for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let p = collection.parameter(name).ok_or_else(|| {
                    Error::BadRequest(format!(
                        "parameter-name `{name}` is not a parameter of `{}`; it has: {}",
                        collection.id,
                        all()
                    ))
                })?;
                if !out.iter().any(|o| o.name == p.name) {
                    out.push(p.clone());
                }
            }
            out
        }
    };
    let Some(first) = chosen.first() else {
        return Err(Error::BadRequest(format!(
            "parameter-name names no parameter; `{}` has: {}",
            collection.id,
            all()
        )));
    };
    if let Some(other) = chosen.iter().find(|p| p.axes != first.axes) {
        return Err(Error::BadRequest(format!(
            "the parameters `{}` and `{}` of `{}` lie on different axes; ask for them apart with parameter-name",
            first.name, other.name, collection.id
        )));
    }
    Ok(chosen)
}

/// The steps `datetime` takes: an instant the nearest, an interval (`a/b`, `a/..`,
/// `../b`) every step within; none given, every step.
fn steps(labels: &Labels, text: Option<&str>) -> Result<Vec<Run>> {
    let all = vec![Run { start: 0, count: labels.len() as u64 }];
    let Some(text) = text else { return Ok(all) };
    let LabelKind::Time(cf) = &labels.kind else { return Ok(all) };
    let bad = |e: &dyn std::fmt::Display| {
        Error::BadRequest(format!(
            "datetime `{text}`: {e}; allowed: an instant (2021-03-01T06:00:00Z) or an interval a/b, a/.., ../b"
        ))
    };
    let instant = |s: &str| cf.value_in_zone(s.trim()).map_err(|e| bad(&e));
    let runs = match text.split_once('/') {
        None => vec![Run { start: labels.nearest(instant(text)?).map_err(|e| bad(&e))? as u64, count: 1 }],
        Some((a, b)) => {
            let end = |s: &str| if s.trim() == ".." || s.trim().is_empty() { Ok(None) } else { instant(s).map(Some) };
            let (a, b) = (end(a)?, end(b)?);
            if let (Some(a), Some(b)) = (a, b)
                && a > b
            {
                return Err(bad(&"the interval ends before it starts"));
            }
            labels.range(a, b).map_err(|e| bad(&e))?
        }
    };
    if runs.iter().all(|r| r.count == 0) {
        let first = labels.text(0).unwrap_or_default();
        let last = labels.text(labels.len().saturating_sub(1)).unwrap_or_default();
        return Err(Error::BadRequest(format!(
            "datetime `{text}` holds no time step; the steps run {first} to {last}"
        )));
    }
    Ok(runs)
}

/// The levels `z` takes: a value the nearest, `a/b` every level within, `a,b,c` the
/// nearest of each; none given, every level. In stored order.
fn levels(labels: &Labels, text: Option<&str>) -> Result<Vec<u64>> {
    let Some(text) = text else { return Ok((0..labels.len() as u64).collect()) };
    let bad = |what: &str| {
        Error::BadRequest(format!("z `{text}`: {what}; allowed: a level (850), an interval a/b, or a list a,b,c"))
    };
    let number = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    let mut out: Vec<u64> = Vec::new();
    if let Some((a, b)) = text.split_once('/') {
        let (Some(a), Some(b)) = (number(a), number(b)) else { return Err(bad("not two numbers")) };
        let runs = labels.range(Some(a), Some(b)).map_err(|e| bad(&e.to_string()))?;
        out.extend(runs.iter().flat_map(|r| r.start..r.start + r.count));
    } else {
        for item in text.split(',') {
            let v = number(item).ok_or_else(|| bad(&format!("`{item}` is not a number")))?;
            out.push(labels.nearest(v).map_err(|e| bad(&e.to_string()))? as u64);
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(bad("no level lies there"));
    }
    Ok(out)
}
