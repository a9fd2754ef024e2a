//! The EDR discovery documents: landing page, conformance, collections, one collection,
//! instances (typed in [`schema`]), and the OpenAPI 3.0 description of `/edr` — with the
//! members OGC API – EDR 1.1 defines and edr-pydantic checks (`crs` a list, date-times with
//! a zone, vertical values as strings with a `vrs`).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zarrd_core::coords::geo::crs84_longitude;
use zarrd_core::coords::labels::Kind;

use crate::edr::collection::Collection;
use crate::edr::encode::calendar_name;
use crate::edr::query::{DISTANCE_UNITS, QueryType};
use crate::edr::schema::{
    self, Conformance, CrsDetail, DataQuery, Extent, Instances, Landing, Link, ObservedProperty, ParameterName,
    QueryLink, Spatial, Symbol, Temporal, Unit, Variables, VerticalExtent,
};

/// The conformance classes zarrd meets.
pub const CONFORMANCE: [&str; 8] = [
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/core",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/collections",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/json",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/covjson",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/queries",
    "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/instances",
];

/// The output formats of every query.
pub const OUTPUT_FORMATS: [&str; 3] = ["CoverageJSON", "GeoJSON", "CSV"];

/// Those of an area query.
pub const GRID_OUTPUT_FORMATS: [&str; 4] = ["CoverageJSON", "GeoJSON", "CSV", "NetCDF"];
/// Those of a cube query, and of a collection (which offers them all).
pub const CUBE_OUTPUT_FORMATS: [&str; 5] = ["CoverageJSON", "GeoJSON", "CSV", "NetCDF", "GeoTIFF"];

/// The media type of the OpenAPI document, as OWSLib looks for it.
pub const OPENAPI_TYPE: &str = "application/vnd.oai.openapi+json;version=3.0";

const CRS84_WKT: &str = "GEOGCRS[\"WGS 84 (CRS84)\",DATUM[\"World Geodetic System 1984\",ELLIPSOID[\"WGS 84\",6378137,298.257223563]],CS[ellipsoidal,2],AXIS[\"geodetic longitude (Lon)\",east,ORDER[1],ANGLEUNIT[\"degree\",0.0174532925199433]],AXIS[\"geodetic latitude (Lat)\",north,ORDER[2],ANGLEUNIT[\"degree\",0.0174532925199433]],ID[\"OGC\",\"CRS84\"]]";

fn link(href: String, rel: &'static str, media: &'static str, title: impl Into<String>) -> Link {
    Link { href, rel, media, title: title.into() }
}

/// The landing page.
pub fn landing(base: &str) -> Landing {
    Landing {
        title: "zarrd",
        description: "Zarr arrays as OGC API - Environmental Data Retrieval collections",
        links: vec![
            link(format!("{base}/edr"), "self", "application/json", "this document"),
            link(format!("{base}/edr/api"), "service-desc", OPENAPI_TYPE, "the API definition"),
            link(format!("{base}/edr/conformance"), "conformance", "application/json", "conformance classes"),
            link(format!("{base}/edr/collections"), "data", "application/json", "the collections"),
        ],
    }
}

/// The conformance document.
pub fn conformance() -> Conformance {
    Conformance { conforms_to: &CONFORMANCE }
}

/// The collections document.
pub fn collections<'a>(base: &str, collections: &'a [std::sync::Arc<Collection>]) -> schema::Collections<'a> {
    schema::Collections {
        links: vec![link(format!("{base}/edr/collections"), "self", "application/json", "the collections")],
        collections: collections
            .iter()
            .map(|c| collection(c, None, &format!("{base}/edr/collections/{}", c.id)))
            .collect(),
    }
}

