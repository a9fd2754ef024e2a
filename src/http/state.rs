//! What every handler shares: the catalog, the configuration, the image caches, kept
//! responses, the shutdown flag, dataset health, access control and the in-flight guard.
//!
//! axum clones the state for every request, several times (each layer with state, each
//! handler's extractor). Cloning must then write nothing that other cores also write:
//! with the fields cloned one by one (each moka cache is several reference counts) the
//! clones and drops were over half of the CPU of a cached tile on 8 cores, every core
//! bouncing the same cache lines (`docs/performance.md` "Every core"). So a clone is one
//! count, and each server thread has a handle of its own ([`AppState::for_thread`]), whose
//! count only that thread touches.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::catalog::Catalog;
use crate::config::Config;

/// What every handler shares: a handle to [`Shared`], cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AsRef<crate::http::guard::Guard> for AppState {
    fn as_ref(&self) -> &crate::http::guard::Guard {
        &self.guard
    }
}

impl AsRef<crate::http::responses::Responses> for AppState {
    fn as_ref(&self) -> &crate::http::responses::Responses {
        &self.responses
    }
}

/// The parts of the state; each is itself a handle to what all threads share.
#[derive(Clone)]
pub struct Shared {
    pub catalog: Arc<Catalog>,
    pub config: Arc<Config>,
    /// IIIF windows and rendered images.
    pub images: crate::images::iiif::Images,
    /// Map grids and windows (rendered tiles share `images`' cache).
    pub maps: crate::images::maps::Maps,
    /// Each array's grid (`/v1/arrays`, maps, `sel=`, `/v1/reduce`, EDR).
    pub grids: crate::analysis::grids::Grids,
    /// Decoded coordinate labels (`sel=`, `/v1/reduce`).
    pub coords: crate::analysis::coordinates::Coordinates,
    /// EDR collections found in the datasets (`/edr`).
    pub collections: crate::edr::collection::Collections,
    /// Kept responses of hot data requests (replayed by a middleware layer).
    pub responses: Arc<crate::http::responses::Responses>,
    /// Set when shutdown begins, so `/readyz` fails before the listener closes.
    pub shutting_down: Arc<AtomicBool>,
    /// Per-dataset health, checked in the background (never by `/readyz`).
    pub health: Arc<crate::catalog::health::Health>,
    /// Who callers are and what they may read (applied by `http::auth`).
    pub auth: Arc<crate::auth::Auth>,
    /// Requests in flight and their time limit (`limits.max_in_flight`,
    /// `limits.request_timeout_secs`), over all threads.
    pub guard: Arc<crate::http::guard::Guard>,
}

impl AppState {
    pub fn new(catalog: Catalog, config: Config) -> Self {
        let health = crate::catalog::health::Health::new(
            std::time::Duration::from_secs(config.health.check_interval_secs),
            std::time::Duration::from_secs(config.health.check_timeout_secs),
        );
        let images = crate::images::iiif::Images::new(&config);
        let grids = crate::analysis::grids::Grids::new(&config);
        let maps = crate::images::maps::Maps::new(&config, grids.clone());
        let responses = Arc::new(crate::http::responses::Responses::new(&config));
        let auth = Arc::new(crate::auth::Auth::new(&config));
        let guard = Arc::new(crate::http::guard::Guard::new(&config.limits));
        let coords = crate::analysis::coordinates::Coordinates::new(&config);
        let collections = crate::edr::collection::Collections::new(&config, grids.clone());
        Self(Arc::new(Shared {
            catalog: Arc::new(catalog),
            config: Arc::new(config),
            images,
            maps,
            grids,
            coords,
            collections,
            responses,
            shutting_down: Arc::new(AtomicBool::new(false)),
            health: Arc::new(health),
            auth,
            guard,
        }))
    }

    /// A handle of the same state with a reference count of its own, for one thread: the
    /// per-request clones of that thread then touch only it.
    #[must_use]
    pub fn for_thread(&self) -> Self {
        Self(Arc::new(Shared::clone(&self.0)))
    }
}
