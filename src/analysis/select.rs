//! A label selection made into a need of the query plan: `sel=` resolved on the array's
//! labels (or a grid's cells) into index runs per dimension (two for a longitude range
//! across the stored seam), read and gathered into one C-order result.

use zarrd_core::coords::labels::Run;
use zarrd_core::coords::sel::{self, GridPick, Picked, SelError};
use zarrd_core::ops::budget::Reservation;
use zarrd_core::query::{Limits, Need, Plan, Progression};
use zarrd_core::read::{ArrayReader, ObjectVersion};
use zarrd_core::zarr::data_type::DataType;

use std::sync::Arc;

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::grids::Found;
use crate::error::{Error, Result};

impl From<SelError> for Error {
    fn from(e: SelError) -> Self {
        if e.is_absent() { Self::NotFound(e.to_string()) } else { Self::BadRequest(e.to_string()) }
    }
}

/// A resolved label selection.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub picked: Vec<Picked>,
    /// The result's extent along every dimension, dropped ones as 1.
    pub full_shape: Vec<u64>,
    /// The result's shape: dimensions picked by one label are dropped.
    pub shape: Vec<u64>,
    /// The index selection in `s=` syntax, when it is one (not across a seam).
    pub zarr_selection: Option<String>,
    /// The lon/lat of the grid cell a point picked (on grids other than 1-D lat/lon).
    pub centre: Option<(f64, f64)>,
    /// The dimensions whose picked index has no label worth naming in `point`: a
    /// curvilinear grid's (Y, X), whose cell is named by its centre (and `Zarr-Selection`).
    pub unnamed: Option<[usize; 2]>,
    /// The validators of the grid that point or box was found on.
    pub grid_digest: Option<(u128, u128)>,
    /// Of a latitude/longitude box on a grid: which cells of the index box it holds.
    pub mask: Option<BoxMask>,
}

/// The cells of an index box on a grid's (Y, X) that a latitude/longitude box holds
/// (row-major over the box; the others are missing in a slice, left out of a reduction).
#[derive(Debug, Clone)]
pub struct BoxMask {
    pub dims: [usize; 2],
    pub width: usize,
    pub inside: Vec<bool>,
}

impl BoxMask {
    /// Sets the elements of `data` (float32 or float64, C order over `shape`, whose Y and X
    /// span the box) that lie outside it to NaN.
    pub fn blank(&self, data: &mut [u8], data_type: DataType, shape: &[u64]) {
        if let Some(nan) = nan(data_type) {
            self.fill(data, &nan, shape);
        }
    }

    /// Marks the elements of `data` (of `data_type`, C order over `shape`, whose Y and X
    /// span the box) that lie outside it missing, and returns the value they got: the
    /// `declared` one (the variable's `_FillValue`), else NaN of the type's width, else (an
    /// integer type) a value no cell inside the box holds, so that a reader told it masks
    /// those cells alone: the first free of `preferred`, else the largest free one.
    pub fn mark_outside(
        &self,
        data: &mut [u8],
        data_type: DataType,
        shape: &[u64],
        (declared, preferred): (Option<Vec<u8>>, &[Vec<u8>]),
    ) -> Result<Vec<u8>> {
        let item = data_type.size();
        let value = match declared.or_else(|| nan(data_type)) {
            Some(value) => value,
            None => self.free_integer(data, (item, signed(data_type)), shape, preferred).ok_or_else(|| {
                Error::Unsupported(format!(
                    "the cells inside the latitude/longitude box hold every value a missing cell could be \
                     given ({data_type:?} has no value left): declare `_FillValue`, or select by indices (s=)"
                ))
            })?,
        };
        if value.len() != item {
            return Err(Error::Internal {
                detail: format!("a missing value of {} bytes for {item}-byte elements", value.len()),
                source: None,
            });
        }
        self.fill(data, &value, shape);
        Ok(value)
    }

