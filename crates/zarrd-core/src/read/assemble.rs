//! The assemble stage: decoded chunks into the output, in bands of output rows decoded in
//! parallel, every element written once, in contiguous runs — by its chunk, or with the
//! fill value for missing chunks and shards and empty inner chunks.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::read::cache::DecodedChunk;
use crate::read::decode::{DecodeJob, Fresh, Source, elements_of};
use crate::read::error::ReadError;
use crate::read::plan::Layout;
use crate::zarr::copy::{Region, copy_region, fill_region};
use crate::zarr::metadata::ArrayMetadata;

/// Results up to this size are assembled on the async task when no decoding is needed.
pub(super) const INLINE_COPY_MAX: usize = 4 << 20;

/// Writes one job's share of the output into `band`, which holds output rows
/// `band_start..` along the first dimension (the whole output for 0-d arrays).
pub(super) fn place(
    meta: &ArrayMetadata,
    layout: &Layout,
    band: &mut [u8],
    band_start: u64,
    job: &DecodeJob,
    chunk: Option<&DecodedChunk>,
) {
    let item = meta.data_type.size();
    let mut dst_shape = layout.shape.clone();
    let mut dst_start = job.part.out.clone();
    if let (Some(rows), Some(first)) = (dst_shape.first_mut(), dst_start.first_mut()) {
        *rows = (band.len() / item) as u64 / layout.shape[1..].iter().product::<u64>().max(1);
        *first -= band_start;
    }
    match chunk.and_then(|c| c.data.as_deref()) {
        Some(data) => {
            let unit;
            let src_step = if matches!(job.source, Source::Extracted(_)) {
                unit = vec![1; layout.steps.len()];
                &unit
            } else {
                &layout.steps
            };
            let region = Region {
                src_shape: &job.shape,
                src_start: &job.part.start,
                src_step,
                dst_shape: &dst_shape,
                dst_start: &dst_start,
                count: &job.part.count,
            };
            copy_region(data, band, &region, item);
        }
        // The buffer starts zeroed, so a zero fill value needs no writing.
        None if meta.fill_value.iter().all(|&b| b == 0) => {}
        None => fill_region(band, &dst_shape, &dst_start, &job.part.count, &meta.fill_value),
    }
}

/// Output rows `start..start + rows` along the first dimension, which no job crosses, and
/// the jobs that write them.
#[derive(Debug)]
pub(super) struct Band {
    pub(super) start: u64,
    pub(super) rows: u64,
    pub(super) members: Vec<usize>,
}

/// Everything needed to assemble the output: the jobs, cut into bands of rows in order
/// (one per chunk row along the first dimension; a missing shard's fill spans the rows of
/// several inner chunks of its neighbours, so bands merge where jobs overlap).
pub(super) struct Assembly {
    pub(super) meta: Arc<ArrayMetadata>,
    pub(super) layout: Layout,
    pub(super) jobs: Vec<DecodeJob>,
    pub(super) bands: Vec<Band>,
}

