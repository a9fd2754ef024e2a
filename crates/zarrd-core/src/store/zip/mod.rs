//! Zipped datasets, read in place: a dataset URL whose path has a segment ending in `.zip`
//! (a local file, or an object in any backend) is served from inside that archive, as
//! an [`ObjectStore`] whose objects are the archive's members, so everything above the
//! storage seam (reads, range reads, listings, `/zarr`, `/compat`) is unchanged.
//!
//! - **Opening**: on first use, one suffix range request for the archive's last
//!   [`directory::TAIL_LEN`] bytes (the end records and, for archives of up to about a
//!   thousand members, the whole central directory); a second range request only when the
//!   central directory starts before that. The directory is kept in memory with the
//!   dataset; a failed open is retried by the next request, never cached.
//! - **The dataset root**: the folder after `.zip` in the URL (`x.zip/inner/path`) when
//!   there is one; else the archive's root when it has `zarr.json`, `.zgroup` or `.zarray`
//!   (zarr-python's `ZipStore` writes members at the root); else, when every member is
//!   under one top folder that has one (`zip -r x.zip data.zarr`), that folder.
//! - **Members**: stored (method 0) members are read by range, mapped onto the archive (a
//!   shard's index and inner chunks are range reads of a member); the first read of a
//!   member reads its local header with the bytes wanted when they are near. A whole
//!   stored member read is checked against its CRC-32. Deflated (method 8) members are
//!   inflated whole (up to [`directory::MAX_INFLATED`] bytes), checked against their
//!   declared size and CRC-32, kept in a small cache, and ranges cut from them.
//! - **Versions**: every read of the archive is made with `If-Match` its `ETag` as
//!   opened, so a replaced archive fails as a changed object (never bytes of another
//!   version at old offsets) and is opened again by the next request. A member's `ETag`
//!   is derived from the archive's version, its offset and its CRC-32.
//! - **Errors**: a malformed archive or member is a [`ZipError`] (its message names the
//!   member, never the archive's path or URL), which the HTTP edge sends as a 502 problem.

mod directory;

pub use directory::ZipError;

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use crate::store::answer::{answered, read_only};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, Extensions, GetOptions, GetRange, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use directory::{DEFLATED, Directory, Member, STORED};

/// The `store` named by this layer's errors: their messages name members, never the
/// archive's path or URL, so clients are shown them.
use super::ZIP_STORE as STORE_NAME;

/// Bytes of inflated members kept, so a sharded array's range reads of one deflated
/// shard inflate it once.
const INFLATED_CACHE_BYTES: u64 = 64 << 20;

/// The MiB of deflated members being inflated at once, across all archives: two of the
/// largest ([`directory::MAX_INFLATED`]).
const INFLATING_UNITS: u32 = 512;
static INFLATING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(INFLATING_UNITS as usize);

/// A first read of a member also takes its data when the wanted bytes end within this
/// much of its start; else its local header is read alone first (a shard index at the end
/// of a large member must not read the whole member).
const NEAR: u64 = 1 << 20;

/// Inflated in a blocking task above this many compressed bytes; inline below.
const INLINE_INFLATE: usize = 256 * 1024;

/// Whether a path segment names a zip archive.
pub fn is_zip_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 4 && b[b.len() - 4..].eq_ignore_ascii_case(b".zip")
}

/// Splits an object path at its first segment ending in `.zip`: the archive and the
/// folder inside it (`""` or ending in `/`).
pub fn split_archive(path: &Path) -> Option<(Path, String)> {
    let parts: Vec<_> = path.parts().collect();
    let at = parts.iter().position(|p| is_zip_name(p.as_ref()))?;
    let inner = parts[at + 1..].iter().flat_map(|p| [p.as_ref(), "/"]).collect();
    Some((parts[..=at].iter().cloned().collect(), inner))
}

