//! One snapshot of an Icechunk repository as an [`ObjectStore`] of its Zarr keys: metadata
//! documents and native chunks through the `icechunk` crate; inline chunks from the
//! manifest; virtual chunks read by zarrd itself, only under the dataset's `virtual_refs`
//! (the same [`Targets`] and merged reads as kerchunk references), never through the
//! crate's own fetchers. A snapshot never changes, so every key's `ETag` is its snapshot id
//! and its identity.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::store::answer::{answered, read_only};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use icechunk::format::manifest::{ChunkPayload, ChunkRef};
use icechunk::format::{ByteRange, ChunkIndices};
use object_store::path::Path;
use object_store::{
    CopyOptions, Extensions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use crate::store::Store;
use crate::store::coalesce::Coalescer;
use crate::store::refs::targets::Targets;
use crate::store::refs::{MAX_REFERENCED, RefsError};

/// The `store` of this layer's errors (their messages name keys, shown to clients).
pub const ICECHUNK_STORE: &str = "icechunk";

pub fn error(message: impl std::fmt::Display) -> object_store::Error {
    object_store::Error::Generic { store: ICECHUNK_STORE, source: message.to_string().into() }
}

pub struct Snapshot {
    pub dataset: Arc<str>,
    pub id: String,
    pub store: icechunk::Store,
    pub last_modified: chrono::DateTime<chrono::Utc>,
    /// Virtual chunk containers by name (`vcc://NAME/…` locations), their URL prefixes.
    pub containers: HashMap<String, String>,
    pub targets: Arc<Targets>,
    pub coalescer: Coalescer<object_store::Error>,
    /// zarrd's own store of the repository (its native chunks are read through it).
    pub repo_store: Option<Store>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IcechunkSnapshot({}@{})", self.dataset, self.id)
    }
}

impl std::fmt::Display for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// What a key names.
enum Key {
    Metadata,
    /// A chunk of the array at `node` (an absolute Icechunk path).
    Chunk {
        node: String,
        coords: Vec<u32>,
    },
}

fn parse_key(key: &str) -> Option<Key> {
    if key == "zarr.json" || key.ends_with("/zarr.json") {
        return Some(Key::Metadata);
    }
    // `NODE/c/I/J…` (or `c/I/J…` for a root array, `NODE/c` for a 0-d array).
    let (node, coords) = if let Some(rest) = key.strip_prefix("c/") {
        ("", rest)
    } else if key == "c" {
        ("", "")
    } else if let Some(node) = key.strip_suffix("/c") {
        (node, "")
    } else {
        let at = key.rfind("/c/")?;
        (&key[..at], &key[at + 3..])
    };
    let coords = if coords.is_empty() {
        Vec::new()
    } else {
        coords.split('/').map(|c| c.parse().ok()).collect::<Option<Vec<u32>>>()?
    };
    Some(Key::Chunk { node: format!("/{node}"), coords })
}

/// `range` of `bytes` (the object `key`), checked.
fn slice_of(bytes: &Bytes, range: &Range<u64>, key: &str) -> Result<Bytes> {
    if range.start > range.end || range.end > bytes.len() as u64 {
        return Err(error(format!("bytes {}..{} are not within `{key}`", range.start, range.end)));
    }
    Ok(bytes.slice(range.start as usize..range.end as usize))
}

fn not_found(location: &Path) -> object_store::Error {
    object_store::Error::NotFound { path: location.to_string(), source: "no such key in this snapshot".into() }
}

/// Whether an `icechunk` error says "no such key / node".
fn is_not_found<E: std::fmt::Debug>(e: &E) -> bool {
    let text = format!("{e:?}");
    text.contains("NotFound")
}

impl Snapshot {
    /// The payload of a chunk key, `None` when the chunk is not written.
    async fn payload(&self, node: &str, coords: Vec<u32>) -> Result<Option<ChunkPayload>> {
        let path = icechunk::format::Path::try_from(node).map_err(error)?;
        let session = self.store.session();
        let session = session.read().await;
        match session.get_chunk_ref(&path, &ChunkIndices(coords)).await {
            Ok(payload) => Ok(payload),
            Err(e) if is_not_found(&e.kind) => Ok(None),
            Err(e) => Err(error(format!("reading the manifest of `{node}` failed: {}", e.kind))),
        }
    }

    fn meta(&self, location: Path, size: u64) -> ObjectMeta {
        let identity = xxhash_rust::xxh3::xxh3_64(location.as_ref().as_bytes());
        ObjectMeta {
            location,
            last_modified: self.last_modified,
            size,
            e_tag: Some(format!("\"{}-{identity:016x}\"", self.id)),
            version: None,
        }
    }

    /// A virtual chunk's location as a URL (`vcc://NAME/…` through its container).
    fn expand(&self, location: &str) -> Result<String> {
        let Some(rest) = location.strip_prefix("vcc://") else { return Ok(location.to_owned()) };
        let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
        let prefix = self
            .containers
            .get(name)
            .ok_or_else(|| error(format!("virtual chunk `{location}` names no container of this repository")))?;
        Ok(format!("{prefix}{path}"))
    }