    /// Sets the elements of `data` (each `fill.len()` bytes) outside the box to `fill`.
    fn fill(&self, data: &mut [u8], fill: &[u8], shape: &[u64]) {
        for (element, inside) in data.chunks_exact_mut(fill.len()).zip(self.cells(shape)) {
            if !inside {
                element.copy_from_slice(fill);
            }
        }
    }

    /// A value of `item`-byte integers that no element inside the box holds (see
    /// `mark_outside`); None when they hold every one.
    fn free_integer(
        &self,
        data: &[u8],
        (item, signed): (usize, bool),
        shape: &[u64],
        preferred: &[Vec<u8>],
    ) -> Option<Vec<u8>> {
        let bits = item as u32 * 8;
        let (low, high) =
            if signed { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
        let preferred: Vec<i128> = preferred.iter().filter(|p| p.len() == item).map(|p| integer(p, signed)).collect();
        let mut taken = vec![false; preferred.len()];
        // Every value of an 8- or 16-bit type, one bit each (8 KiB at most).
        let mut seen = vec![0u64; if item <= 2 { (1usize << bits) / 64 } else { 0 }];
        let (mut min, mut max) = (high, low);
        for (element, inside) in data.chunks_exact(item).zip(self.cells(shape)) {
            if !inside {
                continue;
            }
            let v = integer(element, signed);
            (min, max) = (min.min(v), max.max(v));
            for (t, p) in taken.iter_mut().zip(&preferred) {
                *t |= v == *p;
            }
            if let Some(word) = seen.get_mut(((v - low) / 64) as usize) {
                *word |= 1u64 << ((v - low) % 64) as u32;
            }
        }
        let free = preferred.iter().zip(&taken).find(|(_, t)| !**t).map(|(p, _)| *p).or_else(|| {
            if seen.is_empty() {
                // Wider types: above the largest held, else below the smallest.
                (max < high).then_some(high).or((min > low).then_some(low))
            } else {
                (0..seen.len() * 64).rev().find(|&i| seen[i / 64] & (1u64 << (i % 64)) == 0).map(|i| low + i as i128)
            }
        })?;
        Some(free.to_le_bytes()[..item].to_vec())
    }

    /// Whether each element of a C-order array over `shape` (whose Y and X span the box)
    /// lies inside it, in order.
    fn cells<'a>(&'a self, shape: &'a [u64]) -> impl Iterator<Item = bool> + 'a {
        let mut index = vec![0u64; shape.len()];
        (0..shape.iter().product::<u64>()).map(move |_| {
            let inside = self.inside[index[self.dims[0]] as usize * self.width + index[self.dims[1]] as usize];
            for d in (0..shape.len()).rev() {
                index[d] += 1;
                if index[d] < shape[d] {
                    break;
                }
                index[d] = 0;
            }
            inside
        })
    }
}

/// NaN as one little-endian element of `data_type`, when it is float32 or float64.
fn nan(data_type: DataType) -> Option<Vec<u8>> {
    match data_type {
        DataType::Float32 => Some(f32::NAN.to_le_bytes().to_vec()),
        DataType::Float64 => Some(f64::NAN.to_le_bytes().to_vec()),
        _ => None,
    }
}

/// Whether the integers of `data_type` are signed (booleans are as NetCDF holds them: bytes).
fn signed(data_type: DataType) -> bool {
    matches!(data_type, DataType::Bool | DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64)
}

/// The little-endian integer `bytes` (1 to 8 of them).
fn integer(bytes: &[u8], signed: bool) -> i128 {
    let mut wide = [0u8; 16];
    wide[..bytes.len()].copy_from_slice(bytes);
    let unsigned = i128::from_le_bytes(wide);
    let bits = bytes.len() as u32 * 8;
    if signed && unsigned >> (bits - 1) & 1 == 1 { unsigned - (1i128 << bits) } else { unsigned }
}

impl Resolved {
    /// Resolves `sel` on an array of `shape` with `labels`; `grid` finds the array's grid
    /// when the selection names a point by latitude and longitude that are not dimensions.
    pub async fn new<F>(sel: &str, shape: &[u64], labels: &ArrayLabels, grid: impl FnOnce() -> F) -> Result<Self>
    where
        F: Future<Output = Result<Option<Arc<Found>>>>,
    {
        let mut items = sel::parse(sel)?;
        let on_grid = if sel::names_point(&items, &labels.names) {
            let Some(found) = grid().await? else {
                // Not a grid: say which dimensions there are.
                return Err(sel::resolve(&items, &labels.names, shape, |d| labels.labels[d].as_deref())
                    .err()
                    .map_or_else(
                        || Error::BadRequest("sel names a point but the array has no grid".into()),
                        Error::from,
                    ));
            };
            Some((sel::take_grid_pick(&mut items)?, found))
        } else {
            None
        };
        let mut picked = sel::resolve(&items, &labels.names, shape, |d| labels.labels[d].as_deref())?;
        let Some((pick, found)) = on_grid else { return Ok(Self::of(picked, shape, None)) };
        let grid = &found.grid;
        if let Some(d) = grid.dims.iter().find(|&&d| items.iter().any(|it| Some(&it.dim) == labels.names[d].as_ref())) {
            return Err(Error::from(sel::SelError::Point(format!(
                "names both latitude/longitude and the grid's dimension `{}`",
                labels.name(*d)
            ))));
        }
        let [yd, xd] = grid.dims;
        if let GridPick::Point(lon, lat) = pick {
            let bbox = |b: [f64; 4]| format!("lon {}..{}, lat {}..{}", b[0], b[2], b[1], b[3]);
            let (row, col) =
                grid.cell(lon, lat).ok_or_else(|| sel::SelError::Outside { lon, lat, bbox: bbox(grid.bbox) })?;
            picked[yd] = Picked::Index(u64::from(row));
            picked[xd] = Picked::Index(u64::from(col));
            let centre = grid.centre(u64::from(row), u64::from(col));
            let unnamed = (grid.kind == zarrd_core::grid::Kind::Curvilinear).then_some(grid.dims);
            return Ok(Self { grid_digest: Some(found.digest), unnamed, ..Self::of(picked, shape, centre) });
        }
        // A box: the index box of the cells whose centre it holds; the others in it missing.
        let centres = found.centres()?;
        let (_, cols) = grid.shape();
        let taken: Vec<(u64, u64)> = centres
            .iter()
            .enumerate()
            .filter(|&(_, &(lon, lat))| !lon.is_nan() && pick.holds(lon, lat))
            .map(|(k, _)| (k as u64 / cols, k as u64 % cols))
            .collect();
        let Some((r0, r1, c0, c1)) = taken.iter().fold(None, |b: Option<(u64, u64, u64, u64)>, &(r, c)| {
            Some(b.map_or((r, r, c, c), |(a, z, l, h)| (a.min(r), z.max(r), l.min(c), h.max(c))))
        }) else {
            return Err(Error::from(sel::SelError::EmptyBox(sel.to_owned())));
        };
        let width = (c1 - c0 + 1) as usize;
        let mut inside = vec![false; (r1 - r0 + 1) as usize * width];
        for &(r, c) in &taken {
            inside[(r - r0) as usize * width + (c - c0) as usize] = true;
        }
        picked[yd] = Picked::Runs(vec![Run { start: r0, count: r1 - r0 + 1 }]);
        picked[xd] = Picked::Runs(vec![Run { start: c0, count: c1 - c0 + 1 }]);
        let mask = BoxMask { dims: grid.dims, width, inside };
        Ok(Self { grid_digest: Some(found.digest), mask: Some(mask), ..Self::of(picked, shape, None) })
    }

