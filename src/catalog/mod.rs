//! The datasets zarrd serves: name → store, plus a TTL cache of parsed node metadata
//! (`zarr.json`, or a v2 node's `.zarray`/`.zgroup` + `.zattrs`) so a rewritten array is
//! seen within `cache.metadata_ttl_secs`. Each node is detected on its own: a dataset may
//! mix v2 and v3 nodes.

mod collection;
mod error;
pub mod health;
mod nodes;
mod open;
mod tree;
mod versions;

pub use open::{Opened, open_dataset, open_store, open_url};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use object_store::path::Path;

use crate::compat::ViewTree;
use crate::config::{Config, ConfigError};
use crate::error::{Error, Result};
pub use error::{NodeError, NodeKind};
pub use nodes::TreeNode;
use zarrd_core::ops::budget::MemoryBudget;
use zarrd_core::ops::caches::get_or_try_load;
use zarrd_core::read::ArrayReader;
use zarrd_core::read::cache::{ChunkCache, Lifetimes, ObjectKey, ObjectVersionCache, ShardIndexCache, ViewChunkCache};
use zarrd_core::store::Store;
use zarrd_core::store::icechunk::Repo;
use zarrd_core::store::unopened::Unopened;
use zarrd_core::zarr::metadata::{GroupMetadata, Node};
use zarrd_core::zarr::v2;

/// One configured dataset.
#[derive(Debug)]
pub struct Dataset {
    pub name: Arc<str>,
    pub title: Option<String>,
    pub store: Store,
    /// Configured chunk shapes of arrays in the compatibility views, by array path.
    pub compat: BTreeMap<String, Vec<u64>>,
    /// Configured overview sources (pyramids written by `zarrd overviews`), by array
    /// path: each a dataset of its own whose root is an OME-NGFF multiscales group.
    pub overviews: BTreeMap<String, Arc<Dataset>>,
    /// The repository of a versioned (Icechunk) dataset, whose store is that of a version.
    pub repo: Option<Arc<Repo>>,
    /// The version served when a request names none (the config's `ref`, else `main`).
    pub default_ref: Option<String>,
}

pub struct Catalog {
    datasets: BTreeMap<String, Arc<Dataset>>,
    /// Private datasets (with a `read` list), never named to a caller who asks for another.
    private: std::collections::BTreeSet<String>,
    metadata: zarrd_core::ops::caches::Cache<ObjectKey, Node>,
    trees: Cache<Arc<str>, Arc<Vec<TreeNode>>>,
    views: Cache<Arc<str>, Arc<ViewTree>>,
    /// Encoded chunks of the compatibility views.
    pub view_chunks: ViewChunkCache,
    pub indexes: ShardIndexCache,
    object_versions: ObjectVersionCache,
    pub chunks: ChunkCache,
    max_chunks: u64,
    /// How view chunks of `/compat` are sized.
    compat: crate::config::CompatConfig,
    pub budget: MemoryBudget,
    stream_idle: Duration,
    coalescer: zarrd_core::store::coalesce::Coalescer<zarrd_core::read::ReadError>,
    /// The versions of versioned datasets in use, by `NAME@SNAPSHOT`.
    snapshots: Cache<String, Arc<Dataset>>,
}

impl Catalog {
    /// Opens every configured dataset. One that cannot be opened (a missing path, a URL
    /// no backend takes) is logged and served as failing, so that one bad entry does not
    /// keep the others from being served; a bad overview source still fails here.
    pub fn from_config(config: &Config) -> Result<Self, ConfigError> {
        let windows = config.storage.windows();
        let ttl = Duration::from_secs(config.cache.ref_ttl_s);
        let mut repos = BTreeMap::new();
        let datasets = config
            .datasets
            .iter()
            .map(|(name, ds)| {
                let unopened = |reason: String| Store::new(Arc::new(Unopened { reason }), Path::default());
                let store = match open_dataset(name, ds, windows, ttl) {
                    Ok(Opened::Store(store)) => store,
                    Ok(Opened::Versioned(repo)) => {
                        repos.insert(name.clone(), repo);
                        unopened("a versioned dataset is read at a version".to_owned())
                    }
                    Err(e) => {
                        tracing::error!(dataset = %name, error = %e, "dataset cannot be opened; serving it as failing");
                        unopened(e.to_string())
                    }
                };
                (name.clone(), store, ds.title.clone())
            })
            .collect();
        let mut catalog = Self::new(datasets, config);
        for (name, ds) in &config.datasets {
            if let Some(dataset) = catalog.datasets.get_mut(name).and_then(Arc::get_mut) {
                dataset.compat.clone_from(&ds.compat);
                dataset.repo = repos.remove(name);
                dataset.default_ref.clone_from(&ds.version);
            }
            for (path, url) in &ds.overviews {
                let field = format!("datasets.{name}.overviews.{path}");
                let store = open_url(&field, url, (&format!("datasets.{name}.options"), &ds.options))?;
                catalog.add_overviews(name, path, store);
            }
        }
        Ok(catalog)
    }

