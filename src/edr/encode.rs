//! EDR answers as text: CoverageJSON (<https://docs.ogc.org/cs/21-069r2/21-069r2.html>),
//! GeoJSON and CSV, written straight from the values (no JSON tree in between) piece by
//! piece as the connection takes them ([`Text`]), and the size an answer may reach, known
//! before any read.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use zarrd_core::coords::calendar::Calendar;
use zarrd_core::coords::labels::Kind;
use zarrd_core::zarr::data_type::DataType;

use crate::edr::collection::{Collection, Parameter};
use crate::edr::covjson::{
    self, AxisUnit, I18n, ObservedProperty, Referencing, System, Unit, VerticalAxis, VerticalCs,
};
use crate::edr::query::{Format, Places, Plan};
use crate::edr::read::{Coverage, Domain, Place};
use crate::{csv, numbers};

/// Bytes a value may take in text (`-1.2345678901234567e-300` and a separator).
const VALUE_BYTES: u64 = 26;
/// Bytes a GeoJSON feature or CSV row may take besides its values.
const FEATURE_BYTES: u64 = 160;
const ROW_BYTES: u64 = 80;

/// The most bytes the answer to `plan` may take as `format`.
pub fn size_bound(plan: &Plan, format: Format) -> u128 {
    let n = plan.parameters.len() as u128;
    let steps = u128::from(plan.values_per_cell());
    let axes = u128::from(plan.step_count()) * 32 + plan.levels.len() as u128 * 26 + u128::from(plan.cells()) * 52;
    match format {
        Format::CoverageJson { .. } => plan.values() * u128::from(VALUE_BYTES) + axes + 4096 * (1 + n),
        Format::GeoJson => u128::from(plan.cells_taken()) * steps * (u128::from(FEATURE_BYTES) + n * 64),
        Format::Csv => u128::from(plan.cells_taken()) * steps * (u128::from(ROW_BYTES) + n * u128::from(VALUE_BYTES)),
        // Every value as a double, the axes (2-D lat/lon on a projected grid) and the header.
        Format::NetCdf => plan.values() * 8 + u128::from(plan.cells()) * 16 + axes + 4096 * (1 + n),
        // Every value as a double (deflated tiles can outgrow it a little) and the overviews.
        Format::GeoTiff => plan.values() * 8 * 3 / 2 + 65_536,
    }
}

fn number_list(out: &mut String, values: &[f64], decoded: DataType) {
    out.push('[');
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        numbers::decoded(out, v, decoded, "null");
    }
    out.push(']');
}

/// The kind of domain of a coverage of `plan` (`listed`: its cells listed one by one).
fn domain_type(plan: &Plan, listed: bool) -> &'static str {
    if listed {
        return if plan.step_count() > 0 { "MultiPointSeries" } else { "MultiPoint" };
    }
    if matches!(plan.places, Places::Box(_)) {
        return "Grid";
    }
    let (nt, nz) = (plan.step_count(), plan.levels.len());
    match (nt > 1, nz > 1) {
        (true, true) => "Grid",
        (false, true) => "VerticalProfile",
        (true, false) => "PointSeries",
        (false, false) => "Point",
    }
}

/// The CoverageJSON `referencing` of a collection's axes: x/y in CRS84, or a box on a
/// grid other than latitude/longitude in its native `ProjectedCRS` (by EPSG URI, else WKT;
/// not the cells a curvilinear grid lists, which are at their centres in CRS84).
fn referencing<'a>(collection: &'a Collection, plan: &Plan, domain: &Domain, listed: bool) -> Vec<Referencing<'a>> {
    let system = match (&collection.grid, &plan.places) {
        (Some(found), Places::Box(_)) if !listed => match crate::edr::query::native_uri(found) {
            Some(id) => System::Projected { id: Some(id), wkt: None },
            None => System::Projected { id: None, wkt: Some(found.grid.crs_wkt()) },
        },
        _ => System::Geographic { id: "http://www.opengis.net/def/crs/OGC/1.3/CRS84" },
    };
    let mut out = vec![Referencing { coordinates: &["x", "y"], system }];
    if domain.t.is_some()
        && let Some(Kind::Time(cf)) = collection.time.as_deref().map(|l| &l.kind)
    {
        out.push(Referencing {
            coordinates: &["t"],
            system: System::Temporal { calendar: calendar_name(cf.calendar) },
        });
    }
    if domain.z.is_some()
        && let Some(v) = &collection.vertical
    {
        let direction = if v.positive.as_deref() == Some("down") { "down" } else { "up" };
        let unit = v.units.as_deref().map(|symbol| AxisUnit { symbol });
        let axis = VerticalAxis { name: I18n { en: &v.name }, direction, unit };
        out.push(Referencing { coordinates: &["z"], system: System::Vertical { cs: VerticalCs { cs_axes: [axis] } } });
    }
    out
}