    /// The reads of `picked` on an array of `shape` (`centre`: of the grid cell a point picked).
    pub fn of(picked: Vec<Picked>, shape: &[u64], centre: Option<(f64, f64)>) -> Self {
        let full_shape: Vec<u64> = picked.iter().map(Picked::count).collect();
        let result_shape =
            picked.iter().filter(|p| !matches!(p, Picked::Index(_))).map(Picked::count).collect::<Vec<_>>();
        let zarr_selection = sel::as_selection(&picked).map(|s| sel::selection_text(&s, shape));
        Self {
            picked,
            full_shape,
            shape: result_shape,
            zarr_selection,
            centre,
            unnamed: None,
            grid_digest: None,
            mask: None,
        }
    }

    /// What the selection needs of the array: each dimension's runs, in order.
    pub fn need(&self) -> Need {
        let dims = self.picked.iter().map(|p| p.runs().iter().map(|r| Progression::run(r.start, r.count)).collect());
        Need { dims: dims.collect(), pairs: None }
    }

    /// The reads of the selection, planned on `array` (one, or two across a seam).
    fn plan(&self, array: &ArrayReader) -> Result<Plan> {
        Ok(Plan::new(&array.meta.read_grid(), self.need(), &Limits::whole(self.picked.len()))?)
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
        Ok(self.plan(array)?.versions(array).await?)
    }

