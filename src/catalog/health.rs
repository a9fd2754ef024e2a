//! Per-dataset health, checked in the background and cached.
//!
//! Readiness (`/readyz`) says whether *this replica* can serve, not whether every dataset
//! is fine: a dataset whose root is unreadable is unreadable on every replica alike, so
//! failing readiness for it would take the whole fleet out of the load balancer at once
//! (and a probe that made a storage request per dataset, in series, would be slow and
//! costly). So each dataset's root is checked every `health.check_interval_secs` by one
//! background task, concurrently and with a timeout, and the result is published in
//! `/v1/datasets` (`health`), as the `zarrd_dataset_up` gauge, and in the log when it
//! changes.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use crate::catalog::{Catalog, Dataset};

/// What the last check of one dataset found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not checked yet.
    Unknown,
    Ok,
    /// What failed, as a client may be told it (never a URL or backend message).
    Failing(String),
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Ok => "ok",
            Self::Failing(_) => "failing",
        }
    }
}

#[derive(Debug, Clone)]
pub struct DatasetHealth {
    pub status: Status,
    /// When the check that found `status` finished.
    pub checked_at: Option<SystemTime>,
}

#[derive(Default)]
struct Snapshot {
    /// When the last complete check finished; `None` before the first.
    checked: Option<Instant>,
    datasets: BTreeMap<String, DatasetHealth>,
}

pub struct Health {
    snapshot: RwLock<Snapshot>,
    /// One check at a time: callers that find a check running wait for its result instead
    /// of starting another round of storage requests.
    checking: tokio::sync::Mutex<()>,
    interval: Duration,
    timeout: Duration,
}

impl Health {
    pub fn new(interval: Duration, timeout: Duration) -> Self {
        Self { snapshot: RwLock::new(Snapshot::default()), checking: tokio::sync::Mutex::new(()), interval, timeout }
    }

    /// Checks every dataset now (concurrently, each bounded by the timeout) and publishes
    /// the result. A caller that finds a check already running waits for that one.
    pub async fn check(&self, catalog: &Catalog) {
        let Ok(_checking) = self.checking.try_lock() else {
            let _ = self.checking.lock().await;
            return;
        };
        let results = futures::future::join_all(catalog.datasets().map(|ds| async move {
            let (status, error) = match tokio::time::timeout(self.timeout, check_root(catalog, ds)).await {
                Ok(checked) => checked,
                Err(_) => {
                    (Status::Failing(format!("its root did not answer within {} s", self.timeout.as_secs())), None)
                }
            };
            (ds.name.to_string(), status, error)
        }))
        .await;
        let now = SystemTime::now();
        let mut snapshot = self.snapshot.write().unwrap_or_else(PoisonError::into_inner);
        for (name, status, error) in results {
            zarrd_core::ops::metrics::dataset_up(&name, status == Status::Ok);
            let before = snapshot.datasets.get(&name).map(|h| h.status.clone());
            match (&before, &status) {
                (Some(Status::Ok) | None, Status::Failing(why)) => {
                    let error = error.as_deref().unwrap_or(why);
                    tracing::warn!(dataset = %name, %error, "dataset failing its health check");
                }
                (Some(Status::Failing(_)), Status::Ok) => tracing::info!(dataset = %name, "dataset healthy again"),
                _ => {}
            }
            snapshot.datasets.insert(name, DatasetHealth { status, checked_at: Some(now) });
        }
        snapshot.checked = Some(Instant::now());
    }

    /// The health of every dataset as last checked. Before the first check completes this
    /// waits for one (bounded by the check timeout), so the answer is never all-unknown
    /// just after start; afterwards it never waits on storage.
    pub async fn datasets(&self, catalog: &Catalog) -> BTreeMap<String, DatasetHealth> {
        let never_checked = self.snapshot.read().unwrap_or_else(PoisonError::into_inner).checked.is_none();
        if never_checked {
            self.check(catalog).await;
        }
        let snapshot = self.snapshot.read().unwrap_or_else(PoisonError::into_inner);
        catalog
            .datasets()
            .map(|ds| {
                let health = snapshot
                    .datasets
                    .get(ds.name.as_ref())
                    .cloned()
                    .unwrap_or(DatasetHealth { status: Status::Unknown, checked_at: None });
                (ds.name.to_string(), health)
            })
            .collect()
    }

    /// Checks every `interval` for as long as the process runs (spawned by `main`).
    pub async fn run(self: Arc<Self>, catalog: Arc<Catalog>) {
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.check(&catalog).await;
        }
    }
}

/// A dataset's root is readable when its `zarr.json` (or, for a Zarr v2 store, which has
/// none, its `.zgroup` or `.zarray`) exists and can be asked for. Also returns the
/// backend's own message for the log, which clients are not shown. A versioned dataset is
/// checked at its default version.
async fn check_root(catalog: &Catalog, ds: &Dataset) -> (Status, Option<String>) {
    let version;
    let ds = if ds.repo.is_some() {
        match catalog.dataset(&ds.name).await {
            Ok(v) => {
                version = v;
                version.as_ref()
            }
            Err(e) => return (Status::Failing(e.to_string()), None),
        }
    } else {
        ds
    };
    for key in ["zarr.json", ".zgroup", ".zarray"] {
        match ds.store.head(key).await {
            Ok(Some(_)) => return (Status::Ok, None),
            Ok(None) => {}
            Err(e) => return (Status::Failing(e.public_detail()), Some(e.to_string())),
        }
    }
    // A collection of Zarr roots below the dataset root is served as a group of them.
    if matches!(catalog.is_collection(ds).await, Ok(true)) {
        return (Status::Ok, None);
    }
    (Status::Failing("no zarr.json, .zgroup or .zarray at its root, nor Zarr roots (*.zarr) below it".into()), None)
}
