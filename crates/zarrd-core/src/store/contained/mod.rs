//! A local dataset that cannot be escaped: `object_store`'s `LocalFileSystem` follows
//! symlinks wherever they point, so a link inside a dataset (`etclink -> /etc`) would
//! serve any file the process can read. [`ContainedFs`] resolves every path it is asked
//! for and answers "not found" for anything whose real location is outside the dataset's
//! root — on every route, since every read goes through it. Listings leave such entries out.
//!
//! Keys that cannot name a file (a component over `NAME_MAX`, a path through a regular
//! file, a symlink loop) are "not found" too, never a backend failure.
//!
//! Range reads (every chunk and shard read) are confined by the kernel: `openat2` with
//! `RESOLVE_BENEATH` below the root ([`beneath`]), so there is no window between check and
//! open. Other calls (whole objects, heads, listings), keys with unusual
//! characters and paths through absolute symlinks resolve the path with `realpath` first;
//! there the check and the open are two system calls, so a symlink swapped in between
//! could still be followed — that needs write access to the dataset directory, which is
//! already full control over what zarrd serves.

mod beneath;

use std::io::ErrorKind;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;

use beneath::Wait;
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, Extensions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// Longest file name component on the file systems zarrd runs on (`NAME_MAX`).
const NAME_MAX: usize = 255;

#[derive(Debug)]
pub struct ContainedFs {
    inner: Arc<LocalFileSystem>,
    /// The dataset directory, canonical (symlinks in the configured path itself resolved).
    root: Arc<std::path::Path>,
    /// Whether range reads are confined by the kernel (`openat2` exists here).
    confined: bool,
}

impl std::fmt::Display for ContainedFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ContainedFs({})", self.inner)
    }
}

fn not_found(location: &Path, why: &str) -> object_store::Error {
    object_store::Error::NotFound { path: location.to_string(), source: why.to_owned().into() }
}

impl ContainedFs {
    /// Serves the directory `root` (which must exist).
    pub fn new(root: &std::path::Path) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        let inner = LocalFileSystem::new_with_prefix(&root).map_err(std::io::Error::other)?;
        let confined = beneath::available(&root);
        Ok(Self { inner: Arc::new(inner), root: root.into(), confined })
    }

    /// Fails with "not found" unless `location` resolves to a path inside the root.
    /// (A few metadata system calls answered from the kernel's caches, so done inline.)
    fn check(&self, location: &Path) -> Result<()> {
        check_in(&self.inner, &self.root, location)
    }

    /// Another handle on the same directory (for listing streams that outlive `&self`).
    fn handle(&self) -> Self {
        Self { inner: Arc::clone(&self.inner), root: Arc::clone(&self.root), confined: self.confined }
    }

    fn contained(&self, location: &Path) -> bool {
        self.check(location).is_ok()
    }

    /// A bounded range of at most [`EAGER_MAX`] bytes, opened and read in one go: from
    /// the page cache right here when it is there and the range is small (no thread
    /// hand-off at all), else in one blocking task — containment, open, `fstat` (`ETag`,
    /// preconditions) and `pread` together. `LocalFileSystem` takes two blocking-pool hops
    /// for the same (open and stat, then the read), each a thread wake-up that costs as
    /// much as reading a tile's bytes from the page cache. `None` when the range is not
    /// within the file (the general path then reports it as `LocalFileSystem` does).
    async fn get_range_eagerly(
        &self,
        location: &Path,
        options: GetOptions,
        range: Range<u64>,
    ) -> Result<Option<GetResult>> {
        let mut confined = self.confined;
        if confined && range.end - range.start <= INLINE_MAX {
            match confined_read(&self.root, location, &options, range.clone(), Wait::No) {
                Confined::Read(result) => return result,
                Confined::WouldBlock => {}
                Confined::Unconfined => confined = false,
            }
        }
        let (inner, root, location) = (Arc::clone(&self.inner), Arc::clone(&self.root), location.clone());
        let read = tokio::task::spawn_blocking(move || {
            if confined {
                match confined_read(&root, &location, &options, range.clone(), Wait::Yes) {
                    Confined::Read(result) => return result,
                    Confined::WouldBlock | Confined::Unconfined => {}
                }
            }
            check_in(&inner, &root, &location)?;
            let path = inner.path_to_filesystem(&location)?;
            let file = std::fs::File::open(&path).map_err(|e| io_error(&location, e))?;
            read_opened(&file, &location, &options, range, Wait::Yes).map_err(|e| io_error(&location, e))?
        });
        read.await.map_err(|e| object_store::Error::Generic { store: "ContainedFs", source: Box::new(e) })?
    }

    /// A whole object (an unsharded chunk) opened on the requesting task when the kernel
    /// can resolve its path from its caches: the confined open and `fstat` only, so the
    /// caller reserves memory for its size before reading it ([`read_file`]).
    /// `LocalFileSystem` takes a `realpath` walk and two blocking-pool hops for the same;
    /// a point's series on map-major data reads a thousand such objects. `None` sends
    /// the call down the general path (no `openat2`, an unusual key, an absolute symlink,
    /// or a lookup that would wait for the disk).
    fn open_whole_inline(&self, location: &Path, options: &GetOptions) -> Option<Result<GetResult>> {
        if !self.confined {
            return None;
        }
        let relative = plain_file_path(location)?;
        let file = match beneath::open_file(&self.root, relative, Wait::No) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.raw_os_error() == Some(beneath::ESCAPES) => return None,
            Err(e) => return Some(Err(io_error(location, e))),
        };
        let meta = match opened_meta(&file, location, options) {
            Ok(Ok(meta)) => meta,
            Ok(Err(e)) => return Some(Err(e)),
            Err(e) => return Some(Err(io_error(location, e))),
        };
        let path = match self.inner.path_to_filesystem(location) {
            Ok(path) => path,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(GetResult {
            payload: GetResultPayload::File(file, path),
            attributes: Attributes::default(),
            range: 0..meta.size,
            meta,
            extensions: Extensions::default(),
        }))
    }
}

