//! EDR answers as text: CoverageJSON (<https://docs.ogc.org/cs/21-069r2/21-069r2.html>),
//! GeoJSON and CSV, written straight from the values (no JSON tree in between), and the
//! size an answer may reach, known before any read.

use std::fmt::Write as _;

use serde_json::{Value, json};
use zarrd_core::coords::calendar::Calendar;
use zarrd_core::coords::labels::Kind;
use zarrd_core::zarr::data_type::DataType;

use crate::edr::collection::{Collection, Parameter};
use crate::edr::query::{Format, Places, Plan};
use crate::edr::read::{Coverage, Domain};

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
    }
}

/// One number as JSON or CSV text: integers as integers, float32 in its shortest float32
/// form, float64 in its shortest form; `missing` when NaN.
fn number(out: &mut String, v: f64, decoded: DataType, missing: &str) {
    if !v.is_finite() {
        out.push_str(missing);
    } else if !decoded.is_float() {
        let _ = write!(out, "{}", v as i64);
    } else if matches!(decoded, DataType::Float32 | DataType::Float16) {
        out.push_str(ryu::Buffer::new().format_finite(v as f32));
    } else {
        out.push_str(ryu::Buffer::new().format_finite(v));
    }
}

fn numbers(out: &mut String, values: &[f64], decoded: DataType) {
    out.push('[');
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        number(out, v, decoded, "null");
    }
    out.push(']');
}

/// The kind of domain of a coverage of `plan`.
fn domain_type(plan: &Plan) -> &'static str {
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

/// The CoverageJSON `referencing` of a collection's axes.
fn referencing(collection: &Collection, domain: &Domain) -> Value {
    let mut out = vec![json!({
        "coordinates": ["x", "y"],
        "system": {"type": "GeographicCRS", "id": "http://www.opengis.net/def/crs/OGC/1.3/CRS84"}
    })];
    if domain.t.is_some()
        && let Some(Kind::Time(cf)) = collection.time.as_deref().map(|l| &l.kind)
    {
        out.push(
            json!({"coordinates": ["t"], "system": {"type": "TemporalRS", "calendar": calendar_name(cf.calendar)}}),
        );
    }
    if domain.z.is_some()
        && let Some(v) = &collection.vertical
    {
        let direction = if v.positive.as_deref() == Some("down") { "down" } else { "up" };
        let mut axis = json!({"name": {"en": v.name}, "direction": direction});
        if let Some(units) = &v.units {
            axis["unit"] = json!({"symbol": units});
        }
        out.push(json!({"coordinates": ["z"], "system": {"type": "VerticalCRS", "cs": {"csAxes": [axis]}}}));
    }
    Value::Array(out)
}

/// `Gregorian` for the standard calendars, else a URI naming the CF calendar.
pub fn calendar_name(calendar: Calendar) -> String {
    match calendar {
        Calendar::Standard | Calendar::ProlepticGregorian => "Gregorian".to_owned(),
        other => format!("https://cfconventions.org/calendars/{}", other.name()),
    }
}

/// The CoverageJSON `parameters` member.
fn parameters(plan: &Plan) -> Value {
    let mut out = serde_json::Map::new();
    for p in &plan.parameters {
        out.insert(p.name.clone(), parameter(p));
    }
    Value::Object(out)
}

/// One parameter as CoverageJSON describes it.
pub fn parameter(p: &Parameter) -> Value {
    let mut property = json!({"label": {"en": p.label}});
    if let Some(s) = &p.standard_name {
        property["id"] = json!(format!("http://vocab.nerc.ac.uk/standard_name/{s}/"));
    }
    let mut out = json!({"type": "Parameter", "observedProperty": property});
    if p.label != p.name {
        out["description"] = json!({"en": p.label});
    }
    if let Some(units) = &p.units {
        out["unit"] = json!({"label": {"en": units}, "symbol": units});
    }
    out
}

/// A CoverageJSON body.
pub fn coverage_json(collection: &Collection, plan: &Plan, domain: &Domain, coverages: &[Coverage]) -> String {
    let kind = domain_type(plan);
    let referencing = referencing(collection, domain).to_string();
    let parameters = parameters(plan).to_string();
    let mut out = String::with_capacity(1024);
    let multi = matches!(plan.places, Places::Points { multi: true, .. });
    if multi {
        let _ = write!(
            out,
            r#"{{"type":"CoverageCollection","domainType":"{kind}","parameters":{parameters},"referencing":{referencing},"coverages":["#
        );
        for (i, c) in coverages.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            coverage(&mut out, plan, domain, c, kind, &referencing, None);
        }
        out.push_str("]}");
    } else if let Some(c) = coverages.first() {
        coverage(&mut out, plan, domain, c, kind, &referencing, Some(&parameters));
    }
    out
}

