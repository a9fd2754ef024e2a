//! Strided copies between C-order n-dimensional byte buffers.
//!
//! This is the one routine that moves decoded elements around: assembling a selection
//! from chunks, placing inner chunks into a shard, and undoing `transpose`. Trailing
//! dimensions that are contiguous in both buffers are merged so that the inner loop is
//! one `memcpy` per run, as long as possible.

/// A hyper-rectangle to copy: `count[d]` elements along every dimension `d`, read from
/// `src_start[d] + i * src_step[d]` and written to `dst_start[d] + i`.
#[derive(Debug, Clone)]
pub struct Region<'a> {
    pub src_shape: &'a [u64],
    pub src_start: &'a [u64],
    pub src_step: &'a [u64],
    pub dst_shape: &'a [u64],
    pub dst_start: &'a [u64],
    pub count: &'a [u64],
}

/// C-order strides, in elements.
pub fn strides(shape: &[u64]) -> Vec<usize> {
    let mut out = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        out[d] = out[d + 1] * shape[d + 1] as usize;
    }
    out
}

/// Copies `region` from `src` to `dst`, elements of `item` bytes. The caller guarantees
/// the region lies inside both shapes (checked in debug builds).
pub fn copy_region(src: &[u8], dst: &mut [u8], region: &Region<'_>, item: usize) {
    let rank = region.count.len();
    if region.count.contains(&0) {
        return;
    }
    for d in 0..rank {
        debug_assert!(region.src_start[d] + (region.count[d] - 1) * region.src_step[d] < region.src_shape[d].max(1));
        debug_assert!(region.dst_start[d] + region.count[d] <= region.dst_shape[d]);
    }
    let src_strides = strides(region.src_shape);
    let dst_strides = strides(region.dst_shape);
    let src_base: usize = (0..rank).map(|d| region.src_start[d] as usize * src_strides[d]).sum();
    let dst_base: usize = (0..rank).map(|d| region.dst_start[d] as usize * dst_strides[d]).sum();
    // The dimensions as (count, source stride, destination stride) in elements, outermost
    // first: one taken once only moves the bases, and one that continues its outer
    // neighbour on both sides merges with it — so a tile is one contiguous run, and a
    // point's series through a block one strided run instead of a loop of one-element rows.
    let mut dims: Vec<(usize, usize, usize)> = Vec::with_capacity(rank);
    for d in 0..rank {
        let count = region.count[d] as usize;
        if count == 1 {
            continue;
        }
        let (s, t) = (region.src_step[d] as usize * src_strides[d], dst_strides[d]);
        match dims.last_mut() {
            Some(outer) if outer.1 == count * s && outer.2 == count * t => *outer = (outer.0 * count, s, t),
            _ => dims.push((count, s, t)),
        }
    }
    let (run, s_in, t_in) = dims.pop().unwrap_or((1, 1, 1));
    let mut index = vec![0usize; dims.len()];
    loop {
        let mut s = src_base;
        let mut t = dst_base;
        for (&i, &(_, s_out, t_out)) in index.iter().zip(&dims) {
            s += i * s_out;
            t += i * t_out;
        }
        if s_in == 1 && t_in == 1 {
            dst[t * item..(t + run) * item].copy_from_slice(&src[s * item..(s + run) * item]);
        } else {
            let strided = Strided { src: s, dst: t, run, src_step: s_in, dst_step: t_in };
            match item {
                1 => strided.copy::<1>(src, dst),
                2 => strided.copy::<2>(src, dst),
                4 => strided.copy::<4>(src, dst),
                8 => strided.copy::<8>(src, dst),
                16 => strided.copy::<16>(src, dst),
                _ => strided.copy_items(src, dst, item),
            }
        }
        // Odometer over the outer dimensions.
        let mut d = dims.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < dims[d].0 {
                break;
            }
            index[d] = 0;
        }
    }
}

/// `run` elements from element `src` of the source, every `src_step`, to element `dst` of
/// the destination, every `dst_step`.
struct Strided {
    src: usize,
    dst: usize,
    run: usize,
    src_step: usize,
    dst_step: usize,
}

