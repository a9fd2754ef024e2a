//! The IIIF Image API 3.0 request grammar
//! (<https://iiif.io/api/image/3.0/#4-image-requests>):
//! `{region}/{size}/{rotation}/{quality}.{format}` parsed into plain values, and applied to
//! an image of known width and height. Every rejection says what was wrong and what the
//! grammar allows, so a hand-written URL is easy to fix.

use std::fmt;

pub use super::identifier::{GrammarError, Identifier};
use super::identifier::{bad, integer};

const REGION_FORMS: &str = "allowed: `full`, `square`, `x,y,w,h` (pixels) or `pct:x,y,w,h` (percent)";
const SIZE_FORMS: &str =
    "allowed: `max`, `w,`, `,h`, `w,h`, `!w,h`, `pct:n`, each optionally prefixed with `^` to allow upscaling";
const ROTATIONS: &str = "allowed: 0, 90, 180 or 270, optionally prefixed with `!` to mirror first";
const QUALITIES: &str = "allowed: default, color, gray, bitonal";
const FORMATS: &str = "allowed: png, jpg";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Region {
    Full,
    Square,
    Pixels { x: u64, y: u64, w: u64, h: u64 },
    Percent { x: f64, y: f64, w: f64, h: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeKind {
    Max,
    Width(u64),
    Height(u64),
    Exact(u64, u64),
    Confined(u64, u64),
    Percent(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Size {
    pub upscale: bool,
    pub kind: SizeKind,
}

/// Clockwise rotation in quarter turns, after an optional horizontal mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    pub mirror: bool,
    pub quarter_turns: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quality {
    Default,
    Color,
    Gray,
    Bitonal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpg,
}

/// A pixel rectangle of the full-resolution image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x: u64,
    pub y: u64,
    pub w: u64,
    pub h: u64,
}

/// One parsed image request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageRequest {
    pub region: Region,
    pub size: Size,
    pub rotation: Rotation,
    pub quality: Quality,
    pub format: ImageFormat,
}

fn non_negative(text: &str, what: &str, forms: &str) -> Result<f64, GrammarError> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| bad(format!("{what} `{text}` is not a non-negative number; {forms}")))
}

fn four<T>(text: &str, parse: impl Fn(&str) -> Result<T, GrammarError>) -> Result<[T; 4], GrammarError> {
    let parts: Vec<&str> = text.split(',').collect();
    let [x, y, w, h] = parts.as_slice() else {
        return Err(bad(format!("region `{text}` needs four comma-separated numbers; {REGION_FORMS}")));
    };
    Ok([parse(x)?, parse(y)?, parse(w)?, parse(h)?])
}

impl Region {
    pub fn parse(text: &str) -> Result<Self, GrammarError> {
        match text {
            "full" => return Ok(Self::Full),
            "square" => return Ok(Self::Square),
            _ => {}
        }
        if let Some(pct) = text.strip_prefix("pct:") {
            let [x, y, w, h] = four(pct, |v| non_negative(v, "region value", REGION_FORMS))?;
            if w <= 0.0 || h <= 0.0 {
                return Err(bad(format!("region `{text}` has a zero width or height; both must be > 0")));
            }
            return Ok(Self::Percent { x, y, w, h });
        }
        let [x, y, w, h] = four(text, |v| integer(v, "region value", REGION_FORMS))?;
        if w == 0 || h == 0 {
            return Err(bad(format!("region `{text}` has a zero width or height; both must be > 0")));
        }
        Ok(Self::Pixels { x, y, w, h })
    }

    /// The region in pixels of a `width` × `height` image, clipped to it as the spec asks;
    /// a region wholly outside the image is an error.
    pub fn resolve(&self, width: u64, height: u64) -> Result<Rect, GrammarError> {
        let (x, y, w, h) = match *self {
            Self::Full => (0, 0, width, height),
            Self::Square => {
                let side = width.min(height);
                ((width - side) / 2, (height - side) / 2, side, side)
            }
            Self::Pixels { x, y, w, h } => (x, y, w, h),
            // Percentages are rounded to the nearest pixel; a sliver rounds up to one pixel.
            Self::Percent { x, y, w, h } => {
                let px = |v: f64, n: u64| (v / 100.0 * n as f64).round() as u64;
                (px(x, width), px(y, height), px(w, width).max(1), px(h, height).max(1))
            }
        };
        if x >= width || y >= height {
            return Err(bad(format!(
                "region starts at ({x}, {y}), outside the {width} x {height} image; x must be < {width} and y < {height}"
            )));
        }
        Ok(Rect { x, y, w: w.min(width - x), h: h.min(height - y) })
    }

    /// The canonical text, for cache keys and validators.
    pub fn canonical(&self) -> String {
        match *self {
            Self::Full => "full".into(),
            Self::Square => "square".into(),
            Self::Pixels { x, y, w, h } => format!("{x},{y},{w},{h}"),
            Self::Percent { x, y, w, h } => format!("pct:{x},{y},{w},{h}"),
        }
    }
}

