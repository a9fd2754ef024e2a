//! From decoded elements to image bytes: area-averaged reduction by powers of two,
//! nearest-neighbour resampling to other sizes, rotation and mirroring, the value window,
//! colormaps and the PNG / JPEG encoders.
//!
//! Values travel as `f64` with NaN for "no value" (a fill value, NaN itself, or a block
//! with no valid element), so every stage treats missing data the same way and PNG shows
//! it transparent.

use crate::error::{Error, Result};
use zarrd_core::zarr::data_type::{DataType, element_f64};

use crate::images::iiif::grammar::{ImageFormat, Quality, Rotation};

/// A 2-D raster of values, row-major; NaN is "no value".
#[derive(Debug, Clone, PartialEq)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub values: Vec<f64>,
}

/// Averages the valid values of each `factor` × `factor` block of a source region, fed a
/// band of rows at a time so the whole region never has to be in memory.
pub struct Reducer {
    factor: u64,
    width: usize,
    height: usize,
    sums: Vec<f64>,
    counts: Vec<u64>,
    /// Keep each block's first valid value instead of the mean (labels: ids are not averaged).
    first: bool,
}

impl Reducer {
    /// A reducer of a `src_width` × `src_height` region into blocks of `factor` (a power
    /// of two); partial blocks at the right and bottom edges average what they hold.
    pub fn new(factor: u64, src_width: u64, src_height: u64) -> Self {
        let width = src_width.div_ceil(factor) as usize;
        let height = src_height.div_ceil(factor) as usize;
        Self { factor, width, height, sums: vec![0.0; width * height], counts: vec![0; width * height], first: false }
    }

    /// Like [`Self::new`], keeping each block's first valid value (in row order) instead
    /// of the mean: for label images, whose ids must not be averaged.
    pub fn nearest(factor: u64, src_width: u64, src_height: u64) -> Self {
        Self { first: true, ..Self::new(factor, src_width, src_height) }
    }

    /// Bytes this reducer holds, for the memory budget.
    pub fn bytes(factor: u64, src_width: u64, src_height: u64) -> u64 {
        src_width.div_ceil(factor) * src_height.div_ceil(factor) * 16
    }

    /// Adds `data` (little-endian elements, `width` per row) holding source rows
    /// `first_row..`; elements equal to `fill` and NaN are skipped.
    pub fn add_rows(&mut self, first_row: u64, data: &[u8], width: u64, data_type: DataType, fill: &[u8]) {
        let item = data_type.size();
        let row_bytes = width as usize * item;
        if row_bytes == 0 {
            return;
        }
        for (r, row) in data.chunks_exact(row_bytes).enumerate() {
            let out_row = ((first_row + r as u64) / self.factor) as usize;
            if out_row >= self.height {
                break;
            }
            let base = out_row * self.width;
            for (c, element) in row.chunks_exact(item).enumerate() {
                if element == fill {
                    continue;
                }
                let Some(v) = element_f64(element, data_type).filter(|v| !v.is_nan()) else { continue };
                let at = base + (c as u64 / self.factor) as usize;
                if self.first && self.counts[at] > 0 {
                    continue;
                }
                self.sums[at] += v;
                self.counts[at] += 1;
            }
        }
    }

    pub fn finish(self) -> Plane {
        let values =
            self.sums.iter().zip(&self.counts).map(|(&s, &n)| if n == 0 { f64::NAN } else { s / n as f64 }).collect();
        Plane { width: self.width, height: self.height, values }
    }
}

impl Plane {
    /// The plane resampled to `width` × `height` by nearest neighbour: each output pixel
    /// takes the value under its centre.
    #[must_use]
    pub fn resample(self, width: usize, height: usize) -> Self {
        if width == self.width && height == self.height {
            return self;
        }
        let pick =
            |i: usize, out: usize, src: usize| (((i as f64 + 0.5) * src as f64 / out as f64) as usize).min(src - 1);
        let cols: Vec<usize> = (0..width).map(|i| pick(i, width, self.width)).collect();
        let mut values = Vec::with_capacity(width * height);
        for r in 0..height {
            let row = pick(r, height, self.height) * self.width;
            values.extend(cols.iter().map(|&c| self.values[row + c]));
        }
        Self { width, height, values }
    }

