//! The only storage seam: an `Arc<dyn ObjectStore>` plus the dataset's root prefix.
//!
//! Keys are Zarr store keys relative to the root. A missing object is `Ok(None)`; every
//! other failure is a [`StoreError`] naming the key. Each request is counted in the
//! metrics so operators (and tests) can see how many storage round-trips a read costs.

pub mod answer;
pub mod coalesce;
pub mod contained;
pub mod icechunk;
pub mod refs;
pub mod unopened;
pub mod web_origin;
pub mod zip;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, GetResult, GetResultPayload, ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::ops::metrics;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage request for `{key}` failed: {source}")]
    Backend {
        key: String,
        #[source]
        source: object_store::Error,
    },
    #[error("`{0}` is not a valid store key")]
    InvalidKey(String),
}

impl StoreError {
    /// What a client may be told: the dataset-relative key and the kind of failure, never
    /// the backend's own message (absolute paths, URLs, retry settings); that goes to the log.
    pub fn public_detail(&self) -> String {
        match self {
            Self::InvalidKey(key) => format!("`{key}` is not a valid key in this dataset"),
            Self::Backend { key, source } => {
                let kind = match source {
                    object_store::Error::NotFound { .. } => "not found",
                    object_store::Error::Precondition { .. } => "the object changed while it was read",
                    object_store::Error::NotModified { .. } => "not modified",
                    object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
                        "access denied by the storage backend"
                    }
                    object_store::Error::NotSupported { .. } | object_store::Error::NotImplemented { .. } => {
                        "the storage backend does not support the request"
                    }
                    object_store::Error::Generic { store: unopened::STORE, .. } => {
                        "the dataset could not be opened when the server started"
                    }
                    // A zipped dataset's own findings (a corrupt archive or member) name
                    // members only, never the archive's path or URL: the client is told.
                    object_store::Error::Generic { store: ZIP_STORE | REFS_STORE, source } => {
                        return format!("reading `{key}` failed: {source}");
                    }
                    _ => "the storage backend reported an error",
                };
                format!(
                    "reading `{key}` failed: {kind} (details are in the server log under this request's X-Request-Id)"
                )
            }
        }
    }

    /// Whether the backend reported a precondition (`ETag`) mismatch or not-modified.
    pub fn is_precondition(&self) -> bool {
        matches!(self, Self::Backend { source: object_store::Error::Precondition { .. }, .. })
    }
}

/// The kinds of [`StoreError`], as [`StoreError::failure`] tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFailure {
    /// A key that cannot name an object of this dataset (`..`, an empty segment, …).
    InvalidKey,
    /// A reference outside the dataset's `virtual_refs`: refused, never read.
    RefusedReference,
    /// A reference longer than one may read.
    ReferenceTooLarge,
    /// The backend failed (or a stored reference set is unusable): possibly transient.
    Backend,
}

/// Bytes read from an object, with what the store said about the whole object.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub bytes: Bytes,
    pub object_size: u64,
    pub e_tag: Option<String>,
    /// Identifies this version of the object: its `ETag`, else size and modification time.
    pub version: String,
}

/// The `store` of the errors of zipped datasets (`zip`), whose messages name keys and
/// members only and may be shown to clients.
pub const ZIP_STORE: &str = "zip";

/// The `store` of reference sets' errors (`refs`), whose messages name keys and references
/// only (shown to clients).
pub const REFS_STORE: &str = "refs";

/// Longest key segment: a file name on local disks (`NAME_MAX`), well within object
/// stores' key limits.
const MAX_SEGMENT: usize = 255;

#[derive(Clone)]
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    root: Path,
    /// Whether requests are counted as storage requests here; a store whose objects are
    /// made of other stores' bytes (a reference set) counts the requests those make instead.
    counted: bool,
    /// The same store when it is a plain web server, for what it found out about itself.
    web: Option<Arc<web_origin::WebOrigin>>,
    /// Whether its objects are files on this machine: read in microseconds, so reads are
    /// not held for others to join (`coalesce::Windows`).
    local: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({}, {})", self.inner, self.root)
    }
}

