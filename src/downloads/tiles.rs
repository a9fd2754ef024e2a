//! The pixels of a Cloud Optimized GeoTIFF ([`crate::downloads::tiff`]): the sample types
//! GeoTIFF holds, averaged halving overviews, and tiles of 512 × 512 cut from one band's
//! plane, each with its predictor (TIFF 6 horizontal differencing for integers, Adobe's
//! floating-point predictor for floats, as libtiff writes them) and deflated (zlib).

use flate2::Compression;
use flate2::write::ZlibEncoder;
use std::io::Write as _;
use zarrd_core::zarr::data_type::DataType;

/// A tile's side in pixels (the COG default: GDAL's, and the contract's).
pub const TILE: usize = 512;

/// The deflate level: the fastest that still shrinks predicted samples (level 6 took
/// three times as long for 5% fewer bytes on float32 fields: docs/performance.md).
const LEVEL: u32 = 1;

/// A sample type of TIFF (`SampleFormat` × `BitsPerSample`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

impl Sample {
    /// The sample type of a Zarr data type (a bool as 0/1 bytes); `None`: GeoTIFF holds no
    /// such numbers here (text, complex, half floats, dates).
    pub fn of(data_type: DataType) -> Option<Self> {
        Some(match data_type {
            DataType::Bool | DataType::UInt8 => Self::U8,
            DataType::Int8 => Self::I8,
            DataType::UInt16 => Self::U16,
            DataType::Int16 => Self::I16,
            DataType::UInt32 => Self::U32,
            DataType::Int32 => Self::I32,
            DataType::UInt64 => Self::U64,
            DataType::Int64 => Self::I64,
            DataType::Float32 => Self::F32,
            DataType::Float64 => Self::F64,
            _ => return None,
        })
    }

    pub fn bytes(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }

    /// TIFF's `SampleFormat`: 1 unsigned, 2 signed, 3 floating point.
    pub fn format(self) -> u16 {
        match self {
            Self::U8 | Self::U16 | Self::U32 | Self::U64 => 1,
            Self::I8 | Self::I16 | Self::I32 | Self::I64 => 2,
            Self::F32 | Self::F64 => 3,
        }
    }

    /// TIFF's `Predictor`: 3 (floating point) for floats, 2 (horizontal) for integers
    /// (none for 64-bit ones, which older libtiff cannot undo).
    pub fn predictor(self) -> u16 {
        match self {
            Self::F32 | Self::F64 => 3,
            Self::U64 | Self::I64 => 1,
            _ => 2,
        }
    }

    /// `value` as one little-endian sample (rounded and saturated for integers).
    pub fn encode(self, value: f64) -> Vec<u8> {
        let mut out = vec![0; self.bytes()];
        self.put(value, &mut out);
        out
    }

    /// Writes `value` as one sample into `out` (its [`Self::bytes`] long): per pixel of an
    /// overview, without an allocation each.
    fn put(self, value: f64, out: &mut [u8]) {
        match self {
            Self::U8 => out[0] = value.round() as u8,
            Self::I8 => out.copy_from_slice(&(value.round() as i8).to_le_bytes()),
            Self::U16 => out.copy_from_slice(&(value.round() as u16).to_le_bytes()),
            Self::I16 => out.copy_from_slice(&(value.round() as i16).to_le_bytes()),
            Self::U32 => out.copy_from_slice(&(value.round() as u32).to_le_bytes()),
            Self::I32 => out.copy_from_slice(&(value.round() as i32).to_le_bytes()),
            Self::U64 => out.copy_from_slice(&(value.round() as u64).to_le_bytes()),
            Self::I64 => out.copy_from_slice(&(value.round() as i64).to_le_bytes()),
            Self::F32 => out.copy_from_slice(&(value as f32).to_le_bytes()),
            Self::F64 => out.copy_from_slice(&value.to_le_bytes()),
        }
    }

    /// The little-endian sample at the start of `bytes` as a number.
    fn decode(self, b: &[u8]) -> f64 {
        let array = |n: usize| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..n].copy_from_slice(&b[..n]);
            a
        };
        let a = array(self.bytes());
        match self {
            Self::U8 => f64::from(a[0]),
            Self::I8 => f64::from(a[0] as i8),
            Self::U16 => f64::from(u16::from_le_bytes([a[0], a[1]])),
            Self::I16 => f64::from(i16::from_le_bytes([a[0], a[1]])),
            Self::U32 => f64::from(u32::from_le_bytes([a[0], a[1], a[2], a[3]])),
            Self::I32 => f64::from(i32::from_le_bytes([a[0], a[1], a[2], a[3]])),
            Self::U64 => u64::from_le_bytes(a) as f64,
            Self::I64 => i64::from_le_bytes(a) as f64,
            Self::F32 => f64::from(f32::from_le_bytes([a[0], a[1], a[2], a[3]])),
            Self::F64 => f64::from_le_bytes(a),
        }
    }
}