    /// Mirrored (left-right) if asked, then turned clockwise by quarter turns.
    #[must_use]
    pub fn orient(self, rotation: Rotation) -> Self {
        let (w, h) = (self.width, self.height);
        let at = |x: usize, y: usize| {
            let x = if rotation.mirror { w - 1 - x } else { x };
            self.values[y * w + x]
        };
        let (width, height) = if rotation.quarter_turns % 2 == 1 { (h, w) } else { (w, h) };
        if !rotation.mirror && rotation.quarter_turns == 0 {
            return self;
        }
        let mut values = Vec::with_capacity(w * h);
        for y in 0..height {
            for x in 0..width {
                // (x, y) in the output comes from the source pixel that the turn moved here.
                values.push(match rotation.quarter_turns {
                    1 => at(y, h - 1 - x),
                    2 => at(w - 1 - x, h - 1 - y),
                    3 => at(w - 1 - y, x),
                    _ => at(x, y),
                });
            }
        }
        Self { width, height, values }
    }
}

/// Values map linearly from `lo..=hi` onto 0..=255.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub lo: f64,
    pub hi: f64,
}

impl Window {
    /// The 8-bit level of `v` (clamped); a window of zero width splits at `hi`. Also the
    /// rule of `/v1/slice?format=png`, so a tile and a slice of the same data agree.
    /// Multiplying before dividing keeps levels exact where the ratio is (a value halfway
    /// between two levels rounds up, as `NumPy` computes it).
    pub fn level(&self, v: f64) -> u8 {
        if self.hi > self.lo {
            ((v - self.lo) * 255.0 / (self.hi - self.lo)).round().clamp(0.0, 255.0) as u8
        } else if v >= self.hi {
            255
        } else {
            0
        }
    }
}

/// The colormaps of `colormap=`, from the `colorous` crate (d3-scale-chromatic's tables;
/// viridis, magma, inferno, plasma and cividis are matplotlib's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Colormap {
    Viridis,
    Magma,
    Inferno,
    Plasma,
    Cividis,
    Turbo,
    Gray,
}

impl Colormap {
    pub const ALL: [Self; 7] =
        [Self::Viridis, Self::Magma, Self::Inferno, Self::Plasma, Self::Cividis, Self::Turbo, Self::Gray];

    pub fn name(self) -> &'static str {
        match self {
            Self::Viridis => "viridis",
            Self::Magma => "magma",
            Self::Inferno => "inferno",
            Self::Plasma => "plasma",
            Self::Cividis => "cividis",
            Self::Turbo => "turbo",
            Self::Gray => "gray",
        }
    }

    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|c| c.name()).collect();
            Error::BadRequest(format!("unknown colormap `{name}`; allowed: {}", names.join(", ")))
        })
    }

    /// The colour of 8-bit level `level`: entry `level` of a 256-entry table spanning the
    /// whole colormap.
    pub fn rgb(self, level: u8) -> [u8; 3] {
        let gradient = match self {
            Self::Gray => return [level; 3],
            Self::Viridis => colorous::VIRIDIS,
            Self::Magma => colorous::MAGMA,
            Self::Inferno => colorous::INFERNO,
            Self::Plasma => colorous::PLASMA,
            Self::Cividis => colorous::CIVIDIS,
            Self::Turbo => colorous::TURBO,
        };
        let c = gradient.eval_rational(usize::from(level), 256);
        [c.r, c.g, c.b]
    }

    pub fn table(self) -> Vec<[u8; 3]> {
        (0..=255u8).map(|l| self.rgb(l)).collect()
    }
}

/// How a rendered image looks: the window, the quality and the colormap of `default` and
/// `color`.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub window: Window,
    pub quality: Quality,
    pub colormap: Colormap,
}

