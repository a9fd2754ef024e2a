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
use icechunk::format::manifest::{ChunkPayload, VirtualChunkRef};
use icechunk::format::{ByteRange, ChunkIndices};
use icechunk::session::SessionErrorKind;
use icechunk::store::StoreErrorKind;
use object_store::path::Path;
use object_store::{
    CopyOptions, Extensions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use crate::store::Store;
use crate::store::coalesce::Coalescer;
use crate::store::refs::targets::Targets;
use crate::store::refs::{MAX_REFERENCED, ReferencedFile, RefsError, read_file};

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

/// The bytes a chunk's payload holds or names.
fn length(key: &str, payload: &ChunkPayload) -> Result<u64> {
    match payload {
        ChunkPayload::Inline(b) => Ok(b.len() as u64),
        ChunkPayload::Ref(r) => Ok(r.length),
        ChunkPayload::Virtual(v) => Ok(v.length),
        _ => Err(unreadable(key)),
    }
}

/// A chunk of a kind (a future payload type) this server does not read.
fn unreadable(key: &str) -> object_store::Error {
    error(format!("chunk `{key}` is of a kind this server does not read"))
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

/// Whether a session error says the node does not exist.
fn no_node(kind: &SessionErrorKind) -> bool {
    matches!(kind, SessionErrorKind::NodeNotFound { .. })
}

/// Whether a store error says the key (or its node) does not exist.
fn no_key(kind: &StoreErrorKind) -> bool {
    matches!(kind, StoreErrorKind::NotFound(_)) || matches!(kind, StoreErrorKind::SessionError(k) if no_node(k))
}

impl Snapshot {
    /// The payload of a chunk key, `None` when the chunk is not written.
    async fn payload(&self, node: &str, coords: Vec<u32>) -> Result<Option<ChunkPayload>> {
        let path = icechunk::format::Path::try_from(node).map_err(error)?;
        let session = self.store.session();
        let session = session.read().await;
        match session.get_chunk_ref(&path, &ChunkIndices(coords)).await {
            Ok(payload) => Ok(payload),
            Err(e) if no_node(&e.kind) => Ok(None),
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

    /// The URL of virtual chunk `key` (`vcc://NAME/…` through its container), if it is
    /// not longer than one reference may read.
    fn virtual_url(&self, key: &str, chunk: &VirtualChunkRef) -> Result<String> {
        let location = chunk.location.url();
        let url = match location.strip_prefix("vcc://") {
            None => location.to_owned(),
            Some(rest) => {
                let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
                let prefix = self.containers.get(name).ok_or_else(|| {
                    error(format!("virtual chunk `{location}` names no container of this repository"))
                })?;
                format!("{prefix}{path}")
            }
        };
        if chunk.length > MAX_REFERENCED {
            let (key, length) = (key.to_owned(), chunk.length);
            return Err(RefsError::TooLarge { key, reference: url, length }.into());
        }
        Ok(url)
    }

    /// `ranges` of chunk `key` (`payload`); `merge` as for [`read_file`]. Virtual chunks are
    /// read under `virtual_refs`; native ones by zarrd's own store of the repository (its
    /// `chunks/ID`) when it has one, else through the `icechunk` crate.
    async fn read(&self, key: &str, payload: &ChunkPayload, ranges: &[Range<u64>], merge: bool) -> Result<Vec<Bytes>> {
        let file = match payload {
            ChunkPayload::Inline(b) => return ranges.iter().map(|r| slice_of(b, r, key)).collect(),
            ChunkPayload::Virtual(v) => {
                let url = self.virtual_url(key, v)?;
                let at = self.targets.resolve(&url)?;
                return read_file(
                    &self.coalescer,
                    &self.dataset,
                    ReferencedFile { at, name: &url, offset: v.offset },
                    ranges,
                    merge,
                )
                .await;
            }
            ChunkPayload::Ref(r) => r,
            _ => return Err(unreadable(key)),
        };
        if let Some(repo) = &self.repo_store {
            let (chunk, name) = (format!("chunks/{}", file.id), format!("icechunk native chunk `{key}`"));
            let at = (repo.clone(), chunk);
            return read_file(
                &self.coalescer,
                &self.dataset,
                ReferencedFile { at, name: &name, offset: file.offset },
                ranges,
                merge,
            )
            .await;
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
                    Err(e) if no_key(&e.kind) => return Err(not_found(location)),
                    Err(e) => return Err(error(format!("reading `{key}` failed: {}", e.kind))),
                };
                let meta = self.meta(location.clone(), doc.len() as u64);
                options.check_preconditions(&meta)?;
                let range = bytes_of(doc.len() as u64)?;
                Ok((meta, doc.slice(range.start as usize..range.end as usize), range))
            }
            Key::Chunk { node, coords } => {
                let payload = self.payload(&node, coords).await?.ok_or_else(|| not_found(location))?;
                let size = length(key, &payload)?;
                let meta = self.meta(location.clone(), size);
                options.check_preconditions(&meta)?;
                let range = bytes_of(size)?;
                if options.head || range.is_empty() {
                    return Ok((meta, Bytes::new(), range));
                }
                // Whole chunks merge across requests; ranges were batched by the reader.
                let merge = options.range.is_none();
                let parts = self.read(key, &payload, std::slice::from_ref(&range), merge).await?;
                Ok((meta, parts.into_iter().next().unwrap_or_default(), range))
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
        let length = length(key, &payload)?;
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > length) {
            return Err(error(format!("bytes {}..{} are not within `{key}` of {length} bytes", r.start, r.end)));
        }
        self.read(key, &payload, ranges, false).await
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
            Err(e) if no_key(&e.kind) => Vec::new(),
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
