//! The EDR discovery documents as types (OGC API – EDR 1.1, as edr-pydantic checks them):
//! landing page, conformance, collections, one collection, instances — serialized by
//! serde in the order written here. [`documents`](crate::edr::documents) fills them in;
//! the answers are written by [`encode`](crate::edr::encode).

use std::collections::BTreeMap;

use serde::Serialize;

/// A link of a document.
#[derive(Debug, Serialize)]
pub struct Link {
    pub href: String,
    pub rel: &'static str,
    /// The media type.
    #[serde(rename = "type")]
    pub media: &'static str,
    pub title: String,
}

/// `GET /edr`.
#[derive(Debug, Serialize)]
pub struct Landing {
    pub title: &'static str,
    pub description: &'static str,
    pub links: Vec<Link>,
}

/// `GET /edr/conformance`.
#[derive(Debug, Serialize)]
pub struct Conformance {
    #[serde(rename = "conformsTo")]
    pub conforms_to: &'static [&'static str],
}

/// `GET /edr/collections`.
#[derive(Debug, Serialize)]
pub struct Collections<'a> {
    pub links: Vec<Link>,
    pub collections: Vec<Collection<'a>>,
}

/// `GET /edr/collections/{cid}/instances`: one collection document per branch and tag.
#[derive(Debug, Serialize)]
pub struct Instances<'a> {
    pub links: Vec<Link>,
    pub instances: Vec<Collection<'a>>,
}

/// One collection (or one instance of a versioned dataset's collection).
#[derive(Debug, Serialize)]
pub struct Collection<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub links: Vec<Link>,
    pub extent: Extent,
    /// By query name: `position`, `area`, `cube`, `radius` (and `instances`).
    pub data_queries: BTreeMap<&'static str, DataQuery>,
    /// `CRS84`, then the native CRS's URI on a projected grid with an EPSG code.
    pub crs: Vec<String>,
    pub output_formats: &'static [&'static str],
    /// By parameter name.
    pub parameter_names: BTreeMap<&'a str, ParameterName<'a>>,
    /// EDR 1.1 (A.13): a collection offering `radius` says which `within-units` it takes.
    pub distanceunits: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
}

/// `extent`: where, when and at which levels a collection has values.
#[derive(Debug, Serialize)]
pub struct Extent {
    pub spatial: Spatial,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temporal: Option<Temporal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vertical: Option<VerticalExtent>,
}

#[derive(Debug, Serialize)]
pub struct Spatial {
    /// West, south, east, north in CRS84.
    pub bbox: [[f64; 4]; 1],
    /// WKT.
    pub crs: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Temporal {
    /// The first and last steps (RFC 3339).
    pub interval: [[String; 2]; 1],
    /// Every step, or the first and last of more than 10 000.
    pub values: Vec<String>,
    /// WKT.
    pub trs: String,
}

/// Levels as strings (as edr-pydantic takes them), with their `vrs`.
#[derive(Debug, Serialize)]
pub struct VerticalExtent {
    pub interval: [[String; 2]; 1],
    pub values: Vec<String>,
    /// WKT.
    pub vrs: String,
}

/// One member of `data_queries`.
#[derive(Debug, Serialize)]
pub struct DataQuery {
    pub link: QueryLink,
}

#[derive(Debug, Serialize)]
pub struct QueryLink {
    pub href: String,
    pub rel: &'static str,
    pub variables: Variables,
}

/// What a query takes and answers (only a title and type for `instances`).
#[derive(Debug, Serialize)]
pub struct Variables {
    pub title: String,
    pub query_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_formats: Option<&'static [&'static str]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_output_format: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs_details: Option<[CrsDetail; 1]>,
    /// `radius` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_units: Option<&'static [&'static str]>,
}

#[derive(Debug, Serialize)]
pub struct CrsDetail {
    pub crs: &'static str,
    pub wkt: &'static str,
}

/// A parameter of `parameter_names`.
#[derive(Debug, Serialize)]
pub struct ParameterName<'a> {
    /// `Parameter`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: &'a str,
    #[serde(rename = "observedProperty")]
    pub observed_property: ObservedProperty<'a>,
    /// The label, where it is not the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit<'a>>,
}

#[derive(Debug, Serialize)]
pub struct ObservedProperty<'a> {
    pub label: &'a str,
    /// The CF standard name's URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Unit<'a> {
    pub label: &'a str,
    pub symbol: Symbol<'a>,
}

#[derive(Debug, Serialize)]
pub struct Symbol<'a> {
    pub value: &'a str,
    /// The vocabulary: UCUM's URI.
    #[serde(rename = "type")]
    pub kind: &'static str,
}
