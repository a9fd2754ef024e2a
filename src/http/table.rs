//! Labelled results as bodies: the JSON of a slice with `"coords"` (the labels of each kept
//! dimension) and `"point"` (the label of each dimension one label picked), and CSV — a
//! header line, then one row per element in C order: a column per kept dimension's label
//! and one `value` column. Numbers are written in their shortest form that parses back to
//! the same value; missing values are `null` in JSON and empty in CSV.

use std::borrow::Cow;
use std::fmt::Write as _;

use axum::response::{IntoResponse, Response};
use zarrd_core::coords::labels::Kind;
use zarrd_core::coords::sel::Picked;
use zarrd_core::reduce::request::{Built, OutLabels};
use zarrd_core::zarr::data_type::DataType;
use zarrd_core::zarr::metadata::ArrayMetadata;

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::select::Resolved;
use crate::error::{Error, Result};
use crate::http::encode::{self, Format};
use crate::http::render::Render;
use crate::{csv, numbers};

/// One label of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Label {
    Number(f64),
    /// A date in ISO 8601.
    Time(String),
    /// The index, for a dimension without labels.
    Index(u64),
    Missing,
}

impl Label {
    fn write_json(&self, out: &mut String) {
        match self {
            Self::Number(v) => numbers::float(out, *v, false, "null"),
            Self::Time(t) => {
                let _ = write!(out, "\"{t}\"");
            }
            Self::Index(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Self::Missing => out.push_str("null"),
        }
    }

    fn write_csv(&self, out: &mut String) {
        match self {
            Self::Number(v) => numbers::float(out, *v, false, ""),
            Self::Time(t) => csv::field(out, t),
            Self::Index(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Self::Missing => {}
        }
    }

    /// The most bytes this label takes as text.
    fn width(&self) -> usize {
        match self {
            Self::Time(t) => t.len() + 2,
            _ => 24,
        }
    }
}

/// A kept dimension of a result: its name and a label per index.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub labels: Vec<Label>,
}

/// The label of stored index `i` of dimension `d` (the index where it has no labels).
pub fn label(labels: &ArrayLabels, d: usize, i: u64) -> Label {
    match &labels.labels[d] {
        Some(l) if l.is_time() => l.text(i as usize).map_or(Label::Missing, Label::Time),
        // Numbers stay numbers (a missing one is written as such by `Label`).
        Some(l) => Label::Number(l.values[i as usize]),
        None => Label::Index(i),
    }
}

/// What a labelled body carries beside the values: a column per kept dimension, and the
/// label used for each dimension one label or index picked. Empty for the binary formats,
/// whose answers carry no labels (a year of dates is a thousand strings: most of a binary
/// answer's time).
#[derive(Debug, Default)]
pub struct Table {
    pub kept: Vec<Column>,
    pub points: Vec<(String, Label)>,
}

impl Table {
    /// The labels of a label selection's result, when `render` writes them; the lon/lat of
    /// the grid cell a point picked is added to the point as `lat`, `lon`.
    pub fn of_selection(render: &Render, labels: &ArrayLabels, resolved: &Resolved) -> Self {
        let mut table = Self::default();
        if !writes_labels(render) {
            return table;
        }
        let unnamed = |d: usize| resolved.unnamed.is_some_and(|dims| dims.contains(&d));
        for (d, p) in resolved.picked.iter().enumerate() {
            match p {
                Picked::Index(_) if unnamed(d) => {}
                Picked::Index(i) => table.points.push((labels.name(d), label(labels, d, *i))),
                Picked::Runs(runs) => {
                    let values =
                        runs.iter().flat_map(|r| r.start..r.start + r.count).map(|i| label(labels, d, i)).collect();
                    table.kept.push(Column { name: labels.name(d), labels: values });
                }
            }
        }
        if let Some((lon, lat)) = resolved.centre {
            table.points.push(("lat".to_owned(), Label::Number(lat)));
            table.points.push(("lon".to_owned(), Label::Number(lon)));
        }
        table
    }

    /// The labels of a reduction's result (a column per output dimension; `scalars` are the
    /// dimensions one index picked, with that index), when `render` writes them.
    pub fn of_reduction(render: &Render, built: &Built, scalars: &[(usize, u64)], labels: &ArrayLabels) -> Self {
        if !writes_labels(render) {
            return Self::default();
        }
        let kept = built
            .out
            .iter()
            .map(|(d, out)| {
                let values = match out {
                    OutLabels::Selected { dim, indices } => indices.iter().map(|&i| label(labels, *dim, i)).collect(),
                    OutLabels::Periods(starts) => starts.iter().map(|s| Label::Time(s.iso())).collect(),
                    OutLabels::Means { dim, values } => match labels.labels[*dim].as_ref().map(|l| &l.kind) {
                        Some(Kind::Time(cf)) => values
                            .iter()
                            .map(|&v| cf.datetime(v).map_or(Label::Missing, |t| Label::Time(t.iso())))
                            .collect(),
                        _ => values.iter().map(|&v| Label::Number(v)).collect(),
                    },
                };
                Column { name: labels.name(*d), labels: values }
            })
            .collect();
        let points = scalars.iter().map(|&(d, i)| (labels.name(d), label(labels, d, i))).collect();
        Self { kept, points }
    }