/// The archive as opened: its directory, its dataset root, its version.
struct Archive {
    directory: Directory,
    /// The dataset's folder in the archive: `""` or ending in `/`.
    root: String,
    /// The archive object as the opening read saw it.
    meta: ObjectMeta,
    /// A short hash of the archive's version, in members' `ETag`s and cache keys.
    tag: Arc<str>,
}

struct Inner {
    source: Arc<dyn ObjectStore>,
    archive: Path,
    /// The dataset's folder given in the URL, if any.
    root: Option<String>,
    opened: Mutex<Option<Arc<Archive>>>,
    /// One open at a time: requests that find the archive not yet open wait for it.
    opening: tokio::sync::Mutex<()>,
    inflated: moka::future::Cache<(Arc<str>, u64), Bytes>,
}

/// A zip archive in another store, served as a store of its members.
#[derive(Clone)]
pub struct ZipFs(Arc<Inner>);

impl std::fmt::Debug for ZipFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZipFs({}, {})", self.0.source, self.0.archive)
    }
}

impl std::fmt::Display for ZipFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

fn zip_error(e: ZipError) -> object_store::Error {
    object_store::Error::Generic { store: STORE_NAME, source: Box::new(e) }
}

fn not_found(location: &Path) -> object_store::Error {
    object_store::Error::NotFound { path: location.to_string(), source: "no such member in the zip archive".into() }
}

impl ZipFs {
    /// The archive at `archive` in `source`; `root` is the dataset's folder inside it
    /// (`""` or ending in `/`), or `None` to find it (see the module documentation).
    pub fn new(source: Arc<dyn ObjectStore>, archive: Path, root: Option<String>) -> Self {
        let inflated = moka::future::Cache::builder()
            .max_capacity(INFLATED_CACHE_BYTES)
            .weigher(|_, v: &Bytes| u32::try_from(v.len()).unwrap_or(u32::MAX))
            .build();
        let inner =
            Inner { source, archive, root, opened: Mutex::new(None), opening: tokio::sync::Mutex::new(()), inflated };
        Self(Arc::new(inner))
    }

    /// A local path naming a zip file (`x.zip`) or a folder in one (`x.zip/inner`);
    /// `None` when no segment of `path` ending in `.zip` is a file.
    pub fn local(path: &std::path::Path) -> Option<std::io::Result<Self>> {
        let mut archive = std::path::PathBuf::new();
        let mut components = path.components();
        while let Some(c) = components.next() {
            archive.push(c);
            if is_zip_name(&c.as_os_str().to_string_lossy()) && archive.is_file() {
                let inner: String = components.flat_map(|c| [c.as_os_str().to_string_lossy(), "/".into()]).collect();
                return Some(Self::open_file(&archive, (!inner.is_empty()).then_some(inner)));
            }
        }
        None
    }

    fn open_file(file: &std::path::Path, root: Option<String>) -> std::io::Result<Self> {
        // The real file (a symlinked archive is fine), read through the contained local
        // store of its folder for its single-hop range reads.
        let real = std::fs::canonicalize(file)?;
        let (Some(dir), Some(name)) = (real.parent(), real.file_name().and_then(|n| n.to_str())) else {
            return Err(std::io::Error::other("not a file with a UTF-8 name"));
        };
        let fs = super::contained::ContainedFs::new(dir)?;
        Ok(Self::new(Arc::new(fs), Path::from(name), root))
    }
}