impl Size {
    pub fn parse(text: &str) -> Result<Self, GrammarError> {
        let (upscale, rest) = match text.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let kind = if rest == "max" {
            SizeKind::Max
        } else if let Some(n) = rest.strip_prefix("pct:") {
            let n = non_negative(n, "size percentage", SIZE_FORMS)?;
            if n <= 0.0 {
                return Err(bad(format!("size `{text}` is zero percent; it must be > 0")));
            }
            SizeKind::Percent(n)
        } else {
            let (confined, wh) = match rest.strip_prefix('!') {
                Some(wh) => (true, wh),
                None => (false, rest),
            };
            let Some((w, h)) = wh.split_once(',') else {
                return Err(bad(format!("size `{text}` is not valid; {SIZE_FORMS}")));
            };
            let w = (!w.is_empty()).then(|| integer(w, "size width", SIZE_FORMS)).transpose()?;
            let h = (!h.is_empty()).then(|| integer(h, "size height", SIZE_FORMS)).transpose()?;
            if w == Some(0) || h == Some(0) {
                return Err(bad(format!("size `{text}` has a zero width or height; both must be > 0")));
            }
            match (confined, w, h) {
                (false, Some(w), None) => SizeKind::Width(w),
                (false, None, Some(h)) => SizeKind::Height(h),
                (false, Some(w), Some(h)) => SizeKind::Exact(w, h),
                (true, Some(w), Some(h)) => SizeKind::Confined(w, h),
                _ => return Err(bad(format!("size `{text}` is not valid; {SIZE_FORMS}"))),
            }
        };
        Ok(Self { upscale, kind })
    }

    /// The output width and height for a region of `rw` × `rh` pixels. Without `^` the
    /// result may not be larger than the region.
    pub fn resolve(&self, rw: u64, rh: u64) -> Result<(u64, u64), GrammarError> {
        let scaled = |n: u64, f: f64| ((n as f64 * f).round() as u64).max(1);
        let (w, h) = match self.kind {
            SizeKind::Max => (rw, rh),
            SizeKind::Width(w) => (w, scaled(rh, w as f64 / rw as f64)),
            SizeKind::Height(h) => (scaled(rw, h as f64 / rh as f64), h),
            SizeKind::Exact(w, h) => (w, h),
            SizeKind::Confined(w, h) => {
                let mut f = (w as f64 / rw as f64).min(h as f64 / rh as f64);
                if !self.upscale {
                    f = f.min(1.0);
                }
                (scaled(rw, f).min(w), scaled(rh, f).min(h))
            }
            SizeKind::Percent(p) => (scaled(rw, p / 100.0), scaled(rh, p / 100.0)),
        };
        if !self.upscale && (w > rw || h > rh) {
            return Err(bad(format!(
                "size {w} x {h} is larger than the {rw} x {rh} region; prefix the size with `^` to allow upscaling"
            )));
        }
        Ok((w, h))
    }

    pub fn canonical(&self) -> String {
        let up = if self.upscale { "^" } else { "" };
        let body = match self.kind {
            SizeKind::Max => "max".into(),
            SizeKind::Width(w) => format!("{w},"),
            SizeKind::Height(h) => format!(",{h}"),
            SizeKind::Exact(w, h) => format!("{w},{h}"),
            SizeKind::Confined(w, h) => format!("!{w},{h}"),
            SizeKind::Percent(p) => format!("pct:{p}"),
        };
        format!("{up}{body}")
    }
}

impl Rotation {
    pub fn parse(text: &str) -> Result<Self, GrammarError> {
        let (mirror, degrees) = match text.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let value = non_negative(degrees, "rotation", ROTATIONS)?;
        if value > 360.0 {
            return Err(bad(format!("rotation `{text}` is more than 360 degrees; {ROTATIONS}")));
        }
        if value % 90.0 != 0.0 {
            return Err(bad(format!("rotation by `{text}` degrees is not supported; {ROTATIONS}")));
        }
        Ok(Self { mirror, quarter_turns: ((value / 90.0) as u8) % 4 })
    }
}

impl fmt::Display for Rotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", if self.mirror { "!" } else { "" }, u16::from(self.quarter_turns) * 90)
    }
}

