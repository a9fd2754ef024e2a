//! Query parameters as typed values, parsed once at the edge: a route's query is checked
//! against the names its type takes (an unknown or repeated name answered as
//! [`Params::parse`] answers it), then deserialized by serde into the route's own struct —
//! as axum's `Query<T>` does — each bad value a problem naming its parameter and what is
//! allowed. The value types here ([`Finite`], [`Window`]) carry the rules several routes
//! share.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};

use crate::analysis::reduction::ReduceQuery;
use crate::edr::params::EdrQuery;
use crate::error::{Error, Result};
use crate::http::extract::Params;
use crate::images::maps::geometry::Resampling;
use crate::images::render::Colormap;

/// The names a query type takes (every field, as spelt in the URL).
pub trait Names {
    const NAMES: &'static [&'static str];
}

/// A route's query, typed: `Query<T>` in a handler's arguments.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Names> axum::extract::FromRequestParts<S> for Query<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self> {
        parse(parts.uri.query()).map(Self)
    }
}

/// Parses `raw` (the URL's query, undecoded) into `T`.
pub fn parse<T: DeserializeOwned + Names>(raw: Option<&str>) -> Result<T> {
    Params::parse(raw, T::NAMES)?;
    let pairs = url::form_urlencoded::parse(raw.unwrap_or("").as_bytes());
    serde_path_to_error::deserialize(serde_urlencoded::Deserializer::new(pairs)).map_err(|e| {
        let name = e.path().to_string();
        let why = e.inner().to_string();
        // A value type's message names its parameter already, or is said of it here.
        if why.starts_with(&name) || why.contains(&format!("`{name}`")) {
            Error::BadRequest(why)
        } else {
            Error::BadRequest(format!("`{name}` {why}"))
        }
    })
}

/// A finite number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finite(pub f64);

impl<'de> Deserialize<'de> for Finite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Self)
            .ok_or_else(|| D::Error::custom(format!("must be a finite number, got `{text}`")))
    }
}

/// `true`/`false` (or `1`/`0`); absent is false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "false" | "0" => Ok(Self(false)),
            "true" | "1" => Ok(Self(true)),
            _ => Err(D::Error::custom(format!("must be true or false, got `{text}`"))),
        }
    }
}

impl<'de> Deserialize<'de> for Colormap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(|e| D::Error::custom(e.to_string()))
    }
}

impl<'de> Deserialize<'de> for Resampling {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| {
            D::Error::custom(format!("resampling `{text}` is not supported; allowed: nearest, bilinear"))
        })
    }
}

/// `vmin` and `vmax` (slices, chunks, IIIF and map tiles alike): numbers, `vmin` not
/// above `vmax` — checked by [`Window::checked`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub vmin: Option<Finite>,
    pub vmax: Option<Finite>,
}

impl Window {
    /// Whether `vmin` or `vmax` was given.
    pub fn given(self) -> bool {
        self.vmin.is_some() || self.vmax.is_some()
    }

    /// The window, `vmin` not above `vmax`.
    pub fn checked(self) -> Result<(Option<f64>, Option<f64>)> {
        let (vmin, vmax) = (self.vmin.map(|f| f.0), self.vmax.map(|f| f.0));
        if let (Some(lo), Some(hi)) = (vmin, vmax)
            && lo > hi
        {
            return Err(Error::BadRequest(format!("`vmin` ({lo}) must not be greater than `vmax` ({hi})")));
        }
        Ok((vmin, vmax))
    }
}

/// How decoded values are drawn or encoded: `format`, the window and `colormap`.
#[derive(Debug, Clone, Default)]
pub struct RenderQuery {
    pub format: Option<String>,
    pub window: Window,
    pub colormap: Option<Colormap>,
}

/// The fields each query type spells out (serde's `flatten` would lose the name of a bad
/// one), gathered.
macro_rules! gathered {
    ($t:ty, window) => {
        impl $t {
            pub fn window(&self) -> Window {
                Window { vmin: self.vmin, vmax: self.vmax }
            }
        }
    };
    ($t:ty, render, $colormap:expr) => {
        gathered!($t, window);
        impl $t {
            pub fn render(&self) -> RenderQuery {
                RenderQuery { format: self.format.clone(), window: self.window(), colormap: $colormap(self) }
            }
        }
    };
}

/// `/v1/slice`.
#[derive(Debug, Deserialize)]
pub struct SliceQuery {
    pub s: Option<String>,
    pub sel: Option<String>,
    pub format: Option<String>,
    pub vmin: Option<Finite>,
    pub vmax: Option<Finite>,
    pub colormap: Option<Colormap>,
}

impl Names for SliceQuery {
    const NAMES: &'static [&'static str] = &["s", "sel", "format", "vmin", "vmax", "colormap"];
}

gathered!(SliceQuery, render, |q: &SliceQuery| q.colormap);

/// `/v1/chunks` (a listing).
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    pub s: Option<String>,
    #[serde(default)]
    pub inner: Flag,
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

impl Names for ListQuery {
    const NAMES: &'static [&'static str] = &["s", "inner", "limit", "cursor"];
}