/// The bytes `range` of an opened local file (a `GetResultPayload::File`, as this store
/// and `LocalFileSystem` answer whole objects): small ranges in the page cache are read on
/// the calling task, anything else on the blocking pool — one hop, where
/// `GetResult::bytes` takes one for every read.
pub async fn read_file(file: std::fs::File, range: Range<u64>) -> std::io::Result<Bytes> {
    let len = usize::try_from(range.end - range.start).map_err(std::io::Error::other)?;
    if range.end - range.start <= INLINE_MAX {
        match beneath::read_at(&file, range.start, len, Wait::No) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            read => return read.map(Bytes::from),
        }
    }
    tokio::task::spawn_blocking(move || beneath::read_at(&file, range.start, len, Wait::Yes))
        .await
        .map_err(std::io::Error::other)?
        .map(Bytes::from)
}

/// What a read through the kernel-confined directory came to.
enum Confined {
    Read(Result<Option<GetResult>>),
    /// Part of it is not in the kernel's caches: read again, allowed to wait.
    WouldBlock,
    /// An unusual key, or a path the kernel would not resolve beneath the root (an
    /// absolute symlink, or one leading out): the `realpath` check decides.
    Unconfined,
}

fn confined_read(
    root: &std::path::Path,
    location: &Path,
    options: &GetOptions,
    range: Range<u64>,
    wait: Wait,
) -> Confined {
    let Some(relative) = plain_file_path(location) else { return Confined::Unconfined };
    let file = match beneath::open_file(root, relative, wait) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::WouldBlock => return Confined::WouldBlock,
        Err(e) if e.raw_os_error() == Some(beneath::ESCAPES) => return Confined::Unconfined,
        Err(e) => return Confined::Read(Err(io_error(location, e))),
    };
    match read_opened(&file, location, options, range, wait) {
        Ok(result) => Confined::Read(result),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Confined::WouldBlock,
        Err(e) => Confined::Read(Err(io_error(location, e))),
    }
}

/// The file path of `location` relative to the root when it is made of the characters
/// Zarr keys use (ASCII letters, digits, `.`, `_`, `-`, separated by `/`): for those,
/// `LocalFileSystem`'s URL-based mapping is the identity. Anything else (percent-encoded
/// parts, `#`) takes the general path, so both map keys to the same files.
fn plain_file_path(location: &Path) -> Option<&str> {
    let key = location.as_ref();
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/');
    (!key.is_empty() && key.bytes().all(plain)).then_some(key)
}