impl Inner {
    /// The archive, opened now if it is not yet.
    async fn archive(&self) -> Result<Arc<Archive>> {
        if let Some(archive) = self.opened.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(archive);
        }
        let _one = self.opening.lock().await;
        if let Some(archive) = self.opened.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(archive);
        }
        let archive = Arc::new(self.open().await?);
        *self.opened.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&archive));
        Ok(archive)
    }

    /// Drops `archive` (it changed or vanished): the next request opens it again.
    fn forget(&self, archive: &Arc<Archive>) {
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        if opened.as_ref().is_some_and(|a| Arc::ptr_eq(a, archive)) {
            *opened = None;
        }
    }

    async fn open(&self) -> Result<Archive> {
        crate::ops::metrics::storage_request("archive");
        let options = GetOptions { range: Some(GetRange::Suffix(directory::TAIL_LEN)), ..GetOptions::default() };
        let tail = match self.source.get_opts(&self.archive, options).await {
            Err(object_store::Error::NotFound { .. }) => return Err(zip_error(ZipError::Missing)),
            other => other?,
        };
        let meta = tail.meta.clone();
        let tail_start = tail.range.start;
        let tail = tail.bytes().await?;
        crate::ops::metrics::storage_bytes(tail.len());
        if tail_start.checked_add(tail.len() as u64) != Some(meta.size) {
            return Err(zip_error(ZipError::Corrupt("its end was not read whole".into())));
        }
        let end = directory::find_end(&tail, meta.size).map_err(zip_error)?;
        let cd = end.directory.clone();
        let bytes = if let Some(at) = cd.start.checked_sub(tail_start) {
            tail.slice(at as usize..(cd.end - tail_start) as usize)
        } else {
            crate::ops::metrics::storage_request("archive");
            let options = GetOptions {
                range: Some(GetRange::Bounded(cd.clone())),
                if_match: meta.e_tag.clone(),
                ..GetOptions::default()
            };
            let bytes = self.source.get_opts(&self.archive, options).await?.bytes().await?;
            crate::ops::metrics::storage_bytes(bytes.len());
            if bytes.len() as u64 != cd.end - cd.start {
                return Err(zip_error(ZipError::Corrupt("its central directory was cut short".into())));
            }
            bytes
        };
        let directory = directory::parse_directory(&bytes, &end).map_err(zip_error)?;
        let root = self.root.clone().unwrap_or_else(|| directory.detect_root());
        let version = super::object_version(&meta);
        let tag = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(version.as_bytes())).into();
        Ok(Archive { directory, root, meta, tag })
    }

    /// Bytes of the archive, every range in one request with its neighbours, each request
    /// conditional on the archive's version as opened.
    async fn read_archive(&self, archive: &Arc<Archive>, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
        let merged = super::merged_ranges(&wanted);
        let fetched: Vec<(Range<u64>, Bytes)> = futures::stream::iter(merged)
            .map(|r| async move {
                let options = GetOptions {
                    range: Some(GetRange::Bounded(r.clone())),
                    if_match: archive.meta.e_tag.clone(),
                    ..GetOptions::default()
                };
                let bytes = self.source.get_opts(&self.archive, options).await?.bytes().await?;
                Ok::<_, object_store::Error>((r, bytes))
            })
            .buffered(8)
            .try_collect()
            .await
            .map_err(|e| {
                if matches!(e, object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) {
                    self.forget(archive);
                }
                e
            })?;
        ranges
            .iter()
            .map(|r| {
                if r.start >= r.end {
                    return Ok(Bytes::new());
                }
                fetched
                    .iter()
                    .find(|(o, b)| o.start <= r.start && r.end <= o.start + b.len() as u64)
                    .map(|(o, b)| b.slice((r.start - o.start) as usize..(r.end - o.start) as usize))
                    .ok_or_else(|| {
                        self.forget(archive);
                        zip_error(ZipError::Corrupt("it is shorter than its central directory says".into()))
                    })
            })
            .collect()
    }

    /// `ranges` of a member's (stored or compressed) data.
    async fn data(
        &self,
        archive: &Arc<Archive>,
        name: &str,
        member: &Member,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        let start = if let Some(&start) = member.data.get() {
            start
        } else {
            let last = ranges.iter().map(|r| r.end).max().unwrap_or(0);
            let span = if last <= NEAR { member.header_guess + last } else { directory::LOCAL_HEADER_LEN };
            let end = member.header.saturating_add(span).min(archive.directory.directory_start);
            let head = self.read_archive(archive, std::slice::from_ref(&(member.header..end))).await?;
            let head = head.into_iter().next().unwrap_or_default();
            let start =
                directory::data_start(name, member, &head, archive.directory.directory_start).map_err(zip_error)?;
            let _ = member.data.set(start);
            let have = member.header + head.len() as u64;
            if ranges.iter().all(|r| start + r.end <= have) {
                let at = start - member.header;
                return Ok(ranges.iter().map(|r| head.slice((at + r.start) as usize..(at + r.end) as usize)).collect());
            }
            start
        };
        let in_archive: Vec<Range<u64>> = ranges.iter().map(|r| start + r.start..start + r.end).collect();
        self.read_archive(archive, &in_archive).await
    }

    /// A deflated member inflated whole (once for concurrent readers, then from the cache).
    async fn inflated(&self, archive: &Arc<Archive>, name: &str, member: &Member) -> Result<Bytes> {
        directory::check_inflatable(name, member.size, member.compressed).map_err(zip_error)?;
        let key = (Arc::clone(&archive.tag), member.header);
        let load = async {
            let whole = 0..member.compressed;
            let compressed = self.data(archive, name, member, std::slice::from_ref(&whole)).await?;
            let compressed = compressed.into_iter().next().unwrap_or_default();
            // Inflating happens before the read path can reserve the result from the memory
            // budget (it learns the size from the result), so the members being inflated at
            // once are bounded here: at most INFLATING_BYTES together, however many requests.
            let units = u32::try_from(member.size.div_ceil(1 << 20).max(1)).unwrap_or(u32::MAX);
            let _inflating = INFLATING
                .acquire_many(units.min(INFLATING_UNITS))
                .await
                .map_err(|e| object_store::Error::Generic { store: STORE_NAME, source: Box::new(e) })?;
            let (name, size, crc32) = (name.to_owned(), member.size, member.crc32);
            let inflate = move || directory::inflate(&name, size, crc32, &compressed).map(Bytes::from);
            let inflated = if member.compressed as usize <= INLINE_INFLATE {
                inflate()
            } else {
                tokio::task::spawn_blocking(inflate)
                    .await
                    .map_err(|e| object_store::Error::Generic { store: "ZipFs", source: Box::new(e) })?
            };
            inflated.map_err(zip_error)
        };
        crate::ops::caches::get_or_try_load(&self.inflated, key, || load).await.map_err(unshare)
    }

    /// `ranges` of member `name`'s content.
    async fn read(
        &self,
        archive: &Arc<Archive>,
        name: &str,
        member: &Member,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > member.size) {
            return Err(object_store::Error::Generic {
                store: STORE_NAME,
                source: format!("bytes {}..{} are not within member `{name}` of {} bytes", r.start, r.end, member.size)
                    .into(),
            });
        }
        if member.encrypted() {
            return Err(zip_error(ZipError::Unsupported(format!("member `{name}` is encrypted"))));
        }
        match member.method {
            STORED if member.compressed != member.size => Err(zip_error(ZipError::Corrupt(format!(
                "stored member `{name}` has a compressed size unlike its size"
            )))),
            STORED => {
                let parts = self.data(archive, name, member, ranges).await?;
                if let ([whole], [range]) = (parts.as_slice(), ranges)
                    && *range == (0..member.size)
                {
                    directory::check_crc(name, member.crc32, whole).map_err(zip_error)?;
                }
                Ok(parts)
            }
            DEFLATED => {
                let all = self.inflated(archive, name, member).await?;
                Ok(ranges.iter().map(|r| all.slice(r.start as usize..r.end as usize)).collect())
            }
            method => Err(zip_error(ZipError::Unsupported(format!(
                "member `{name}` is compressed with method {method}; stored (0) and deflated (8) members are read"
            )))),
        }
    }
}

