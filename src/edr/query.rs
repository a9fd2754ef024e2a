//! An EDR query made into a plan before any read: its parameters parsed, the steps and
//! levels it takes (labels found by binary search), and the cells — the one containing
//! each point (position), or those whose centre lies in a polygon (area), a box (cube) or
//! a circle (radius), with the box that holds them.

use zarrd_core::coords::geo::{self, GridAxis, Taken};
use zarrd_core::coords::labels::{Kind as LabelKind, Labels, Run};
use zarrd_core::reduce::polygon::Shape;

use crate::analysis::grids::Found;
use crate::analysis::reduction::Get;
use crate::edr::collection::{Axis, Collection, Parameter};
use crate::error::{Error, Result};

/// The parameters a query route takes.
pub const PARAMS: &[&str] =
    &["coords", "bbox", "within", "within-units", "datetime", "z", "parameter-name", "parameter_names", "crs", "f"];

/// What a query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryType {
    Position,
    Area,
    Cube,
    Radius,
}

impl QueryType {
    pub const ALL: [Self; 4] = [Self::Position, Self::Area, Self::Cube, Self::Radius];

    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|q| q.name() == name).ok_or_else(|| {
            Error::NotFound(format!(
                "`{name}` is not a query of this collection; it answers position, area, cube and radius (and instances)"
            ))
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::Area => "area",
            Self::Cube => "cube",
            Self::Radius => "radius",
        }
    }
}

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CoverageJSON, as `application/vnd.cov+json` when that is what was asked for.
    CoverageJson {
        vnd: bool,
    },
    GeoJson,
    Csv,
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
                _ => Err(Error::BadRequest(format!(
                    "f `{f}` is not an output format; allowed: CoverageJSON, GeoJSON, CSV"
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
        }
    }
}