impl Strided {
    /// Elements of a size known when compiling: each copy is a move, not a `memcpy` call.
    /// Both sides are first cut to the span the run covers, so a run reaching past either
    /// end panics there, as any slice index does (never stopping short); inside, an element
    /// costs a move and the one bounds check the compiler cannot drop for a stepped index
    /// (~8 instructions; a point's series through cached chunks is a run of 1,096 of them,
    /// which took 17 each through zipped `step_by` iterators).
    fn copy<const N: usize>(&self, src: &[u8], dst: &mut [u8]) {
        let Some(last) = self.run.checked_sub(1) else {
            return;
        };
        let (from, _) = src.as_chunks::<N>();
        let (to, _) = dst.as_chunks_mut::<N>();
        let from = &from[self.src..=self.src + last * self.src_step];
        let to = &mut to[self.dst..=self.dst + last * self.dst_step];
        if self.dst_step == 1 {
            let mut s = 0;
            for t in to {
                *t = from[s];
                s += self.src_step;
            }
        } else {
            let (mut s, mut t) = (0, 0);
            for _ in 0..self.run {
                to[t] = from[s];
                s += self.src_step;
                t += self.dst_step;
            }
        }
    }

    fn copy_items(&self, src: &[u8], dst: &mut [u8], item: usize) {
        for i in 0..self.run {
            let (s, t) = ((self.src + i * self.src_step) * item, (self.dst + i * self.dst_step) * item);
            dst[t..t + item].copy_from_slice(&src[s..s + item]);
        }
    }
}

/// Sets `count[d]` elements from `dst_start[d]` on along every dimension to `fill`.
pub fn fill_region(dst: &mut [u8], dst_shape: &[u64], dst_start: &[u64], count: &[u64], fill: &[u8]) {
    let rank = count.len();
    if rank == 0 {
        dst[..fill.len()].copy_from_slice(fill);
        return;
    }
    // One row of fill, read again for every row of the region (source step 0).
    let row = fill.repeat(count[rank - 1] as usize);
    let mut src_shape = vec![1; rank];
    src_shape[rank - 1] = count[rank - 1];
    let mut src_step = vec![0; rank];
    src_step[rank - 1] = 1;
    let zeros = vec![0; rank];
    let region = Region { src_shape: &src_shape, src_start: &zeros, src_step: &src_step, dst_shape, dst_start, count };
    copy_region(&row, dst, &region, fill.len());
}

