//! A viewer's own choice of a composite's channels (query parameters outside IIIF, on image
//! requests of an OME-Zarr image whose channel axis is composited):
//!
//! - `channels=0,2`: the channel indices to draw, in place of the active `omero` channels
//!   (empty: none, a transparent image);
//! - `windows=lo:hi,...`: each drawn channel's window, in the order of `channels`;
//! - `colors=RRGGBB,...`: each drawn channel's colour, in the same order.
//!
//! An empty entry of `windows` or `colors` keeps that channel's `omero` window or colour
//! (so `windows=,` is two entries, both the channels' own); an empty `windows` or `colors`
//! asks nothing.
//! `windows` and `colors` follow the channels drawn, so without `channels` they follow the
//! active `omero` channels. The choice changes the image's [`Drawing`], which is part of the
//! rendered-image cache key and the `ETag`, so two choices never share a tile.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::images::composite::default_color;
use crate::images::iiif::source::{CompositeChannel, Drawing, MAX_CHANNELS};
use crate::images::render::Window;
use zarrd_core::zarr::ome;

/// What the query asks of a composite's channels; all `None` when it asks nothing.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Choice {
    pub channels: Option<Vec<u64>>,
    pub windows: Option<Vec<Option<Window>>>,
    pub colors: Option<Vec<Option<[u8; 3]>>>,
}

fn bad(name: &str, got: &str, form: &str) -> Error {
    Error::BadRequest(format!("`{name}` must be {form}, got `{got}`"))
}

