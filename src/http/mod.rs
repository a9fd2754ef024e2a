//! The HTTP edge: the router ([`app`]) over thin route handlers (`routes`: parse with
//! `extract`, call, encode), what they share (`state`), the cross-cutting layers
//! (`middleware`, access control in `auth`, `responses`, route names in `route`), validators and conditional requests
//! (`conditional`), response bodies (`body`, `budget_body`) and formats (`encode`,
//! `listing`), and the connection layer (`server`).

pub mod auth;
pub mod body;
pub mod budget_body;
pub mod compress;
pub mod conditional;
pub mod connections;
pub mod encode;
pub mod extract;
pub mod guard;
pub mod images;
pub mod listing;
pub mod middleware;
pub mod parse_errors;
pub mod query;
pub mod render;
pub mod responses;
pub mod revalidation;
pub mod route;
pub mod routes;
pub mod schema;
pub mod server;
pub mod state;
pub mod table;
pub mod versions;

pub use state::AppState;

use axum::Router;
use axum::routing::{get, post};

/// The zarrd router with all routes of `openapi.yaml` and the cross-cutting layers.
pub fn app(state: AppState) -> Router {
    zarrd_core::ops::metrics::handle();
    // From here a panic anywhere is counted and logged once, with its request id.
    zarrd_core::ops::panics::install_hook();
    let layered = state.clone();
    let router = Router::new()
        .route("/healthz", get(routes::ops::healthz))
        .route("/readyz", get(routes::ops::readyz))
        .route("/metrics", get(routes::ops::metrics))
        .route("/v1/datasets", get(routes::datasets::list))
        .route("/v1/datasets/{ds}", get(routes::datasets::show))
        .route("/v1/datasets/{ds}/versions", get(routes::datasets::versions))
        .route("/v1/tokens", post(routes::tokens::mint))
        .route("/v1/arrays/{ds}", get(routes::arrays::show))
        .route("/v1/arrays/{ds}/{*path}", get(routes::arrays::show))
        .route("/v1/slice/{ds}", get(routes::slice::slice))
        .route("/v1/slice/{ds}/{*path}", get(routes::slice::slice))
        .route("/v1/reduce/{ds}", get(routes::reduce::reduce))
        .route("/v1/reduce/{ds}/{*path}", get(routes::reduce::reduce))
        .route("/v1/chunks/{ds}", get(routes::chunks::list))
        .route("/v1/chunks/{ds}/{*path}", get(routes::chunks::list))
        .route("/v1/chunk/{ds}", get(routes::chunks::chunk))
        .route("/v1/chunk/{ds}/{*path}", get(routes::chunks::chunk))
        // Listings (and their redirects) answer HEAD through `get`, like the other reads.
        .route("/zarr/{ds}", get(routes::zarr_store::root))
        .route("/zarr/{ds}/", get(routes::zarr_store::root))
        .route("/iiif/3/{identifier}", get(routes::iiif::base))
        .route("/iiif/3/{identifier}/info.json", get(routes::iiif::info))
        .route("/iiif/3/{identifier}/{region}/{size}/{rotation}/{quality}", get(routes::iiif::image))
        .route("/maps/{identifier}/tilejson.json", get(routes::maps::tilejson))
        .route("/maps/{identifier}/{z}/{x}/{y}", get(routes::maps::tile))
        .route("/edr", get(routes::edr::landing))
        .route("/edr/", get(routes::edr::landing))
        .route("/edr/api", get(routes::edr::api))
        .route("/edr/conformance", get(routes::edr::conformance))
        .route("/edr/collections", get(routes::edr::collections))
        .route("/edr/collections/{cid}", get(routes::edr::collection))
        .route("/edr/collections/{cid}/instances", get(routes::edr::instances))
        .route("/edr/collections/{cid}/instances/{ref}", get(routes::edr::instance))
        .route("/edr/collections/{cid}/instances/{ref}/{query}", get(routes::edr::instance_query))
        .route("/edr/collections/{cid}/{query}", get(routes::edr::query))
        .route("/", get(routes::viewer::index))
        .route("/view/{ds}", get(routes::viewer::deep_link))
        .route("/view/{ds}/{*path}", get(routes::viewer::deep_link))
        .route("/viewer/{file}", get(routes::viewer::asset))
        .route("/viewer/window/{identifier}", get(routes::viewer::window))
        .route("/zarr/{ds}/{*key}", get(routes::zarr_store::get).head(routes::zarr_store::get))
        .route("/compat/v3/{ds}", get(routes::compat::view::<3>))
        .route("/compat/v3/{ds}/", get(routes::compat::view::<3>))
        .route("/compat/v3/{ds}/{*key}", get(routes::compat::view::<3>).head(routes::compat::view::<3>))
        .route("/compat/v2/{ds}", get(routes::compat::view::<2>))
        .route("/compat/v2/{ds}/", get(routes::compat::view::<2>))
        .route("/compat/v2/{ds}/{*key}", get(routes::compat::view::<2>).head(routes::compat::view::<2>))
        .fallback(|| async { crate::error::Error::NotFound("no such route; see openapi.yaml for the API".into()) })
        .layer(axum::middleware::from_fn_with_state(state.clone(), versions::immutable))
        .with_state(state);
    let routed = middleware::apply(router, &layered);
    // Capability URLs (`/t/TOKEN/...`) are rewritten before routing, so they reach the
    // same routes and layers as any request (`auth`).
    Router::new().fallback_service(tower::ServiceExt::map_request(routed, auth::rewrite))
}