/// `n` elements all equal to `fill`.
pub fn filled(n: usize, fill: &[u8]) -> Vec<u8> {
    if fill.iter().all(|&b| b == 0) {
        // Zeroed memory comes straight from the allocator.
        return vec![0; n * fill.len()];
    }
    fill.repeat(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iota(n: u8) -> Vec<u8> {
        (0..n).collect()
    }

    #[test]
    fn copies_a_strided_block() {
        // src 4x5, take rows 1..4 step 2 and columns 0..5 step 2 into a 3x4 dst at (1, 1).
        let src = iota(20);
        let mut dst = vec![255u8; 12];
        let region = Region {
            src_shape: &[4, 5],
            src_start: &[1, 0],
            src_step: &[2, 2],
            dst_shape: &[3, 4],
            dst_start: &[1, 1],
            count: &[2, 3],
        };
        copy_region(&src, &mut dst, &region, 1);
        assert_eq!(dst, [255, 255, 255, 255, 255, 5, 7, 9, 255, 15, 17, 19]);
    }

    #[test]
    fn merges_contiguous_rows_and_handles_wide_items() {
        let src: Vec<u8> = (0..24u16).flat_map(u16::to_le_bytes).collect();
        let mut dst = vec![0u8; 48];
        let all = Region {
            src_shape: &[2, 3, 4],
            src_start: &[0; 3],
            src_step: &[1; 3],
            dst_shape: &[2, 3, 4],
            dst_start: &[0; 3],
            count: &[2, 3, 4],
        };
        copy_region(&src, &mut dst, &all, 2);
        assert_eq!(dst, src);
        let mut one = vec![0u8; 2];
        let pick = Region {
            src_shape: &[2, 3, 4],
            src_start: &[1, 2, 3],
            src_step: &[1; 3],
            dst_shape: &[1, 1, 1],
            dst_start: &[0; 3],
            count: &[1, 1, 1],
        };
        copy_region(&src, &mut one, &pick, 2);
        assert_eq!(u16::from_le_bytes([one[0], one[1]]), 23);
    }

    #[test]
    fn a_column_through_a_block_and_odd_item_sizes() {
        // src 3x2x2 of u32: the column (0..3, 1, 0), a point's series, into a 3x1x1 dst.
        let src: Vec<u8> = (0..12u32).flat_map(u32::to_le_bytes).collect();
        let mut dst = vec![0u8; 12];
        let column = Region {
            src_shape: &[3, 2, 2],
            src_start: &[0, 1, 0],
            src_step: &[1; 3],
            dst_shape: &[3, 1, 1],
            dst_start: &[0; 3],
            count: &[3, 1, 1],
        };
        copy_region(&src, &mut dst, &column, 4);
        let got: Vec<u32> = dst.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(got, [2, 6, 10]);
        // 3-byte items (no fixed-size path), every other one, into the middle of a row.
        let src = iota(18);
        let mut dst = vec![0u8; 12];
        let odd =
            Region { src_shape: &[6], src_start: &[1], src_step: &[2], dst_shape: &[4], dst_start: &[1], count: &[3] };
        copy_region(&src, &mut dst, &odd, 3);
        assert_eq!(dst, [0, 0, 0, 3, 4, 5, 9, 10, 11, 15, 16, 17]);
        // Rows taken whole but placed into wider rows: not one run.
        let src = iota(6);
        let mut dst = vec![0u8; 8];
        let rows = Region {
            src_shape: &[2, 3],
            src_start: &[0, 0],
            src_step: &[1, 1],
            dst_shape: &[2, 4],
            dst_start: &[0, 1],
            count: &[2, 3],
        };
        copy_region(&src, &mut dst, &rows, 1);
        assert_eq!(dst, [0, 0, 1, 2, 0, 3, 4, 5]);
    }

    #[test]
    fn strided_runs_of_every_item_size_land_where_the_indices_say() {
        // A 2-D source read with steps (2, 3) into the middle of a larger destination, for
        // every fixed-size path and one without, as a block (the destination's run is
        // contiguous) and as one column (stepped on both sides); expected element by
        // element from the indices alone.
        for (item, count) in [1usize, 2, 4, 8, 16, 3].into_iter().flat_map(|i| [(i, [3u64, 13]), (i, [3, 1])]) {
            let (rows, cols) = (7u64, 40u64);
            let src: Vec<u8> = (0..rows * cols * item as u64).map(|i| (i % 251) as u8).collect();
            let (start, step) = ([1u64, 2], [2u64, 3]);
            let (dst_shape, dst_start) = ([5u64, 20], [1u64, 4]);
            let mut dst = vec![0u8; (dst_shape[0] * dst_shape[1]) as usize * item];
            let region = Region {
                src_shape: &[rows, cols],
                src_start: &start,
                src_step: &step,
                dst_shape: &dst_shape,
                dst_start: &dst_start,
                count: &count,
            };
            copy_region(&src, &mut dst, &region, item);
            let mut expected = vec![0u8; dst.len()];
            for i in 0..count[0] {
                for j in 0..count[1] {
                    let s = ((start[0] + i * step[0]) * cols + start[1] + j * step[1]) as usize * item;
                    let t = ((dst_start[0] + i) * dst_shape[1] + dst_start[1] + j) as usize * item;
                    expected[t..t + item].copy_from_slice(&src[s..s + item]);
                }
            }
            assert_eq!(dst, expected, "{item}-byte items, counts {count:?}");
        }
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_run_past_the_source_panics_rather_than_stopping_short() {
        let strided = Strided { src: 0, dst: 0, run: 4, src_step: 3, dst_step: 1 };
        let mut dst = vec![0u8; 16];
        strided.copy::<4>(&[0u8; 36], &mut dst);
    }

    #[test]
    fn fills_a_region() {
        let mut small = vec![0u8; 12];
        fill_region(&mut small, &[3, 2, 2], &[1, 0, 1], &[2, 2, 1], &[9]);
        assert_eq!(small, [0, 0, 0, 0, 0, 9, 0, 9, 0, 9, 0, 9]);
        let mut wide = vec![0u8; 8];
        fill_region(&mut wide, &[2, 2], &[0, 1], &[2, 1], &[1, 2]);
        assert_eq!(wide, [0, 0, 1, 2, 0, 0, 1, 2]);
    }

    #[test]
    fn scalar_and_empty() {
        let mut dst = vec![0u8; 4];
        let r = Region { src_shape: &[], src_start: &[], src_step: &[], dst_shape: &[], dst_start: &[], count: &[] };
        copy_region(&[1, 2, 3, 4], &mut dst, &r, 4);
        assert_eq!(dst, [1, 2, 3, 4]);
        let mut untouched = vec![9u8; 2];
        let empty =
            Region { src_shape: &[2], src_start: &[0], src_step: &[1], dst_shape: &[2], dst_start: &[0], count: &[0] };
        copy_region(&[1, 2], &mut untouched, &empty, 1);
        assert_eq!(untouched, [9, 9]);
    }
}