    /// Makes `store` (the root of a pyramid written by `zarrd overviews`) the overview
    /// source of array `path` of dataset `name`. Its objects are cached under a dataset
    /// name no configured dataset can have (`NAME:overviews:PATH`).
    pub fn add_overviews(&mut self, name: &str, path: &str, store: Store) {
        if let Some(dataset) = self.datasets.get_mut(name).and_then(Arc::get_mut) {
            let overview = Dataset {
                name: format!("{name}:overviews:{path}").into(),
                title: None,
                store,
                compat: BTreeMap::new(),
                overviews: BTreeMap::new(),
                repo: None,
                default_ref: None,
            };
            dataset.overviews.insert(path.to_owned(), Arc::new(overview));
        }
    }

    /// A catalog over stores opened by the caller (tests use in-memory stores).
    pub fn new(datasets: Vec<(String, Store, Option<String>)>, config: &Config) -> Self {
        let ttl = Duration::from_secs(config.cache.metadata_ttl_secs.max(1));
        let missing = Duration::from_secs(config.cache.missing_ttl_secs);
        let lifetimes = Lifetimes { present: ttl, missing };
        Self {
            datasets: datasets
                .into_iter()
                .map(|(name, store, title)| {
                    let dataset = Dataset {
                        name: name.as_str().into(),
                        title,
                        store,
                        compat: BTreeMap::new(),
                        overviews: BTreeMap::new(),
                        repo: None,
                        default_ref: None,
                    };
                    (name, Arc::new(dataset))
                })
                .collect(),
            private: config.datasets.iter().filter(|(_, d)| d.read.is_some()).map(|(n, _)| n.clone()).collect(),
            metadata: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build_with_hasher(zarrd_core::ops::caches::hasher()),
            trees: Cache::builder().max_capacity(64).time_to_live(ttl).build(),
            views: Cache::builder().max_capacity(64).time_to_live(ttl).build(),
            view_chunks: ViewChunkCache::new(config.cache.compat_bytes, lifetimes),
            indexes: ShardIndexCache::new(
                config.cache.shard_index_bytes,
                Lifetimes { present: Duration::from_secs(config.cache.shard_index_ttl_secs), missing },
            ),
            object_versions: ObjectVersionCache::new(1_000_000, lifetimes),
            chunks: ChunkCache::new(config.cache.chunk_bytes, lifetimes),
            max_chunks: config.limits.max_chunks_per_request,
            compat: config.compat,
            budget: MemoryBudget::new(
                config.memory_budget_bytes(),
                Duration::from_millis(config.limits.memory_wait_ms),
            ),
            stream_idle: Duration::from_secs(config.limits.request_timeout_secs),
            coalescer: zarrd_core::store::coalesce::Coalescer::new(config.storage.windows()),
            snapshots: Cache::builder().max_capacity(256).build(),
        }
    }

    pub fn datasets(&self) -> impl Iterator<Item = &Arc<Dataset>> {
        self.datasets.values()
    }

    /// The 404 of a dataset that does not exist, naming the public ones only: also the
    /// answer for a private dataset the caller may not read, so the two look the same.
    pub fn unknown_dataset(&self, name: &str) -> Error {
        let known: Vec<&str> =
            self.datasets.keys().filter(|n| !self.private.contains(*n)).map(String::as_str).collect();
        Error::NotFound(format!("unknown dataset `{name}`; configured datasets: {}", known.join(", ")))
    }

    /// The parsed metadata of the node at `path` ("" for the dataset root): its
    /// `zarr.json`, else its Zarr v2 documents.
    pub async fn node(&self, ds: &Dataset, path: &str) -> Result<Node> {
        self.find(ds, path).await.map_err(|e| Error::from(e.as_ref()))
    }

    /// [`Self::node`], failing with what went wrong in the catalog's terms.
    pub async fn find(&self, ds: &Dataset, path: &str) -> Result<Node, Arc<NodeError>> {
        let key = metadata_key(path)?;
        let cache_key = (Arc::clone(&ds.name), key.clone());
        get_or_try_load(&self.metadata, cache_key, || async {
            if let Some(bytes) = ds.store.get(&key).await? {
                return Node::parse(&bytes).map_err(|e| NodeError::metadata(&key, NodeKind::named_in(&bytes), e));
            }
            if let Some(node) = v2_node(ds, path).await? {
                return Ok(node);
            }
            // A collection: a root without metadata holding Zarr roots is a group of them.
            if path.is_empty() && collection::holds_roots(&ds.store).await? {
                return Ok(Node::Group(Arc::new(GroupMetadata::default())));
            }
            Err(not_found(&ds.name, path))
        })
        .await
    }

