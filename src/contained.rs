//! A local dataset that cannot be escaped: `object_store`'s `LocalFileSystem` follows
//! symlinks wherever they point, so a link inside a dataset (`etclink -> /etc`) would
//! serve any file the process can read. [`ContainedFs`] resolves every path it is asked
//! for and answers "not found" for anything whose real location is outside the dataset's
//! root — on every route, since every read goes through it. Listings leave such entries out.
//!
//! Keys that cannot name a file (a component over `NAME_MAX`, a path through a regular
//! file, a symlink loop) are "not found" too, never a backend failure.
//!
//! The check and the open are two system calls, so a symlink swapped in between could
//! still be followed; that needs write access to the dataset directory, which is already
//! full control over what zarrd serves.

use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};

/// Longest file name component on the file systems zarrd runs on (`NAME_MAX`).
const NAME_MAX: usize = 255;

#[derive(Debug)]
pub struct ContainedFs {
    inner: Arc<LocalFileSystem>,
    /// The dataset directory, canonical (symlinks in the configured path itself resolved).
    root: PathBuf,
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
        Ok(Self { inner: Arc::new(inner), root })
    }

    /// Fails with "not found" unless `location` resolves to a path inside the root.
    /// (A few metadata system calls answered from the kernel's caches, so done inline.)
    fn check(&self, location: &Path) -> Result<()> {
        if location.as_ref().is_empty() {
            return Ok(()); // the root itself
        }
        if location.parts().any(|p| p.as_ref().len() > NAME_MAX) {
            return Err(not_found(location, "a path component is longer than any file name"));
        }
        let path = self.inner.path_to_filesystem(location)?;
        let real = match std::fs::canonicalize(&path) {
            Ok(real) => real,
            Err(e) if cannot_exist(&e) => return Err(not_found(location, "no such file")),
            // Anything else (permissions, I/O) is reported by the read itself.
            Err(_) => return Ok(()),
        };
        if real.starts_with(&self.root) {
            Ok(())
        } else {
            tracing::warn!(key = %location, "refused a path that resolves outside the dataset root (symlink)");
            Err(not_found(location, "resolves outside the dataset"))
        }
    }

    fn contained(&self, location: &Path) -> bool {
        self.check(location).is_ok()
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
        let this = Self { inner: Arc::clone(&self.inner), root: self.root.clone() };
        self.inner
            .list(prefix)
            .filter(move |m| std::future::ready(m.as_ref().map_or(true, |m| this.contained(&m.location))))
            .boxed()
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        let this = Self { inner: Arc::clone(&self.inner), root: self.root.clone() };
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
    }
}
