//! A label selection made into reads: `sel=` resolved on the array's labels into index
//! runs, the runs into index selections (one, or two for a longitude range across the
//! stored seam), and those read and placed side by side in one C-order result.

use zarrd_core::coords::sel::{self, Picked, SelError};
use zarrd_core::ops::budget::Reservation;
use zarrd_core::read::selection::DimSelection;
use zarrd_core::read::{ArrayReader, ObjectVersion};
use zarrd_core::zarr::copy::{Region, copy_region};

use std::sync::Arc;

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::grids::Found;
use crate::error::{Error, Result};

impl From<SelError> for Error {
    fn from(e: SelError) -> Self {
        if e.is_absent() { Self::NotFound(e.to_string()) } else { Self::BadRequest(e.to_string()) }
    }
}

/// One index selection to read (every dimension kept) and where it lands in the result.
#[derive(Debug, Clone)]
pub struct Part {
    pub selection: Vec<DimSelection>,
    pub at: Vec<u64>,
}

/// A resolved label selection.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub picked: Vec<Picked>,
    /// The result's extent along every dimension, dropped ones as 1.
    pub full_shape: Vec<u64>,
    /// The result's shape: dimensions picked by one label are dropped.
    pub shape: Vec<u64>,
    pub parts: Vec<Part>,
    /// The index selection in `s=` syntax, when it is one (not across a seam).
    pub zarr_selection: Option<String>,
    /// The lon/lat of the grid cell a point picked (on grids other than 1-D lat/lon).
    pub centre: Option<(f64, f64)>,
    /// The validators of the grid that point was found on.
    pub grid_digest: Option<(u128, u128)>,
}

impl Resolved {
    /// Resolves `sel` on an array of `shape` with `labels`; `grid` finds the array's grid
    /// when the selection names a point by latitude and longitude that are not dimensions.
    pub async fn new<F>(sel: &str, shape: &[u64], labels: &ArrayLabels, grid: impl FnOnce() -> F) -> Result<Self>
    where
        F: Future<Output = Result<Option<Arc<Found>>>>,
    {
        let mut items = sel::parse(sel)?;
        let point = if sel::names_point(&items, &labels.names) {
            let Some(found) = grid().await? else {
                // Not a grid: say which dimensions there are.
                return Err(sel::resolve(&items, &labels.names, shape, |d| labels.labels[d].as_deref())
                    .err()
                    .map_or_else(
                        || Error::BadRequest("sel names a point but the array has no grid".into()),
                        Error::from,
                    ));
            };
            Some((sel::take_point(&mut items)?, found))
        } else {
            None
        };
        let mut picked = sel::resolve(&items, &labels.names, shape, |d| labels.labels[d].as_deref())?;
        let Some(((lon, lat), found)) = point else { return Ok(Self::of(picked, shape, None)) };
        let grid = &found.grid;
        if let Some(d) = grid.dims.iter().find(|&&d| items.iter().any(|it| Some(&it.dim) == labels.names[d].as_ref())) {
            return Err(Error::from(sel::SelError::Point(format!(
                "names both a point and the grid's dimension `{}`",
                labels.name(*d)
            ))));
        }
        let bbox = |b: [f64; 4]| format!("lon {}..{}, lat {}..{}", b[0], b[2], b[1], b[3]);
        let (row, col) =
            grid.cell(lon, lat).ok_or_else(|| sel::SelError::Outside { lon, lat, bbox: bbox(grid.bbox) })?;
        picked[grid.dims[0]] = Picked::Index(u64::from(row));
        picked[grid.dims[1]] = Picked::Index(u64::from(col));
        let centre = grid.centre(u64::from(row), u64::from(col));
        Ok(Self { grid_digest: Some(found.digest), ..Self::of(picked, shape, centre) })
    }

    /// The reads of `picked` on an array of `shape` (`centre`: of the grid cell a point picked).
    pub fn of(picked: Vec<Picked>, shape: &[u64], centre: Option<(f64, f64)>) -> Self {
        let full_shape: Vec<u64> = picked.iter().map(Picked::count).collect();
        let result_shape =
            picked.iter().filter(|p| !matches!(p, Picked::Index(_))).map(Picked::count).collect::<Vec<_>>();
        // The cartesian product of each dimension's runs (more than one only across a seam).
        let mut parts = vec![Part { selection: Vec::new(), at: Vec::new() }];
        for p in &picked {
            let mut next = Vec::with_capacity(parts.len() * 2);
            for part in &parts {
                let mut at = 0;
                for run in p.runs() {
                    let mut grown = part.clone();
                    grown.selection.push(DimSelection { start: run.start, step: 1, count: run.count, drop: false });
                    grown.at.push(at);
                    at += run.count;
                    next.push(grown);
                }
            }
            parts = next;
        }
        let zarr_selection = sel::as_selection(&picked).map(|s| sel::selection_text(&s, shape));
        Self { picked, full_shape, shape: result_shape, parts, zarr_selection, centre, grid_digest: None }
    }

    /// Elements in the result.
    pub fn len(&self) -> u64 {
        self.full_shape.iter().product()
    }

    /// Whether the result has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The versions of every stored object the reads will touch, for revalidation.
    pub async fn validation_versions(&self, array: &ArrayReader) -> Result<Vec<(String, ObjectVersion)>> {
        let mut out = Vec::new();
        for part in &self.parts {
            out.extend(array.validation_object_versions(&part.selection).await?);
        }
        Ok(out)
    }

    /// Reads the stored elements of the selection in C order.
    pub async fn read(&self, array: &ArrayReader) -> Result<(Vec<u8>, Vec<(String, ObjectVersion)>, Reservation)> {
        let item = array.meta.data_type.size();
        if let [part] = self.parts.as_slice() {
            let whole = array.read_whole(&part.selection).await?;
            return Ok((Vec::from(whole.data), whole.object_versions, whole.reservation));
        }
        let mut reservation = array.budget.reserve(self.len() * item as u64).await?;
        let mut out = vec![0u8; self.len() as usize * item];
        let mut versions = Vec::new();
        for part in &self.parts {
            let whole = array.read_whole(&part.selection).await?;
            let count: Vec<u64> = part.selection.iter().map(|d| d.count).collect();
            let zeros = vec![0; count.len()];
            let ones = vec![1; count.len()];
            let region = Region {
                src_shape: &count,
                src_start: &zeros,
                src_step: &ones,
                dst_shape: &self.full_shape,
                dst_start: &part.at,
                count: &count,
            };
            copy_region(&whole.data, &mut out, &region, item);
            versions.extend(whole.object_versions);
            reservation.merge(whole.reservation);
        }
        Ok((out, versions, reservation))
    }
}
