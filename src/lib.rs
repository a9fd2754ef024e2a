//! zarrd: an HTTP server for Zarr v3 arrays. [`app`] builds the router that `main`
//! serves and that the tests drive in-process.

pub mod api;
pub mod body;
pub mod budget;
pub mod cache;
pub mod catalog;
pub mod config;
pub mod contained;
pub mod cpu;
pub mod error;
pub mod health;
pub mod logbuf;

pub mod iiif;
pub mod metrics;
pub mod middleware;
pub mod overviews;
pub mod panics;
pub mod responses;
pub mod server;
pub mod store;
pub mod zarr;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use axum::Router;
use axum::routing::get;

use crate::catalog::Catalog;
use crate::config::Config;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub catalog: Arc<Catalog>,
    pub config: Arc<Config>,
    /// IIIF windows and rendered images.
    pub images: iiif::Images,
    /// Kept responses of hot data requests (replayed by a middleware layer).
    pub responses: Arc<responses::Responses>,
    /// Set when shutdown begins, so `/readyz` fails before the listener closes.
    pub shutting_down: Arc<AtomicBool>,
    /// Per-dataset health, checked in the background (never by `/readyz`).
    pub health: Arc<health::Health>,
}

impl AppState {
    pub fn new(catalog: Catalog, config: Config) -> Self {
        let health = health::Health::new(
            std::time::Duration::from_secs(config.health.check_interval_secs),
            std::time::Duration::from_secs(config.health.check_timeout_secs),
        );
        let images = iiif::Images::new(&config);
        let responses = Arc::new(responses::Responses::new(&config));
        Self {
            catalog: Arc::new(catalog),
            config: Arc::new(config),
            images,
            responses,
            shutting_down: Arc::new(AtomicBool::new(false)),
            health: Arc::new(health),
        }
    }
}

/// The zarrd router with all routes of API.md and the cross-cutting layers.
pub fn app(state: AppState) -> Router {
    metrics::handle();
    // From here a panic anywhere is counted and logged once, with its request id.
    panics::install_hook();
    let config = Arc::clone(&state.config);
    let responses = Arc::clone(&state.responses);
    let router = Router::new()
        .route("/healthz", get(api::ops::healthz))
        .route("/readyz", get(api::ops::readyz))
        .route("/metrics", get(api::ops::metrics))
        .route("/v1/datasets", get(api::datasets::list))
        .route("/v1/datasets/{ds}", get(api::datasets::show))
        .route("/v1/arrays/{ds}", get(api::arrays::show))
        .route("/v1/arrays/{ds}/{*path}", get(api::arrays::show))
        .route("/v1/slice/{ds}", get(api::slice::slice))
        .route("/v1/slice/{ds}/{*path}", get(api::slice::slice))
        .route("/v1/chunks/{ds}", get(api::chunks::list))
        .route("/v1/chunks/{ds}/{*path}", get(api::chunks::list))
        .route("/v1/chunk/{ds}", get(api::chunks::chunk))
        .route("/v1/chunk/{ds}/{*path}", get(api::chunks::chunk))
        // Listings (and their redirects) answer HEAD through `get`, like the other reads.
        .route("/zarr/{ds}", get(api::zarr_store::root))
        .route("/zarr/{ds}/", get(api::zarr_store::root))
        .route("/iiif/3/{identifier}", get(api::iiif::base))
        .route("/iiif/3/{identifier}/info.json", get(api::iiif::info))
        .route("/iiif/3/{identifier}/{region}/{size}/{rotation}/{quality}", get(api::iiif::image))
        .route("/", get(api::viewer::index))
        .route("/view/{ds}", get(api::viewer::deep_link))
        .route("/view/{ds}/{*path}", get(api::viewer::deep_link))
        .route("/viewer/{file}", get(api::viewer::asset))
        .route("/zarr/{ds}/{*key}", get(api::zarr_store::get).head(api::zarr_store::get))
        .route("/compat/v3/{ds}", get(api::compat::view::<3>))
        .route("/compat/v3/{ds}/", get(api::compat::view::<3>))
        .route("/compat/v3/{ds}/{*key}", get(api::compat::view::<3>).head(api::compat::view::<3>))
        .route("/compat/v2/{ds}", get(api::compat::view::<2>))
        .route("/compat/v2/{ds}/", get(api::compat::view::<2>))
        .route("/compat/v2/{ds}/{*key}", get(api::compat::view::<2>).head(api::compat::view::<2>))
        .fallback(|| async { error::Error::NotFound("no such route; see openapi.yaml for the API".into()) })
        .with_state(state);
    middleware::apply(router, &config, responses)
}