/// `Gregorian` for the standard calendars, else a URI naming the CF calendar.
pub fn calendar_name(calendar: Calendar) -> String {
    match calendar {
        Calendar::Standard | Calendar::ProlepticGregorian => "Gregorian".to_owned(),
        other => format!("https://cfconventions.org/calendars/{}", other.name()),
    }
}

/// The CoverageJSON `parameters` member.
fn parameters(plan: &Plan) -> BTreeMap<&str, covjson::Parameter<'_>> {
    plan.parameters.iter().map(|p| (p.name.as_str(), parameter(p))).collect()
}

/// One parameter as CoverageJSON describes it.
pub fn parameter(p: &Parameter) -> covjson::Parameter<'_> {
    let observed_property = ObservedProperty { label: I18n { en: &p.label }, id: p.standard_name_uri() };
    covjson::Parameter {
        kind: "Parameter",
        observed_property,
        description: (p.label != p.name).then_some(I18n { en: &p.label }),
        unit: p.units.as_deref().map(|units| Unit { label: I18n { en: units }, symbol: units }),
    }
}

/// An answer, read: what its text is written from.
pub struct Answer {
    pub plan: Plan,
    pub domain: Domain,
    pub coverages: Vec<Coverage>,
}

/// A part of an answer's text.
enum Part {
    Fixed(String),
    /// The values of one parameter in one coverage, comma-separated.
    Values {
        coverage: usize,
        parameter: usize,
    },
    /// GeoJSON features, one per cell taken, step and level.
    Features,
    /// CSV rows, likewise.
    Rows,
}

/// The pieces an answer is sent in (about this many bytes each).
const PIECE: usize = 64 * 1024;

/// An answer's text, written piece by piece on demand: fixed parts, then runs of numbers
/// or rows, so that a large answer is never held whole as text.
pub struct Text {
    answer: std::sync::Arc<Answer>,
    parts: Vec<Part>,
    part: usize,
    /// The next value or row of the current part.
    cursor: usize,
    /// Whether a GeoJSON feature was written (the next needs a comma).
    wrote_row: bool,
}

impl Text {
    fn new(answer: std::sync::Arc<Answer>, parts: Vec<Part>) -> Self {
        Self { answer, parts, part: 0, cursor: 0, wrote_row: false }
    }

    /// The whole text.
    pub fn whole(mut self) -> String {
        let mut out = String::new();
        while self.write(&mut out, usize::MAX) {}
        out
    }

    /// The next piece of text, `None` at the end.
    pub fn next_piece(&mut self) -> Option<bytes::Bytes> {
        let mut out = String::with_capacity(PIECE + 1024);
        while out.len() < PIECE && self.write(&mut out, PIECE) {}
        (!out.is_empty()).then(|| bytes::Bytes::from(out))
    }

