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
    if rank == 0 {
        dst[..item].copy_from_slice(&src[..item]);
        return;
    }
    for d in 0..rank {
        debug_assert!(region.src_start[d] + (region.count[d] - 1) * region.src_step[d] < region.src_shape[d].max(1));
        debug_assert!(region.dst_start[d] + region.count[d] <= region.dst_shape[d]);
    }
    let src_strides = strides(region.src_shape);
    let dst_strides = strides(region.dst_shape);
    // Merge trailing dimensions while each is copied whole and contiguous on both sides.
    let mut inner = rank - 1;
    let mut run = region.count[inner] as usize;
    let contiguous_last = region.src_step[inner] == 1;
    if contiguous_last {
        while inner > 0
            && region.count[inner] == region.src_shape[inner]
            && region.count[inner] == region.dst_shape[inner]
            && region.src_step[inner] == 1
            && region.src_step[inner - 1] == 1
        {
            inner -= 1;
            run *= region.count[inner] as usize;
        }
    }
    let outer = &region.count[..inner];
    let src_base: usize = (0..rank).map(|d| region.src_start[d] as usize * src_strides[d]).sum();
    let dst_base: usize = (0..rank).map(|d| region.dst_start[d] as usize * dst_strides[d]).sum();
    let src_inner_step = region.src_step[rank - 1] as usize * src_strides[rank - 1];
    let mut index = vec![0u64; inner];
    loop {
        let mut s = src_base;
        let mut t = dst_base;
        for d in 0..inner {
            s += index[d] as usize * region.src_step[d] as usize * src_strides[d];
            t += index[d] as usize * dst_strides[d];
        }
        if contiguous_last {
            dst[t * item..(t + run) * item].copy_from_slice(&src[s * item..(s + run) * item]);
        } else {
            for i in 0..run {
                let from = (s + i * src_inner_step) * item;
                dst[(t + i) * item..(t + i + 1) * item].copy_from_slice(&src[from..from + item]);
            }
        }
        // Odometer over the outer dimensions.
        let mut d = inner;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < outer[d] {
                break;
            }
            index[d] = 0;
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
