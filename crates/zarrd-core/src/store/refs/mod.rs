//! Virtual datasets: a kerchunk reference set (a JSON file, or a parquet reference
//! directory) served as an [`ObjectStore`] whose objects are the set's keys, so every route
//! above the storage seam reads it like a native Zarr store. A key's bytes are inline in
//! the set, or a byte range (or the whole) of a file elsewhere, read only under the
//! dataset's `virtual_refs` ([`targets`]).
//!
//! - **Index**: read on first use (a JSON set whole, up to [`kerchunk::MAX_JSON_BYTES`]; a
//!   parquet directory's `.zmetadata`, then one partition at a time as keys in it are asked
//!   for, partitions kept in a cache bounded by bytes). A failed read is retried by the next
//!   request, never kept. The set's version (its file's, or its `.zmetadata`'s) is part of
//!   every key's `ETag`.
//! - **Reads**: concurrent reads of ranges of one referenced file within the coalescing
//!   window are merged into as few GETs as the gap rule allows (as for shards); a range
//!   longer than [`MAX_REFERENCED`] is refused before anything is read.
//! - **Requests**: reads of the referenced files are counted as storage requests (by the
//!   stores of the prefixes); reads of this store's keys are not, so the metrics count what
//!   storage sees.

mod error;
pub mod kerchunk;
mod parquet;
pub mod targets;
mod template;

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use crate::store::answer::{answered, read_only};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, Extensions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use self::error::refs_error;
pub use self::error::{MAX_REFERENCED, RefsError};
use self::kerchunk::Ref;
use self::parquet::join;
use self::targets::Targets;
use super::Store;
use super::coalesce::{BatchError, Coalescer, Windows};

/// The format of a reference set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefsFormat {
    /// A kerchunk JSON file (version 0 or 1).
    Json,
    /// A parquet reference directory (`.zmetadata` and `VAR/refs.N.parq`).
    Parquet,
}

/// The references, as read.
enum Refs {
    Json(std::collections::BTreeMap<Box<str>, Ref>),
    Parquet(parquet::ParquetRefs),
}

struct Index {
    refs: Refs,
    last_modified: chrono::DateTime<chrono::Utc>,
    /// A short hash of the set's version, in keys' `ETag`s.
    tag: Arc<str>,
}

struct Inner {
    dataset: Arc<str>,
    /// The reference file, or the parquet directory's `.zmetadata`'s folder.
    source: Store,
    location: String,
    format: RefsFormat,
    targets: Targets,
    opened: Mutex<Option<Arc<Index>>>,
    opening: tokio::sync::Mutex<()>,
    coalescer: Coalescer<object_store::Error>,
}

/// A reference set served as a store of its keys.
#[derive(Clone)]
pub struct RefStore(Arc<Inner>);

impl std::fmt::Debug for RefStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RefStore({:?} {}, {:?})", self.0.format, self.0.location, self.0.targets)
    }
}

impl std::fmt::Display for RefStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl BatchError for object_store::Error {
    fn short(key: &str) -> Self {
        refs_error(format!("a merged read of `{key}` came back short"))
    }

    fn abandoned() -> Self {
        refs_error("a merged read was abandoned".into())
    }

    fn unshare(shared: Arc<Self>) -> Self {
        Arc::try_unwrap(shared).unwrap_or_else(|e| match &*e {
            Self::Generic { store, source } => Self::Generic { store, source: source.to_string().into() },
            other => Self::Generic { store: "refs-target", source: other.to_string().into() },
        })
    }
}

fn not_found(location: &Path) -> object_store::Error {
    object_store::Error::NotFound { path: location.to_string(), source: "no such key in the reference set".into() }
}

impl RefStore {
    /// The set at `location` in `source` (a JSON file, or a parquet directory), read
    /// on first use; `coalesce` is the merge window for reads of referenced files.
    pub fn new(
        dataset: Arc<str>,
        (source, location): (Store, String),
        format: RefsFormat,
        targets: Targets,
        coalesce: Windows,
    ) -> Self {
        Self(Arc::new(Inner {
            dataset,
            source,
            location,
            format,
            targets,
            opened: Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
            coalescer: Coalescer::new(coalesce),
        }))
    }
}

