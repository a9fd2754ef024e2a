//! An area or cube answer as a NetCDF classic file (`f=NetCDF`): the selection as its Grid
//! coverage describes it — time (seconds since 1970 in the collection's calendar), the
//! vertical levels, the cell centres (CRS84 longitudes and latitudes, or a projected
//! grid's native x/y with 2-D latitude/longitude and its grid mapping) — and every
//! requested parameter as CF-decoded float64, NaN where missing or not taken (`_FillValue`
//! NaN). The values are written from the answer piece by piece, never held twice.

use std::sync::Arc;

use bytes::Bytes;

use crate::downloads::netcdf::{self, Dimension, Leading, NcType, Values, Variable};
use crate::edr::collection::Collection;
use crate::edr::encode::Answer;
use crate::edr::read::Coverage;
use crate::error::{Error, Result};
use zarrd_core::coords::calendar::CfTime;
use zarrd_core::coords::labels::Kind as LabelKind;

/// The pieces a file is sent in (about this many bytes each).
const PIECE: usize = 64 * 1024;

/// A file being written: its head (header and coordinates), then each parameter's values.
pub struct NetCdf {
    head: Option<Vec<u8>>,
    answer: Arc<Answer>,
    parameter: usize,
    at: usize,
    pub length: u64,
}

/// A text attribute.
fn text(name: &str, value: &str) -> (String, Values) {
    (name.to_owned(), Values::text(value))
}

/// The file of `answer` (an area or cube query of `collection`).
pub fn file(collection: &Collection, answer: Arc<Answer>) -> Result<NetCdf> {
    let [coverage] = answer.coverages.as_slice() else {
        return Err(Error::Unsupported("f=NetCDF writes one Grid coverage; this answer has none or several".into()));
    };
    if coverage.listed {
        return Err(Error::Unsupported(
            "f=NetCDF writes a Grid coverage; on a curvilinear grid an area or cube is a list of cells: use f=CoverageJSON or f=CSV"
                .into(),
        ));
    }
    let mut out = Leading::default();
    let mut dims = Vec::new();
    if answer.domain.t.is_some() {
        dims.push(time(&mut out, collection, &answer)?);
    }
    if let Some(z) = &answer.domain.z {
        dims.push(vertical(&mut out, collection, z));
    }
    let extra = horizontal(&mut out, collection, coverage, &mut dims);
    for p in &answer.plan.parameters {
        let mut attributes = vec![text("long_name", &p.label)];
        attributes.extend(p.standard_name.as_deref().map(|s| text("standard_name", s)));
        attributes.extend(p.units.as_deref().map(|u| text("units", u)));
        attributes.push(("_FillValue".into(), Values::doubles(&[f64::NAN])));
        attributes.extend(extra.iter().cloned());
        let name = netcdf::name(&p.name);
        out.file.variables.push(Variable { name, dims: dims.clone(), nc_type: NcType::Double, attributes });
    }
    out.file.attributes = vec![
        text("title", &collection.title),
        text("Conventions", "CF-1.10"),
        text("source", &format!("EDR collection {}", collection.id)),
        text("history", &format!("zarrd {}: EDR {} query", env!("CARGO_PKG_VERSION"), answer.plan.query.name())),
    ];
    let layout = out.file.layout().map_err(|e| Error::Unsupported(e.to_string()))?;
    let head = [layout.header, out.bytes].concat();
    Ok(NetCdf { head: Some(head), answer, parameter: 0, at: 0, length: layout.length })
}

/// Adds a dimension of `len` named `name` and its coordinate variable; returns the dimension.
fn axis(out: &mut Leading, name: &str, attributes: Vec<(String, Values)>, values: &[f64]) -> usize {
    let dim = out.file.dims.len();
    out.file.dims.push(Dimension { name: name.to_owned(), len: values.len() as u64 });
    let variable = Variable { name: name.to_owned(), dims: vec![dim], nc_type: NcType::Double, attributes };
    out.push(variable, &Values::doubles(values).bytes);
    dim
}