    /// Writes on until `out` holds `limit` bytes or the current part ends; false at the end.
    fn write(&mut self, out: &mut String, limit: usize) -> bool {
        let Some(part) = self.parts.get(self.part) else { return false };
        let answer = &*self.answer;
        let done = match part {
            Part::Fixed(text) => {
                out.push_str(text);
                true
            }
            Part::Values { coverage, parameter } => {
                let values = &answer.coverages[*coverage].values[*parameter];
                let decoded = answer.plan.parameters[*parameter].decoded;
                while self.cursor < values.len() && out.len() < limit {
                    if self.cursor > 0 {
                        out.push(',');
                    }
                    numbers::decoded(out, values[self.cursor], decoded, "null");
                    self.cursor += 1;
                }
                self.cursor == values.len()
            }
            Part::Features | Part::Rows => {
                let csv = matches!(part, Part::Rows);
                let per = answer.coverages.first().map_or(0, |c| rows_per_coverage(&answer.domain, c));
                let total = per * answer.coverages.len();
                while self.cursor < total && out.len() < limit {
                    let (c, at) = (self.cursor / per, self.cursor % per);
                    self.cursor += 1;
                    if csv {
                        csv_row(out, answer, c, at);
                    } else if feature(out, answer, c, at, self.wrote_row) {
                        self.wrote_row = true;
                    }
                }
                self.cursor == total
            }
        };
        if done {
            self.part += 1;
            self.cursor = 0;
        }
        true
    }
}

/// CoverageJSON.
pub fn coverage_json(collection: &Collection, answer: std::sync::Arc<Answer>) -> Text {
    let (plan, domain) = (&answer.plan, &answer.domain);
    let listed = answer.coverages.first().is_some_and(|c| c.listed);
    let kind = domain_type(plan, listed);
    let referencing = json_text(&referencing(collection, plan, domain, listed));
    let parameters = json_text(&parameters(plan));
    let mut parts = Vec::new();
    if matches!(plan.places, Places::Points { multi: true, .. }) {
        let head = format!(
            r#"{{"type":"CoverageCollection","domainType":"{kind}","parameters":{parameters},"referencing":{referencing},"coverages":["#
        );
        parts.push(Part::Fixed(head));
        for k in 0..answer.coverages.len() {
            if k > 0 {
                parts.push(Part::Fixed(",".into()));
            }
            coverage(&mut parts, &answer, k, kind, &referencing, None);
        }
        parts.push(Part::Fixed("]}".into()));
    } else if !answer.coverages.is_empty() {
        coverage(&mut parts, &answer, 0, kind, &referencing, Some(&parameters));
    }
    Text::new(answer, merged(parts))
}

/// Neighbouring fixed parts as one.
fn merged(parts: Vec<Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts {
        match (out.last_mut(), part) {
            (Some(Part::Fixed(a)), Part::Fixed(b)) => a.push_str(&b),
            (_, part) => out.push(part),
        }
    }
    out
}

