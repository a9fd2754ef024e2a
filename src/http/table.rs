//! Labelled results as bodies: the JSON of a slice with `"coords"` (the labels of each kept
//! dimension) and `"point"` (the label of each dimension one label picked), and CSV — a
//! header line, then one row per element in C order: a column per kept dimension's label
//! and one `value` column. Numbers are written in their shortest form that parses back to
//! the same value; missing values are `null` in JSON and empty in CSV.

use std::fmt::Write as _;

use zarrd_core::coords::sel::Picked;
use zarrd_core::zarr::data_type::DataType;

use crate::analysis::coordinates::ArrayLabels;
use crate::http::encode;
use zarrd_core::reduce::request::{Built, OutLabels};

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
            Self::Number(v) if v.is_finite() => out.push_str(ryu::Buffer::new().format_finite(*v)),
            Self::Time(t) => {
                let _ = write!(out, "\"{t}\"");
            }
            Self::Index(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Self::Number(_) | Self::Missing => out.push_str("null"),
        }
    }

    fn write_csv(&self, out: &mut String) {
        match self {
            Self::Number(v) if v.is_finite() => out.push_str(ryu::Buffer::new().format_finite(*v)),
            Self::Time(t) => out.push_str(t),
            Self::Index(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Self::Number(_) | Self::Missing => {}
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
        Some(l) => match (l.text(i as usize), l.is_time()) {
            (None, _) => Label::Missing,
            (Some(t), true) => Label::Time(t),
            (Some(_), false) => Label::Number(l.values[i as usize]),
        },
        None => Label::Index(i),
    }
}

/// The labels of a label selection's result: the kept dimensions' columns, and the
/// dimensions one label picked with that label.
pub fn columns(labels: &ArrayLabels, picked: &[Picked]) -> (Vec<Column>, Vec<(String, Label)>) {
    let at = |d: usize, i: u64| label(labels, d, i);
    let (mut kept, mut points) = (Vec::new(), Vec::new());
    for (d, p) in picked.iter().enumerate() {
        match p {
            Picked::Index(i) => points.push((labels.name(d), at(d, *i))),
            Picked::Runs(runs) => {
                let values = runs.iter().flat_map(|r| r.start..r.start + r.count).map(|i| at(d, i)).collect();
                kept.push(Column { name: labels.name(d), labels: values });
            }
        }
    }
    (kept, points)
}

/// The result's columns (one per output dimension) and points (the dimensions one index
/// picked, with that index's label).
pub fn reduced_columns(
    built: &Built,
    cells_scalar: &[(usize, u64)],
    labels: &ArrayLabels,
) -> (Vec<Column>, Vec<(String, Label)>) {
    let at = |d: usize, i: u64| label(labels, d, i);
    let columns = built
        .out
        .iter()
        .map(|(d, out)| {
            let values = match out {
                OutLabels::Selected { dim, indices } => indices.iter().map(|&i| at(*dim, i)).collect(),
                OutLabels::Periods(starts) => starts.iter().map(|s| Label::Time(s.iso())).collect(),
                OutLabels::Means { dim, values } => match labels.labels[*dim].as_ref().map(|l| &l.kind) {
                    Some(zarrd_core::coords::labels::Kind::Time(cf)) => values
                        .iter()
                        .map(|&v| cf.datetime(v).map_or(Label::Missing, |t| Label::Time(t.iso())))
                        .collect(),
                    _ => values.iter().map(|&v| Label::Number(v)).collect(),
                },
            };
            Column { name: labels.name(*d), labels: values }
        })
        .collect();
    let points = cells_scalar.iter().map(|&(d, i)| (labels.name(d), at(d, i))).collect();
    (columns, points)
}

/// The JSON body of `data` (decoded elements of `data_type` in C order, of `shape`) with
/// `"coords"` and, when any, `"point"`.
pub fn json(data: &[u8], data_type: DataType, shape: &[u64], kept: &[Column], points: &[(String, Label)]) -> Vec<u8> {
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
pub fn csv_bytes(n: u64, data_type: DataType, kept: &[Column]) -> u128 {
    let row: usize = kept.iter().map(|c| c.labels.iter().map(Label::width).max().unwrap_or(1) + 1).sum::<usize>()
        + encode::json_bytes_per_element(data_type) as usize
        + 1;
    u128::from(n) * row as u128 + 64 * (kept.len() as u128 + 1)
}

/// CSV of `data` (decoded elements in C order over the `kept` columns).
pub fn csv(data: &[u8], data_type: DataType, kept: &[Column]) -> Vec<u8> {
    let mut out = String::new();
    for column in kept {
        push_csv_field(&mut out, &column.name);
        out.push(',');
    }
    out.push_str("value\n");
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
        out.push('\n');
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

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn push_csv_field(out: &mut String, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
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
            "time,lon,value\n2001-01-01,285.0,1.5\n2001-01-01,287.5,\n2001-01-02,285.0,3.0\n2001-01-02,287.5,0.1\n"
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
