//! Where an EDR query takes its values: the cell holding each point (`position`), or the
//! cells whose centre lies in a polygon (`area`), a box (`cube`) or a circle (`radius`) and
//! the box that holds them — on a latitude/longitude grid by its labels, on any other grid
//! by the grid model (`analysis::grids`), its points projected.

use zarrd_core::coords::geo::{self, GridAxis, Taken};
use zarrd_core::reduce::polygon::Shape;

use crate::analysis::grids::Found;
use crate::edr::collection::Collection;
use crate::edr::params::EdrQuery;
use crate::error::{Error, Result};

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

/// Where the values are taken.
#[derive(Debug, Clone)]
pub enum Places {
    /// One cell (row, column) per point asked; `multi` when asked as a `MULTIPOINT`.
    Points { cells: Vec<(u64, u64)>, multi: bool },
    /// The box of the cells taken.
    Box(Taken),
}

/// Examples of the parameters a query cannot do without, for the problem that says so.
const POINT: &str = "coords=POINT(-75.2 45.3)";
const POLYGON: &str = "coords=POLYGON((-80 40,-70 40,-70 50,-80 50,-80 40))";
const BBOX: &str = "bbox=-80,40,-70,50";
const CIRCLE: &str = "coords=POINT(-75.2 45.3)&within=100&within-units=km";
const WITHIN: &str = "within=100";

/// A parameter `query` cannot do without (`example` shows it).
fn required<'a>(query: QueryType, value: Option<&'a String>, example: &str) -> Result<&'a str> {
    let name = example.split('=').next().unwrap_or(example);
    value
        .map(String::as_str)
        .ok_or_else(|| Error::BadRequest(format!("{name} is required for {}, e.g. {example}", query.name())))
}

/// The cells a query takes.
pub fn places(collection: &Collection, query: QueryType, params: &EdrQuery) -> Result<Places> {
    let (lat, lon) = (GridAxis::new(&collection.lat, false), GridAxis::new(&collection.lon, true));
    match query {
        QueryType::Position => {
            let coords = required(query, params.coords.as_ref(), POINT)?;
            let (points, multi) = geo::parse_points(coords).map_err(|e| Error::BadRequest(e.to_string()))?;
            let mut cells = Vec::with_capacity(points.len());
            for (x, y) in points {
                cells.push(containing(&lat, &lon, x, y)?);
            }
            Ok(Places::Points { cells, multi })
        }
        QueryType::Area => {
            let coords = required(query, params.coords.as_ref(), POLYGON)?;
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
            let [west, south, east, north] = bbox_numbers(required(query, params.bbox.as_ref(), BBOX)?)?;
            let taken = cells_where(&lat, &lon, (south, north), |x, _| geo::in_arc(x, west, east));
            boxed(&taken, &lon, "the bbox holds no cell centre")
        }
        QueryType::Radius => {
            let coords = required(query, params.coords.as_ref(), CIRCLE)?;
            let (points, multi) = geo::parse_points(coords).map_err(|e| Error::BadRequest(e.to_string()))?;
            if multi {
                return Err(Error::BadRequest("coords of a radius query is one POINT".into()));
            }
            let (x0, y0) = points[0];
            let km = radius_km(required(query, params.within.as_ref(), WITHIN)?, params.within_units.as_deref())?;
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

/// The cells a query takes on a grid other than 1-D latitude/longitude: the cell holding
/// each point, or those whose centre (lon/lat) the polygon, box or circle holds. With
/// `native`, `coords` and `bbox` are in the grid's own x/y.
pub fn places_on_grid(found: &Found, query: QueryType, params: &EdrQuery, native: bool) -> Result<Places> {
    let grid = &found.grid;
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
            let coords = required(query, params.coords.as_ref(), POINT)?;
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
            let coords = required(query, params.coords.as_ref(), POLYGON)?;
            let shape =
                Shape::parse(coords).map_err(|e| Error::BadRequest(e.to_string().replacen("within", "coords", 1)))?;
            let (rows, cols) = grid.shape();
            if let Some(why) = shape.too_much_work(rows * cols) {
                return Err(Error::OverLimit(why));
            }
            taken(&|_, lon, lat| shape.contains(lon, lat), "the polygon holds no cell centre")
        }
        QueryType::Cube => {
            let text = required(query, params.bbox.as_ref(), BBOX)?;
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
            let coords = required(query, params.coords.as_ref(), CIRCLE)?;
            let (points, multi) = parse_points(coords, native)?;
            if multi {
                return Err(Error::BadRequest("coords of a radius query is one POINT".into()));
            }
            let (x0, y0) = to_lonlat(points[0])?;
            let km = radius_km(required(query, params.within.as_ref(), WITHIN)?, params.within_units.as_deref())?;
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