/// One collection document at `href` (`instance`: its id when it is a version of a
/// versioned dataset).
pub fn collection<'a>(c: &'a Collection, instance: Option<&'a str>, href: &str) -> schema::Collection<'a> {
    let mut queries = BTreeMap::new();
    for q in QueryType::ALL {
        let variables = Variables {
            title: format!("{} query", q.name()),
            query_type: q.name(),
            output_formats: Some(match q {
                QueryType::Cube => &CUBE_OUTPUT_FORMATS[..],
                QueryType::Area => &GRID_OUTPUT_FORMATS[..],
                _ => &OUTPUT_FORMATS[..],
            }),
            default_output_format: Some("CoverageJSON"),
            crs_details: Some([CrsDetail { crs: "CRS84", wkt: CRS84_WKT }]),
            within_units: (q == QueryType::Radius).then_some(&DISTANCE_UNITS[..]),
        };
        let link = QueryLink { href: format!("{href}/{}", q.name()), rel: "data", variables };
        queries.insert(q.name(), DataQuery { link });
    }
    if instance.is_none() && c.versioned {
        let variables = Variables {
            title: "instances".into(),
            query_type: "instances",
            output_formats: None,
            default_output_format: None,
            crs_details: None,
            within_units: None,
        };
        let link = QueryLink { href: format!("{href}/instances"), rel: "data", variables };
        queries.insert("instances", DataQuery { link });
    }
    // OWSLib lists the collections that have a link whose rel says `data`.
    let mut links = vec![link(href.to_owned(), "self", "application/json", "this collection")];
    for q in QueryType::ALL {
        let title = format!("{} query", q.name());
        links.push(link(format!("{href}/{}", q.name()), "data", "application/prs.coverage+json", title));
    }
    schema::Collection {
        id: instance.unwrap_or(&c.id),
        title: &c.title,
        links,
        extent: extent(c),
        data_queries: queries,
        crs: crs_list(c),
        output_formats: &CUBE_OUTPUT_FORMATS,
        parameter_names: parameter_names(c),
        distanceunits: &DISTANCE_UNITS,
        description: c.description.as_deref(),
    }
}

/// `crs`: CRS84, and on a projected grid with an EPSG code that code's URI (queries take it
/// for `coords` and `bbox`).
fn crs_list(c: &Collection) -> Vec<String> {
    match c.grid.as_deref().and_then(crate::edr::query::native_uri) {
        Some(uri) => vec!["CRS84".to_owned(), uri],
        None => vec!["CRS84".to_owned()],
    }
}

/// `extent`: the grid's cell edges in CRS84 (its footprint on a grid other than
/// latitude/longitude), the steps, the levels.
fn extent(c: &Collection) -> Extent {
    let [west, south, east, north] = if let Some(found) = &c.grid {
        found.grid.bbox
    } else {
        let lat = zarrd_core::coords::geo::GridAxis::new(&c.lat, false);
        let lon = zarrd_core::coords::geo::GridAxis::new(&c.lon, true);
        let (south, north) = lat.edges();
        let (west, east) = if lon.is_global() {
            (-180.0, 180.0)
        } else {
            (crs84_longitude(lon.edges().0), crs84_longitude(lon.edges().1))
        };
        [west, south, east, north]
    };
    let spatial = Spatial { bbox: [[west, south.max(-90.0), east, north.min(90.0)]], crs: CRS84_WKT };
    let mut temporal = None;
    if let Some(time) = &c.time
        && let Kind::Time(cf) = &time.kind
    {
        let texts: Vec<String> = (0..time.len()).map(|i| crate::edr::read::time_text(time, i)).collect();
        let (first, last) = (texts.first().cloned().unwrap_or_default(), texts.last().cloned().unwrap_or_default());
        let values = if texts.len() <= 10_000 { texts } else { vec![first.clone(), last.clone()] };
        let trs = format!(
            "TIMECRS[\"DateTime\",TDATUM[\"{}\"],CS[TemporalDateTime,1],AXIS[\"Time (T)\",future]]",
            calendar_name(cf.calendar)
        );
        temporal = Some(Temporal { interval: [[first, last]], values, trs });
    }
    let vertical = c.vertical.as_ref().map(|v| {
        let text = |x: f64| ryu::Buffer::new().format_finite(x).trim_end_matches(".0").to_owned();
        let values: Vec<String> = v.labels.values.iter().map(|&x| text(x)).collect();
        let (lo, hi) =
            v.labels.values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let units = v.units.clone().unwrap_or_default();
        VerticalExtent {
            interval: [[text(lo), text(hi)]],
            values,
            vrs: format!(
                "VERTCRS[\"{}\",CS[vertical,1],AXIS[\"{}\",{}],UNIT[\"{units}\",1]]",
                v.name,
                v.name,
                if v.positive.as_deref() == Some("down") { "down" } else { "up" }
            ),
        }
    });
    Extent { spatial, temporal, vertical }
}

