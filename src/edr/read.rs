//! A planned EDR query read: per parameter, one need of the query plan — the steps and
//! levels taken, and either every point's cell (each chunk holding one read once, however
//! many points share it) or the box of the cells taken — read through the ordinary read
//! path (coalesced, cached), CF-decoded, and laid out per place in C order of (t, z, y, x)
//! whatever the array's own order.

use zarrd_core::coords::cf::CfValues;
use zarrd_core::coords::geo::{crs84_longitude, eastward_longitudes};
use zarrd_core::coords::labels::Kind;
use zarrd_core::grid::Kind as GridKind;
use zarrd_core::ops::budget::Reservation;
use zarrd_core::query::{self as reads, Limits, Need, Pairs, Progression, progressions};
use zarrd_core::read::{ArrayReader, ObjectVersion};

use crate::catalog::{Catalog, Dataset};
use crate::edr::collection::{Axis, Collection};
use crate::edr::query::{Places, Plan};
use crate::error::Result;

/// Where a cell of a grid other than latitude/longitude is: its centre in lon/lat and in
/// native x/y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    pub lon: f64,
    pub lat: f64,
    pub x: f64,
    pub y: f64,
}

/// The domain and values of one coverage.
#[derive(Debug, Clone)]
pub struct Coverage {
    /// Cell centres: CRS84 longitudes eastwards, latitudes in stored order; on a grid
    /// other than latitude/longitude the native x and y of a box (a point's lon/lat).
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// On a grid other than latitude/longitude, each cell's place (row-major).
    pub places: Option<Vec<Place>>,
    /// Which cells of the box were taken (row-major), `None` for a point and for cells
    /// listed.
    pub mask: Option<Vec<bool>>,
    /// Cells listed one by one (a curvilinear grid's `MultiPointSeries`): `x`, `y` and
    /// `places` give each taken cell's centre, the values hold only those cells.
    pub listed: bool,
    /// Whether `places` carry native x/y worth naming (not on a curvilinear grid, whose
    /// native x/y are its stored longitude/latitude).
    pub native: bool,
    /// Per parameter, the values in C order of (t, z, y, x); NaN where missing or not taken.
    pub values: Vec<Vec<f64>>,
}

/// The axes shared by the coverages of an answer.
#[derive(Debug, Clone)]
pub struct Domain {
    /// `YYYY-MM-DDTHH:MM:SSZ` per step taken, `None` without a time axis.
    pub t: Option<Vec<String>>,
    /// The levels taken, `None` without a vertical axis.
    pub z: Option<Vec<f64>>,
}

impl Domain {
    pub fn of(collection: &Collection, plan: &Plan) -> Self {
        let t = plan.axes.contains(&Axis::T).then(|| {
            let labels = collection.time.as_deref();
            let mut out = Vec::with_capacity(plan.step_count() as usize);
            for run in &plan.times {
                for i in run.start..run.start + run.count {
                    out.push(labels.map(|l| time_text(l, i as usize)).unwrap_or_default());
                }
            }
            out
        });
        let z = plan.axes.contains(&Axis::Z).then(|| {
            let labels = collection.vertical.as_ref().map(|v| &v.labels);
            plan.levels.iter().map(|&i| labels.map_or(f64::NAN, |l| l.values[i as usize])).collect()
        });
        Self { t, z }
    }
}

/// Step `i` of time labels as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn time_text(labels: &zarrd_core::coords::labels::Labels, i: usize) -> String {
    let Kind::Time(cf) = &labels.kind else { return String::new() };
    match cf.datetime(labels.values[i]) {
        Some(d) if (0..=9999).contains(&d.year) => {
            format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", d.year, d.month, d.day, d.hour, d.minute, d.second)
        }
        Some(d) => format!("{}Z", d.iso()),
        None => String::new(),
    }
}

/// What `plan` needs of a parameter's array (its dimensions `axes`), and the extent of
/// one place's values in the array's order (a point: one row and column).
fn need(plan: &Plan, axes: &[Axis]) -> (Need, Vec<u64>) {
    let (rows, columns, pairs): (Vec<u64>, Vec<u64>, Option<Vec<(u64, u64)>>) = match &plan.places {
        Places::Points { cells, .. } => {
            let distinct = |mut v: Vec<u64>| {
                v.sort_unstable();
                v.dedup();
                v
            };
            let rows = distinct(cells.iter().map(|c| c.0).collect());
            let columns = distinct(cells.iter().map(|c| c.1).collect());
            let position = |v: &[u64], i: u64| v.partition_point(|&x| x < i) as u64;
            let at = cells.iter().map(|&(r, c)| (position(&rows, r), position(&columns, c))).collect();
            (rows, columns, Some(at))
        }
        Places::Box(taken) => (taken.rows.clone().collect(), taken.columns.clone(), None),
    };
    let times: Vec<Progression> = plan.times.iter().map(|r| Progression::run(r.start, r.count)).collect();
    let dims: Vec<Vec<Progression>> = axes
        .iter()
        .map(|axis| match axis {
            Axis::T => times.clone(),
            Axis::Z => progressions(&plan.levels),
            Axis::Y => progressions(&rows),
            Axis::X => progressions(&columns),
        })
        .collect();
    let pairs = pairs.map(|at| {
        let dim = |a: Axis| axes.iter().position(|&b| b == a).unwrap_or(0);
        Pairs { dims: [dim(Axis::Y), dim(Axis::X)], at }
    });
    let need = Need { dims, pairs };
    let mut shape = need.shape();
    if need.pairs.is_some() {
        for (d, axis) in axes.iter().enumerate() {
            if matches!(axis, Axis::Y | Axis::X) {
                shape[d] = 1;
            }
        }
    }
    (need, shape)
}

