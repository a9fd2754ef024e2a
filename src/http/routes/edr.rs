//! `/edr`: OGC API – Environmental Data Retrieval 1.1 (`docs/edr.md`): the discovery
//! documents and the position, area, cube and radius queries of each collection (and of
//! each version of a versioned dataset's collections).

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::auth::Identity;
use crate::edr::collection::Collection;
use crate::edr::params::EdrQuery;
use crate::edr::query::{self, Format, QueryType};
use crate::edr::{documents, encode, read};
use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Varies};
use crate::http::encode::json_response;
use crate::http::extract::{Params, base_url};
use crate::http::revalidation::Revalidation;
use crate::http::routes::geotiff;
use crate::http::state::AppState;
use crate::http::{body, budget_body};

/// Answers that may take more text than this are sent in pieces as they are written.
const WHOLE_BELOW: u128 = 1 << 20;

/// Discovery documents take `f=json` (as OWSLib sends it) and nothing else.
fn document_params(raw: Option<&str>) -> Result<()> {
    let params = Params::parse(raw, &["f"])?;
    match params.get("f") {
        None | Some("json" | "application/json") => Ok(()),
        Some(other) => Err(Error::BadRequest(format!("f `{other}` is not a format of this document; allowed: json"))),
    }
}

fn document(state: &AppState, value: &impl serde::Serialize) -> Response {
    json_response(value, &state.config.http.cache_control)
}

