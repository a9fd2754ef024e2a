//! The keys of the rendered-image cache (IIIF images and map tiles share it): everything a
//! rendered image depends on besides the objects it reads, as typed parts that derive
//! `Hash` and `Eq` (floats by their bits). Each key also gives the text its image's `ETag`
//! starts from ([`RenderedKey::etag_text`]), byte for byte the cache key this type replaced,
//! so `ETags` do not change.

use crate::images::iiif::grammar::ImageRequest;
use crate::images::iiif::source::{CompositeChannel, Drawing, Image};
use crate::images::maps::MapSource;
use crate::images::maps::geometry::{Resampling, TileId};
use crate::images::render::{Colormap, Window};

/// A rendered image's key: an IIIF image or a map tile.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RenderedKey {
    Iiif(IiifKey),
    Tile(TileKey),
}

impl RenderedKey {
    /// The text the image's `ETag` hashes first (then the versions of the objects read).
    pub fn etag_text(&self) -> String {
        match self {
            Self::Iiif(key) => key.etag_text(),
            Self::Tile(key) => key.etag_text(),
        }
    }

    /// The bytes the key holds, roughly (for the cache's weigher).
    pub fn weight(&self) -> usize {
        match self {
            Self::Iiif(k) => k.image.len() + k.request.len() + 16 * k.levels.len() + 64 + k.drawing.weight(),
            Self::Tile(k) => k.image.len() + 20 * k.levels.len() + 96,
        }
    }
}

/// An IIIF image: the image and how it is drawn, its arrays' metadata (every level's), the
/// request and the window and colormap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IiifKey {
    /// The identifier, percent-encoded.
    pub image: String,
    pub drawing: DrawingKey,
    /// The overview levels' metadata digests, finest first.
    pub levels: Vec<u128>,
    /// The full-resolution array's metadata digest.
    pub digest: u128,
    /// The request in its canonical form.
    pub request: String,
    pub window: WindowKey,
    pub colormap: Colormap,
}

impl IiifKey {
    pub fn new(image: &Image, request: &ImageRequest, window: Window, colormap: Colormap) -> Self {
        Self {
            image: image.id.encoded(),
            drawing: DrawingKey::of(&image.drawing),
            levels: image.levels.iter().map(|l| l.reader.meta.digest).collect(),
            digest: image.reader.meta.digest,
            request: request.canonical(),
            window: WindowKey::of(window),
            colormap,
        }
    }

    /// The drawing as its `Debug` text: the `ETag` has always hashed it so.
    fn etag_text(&self) -> String {
        format!(
            "{}\u{0}{:?}\u{0}{}\u{0}{:032x}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
            self.image,
            self.drawing.drawing(),
            self.levels.iter().map(|d| format!("{d:032x}")).collect::<Vec<_>>().join(","),
            self.digest,
            self.request,
            self.window.lo,
            self.window.hi,
            self.colormap.name()
        )
    }
}

/// A map tile: the array (and its levels) and its coordinate arrays, the tile, its format,
/// and for an image its window and colormap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TileKey {
    /// The identifier, percent-encoded.
    pub image: String,
    /// The array's metadata digest.
    pub digest: u128,
    /// The overview levels: `log2` of each one's reduction and its metadata digest.
    pub levels: Vec<(u32, u128)>,
    /// The grid's validators (its Y and X coordinate arrays' digests, the mapping's folded in).
    pub grid: (u128, u128),
    pub tile: TileId,
    pub resampling: Resampling,
    /// The format's name (`png`, `jpg`, `npy`).
    pub format: &'static str,
    /// The window and colormap of an image tile; `None` for values (`npy`).
    pub look: Option<(WindowKey, Colormap)>,
}

impl TileKey {
    pub fn new(
        map: &MapSource,
        (tile, resampling): (TileId, Resampling),
        format: &'static str,
        look: Option<(Window, Colormap)>,
    ) -> Self {
        let image = &map.image;
        Self {
            image: image.id.encoded(),
            digest: image.reader.meta.digest,
            levels: image.levels.iter().map(|l| (l.log2, l.reader.meta.digest)).collect(),
            grid: map.grid.digest,
            tile,
            resampling,
            format,
            look: look.map(|(window, colormap)| (WindowKey::of(window), colormap)),
        }
    }

    fn etag_text(&self) -> String {
        let levels: Vec<String> = self.levels.iter().map(|(log2, digest)| format!("{log2}:{digest:032x}")).collect();
        let look = self.look.map(|(w, colormap)| format!("{}/{}/{}", w.lo, w.hi, colormap.name()));
        // Nearest, the default, adds nothing: its tags are those of before resampling was offered.
        let resampling = match self.resampling {
            Resampling::Nearest => "",
            Resampling::Bilinear => "\u{0}bilinear",
        };
        format!(
            "maps\u{0}{}\u{0}{:032x}\u{0}{}\u{0}{:032x}{:032x}\u{0}{}/{}/{}.{}\u{0}{}{resampling}",
            self.image,
            self.digest,
            levels.join(","),
            self.grid.0,
            self.grid.1,
            self.tile.z,
            self.tile.x,
            self.tile.y,
            self.format,
            look.unwrap_or_default()
        )
    }
}

/// A window's bounds as their bits (floats have no `Eq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowKey {
    pub lo: u64,
    pub hi: u64,
}

impl WindowKey {
    pub fn of(window: Window) -> Self {
        Self { lo: window.lo.to_bits(), hi: window.hi.to_bits() }
    }