/// Encodes `plane` as `format`. PNG: gray + alpha (`gray`, `bitonal`) or RGBA (`default`,
/// `color`), with pixels without a value fully transparent; JPEG has no alpha, so they are
/// black there.
pub fn encode(plane: &Plane, style: &Style, format: ImageFormat) -> Result<Vec<u8>> {
    let color = matches!(style.quality, Quality::Default | Quality::Color);
    let table = if color { style.colormap.table() } else { Vec::new() };
    let level = |v: f64| {
        let l = style.window.level(v);
        if style.quality == Quality::Bitonal { if l >= 128 { 255 } else { 0 } } else { l }
    };
    let alpha = format == ImageFormat::Png;
    let channels = usize::from(color) * 2 + 1 + usize::from(alpha);
    let mut pixels = Vec::with_capacity(plane.values.len() * channels);
    for &v in &plane.values {
        let valid = !v.is_nan();
        let l = if valid { level(v) } else { 0 };
        if color {
            pixels.extend_from_slice(&if valid { table[usize::from(l)] } else { [0; 3] });
        } else {
            pixels.push(l);
        }
        if alpha {
            pixels.push(if valid { 255 } else { 0 });
        }
    }
    match format {
        ImageFormat::Png => png_image(&pixels, plane.width as u32, plane.height as u32, color),
        ImageFormat::Jpg => {
            let (Ok(w), Ok(h)) = (u16::try_from(plane.width), u16::try_from(plane.height)) else {
                return Err(Error::BadRequest(format!(
                    "jpg images are at most 65535 pixels on a side, this one would be {} x {}; use png or a smaller size",
                    plane.width, plane.height
                )));
            };
            let mut out = Vec::new();
            let encoder = jpeg_encoder::Encoder::new(&mut out, 90);
            let kind = if color { jpeg_encoder::ColorType::Rgb } else { jpeg_encoder::ColorType::Luma };
            encoder.encode(&pixels, w, h, kind).map_err(|e| Error::internal_from("jpeg", e))?;
            Ok(out)
        }
    }
}

/// Encodes RGBA pixels (composites, labels) as `format`: `default`/`color` as RGBA PNG or
/// RGB JPEG; `gray` and `bitonal` through the luma of ITU-R BT.601 (`0.299 R + 0.587 G +
/// 0.114 B`, rounded; bitonal splits at 128), gray + alpha in PNG.
pub fn encode_rgba(rgba: &[u8], width: usize, height: usize, quality: Quality, format: ImageFormat) -> Result<Vec<u8>> {
    let color = matches!(quality, Quality::Default | Quality::Color);
    let alpha = format == ImageFormat::Png;
    let mut pixels = Vec::with_capacity(rgba.len());
    for p in rgba.chunks_exact(4) {
        if color {
            pixels.extend_from_slice(&p[..3]);
        } else {
            let luma = (0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])).round() as u8;
            pixels.push(if quality == Quality::Bitonal { if luma >= 128 { 255 } else { 0 } } else { luma });
        }
        if alpha {
            pixels.push(p[3]);
        }
    }
    match format {
        ImageFormat::Png => png_image(&pixels, width as u32, height as u32, color),
        ImageFormat::Jpg => {
            let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
                return Err(Error::BadRequest(format!(
                    "jpg images are at most 65535 pixels on a side, this one would be {width} x {height}; use png or a smaller size"
                )));
            };
            let mut out = Vec::new();
            let encoder = jpeg_encoder::Encoder::new(&mut out, 90);
            let kind = if color { jpeg_encoder::ColorType::Rgb } else { jpeg_encoder::ColorType::Luma };
            encoder.encode(&pixels, w, h, kind).map_err(|e| Error::internal_from("jpeg", e))?;
            Ok(out)
        }
    }
}

/// Working memory per element while encoding a PNG (value, pixel, compressed row share).
pub const PNG_BYTES_PER_ELEMENT: u64 = 20;

/// The PNG of a 2-D slice (`/v1/slice?format=png`), through the same renderer as IIIF
/// images: values map linearly from `[vmin, vmax]` (default: the valid values' range) to
/// 0–255, gray + alpha, or RGBA through `colormap`; fill values and NaN are transparent.
pub fn png(
    data: &[u8],
    data_type: DataType,
    shape: &[u64],
    fill: &[u8],
    vmin: Option<f64>,
    vmax: Option<f64>,
    colormap: Option<Colormap>,
) -> Result<Vec<u8>> {
    let [height, width] = *shape else {
        return Err(Error::NotAcceptable(format!(
            "png needs a 2-D result, this one has {} dimensions; select a 2-D region (use integer indices to drop dimensions)",
            shape.len()
        )));
    };
    if !data_type.is_real_number() {
        return Err(Error::NotAcceptable(format!("png cannot show {} values; use npy, bin or json", data_type.name())));
    }
    if height > u64::from(u32::MAX) || width > u64::from(u32::MAX) {
        return Err(Error::NotAcceptable("png dimensions are limited to 2^32-1".into()));
    }
    let values: Vec<f64> = data
        .chunks_exact(data_type.size())
        .map(|b| if b == fill { None } else { element_f64(b, data_type) }.unwrap_or(f64::NAN))
        .collect();
    let (lo, hi) = values
        .iter()
        .filter(|v| !v.is_nan())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let style = Style {
        window: Window { lo: vmin.unwrap_or(lo), hi: vmax.unwrap_or(hi) },
        quality: if colormap.is_some() { Quality::Color } else { Quality::Gray },
        colormap: colormap.unwrap_or(Colormap::Viridis),
    };
    let plane = Plane { width: width as usize, height: height as usize, values };
    encode(&plane, &style, ImageFormat::Png)
}