/// One resolution of the image: `bands` planes of `rows` × `cols` little-endian samples,
/// band after band, row after row.
pub struct Level {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<u8>,
}

impl Level {
    /// Tiles across and down.
    pub fn tiles(&self) -> (usize, usize) {
        (self.cols.div_ceil(TILE), self.rows.div_ceil(TILE))
    }

    /// The next overview: each pixel the mean of the (up to) 2 × 2 pixels it covers that
    /// are not missing (`nodata`, or NaN), missing where all are; integers rounded.
    #[must_use]
    pub fn halved(&self, bands: usize, sample: Sample, nodata: Option<f64>) -> Self {
        use rayon::prelude::*;
        let (rows, cols) = (self.rows.div_ceil(2), self.cols.div_ceil(2));
        let size = sample.bytes();
        let missing = sample.encode(nodata.unwrap_or(f64::NAN));
        let mut data = vec![0u8; bands * rows * cols * size];
        let plane = self.rows * self.cols * size;
        data.par_chunks_mut(cols * size).enumerate().for_each(|(at, out)| {
            let (band, row) = (at / rows, at % rows);
            let source = &self.data[band * plane..(band + 1) * plane];
            let value = |r: usize, c: usize| sample.decode(&source[(r * self.cols + c) * size..]);
            for (col, pixel) in out.chunks_exact_mut(size).enumerate() {
                let (mut sum, mut n) = (0.0, 0u32);
                for r in 2 * row..(2 * row + 2).min(self.rows) {
                    for c in 2 * col..(2 * col + 2).min(self.cols) {
                        let v = value(r, c);
                        if !v.is_nan() && nodata != Some(v) {
                            sum += v;
                            n += 1;
                        }
                    }
                }
                if n == 0 {
                    pixel.copy_from_slice(&missing);
                } else {
                    sample.put(sum / f64::from(n), pixel);
                }
            }
        });
        Self { rows, cols, data }
    }

    /// Tile (`across`, `down`) of band `band`, predicted and deflated; the part beyond the
    /// image's edge is `pad` (one sample).
    pub fn tile(&self, band: usize, (across, down): (usize, usize), sample: Sample, pad: &[u8]) -> Vec<u8> {
        let size = sample.bytes();
        let row_bytes = TILE * size;
        let plane = &self.data[band * self.rows * self.cols * size..(band + 1) * self.rows * self.cols * size];
        let mut tile = vec![0u8; TILE * row_bytes];
        let (col0, row0) = (across * TILE, down * TILE);
        let width = (self.cols - col0).min(TILE);
        let mut scratch = vec![0u8; row_bytes];
        for (r, out) in tile.chunks_exact_mut(row_bytes).enumerate() {
            let row = row0 + r;
            let kept = if row < self.rows { width } else { 0 };
            if kept > 0 {
                let start = (row * self.cols + col0) * size;
                out[..kept * size].copy_from_slice(&plane[start..start + kept * size]);
            }
            for pixel in out[kept * size..].chunks_exact_mut(size) {
                pixel.copy_from_slice(pad);
            }
            predict(out, sample, &mut scratch);
        }
        let mut encoder = ZlibEncoder::new(Vec::with_capacity(tile.len() / 2), Compression::new(LEVEL));
        // Writing to a Vec cannot fail.
        let _ = encoder.write_all(&tile);
        encoder.finish().unwrap_or_default()
    }
}

/// Turns `bands` planes of `rows` × `cols` samples of `size` bytes upside down
/// (`rows`) and left to right (`cols`), in place.
pub fn flip(
    data: &mut [u8],
    (bands, rows, cols, size): (usize, usize, usize, usize),
    (flip_rows, flip_cols): (bool, bool),
) {
    let row_bytes = cols * size;
    if row_bytes == 0 {
        return;
    }
    for plane in data.chunks_exact_mut(rows * row_bytes).take(bands) {
        if flip_rows {
            for r in 0..rows / 2 {
                let (top, bottom) = plane.split_at_mut((rows - 1 - r) * row_bytes);
                top[r * row_bytes..(r + 1) * row_bytes].swap_with_slice(&mut bottom[..row_bytes]);
            }
        }
        if flip_cols {
            for row in plane.chunks_exact_mut(row_bytes) {
                for c in 0..cols / 2 {
                    let (left, right) = row.split_at_mut((cols - 1 - c) * size);
                    left[c * size..(c + 1) * size].swap_with_slice(&mut right[..size]);
                }
            }
        }
    }
}