    fn window(self) -> Window {
        Window { lo: f64::from_bits(self.lo), hi: f64::from_bits(self.hi) }
    }
}

/// A [`Drawing`] with its floats as their bits, from which the drawing is made again exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DrawingKey {
    Plane,
    Composite { axis: usize, channels: Vec<ChannelKey> },
    Labels { colors: Vec<(u64, [u8; 4])> },
}

/// A [`CompositeChannel`] with its window as bits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChannelKey {
    pub index: u64,
    pub color: [u8; 3],
    pub window: Option<WindowKey>,
}

impl DrawingKey {
    pub fn of(drawing: &Drawing) -> Self {
        match drawing {
            Drawing::Plane => Self::Plane,
            Drawing::Composite { axis, channels } => Self::Composite {
                axis: *axis,
                channels: channels
                    .iter()
                    .map(|c| ChannelKey { index: c.index, color: c.color, window: c.window.map(WindowKey::of) })
                    .collect(),
            },
            Drawing::Labels { colors } => {
                Self::Labels { colors: colors.iter().map(|(id, rgba)| (id.to_bits(), *rgba)).collect() }
            }
        }
    }

    /// The drawing this key was made from, bit for bit.
    pub fn drawing(&self) -> Drawing {
        match self {
            Self::Plane => Drawing::Plane,
            Self::Composite { axis, channels } => Drawing::Composite {
                axis: *axis,
                channels: channels
                    .iter()
                    .map(|c| CompositeChannel {
                        index: c.index,
                        color: c.color,
                        window: c.window.map(WindowKey::window),
                    })
                    .collect(),
            },
            Self::Labels { colors } => {
                Drawing::Labels { colors: colors.iter().map(|(id, rgba)| (f64::from_bits(*id), *rgba)).collect() }
            }
        }
    }

    fn weight(&self) -> usize {
        match self {
            Self::Plane => 0,
            Self::Composite { channels, .. } => 32 * channels.len(),
            Self::Labels { colors } => 16 * colors.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawings() -> Vec<Drawing> {
        let channel = |index, window| CompositeChannel { index, color: [255, 0, 128], window };
        vec![
            Drawing::Plane,
            Drawing::Composite {
                axis: 1,
                channels: vec![
                    channel(0, Some(Window { lo: 0.0, hi: 255.5 })),
                    channel(2, Some(Window { lo: -0.0, hi: f64::NAN })),
                    channel(3, None),
                ],
            },
            Drawing::Labels { colors: vec![(1.0, [1, 2, 3, 255]), (-2.5e-300, [0, 0, 0, 0]), (f64::INFINITY, [9; 4])] },
        ]
    }

    /// The `ETag` text holds the drawing's `Debug` text, as the cache key it replaced did.
    #[test]
    fn drawings_come_back_bit_for_bit() {
        for drawing in drawings() {
            assert_eq!(format!("{:?}", DrawingKey::of(&drawing).drawing()), format!("{drawing:?}"));
        }
        assert_ne!(DrawingKey::of(&drawings()[1]), DrawingKey::of(&drawings()[2]));
        assert_eq!(DrawingKey::of(&drawings()[1]), DrawingKey::of(&drawings()[1]), "NaN windows are equal keys");
    }

    /// The text an IIIF image's and a map tile's `ETag` start from, as the routes built it
    /// before keys were typed.
    #[test]
    fn etag_texts_are_the_old_cache_keys() {
        let (lo, hi) = (0.25f64, 1e6f64);
        for drawing in drawings() {
            let key = IiifKey {
                image: "ds%2Fa%5B1%5D".into(),
                drawing: DrawingKey::of(&drawing),
                levels: vec![1, u128::MAX],
                digest: 0xabc,
                request: "full/max/0/default.png".into(),
                window: WindowKey::of(Window { lo, hi }),
                colormap: Colormap::Viridis,
            };
            let old = format!(
                "{}\u{0}{:?}\u{0}{}\u{0}{:032x}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
                "ds%2Fa%5B1%5D",
                drawing,
                [1u128, u128::MAX].iter().map(|d| format!("{d:032x}")).collect::<Vec<_>>().join(","),
                0xabcu128,
                "full/max/0/default.png",
                lo.to_bits(),
                hi.to_bits(),
                "viridis"
            );
            assert_eq!(RenderedKey::Iiif(key).etag_text(), old);
        }
        let tile = |look| TileKey {
            image: "ds%2Fsst".into(),
            digest: 7,
            levels: vec![(1, 8), (2, 9)],
            grid: (10, 11),
            tile: TileId { z: 2, x: 2, y: 1 },
            resampling: Resampling::Nearest,
            format: "png",
            look,
        };
        let source = format!("ds%2Fsst\u{0}{:032x}\u{0}1:{:032x},2:{:032x}\u{0}{:032x}{:032x}", 7, 8, 9, 10, 11);
        let image = tile(Some((WindowKey::of(Window { lo, hi }), Colormap::Magma)));
        let look = format!("{}/{}/magma", lo.to_bits(), hi.to_bits());
        assert_eq!(RenderedKey::Tile(image).etag_text(), format!("maps\u{0}{source}\u{0}2/2/1.png\u{0}{look}"));
        assert_eq!(RenderedKey::Tile(tile(None)).etag_text(), format!("maps\u{0}{source}\u{0}2/2/1.png\u{0}"));
    }
}
