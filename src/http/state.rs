//! What every handler shares: the catalog, the configuration, the image caches, kept
//! responses, the shutdown flag, dataset health and access control.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::catalog::Catalog;
use crate::config::Config;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub catalog: Arc<Catalog>,
    pub config: Arc<Config>,
    /// IIIF windows and rendered images.
    pub images: crate::images::iiif::Images,
    /// Map grids and windows (rendered tiles share `images`' cache).
    pub maps: crate::images::maps::Maps,
    /// Kept responses of hot data requests (replayed by a middleware layer).
    pub responses: Arc<crate::http::responses::Responses>,
    /// Set when shutdown begins, so `/readyz` fails before the listener closes.
    pub shutting_down: Arc<AtomicBool>,
    /// Per-dataset health, checked in the background (never by `/readyz`).
    pub health: Arc<crate::catalog::health::Health>,
    /// Who callers are and what they may read (applied by `http::auth`).
    pub auth: Arc<crate::auth::Auth>,
}

impl AppState {
    pub fn new(catalog: Catalog, config: Config) -> Self {
        let health = crate::catalog::health::Health::new(
            std::time::Duration::from_secs(config.health.check_interval_secs),
            std::time::Duration::from_secs(config.health.check_timeout_secs),
        );
        let images = crate::images::iiif::Images::new(&config);
        let maps = crate::images::maps::Maps::new(&config);
        let responses = Arc::new(crate::http::responses::Responses::new(&config));
        let auth = Arc::new(crate::auth::Auth::new(&config));
        Self {
            catalog: Arc::new(catalog),
            config: Arc::new(config),
            images,
            maps,
            responses,
            shutting_down: Arc::new(AtomicBool::new(false)),
            health: Arc::new(health),
            auth,
        }
    }
}
