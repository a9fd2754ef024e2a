//! `/v1/reduce` requests: the parameters parsed, the selection (`sel=` or `s=`) made into
//! the cells to visit, the reduction built and counted, and its result typed and labelled.

use zarrd_core::coords::cf::CfValues;
use zarrd_core::coords::sel::Picked;
use zarrd_core::read::selection::Selection;
use zarrd_core::reduce::op::Op;
use zarrd_core::reduce::polygon::Shape;
use zarrd_core::reduce::request::{self, Built, Freq, MAX_GROUPS, Request, RequestError};
use zarrd_core::zarr::data_type::DataType;

use std::sync::Arc;

use serde::Deserialize;

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::grids::Found;
use crate::analysis::select::Resolved;
use crate::error::{Error, Result};

impl From<RequestError> for Error {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Invalid(m) => Self::BadRequest(m),
            RequestError::Unsupported(m) => Self::Unsupported(m),
            RequestError::TooLarge(m) => Self::OverLimit(m),
        }
    }
}

/// The query of `/v1/reduce`, typed (`http::query` checks its names and deserializes it).
#[derive(Debug, Deserialize)]
pub struct ReduceQuery {
    pub sel: Option<String>,
    pub s: Option<String>,
    pub over: Option<String>,
    pub op: Option<String>,
    pub weights: Option<String>,
    pub within: Option<String>,
    pub resample: Option<String>,
    pub coarsen: Option<String>,
    pub format: Option<String>,
}

impl ReduceQuery {
    /// The names `/v1/reduce` takes.
    pub const NAMES: &'static [&'static str] =
        &["sel", "s", "over", "op", "weights", "within", "resample", "coarsen", "format"];
}

