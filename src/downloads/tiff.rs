//! A Cloud Optimized GeoTIFF (classic TIFF 6, little-endian) as GDAL's COG driver lays it
//! out and `rio cogeo validate` checks it: the header, the full image's IFD and then each
//! overview's (every IFD before any pixel), then the tiles — the smallest overview's first,
//! the full image's last, each level's band after band and row after row of tiles. The
//! full image carries the georeferencing (`ModelPixelScale`, `ModelTiepoint`, the GeoKeys),
//! `GDAL_METADATA` and `GDAL_NODATA`; the overviews are reduced-resolution subfiles.
//!
//! Every tile is compressed before the first byte is sent (the IFDs ahead of them hold
//! their offsets and sizes), in parallel on the CPU pool; then the file streams, the tiles
//! as they are.

use bytes::Bytes;
use zarrd_core::grid::geokeys::GeoKeys;

use crate::downloads::tiles::{Level, Sample, TILE};

/// The media type of the contract.
pub const MEDIA_TYPE: &str = "image/tiff; application=geotiff; profile=cloud-optimized";

/// Overviews are made until the longer side is at most this.
const OVERVIEW_TO: usize = 512;

/// Where the image lies: the upper-left corner of its upper-left pixel and a pixel's size
/// (x, y; both positive: rows run north to south) in CRS units, and the CRS.
pub struct Georeference {
    pub origin: (f64, f64),
    pub pixel: (f64, f64),
    pub keys: GeoKeys,
}

/// The image: `bands` planes of `rows` × `cols` samples, north-up, little-endian.
pub struct Raster {
    pub sample: Sample,
    pub bands: usize,
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<u8>,
    /// The missing value (`GDAL_NODATA`), if any.
    pub nodata: Option<f64>,
    /// `GDAL_METADATA`'s XML, if any.
    pub metadata: Option<String>,
}

/// The file: its head (header and IFDs), then the tiles in file order.
pub struct Cog {
    pub head: Vec<u8>,
    pub tiles: Vec<Bytes>,
    pub length: u64,
}

/// One IFD entry: tag, TIFF type, count and the value's bytes.
struct Entry {
    tag: u16,
    kind: u16,
    count: u32,
    bytes: Vec<u8>,
}

const SHORT: u16 = 3;
const LONG: u16 = 4;
const ASCII: u16 = 2;
const DOUBLE: u16 = 12;