/// Per parameter: its array (reads planned: no window for other requests'), its reads
/// and the extent of one place's values.
async fn open(catalog: &Catalog, dataset: &Dataset, plan: &Plan) -> Result<Vec<(ArrayReader, reads::Plan, Vec<u64>)>> {
    let mut out = Vec::with_capacity(plan.parameters.len());
    for p in &plan.parameters {
        let reader = catalog.array(dataset, &p.path).await?.planned();
        let (need, shape) = need(plan, &p.axes);
        // Reads split at chunk edges across the grid first: points far apart read only
        // their own chunks, a long series is read in steps of at most `BLOCK_CELLS`.
        let order = [Axis::Y, Axis::X, Axis::T, Axis::Z].iter().filter_map(|a| p.axes.iter().position(|b| b == a));
        let read = reads::Plan::new(&reader.meta.read_grid(), need, &Limits::blocks(order.collect()))?;
        out.push((reader, read, shape));
    }
    Ok(out)
}

/// The versions of every stored object `plan` reads (for revalidation before reading).
pub async fn versions(catalog: &Catalog, dataset: &Dataset, plan: &Plan) -> Result<Vec<(String, ObjectVersion)>> {
    let mut out = Vec::new();
    for (reader, read, _) in open(catalog, dataset, plan).await? {
        out.extend(read.versions(&reader).await?);
    }
    Ok(out)
}

/// Reads the values of `plan`: one coverage per point (or one for the box), the objects'
/// versions, and the memory they hold.
pub async fn read(
    catalog: &Catalog,
    dataset: &Dataset,
    collection: &Collection,
    plan: &Plan,
) -> Result<(Vec<Coverage>, Vec<(String, ObjectVersion)>, Reservation)> {
    let parameters = open(catalog, dataset, plan).await?;
    let n_places = match &plan.places {
        Places::Points { cells, .. } => cells.len(),
        Places::Box(_) => 1,
    };
    let mut versions = Vec::new();
    let mut held: Option<Reservation> = None;
    // Per place, per parameter.
    let mut values: Vec<Vec<Vec<f64>>> = (0..n_places).map(|_| Vec::with_capacity(parameters.len())).collect();
    for ((reader, read, shape), p) in parameters.iter().zip(&plan.parameters) {
        let gathered = read.gather(reader).await?;
        versions.extend(gathered.object_versions);
        let per_place: u64 = shape.iter().product();
        // The decoded values are held until the answer is written: counted in the budget;
        // the stored bytes (and their share) go once decoded.
        let values_held = catalog.budget.reserve(per_place * n_places as u64 * 8).await?;
        let cf = CfValues::of(&reader.meta);
        let item = reader.meta.data_type.size();
        for (k, place) in values.iter_mut().enumerate() {
            let at = k * per_place as usize * item;
            let mut decoded = vec![0.0; per_place as usize];
            cf.values_into(&gathered.data[at..at + per_place as usize * item], &mut decoded);
            place.push(in_edr_order(decoded, shape, &p.axes));
        }
        drop((gathered.data, gathered.reservation));
        match &mut held {
            Some(h) => h.merge(values_held),
            None => held = Some(values_held),
        }
    }
    let coverages = coverages(collection, plan, values);
    Ok((coverages, versions, held.unwrap_or_default()))
}