/// An 8-bit PNG of `pixels`: RGBA when `color`, else gray + alpha (alpha 0 for pixels that
/// hold no value), compressed for speed.
fn png_image(pixels: &[u8], width: u32, height: u32, color: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(if color { png::ColorType::Rgba } else { png::ColorType::GrayscaleAlpha });
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(|e| Error::internal_from("png", e))?;
    writer.write_image_data(pixels).map_err(|e| Error::internal_from("png", e))?;
    writer.finish().map_err(|e| Error::internal_from("png", e))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn blocks_average_their_valid_values() {
        // 5 x 3 source, factor 2: blocks are 2x2 except the right column and bottom row.
        let nan = f32::NAN;
        let src = f32s(&[1.0, 3.0, 5.0, 7.0, 9.0, 2.0, 4.0, nan, 8.0, 10.0, -1.0, -1.0, 0.0, 0.0, 100.0]);
        let mut r = Reducer::new(2, 5, 3);
        r.add_rows(0, &src[..40], 5, DataType::Float32, &(-1.0f32).to_le_bytes());
        r.add_rows(2, &src[40..], 5, DataType::Float32, &(-1.0f32).to_le_bytes());
        let p = r.finish();
        assert_eq!((p.width, p.height), (3, 2));
        assert_eq!(&p.values[..3], &[2.5, 20.0 / 3.0, 9.5]);
        assert!(p.values[3].is_nan());
        assert_eq!(&p.values[4..], &[0.0, 100.0]);
    }

    #[test]
    fn resampling_takes_the_value_under_each_centre() {
        let p = Plane { width: 4, height: 1, values: vec![0.0, 1.0, 2.0, 3.0] };
        assert_eq!(p.clone().resample(2, 1).values, vec![1.0, 3.0]);
        assert_eq!(p.resample(8, 2).values, [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0].repeat(2));
    }

    #[test]
    fn turns_and_mirrors() {
        // 1 2 3
        // 4 5 6
        let p = Plane { width: 3, height: 2, values: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0] };
        let turn = |mirror, quarter_turns| p.clone().orient(Rotation { mirror, quarter_turns }).values;
        assert_eq!(turn(false, 1), vec![4.0, 1.0, 5.0, 2.0, 6.0, 3.0]);
        assert_eq!(turn(false, 2), vec![6.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
        assert_eq!(turn(false, 3), vec![3.0, 6.0, 2.0, 5.0, 1.0, 4.0]);
        assert_eq!(turn(true, 0), vec![3.0, 2.0, 1.0, 6.0, 5.0, 4.0]);
        assert_eq!(turn(true, 1), vec![6.0, 3.0, 5.0, 2.0, 4.0, 1.0]);
    }

    #[test]
    fn colormaps_match_matplotlib_at_their_ends() {
        // matplotlib's viridis(0.0) and viridis(1.0), magma's ends, and a gray ramp.
        assert_eq!(Colormap::Viridis.rgb(0), [0x44, 0x01, 0x54]);
        assert_eq!(Colormap::Viridis.rgb(255), [0xfd, 0xe7, 0x25]);
        assert_eq!(Colormap::Magma.rgb(0), [0x00, 0x00, 0x04]);
        assert_eq!(Colormap::Magma.rgb(255), [0xfc, 0xfd, 0xbf]);
        assert_eq!(Colormap::Gray.rgb(77), [77; 3]);
        assert!(Colormap::parse("jet").is_err());
        let w = Window { lo: 10.0, hi: 20.0 };
        assert_eq!((w.level(9.0), w.level(15.0), w.level(20.0), w.level(99.0)), (0, 128, 255, 255));
    }
}