    /// `ranges` of virtual chunk bytes at `offset` in `url`, read under `virtual_refs`.
    async fn read_virtual(&self, url: &str, offset: u64, ranges: &[Range<u64>], merge: bool) -> Result<Vec<Bytes>> {
        let (store, target) = self.targets.resolve(url)?;
        self.read_file((store, target), url, offset, ranges, merge).await
    }

    /// `ranges` of the native chunk `key` (`reference` in the repository's `chunks/`): read
    /// by zarrd's own store of the repository when it has one (merged like any file's
    /// reads), else through the `icechunk` crate.
    async fn read_native(
        &self,
        key: &str,
        reference: &ChunkRef,
        ranges: &[Range<u64>],
        merge: bool,
    ) -> Result<Vec<Bytes>> {
        if let Some(repo) = &self.repo_store {
            let file = format!("chunks/{}", reference.id);
            let label = format!("icechunk native chunk `{key}`");
            return self.read_file((repo.clone(), file), &label, reference.offset, ranges, merge).await;
        }
        futures::future::try_join_all(ranges.iter().map(|r| async move {
            crate::ops::metrics::storage_request("icechunk");
            let bytes = self
                .store
                .get(key, &ByteRange::Bounded(r.clone()))
                .await
                .map_err(|e| error(format!("reading chunk `{key}` failed: {}", e.kind)))?;
            crate::ops::metrics::storage_bytes(bytes.len());
            Ok::<_, object_store::Error>(bytes)
        }))
        .await
    }

    /// `ranges` at `offset` in the object `key` of `store` (named `label` in errors); with
    /// `merge`, merged with concurrent reads of the same object (whole chunks of one file).
    async fn read_file(
        &self,
        (store, key): (Store, String),
        label: &str,
        offset: u64,
        ranges: &[Range<u64>],
        merge: bool,
    ) -> Result<Vec<Bytes>> {
        let wanted: Vec<Range<u64>> = ranges.iter().map(|r| offset + r.start..offset + r.end).collect();
        let (named, batch_key) = (label.to_owned(), key.clone());
        let read = move |ranges: Vec<Range<u64>>| async move {
            store
                .get_ranges(&key, &ranges, None)
                .await
                .map_err(|e| error(format!("reading `{named}` failed: {}", e.public_detail())))
        };
        let parts = if merge && self.coalescer.enabled() {
            let batch = (Arc::clone(&self.dataset), batch_key, String::new());
            self.coalescer.read(batch, &wanted, read).await?
        } else {
            read(wanted).await?
        };
        if parts.len() != ranges.len() || parts.iter().zip(ranges).any(|(p, r)| p.len() as u64 != r.end - r.start) {
            return Err(error(format!("`{label}` is shorter than its reference says")));
        }
        Ok(parts)
    }

    async fn get(&self, location: &Path, options: &GetOptions) -> Result<(ObjectMeta, Bytes, Range<u64>)> {
        let key = location.as_ref();
        let Some(parsed) = parse_key(key) else { return Err(not_found(location)) };
        let bytes_of = |size: u64| -> Result<Range<u64>> {
            match &options.range {
                Some(range) => range.as_range(size).map_err(error),
                None => Ok(0..size),
            }
        };
        match parsed {
            Key::Metadata => {
                crate::ops::metrics::storage_request("icechunk");
                let doc = match self.store.get(key, &ByteRange::From(0)).await {
                    Ok(doc) => doc,
                    Err(e) if is_not_found(&e.kind) => return Err(not_found(location)),
                    Err(e) => return Err(error(format!("reading `{key}` failed: {}", e.kind))),
                };
                let meta = self.meta(location.clone(), doc.len() as u64);
                options.check_preconditions(&meta)?;
                let range = bytes_of(doc.len() as u64)?;
                Ok((meta, doc.slice(range.start as usize..range.end as usize), range))
            }
            Key::Chunk { node, coords } => {
                let payload = self.payload(&node, coords).await?.ok_or_else(|| not_found(location))?;
                let size = match &payload {
                    ChunkPayload::Inline(b) => b.len() as u64,
                    ChunkPayload::Ref(r) => r.length,
                    ChunkPayload::Virtual(v) => v.length,
                    _ => return Err(error(format!("chunk `{key}` is of a kind this server does not read"))),
                };
                let meta = self.meta(location.clone(), size);
                options.check_preconditions(&meta)?;
                let range = bytes_of(size)?;
                if options.head || range.is_empty() {
                    return Ok((meta, Bytes::new(), range));
                }
                let bytes = match payload {
                    ChunkPayload::Inline(b) => b.slice(range.start as usize..range.end as usize),
                    ChunkPayload::Ref(r) => {
                        let merge = options.range.is_none();
                        let parts = self.read_native(key, &r, std::slice::from_ref(&range), merge).await?;
                        parts.into_iter().next().unwrap_or_default()
                    }
                    ChunkPayload::Virtual(v) => {
                        let url = self.expand(v.location.url())?;
                        if v.length > MAX_REFERENCED {
                            let (reference, length) = (url, v.length);
                            return Err(RefsError::TooLarge { key: key.to_owned(), reference, length }.into());
                        }
                        // Whole chunks merge across requests; ranges were batched by the reader.
                        let merge = options.range.is_none();
                        let parts = self.read_virtual(&url, v.offset, std::slice::from_ref(&range), merge).await?;
                        parts.into_iter().next().unwrap_or_default()
                    }
                    _ => return Err(error(format!("chunk `{key}` is of a kind this server does not read"))),
                };
                Ok((meta, bytes, range))
            }
        }
    }
}