/// The coverages of `plan`'s `values` (per place, per parameter): one per point at its
/// cell's centre, or the box (on a curvilinear grid its taken cells listed).
fn coverages(collection: &Collection, plan: &Plan, values: Vec<Vec<Vec<f64>>>) -> Vec<Coverage> {
    let (lat, lon) = (&collection.lat.values, &collection.lon.values);
    let curvilinear = collection.grid.as_deref().is_some_and(|f| f.grid.kind == GridKind::Curvilinear);
    let native = collection.grid.is_some() && !curvilinear;
    let place = |r: u64, c: u64| {
        let found = collection.grid.as_deref()?;
        let (x, y) = found.grid.native.centre(r, c);
        let (lon, lat) = found.grid.centre(r, c).unwrap_or((f64::NAN, f64::NAN));
        Some(Place { lon: crs84_longitude(lon), lat, x, y })
    };
    match &plan.places {
        Places::Points { cells, .. } => cells
            .iter()
            .zip(values)
            .map(|(&(r, c), values)| match place(r, c) {
                Some(p) => Coverage {
                    x: vec![p.lon],
                    y: vec![p.lat],
                    places: Some(vec![p]),
                    mask: None,
                    listed: false,
                    native,
                    values,
                },
                None => Coverage {
                    x: vec![crs84_longitude(lon[c as usize])],
                    y: vec![lat[r as usize]],
                    places: None,
                    mask: None,
                    listed: false,
                    native,
                    values,
                },
            })
            .collect(),
        Places::Box(taken) if curvilinear => {
            // Only the taken cells, each at its centre: (t, z, cell) with the others left out.
            let values = values.into_iter().next().unwrap_or_default();
            let cells = taken.mask.len();
            let values = values
                .into_iter()
                .map(|v| v.into_iter().enumerate().filter(|(i, _)| taken.mask[i % cells]).map(|(_, v)| v).collect())
                .collect();
            let places: Vec<Place> = taken
                .rows
                .clone()
                .flat_map(|r| taken.columns.iter().map(move |&c| (r, c)))
                .zip(&taken.mask)
                .filter(|(_, m)| **m)
                .filter_map(|((r, c), _)| place(r, c))
                .collect();
            vec![Coverage {
                x: places.iter().map(|p| p.lon).collect(),
                y: places.iter().map(|p| p.lat).collect(),
                places: Some(places),
                mask: None,
                listed: true,
                native,
                values,
            }]
        }
        Places::Box(taken) => {
            let mut values = values.into_iter().next().unwrap_or_default();
            let per_cell = plan.values_per_cell() as usize;
            let cells = taken.mask.len();
            for v in &mut values {
                // Values are (t, z, y, x): the cell index cycles fastest after t and z.
                for (i, value) in v.iter_mut().enumerate() {
                    if !taken.mask[i % cells] {
                        *value = f64::NAN;
                    }
                }
                debug_assert_eq!(v.len(), per_cell * cells);
            }
            let places = collection.grid.is_some().then(|| {
                taken.rows.clone().flat_map(|r| taken.columns.iter().filter_map(move |&c| place(r, c))).collect()
            });
            let x = if places.is_some() {
                taken.columns.iter().map(|&c| lon[c as usize]).collect()
            } else {
                eastward_longitudes(&taken.columns, lon)
            };
            vec![Coverage {
                x,
                y: taken.rows.clone().map(|r| lat[r as usize]).collect(),
                places,
                mask: Some(taken.mask.clone()),
                listed: false,
                native,
                values,
            }]
        }
    }
}

/// `values` in C order of the array's dimensions (extents `shape`, kinds `axes`) laid out
/// in C order of (t, z, y, x): the same vector when the array's order is that already.
fn in_edr_order(values: Vec<f64>, shape: &[u64], axes: &[Axis]) -> Vec<f64> {
    let order = [Axis::T, Axis::Z, Axis::Y, Axis::X];
    let dims: Vec<usize> = order.iter().filter_map(|a| axes.iter().position(|b| b == a)).collect();
    if dims.windows(2).all(|w| w[0] < w[1]) {
        return values;
    }
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as usize;
    }
    let extents: Vec<usize> = dims.iter().map(|&d| shape[d] as usize).collect();
    let mut out = Vec::with_capacity(values.len());
    let mut index = vec![0usize; dims.len()];
    for _ in 0..values.len() {
        let at: usize = index.iter().zip(&dims).map(|(&i, &d)| i * strides[d]).sum();
        out.push(values[at]);
        for k in (0..index.len()).rev() {
            index[k] += 1;
            if index[k] < extents[k] {
                break;
            }
            index[k] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_out_in_t_z_y_x_order() {
        // (z, t, y, x) = (2, 3, 1, 1): value = 10 z + t.
        let stored: Vec<f64> = (0..2).flat_map(|z| (0..3).map(move |t| f64::from(10 * z + t))).collect();
        let out = in_edr_order(stored.clone(), &[2, 3, 1, 1], &[Axis::Z, Axis::T, Axis::Y, Axis::X]);
        assert_eq!(out, vec![0.0, 10.0, 1.0, 11.0, 2.0, 12.0]);
        let same = in_edr_order(stored.clone(), &[3, 2, 1, 1], &[Axis::T, Axis::Z, Axis::Y, Axis::X]);
        assert_eq!(same, stored);
    }
}