/// The parts of one `Coverage` object.
fn coverage(parts: &mut Vec<Part>, answer: &Answer, k: usize, kind: &str, referencing: &str, parameters: Option<&str>) {
    let (plan, domain, c) = (&answer.plan, &answer.domain, &answer.coverages[k]);
    let mut out = String::new();
    let _ = write!(out, r#"{{"type":"Coverage","domain":{{"type":"Domain","domainType":"{kind}","axes":{{"#);
    if c.listed {
        composite(&mut out, c, domain.z.as_deref());
    } else {
        out.push_str(r#""x":{"values":"#);
        number_list(&mut out, &c.x, DataType::Float64);
        out.push_str(r#"},"y":{"values":"#);
        number_list(&mut out, &c.y, DataType::Float64);
        out.push('}');
    }
    if let Some(t) = &domain.t {
        out.push_str(r#","t":{"values":"#);
        out.push_str(&serde_json::to_string(t).unwrap_or_default());
        out.push('}');
    }
    if let Some(z) = domain.z.as_ref().filter(|_| !c.listed) {
        out.push_str(r#","z":{"values":"#);
        number_list(&mut out, z, DataType::Float64);
        out.push('}');
    }
    let _ = write!(out, r#"}},"referencing":{referencing}}}"#);
    if let Some(parameters) = parameters {
        let _ = write!(out, r#","parameters":{parameters}"#);
    }
    out.push_str(r#","ranges":{"#);
    let (names, shape) = range_axes(kind, domain, c);
    for (i, p) in plan.parameters.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let data_type = if p.decoded.is_float() { "float" } else { "integer" };
        let _ = write!(out, r#"{}:{{"type":"NdArray","dataType":"{data_type}""#, json_text(&p.name));
        if !names.is_empty() {
            let _ = write!(out, r#","axisNames":{},"shape":{}"#, json_text(&names), json_text(&shape));
        }
        out.push_str(r#","values":["#);
        parts.push(Part::Fixed(std::mem::take(&mut out)));
        parts.push(Part::Values { coverage: k, parameter: i });
        out.push_str("]}");
    }
    out.push_str("}}");
    parts.push(Part::Fixed(out));
}

/// The `composite` axis of cells listed one by one: a tuple (x, y) per cell — (x, y, z)
/// per level and cell with levels, levels outermost as the values are laid out.
fn composite(out: &mut String, c: &Coverage, levels: Option<&[f64]>) {
    let coordinates = if levels.is_some() { r#"["x","y","z"]"# } else { r#"["x","y"]"# };
    let _ = write!(out, r#""composite":{{"dataType":"tuple","coordinates":{coordinates},"values":["#);
    let mut first = true;
    for z in levels.map_or(vec![None], |l| l.iter().copied().map(Some).collect()) {
        for (&x, &y) in c.x.iter().zip(&c.y) {
            if !first {
                out.push(',');
            }
            first = false;
            number_list(out, &[x, y].into_iter().chain(z).collect::<Vec<_>>(), DataType::Float64);
        }
    }
    out.push_str("]}");
}

/// The axis names and shape of a coverage's ranges.
fn range_axes(kind: &str, domain: &Domain, c: &Coverage) -> (Vec<&'static str>, Vec<usize>) {
    let nt = domain.t.as_ref().map(Vec::len);
    let nz = domain.z.as_ref().map(Vec::len);
    match kind {
        "Point" => (vec![], vec![]),
        "MultiPoint" => (vec!["composite"], vec![nz.unwrap_or(1) * c.x.len()]),
        "MultiPointSeries" => (vec!["t", "composite"], vec![nt.unwrap_or(1), nz.unwrap_or(1) * c.x.len()]),
        "PointSeries" => (vec!["t"], vec![nt.unwrap_or(1)]),
        "VerticalProfile" => (vec!["z"], vec![nz.unwrap_or(1)]),
        _ => {
            let mut names = Vec::new();
            let mut shape = Vec::new();
            for (name, n) in [("t", nt), ("z", nz), ("y", Some(c.y.len())), ("x", Some(c.x.len()))] {
                if let Some(n) = n {
                    names.push(name);
                    shape.push(n);
                }
            }
            (names, shape)
        }
    }
}

/// A value as JSON text (a string with its quotes).
fn json_text(value: &(impl serde::Serialize + ?Sized)) -> String {
    // Strings, numbers and maps with string keys serialize without fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// Positions (step, level, cell) of one coverage, listed or skipped as rows.
fn rows_per_coverage(domain: &Domain, c: &Coverage) -> usize {
    domain.t.as_ref().map_or(1, Vec::len) * domain.z.as_ref().map_or(1, Vec::len) * cells_of(c)
}

/// The cells of a coverage: those listed, else its box.
fn cells_of(c: &Coverage) -> usize {
    if c.listed { c.x.len() } else { c.y.len() * c.x.len() }
}

/// Row `at` of coverage `k` (in C order of step, level, cell): its step, level, the
/// cell's centre lon, lat (and its place on a grid other than latitude/longitude); `None`
/// for a cell not taken.
fn row(answer: &Answer, k: usize, at: usize) -> Option<(usize, usize, f64, f64, Option<Place>)> {
    let c = &answer.coverages[k];
    let cells = cells_of(c);
    let nz = answer.domain.z.as_ref().map_or(1, Vec::len);
    let cell = at % cells;
    if c.mask.as_ref().is_some_and(|m| !m[cell]) {
        return None;
    }
    let (step, level) = (at / (nz * cells), (at / cells) % nz);
    if let Some(p) = c.places.as_ref().and_then(|p| p.get(cell)) {
        return Some((step, level, p.lon, p.lat, Some(*p)));
    }
    let (row, column) = (cell / c.x.len(), cell % c.x.len());
    Some((step, level, zarrd_core::coords::geo::crs84_longitude(c.x[column]), c.y[row], None))
}

/// One GeoJSON `Point` feature (with a comma before it when `after` one): false for a
/// cell not taken.
fn feature(out: &mut String, answer: &Answer, coverage: usize, at: usize, after: bool) -> bool {
    let Some((t, z, x, y, _)) = row(answer, coverage, at) else { return false };
    if after {
        out.push(',');
    }
    out.push_str(r#"{"type":"Feature","geometry":{"type":"Point","coordinates":["#);
    numbers::decoded(out, x, DataType::Float64, "null");
    out.push(',');
    numbers::decoded(out, y, DataType::Float64, "null");
    out.push_str(r#"]},"properties":{"#);
    let mut sep = "";
    if let Some(times) = &answer.domain.t {
        let _ = write!(out, r#""datetime":{}"#, json_text(&times[t]));
        sep = ",";
    }
    if let Some(levels) = &answer.domain.z {
        out.push_str(sep);
        out.push_str(r#""z":"#);
        numbers::decoded(out, levels[z], DataType::Float64, "null");
        sep = ",";
    }
    for (p, values) in answer.plan.parameters.iter().zip(&answer.coverages[coverage].values) {
        let _ = write!(out, "{sep}{}:", json_text(&p.name));
        numbers::decoded(out, values[at], p.decoded, "null");
        sep = ",";
    }
    out.push_str("}}");
    true
}

/// One CSV row (nothing for a cell not taken).
fn csv_row(out: &mut String, answer: &Answer, coverage: usize, at: usize) {
    let Some((t, z, x, y, place)) = row(answer, coverage, at) else { return };
    if let Some(times) = &answer.domain.t {
        out.push_str(&times[t]);
        out.push(',');
    }
    if let Some(levels) = &answer.domain.z {
        numbers::decoded(out, levels[z], DataType::Float64, "");
        out.push(',');
    }
    if let Some(p) = place.filter(|_| answer.coverages[coverage].native) {
        numbers::decoded(out, p.x, DataType::Float64, "");
        out.push(',');
        numbers::decoded(out, p.y, DataType::Float64, "");
        out.push(',');
    }
    numbers::decoded(out, y, DataType::Float64, "");
    out.push(',');
    numbers::decoded(out, x, DataType::Float64, "");
    for (p, values) in answer.plan.parameters.iter().zip(&answer.coverages[coverage].values) {
        out.push(',');
        numbers::decoded(out, values[at], p.decoded, "");
    }
    out.push_str(csv::ROW_END);
}

/// GeoJSON: a `FeatureCollection` with one `Point` feature per cell taken, step and level.
pub fn geo_json(answer: std::sync::Arc<Answer>) -> Text {
    let parts = vec![
        Part::Fixed(r#"{"type":"FeatureCollection","features":["#.into()),
        Part::Features,
        Part::Fixed("]}".into()),
    ];
    Text::new(answer, parts)
}

/// CSV: `datetime`, `z` (with levels), `x`, `y` (native, on a projected, rotated or
/// geostationary grid), `lat`, `lon`, then one column per parameter.
pub fn csv(answer: std::sync::Arc<Answer>) -> Text {
    let mut header: Vec<String> = Vec::new();
    if answer.domain.t.is_some() {
        header.push("datetime".into());
    }
    if answer.domain.z.is_some() {
        header.push("z".into());
    }
    if answer.coverages.first().is_some_and(|c| c.places.is_some() && c.native) {
        header.extend(["x".into(), "y".into()]);
    }
    header.extend(["lat".into(), "lon".into()]);
    header.extend(answer.plan.parameters.iter().map(|p| p.name.clone()));
    let mut head = String::new();
    csv::header(&mut head, header.iter().map(String::as_str));
    let parts = vec![Part::Fixed(head), Part::Rows];
    Text::new(answer, parts)
}