/// The steps taken, in seconds since 1970 on the collection's calendar.
fn time(out: &mut Leading, collection: &Collection, answer: &Answer) -> Result<usize> {
    let labels = collection
        .time
        .as_deref()
        .ok_or_else(|| Error::Internal { detail: "a time axis without time labels".into(), source: None })?;
    let LabelKind::Time(cf) = &labels.kind else {
        return Err(Error::Unsupported("the time axis has no CF units".into()));
    };
    let calendar = cf.calendar.name();
    let reference = CfTime::parse("seconds since 1970-01-01 00:00:00", Some(calendar))
        .map_err(|e| Error::Unsupported(format!("1970-01-01 is not a date of the {calendar} calendar: {e}")))?;
    let seconds: Vec<f64> = answer
        .plan
        .times
        .iter()
        .flat_map(|run| run.start..run.start + run.count)
        .map(|i| cf.datetime(labels.values[i as usize]).map_or(f64::NAN, |d| reference.value(&d)))
        .collect();
    let attributes = vec![
        text("standard_name", "time"),
        text("units", "seconds since 1970-01-01 00:00:00"),
        text("calendar", calendar),
        text("axis", "T"),
    ];
    Ok(axis(out, "time", attributes, &seconds))
}

/// The levels taken.
fn vertical(out: &mut Leading, collection: &Collection, z: &[f64]) -> usize {
    let vertical = collection.vertical.as_ref();
    let mut attributes = vec![text("axis", "Z")];
    attributes.extend(vertical.and_then(|v| v.units.as_deref()).map(|u| text("units", u)));
    attributes.extend(vertical.and_then(|v| v.positive.as_deref()).map(|p| text("positive", p)));
    axis(out, &netcdf::name(vertical.map_or("z", |v| v.name.as_str())), attributes, z)
}

/// The cell centres (CRS84, or a projected grid's x/y with 2-D latitude/longitude and its
/// grid mapping); returns the attributes the parameters take from them.
fn horizontal(
    out: &mut Leading,
    collection: &Collection,
    c: &Coverage,
    dims: &mut Vec<usize>,
) -> Vec<(String, Values)> {
    let describe = |long: &str, standard: &str, units: &str, axis: &str| {
        vec![text("standard_name", standard), text("units", units), text("axis", axis), text("long_name", long)]
    };
    let (Some(places), Some(found)) = (&c.places, &collection.grid) else {
        dims.push(axis(out, "lat", describe("latitude", "latitude", "degrees_north", "Y"), &c.y));
        dims.push(axis(out, "lon", describe("longitude", "longitude", "degrees_east", "X"), &c.x));
        return Vec::new();
    };
    let y = describe("y coordinate of projection", "projection_y_coordinate", "m", "Y");
    let x = describe("x coordinate of projection", "projection_x_coordinate", "m", "X");
    let (ydim, xdim) = (axis(out, "y", y, &c.y), axis(out, "x", x, &c.x));
    dims.extend([ydim, xdim]);
    for (name, standard, units) in [("lat", "latitude", "degrees_north"), ("lon", "longitude", "degrees_east")] {
        let values: Vec<f64> = places.iter().map(|p| if name == "lat" { p.lat } else { p.lon }).collect();
        let attributes = vec![text("standard_name", standard), text("units", units)];
        let variable = Variable { name: name.into(), dims: vec![ydim, xdim], nc_type: NcType::Double, attributes };
        out.push(variable, &Values::doubles(&values).bytes);
    }
    let wkt = found.grid.crs_wkt();
    let attributes = vec![text("crs_wkt", &wkt), text("spatial_ref", &wkt)];
    out.push(
        Variable { name: "crs".into(), dims: vec![], nc_type: NcType::Int, attributes },
        &Values::ints(&[0]).bytes,
    );
    vec![text("coordinates", "lat lon"), text("grid_mapping", "crs")]
}

impl NetCdf {
    /// The next piece of the file, `None` at its end.
    pub fn next_piece(&mut self) -> Option<Bytes> {
        if let Some(head) = self.head.take() {
            return Some(Bytes::from(head));
        }
        let values = &self.answer.coverages[0].values;
        while self.parameter < values.len() {
            let all = &values[self.parameter];
            if self.at < all.len() {
                let end = (self.at + PIECE / 8).min(all.len());
                let piece: Vec<u8> = all[self.at..end].iter().flat_map(|v| v.to_be_bytes()).collect();
                self.at = end;
                return Some(Bytes::from(piece));
            }
            self.parameter += 1;
            self.at = 0;
        }
        None
    }
}
