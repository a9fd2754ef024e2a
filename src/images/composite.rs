//! Colour images of microscopy data (`docs/ome-zarr.md`, "Images, not just arrays" and
//! "Labels"): channels composited in their OME `omero` colours and windows, and label images
//! in their `image-label` colours.
//!
//! Composite: each active channel's value `v` becomes `t = clamp((v - start) / (end -
//! start), 0, 1)`; the pixel is the sum of `t × colour` over the channels, clipped to
//! 0..=255 and rounded half up; a channel without a value there (fill, NaN) adds nothing,
//! and the pixel is transparent only where no channel has a value. Labels: 0 (and "no
//! value") is transparent, a label listed in `colors` takes its RGBA, any other `v` the
//! categorical palette's entry `(v - 1) mod 10` (d3's category10, matplotlib's tab10).

use crate::images::render::{Plane, Window};

/// d3's `schemeCategory10`: distinct colours for label ids without one of their own.
pub const CATEGORY10: [[u8; 3]; 10] = [
    [0x1f, 0x77, 0xb4],
    [0xff, 0x7f, 0x0e],
    [0x2c, 0xa0, 0x2c],
    [0xd6, 0x27, 0x28],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xe3, 0x77, 0xc2],
    [0x7f, 0x7f, 0x7f],
    [0xbc, 0xbd, 0x22],
    [0x17, 0xbe, 0xcf],
];

/// Colours of channels without an `omero` colour, by channel count: white for one,
/// green and magenta for two, red, green and blue for three, then cycled.
pub fn default_color(index: usize, count: usize) -> [u8; 3] {
    const CYCLE: [[u8; 3]; 6] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [0, 255, 255], [255, 0, 255], [255, 255, 0]];
    match count {
        1 => [255, 255, 255],
        2 => [[0, 255, 0], [255, 0, 255]][index % 2],
        _ => CYCLE[index % CYCLE.len()],
    }
}

/// How one channel is drawn in a composite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelStyle {
    pub color: [u8; 3],
    pub window: Window,
}

/// The share of the window `v` reaches (0..=1); a window of zero width splits at its end.
fn share(window: Window, v: f64) -> f64 {
    if window.hi > window.lo {
        ((v - window.lo) / (window.hi - window.lo)).clamp(0.0, 1.0)
    } else if v >= window.hi {
        1.0
    } else {
        0.0
    }
}

/// RGBA pixels of `planes` (one per channel, all the same size) composited in `styles`.
pub fn composite(planes: &[Plane], styles: &[ChannelStyle]) -> Vec<u8> {
    let n = planes.first().map_or(0, |p| p.values.len());
    let mut sums = vec![[0.0f64; 3]; n];
    let mut valid = vec![false; n];
    for (plane, style) in planes.iter().zip(styles) {
        for (i, &v) in plane.values.iter().enumerate().take(n) {
            if v.is_nan() {
                continue;
            }
            valid[i] = true;
            let t = share(style.window, v);
            for (sum, &c) in sums[i].iter_mut().zip(&style.color) {
                *sum += t * f64::from(c);
            }
        }
    }
    let mut rgba = Vec::with_capacity(n * 4);
    for (sum, ok) in sums.iter().zip(valid) {
        rgba.extend(sum.iter().map(|&s| (s.clamp(0.0, 255.0) + 0.5).floor() as u8));
        rgba.push(if ok { 255 } else { 0 });
    }
    rgba
}

/// RGBA pixels of a label image.
pub fn labels(plane: &Plane, colors: &[(f64, [u8; 4])]) -> Vec<u8> {
    let mut rgba = Vec::with_capacity(plane.values.len() * 4);
    for &v in &plane.values {
        if v.is_nan() || v == 0.0 {
            rgba.extend([0; 4]);
        // Label ids are integers, read exactly into f64: equality is exact here.
        } else if let Some((_, c)) = colors.iter().find(|(label, _)| label.to_bits() == v.to_bits()) {
            rgba.extend(c);
        } else {
            let [r, g, b] = CATEGORY10[((v as i64) - 1).rem_euclid(10) as usize];
            rgba.extend([r, g, b, 255]);
        }
    }
    rgba
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_add_in_their_colours_and_clip() {
        let plane = |v: Vec<f64>| Plane { width: v.len(), height: 1, values: v };
        let blue = ChannelStyle { color: [0, 0, 255], window: Window { lo: 100.0, hi: 300.0 } };
        let cyan = ChannelStyle { color: [0, 255, 255], window: Window { lo: 0.0, hi: 10.0 } };
        let out = composite(
            &[plane(vec![200.0, 50.0, f64::NAN, f64::NAN]), plane(vec![5.0, 20.0, 2.5, f64::NAN])],
            &[blue, cyan],
        );
        // 0.5*255 = 127.5 rounds up; 127.5 + 127.5 = 255 blue; cyan alone clips at 255.
        assert_eq!(&out[..4], &[0, 128, 255, 255]);
        assert_eq!(&out[4..8], &[0, 255, 255, 255]);
        assert_eq!(&out[8..12], &[0, 64, 64, 255]);
        assert_eq!(&out[12..], &[0, 0, 0, 0], "no channel has a value: transparent");
    }

    #[test]
    fn labels_take_their_colours_else_the_palette() {
        let p = Plane { width: 5, height: 1, values: vec![0.0, 1.0, 2.0, 11.0, f64::NAN] };
        let out = labels(&p, &[(2.0, [1, 2, 3, 4])]);
        assert_eq!(&out[..4], &[0, 0, 0, 0]);
        assert_eq!(&out[4..8], &[0x1f, 0x77, 0xb4, 255]);
        assert_eq!(&out[8..12], &[1, 2, 3, 4]);
        assert_eq!(&out[12..16], &[0x1f, 0x77, 0xb4, 255], "11 wraps to the first colour");
        assert_eq!(&out[16..], &[0, 0, 0, 0]);
        assert_eq!(default_color(1, 2), [255, 0, 255]);
    }
}