#[async_trait::async_trait]
impl ObjectStore for Snapshot {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(read_only("zarrd serves Icechunk repositories read-only"))
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        Err(read_only("zarrd serves Icechunk repositories read-only"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let (meta, bytes, range) = self.get(location, &options).await?;
        Ok(answered(bytes, range, meta, options.head))
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        // Ranges of one chunk (a shard's inner chunks, batched by the reader): one read of
        // its file, not one merge window per range.
        let key = location.as_ref();
        let Some(Key::Chunk { node, coords }) = parse_key(key) else {
            let (_, doc, _) = self.get(location, &GetOptions::default()).await?;
            return ranges.iter().map(|r| slice_of(&doc, r, key)).collect();
        };
        let payload = self.payload(&node, coords).await?.ok_or_else(|| not_found(location))?;
        let length = match &payload {
            ChunkPayload::Inline(b) => b.len() as u64,
            ChunkPayload::Ref(r) => r.length,
            ChunkPayload::Virtual(v) => v.length,
            _ => return Err(error(format!("chunk `{key}` is of a kind this server does not read"))),
        };
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > length) {
            return Err(error(format!("bytes {}..{} are not within `{key}` of {length} bytes", r.start, r.end)));
        }
        match payload {
            ChunkPayload::Inline(b) => ranges.iter().map(|r| slice_of(&b, r, key)).collect(),
            ChunkPayload::Ref(r) => self.read_native(key, &r, ranges, false).await,
            ChunkPayload::Virtual(v) => {
                let url = self.expand(v.location.url())?;
                if v.length > MAX_REFERENCED {
                    let (key, length) = (key.to_owned(), v.length);
                    return Err(RefsError::TooLarge { key, reference: url, length }.into());
                }
                self.read_virtual(&url, v.offset, ranges, false).await
            }
            _ => Err(error(format!("chunk `{key}` is of a kind this server does not read"))),
        }
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        locations.map(|_| Err(read_only("zarrd serves Icechunk repositories read-only"))).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let (store, prefix) = (self.store.clone(), prefix.map_or_else(String::new, ToString::to_string));
        let (last_modified, id) = (self.last_modified, self.id.clone());
        futures::stream::once(async move {
            let keys = store.list_prefix(&format!("/{prefix}")).await.map_err(|e| error(e.kind))?;
            let keys: Vec<String> = keys.try_collect().await.map_err(|e| error(e.kind))?;
            Ok::<_, object_store::Error>(futures::stream::iter(keys.into_iter().filter_map(move |k| {
                let location = Path::parse(&k).ok()?;
                let e_tag = Some(format!("\"{id}\""));
                Some(Ok(ObjectMeta { location, last_modified, size: 0, e_tag, version: None }))
            })))
        })
        .try_flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let folder = prefix.map_or_else(String::new, ToString::to_string);
        let items = match self.store.list_dir_items(&folder).await {
            Ok(items) => items.try_collect::<Vec<_>>().await.map_err(|e| error(e.kind))?,
            Err(e) if is_not_found(&e.kind) => Vec::new(),
            Err(e) => return Err(error(e.kind)),
        };
        let join = |name: &str| if folder.is_empty() { name.to_owned() } else { format!("{folder}/{name}") };
        let mut result =
            ListResult { common_prefixes: Vec::new(), objects: Vec::new(), extensions: Extensions::default() };
        for item in items {
            match item {
                icechunk::store::ListDirItem::Prefix(p) => result.common_prefixes.extend(Path::parse(join(&p)).ok()),
                icechunk::store::ListDirItem::Key(k) => {
                    if let Ok(location) = Path::parse(join(&k)) {
                        result.objects.push(self.meta(location, 0));
                    }
                }
            }
        }
        Ok(result)
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(read_only("zarrd serves Icechunk repositories read-only"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_metadata_and_chunks() {
        assert!(matches!(parse_key("zarr.json"), Some(Key::Metadata)));
        assert!(matches!(parse_key("a/b/zarr.json"), Some(Key::Metadata)));
        let chunk = |k: &str| match parse_key(k) {
            Some(Key::Chunk { node, coords }) => Some((node, coords)),
            _ => None,
        };
        assert_eq!(chunk("c/1/2"), Some(("/".into(), vec![1, 2])));
        assert_eq!(chunk("grp/c/arr/c/0/3"), Some(("/grp/c/arr".into(), vec![0, 3])));
        assert_eq!(chunk("scalar/c"), Some(("/scalar".into(), vec![])));
        assert_eq!(chunk("a/c/x"), None);
        assert_eq!(chunk("a/.zarray"), None);
    }
}