impl Inner {
    async fn index(&self) -> Result<Arc<Index>> {
        if let Some(index) = self.opened.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(index);
        }
        let _one = self.opening.lock().await;
        if let Some(index) = self.opened.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(index);
        }
        let index = Arc::new(self.open().await?);
        *self.opened.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&index));
        Ok(index)
    }

    async fn open(&self) -> Result<Index> {
        let document = match self.format {
            RefsFormat::Json => self.location.clone(),
            RefsFormat::Parquet => join(&self.location, ".zmetadata"),
        };
        let head = self.source.head(&document).await.map_err(|e| refs_error(e.public_detail()))?;
        let meta = head.ok_or_else(|| refs_error(format!("`{document}` does not exist")))?;
        if meta.size > kerchunk::MAX_JSON_BYTES {
            return Err(RefsError::Invalid(format!(
                "`{document}` is {} bytes, more than the {} read; use a parquet reference directory",
                meta.size,
                kerchunk::MAX_JSON_BYTES
            ))
            .into());
        }
        let bytes = self.source.get(&document).await.map_err(|e| refs_error(e.public_detail()))?;
        let bytes = bytes.ok_or_else(|| refs_error(format!("`{document}` does not exist")))?;
        let refs = match self.format {
            RefsFormat::Json => {
                let parsed = tokio::task::spawn_blocking(move || kerchunk::parse(&bytes))
                    .await
                    .map_err(|e| refs_error(e.to_string()))??;
                Refs::Json(parsed)
            }
            RefsFormat::Parquet => {
                Refs::Parquet(parquet::ParquetRefs::new(self.source.clone(), &self.location, &bytes)?)
            }
        };
        let version = super::object_version(&meta);
        let tag = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(version.as_bytes())).into();
        Ok(Index { refs, last_modified: meta.last_modified, tag })
    }

    /// The reference of `key`, if the set has it.
    async fn lookup(&self, index: &Index, key: &str) -> Result<Option<Ref>> {
        match &index.refs {
            Refs::Json(refs) => Ok(refs.get(key).cloned()),
            Refs::Parquet(p) => p.lookup(key).await,
        }
    }

    /// The size of what `reference` names (a whole file is asked for its size).
    async fn size(&self, key: &str, reference: &Ref) -> Result<u64> {
        let (url, length) = match reference {
            Ref::Inline(bytes) => return Ok(bytes.len() as u64),
            Ref::Range { url, length, .. } => (url, *length),
            Ref::Whole { url } => {
                let (store, target) = self.targets.resolve(url)?;
                let meta = store.head(&target).await.map_err(|e| refs_error(e.public_detail()))?;
                let meta = meta.ok_or_else(|| refs_error(format!("reference `{url}` of `{key}` does not exist")))?;
                (url, meta.size)
            }
        };
        if length > MAX_REFERENCED {
            return Err(RefsError::TooLarge { key: key.to_owned(), reference: url.to_string(), length }.into());
        }
        Ok(length)
    }

    /// `ranges` of what `reference` names (within its size); `merge` as for [`read_file`].
    async fn read(&self, reference: &Ref, ranges: &[Range<u64>], merge: bool) -> Result<Vec<Bytes>> {
        let (url, offset) = match reference {
            Ref::Inline(bytes) => {
                return Ok(ranges.iter().map(|r| bytes.slice(r.start as usize..r.end as usize)).collect());
            }
            Ref::Range { url, offset, .. } => (url, *offset),
            Ref::Whole { url } => (url, 0),
        };
        let file = ReferencedFile { at: self.targets.resolve(url)?, name: url, offset };
        read_file(&self.coalescer, &self.dataset, file, ranges, merge).await
    }

    fn meta(index: &Index, location: Path, reference: &Ref, size: u64) -> ObjectMeta {
        let identity = match reference {
            Ref::Inline(bytes) => xxhash_rust::xxh3::xxh3_64(bytes),
            Ref::Range { url, offset, length } => {
                xxhash_rust::xxh3::xxh3_64(format!("{url}\u{0}{offset}\u{0}{length}").as_bytes())
            }
            Ref::Whole { url } => xxhash_rust::xxh3::xxh3_64(url.as_bytes()),
        };
        ObjectMeta {
            location,
            last_modified: index.last_modified,
            size,
            e_tag: Some(format!("\"{}-{identity:016x}\"", index.tag)),
            version: None,
        }
    }

    /// The keys under `prefix` (`""` or ending in `/`) with their sizes where known
    /// without a request (0 for whole files).
    /// `deep`: every key below; else (a listing of one folder) chunk keys only of arrays
    /// the folder is in.
    async fn keys(&self, index: &Index, prefix: &str, deep: bool) -> Result<Vec<(String, u64)>> {
        let size = |r: &Ref| match r {
            Ref::Inline(b) => b.len() as u64,
            Ref::Range { length, .. } => *length,
            Ref::Whole { .. } => 0,
        };
        match &index.refs {
            Refs::Json(refs) => Ok(refs
                .range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, r)| (k.to_string(), size(r)))
                .collect()),
            Refs::Parquet(p) => {
                p.keys(prefix, deep).await.map(|keys| keys.into_iter().map(|(k, r)| (k, size(&r))).collect())
            }
        }
    }
}

/// Bytes of a file that references point into.
pub struct ReferencedFile<'a> {
    /// The store that holds it and its key there.
    pub at: (Store, String),
    /// How it is named to clients (its URL), and what concurrent reads of it share.
    pub name: &'a str,
    /// Where the referenced bytes start in it.
    pub offset: u64,
}