impl Store {
    pub fn new(inner: Arc<dyn ObjectStore>, root: Path) -> Self {
        Self { inner, root, counted: true, web: None, local: false }
    }

    /// The same store, its objects files on this machine (a folder, a zip file, a local
    /// repository's chunks).
    #[must_use]
    pub fn on_this_machine(self) -> Self {
        Self { local: true, ..self }
    }

    /// Whether its objects are files on this machine.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// A store over a plain web server (which may neither list nor honour `Range`).
    pub fn web(origin: web_origin::WebOrigin, root: Path) -> Self {
        let origin = Arc::new(origin);
        Self { web: Some(Arc::clone(&origin)), ..Self::new(origin, root) }
    }

    /// Whether the store refused to list (a plain web server without WebDAV): then there
    /// is no tree to be had by listing, and only the keys asked for can be served.
    pub fn cannot_list(&self) -> bool {
        self.web.as_ref().is_some_and(|w| w.cannot_list())
    }

    /// A store whose objects are read from other (counted) stores: its own requests are
    /// not storage requests.
    pub fn uncounted(inner: Arc<dyn ObjectStore>) -> Self {
        Self { counted: false, ..Self::new(inner, Path::default()) }
    }

    fn count(&self, reason: &'static str) {
        if self.counted {
            metrics::storage_request(reason);
        }
    }

    fn count_bytes(&self, n: usize) {
        if self.counted {
            metrics::storage_bytes(n);
        }
    }

