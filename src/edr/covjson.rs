//! The CoverageJSON objects of an EDR answer as types
//! (<https://docs.ogc.org/cs/21-069r2/21-069r2.html>): the `referencing` of the axes and the
//! `parameters`, serialized by serde in the order written here. The domain axes and ranges
//! are written as text by [`encode`](crate::edr::encode), straight from the values.

use serde::Serialize;

/// Text in a language: `{"en": …}`.
#[derive(Debug, Serialize)]
pub struct I18n<'a> {
    pub en: &'a str,
}

/// One member of `referencing`: the reference system of some coordinates.
#[derive(Debug, Serialize)]
pub struct Referencing<'a> {
    pub coordinates: &'static [&'static str],
    pub system: System<'a>,
}

/// A reference system, by its `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type")]
pub enum System<'a> {
    #[serde(rename = "GeographicCRS")]
    Geographic { id: &'static str },
    /// A grid's native CRS: by URI, else by WKT.
    #[serde(rename = "ProjectedCRS")]
    Projected {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        wkt: Option<String>,
    },
    #[serde(rename = "TemporalRS")]
    Temporal { calendar: String },
    #[serde(rename = "VerticalCRS")]
    Vertical { cs: VerticalCs<'a> },
}

#[derive(Debug, Serialize)]
pub struct VerticalCs<'a> {
    #[serde(rename = "csAxes")]
    pub cs_axes: [VerticalAxis<'a>; 1],
}

#[derive(Debug, Serialize)]
pub struct VerticalAxis<'a> {
    pub name: I18n<'a>,
    /// `up` or `down`.
    pub direction: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<AxisUnit<'a>>,
}

#[derive(Debug, Serialize)]
pub struct AxisUnit<'a> {
    pub symbol: &'a str,
}

/// A member of `parameters`.
#[derive(Debug, Serialize)]
pub struct Parameter<'a> {
    /// `Parameter`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(rename = "observedProperty")]
    pub observed_property: ObservedProperty<'a>,
    /// The label, where it is not the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<I18n<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit<'a>>,
}

#[derive(Debug, Serialize)]
pub struct ObservedProperty<'a> {
    pub label: I18n<'a>,
    /// The CF standard name's URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Unit<'a> {
    pub label: I18n<'a>,
    pub symbol: &'a str,
}
