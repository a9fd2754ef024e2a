//! A plan read: its reads made through the read path (caches, coalesced ranges, single
//! flight, the memory budget), a few at a time, and the needed cells gathered out of them
//! as each arrives — the read's other cells and its memory go as soon as it is copied.

use futures::{Stream, StreamExt, TryStreamExt};

use super::plan::Plan;
use crate::ops::budget::Reservation;
use crate::read::{ArrayReader, ObjectVersion, ReadError, WholeRead};

/// Reads of one plan in flight at once (each is fetched and decoded in parallel itself).
const FAN_OUT: usize = 4;

/// The needed cells' stored elements, and what they came from.
#[derive(Debug)]
pub struct Gathered {
    /// Little-endian elements: in C order over the needed positions; with pairs, pair by
    /// pair, each pair's cells in C order over the other dimensions.
    pub data: bytes::Bytes,
    /// `(key, version)` of every object read, sorted, once each.
    pub object_versions: Vec<(String, ObjectVersion)>,
    /// The memory held for `data`.
    pub reservation: Reservation,
}

impl Plan {
    /// The versions of every object the plan's reads touch (for revalidation before
    /// reading), sorted, once each — as [`Gathered::object_versions`] lists them.
    pub async fn versions(&self, array: &ArrayReader) -> Result<Vec<(String, ObjectVersion)>, ReadError> {
        let mut out = Vec::new();
        for selection in self.selections() {
            out.extend(array.validation_object_versions(selection).await?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The reads in plan order, `ahead` of them in flight: a reduction folds each as it
    /// comes and drops it.
    pub fn reads<'a>(
        &'a self,
        array: &'a ArrayReader,
        ahead: usize,
    ) -> impl Stream<Item = Result<WholeRead, ReadError>> + 'a {
        futures::stream::iter(self.selections()).map(move |s| array.read_whole(s)).buffered(ahead.max(1))
    }

    /// The extent of what [`Plan::gather`] gives: the needed positions along every
    /// dimension, or with pairs the pairs, then the other dimensions' positions.
    pub fn gathered_shape(&self) -> Vec<u64> {
        let shape = self.shape();
        match self.pairs() {
            None => shape,
            Some((dims, at)) => std::iter::once(at.len() as u64)
                .chain(shape.iter().enumerate().filter(|(d, _)| !dims.contains(d)).map(|(_, &n)| n))
                .collect(),
        }
    }

    /// Reads every needed cell: a single read that is exactly the need is given as read
    /// (no copy); otherwise the output is reserved, then each read copied in as it arrives.
    pub async fn gather(&self, array: &ArrayReader) -> Result<Gathered, ReadError> {
        let item = array.meta.data_type.size();
        let shape = self.gathered_shape();
        if self.len() == 1 && self.pairs().is_none() && self.selection(0).iter().zip(&shape).all(|(s, &n)| s.count == n)
        {
            let whole = array.read_whole(self.selection(0)).await?;
            let mut object_versions = whole.object_versions;
            object_versions.dedup();
            return Ok(Gathered { data: whole.data, object_versions, reservation: whole.reservation });
        }
        let n: u64 = shape.iter().product();
        let reservation = array.budget.reserve(n * item as u64).await?;
        let mut out = vec![0u8; n as usize * item];
        let by_read = self.pairs_by_read();
        let mut object_versions = Vec::new();
        let mut reads = futures::stream::iter(0..self.len())
            .map(|b| async move { array.read_whole(self.selection(b)).await.map(|w| (b, w)) })
            .buffer_unordered(FAN_OUT);
        while let Some((b, whole)) = reads.try_next().await? {
            match &by_read {
                None => self.place(b, &whole.data, &mut out, item),
                Some(pairs) => self.place_pairs(b, &pairs[b], &whole.data, &mut out, item),
            }
            object_versions.extend(whole.object_versions);
        }
        object_versions.sort_unstable();
        object_versions.dedup();
        Ok(Gathered { data: out.into(), object_versions, reservation })
    }

    /// Copies read `b`'s needed cells into `out` (C order over the needed positions).
    pub(super) fn place(&self, b: usize, data: &[u8], out: &mut [u8], item: usize) {
        let rank = self.shape().len();
        let (read_strides, out_strides) = (strides(&counts(self, b)), strides(&self.shape()));
        let dims: Vec<(Vec<usize>, Vec<usize>)> = (0..rank)
            .map(|d| {
                let outs = self.positions(b, d).map(|p| p as usize * out_strides[d]).collect();
                let ins = self.offsets(b, d).into_iter().map(|o| o as usize * read_strides[d]).collect();
                (outs, ins)
            })
            .collect();
        copy_product(data, out, item, &dims, 0, 0);
    }

    /// Copies read `b`'s cells of `pairs` (indices among the plan's pairs) into `out`.
    pub(super) fn place_pairs(&self, b: usize, pairs: &[usize], data: &[u8], out: &mut [u8], item: usize) {
        let Some(([da, db], at)) = self.pairs() else { return };
        let shape = self.shape();
        let read_strides = strides(&counts(self, b));
        let others: Vec<usize> = (0..shape.len()).filter(|d| *d != da && *d != db).collect();
        let other_shape: Vec<u64> = others.iter().map(|&d| shape[d]).collect();
        let out_strides = strides(&other_shape);
        let per_pair: usize = other_shape.iter().product::<u64>() as usize;
        let dims: Vec<(Vec<usize>, Vec<usize>)> = others
            .iter()
            .zip(&out_strides)
            .map(|(&d, &os)| {
                let outs = self.positions(b, d).map(|p| p as usize * os).collect();
                let ins = self.offsets(b, d).into_iter().map(|o| o as usize * read_strides[d]).collect();
                (outs, ins)
            })
            .collect();
        // Each held position's offset along the pair dimensions, once per read.
        let along = |d: usize| (self.positions(b, d).start, self.offsets(b, d));
        let ((a0, oa), (b0, ob)) = (along(da), along(db));
        for &k in pairs {
            let (i, j) = at[k];
            let base_in =
                oa[(i - a0) as usize] as usize * read_strides[da] + ob[(j - b0) as usize] as usize * read_strides[db];
            copy_product(data, out, item, &dims, k * per_pair, base_in);
        }
    }
}

/// Read `b`'s extent along every dimension.
fn counts(plan: &Plan, b: usize) -> Vec<u64> {
    plan.selection(b).iter().map(|s| s.count).collect()
}

/// C-order strides (in elements) of `shape`.
fn strides(shape: &[u64]) -> Vec<usize> {
    let mut out = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        out[d] = out[d + 1] * shape[d + 1] as usize;
    }
    out
}