    /// Rejects, before any read, a result too large to render in `render`'s format; the
    /// memory its body takes beside the decoded data (`meta` of the decoded type).
    pub fn check(&self, render: &Render, meta: &ArrayMetadata, shape: &[u64], limit: u64) -> Result<u64> {
        if render.format != Format::Csv {
            return render.check(meta, shape, limit);
        }
        let size = csv_bytes(shape.iter().product(), meta.data_type, &self.kept);
        if size > u128::from(limit) {
            return Err(Error::TooLarge { what: "CSV (the longest text of each row)", size, limit });
        }
        Ok(size as u64)
    }

    /// The response for decoded `data` of `shape` (`meta` of the decoded type) in
    /// `render`'s format: JSON and CSV with the labels, the others as any slice.
    pub async fn respond(
        &self,
        render: &Render,
        data: Vec<u8>,
        meta: &ArrayMetadata,
        shape: &[u64],
    ) -> Result<Response> {
        let body = match render.format {
            Format::Csv => csv(&data, meta.data_type, &self.kept),
            Format::Json => json(&data, meta.data_type, shape, &self.kept, &self.points),
            _ => return render.respond(data, 0, meta, shape).await,
        };
        render.with_data_headers(body.into_response(), meta.data_type, shape)
    }
}

/// Whether `render`'s format writes labels.
fn writes_labels(render: &Render) -> bool {
    matches!(render.format, Format::Csv | Format::Json)
}

/// `meta` with its elements of `data_type`: how decoded values are rendered (packing and
/// masks may widen the stored type).
pub fn typed(meta: &ArrayMetadata, data_type: DataType) -> Cow<'_, ArrayMetadata> {
    if meta.data_type == data_type {
        Cow::Borrowed(meta)
    } else {
        Cow::Owned(ArrayMetadata { data_type, ..meta.clone() })
    }
}

/// The JSON body of `data` (decoded elements of `data_type` in C order, of `shape`) with
/// `"coords"` and, when any, `"point"`.
fn json(data: &[u8], data_type: DataType, shape: &[u64], kept: &[Column], points: &[(String, Label)]) -> Vec<u8> {
    let mut body = encode::json(data, data_type, shape);
    body.pop(); // the closing brace, reopened for the labels
    let mut out = String::new();
    out.push_str(",\"coords\":{");
    for (i, column) in kept.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        encode::push_json_string(&mut out, &column.name);
        out.push_str(":[");
        for (j, label) in column.labels.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            label.write_json(&mut out);
        }
        out.push(']');
    }
    out.push('}');
    if !points.is_empty() {
        out.push_str(",\"point\":{");
        for (i, (name, label)) in points.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            encode::push_json_string(&mut out, name);
            out.push(':');
            label.write_json(&mut out);
        }
        out.push('}');
    }
    out.push('}');
    body.extend_from_slice(out.as_bytes());
    body
}

/// The most bytes [`csv`] writes for `n` elements of `data_type` under `kept`.
fn csv_bytes(n: u64, data_type: DataType, kept: &[Column]) -> u128 {
    let row: usize = kept.iter().map(|c| c.labels.iter().map(Label::width).max().unwrap_or(1) + 1).sum::<usize>()
        + encode::json_bytes_per_element(data_type) as usize
        + csv::ROW_END.len();
    u128::from(n) * row as u128 + 64 * (kept.len() as u128 + 1)
}

/// CSV of `data` (decoded elements in C order over the `kept` columns).
fn csv(data: &[u8], data_type: DataType, kept: &[Column]) -> Vec<u8> {
    let mut out = String::new();
    csv::header(&mut out, kept.iter().map(|c| c.name.as_str()).chain(["value"]));
    let item = data_type.size();
    let shape: Vec<usize> = kept.iter().map(|c| c.labels.len()).collect();
    let mut index = vec![0usize; shape.len()];
    let mut value = String::new();
    for element in data.chunks_exact(item) {
        for (column, &i) in kept.iter().zip(&index) {
            column.labels[i].write_csv(&mut out);
            out.push(',');
        }
        value.clear();
        encode::write_element(&mut value, element, data_type);
        if value != "null" {
            out.push_str(&value);
        }
        out.push_str(csv::ROW_END);
        // The next index in C order.
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_follow_c_order_with_labels_and_empty_missing_values() {
        let kept = vec![
            Column {
                name: "time".into(),
                labels: vec![Label::Time("2001-01-01".into()), Label::Time("2001-01-02".into())],
            },
            Column { name: "lon".into(), labels: vec![Label::Number(285.0), Label::Number(287.5)] },
        ];
        let data: Vec<u8> = [1.5f32, f32::NAN, 3.0, 0.1].iter().flat_map(|v| v.to_le_bytes()).collect();
        let text = String::from_utf8(csv(&data, DataType::Float32, &kept)).unwrap();
        assert_eq!(
            text,
            "time,lon,value\r\n2001-01-01,285.0,1.5\r\n2001-01-01,287.5,\r\n2001-01-02,285.0,3.0\r\n2001-01-02,287.5,0.1\r\n"
        );
        assert!(csv_bytes(4, DataType::Float32, &kept) >= text.len() as u128);
    }

    #[test]
    fn json_adds_coords_and_the_point_used() {
        let kept = vec![Column { name: "time".into(), labels: vec![Label::Time("2001-01-01".into())] }];
        let data: Vec<u8> = 2.5f64.to_le_bytes().to_vec();
        let body = json(&data, DataType::Float64, &[1], &kept, &[("lat".into(), Label::Number(45.0))]);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["data"], serde_json::json!([2.5]));
        assert_eq!(v["coords"], serde_json::json!({"time": ["2001-01-01"]}));
        assert_eq!(v["point"], serde_json::json!({"lat": 45.0}));
    }
}