    /// The backend this store reads from.
    pub fn backend(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.inner)
    }

    /// The object path of `key`; keys that no store can hold (empty, `.` or `..`
    /// segments, a segment longer than a file name may be, control characters) are
    /// rejected, so they are "not found" rather than a backend failure.
    pub fn path(&self, key: &str) -> Result<Path, StoreError> {
        let key_path = Path::parse(key).map_err(|_| StoreError::InvalidKey(key.to_owned()))?;
        if key.starts_with('/')
            || key.ends_with('/')
            || key.chars().any(char::is_control)
            || key.split('/').any(|p| p.is_empty() || p == "." || p == ".." || p.len() > MAX_SEGMENT)
        {
            return Err(StoreError::InvalidKey(key.to_owned()));
        }
        Ok(self.root.parts().chain(key_path.parts()).collect())
    }

    fn backend_error(key: &str, source: object_store::Error) -> StoreError {
        StoreError::Backend { key: key.to_owned(), source }
    }

    /// A GET with options; `None` when the object does not exist.
    pub async fn get_opts(&self, key: &str, options: GetOptions) -> Result<Option<GetResult>, StoreError> {
        self.get_for("object", key, options).await
    }

    /// A GET counted under `reason`.
    async fn get_for(
        &self,
        reason: &'static str,
        key: &str,
        options: GetOptions,
    ) -> Result<Option<GetResult>, StoreError> {
        let path = self.path(key)?;
        self.count(reason);
        match self.inner.get_opts(&path, options).await {
            Ok(r) => Ok(Some(r)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Self::backend_error(key, e)),
        }
    }

    async fn fetch(&self, reason: &'static str, key: &str, options: GetOptions) -> Result<Option<Fetched>, StoreError> {
        let Some(result) = self.get_for(reason, key, options).await? else {
            return Ok(None);
        };
        self.read_body(key, result).await.map(Some)
    }

    /// Reads the body of a GET whose headers have arrived (so its length is known and
    /// memory can be reserved before the bytes are).
    pub async fn read_body(&self, key: &str, result: GetResult) -> Result<Fetched, StoreError> {
        let (object_size, e_tag) = (result.meta.size, result.meta.e_tag.clone());
        let version = object_version(&result.meta);
        let bytes = match result.payload {
            GetResultPayload::File(file, _) => contained::read_file(file, result.range).await.map_err(|e| {
                Self::backend_error(key, object_store::Error::Generic { store: "LocalFileSystem", source: Box::new(e) })
            })?,
            GetResultPayload::Stream(_) => result.bytes().await.map_err(|e| Self::backend_error(key, e))?,
        };
        self.count_bytes(bytes.len());
        Ok(Fetched { bytes, object_size, e_tag, version })
    }

    /// The whole object.
    pub async fn get(&self, key: &str) -> Result<Option<Bytes>, StoreError> {
        Ok(self.get_object(key).await?.map(|f| f.bytes))
    }

    /// The whole object with its version.
    pub async fn get_object(&self, key: &str) -> Result<Option<Fetched>, StoreError> {
        self.fetch("object", key, GetOptions::default()).await
    }

    /// The first `n` bytes (or the whole object when it is shorter).
    pub async fn get_prefix(&self, key: &str, n: u64) -> Result<Option<Fetched>, StoreError> {
        self.fetch("index", key, GetOptions { range: Some(GetRange::Bounded(0..n)), ..GetOptions::default() }).await
    }

    /// The last `n` bytes in one request (a suffix range, no HEAD first).
    pub async fn get_suffix(&self, key: &str, n: u64) -> Result<Option<Fetched>, StoreError> {
        self.fetch("index", key, GetOptions { range: Some(GetRange::Suffix(n)), ..GetOptions::default() }).await
    }

    /// Several ranges of one object; `object_store` merges nearby ranges into one request.
    /// With `if_match`, a changed object fails with a precondition error instead of
    /// returning bytes that belong to another version.
    pub async fn get_ranges(
        &self,
        key: &str,
        ranges: &[Range<u64>],
        if_match: Option<&str>,
    ) -> Result<Vec<Bytes>, StoreError> {
        let path = self.path(key)?;
        let result = match if_match {
            None => {
                self.count("ranges");
                self.inner.get_ranges(&path, ranges).await
            }
            Some(tag) => self.get_ranges_if_match(&path, ranges, tag).await,
        };
        let parts = result.map_err(|e| Self::backend_error(key, e))?;
        self.count_bytes(parts.iter().map(Bytes::len).sum());
        Ok(parts)
    }

    /// Merged ranges, each a conditional GET.
    async fn get_ranges_if_match(
        &self,
        path: &Path,
        ranges: &[Range<u64>],
        tag: &str,
    ) -> object_store::Result<Vec<Bytes>> {
        let merged = merged_ranges(ranges);
        let fetched: Vec<(Range<u64>, Bytes)> = futures::stream::iter(merged)
            .map(|r| async move {
                self.count("ranges");
                let options = GetOptions {
                    range: Some(GetRange::Bounded(r.clone())),
                    if_match: Some(tag.to_owned()),
                    ..GetOptions::default()
                };
                let bytes = self.inner.get_opts(path, options).await?.bytes().await?;
                Ok::<_, object_store::Error>((r, bytes))
            })
            .buffered(8)
            .try_collect()
            .await?;
        // Cut each requested range out of the merged read that holds it; a store returning
        // fewer bytes than asked is an error, never a panic.
        ranges
            .iter()
            .map(|r| {
                fetched
                    .iter()
                    .find(|(o, b)| o.start <= r.start && r.end <= o.start + b.len() as u64)
                    .map(|(o, b)| b.slice((r.start - o.start) as usize..(r.end - o.start) as usize))
                    .ok_or_else(|| object_store::Error::Generic {
                        store: "zarrd",
                        source: format!("short read of `{path}`: bytes {}..{} were not returned", r.start, r.end)
                            .into(),
                    })
            })
            .collect()
    }

    pub async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let path = self.path(key)?;
        self.count("head");
        match self.inner.head(&path).await {
            Ok(m) => Ok(Some(m)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Self::backend_error(key, e)),
        }
    }

    /// The names of the "directories" directly under `prefix` ("" for the root).
    pub async fn list_dirs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let path = if prefix.is_empty() { self.root.clone() } else { self.path(prefix)? };
        self.count("list");
        let listing = self.inner.list_with_delimiter(Some(&path)).await.map_err(|e| Self::backend_error(prefix, e))?;
        Ok(listing.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_owned)).collect())
    }
}

