//! The IIIF Image API 3.0 `info.json` document of an image
//! (<https://iiif.io/api/image/3.0/#5-image-information>): its size, tiles and scale
//! factors (every stored level of an OME-Zarr image among them), preferred sizes, formats
//! and features, and the Physical Dimensions service of an image with length units.

use serde::Serialize;

use super::TILE_SIZE;
use super::source::Image;

pub const CONTEXT: &str = "http://iiif.io/api/image/3/context.json";

/// An image service's `info.json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Info<'a> {
    #[serde(rename = "@context")]
    pub context: &'static str,
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub protocol: &'static str,
    pub profile: &'static str,
    pub width: u64,
    pub height: u64,
    pub tiles: [Tiles; 1],
    pub sizes: Vec<Size>,
    pub preferred_formats: &'static [&'static str],
    pub extra_formats: &'static [&'static str],
    pub extra_qualities: &'static [&'static str],
    pub extra_features: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<[PhysicalDimensions; 1]>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tiles {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub width: u64,
    pub height: u64,
    pub scale_factors: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub struct Size {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub width: u64,
    pub height: u64,
}

/// The IIIF Physical Dimensions service (<https://iiif.io/api/annex/services/#physical-dimensions>).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalDimensions {
    #[serde(rename = "@context")]
    pub context: &'static str,
    pub profile: &'static str,
    pub physical_scale: f64,
    pub physical_units: &'static str,
}

/// The `info.json` of `image`, whose service is at `id`.
pub fn document<'a>(image: &Image, id: &'a str) -> Info<'a> {
    let (width, height) = (image.width, image.height);
    let top = super::max_scale_log2(width, height);
    let stored = image.multiscale_levels();
    // Scale factors: down to a whole-image tile, and every stored level of an OME-Zarr image.
    let mut scale_factors: Vec<u64> = (0..=top).map(|k| 1u64 << k).collect();
    scale_factors.extend(stored.iter().map(|&(k, _, _)| 1u64 << k));
    scale_factors.sort_unstable();
    scale_factors.dedup();
    // Preferred sizes, smallest first, small enough to ask for whole: an OME-Zarr image's
    // stored levels as they are stored, else the reductions by powers of two.
    let candidates: Vec<(u64, u64)> = if stored.is_empty() {
        (0..=top).map(|k| (width.div_ceil(1 << k), height.div_ceil(1 << k))).collect()
    } else {
        stored.iter().map(|&(_, w, h)| (w, h)).collect()
    };
    let mut sizes: Vec<(u64, u64)> =
        candidates.into_iter().filter(|&(w, h)| w * h <= 1 << 20 || (w <= TILE_SIZE && h <= TILE_SIZE)).collect();
    sizes.sort_unstable();
    Info {
        context: CONTEXT,
        id,
        kind: "ImageService3",
        protocol: "http://iiif.io/api/image",
        profile: "level2",
        width,
        height,
        tiles: [Tiles { kind: "Tile", width: TILE_SIZE, height: TILE_SIZE, scale_factors }],
        sizes: sizes.into_iter().map(|(width, height)| Size { kind: "Size", width, height }).collect(),
        // PNG first: exact levels and transparent fill (JPEG is lossy and has no alpha).
        preferred_formats: &["png"],
        extra_formats: &["png", "jpg"],
        extra_qualities: &["color", "gray", "bitonal"],
        extra_features: &["mirroring", "sizeUpscaling", "rotationBy90s", "regionSquare", "sizeByConfinedWh"],
        service: image.physical.as_ref().and_then(|(s, u)| physical_dimensions(*s, u)).map(|(scale, units)| {
            [PhysicalDimensions {
                context: "http://iiif.io/api/annex/services/physdim/1/context.json",
                profile: "http://iiif.io/api/annex/services/physdim",
                physical_scale: scale,
                physical_units: units,
            }]
        }),
    }
}

/// The IIIF Physical Dimensions service's scale and units (`mm`, `cm` or `in`, the only
/// ones it allows) of a pixel `scale` long in OME-Zarr `unit` (UDUNITS-2 names); `None`
/// for units that are not lengths.
fn physical_dimensions(scale: f64, unit: &str) -> Option<(f64, &'static str)> {
    let mm = match unit {
        "inch" => return Some((scale, "in")),
        "centimeter" => return Some((scale, "cm")),
        "millimeter" => 1.0,
        "meter" => 1e3,
        "kilometer" => 1e6,
        "decimeter" => 1e2,
        "micrometer" => 1e-3,
        "nanometer" => 1e-6,
        "angstrom" => 1e-7,
        "picometer" => 1e-9,
        "foot" => 304.8,
        "yard" => 914.4,
        "mile" => 1_609_344.0,
        _ => return None,
    };
    Some((scale * mm, "mm"))
}