    /// Reads the stored elements of the selection in C order.
    pub async fn read(&self, array: &ArrayReader) -> Result<(Vec<u8>, Vec<(String, ObjectVersion)>, Reservation)> {
        let gathered = self.plan(array)?.gather(array).await?;
        Ok((Vec::from(gathered.data), gathered.object_versions, gathered.reservation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1 x n box whose first `inside` cells it holds.
    fn mask(n: usize, inside: usize) -> BoxMask {
        BoxMask { dims: [0, 1], width: n, inside: (0..n).map(|i| i < inside).collect() }
    }

    #[test]
    fn a_missing_value_is_one_no_cell_inside_holds() {
        // int8: the preferred values taken, then the largest free one (125: 127 and 126 held).
        let mut data: Vec<u8> = [0i8, -127, 127, 126, 5, 5].iter().map(|v| *v as u8).collect();
        let m = mask(6, 4);
        let value = m.mark_outside(&mut data, DataType::Int8, &[1, 6], (None, &[vec![0], vec![0x81]])).unwrap();
        assert_eq!(value, [125]);
        assert_eq!(&data[4..], [125, 125]);
        // A preferred value held only outside the box is free.
        let mut data = vec![1, 2, 0];
        assert_eq!(mask(3, 2).mark_outside(&mut data, DataType::UInt8, &[1, 3], (None, &[vec![0]])).unwrap(), [0]);
        // Wider types: above the largest held, else below the smallest.
        let mut data: Vec<u8> = [7u32, u32::MAX, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let value =
            mask(3, 2).mark_outside(&mut data, DataType::UInt32, &[1, 3], (None, &[7u32.to_le_bytes().to_vec()]));
        assert_eq!(value.unwrap(), 0u32.to_le_bytes());
        let mut data: Vec<u8> = [i64::MIN, i64::MAX, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let value = mask(3, 2).mark_outside(&mut data, DataType::Int64, &[1, 3], (None, &[]));
        assert!(value.unwrap_err().to_string().contains("no value left"));
        // Every uint8 held: nothing is left to mark the outside with.
        let mut data: Vec<u8> = (0..=255).chain([9]).collect();
        let value = mask(257, 256).mark_outside(&mut data, DataType::UInt8, &[1, 257], (None, &[]));
        assert!(value.is_err());
        // Floats: NaN of their own width; a declared fill as it is.
        let mut data = vec![0u8; 6];
        let m = mask(3, 1);
        assert_eq!(m.mark_outside(&mut data, DataType::Int16, &[1, 3], (Some(vec![1, 2]), &[])).unwrap(), [1, 2]);
        assert_eq!(data, [0, 0, 1, 2, 1, 2]);
        let mut data = vec![0u8; 12];
        let nan = m.mark_outside(&mut data, DataType::Float32, &[1, 3], (None, &[])).unwrap();
        assert!(f32::from_le_bytes(nan.try_into().unwrap()).is_nan());
        // A fill of another width is an error, not a panic.
        assert!(m.mark_outside(&mut data, DataType::Float32, &[1, 3], (Some(vec![0; 8]), &[])).is_err());
    }
}