/// `fstat`, preconditions and the read of an opened file. The outer `io::Result` is the
/// file system's answer (including "would block"); the inner one the store's verdict.
fn read_opened(
    file: &std::fs::File,
    location: &Path,
    options: &GetOptions,
    range: Range<u64>,
    wait: Wait,
) -> std::io::Result<Result<Option<GetResult>>> {
    let meta = match opened_meta(file, location, options)? {
        Ok(meta) => meta,
        Err(e) => return Ok(Err(e)),
    };
    if range.end > meta.size {
        return Ok(Ok(None));
    }
    let bytes = Bytes::from(beneath::read_at(file, range.start, (range.end - range.start) as usize, wait)?);
    Ok(Ok(Some(GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(bytes) }).boxed()),
        attributes: Attributes::default(),
        range,
        meta,
        extensions: Extensions::default(),
    })))
}

/// The `ObjectMeta` of an opened file (`fstat`), once it is known to be a file and to
/// meet `options`' preconditions. The outer `io::Result` is the file system's answer, the
/// inner one the store's verdict.
fn opened_meta(file: &std::fs::File, location: &Path, options: &GetOptions) -> std::io::Result<Result<ObjectMeta>> {
    let metadata = file.metadata()?;
    if metadata.is_dir() {
        return Ok(Err(not_found(location, "is a directory")));
    }
    let meta = object_meta(location.clone(), &metadata);
    Ok(options.check_preconditions(&meta).map(|()| meta))
}

/// Ranges up to this size are read from the page cache on the requesting task when they
/// are there: a copy of at most this much (tens of µs) is less than a thread hand-off.
const INLINE_MAX: u64 = 1 << 20;

/// Bounded ranges up to this size are read by [`ContainedFs::get_range_eagerly`]; larger
/// ones (whole objects streamed by `/zarr`) go through `LocalFileSystem`, which streams them.
const EAGER_MAX: u64 = 16 << 20;

/// `ObjectMeta` exactly as `LocalFileSystem` makes it (its `ETag` is
/// `"{inode:x}-{mtime µs:x}-{size:x}"`, quotes included), so validators are the same whichever path read a file.
fn object_meta(location: Path, metadata: &std::fs::Metadata) -> ObjectMeta {
    let modified = metadata.modified().unwrap_or(std::time::UNIX_EPOCH);
    let mtime = modified.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_micros();
    let inode = std::os::unix::fs::MetadataExt::ino(metadata);
    ObjectMeta {
        location,
        last_modified: modified.into(),
        size: metadata.len(),
        e_tag: Some(format!("\"{inode:x}-{mtime:x}-{:x}\"", metadata.len())),
        version: None,
    }
}

fn io_error(location: &Path, e: std::io::Error) -> object_store::Error {
    if cannot_exist(&e) {
        object_store::Error::NotFound { path: location.to_string(), source: Box::new(e) }
    } else {
        object_store::Error::Generic { store: "ContainedFs", source: Box::new(e) }
    }
}

/// Fails with "not found" unless `location` resolves to a path inside `root`.
/// (A few metadata system calls answered from the kernel's caches.)
fn check_in(inner: &LocalFileSystem, root: &std::path::Path, location: &Path) -> Result<()> {
    if location.as_ref().is_empty() {
        return Ok(()); // the root itself
    }
    if location.parts().any(|p| p.as_ref().len() > NAME_MAX) {
        return Err(not_found(location, "a path component is longer than any file name"));
    }
    let path = inner.path_to_filesystem(location)?;
    let real = match std::fs::canonicalize(&path) {
        Ok(real) => real,
        Err(e) if cannot_exist(&e) => return Err(not_found(location, "no such file")),
        // Anything else (permissions, I/O) is reported by the read itself.
        Err(_) => return Ok(()),
    };
    if real.starts_with(root) {
        Ok(())
    } else {
        tracing::warn!(key = %location, "refused a path that resolves outside the dataset root (symlink)");
        Err(not_found(location, "resolves outside the dataset"))
    }
}

/// Errors meaning no file can exist at the path.
fn cannot_exist(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::InvalidFilename)
        || e.raw_os_error() == Some(40) // ELOOP: a symlink loop
}