/// `GET /edr` and `/edr/`: the landing page.
pub async fn landing(State(state): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Result<Response> {
    document_params(q.as_deref())?;
    Ok(document(&state, &documents::landing(&base_url(&headers))))
}

/// `GET /edr/api`: the OpenAPI 3.0 description of `/edr`.
pub async fn api(State(state): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Result<Response> {
    document_params(q.as_deref())?;
    let mut response = document(&state, &documents::openapi(&base_url(&headers)));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(documents::OPENAPI_TYPE));
    Ok(response)
}

/// `GET /edr/conformance`.
pub async fn conformance(State(state): State<AppState>, RawQuery(q): RawQuery) -> Result<Response> {
    document_params(q.as_deref())?;
    Ok(document(&state, &documents::conformance()))
}

/// `GET /edr/collections`: every collection of every dataset the caller may read (a
/// dataset whose storage fails is left out and logged, not a failure of the list).
pub async fn collections(
    State(state): State<AppState>,
    identity: Option<Extension<Identity>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    document_params(q.as_deref())?;
    let caller = identity.and_then(|Extension(Identity(caller))| caller);
    let mut all = Vec::new();
    for dataset in state.catalog.datasets().filter(|d| state.auth.may_read(caller.as_ref(), &d.name)) {
        let name = dataset.name.to_string();
        let found = async {
            let dataset = state.catalog.dataset(&name).await?;
            state.collections.of_dataset(&state.catalog, &state.coords, &dataset, &name).await
        };
        match found.await {
            Ok(found) => all.extend(found),
            Err(e) => tracing::warn!(dataset = name, error = %e, "EDR: the dataset's collections cannot be listed"),
        }
    }
    Ok(document(&state, &documents::collections(&base_url(&headers), &all)))
}

async fn find(state: &AppState, cid: &str, instance: Option<&str>) -> Result<Arc<Collection>> {
    crate::edr::find(&state.catalog, &state.coords, &state.collections, cid, instance).await
}

/// `GET /edr/collections/{cid}`.
pub async fn collection(
    State(state): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    document_params(q.as_deref())?;
    let c = find(&state, &cid, None).await?;
    let href = format!("{}/edr/collections/{cid}", base_url(&headers));
    Ok(document(&state, &documents::collection(&c, None, &href)))
}

/// `GET /edr/collections/{cid}/instances`: the branches and tags of a versioned dataset.
pub async fn instances(
    State(state): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    document_params(q.as_deref())?;
    let c = find(&state, &cid, None).await?;
    let (name, _) = crate::edr::collection::parse_id(&cid);
    let versions = state.catalog.versions(name).await?;
    // Branch heads move: revalidate every time.
    Ok(json_response(&documents::instances(&base_url(&headers), &c, &versions), "no-cache"))
}

/// `GET /edr/collections/{cid}/instances/{ref}`: one version's collection document.
pub async fn instance(
    State(state): State<AppState>,
    Path((cid, version)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    document_params(q.as_deref())?;
    let c = find(&state, &cid, Some(&version)).await?;
    let href = format!("{}/edr/collections/{cid}/instances/{version}", base_url(&headers));
    Ok(document(&state, &documents::collection(&c, Some(&version), &href)))
}

/// `GET /edr/collections/{cid}/{query}`.
pub async fn query(
    State(state): State<AppState>,
    Path((cid, query)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let query = QueryType::parse(&query)?;
    let collection = find(&state, &cid, None).await?;
    Answer { state: &state, collection: &collection, query }.respond(raw.as_deref(), &headers).await
}

/// `GET /edr/collections/{cid}/instances/{ref}/{query}`.
pub async fn instance_query(
    State(state): State<AppState>,
    Path((cid, version, query)): Path<(String, String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let query = QueryType::parse(&query)?;
    let collection = find(&state, &cid, Some(&version)).await?;
    Answer { state: &state, collection: &collection, query }.respond(raw.as_deref(), &headers).await
}

/// One query of one collection.
struct Answer<'a> {
    state: &'a AppState,
    collection: &'a Collection,
    query: QueryType,
}

impl Answer<'_> {
    async fn respond(&self, raw: Option<&str>, headers: &HeaderMap) -> Result<Response> {
        let (state, collection) = (self.state, self.collection);
        let params: EdrQuery = crate::http::query::parse(raw)?;
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let format = Format::choose(params.f.as_deref(), accept)?;
        if format == Format::NetCdf && !matches!(self.query, QueryType::Area | QueryType::Cube) {
            return Err(Error::BadRequest(format!(
                "f=NetCDF answers area and cube queries (a Grid coverage); a {} query answers CoverageJSON, GeoJSON or CSV",
                self.query.name()
            )));
        }
        if format == Format::GeoTiff && self.query != QueryType::Cube {
            return Err(Error::BadRequest(format!(
                "f=GeoTIFF answers cube queries (one parameter, its steps as bands); a {} query answers CoverageJSON, GeoJSON or CSV{}",
                self.query.name(),
                if self.query == QueryType::Area { " or NetCDF" } else { "" }
            )));
        }
        let plan = query::plan(collection, self.query, &params)?;
        let limits = &state.config.limits;
        if plan.values() > u128::from(limits.max_reduce_cells) {
            return Err(Error::OverLimit(format!(
                "the query would read {} values, more than limits.max_reduce_cells ({}); narrow datetime, z, parameter-name or the geometry",
                plan.values(),
                limits.max_reduce_cells
            )));
        }
        let size = encode::size_bound(&plan, format);
        if size > u128::from(limits.max_response_bytes) {
            let what = if format == Format::GeoTiff { "GeoTIFF" } else { "EDR text" };
            return Err(Error::TooLarge { what, size, limit: limits.max_response_bytes });
        }
        let mut tag = EtagBuilder::new("edr");
        tag.text(&collection.dataset.name).text(&collection.id).text(self.query.name());
        tag.text(raw.unwrap_or("")).text(format.media_type());
        plan.parameters.iter().flat_map(|p| &p.digests).for_each(|d| _ = tag.digest(*d));
        let varies = Varies { accept: params.f.is_none(), encoding: true };
        let revalidation = Revalidation::new(tag, &state.config, varies);
        let dataset = &collection.dataset;
        if let Some(unchanged) =
            revalidation.before_read(headers, read::versions(&state.catalog, dataset, &plan)).await?
        {
            return Ok(unchanged);
        }
        // The values read stay held while the text is written from them, piece by piece.
        let (coverages, versions, held) = read::read(&state.catalog, dataset, collection, &plan).await?;
        let domain = read::Domain::of(collection, &plan);
        let answer = Arc::new(encode::Answer { plan, domain, coverages });
        let text = match format {
            Format::CoverageJson { .. } => encode::coverage_json(collection, answer),
            Format::GeoJson => encode::geo_json(answer),
            Format::Csv => encode::csv(answer),
            Format::GeoTiff => {
                let (raster, placement) = crate::edr::geotiff::image(collection, &answer)?;
                drop(answer);
                let name = self.query.name();
                let body = async move {
                    let cog = geotiff::written(raster, placement).await?;
                    Ok(budget_body::holding(geotiff::respond(cog, name), held))
                };
                return revalidation.respond(headers, &versions, body).await;
            }
            Format::NetCdf => {
                let mut file = crate::edr::netcdf::file(collection, answer)?;
                let body = async move {
                    let length = file.length;
                    let response = (
                        [
                            (header::CONTENT_TYPE, format.media_type().to_owned()),
                            (header::CONTENT_LENGTH, length.to_string()),
                            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{}.nc\"", self.query.name())),
                        ],
                        body::pieces(move || file.next_piece()),
                    )
                        .into_response();
                    Ok(budget_body::holding(response, held))
                };
                return revalidation.respond(headers, &versions, body).await;
            }
        };
        let body = async move {
            // Small answers whole (with a length, and kept by the response cache).
            let body = if size <= WHOLE_BELOW {
                Body::from(text.whole())
            } else {
                let mut text = text;
                body::pieces(move || text.next_piece())
            };
            let response = ([(header::CONTENT_TYPE, format.media_type())], body).into_response();
            Ok(budget_body::holding(response, held))
        };
        revalidation.respond(headers, &versions, body).await
    }
}