/// `RRGGBB` (hex digits, either case).
fn hex(text: &str) -> Option<[u8; 3]> {
    if text.len() != 6 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&text[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// Comma-separated channel indices; an empty string is no channel at all.
fn entries(text: &str) -> Vec<&str> {
    if text.is_empty() { Vec::new() } else { text.split(',').map(str::trim).collect() }
}

/// A list with one entry per channel drawn (`windows`, `colors`): comma-separated, an empty
/// entry keeps that channel's own; an absent or empty parameter asks nothing.
fn per_channel<T>(
    text: Option<String>,
    name: &str,
    form: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<Vec<Option<T>>>> {
    let Some(text) = text.filter(|text| !text.is_empty()) else { return Ok(None) };
    text.split(',')
        .map(str::trim)
        .map(|e| if e.is_empty() { Ok(None) } else { parse(e).map(Some).ok_or_else(|| bad(name, &text, form)) })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

impl Choice {
    /// Parses `channels`, `windows` and `colors` from the query's values.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        const CHANNELS: &str = "comma-separated channel indices (integers from 0, each at most once), e.g. `0,2`";
        const WINDOWS: &str =
            "comma-separated `lo:hi` windows (finite numbers, lo < hi), one per channel drawn, e.g. `100:2000,0:500`";
        const COLORS: &str = "comma-separated `RRGGBB` hex colours, one per channel drawn, e.g. `FF0000,00FF00`";
        let channels = get("channels")
            .map(|text| {
                let list = entries(&text)
                    .into_iter()
                    .map(|e| e.parse::<u64>().map_err(|_| bad("channels", &text, CHANNELS)))
                    .collect::<Result<Vec<u64>>>()?;
                let mut seen = list.clone();
                seen.sort_unstable();
                seen.dedup();
                if seen.len() != list.len() {
                    return Err(bad("channels", &text, CHANNELS));
                }
                if list.len() > MAX_CHANNELS {
                    return Err(Error::BadRequest(format!(
                        "`channels` lists {} channels; at most {MAX_CHANNELS} are composited",
                        list.len()
                    )));
                }
                Ok(list)
            })
            .transpose()?;
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|f| f.is_finite());
        let windows = per_channel(get("windows"), "windows", WINDOWS, |e| {
            let (lo, hi) = e.split_once(':')?;
            let (lo, hi) = (num(lo)?, num(hi)?);
            (lo < hi).then_some(Window { lo, hi })
        })?;
        let colors = per_channel(get("colors"), "colors", COLORS, hex)?;
        Ok(Self { channels, windows, colors })
    }

    pub fn is_empty(&self) -> bool {
        self.channels.is_none() && self.windows.is_none() && self.colors.is_none()
    }

    /// Applies the choice to a composite over a channel axis of `extent` channels, whose
    /// group has `attributes` (for the `omero` colours and windows of channels that are
    /// not active). Returns the new drawing.
    pub fn apply(&self, drawing: &Drawing, attributes: Option<&Map<String, Value>>, extent: u64) -> Result<Drawing> {
        let Drawing::Composite { axis, channels } = drawing else {
            return Err(Error::internal("a channel choice applies to composites only"));
        };
        let listed = attributes.map(ome::channels).unwrap_or_default();
        let count = usize::try_from(extent).unwrap_or(usize::MAX);
        let own = |i: u64| -> CompositeChannel {
            let index = usize::try_from(i).unwrap_or(usize::MAX);
            let c = listed.get(index).filter(|_| listed.len() == count);
            CompositeChannel {
                index: i,
                color: c.and_then(|c| c.color).unwrap_or_else(|| default_color(index, count)),
                window: c.and_then(|c| c.window).map(|(lo, hi)| Window { lo, hi }),
            }
        };
        let mut chosen: Vec<CompositeChannel> = match &self.channels {
            Some(list) => {
                if let Some(&i) = list.iter().find(|&&i| i >= extent) {
                    return Err(Error::BadRequest(format!(
                        "`channels` names channel {i}, but the channel axis has {extent} channel(s): 0..{}",
                        extent.saturating_sub(1)
                    )));
                }
                list.iter().map(|&i| own(i)).collect()
            }
            None => channels.clone(),
        };
        let n = chosen.len();
        let check = |name: &str, given: usize| {
            if given == n {
                Ok(())
            } else {
                Err(Error::BadRequest(format!(
                    "`{name}` has {given} entries but {n} channel(s) are drawn (those `channels` lists, else the active `omero` channels); give one entry per channel drawn, empty to keep a channel's own"
                )))
            }
        };
        if let Some(windows) = &self.windows {
            check("windows", windows.len())?;
            for (c, w) in chosen.iter_mut().zip(windows) {
                c.window = w.or(c.window);
            }
        }
        if let Some(colors) = &self.colors {
            check("colors", colors.len())?;
            for (c, color) in chosen.iter_mut().zip(colors) {
                c.color = color.unwrap_or(c.color);
            }
        }
        Ok(Drawing::Composite { axis: *axis, channels: chosen })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Choice> {
        Choice::parse(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn parses_and_refuses() {
        let c = parse(&[("channels", "2,0"), ("windows", "1:2,"), ("colors", ",ff0000")]).unwrap();
        assert_eq!(c.channels, Some(vec![2, 0]));
        assert_eq!(c.windows, Some(vec![Some(Window { lo: 1.0, hi: 2.0 }), None]));
        assert_eq!(c.colors, Some(vec![None, Some([255, 0, 0])]));
        assert_eq!(parse(&[("channels", "")]).unwrap().channels, Some(vec![]));
        assert!(parse(&[("windows", ""), ("colors", "")]).unwrap().is_empty());
        assert_eq!(parse(&[("colors", ",")]).unwrap().colors, Some(vec![None, None]));
        for (k, v) in [
            ("channels", "0,0"),
            ("channels", "-1"),
            ("channels", "a"),
            ("windows", "5:1"),
            ("windows", "1"),
            ("windows", "nan:2"),
            ("colors", "red"),
            ("colors", "FF00"),
        ] {
            let e = parse(&[(k, v)]).unwrap_err().to_string();
            assert!(e.contains(&format!("`{k}`")), "{k}={v}: {e}");
        }
    }

    #[test]
    fn applies_over_the_omero_channels() {
        let attrs: Map<String, Value> = serde_json::from_str(
            r#"{"omero": {"channels": [
                {"color": "0000FF", "active": true, "window": {"start": 1, "end": 2}},
                {"color": "00FF00", "active": false, "window": {"start": 3, "end": 4}}]}}"#,
        )
        .unwrap();
        let active = Drawing::Composite {
            axis: 1,
            channels: vec![CompositeChannel {
                index: 0,
                color: [0, 0, 255],
                window: Some(Window { lo: 1.0, hi: 2.0 }),
            }],
        };
        let c = parse(&[("channels", "1"), ("colors", "FFFFFF")]).unwrap();
        let Drawing::Composite { channels, .. } = c.apply(&active, Some(&attrs), 2).unwrap() else { panic!() };
        assert_eq!(
            channels,
            vec![CompositeChannel { index: 1, color: [255, 255, 255], window: Some(Window { lo: 3.0, hi: 4.0 }) }]
        );
        assert!(parse(&[("channels", "2")]).unwrap().apply(&active, Some(&attrs), 2).is_err());
        assert!(parse(&[("windows", "1:2,3:4")]).unwrap().apply(&active, Some(&attrs), 2).is_err());
    }
}