/// An error shared by the callers of one inflation, as each caller's own.
fn unshare(e: Arc<object_store::Error>) -> object_store::Error {
    Arc::try_unwrap(e).unwrap_or_else(|e| match &*e {
        object_store::Error::Precondition { path, .. } => {
            object_store::Error::Precondition { path: path.clone(), source: e.to_string().into() }
        }
        object_store::Error::Generic { store: STORE_NAME, source } => {
            object_store::Error::Generic { store: STORE_NAME, source: source.to_string().into() }
        }
        _ => object_store::Error::Generic { store: "ZipFs", source: e.to_string().into() },
    })
}

impl Archive {
    /// The member at `location` (a key under the dataset root).
    fn member(&self, location: &Path) -> Result<(String, &Member)> {
        let name = format!("{}{}", self.root, location.as_ref());
        match self.directory.members.get(&name) {
            Some(member) => Ok((name, member)),
            None => Err(not_found(location)),
        }
    }

    fn meta(&self, location: Path, member: &Member) -> ObjectMeta {
        ObjectMeta {
            location,
            last_modified: self.meta.last_modified,
            size: member.size,
            e_tag: Some(format!("\"{}-{:x}-{:08x}\"", self.tag, member.header, member.crc32)),
            version: None,
        }
    }

    /// The dataset's folder `prefix` in the archive (`""` or ending in `/`).
    fn folder(&self, prefix: Option<&Path>) -> String {
        match prefix.map(AsRef::as_ref) {
            None | Some("") => self.root.clone(),
            Some(p) => format!("{}{p}/", self.root),
        }
    }