/// `/v1/chunk` (one chunk, stored or decoded).
#[derive(Debug, Deserialize)]
pub struct ChunkQuery {
    pub c: Option<String>,
    #[serde(default)]
    pub decoded: Flag,
    pub format: Option<String>,
    pub vmin: Option<Finite>,
    pub vmax: Option<Finite>,
    pub colormap: Option<Colormap>,
}

impl Names for ChunkQuery {
    const NAMES: &'static [&'static str] = &["c", "decoded", "format", "vmin", "vmax"];
}

gathered!(ChunkQuery, render, |_: &ChunkQuery| None);

/// A IIIF image: the window and colormap, and an OME-Zarr composite's choice of channels.
#[derive(Debug, Deserialize)]
pub struct ImageQuery {
    pub vmin: Option<Finite>,
    pub vmax: Option<Finite>,
    pub colormap: Option<Colormap>,
    pub channels: Option<String>,
    pub windows: Option<String>,
    pub colors: Option<String>,
}

impl Names for ImageQuery {
    const NAMES: &'static [&'static str] = &["vmin", "vmax", "colormap", "channels", "windows", "colors"];
}

gathered!(ImageQuery, window);

/// A map tile.
#[derive(Debug, Deserialize)]
pub struct TileQuery {
    pub vmin: Option<Finite>,
    pub vmax: Option<Finite>,
    pub colormap: Option<Colormap>,
    #[serde(default)]
    pub resampling: Resampling,
}

impl Names for TileQuery {
    const NAMES: &'static [&'static str] = &["vmin", "vmax", "colormap", "resampling"];
}

gathered!(TileQuery, window);

/// A map's `tilejson.json`: a tile's query and the tiles' `format`.
#[derive(Debug, Deserialize)]
pub struct TileJsonQuery {
    pub vmin: Option<Finite>,
    pub vmax: Option<Finite>,
    pub colormap: Option<Colormap>,
    #[serde(default)]
    pub resampling: Resampling,
    pub format: Option<String>,
}

impl Names for TileJsonQuery {
    const NAMES: &'static [&'static str] = &["vmin", "vmax", "colormap", "format", "resampling"];
}

gathered!(TileJsonQuery, window);

// The domain's own queries: their names as the routes check them.
impl Names for ReduceQuery {
    const NAMES: &'static [&'static str] = ReduceQuery::NAMES;
}

impl Names for EdrQuery {
    const NAMES: &'static [&'static str] = EdrQuery::NAMES;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_value_names_its_parameter() {
        let err = |raw: &str| parse::<SliceQuery>(Some(raw)).unwrap_err().to_string();
        assert!(err("vmin=abc").contains("`vmin` must be a finite number, got `abc`"), "{}", err("vmin=abc"));
        assert!(err("vmax=inf").contains("`vmax` must be a finite number"));
        assert!(err("colormap=jet").contains("unknown colormap `jet`; allowed:"));
        assert!(err("nope=1").contains("unknown query parameter `nope`"));
        assert!(err("s=1&s=2").contains("given more than once"));
        let q = parse::<SliceQuery>(Some("s=0:2&vmin=1&vmax=2&colormap=magma")).unwrap();
        assert_eq!(q.s.as_deref(), Some("0:2"));
        assert_eq!(q.window().checked().unwrap(), (Some(1.0), Some(2.0)));
        assert!(parse::<SliceQuery>(Some("vmin=3&vmax=2")).unwrap().window().checked().is_err());
        let t = parse::<TileQuery>(Some("resampling=bilinear")).unwrap();
        assert_eq!(t.resampling, Resampling::Bilinear);
        let bad = parse::<TileQuery>(Some("resampling=cubic")).unwrap_err().to_string();
        assert!(bad.contains("resampling `cubic` is not supported; allowed: nearest, bilinear"), "{bad}");
        let e = parse::<EdrQuery>(Some("within-units=km&parameter-name=a,b")).unwrap();
        assert_eq!((e.within_units.as_deref(), e.parameter_name.as_deref()), (Some("km"), Some("a,b")));
    }

    #[test]
    fn the_names_are_the_fields() {
        // Every name deserializes into its type (none is refused as unknown by serde),
        // and a query with all of them at once is accepted.
        fn all<T: DeserializeOwned + Names>(value: &str) {
            let raw: Vec<String> = T::NAMES.iter().map(|n| format!("{n}={value}")).collect();
            assert!(parse::<T>(Some(&raw.join("&"))).is_ok(), "{}", raw.join("&"));
        }
        fn each<T: DeserializeOwned + Names>(values: &[(&str, &str)]) {
            for name in T::NAMES {
                let value = values.iter().find(|(n, _)| n == name).map_or("x", |(_, v)| v);
                assert!(parse::<T>(Some(&format!("{name}={value}"))).is_ok(), "{name}");
            }
        }
        let values = [("vmin", "1"), ("vmax", "2"), ("colormap", "gray"), ("resampling", "nearest")];
        each::<SliceQuery>(&values);
        each::<ReduceQuery>(&values);
        each::<TileQuery>(&values);
        each::<TileJsonQuery>(&values);
        each::<EdrQuery>(&values);
        let values = [values.as_slice(), &[("inner", "true"), ("decoded", "1")]].concat();
        each::<ListQuery>(&values);
        each::<ChunkQuery>(&values);
        each::<ImageQuery>(&values);
        all::<EdrQuery>("x");
    }
}