impl Assembly {
    pub(super) fn new(meta: Arc<ArrayMetadata>, layout: Layout, jobs: Vec<DecodeJob>) -> Self {
        let mut bands: Vec<Band> = Vec::new();
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&i| jobs[i].part.out.first().copied().unwrap_or(0));
        for i in order {
            let start = jobs[i].part.out.first().copied().unwrap_or(0);
            let end = start + jobs[i].part.count.first().copied().unwrap_or(1);
            match bands.last_mut() {
                Some(band) if start < band.start + band.rows => {
                    band.rows = band.rows.max(end - band.start);
                    band.members.push(i);
                }
                _ => bands.push(Band { start, rows: end - start, members: vec![i] }),
            }
        }
        Self { meta, layout, jobs, bands }
    }

    /// Bytes of one output row (the whole output for 0-d arrays).
    pub(super) fn row_bytes(&self) -> usize {
        self.layout.shape.iter().skip(1).product::<u64>() as usize * self.meta.data_type.size()
    }

    pub(super) fn band_bytes(&self, band: &Band) -> usize {
        if self.layout.shape.is_empty() { self.row_bytes() } else { band.rows as usize * self.row_bytes() }
    }

    pub(super) fn all_decoded(&self) -> bool {
        self.jobs.iter().all(|j| !matches!(j.source, Source::Encoded { .. }))
    }

    /// Decodes and places every member of `band` into `buf` (the band's rows). Members
    /// are decoded in parallel groups of one per core, so at most that many decoded
    /// chunks are alive per band.
    pub(super) fn fill_band(&self, band: &Band, buf: &mut [u8]) -> Result<Fresh, ReadError> {
        let group = rayon::current_num_threads().max(1);
        let mut fresh = Vec::new();
        for members in band.members.chunks(group) {
            let encoded = members.iter().filter(|&&i| matches!(self.jobs[i].source, Source::Encoded { .. })).count();
            if encoded <= 1 {
                for &i in members {
                    self.fill_one(band, buf, i, &mut fresh)?;
                }
                continue;
            }
            let decoded: Vec<Option<Arc<DecodedChunk>>> =
                members.par_iter().map(|&i| elements_of(&self.meta, &self.jobs[i])).collect::<Result<_, _>>()?;
            for (&i, chunk) in members.iter().zip(decoded) {
                self.place_decoded(band, buf, i, chunk, &mut fresh);
            }
        }
        Ok(fresh)
    }

    /// Writes job `i` into `buf` (the rows of `band`): a chunk nobody caches whose
    /// elements are one contiguous run of the band (a whole chunk spanning full output
    /// rows, such as a tile) is decoded straight into place; anything else is decoded on
    /// its own, then copied.
    pub(super) fn fill_one(&self, band: &Band, buf: &mut [u8], i: usize, fresh: &mut Fresh) -> Result<(), ReadError> {
        let job = &self.jobs[i];
        if let Source::Encoded { bytes, chain, cache_key: None, .. } = &job.source
            && let Some(run) = self.contiguous_run(band, job)
            && let Some(out) = buf.get_mut(run)
        {
            return chain
                .decode_into(bytes, &job.shape, self.meta.data_type, &self.meta.fill_value, out)
                .map_err(|source| ReadError::Corrupt { key: job.key.to_string(), source });
        }
        let chunk = elements_of(&self.meta, job)?;
        self.place_decoded(band, buf, i, chunk, fresh);
        Ok(())
    }

    pub(super) fn place_decoded(
        &self,
        band: &Band,
        buf: &mut [u8],
        i: usize,
        chunk: Option<Arc<DecodedChunk>>,
        fresh: &mut Fresh,
    ) {
        let job = &self.jobs[i];
        place(&self.meta, &self.layout, buf, band.start, job, chunk.as_deref());
        if let (Source::Encoded { cache_key: Some(key), .. }, Some(chunk)) = (&job.source, chunk) {
            fresh.push((chunk, key.clone()));
        }
    }

    /// The bytes of `band`'s buffer that job `j` fills, when they are one contiguous run
    /// holding the whole chunk in its own order: the job takes every element of its chunk
    /// (step 1), and its chunk spans whole output rows (every dimension but the first is
    /// taken in full by both).
    pub(super) fn contiguous_run(&self, band: &Band, job: &DecodeJob) -> Option<Range<usize>> {
        let part = &job.part;
        let whole_chunk = job.shape.len() == part.count.len()
            && part.start.iter().all(|&s| s == 0)
            && part.count == job.shape
            && self.layout.steps.iter().all(|&s| s == 1);
        let full_rows = self.layout.shape.iter().zip(&part.count).skip(1).all(|(out, count)| out == count);
        if !(whole_chunk && full_rows) {
            return None;
        }
        let Some((&first, &rows)) = part.out.first().zip(part.count.first()) else {
            return Some(0..self.row_bytes()); // a 0-d array: one element
        };
        let start = usize::try_from(first.checked_sub(band.start)?).ok()?.checked_mul(self.row_bytes())?;
        Some(start..start + rows as usize * self.row_bytes())
    }

    /// Whether the output is exactly the one stored chunk of the only job, in the chunk's
    /// own order: then the chunk's decoded bytes are the output, sent as they are (no
    /// output buffer to zero, no copy).
    pub(super) fn is_single_chunk(&self) -> bool {
        let ([job], Some(band)) = (self.jobs.as_slice(), self.bands.first()) else { return false };
        job.part.count == self.layout.shape
            && !matches!(job.source, Source::Fill)
            && self.contiguous_run(band, job).is_some_and(|run| run.start == 0)
    }

    /// Assembles the whole output after `header_room` bytes of `data`, every element
    /// written once: the bands in parallel when `parallel` (so no pass over a large buffer
    /// is serial), else one after another on the calling thread — for a small output from
    /// decoded chunks, where waking the pool and waiting for it (a parallel iterator started
    /// outside the pool blocks its caller) costs more than the copies: a point's series from
    /// four cached chunks took 0.15 ms that way, most of it the pool's wake-up.
    pub(super) fn whole(
        &self,
        mut data: Vec<u8>,
        header_room: usize,
        parallel: bool,
    ) -> Result<(Vec<u8>, Fresh), ReadError> {
        let row_bytes = self.row_bytes();
        let mut slices: Vec<(&Band, &mut [u8])> = Vec::with_capacity(self.bands.len());
        let mut rest = &mut data[header_room..];
        let mut at = 0u64;
        for band in &self.bands {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(((band.start - at) as usize) * row_bytes);
            let (buf, tail) = tail.split_at_mut(self.band_bytes(band).min(tail.len()));
            slices.push((band, buf));
            rest = tail;
            at = band.start + band.rows;
        }
        if !parallel || slices.len() == 1 {
            let mut fresh = Vec::new();
            for (band, buf) in slices {
                fresh.extend(self.fill_band(band, buf)?);
            }
            return Ok((data, fresh));
        }
        let fresh: Vec<Fresh> =
            slices.into_par_iter().map(|(band, buf)| self.fill_band(band, buf)).collect::<Result<_, ReadError>>()?;
        Ok((data, fresh.into_iter().flatten().collect()))
    }
}