    /// Every member under `prefix`, as objects of the dataset.
    fn list(&self, prefix: Option<&Path>) -> Vec<ObjectMeta> {
        let folder = self.folder(prefix);
        self.directory
            .members
            .range(folder.clone()..)
            .take_while(|(name, _)| name.starts_with(&folder))
            .filter_map(|(name, member)| {
                let key = Path::parse(&name[self.root.len()..]).ok()?;
                Some(self.meta(key, member))
            })
            .collect()
    }

    fn list_with_delimiter(&self, prefix: Option<&Path>) -> ListResult {
        let folder = self.folder(prefix);
        let (dirs, objects) = self.directory.entries(&folder);
        let key = |name: &str| Path::parse(format!("{}{name}", &folder[self.root.len()..])).ok();
        ListResult {
            common_prefixes: dirs.iter().filter_map(|d| key(d)).collect(),
            objects: objects.into_iter().filter_map(|(name, m)| Some(self.meta(key(name)?, m))).collect(),
            extensions: Extensions::default(),
        }
    }
}

#[async_trait::async_trait]
impl ObjectStore for ZipFs {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(read_only("zipped datasets are read-only"))
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        Err(read_only("zipped datasets are read-only"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let archive = self.0.archive().await?;
        let (name, member) = archive.member(location)?;
        let meta = archive.meta(location.clone(), member);
        options.check_preconditions(&meta)?;
        let range = match &options.range {
            Some(range) => range
                .as_range(member.size)
                .map_err(|e| object_store::Error::Generic { store: STORE_NAME, source: Box::new(e) })?,
            None => 0..member.size,
        };
        let bytes = if options.head || range.is_empty() {
            Bytes::new()
        } else {
            self.0.read(&archive, &name, member, std::slice::from_ref(&range)).await?.pop().unwrap_or_default()
        };
        Ok(answered(bytes, range, meta, options.head))
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let archive = self.0.archive().await?;
        let (name, member) = archive.member(location)?;
        self.0.read(&archive, &name, member, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        locations.map(|_| Err(read_only("zipped datasets are read-only"))).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let (inner, prefix) = (Arc::clone(&self.0), prefix.cloned());
        futures::stream::once(async move { inner.archive().await.map(|a| a.list(prefix.as_ref())) })
            .map_ok(|objects| futures::stream::iter(objects.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        Ok(self.0.archive().await?.list_with_delimiter(prefix))
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(read_only("zipped datasets are read-only"))
    }
}