    /// Whether the dataset is a collection: its root has no metadata of its own but holds
    /// Zarr roots, so it is served as a group of them (also by `/zarr`, which then answers
    /// the root's `zarr.json` and `.zgroup` with an empty group).
    pub async fn is_collection(&self, ds: &Dataset) -> Result<bool> {
        if !matches!(self.node(ds, "").await, Ok(Node::Group(_))) {
            return Ok(false);
        }
        for key in ["zarr.json", v2::ZGROUP] {
            if ds.store.head(key).await?.is_some() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A reader for the array at `path`.
    pub async fn array(&self, ds: &Dataset, path: &str) -> Result<ArrayReader> {
        match self.node(ds, path).await? {
            Node::Array(meta) => Ok(ArrayReader {
                dataset: Arc::clone(&ds.name),
                store: ds.store.clone(),
                path: path.to_owned(),
                meta,
                indexes: self.indexes.clone(),
                object_versions: self.object_versions.clone(),
                chunks: self.chunks.clone(),
                max_chunks: self.max_chunks,
                budget: self.budget.clone(),
                stream_idle: self.stream_idle,
                coalescer: self.coalescer.clone(),
            }),
            Node::Group(_) => Err(Error::NotFound(format!(
                "`{path}` in dataset `{}` is a group, not an array; GET /v1/datasets/{} lists its arrays",
                ds.name, ds.name
            ))),
        }
    }
}

/// A Zarr v2 node: `.zarray` or `.zgroup`, with `.zattrs` (fetched alongside, since both
/// kinds need it); at the root, a group's consolidated `.zmetadata` too. `None` when the
/// path holds neither document.
async fn v2_node(ds: &Dataset, path: &str) -> Result<Option<Node>, NodeError> {
    let key = |name: &str| if path.is_empty() { name.to_owned() } else { format!("{path}/{name}") };
    let (zarray_key, zgroup_key, zattrs_key) = (key(v2::ZARRAY), key(v2::ZGROUP), key(v2::ZATTRS));
    let (zarray, zattrs) = futures::try_join!(ds.store.get(&zarray_key), ds.store.get(&zattrs_key))?;
    if let Some(zarray) = zarray {
        let meta = v2::parse_array(&zarray, zattrs.as_deref())
            .map_err(|e| NodeError::metadata(&zarray_key, Some(NodeKind::Array), e))?;
        return Ok(Some(Node::Array(Arc::new(meta))));
    }
    let Some(zgroup) = ds.store.get(&zgroup_key).await? else { return Ok(None) };
    let mut group = v2::parse_group(&zgroup, zattrs.as_deref())
        .map_err(|e| NodeError::metadata(&zgroup_key, Some(NodeKind::Group), e))?;
    if path.is_empty()
        && let Some(zmetadata) = ds.store.get(v2::ZMETADATA).await?
    {
        let (summaries, nodes) =
            v2::consolidated(&zmetadata).map_err(|e| NodeError::metadata(v2::ZMETADATA, Some(NodeKind::Group), e))?;
        group.consolidated = Some(summaries);
        group.consolidated_nodes = nodes;
    }
    Ok(Some(Node::Group(Arc::new(group))))
}

fn not_found(dataset: &Arc<str>, path: &str) -> NodeError {
    if path.is_empty() {
        NodeError::NoRoot { dataset: Arc::clone(dataset) }
    } else {
        NodeError::Missing { dataset: Arc::clone(dataset), path: path.to_owned() }
    }
}

/// The key of a node's `zarr.json`, rejecting paths with empty, `.` or `..` segments.
fn metadata_key(path: &str) -> Result<String, Arc<NodeError>> {
    if path.is_empty() {
        return Ok("zarr.json".to_owned());
    }
    if path.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
        return Err(Arc::new(NodeError::InvalidPath(path.to_owned())));
    }
    Ok(format!("{path}/zarr.json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatasetConfig;

    fn ds(url: &str, options: &[(&str, &str)]) -> DatasetConfig {
        DatasetConfig {
            url: url.into(),
            title: None,
            options: options.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn opens_every_kind_of_url() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        assert!(open_store("a", &ds(path, &[])).is_ok());
        assert!(open_store("a", &ds(&format!("file://{path}"), &[])).is_ok());
        assert!(open_store("a", &ds("memory:///", &[])).is_ok());
        let s3 = [("aws_region", "eu-west-1"), ("aws_access_key_id", "k"), ("aws_secret_access_key", "s")];
        assert!(open_store("a", &ds("s3://bucket/prefix/data.zarr", &s3)).is_ok());
        assert!(open_store("a", &ds("https://example.org/data.zarr", &[("timeout", "5s")])).is_ok());
        // Plain HTTP when the URL says so (reading over it is tested in conformance_over_http).
        assert!(open_store("a", &ds("http://example.org/data.zarr", &[])).is_ok());
    }

    #[test]
    fn bad_urls_and_options_name_the_field() {
        let err = open_store("x", &ds("/definitely/not/here", &[])).unwrap_err().to_string();
        assert!(err.contains("datasets.x.url"), "{err}");
        let err = open_store("x", &ds("s3://bucket/p", &[("aws_secret_acess_key", "typo")])).unwrap_err().to_string();
        assert!(err.contains("datasets.x.options.aws_secret_acess_key"), "{err}");
        let err = open_store("x", &ds("ftp://host/p", &[])).unwrap_err().to_string();
        assert!(err.contains("datasets.x.url"), "{err}");
    }
}
