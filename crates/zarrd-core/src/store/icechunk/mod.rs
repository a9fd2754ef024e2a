//! Icechunk repositories (transactional, versioned Zarr), through the `icechunk` crate —
//! the reference implementation — contained in this module: its storage (built on its own
//! `object_store` fork) is made here from the dataset URL and options, and each snapshot is
//! served as a store of its own ([`snapshot::Snapshot`]) so everything above the storage
//! seam reads it like a native Zarr v3 store.
//!
//! Versions: a branch resolves to its current snapshot, re-checked at most every
//! `cache.ref_ttl_s`; a tag or a snapshot id never changes. The repository is opened on
//! first use; a failed open is retried by the next request.

pub mod snapshot;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use icechunk::Repository;
use icechunk::format::SnapshotId;
use icechunk::repository::VersionInfo;

use self::snapshot::{Snapshot, error};
use super::Store;
use super::coalesce::{Coalescer, Windows};
use super::refs::targets::Targets;
use crate::ops::caches::get_or_try_load;

/// Where a repository lives, as the `icechunk` crate opens it.
#[derive(Clone, Debug)]
pub enum Location {
    Local(std::path::PathBuf),
    S3 { bucket: String, prefix: Option<String>, options: BTreeMap<String, String> },
}

/// A version as resolved: its snapshot id and whether it can never change (a tag or a
/// snapshot id, not a branch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub snapshot: String,
    pub immutable: bool,
}

/// Why a version could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("no branch, tag or snapshot `{0}` in this repository")]
    Unknown(String),
    #[error("{0}")]
    Storage(String),
}

pub struct Repo {
    dataset: Arc<str>,
    location: Location,
    opened: Mutex<Option<Arc<Repository>>>,
    opening: tokio::sync::Mutex<()>,
    heads: moka::future::Cache<String, Resolved>,
    snapshots: moka::future::Cache<String, Store>,
    targets: Arc<Targets>,
    coalesce: Windows,
    /// zarrd's own store of the repository's folder, for native chunks.
    own: Option<Store>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IcechunkRepo({}, {:?})", self.dataset, self.location)
    }
}

fn storage_error(e: impl std::fmt::Display) -> VersionError {
    VersionError::Storage(format!("the Icechunk repository could not be read: {e}"))
}

impl Repo {
    /// `repo_store`: zarrd's own store of the repository's folder, through which native
    /// chunks are read (`None`: through the `icechunk` crate).
    pub fn new(
        dataset: Arc<str>,
        (location, repo_store): (Location, Option<Store>),
        targets: Targets,
        ref_ttl: Duration,
        coalesce: Windows,
    ) -> Self {
        Self {
            own: repo_store,
            dataset,
            location,
            opened: Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
            heads: moka::future::Cache::builder().max_capacity(1024).time_to_live(ref_ttl).build(),
            snapshots: moka::future::Cache::builder().max_capacity(64).build(),
            targets: Arc::new(targets),
            coalesce,
        }
    }