/// One `Coverage` object.
fn coverage(
    out: &mut String,
    plan: &Plan,
    domain: &Domain,
    c: &Coverage,
    kind: &str,
    referencing: &str,
    parameters: Option<&str>,
) {
    let _ =
        write!(out, r#"{{"type":"Coverage","domain":{{"type":"Domain","domainType":"{kind}","axes":{{"x":{{"values":"#);
    numbers(out, &c.x, DataType::Float64);
    out.push_str(r#"},"y":{"values":"#);
    numbers(out, &c.y, DataType::Float64);
    out.push('}');
    if let Some(t) = &domain.t {
        out.push_str(r#","t":{"values":"#);
        out.push_str(&serde_json::to_string(t).unwrap_or_default());
        out.push('}');
    }
    if let Some(z) = &domain.z {
        out.push_str(r#","z":{"values":"#);
        numbers(out, z, DataType::Float64);
        out.push('}');
    }
    let _ = write!(out, r#"}},"referencing":{referencing}}}"#);
    if let Some(parameters) = parameters {
        let _ = write!(out, r#","parameters":{parameters}"#);
    }
    out.push_str(r#","ranges":{"#);
    let (names, shape) = range_axes(kind, domain, c);
    for (i, (p, values)) in plan.parameters.iter().zip(&c.values).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let data_type = if p.decoded.is_float() { "float" } else { "integer" };
        let _ = write!(out, r#"{}:{{"type":"NdArray","dataType":"{data_type}""#, json_text(&p.name));
        if !names.is_empty() {
            let _ = write!(out, r#","axisNames":{},"shape":{}"#, json!(names), json!(shape));
        }
        out.push_str(r#","values":"#);
        numbers(out, values, p.decoded);
        out.push('}');
    }
    out.push_str("}}");
}

/// The axis names and shape of a coverage's ranges.
fn range_axes(kind: &str, domain: &Domain, c: &Coverage) -> (Vec<&'static str>, Vec<usize>) {
    let nt = domain.t.as_ref().map(Vec::len);
    let nz = domain.z.as_ref().map(Vec::len);
    match kind {
        "Point" => (vec![], vec![]),
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

/// A string as JSON text (with its quotes).
fn json_text(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Visits every (coverage, step, level, cell) an answer lists in GeoJSON and CSV, in order:
/// `f(x, y, step, level, values index)`.
fn each_row(domain: &Domain, coverages: &[Coverage], mut f: impl FnMut(&Coverage, f64, f64, usize, usize, usize)) {
    let nt = domain.t.as_ref().map_or(1, Vec::len);
    let nz = domain.z.as_ref().map_or(1, Vec::len);
    for c in coverages {
        let (ny, nx) = (c.y.len(), c.x.len());
        for t in 0..nt {
            for z in 0..nz {
                for r in 0..ny {
                    for k in 0..nx {
                        let cell = r * nx + k;
                        if c.mask.as_ref().is_some_and(|m| !m[cell]) {
                            continue;
                        }
                        let at = (t * nz + z) * ny * nx + cell;
                        f(c, zarrd_core::coords::geo::crs84_longitude(c.x[k]), c.y[r], t, z, at);
                    }
                }
            }
        }
    }
}

/// A GeoJSON body: one `Point` feature per cell taken, step and level.
pub fn geo_json(plan: &Plan, domain: &Domain, coverages: &[Coverage]) -> String {
    let mut out = String::from(r#"{"type":"FeatureCollection","features":["#);
    let mut first = true;
    let names: Vec<String> = plan.parameters.iter().map(|p| json_text(&p.name)).collect();
    each_row(domain, coverages, |c, x, y, t, z, at| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(r#"{"type":"Feature","geometry":{"type":"Point","coordinates":["#);
        number(&mut out, x, DataType::Float64, "null");
        out.push(',');
        number(&mut out, y, DataType::Float64, "null");
        out.push_str(r#"]},"properties":{"#);
        let mut sep = "";
        if let Some(times) = &domain.t {
            let _ = write!(out, r#""datetime":{}"#, json_text(&times[t]));
            sep = ",";
        }
        if let Some(levels) = &domain.z {
            out.push_str(sep);
            out.push_str(r#""z":"#);
            number(&mut out, levels[z], DataType::Float64, "null");
            sep = ",";
        }
        for ((name, p), values) in names.iter().zip(&plan.parameters).zip(&c.values) {
            let _ = write!(out, "{sep}{name}:");
            number(&mut out, values[at], p.decoded, "null");
            sep = ",";
        }
        out.push_str("}}");
    });
    out.push_str("]}");
    out
}

/// A CSV body: `datetime`, `z` (with levels), `lat`, `lon`, then one column per parameter.
pub fn csv(plan: &Plan, domain: &Domain, coverages: &[Coverage]) -> String {
    let mut out = String::new();
    let mut header: Vec<String> = Vec::new();
    if domain.t.is_some() {
        header.push("datetime".into());
    }
    if domain.z.is_some() {
        header.push("z".into());
    }
    header.extend(["lat".into(), "lon".into()]);
    header.extend(plan.parameters.iter().map(|p| csv_field(&p.name)));
    out.push_str(&header.join(","));
    out.push_str("\r\n");
    each_row(domain, coverages, |c, x, y, t, z, at| {
        if let Some(times) = &domain.t {
            out.push_str(&times[t]);
            out.push(',');
        }
        if let Some(levels) = &domain.z {
            number(&mut out, levels[z], DataType::Float64, "");
            out.push(',');
        }
        number(&mut out, y, DataType::Float64, "");
        out.push(',');
        number(&mut out, x, DataType::Float64, "");
        for (p, values) in plan.parameters.iter().zip(&c.values) {
            out.push(',');
            number(&mut out, values[at], p.decoded, "");
        }
        out.push_str("\r\n");
    });
    out
}

/// A CSV field, quoted when it must be (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}