/// `parameter_names`: each parameter with its label and unit.
fn parameter_names(c: &Collection) -> BTreeMap<&str, ParameterName<'_>> {
    let mut out = BTreeMap::new();
    for p in &c.parameters {
        let observed_property = ObservedProperty { label: &p.label, id: p.standard_name_uri() };
        let unit = p.units.as_deref().map(|units| Unit {
            label: units,
            symbol: Symbol { value: units, kind: "http://www.opengis.net/def/uom/UCUM/" },
        });
        let parameter = ParameterName {
            kind: "Parameter",
            id: &p.name,
            observed_property,
            description: (p.label != p.name).then_some(p.label.as_str()),
            unit,
        };
        out.insert(p.name.as_str(), parameter);
    }
    out
}

/// The instances document of a versioned dataset's collection: its branches and tags
/// (`versions` as `Catalog::versions` lists them).
pub fn instances<'a>(base: &str, c: &'a Collection, versions: &'a Value) -> Instances<'a> {
    let href = format!("{base}/edr/collections/{}/instances", c.id);
    let mut list = Vec::new();
    for kind in ["branches", "tags"] {
        for v in versions[kind].as_array().into_iter().flatten() {
            if let Some(name) = v["name"].as_str() {
                list.push(collection(c, Some(name), &format!("{href}/{name}")));
            }
        }
    }
    Instances {
        links: vec![link(href, "self", "application/json", "the versions of this collection")],
        instances: list,
    }
}

/// The OpenAPI 3.0 description of `/edr`.
pub fn openapi(base: &str) -> Value {
    let text = |name: &str, description: &str| json!({"name": name, "in": "query", "required": false, "description": description, "schema": {"type": "string"}});
    let common = [
        text("datetime", "an instant (the nearest step) or an interval a/b, a/.., ../b"),
        text("z", "a level (the nearest), an interval a/b, or a list a,b,c"),
        text("parameter-name", "a comma list of parameters (default: all)"),
        text("crs", "CRS84 or EPSG:4326"),
        text("f", "CoverageJSON (default), GeoJSON, CSV, NetCDF (area and cube) or GeoTIFF (cube)"),
    ];
    let cid = json!({"name": "collectionId", "in": "path", "required": true, "schema": {"type": "string"}});
    let answers = json!({
        "200": {"description": "the data", "content": {
            "application/prs.coverage+json": {"schema": {"type": "object"}},
            "application/geo+json": {"schema": {"type": "object"}},
            "text/csv": {"schema": {"type": "string"}},
            "application/x-netcdf": {"schema": {"type": "string", "format": "binary"}}}},
        "400": {"description": "a bad parameter", "content": {"application/problem+json": {"schema": {"type": "object"}}}},
        "404": {"description": "no such collection", "content": {"application/problem+json": {"schema": {"type": "object"}}}},
        "413": {"description": "too large an answer", "content": {"application/problem+json": {"schema": {"type": "object"}}}},
    });
    let document = |summary: &str| json!({"get": {"summary": summary, "parameters": [text("f", "json")], "responses": {"200": {"description": summary, "content": {"application/json": {"schema": {"type": "object"}}}}}}});
    let mut paths = serde_json::Map::new();
    paths.insert("/edr".into(), document("the landing page"));
    paths.insert("/edr/conformance".into(), document("the conformance classes"));
    paths.insert("/edr/collections".into(), document("the collections"));
    let mut one = document("one collection");
    one["get"]["parameters"] = json!([cid, text("f", "json")]);
    paths.insert("/edr/collections/{collectionId}".into(), one);
    for (q, own) in [
        (QueryType::Position, vec![text("coords", "POINT(lon lat) or MULTIPOINT((lon lat), ...)")]),
        (QueryType::Area, vec![text("coords", "POLYGON((lon lat, ...)) or MULTIPOLYGON")]),
        (QueryType::Cube, vec![text("bbox", "minlon,minlat,maxlon,maxlat")]),
        (
            QueryType::Radius,
            vec![
                text("coords", "POINT(lon lat)"),
                text("within", "the radius"),
                text("within-units", "km (default), m or mi"),
            ],
        ),
    ] {
        let mut parameters = vec![cid.clone()];
        parameters.extend(own);
        parameters.extend(common.iter().cloned());
        paths.insert(
            format!("/edr/collections/{{collectionId}}/{}", q.name()),
            json!({"get": {"summary": format!("{} query", q.name()), "parameters": parameters, "responses": answers}}),
        );
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "zarrd OGC API - EDR", "version": "1.1"},
        "servers": [{"url": base}],
        "paths": paths,
    })
}