/// Parses the reduction parameters.
pub fn parse(params: &ReduceQuery) -> Result<Request> {
    let op = Op::parse(params.op.as_deref().ok_or_else(|| {
        Error::BadRequest(
            "op is required: mean, sum, min, max, std, var, count, median or pNN (a percentile, e.g. p90)".into(),
        )
    })?)
    .map_err(|e| Error::BadRequest(e.to_string()))?;
    let names = |text: &str| text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let over = params.over.as_deref().map(names).unwrap_or_default();
    let area_weights = match params.weights.as_deref() {
        None => false,
        Some("area") => true,
        Some(other) => return Err(Error::BadRequest(format!("weights `{other}` is not known; allowed is `area`"))),
    };
    let within =
        params.within.as_deref().map(Shape::parse).transpose().map_err(|e| Error::BadRequest(e.to_string()))?;
    let resample = params
        .resample
        .as_deref()
        .map(|text| {
            let bad = || {
                Error::BadRequest(format!(
                    "resample `{text}` is not DIM:FREQ; FREQ is N followed by D (days), M (calendar months) or Y (calendar years), e.g. time:1M or time:10D"
                ))
            };
            let (dim, freq) = text.split_once(':').ok_or_else(bad)?;
            Ok::<_, Error>((dim.trim().to_owned(), Freq::parse(freq.trim()).ok_or_else(bad)?))
        })
        .transpose()?;
    let coarsen = params
        .coarsen
        .as_deref()
        .map(|text| {
            text.split(',')
                .map(|item| {
                    let bad = || {
                        Error::BadRequest(format!(
                            "coarsen item `{item}` is not DIM:N with N a whole number from 1, e.g. lat:4,lon:4"
                        ))
                    };
                    let (dim, n) = item.split_once(':').ok_or_else(bad)?;
                    let n: u64 = n.trim().parse().ok().filter(|&n| n > 0).ok_or_else(bad)?;
                    Ok((dim.trim().to_owned(), n))
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?
        .unwrap_or_default();
    Ok(Request { op, over, area_weights, within, resample, coarsen })
}

/// The cells a reduction selects: stored indices per dimension, which dimensions one
/// index picked, and the index selection in `s=` syntax when it is one.
pub struct Cells {
    pub selected: Vec<Vec<u64>>,
    pub scalar: Vec<bool>,
    pub zarr_selection: Option<String>,
    /// The validators of the grid a `sel=` point was found on.
    pub grid_digest: Option<(u128, u128)>,
    /// Of a latitude/longitude box on a grid: the cells of the selection it holds.
    pub mask: Option<zarrd_core::reduce::Mask>,
}

/// The cells of `sel=` or `s=` (neither: every cell); `grid` finds the array's grid for a
/// `sel=` point.
pub async fn cells<F>(
    params: &ReduceQuery,
    shape: &[u64],
    labels: &ArrayLabels,
    grid: impl FnOnce() -> F,
) -> Result<Cells>
where
    F: Future<Output = Result<Option<Arc<Found>>>>,
{
    let picked: Vec<Picked> = match (params.sel.as_deref(), params.s.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(Error::BadRequest("give either s= (indices) or sel= (labels), not both".into()));
        }
        (Some(sel), None) => {
            let resolved = Resolved::new(sel, shape, labels, grid).await?;
            let cells = expand(&resolved.picked, resolved.zarr_selection, labels)?;
            let mask = resolved.mask.map(|m| zarrd_core::reduce::Mask {
                rows: m.dims[0],
                cols: m.dims[1],
                inside: m.inside,
                weights: None,
            });
            return Ok(Cells { grid_digest: resolved.grid_digest, mask, ..cells });
        }
        (None, s) => Selection::parse(s.unwrap_or(""))?
            .resolve(shape)?
            .into_iter()
            .map(|d| {
                if d.drop {
                    Picked::Index(d.start)
                } else {
                    // Strided selections become one run per index; plain ones one run.
                    Picked::Runs(if d.step == 1 {
                        vec![zarrd_core::coords::labels::Run { start: d.start, count: d.count }]
                    } else {
                        (0..d.count.min(MAX_GROUPS as u64 + 1))
                            .map(|i| zarrd_core::coords::labels::Run { start: d.coord(i), count: 1 })
                            .collect()
                    })
                }
            })
            .collect(),
    };
    let text = params.s.as_deref().map(str::to_owned);
    expand(&picked, text, labels)
}

fn expand(picked: &[Picked], zarr_selection: Option<String>, labels: &ArrayLabels) -> Result<Cells> {
    let mut selected = Vec::with_capacity(picked.len());
    for (d, p) in picked.iter().enumerate() {
        let n = p.count();
        if n > MAX_GROUPS as u64 {
            return Err(Error::OverLimit(format!(
                "the selection takes {n} indices of `{}`, more than a reduction plans per dimension ({MAX_GROUPS}); narrow it with sel= or s=",
                labels.name(d)
            )));
        }
        selected.push(p.runs().iter().flat_map(|r| r.start..r.start + r.count).collect());
    }
    let scalar = picked.iter().map(|p| matches!(p, Picked::Index(_))).collect();
    Ok(Cells { selected, scalar, zarr_selection, grid_digest: None, mask: None })
}

/// A reduction built and checked, with the values it holds at most (median and
/// percentiles; 0 for the others).
pub struct Checked {
    pub built: Built,
    pub values_held: u128,
}

impl Checked {
    /// The memory the reduction holds while it runs: its accumulators (64 bytes per
    /// result element), the values median and percentiles hold (8 bytes each), and the
    /// result (8 bytes per element).
    pub fn working_bytes(&self) -> u64 {
        let n: u64 = self.built.reduction.shape().iter().product();
        n * 64 + self.values_held as u64 * 8 + n * 8
    }
}

/// Builds the reduction and checks its size before any read: the cells to visit against
/// `max_cells`, and the values median and percentiles hold against `max_bytes`.
pub fn build(
    request: &Request,
    (cells, grid): (Cells, Option<&zarrd_core::grid::Grid>),
    labels: &ArrayLabels,
    max_cells: u64,
    max_bytes: u64,
) -> Result<Checked> {
    let names: Vec<String> = (0..labels.names.len()).map(|d| labels.name(d)).collect();
    let built = request::build(request, &names, &labels.labels, (cells.selected, cells.mask), &cells.scalar, grid)?;
    let count = built.reduction.cells();
    if count > u128::from(max_cells) {
        return Err(Error::OverLimit(format!(
            "the reduction would visit {count} cells, more than limits.max_reduce_cells ({max_cells}); narrow the selection (sel= ranges on time, lat or lon) or the polygon"
        )));
    }
    let held = if request.op.holds_values() { built.reduction.values_held() } else { 0 };
    if held * 8 > u128::from(max_bytes) {
        return Err(Error::OverLimit(format!(
            "{} holds the values of a group to rank them: up to {held} values ({} bytes), more than limits.max_response_bytes ({max_bytes}); narrow the selection or use mean, min, max, std, var or count",
            request.op.name(),
            held * 8
        )));
    }
    Ok(Checked { built, values_held: held })
}

/// The type results are given in: int64 counts; for min and max the decoded type, unless
/// an integer result would have to say "nothing there" (a polygon or empty periods: then
/// float64, as xarray's `where` and `resample` make it); float64 otherwise.
pub fn result_type(request: &Request, cf: &CfValues) -> DataType {
    match request.op {
        Op::Count => DataType::Int64,
        Op::Min | Op::Max if cf.decoded.is_float() => cf.decoded,
        Op::Min | Op::Max if request.within.is_none() && request.resample.is_none() => cf.decoded,
        _ => DataType::Float64,
    }
}

/// `values` as little-endian elements of `data_type`.
pub fn encode(values: &[f64], data_type: DataType) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * data_type.size());
    for &v in values {
        match data_type {
            DataType::Float32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            DataType::Float16 => out.extend_from_slice(&half::f16::from_f64(v).to_le_bytes()),
            DataType::Int64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
            DataType::Int32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            DataType::Int16 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            DataType::Int8 => out.extend_from_slice(&(v as i8).to_le_bytes()),
            DataType::UInt64 => out.extend_from_slice(&(v as u64).to_le_bytes()),
            DataType::UInt32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
            DataType::UInt16 => out.extend_from_slice(&(v as u16).to_le_bytes()),
            DataType::UInt8 | DataType::Bool => out.push(v as u8),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
    out
}