impl Quality {
    pub fn parse(text: &str) -> Result<Self, GrammarError> {
        match text {
            "default" => Ok(Self::Default),
            "color" => Ok(Self::Color),
            "gray" => Ok(Self::Gray),
            "bitonal" => Ok(Self::Bitonal),
            other => Err(bad(format!("quality `{other}` is not supported; {QUALITIES}"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Color => "color",
            Self::Gray => "gray",
            Self::Bitonal => "bitonal",
        }
    }
}

impl ImageFormat {
    pub fn parse(text: &str) -> Result<Self, GrammarError> {
        match text {
            "png" => Ok(Self::Png),
            "jpg" => Ok(Self::Jpg),
            other => Err(bad(format!("format `{other}` is not supported; {FORMATS}"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpg => "jpg",
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpg => "image/jpeg",
        }
    }
}

impl ImageRequest {
    /// Parses the four path segments after the identifier (the last is `quality.format`).
    pub fn parse(region: &str, size: &str, rotation: &str, quality_format: &str) -> Result<Self, GrammarError> {
        let Some((quality, format)) = quality_format.rsplit_once('.') else {
            return Err(bad(format!(
                "`{quality_format}` must be quality.format, e.g. default.png; qualities {QUALITIES}; formats {FORMATS}"
            )));
        };
        Ok(Self {
            region: Region::parse(region)?,
            size: Size::parse(size)?,
            rotation: Rotation::parse(rotation)?,
            quality: Quality::parse(quality)?,
            format: ImageFormat::parse(format)?,
        })
    }

    /// The canonical form of the request, for cache keys and validators.
    pub fn canonical(&self) -> String {
        format!(
            "{}/{}/{}/{}.{}",
            self.region.canonical(),
            self.size.canonical(),
            self.rotation,
            self.quality.name(),
            self.format.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_and_clip() {
        assert_eq!(Region::parse("full").unwrap().resolve(10, 6).unwrap(), Rect { x: 0, y: 0, w: 10, h: 6 });
        assert_eq!(Region::parse("square").unwrap().resolve(10, 6).unwrap(), Rect { x: 2, y: 0, w: 6, h: 6 });
        assert_eq!(Region::parse("square").unwrap().resolve(5, 9).unwrap(), Rect { x: 0, y: 2, w: 5, h: 5 });
        assert_eq!(Region::parse("8,4,5,5").unwrap().resolve(10, 6).unwrap(), Rect { x: 8, y: 4, w: 2, h: 2 });
        assert_eq!(Region::parse("pct:50,50,100,10").unwrap().resolve(10, 6).unwrap(), Rect { x: 5, y: 3, w: 5, h: 1 });
        for bad in ["", "1,2,3", "1,2,3,0", "a,1,1,1", "-1,0,1,1", "pct:1,1,0,1", "pct:x,1,1,1", "1.5,0,1,1"] {
            assert!(Region::parse(bad).is_err(), "{bad}");
        }
        assert!(Region::parse("10,0,1,1").unwrap().resolve(10, 6).is_err());
        assert!(Region::parse("0,6,1,1").unwrap().resolve(10, 6).is_err());
    }

    #[test]
    fn sizes_keep_aspect_and_refuse_upscaling_without_caret() {
        let r = |s: &str| Size::parse(s).unwrap().resolve(200, 100);
        assert_eq!(r("max").unwrap(), (200, 100));
        assert_eq!(r("100,").unwrap(), (100, 50));
        assert_eq!(r(",25").unwrap(), (50, 25));
        assert_eq!(r("30,40").unwrap(), (30, 40));
        assert_eq!(r("!50,50").unwrap(), (50, 25));
        assert_eq!(r("!500,500").unwrap(), (200, 100));
        assert_eq!(r("^!500,500").unwrap(), (500, 250));
        assert_eq!(r("pct:25").unwrap(), (50, 25));
        assert_eq!(r("^pct:150").unwrap(), (300, 150));
        assert_eq!(r("^400,").unwrap(), (400, 200));
        assert_eq!(r("^max").unwrap(), (200, 100));
        assert!(r("400,").is_err());
        assert!(r("pct:150").is_err());
        for bad in ["", ",", "0,", ",0", "!10,", "pct:0", "pct:", "big", "1,2,3", "^"] {
            assert!(Size::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rotations_are_quarter_turns_with_optional_mirror() {
        assert_eq!(Rotation::parse("0").unwrap(), Rotation { mirror: false, quarter_turns: 0 });
        assert_eq!(Rotation::parse("!270").unwrap(), Rotation { mirror: true, quarter_turns: 3 });
        assert_eq!(Rotation::parse("90.0").unwrap(), Rotation { mirror: false, quarter_turns: 1 });
        assert_eq!(Rotation::parse("360").unwrap(), Rotation { mirror: false, quarter_turns: 0 });
        for bad in ["45", "-90", "450", "x", "", "!"] {
            assert!(Rotation::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn qualities_formats_and_whole_requests() {
        let req = ImageRequest::parse("full", "max", "0", "default.png").unwrap();
        assert_eq!((req.quality, req.format), (Quality::Default, ImageFormat::Png));
        assert_eq!(req.canonical(), "full/max/0/default.png");
        assert!(ImageRequest::parse("full", "max", "0", "default").is_err());
        assert!(ImageRequest::parse("full", "max", "0", "default.webp").is_err());
        assert!(ImageRequest::parse("full", "max", "0", "sepia.png").is_err());
        assert_eq!(ImageRequest::parse("full", "max", "0", "gray.jpg").unwrap().format, ImageFormat::Jpg);
    }
}
