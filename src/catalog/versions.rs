//! Datasets by the name a request gives: `NAME`, or `NAME@REF` for a version (branch, tag
//! or snapshot id) of a versioned dataset, each version a dataset of its own (cached by
//! snapshot, so every cache keyed by dataset name keeps versions apart).

use std::sync::Arc;

use serde_json::Value;

use crate::catalog::{Catalog, Dataset};
use crate::error::{Error, Result};
use zarrd_core::store::icechunk::VersionError;

impl Catalog {
    /// A configured dataset, as configured (a versioned one without its version).
    pub fn configured(&self, name: &str) -> Result<&Arc<Dataset>> {
        self.datasets.get(name).ok_or_else(|| self.unknown_dataset(name))
    }

    /// The dataset a request names: `NAME`, or `NAME@REF` for a branch, tag or snapshot
    /// of a versioned dataset (`NAME` alone: its default version).
    pub async fn dataset(&self, name: &str) -> Result<Arc<Dataset>> {
        let (base, version) = match name.split_once('@') {
            Some((base, version)) => (base, Some(version)),
            None => (name, None),
        };
        let ds = self.configured(base)?;
        let Some(repo) = &ds.repo else {
            return match version {
                None => Ok(Arc::clone(ds)),
                Some(v) => Err(Error::NotFound(format!(
                    "dataset `{base}` has no versions (`@{v}` selects a branch, tag or snapshot of an Icechunk dataset)"
                ))),
            };
        };
        let version = version.or(ds.default_ref.as_deref()).unwrap_or("main");
        let resolved = Box::pin(repo.resolve(version)).await.map_err(|e| match e {
            VersionError::Unknown(_) => {
                Error::NotFound(format!("dataset `{base}`: {e}; GET /v1/datasets/{base}/versions lists them"))
            }
            VersionError::Storage(s) => Error::Storage(s),
        })?;
        let key = format!("{base}@{}", resolved.snapshot);
        zarrd_core::ops::caches::get_or_try_load(&self.snapshots, key.clone(), || async {
            let store = Box::pin(repo.snapshot(&resolved.snapshot)).await.map_err(|e| Error::Storage(e.to_string()))?;
            Ok(Arc::new(Dataset {
                name: key.as_str().into(),
                title: ds.title.clone(),
                store,
                compat: ds.compat.clone(),
                overviews: ds.overviews.clone(),
                repo: None,
                default_ref: None,
            }))
        })
        .await
        .map_err(Arc::unwrap_or_clone)
    }

    /// Whether what `name` (`NAME@REF`) names can never change: a tag or a snapshot id of a
    /// versioned dataset (resolved again only when its resolution has expired).
    pub async fn immutable(&self, name: &str) -> bool {
        let Some((base, version)) = name.split_once('@') else { return false };
        match self.datasets.get(base).and_then(|ds| ds.repo.as_ref()) {
            Some(repo) => repo.resolve(version).await.is_ok_and(|r| r.immutable),
            None => false,
        }
    }

    /// The branches and tags of a versioned dataset.
    pub async fn versions(&self, name: &str) -> Result<Value> {
        let ds = self.configured(name)?;
        let repo = ds.repo.as_ref().ok_or_else(|| {
            Error::NotFound(format!("dataset `{name}` has no versions: it is not an Icechunk repository"))
        })?;
        repo.versions().await.map_err(|e| Error::Storage(e.to_string()))
    }
}
