//! The query of an EDR data route, typed: its names checked and its values deserialized at
//! the HTTP edge (`http::query`), each read against the collection it asks of by
//! `edr::query::plan`.

use serde::Deserialize;

/// An EDR query (`position`, `area`, `cube`, `radius`); each value is read against the
/// collection it asks of (`edr::query::plan`).
#[derive(Debug, Default, Deserialize)]
pub struct EdrQuery {
    pub coords: Option<String>,
    pub bbox: Option<String>,
    pub within: Option<String>,
    #[serde(rename = "within-units")]
    pub within_units: Option<String>,
    pub datetime: Option<String>,
    pub z: Option<String>,
    #[serde(rename = "parameter-name")]
    pub parameter_name: Option<String>,
    /// OWSLib's spelling of `parameter-name`.
    pub parameter_names: Option<String>,
    pub crs: Option<String>,
    pub f: Option<String>,
}

impl EdrQuery {
    /// The names a query route takes.
    pub const NAMES: &'static [&'static str] =
        &["coords", "bbox", "within", "within-units", "datetime", "z", "parameter-name", "parameter_names", "crs", "f"];
}