    async fn repository(&self) -> Result<Arc<Repository>, VersionError> {
        if let Some(repo) = self.opened.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(repo);
        }
        let _one = self.opening.lock().await;
        if let Some(repo) = self.opened.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(repo);
        }
        crate::ops::metrics::storage_request("icechunk");
        let storage = match &self.location {
            Location::Local(path) => icechunk::new_local_filesystem_storage(path).await.map_err(storage_error)?,
            Location::S3 { bucket, prefix, options } => Box::pin(s3_storage(bucket, prefix.clone(), options)).await?,
        };
        let repo = Arc::new(Box::pin(Repository::open(storage).execute()).await.map_err(storage_error)?);
        *self.opened.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&repo));
        Ok(repo)
    }

    /// The snapshot that `version` (a branch, a tag or a snapshot id) names now.
    pub async fn resolve(&self, version: &str) -> Result<Resolved, VersionError> {
        get_or_try_load(&self.heads, version.to_owned(), || async {
            let repo = self.repository().await?;
            crate::ops::metrics::storage_request("icechunk");
            if repo.list_branches().await.map_err(storage_error)?.contains(version) {
                let id = repo.lookup_branch(version).await.map_err(storage_error)?;
                return Ok(Resolved { snapshot: id.to_string(), immutable: false });
            }
            if repo.list_tags().await.map_err(storage_error)?.contains(version) {
                let id = repo.lookup_tag(version).await.map_err(storage_error)?;
                return Ok(Resolved { snapshot: id.to_string(), immutable: true });
            }
            let id = SnapshotId::try_from(version).map_err(|_| VersionError::Unknown(version.to_owned()))?;
            repo.lookup_snapshot(&id).await.map_err(|_| VersionError::Unknown(version.to_owned()))?;
            Ok(Resolved { snapshot: id.to_string(), immutable: true })
        })
        .await
        .map_err(|e: Arc<VersionError>| match &*e {
            VersionError::Unknown(v) => VersionError::Unknown(v.clone()),
            VersionError::Storage(s) => VersionError::Storage(s.clone()),
        })
    }

    /// The store of one snapshot (opened once, kept while used).
    pub async fn snapshot(&self, id: &str) -> Result<Store, VersionError> {
        get_or_try_load(&self.snapshots, id.to_owned(), || async {
            let repo = self.repository().await?;
            let snapshot = SnapshotId::try_from(id).map_err(|_| VersionError::Unknown(id.to_owned()))?;
            let info = repo.lookup_snapshot(&snapshot).await.map_err(storage_error)?;
            let session = repo.readonly_session(&VersionInfo::SnapshotId(snapshot)).await.map_err(storage_error)?;
            let store = icechunk::Store::from_session(Arc::new(tokio::sync::RwLock::new(session))).await;
            let containers: HashMap<String, String> = repo
                .config()
                .virtual_chunk_containers
                .iter()
                .flatten()
                .map(|(name, c)| (c.name.clone().unwrap_or_else(|| name.clone()), c.url_prefix().to_owned()))
                .collect();
            let snapshot = Snapshot {
                dataset: Arc::clone(&self.dataset),
                id: id.to_owned(),
                store,
                last_modified: info.flushed_at,
                containers,
                targets: Arc::clone(&self.targets),
                coalescer: Coalescer::new(self.coalesce),
                repo_store: self.own.clone(),
            };
            // A local repository's native chunks are files on this machine: read at once.
            let store = Store::uncounted(Arc::new(snapshot));
            Ok::<_, VersionError>(if self.own.as_ref().is_some_and(Store::is_local) {
                store.on_this_machine()
            } else {
                store
            })
        })
        .await
        .map_err(|e| VersionError::Storage(e.to_string()))
    }

    /// Branches and tags with their snapshots, by name.
    pub async fn versions(&self) -> Result<serde_json::Value, VersionError> {
        let repo = Box::pin(self.repository()).await?;
        let mut branches = Vec::new();
        for name in repo.list_branches().await.map_err(storage_error)? {
            let id = repo.lookup_branch(&name).await.map_err(storage_error)?;
            branches.push(serde_json::json!({"name": name, "snapshot": id.to_string()}));
        }
        let mut tags = Vec::new();
        for name in repo.list_tags().await.map_err(storage_error)? {
            let id = repo.lookup_tag(&name).await.map_err(storage_error)?;
            tags.push(serde_json::json!({"name": name, "snapshot": id.to_string()}));
        }
        Ok(serde_json::json!({"branches": branches, "tags": tags}))
    }
}

/// An S3 (or S3-compatible) repository's storage, from the dataset's `aws_*` options.
async fn s3_storage(
    bucket: &str,
    prefix: Option<String>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn icechunk::Storage + Send + Sync>, VersionError> {
    use icechunk::storage::{S3Credentials, S3Options, S3StaticCredentials};
    let get = |k: &str| options.iter().find(|(key, _)| key.eq_ignore_ascii_case(k)).map(|(_, v)| v.clone());
    let yes = |k: &str| get(k).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let mut config = S3Options::default();
    config.region = get("aws_region").or_else(|| get("region"));
    config.endpoint_url = get("aws_endpoint").or_else(|| get("aws_endpoint_url")).or_else(|| get("endpoint"));
    config.anonymous = yes("aws_skip_signature");
    config.allow_http = yes("aws_allow_http") || yes("allow_http");
    config.force_path_style = !yes("aws_virtual_hosted_style_request");
    let credentials = match (get("aws_access_key_id"), get("aws_secret_access_key")) {
        (Some(access_key_id), Some(secret_access_key)) => Some(S3Credentials::Static(S3StaticCredentials {
            access_key_id,
            secret_access_key,
            session_token: get("aws_session_token"),
            expires_after: None,
        })),
        _ if config.anonymous => Some(S3Credentials::Anonymous),
        _ => None,
    };
    icechunk::new_s3_object_store_storage(config, bucket.to_owned(), prefix, credentials, Vec::new(), Vec::new())
        .await
        .map_err(|e| error(e).to_string())
        .map_err(VersionError::Storage)
}