/// Copies every combination of `dims` (per dimension: each cell's output and input element
/// offsets) from `data` to `out`, after `base_out` and `base_in`; a run contiguous on both
/// sides along the last dimension is copied at once.
fn copy_product(
    data: &[u8],
    out: &mut [u8],
    item: usize,
    dims: &[(Vec<usize>, Vec<usize>)],
    base_out: usize,
    base_in: usize,
) {
    let Some(((last_out, last_in), outer)) = dims.split_last() else {
        out[base_out * item..(base_out + 1) * item].copy_from_slice(&data[base_in * item..(base_in + 1) * item]);
        return;
    };
    if outer.iter().any(|(o, _)| o.is_empty()) || last_out.is_empty() {
        return;
    }
    let contiguous = |v: &[usize]| v.windows(2).all(|w| w[1] == w[0] + 1);
    let run = contiguous(last_out) && contiguous(last_in);
    let mut index = vec![0usize; outer.len()];
    loop {
        let (mut o, mut i) = (base_out, base_in);
        for (k, (outs, ins)) in outer.iter().enumerate() {
            o += outs[index[k]];
            i += ins[index[k]];
        }
        if run {
            let (o, i, n) = ((o + last_out[0]) * item, (i + last_in[0]) * item, last_out.len() * item);
            out[o..o + n].copy_from_slice(&data[i..i + n]);
        } else {
            for (&lo, &li) in last_out.iter().zip(last_in) {
                let (o, i) = ((o + lo) * item, (i + li) * item);
                out[o..o + item].copy_from_slice(&data[i..i + item]);
            }
        }
        let mut k = outer.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < outer[k].0.len() {
                break;
            }
            index[k] = 0;
        }
    }
}