/// Where the values are taken.
#[derive(Debug, Clone)]
pub enum Places {
    /// One cell (row, column) per point asked; `multi` when asked as a `MULTIPOINT`.
    Points { cells: Vec<(u64, u64)>, multi: bool },
    /// The box of the cells taken.
    Box(Taken),
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
pub fn plan(collection: &Collection, query: QueryType, params: &impl Get) -> Result<Plan> {
    let native = crs(collection, params.get("crs"))?;
    let parameters = parameters(collection, params)?;
    let axes = parameters[0].axes.clone();
    let times = match (axes.contains(&Axis::T), &collection.time, params.get("datetime")) {
        (true, Some(labels), text) => steps(labels, text)?,
        (false, _, Some(_)) | (true, None, Some(_)) => {
            return Err(Error::BadRequest(format!(
                "datetime: the parameters asked of `{}` have no time axis",
                collection.id
            )));
        }
        _ => Vec::new(),
    };
    let levels = match (axes.contains(&Axis::Z), &collection.vertical, params.get("z")) {
        (true, Some(v), text) => levels(&v.labels, text)?,
        (false, _, Some(_)) | (true, None, Some(_)) => {
            return Err(Error::BadRequest(format!("z: the parameters asked of `{}` have no levels", collection.id)));
        }
        _ => Vec::new(),
    };
    let places = match &collection.grid {
        Some(found) => places_on_grid(found, query, params, native)?,
        None => places(collection, query, params)?,
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

/// The cells a query takes on a grid other than 1-D latitude/longitude: the cell holding
/// each point, or those whose centre (lon/lat) the polygon, box or circle holds. With
/// `native`, `coords` and `bbox` are in the grid's own x/y.
fn places_on_grid(found: &Found, query: QueryType, params: &impl Get, native: bool) -> Result<Places> {
    let grid = &found.grid;
    let required = |name: &str, example: &str| {
        params
            .get(name)
            .ok_or_else(|| Error::BadRequest(format!("{name} is required for {}, e.g. {example}", query.name())))
    };
    // A point given in native x/y, as lon/lat.
    let to_lonlat = |(x, y): (f64, f64)| -> Result<(f64, f64)> {
        if !native {
            return Ok((x, y));
        }
        grid.crs.inverse(x, y).ok_or_else(|| Error::BadRequest(format!("the point ({x} {y}) is not on the Earth")))
    };
    let bbox = |b: [f64; 4]| format!("lon {} to {}, lat {} to {}", b[0], b[2], b[1], b[3]);
    let centres = || found.centres();
    let (_, cols) = grid.shape();
    let taken = |inside: &dyn Fn(usize, f64, f64) -> bool, empty: &str| -> Result<Places> {
        let all = centres()?;
        let cells: Vec<(u64, u64)> = all
            .iter()
            .enumerate()
            .filter(|&(k, &(lon, lat))| !lon.is_nan() && inside(k, lon, lat))
            .map(|(k, _)| (k as u64 / cols, k as u64 % cols))
            .collect();
        let columns: Vec<f64> = (0..cols).map(|c| c as f64).collect();
        Taken::of(&cells, &columns, false)
            .map(Places::Box)
            .ok_or_else(|| Error::BadRequest(format!("{empty} of this collection's grid")))
    };
    match query {
        QueryType::Position => {
            let coords = required("coords", "coords=POINT(-75.2 45.3)")?;
            let (points, multi) = parse_points(coords, native)?;
            let mut cells = Vec::with_capacity(points.len());
            for p in points {
                let (lon, lat) = to_lonlat(p)?;
                let (row, col) = grid.cell(lon, lat).ok_or_else(|| {
                    Error::BadRequest(format!(
                        "the point ({} {}) is outside the grid, whose cells lie within {}",
                        p.0,
                        p.1,
                        bbox(grid.bbox)
                    ))
                })?;
                cells.push((u64::from(row), u64::from(col)));
            }
            Ok(Places::Points { cells, multi })
        }
        QueryType::Area => {
            if native {
                return Err(Error::BadRequest("an area's polygon is given in CRS84 (lon lat); leave crs out".into()));
            }
            let coords = required("coords", "coords=POLYGON((-80 40,-70 40,-70 50,-80 50,-80 40))")?;
            let shape =
                Shape::parse(coords).map_err(|e| Error::BadRequest(e.to_string().replacen("within", "coords", 1)))?;
            let (rows, cols) = grid.shape();
            if let Some(why) = shape.too_much_work(rows * cols) {
                return Err(Error::OverLimit(why));
            }
            taken(&|_, lon, lat| shape.contains(lon, lat), "the polygon holds no cell centre")
        }
        QueryType::Cube => {
            let text = required("bbox", "bbox=-80,40,-70,50")?;
            let [west, south, east, north] = bbox_numbers(text)?;
            if native {
                // The cells whose native centre the box holds.
                let (rows, cols) = grid.shape();
                let cells: Vec<(u64, u64)> = (0..rows)
                    .flat_map(|r| (0..cols).map(move |c| (r, c)))
                    .filter(|&(r, c)| {
                        let (x, y) = grid.native.centre(r, c);
                        (west..=east).contains(&x) && (south..=north).contains(&y)
                    })
                    .collect();
                let columns: Vec<f64> = (0..cols).map(|c| c as f64).collect();
                return Taken::of(&cells, &columns, false).map(Places::Box).ok_or_else(|| {
                    Error::BadRequest("the bbox holds no cell centre of this collection's grid".into())
                });
            }
            taken(
                &|_, lon, lat| geo::in_arc(lon, west, east) && (south..=north).contains(&lat),
                "the bbox holds no cell centre",
            )
        }
        QueryType::Radius => {
            let coords = required("coords", "coords=POINT(-75.2 45.3)&within=100&within-units=km")?;
            let (points, multi) = parse_points(coords, native)?;
            if multi {
                return Err(Error::BadRequest("coords of a radius query is one POINT".into()));
            }
            let (x0, y0) = to_lonlat(points[0])?;
            let km = radius_km(required("within", "within=100")?, params.get("within-units"))?;
            taken(&|_, lon, lat| geo::great_circle_km(x0, y0, lon, lat) <= km, "the circle holds no cell centre")
        }
    }
}

/// WKT points; in native x/y (`native`) without the latitude check.
fn parse_points(coords: &str, native: bool) -> Result<(Vec<(f64, f64)>, bool)> {
    if native {
        return geo::parse_native_points(coords).map_err(|e| Error::BadRequest(e.to_string()));
    }
    geo::parse_points(coords).map_err(|e| Error::BadRequest(e.to_string()))
}

/// `bbox`: four numbers, south not above north.
fn bbox_numbers(text: &str) -> Result<[f64; 4]> {
    // Every item a number: a typo (`10,40,,20,50`) is refused, never read as another box.
    let numbers: Option<Vec<f64>> = text.split(',').map(|s| s.trim().parse::<f64>().ok()).collect();
    let Some([west, south, east, north]) = numbers.as_deref().and_then(|n| <[f64; 4]>::try_from(n).ok()) else {
        return Err(Error::BadRequest(format!(
            "bbox `{text}` is not four numbers minlon,minlat,maxlon,maxlat (levels go in z)"
        )));
    };
    if ![west, south, east, north].iter().all(|v| v.is_finite()) || south > north {
        return Err(Error::BadRequest(format!("bbox `{text}`: minlat must not be above maxlat")));
    }
    Ok([west, south, east, north])
}

/// The parameters asked for (`parameter-name`, or OWSLib's `parameter_names`), all by
/// default; they must share their dimensions.
fn parameters(collection: &Collection, params: &impl Get) -> Result<Vec<Parameter>> {
    let asked = match (params.get("parameter-name"), params.get("parameter_names")) {
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

/// The cells a query takes.
fn places(collection: &Collection, query: QueryType, params: &impl Get) -> Result<Places> {
    let (lat, lon) = (GridAxis::new(&collection.lat, false), GridAxis::new(&collection.lon, true));
    let required = |name: &str, example: &str| {
        params
            .get(name)
            .ok_or_else(|| Error::BadRequest(format!("{name} is required for {}, e.g. {example}", query.name())))
    };
    match query {
        QueryType::Position => {
            let coords = required("coords", "coords=POINT(-75.2 45.3)")?;
            let (points, multi) = geo::parse_points(coords).map_err(|e| Error::BadRequest(e.to_string()))?;
            let mut cells = Vec::with_capacity(points.len());
            for (x, y) in points {
                cells.push(containing(&lat, &lon, x, y)?);
            }
            Ok(Places::Points { cells, multi })
        }
        QueryType::Area => {
            let coords = required("coords", "coords=POLYGON((-80 40,-70 40,-70 50,-80 50,-80 40))")?;
            let shape =
                Shape::parse(coords).map_err(|e| Error::BadRequest(e.to_string().replacen("within", "coords", 1)))?;
            let (west, south, east, north) = shape.bounds();
            let rows = lat.labels.values.iter().filter(|y| (south..=north).contains(*y)).count() as u64;
            let columns = lon.labels.values.iter().filter(|&&x| geo::in_arc(x, west, east)).count() as u64;
            if let Some(why) = shape.too_much_work(rows * columns) {
                return Err(Error::OverLimit(why));
            }
            let taken =
                cells_where(&lat, &lon, (south, north), |x, y| geo::in_arc(x, west, east) && shape.contains(x, y));
            boxed(&taken, &lon, "the polygon holds no cell centre")
        }
        QueryType::Cube => {
            let [west, south, east, north] = bbox_numbers(required("bbox", "bbox=-80,40,-70,50")?)?;
            let taken = cells_where(&lat, &lon, (south, north), |x, _| geo::in_arc(x, west, east));
            boxed(&taken, &lon, "the bbox holds no cell centre")
        }
        QueryType::Radius => {
            let coords = required("coords", "coords=POINT(-75.2 45.3)&within=100&within-units=km")?;
            let (points, multi) = geo::parse_points(coords).map_err(|e| Error::BadRequest(e.to_string()))?;
            if multi {
                return Err(Error::BadRequest("coords of a radius query is one POINT".into()));
            }
            let (x0, y0) = points[0];
            let km = radius_km(required("within", "within=100")?, params.get("within-units"))?;
            // Rows beyond the radius in latitude cannot hold a cell within it.
            let reach = (km / geo::EARTH_RADIUS_KM).to_degrees();
            let taken =
                cells_where(&lat, &lon, (y0 - reach, y0 + reach), |x, y| geo::great_circle_km(x0, y0, x, y) <= km);
            boxed(&taken, &lon, "the circle holds no cell centre")
        }
    }
}

/// The units `within-units` takes on `radius` (collections list them as `distanceunits`).
pub const DISTANCE_UNITS: [&str; 3] = ["km", "m", "mi"];

/// `within` in `within-units` (km by default; m; mi) as km.
fn radius_km(within: &str, units: Option<&str>) -> Result<f64> {
    let r = within.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| {
        Error::BadRequest(format!("within `{within}` is not a distance (a number from 0, in within-units)"))
    })?;
    let factor = match units.map(|u| u.trim().to_ascii_lowercase()) {
        None => 1.0,
        Some(u) => match u.as_str() {
            "km" | "kilometers" | "kilometres" => 1.0,
            "m" | "meters" | "metres" => 0.001,
            "mi" | "miles" => 1.609_344,
            _ => {
                return Err(Error::BadRequest(format!(
                    "within-units `{u}` is not known; allowed: {}",
                    DISTANCE_UNITS.join(", ")
                )));
            }
        },
    };
    Ok(r * factor)
}

/// The cell containing point (`x`, `y`), or 400 saying it is outside the grid.
fn containing(lat: &GridAxis, lon: &GridAxis, x: f64, y: f64) -> Result<(u64, u64)> {
    if let (Some(row), Some(column)) = (lat.containing(y), lon.containing(x)) {
        return Ok((row as u64, column as u64));
    }
    let (south, north) = lat.edges();
    let (west, east) = lon.edges();
    let lons = if lon.is_global() { "all longitudes".to_owned() } else { format!("longitudes {west} to {east}") };
    Err(Error::BadRequest(format!(
        "the point ({x} {y}) is outside the grid, which covers latitudes {} to {} and {lons}",
        south.max(-90.0),
        north.min(90.0)
    )))
}

/// The cells whose centre (lon, lat) passes `inside`, among rows whose latitude lies in
/// `rows` (a cheap bound first).
fn cells_where(lat: &GridAxis, lon: &GridAxis, rows: (f64, f64), inside: impl Fn(f64, f64) -> bool) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for (r, &y) in lat.labels.values.iter().enumerate() {
        if !(rows.0..=rows.1).contains(&y) {
            continue;
        }
        for (c, &x) in lon.labels.values.iter().enumerate() {
            if inside(x, y) {
                out.push((r as u64, c as u64));
            }
        }
    }
    out
}

/// The box of `cells`, or 400 with `empty` when there are none.
fn boxed(cells: &[(u64, u64)], lon: &GridAxis, empty: &str) -> Result<Places> {
    Taken::of(cells, &lon.labels.values, lon.is_global())
        .map(Places::Box)
        .ok_or_else(|| Error::BadRequest(format!("{empty} of this collection's grid")))
}