#[async_trait::async_trait]
impl ObjectStore for ContainedFs {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.range.is_none()
            && !options.head
            && let Some(opened) = self.open_whole_inline(location, &options)
        {
            return opened;
        }
        if let Some(GetRange::Bounded(range)) = &options.range
            && !options.head
            && range.start < range.end
            && range.end - range.start <= EAGER_MAX
        {
            let range = range.clone();
            if let Some(result) = self.get_range_eagerly(location, options.clone(), range).await? {
                return Ok(result);
            }
        }
        self.check(location)?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[std::ops::Range<u64>]) -> Result<Vec<Bytes>> {
        self.check(location)?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let this = self.handle();
        self.inner
            .list(prefix)
            .filter(move |m| std::future::ready(m.as_ref().map_or(true, |m| this.contained(&m.location))))
            .boxed()
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        let this = self.handle();
        self.inner
            .list_with_offset(prefix, offset)
            .filter(move |m| std::future::ready(m.as_ref().map_or(true, |m| this.contained(&m.location))))
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        if let Some(prefix) = prefix {
            self.check(prefix)?;
        }
        let mut listing = self.inner.list_with_delimiter(prefix).await?;
        listing.common_prefixes.retain(|p| self.contained(p));
        listing.objects.retain(|m| self.contained(&m.location));
        Ok(listing)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.check(from)?;
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn symlinks_out_of_the_root_are_not_found() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("zarr.json"), b"{}").unwrap();
        std::fs::create_dir(root.path().join("inside")).unwrap();
        std::fs::write(root.path().join("inside/data"), b"ok").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("outlink")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("filelink")).unwrap();
        std::os::unix::fs::symlink(root.path().join("inside"), root.path().join("inlink")).unwrap();
        let fs = ContainedFs::new(root.path()).unwrap();
        for escaping in ["outlink/secret", "filelink"] {
            let err = fs.get(&Path::from(escaping)).await.unwrap_err();
            assert!(matches!(err, object_store::Error::NotFound { .. }), "{escaping}: {err}");
            assert!(fs.head(&Path::from(escaping)).await.is_err(), "{escaping}");
            assert!(fs.get_ranges(&Path::from(escaping), &[0..1, 1..2]).await.is_err(), "{escaping}");
        }
        // Links that stay inside the dataset work.
        assert_eq!(fs.get(&Path::from("inlink/data")).await.unwrap().bytes().await.unwrap().as_ref(), b"ok");
        // Keys that cannot exist are "not found", not backend failures.
        for impossible in ["zarr.json/x", &"n".repeat(300)] {
            let err = fs.get(&Path::from(impossible)).await.unwrap_err();
            assert!(matches!(err, object_store::Error::NotFound { .. }), "{impossible}: {err}");
        }
        let listing = fs.list_with_delimiter(None).await.unwrap();
        let mut dirs: Vec<&str> = listing.common_prefixes.iter().map(AsRef::as_ref).collect();
        dirs.sort_unstable();
        assert_eq!(dirs, ["inlink", "inside"]);
        let names: Vec<String> = listing.objects.iter().map(|m| m.location.to_string()).collect();
        assert_eq!(names, ["zarr.json"]);
        let all: Vec<ObjectMeta> = fs.list(None).map(|m| m.unwrap()).collect().await;
        assert!(all.iter().all(|m| !m.location.as_ref().contains("secret")), "{all:?}");
        // Range reads (kernel-confined, with the realpath check for absolute links) refuse
        // escaping links too, by absolute or relative symlinks, and follow those inside.
        std::os::unix::fs::symlink("../inside", root.path().join("inside/relative-in")).unwrap();
        // Both temporary directories are in the same parent.
        let outside_name = outside.path().file_name().unwrap().to_str().unwrap();
        let escape = format!("../../{outside_name}/secret");
        std::os::unix::fs::symlink(escape, root.path().join("inside/relative-out")).unwrap();
        assert_eq!(std::fs::read(root.path().join("inside/relative-out")).unwrap(), b"secret");
        let ranged = GetOptions { range: Some(GetRange::Bounded(0..2)), ..GetOptions::default() };
        for escaping in ["filelink", "outlink/secret", "inside/relative-out"] {
            let err = fs.get_opts(&Path::from(escaping), ranged.clone()).await.unwrap_err();
            assert!(matches!(err, object_store::Error::NotFound { .. }), "{escaping}: {err}");
        }
        for inside in ["inlink/data", "inside/relative-in/data", "inside/data"] {
            let read = fs.get_opts(&Path::from(inside), ranged.clone()).await.unwrap();
            assert_eq!(read.bytes().await.unwrap().as_ref(), b"ok", "{inside}");
        }
    }

    #[tokio::test]
    async fn range_reads_agree_with_local_file_system() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("shard"), b"0123456789").unwrap();
        let fs = ContainedFs::new(root.path()).unwrap();
        let location = Path::from("shard");
        // `head` goes through LocalFileSystem; bounded ranges are read in one hop.
        let head = fs.head(&location).await.unwrap();
        let ranged = |if_match: Option<&str>| GetOptions {
            range: Some(GetRange::Bounded(2..5)),
            if_match: if_match.map(str::to_owned),
            ..GetOptions::default()
        };
        let result = fs.get_opts(&location, ranged(head.e_tag.as_deref())).await.unwrap();
        assert_eq!(result.meta.e_tag, head.e_tag);
        assert_eq!(result.meta.last_modified, head.last_modified);
        assert_eq!((result.range.clone(), result.meta.size), (2..5, 10));
        assert_eq!(result.bytes().await.unwrap().as_ref(), b"234");
        let err = fs.get_opts(&location, ranged(Some("\"other\""))).await.unwrap_err();
        assert!(matches!(err, object_store::Error::Precondition { .. }), "{err}");
        // Past the end: the general path's error, as before.
        let past = GetOptions { range: Some(GetRange::Bounded(8..20)), ..GetOptions::default() };
        let general = fs.inner.get_opts(&location, past.clone()).await.map(|r| r.range);
        assert_eq!(fs.get_opts(&location, past).await.map(|r| r.range).ok(), general.ok());
        let missing = fs.get_opts(&Path::from("nothing"), ranged(None)).await.unwrap_err();
        assert!(matches!(missing, object_store::Error::NotFound { .. }), "{missing}");
    }

    #[tokio::test]
    async fn whole_objects_agree_with_local_file_system() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("c")).unwrap();
        std::fs::write(root.path().join("c/0"), b"0123456789").unwrap();
        let fs = ContainedFs::new(root.path()).unwrap();
        let location = Path::from("c/0");
        // Opened here (where openat2 exists), read by `Store::read_body` after the size is known.
        let ours = fs.get_opts(&location, GetOptions::default()).await.unwrap();
        let theirs = fs.inner.get_opts(&location, GetOptions::default()).await.unwrap();
        assert_eq!((ours.range.clone(), &ours.meta), (theirs.range.clone(), &theirs.meta));
        let GetResultPayload::File(file, _) = ours.payload else { panic!("a whole object is a file payload") };
        assert_eq!(read_file(file, 3..7).await.unwrap().as_ref(), b"3456");
        assert_eq!(fs.get(&location).await.unwrap().bytes().await.unwrap().as_ref(), b"0123456789");
        let if_match = |tag: &str| GetOptions { if_match: Some(tag.to_owned()), ..GetOptions::default() };
        let tag = theirs.meta.e_tag.clone().unwrap();
        assert_eq!(fs.get_opts(&location, if_match(&tag)).await.unwrap().meta.e_tag, Some(tag));
        let err = fs.get_opts(&location, if_match("\"other\"")).await.unwrap_err();
        assert!(matches!(err, object_store::Error::Precondition { .. }), "{err}");
        for absent in ["c/1", "c", "c/0/x"] {
            let err = fs.get_opts(&Path::from(absent), GetOptions::default()).await.unwrap_err();
            assert!(matches!(err, object_store::Error::NotFound { .. }), "{absent}: {err}");
        }
        // A file that shrank between the open and the read is an error, not short data.
        let opened = fs.get_opts(&location, GetOptions::default()).await.unwrap();
        std::fs::write(root.path().join("c/0"), b"01").unwrap();
        let GetResultPayload::File(file, _) = opened.payload else { panic!("a file payload") };
        assert!(read_file(file, opened.range).await.is_err());
    }
}