/// Applies the predictor to one row of samples in place.
fn predict(row: &mut [u8], sample: Sample, scratch: &mut [u8]) {
    match (sample.predictor(), sample.bytes()) {
        (2, 1) => differences::<1>(row, |a, b| [a[0].wrapping_sub(b[0])]),
        (2, 2) => differences::<2>(row, |a, b| u16::from_le_bytes(a).wrapping_sub(u16::from_le_bytes(b)).to_le_bytes()),
        (2, 4) => differences::<4>(row, |a, b| u32::from_le_bytes(a).wrapping_sub(u32::from_le_bytes(b)).to_le_bytes()),
        (3, size) => {
            // libtiff's fpDiff: the samples' bytes in planes, most significant first,
            // then each byte less the one before it along the row.
            let n = row.len() / size;
            for (i, sample) in row.chunks_exact(size).enumerate() {
                for (byte, &value) in sample.iter().enumerate() {
                    scratch[(size - 1 - byte) * n + i] = value;
                }
            }
            for i in (1..row.len()).rev() {
                row[i] = scratch[i].wrapping_sub(scratch[i - 1]);
            }
            row[0] = scratch[0];
        }
        _ => {}
    }
}

/// Horizontal differencing of `N`-byte samples: each less the one before it, from the
/// row's end (so each difference is of the original samples).
fn differences<const N: usize>(row: &mut [u8], sub: impl Fn([u8; N], [u8; N]) -> [u8; N]) {
    let (samples, _) = row.as_chunks_mut::<N>();
    for i in (1..samples.len()).rev() {
        samples[i] = sub(samples[i], samples[i - 1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libtiff's own undoing of each predictor (fpAcc, horAcc), written from its source.
    fn undo(row: &mut [u8], sample: Sample) {
        let size = sample.bytes();
        if sample.predictor() == 3 {
            for i in 1..row.len() {
                row[i] = row[i].wrapping_add(row[i - 1]);
            }
            let n = row.len() / size;
            let planes = row.to_vec();
            for i in 0..n {
                for byte in 0..size {
                    row[i * size + byte] = planes[(size - 1 - byte) * n + i];
                }
            }
        } else if size == 2 {
            for i in 1..row.len() / 2 {
                let previous = u16::from_le_bytes([row[2 * i - 2], row[2 * i - 1]]);
                let v = u16::from_le_bytes([row[2 * i], row[2 * i + 1]]).wrapping_add(previous);
                row[2 * i..2 * i + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
    }

    #[test]
    fn predictors_are_undone_by_libtiffs_rules() {
        let floats: Vec<u8> = (0..TILE).flat_map(|i| (i as f32 * 0.37 - 40.0).to_le_bytes()).collect();
        let shorts: Vec<u8> = (0..TILE).flat_map(|i| ((i * 997 % 65_536) as u16).to_le_bytes()).collect();
        for (sample, original) in [(Sample::F32, floats), (Sample::U16, shorts)] {
            let mut row = original.clone();
            let mut scratch = vec![0u8; row.len()];
            predict(&mut row, sample, &mut scratch);
            assert_ne!(row, original);
            undo(&mut row, sample);
            assert_eq!(row, original, "{sample:?}");
        }
    }

    #[test]
    fn flips_turn_planes_over() {
        // Two bands of 3 × 2 bytes.
        let mut data: Vec<u8> = (0..12).collect();
        flip(&mut data, (2, 3, 2, 1), (true, false));
        assert_eq!(data, [4, 5, 2, 3, 0, 1, 10, 11, 8, 9, 6, 7]);
        let mut data: Vec<u8> = (0..6).collect();
        flip(&mut data, (1, 1, 3, 2), (false, true));
        assert_eq!(data, [4, 5, 2, 3, 0, 1]);
    }

    #[test]
    fn overviews_average_what_is_not_missing() {
        // 3 × 3: the last row and column average what they have.
        let values = [1.0f32, 3.0, 5.0, f32::NAN, 7.0, 6.0, -9.0, 2.0, 4.0];
        let level = Level { rows: 3, cols: 3, data: values.iter().flat_map(|v| v.to_le_bytes()).collect() };
        let half = level.halved(1, Sample::F32, Some(-9.0));
        let got: Vec<f32> = half.data.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!((half.rows, half.cols), (2, 2));
        assert_eq!(got, [11.0 / 3.0, 5.5, 2.0, 4.0]);
        let ints = Level { rows: 1, cols: 2, data: vec![1, 2] };
        assert_eq!(ints.halved(1, Sample::U8, None).data, [2]);
    }
}