impl Store {
    /// The entries directly under `prefix` ("" for the root): the names of its
    /// "directories", and its objects with their sizes.
    pub async fn list_entries(&self, prefix: &str) -> Result<(Vec<String>, Vec<(String, u64)>), StoreError> {
        let path = if prefix.is_empty() { self.root.clone() } else { self.path(prefix)? };
        self.count("list");
        let listing = match self.inner.list_with_delimiter(Some(&path)).await {
            Ok(listing) => listing,
            // A local directory that does not exist: nothing under it.
            Err(object_store::Error::NotFound { .. }) => return Ok((Vec::new(), Vec::new())),
            Err(e) => return Err(Self::backend_error(prefix, e)),
        };
        let dirs = listing.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_owned)).collect();
        let objects =
            listing.objects.iter().filter_map(|o| o.location.filename().map(|n| (n.to_owned(), o.size))).collect();
        Ok((dirs, objects))
    }
}

/// What identifies a version of an object: its `ETag`, else size and modification time.
pub fn object_version(meta: &ObjectMeta) -> String {
    meta.e_tag
        .clone()
        .unwrap_or_else(|| format!("{}-{}", meta.size, meta.last_modified.timestamp_nanos_opt().unwrap_or_default()))
}

/// Ranges closer than this are read in one request (`object_store`'s default).
const COALESCE_GAP: u64 = 1024 * 1024;

/// The ranges one read of `ranges` of an object requests: sorted, and each run of ranges
/// closer than the gap rule merged into one (for [`Store::get_ranges`], and for the members
/// of a zip archive read from the archive).
pub fn merged_ranges(ranges: &[Range<u64>]) -> Vec<Range<u64>> {
    merge_ranges(ranges, COALESCE_GAP)
}

/// The bytes a read of `ranges` holds in memory: the merged ranges, gaps included.
pub fn merged_len(ranges: &[Range<u64>]) -> u64 {
    merged_ranges(ranges).iter().map(|r| r.end - r.start).sum()
}

/// The storage requests a read of `ranges` of an object makes (by [`Store::get_ranges`]):
/// one per run of ranges closer than the gap rule.
pub fn merged_count(ranges: &[Range<u64>]) -> usize {
    merged_ranges(ranges).len()
}

/// Sorts and merges ranges whose gap is below `gap`.
fn merge_ranges(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    #[test]
    fn merges_close_ranges() {
        assert_eq!(merge_ranges(&[10..20, 0..5, 25..30, 5_000_000..5_000_010], 8), vec![0..30, 5_000_000..5_000_010]);
    }

    #[tokio::test]
    async fn keys_map_under_the_root_and_bad_keys_are_rejected() {
        let mem = Arc::new(InMemory::new());
        mem.put(&Path::from("root/a/zarr.json"), b"{}".to_vec().into()).await.unwrap();
        let store = Store::new(mem, Path::from("root"));
        assert_eq!(store.get("a/zarr.json").await.unwrap().unwrap().as_ref(), b"{}");
        assert!(store.get("b/zarr.json").await.unwrap().is_none());
        let long = "x".repeat(256);
        for bad in ["../x", "a//b", "/a", "a/./b", "a/", "a\nb", long.as_str()] {
            assert!(matches!(store.get(bad).await, Err(StoreError::InvalidKey(_))), "{bad}");
        }
        assert_eq!(store.list_dirs("").await.unwrap(), ["a"]);
        let suffix = store.get_suffix("a/zarr.json", 1).await.unwrap().unwrap();
        assert_eq!((suffix.bytes.as_ref(), suffix.object_size), (b"}".as_slice(), 2));
        let parts = store.get_ranges("a/zarr.json", &[0..1, 1..2], None).await.unwrap();
        assert_eq!(parts, [Bytes::from_static(b"{"), Bytes::from_static(b"}")]);
    }
}