fn shorts(tag: u16, values: &[u16]) -> Entry {
    Entry { tag, kind: SHORT, count: values.len() as u32, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
}

fn longs(tag: u16, values: &[u32]) -> Entry {
    Entry { tag, kind: LONG, count: values.len() as u32, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
}

fn doubles(tag: u16, values: &[f64]) -> Entry {
    Entry {
        tag,
        kind: DOUBLE,
        count: values.len() as u32,
        bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

fn ascii(tag: u16, text: &str) -> Entry {
    let mut bytes = text.replace('\0', " ").into_bytes();
    bytes.push(0);
    Entry { tag, kind: ASCII, count: bytes.len() as u32, bytes }
}

/// `GDAL_NODATA`'s text of `value` (as GDAL writes it: `nan`, integers without a point).
pub fn nodata_text(value: f64) -> String {
    if value.is_nan() {
        "nan".into()
    } else if value.is_infinite() {
        if value > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{value}")
    }
}

/// An IFD's bytes at offset `at`, its values that do not fit an entry right after it; the
/// next IFD at `next` (0: none).
fn ifd(mut entries: Vec<Entry>, at: u64, next: u32) -> Vec<u8> {
    entries.sort_by_key(|e| e.tag);
    let table = 2 + 12 * entries.len() + 4;
    let mut out = Vec::with_capacity(ifd_size(&entries));
    let mut values = Vec::new();
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for e in &entries {
        out.extend_from_slice(&e.tag.to_le_bytes());
        out.extend_from_slice(&e.kind.to_le_bytes());
        out.extend_from_slice(&e.count.to_le_bytes());
        if e.bytes.len() <= 4 {
            let mut inline = [0u8; 4];
            inline[..e.bytes.len()].copy_from_slice(&e.bytes);
            out.extend_from_slice(&inline);
        } else {
            let offset = at + (table + values.len()) as u64;
            out.extend_from_slice(&(offset as u32).to_le_bytes());
            values.extend_from_slice(&e.bytes);
            // Values start on a word boundary (TIFF 6).
            if values.len() % 2 == 1 {
                values.push(0);
            }
        }
    }
    out.extend_from_slice(&next.to_le_bytes());
    out.extend_from_slice(&values);
    out
}

/// The bytes [`ifd`] writes for `entries`.
fn ifd_size(entries: &[Entry]) -> usize {
    2 + 12 * entries.len()
        + 4
        + entries.iter().filter(|e| e.bytes.len() > 4).map(|e| e.bytes.len().div_ceil(2) * 2).sum::<usize>()
}

/// The entries of level `index` (0 the full image) with its tiles at `offsets` of
/// `counts` bytes.
fn entries(
    raster: &Raster,
    georef: &Georeference,
    level: &Level,
    index: usize,
    (offsets, counts): (&[u32], &[u32]),
) -> Vec<Entry> {
    let bands = raster.bands as u16;
    let sample = raster.sample;
    let mut e = vec![
        longs(256, &[level.cols as u32]),
        longs(257, &[level.rows as u32]),
        shorts(258, &vec![(sample.bytes() * 8) as u16; raster.bands]),
        shorts(259, &[8]), // Adobe deflate (zlib)
        shorts(262, &[1]), // BlackIsZero
        shorts(277, &[bands]),
        shorts(284, &[if bands > 1 { 2 } else { 1 }]), // band after band
        shorts(317, &[sample.predictor()]),
        shorts(322, &[TILE as u16]),
        shorts(323, &[TILE as u16]),
        longs(324, offsets),
        longs(325, counts),
        shorts(339, &vec![sample.format(); raster.bands]),
    ];
    if bands > 1 {
        e.push(shorts(338, &vec![0; raster.bands - 1])); // unspecified extra samples
    }
    if let Some(nodata) = raster.nodata {
        e.push(ascii(42113, &nodata_text(nodata)));
    }
    if index > 0 {
        e.push(longs(254, &[1])); // a reduced-resolution image
        return e;
    }
    e.push(doubles(33550, &[georef.pixel.0, georef.pixel.1, 0.0]));
    e.push(doubles(33922, &[0.0, 0.0, 0.0, georef.origin.0, georef.origin.1, 0.0]));
    e.push(shorts(34735, &georef.keys.directory));
    if !georef.keys.doubles.is_empty() {
        e.push(doubles(34736, &georef.keys.doubles));
    }
    if !georef.keys.ascii.is_empty() {
        e.push(ascii(34737, &georef.keys.ascii));
    }
    if let Some(xml) = &raster.metadata {
        e.push(ascii(42112, xml));
    }
    e
}

/// Why a file cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("the GeoTIFF would be {0} bytes; a classic TIFF holds at most 4 GiB")]
pub struct TooBig(pub u64);

/// The memory [`cog`] takes beside an image of `image_bytes`: its overviews (a third of it
/// at most) and its compressed tiles (counted as large as the image).
pub fn working_bytes(image_bytes: u64) -> u64 {
    image_bytes / 3 + image_bytes
}

/// The Cloud Optimized GeoTIFF of `raster` at `georef` (run on the CPU pool: it makes the
/// overviews and compresses every tile, in parallel).
pub fn cog(mut raster: Raster, georef: &Georeference) -> Result<Cog, TooBig> {
    use rayon::prelude::*;
    let sample = raster.sample;
    let pad = sample.encode(raster.nodata.unwrap_or(0.0));
    let mut levels = vec![Level { rows: raster.rows, cols: raster.cols, data: std::mem::take(&mut raster.data) }];
    while levels.last().is_some_and(|l| l.rows.max(l.cols) > OVERVIEW_TO) {
        let next = levels[levels.len() - 1].halved(raster.bands, sample, raster.nodata);
        levels.push(next);
    }
    // Every tile of every level, compressed in parallel, in each level's order.
    let work: Vec<(usize, usize, (usize, usize))> = levels
        .iter()
        .enumerate()
        .flat_map(|(l, level)| {
            let (across, down) = level.tiles();
            (0..raster.bands).flat_map(move |b| (0..down).flat_map(move |d| (0..across).map(move |a| (l, b, (a, d)))))
        })
        .collect();
    let compressed: Vec<Bytes> =
        work.par_iter().map(|&(l, b, at)| Bytes::from(levels[l].tile(b, at, sample, &pad))).collect();
    let mut by_level: Vec<Vec<Bytes>> = vec![Vec::new(); levels.len()];
    for (&(l, ..), tile) in work.iter().zip(compressed) {
        by_level[l].push(tile);
    }
    // The IFDs' sizes do not depend on the offsets they hold: lay them out first.
    let zeros: Vec<Vec<u32>> = by_level.iter().map(|t| vec![0; t.len()]).collect();
    let sizes: Vec<usize> = levels
        .iter()
        .enumerate()
        .map(|(i, level)| ifd_size(&entries(&raster, georef, level, i, (&zeros[i], &zeros[i]))))
        .collect();
    let mut at = 8u64;
    let mut starts = Vec::with_capacity(sizes.len());
    for size in &sizes {
        starts.push(at);
        at += *size as u64;
    }
    // The tiles: the smallest overview's first.
    let mut offsets: Vec<Vec<u32>> = vec![Vec::new(); levels.len()];
    for l in (0..levels.len()).rev() {
        for tile in &by_level[l] {
            offsets[l].push(at as u32);
            at += tile.len() as u64;
        }
    }
    if at > u64::from(u32::MAX) {
        return Err(TooBig(at));
    }
    let mut head = Vec::with_capacity(starts.last().map_or(8, |s| *s as usize + sizes[sizes.len() - 1]));
    head.extend_from_slice(b"II");
    head.extend_from_slice(&42u16.to_le_bytes());
    head.extend_from_slice(&8u32.to_le_bytes());
    for (i, level) in levels.iter().enumerate() {
        let counts: Vec<u32> = by_level[i].iter().map(|t| t.len() as u32).collect();
        let next = starts.get(i + 1).map_or(0, |s| *s as u32);
        head.extend(ifd(entries(&raster, georef, level, i, (&offsets[i], &counts)), starts[i], next));
    }
    let tiles = by_level.into_iter().rev().flatten().collect();
    Ok(Cog { head, tiles, length: at })
}