/// `ranges` of the bytes at `file.offset` in `file`, each checked to be as long as asked.
/// With `merge`, the read joins concurrent reads of the same file within the coalescing
/// window for where the file is (whole chunks, each its own key); without, the ranges are
/// read at once (ranges of one shard, which the reader has batched already).
pub async fn read_file(
    coalescer: &Coalescer<object_store::Error>,
    dataset: &Arc<str>,
    file: ReferencedFile<'_>,
    ranges: &[Range<u64>],
    merge: bool,
) -> Result<Vec<Bytes>> {
    let ReferencedFile { at: (store, key), name, offset } = file;
    let wanted: Vec<Range<u64>> = ranges.iter().map(|r| offset + r.start..offset + r.end).collect();
    let named = name.to_owned();
    let local = store.is_local();
    let read = move |ranges: Vec<Range<u64>>| async move {
        store.get_ranges(&key, &ranges, None).await.map_err(|e| {
            let missing = matches!(&e, super::StoreError::Backend { source: object_store::Error::NotFound { .. }, .. });
            let why = if missing { "does not exist".to_owned() } else { e.public_detail() };
            refs_error(format!("reading referenced file `{named}` failed: {why}"))
        })
    };
    let parts = if merge && coalescer.enabled(local) {
        coalescer.read((Arc::clone(dataset), name.to_owned(), String::new()), local, &wanted, read).await?
    } else {
        read(wanted).await?
    };
    if parts.len() != ranges.len() || parts.iter().zip(ranges).any(|(p, r)| p.len() as u64 != r.end - r.start) {
        return Err(refs_error(format!("referenced file `{name}` is shorter than its reference says")));
    }
    Ok(parts)
}

fn folder(prefix: Option<&Path>) -> String {
    match prefix.map(AsRef::as_ref) {
        None | Some("") => String::new(),
        Some(p) => format!("{p}/"),
    }
}

#[async_trait::async_trait]
impl ObjectStore for RefStore {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(read_only("reference sets are read-only"))
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        Err(read_only("reference sets are read-only"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let index = self.0.index().await?;
        let key = location.as_ref();
        let reference = self.0.lookup(&index, key).await?.ok_or_else(|| not_found(location))?;
        let size = self.0.size(key, &reference).await?;
        let meta = Inner::meta(&index, location.clone(), &reference, size);
        options.check_preconditions(&meta)?;
        let range = match &options.range {
            Some(range) => range.as_range(size).map_err(|e| refs_error(e.to_string()))?,
            None => 0..size,
        };
        let bytes = if options.head || range.is_empty() {
            Bytes::new()
        } else {
            // A whole chunk may be merged with other chunks of its file; a range of one (a
            // shard's inner chunks) comes from a batch the reader has merged already.
            let merge = options.range.is_none();
            self.0.read(&reference, std::slice::from_ref(&range), merge).await?.pop().unwrap_or_default()
        };
        Ok(answered(bytes, range, meta, options.head))
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let index = self.0.index().await?;
        let key = location.as_ref();
        let reference = self.0.lookup(&index, key).await?.ok_or_else(|| not_found(location))?;
        let size = self.0.size(key, &reference).await?;
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > size) {
            return Err(refs_error(format!("bytes {}..{} are not within `{key}` of {size} bytes", r.start, r.end)));
        }
        self.0.read(&reference, ranges, false).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        locations.map(|_| Err(read_only("reference sets are read-only"))).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let (inner, folder) = (Arc::clone(&self.0), folder(prefix));
        futures::stream::once(async move {
            let index = inner.index().await?;
            let keys = inner.keys(&index, &folder, true).await?;
            Ok::<_, object_store::Error>(keys.into_iter().filter_map(move |(key, size)| {
                let location = Path::parse(&key).ok()?;
                Some(Ok(ObjectMeta { location, last_modified: index.last_modified, size, e_tag: None, version: None }))
            }))
        })
        .map_ok(futures::stream::iter)
        .try_flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let index = self.0.index().await?;
        let folder = folder(prefix);
        let mut common_prefixes: Vec<Path> = Vec::new();
        let mut objects = Vec::new();
        for (key, size) in self.0.keys(&index, &folder, false).await? {
            let rest = &key[folder.len()..];
            if let Some((dir, _)) = rest.split_once('/') {
                let Ok(p) = Path::parse(format!("{folder}{dir}")) else { continue };
                if common_prefixes.last() != Some(&p) {
                    common_prefixes.push(p);
                }
            } else {
                let Ok(location) = Path::parse(&key) else { continue };
                let (last_modified, e_tag, version) = (index.last_modified, None, None);
                objects.push(ObjectMeta { location, last_modified, size, e_tag, version });
            }
        }
        common_prefixes.dedup();
        Ok(ListResult { common_prefixes, objects, extensions: Extensions::default() })
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(read_only("reference sets are read-only"))
    }
}
