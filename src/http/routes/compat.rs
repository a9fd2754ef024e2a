//! `GET|HEAD /compat/v3/{ds}/{*key}` and `/compat/v2/{ds}/{*key}`: the dataset as a plain
//! Zarr v3 or v2 store that clients knowing only regular grids read (see
//! [`crate::compat`] for the layout). Metadata documents are generated from the
//! stored metadata (groups carry consolidated metadata); chunks are stored bytes served as
//! they are when already in the view's encoding, else read with the read engine, encoded
//! and cached. The HTTP behaviour is `/zarr`'s: byte ranges (suffix too), HEAD,
//! `ETag` + conditional requests, 404 (with CORS) for keys that do not exist, listings of
//! directory URLs.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use bytes::Bytes;

use crate::catalog::Dataset;
use crate::compat::{Flavor, ViewNode, ViewTree, view_chunk, view_grid_shape};
use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Ranged, Validators};
use crate::http::listing::{self, Entry};
use crate::http::state::AppState;
use zarrd_core::read::ReadError;
use zarrd_core::read::cache::{ViewChunkKey, ViewEntry};

/// The path parameters of a view route: no key for the dataset root.
#[derive(serde::Deserialize)]
pub struct ViewPath {
    ds: String,
    #[serde(default)]
    key: String,
}

/// Every `/compat/v{ZARR_FORMAT}/…` route: `{ds}/{*key}`, and the dataset root without a
/// key — `{ds}` (redirected to its listing) and `{ds}/` (the listing).
pub async fn view<const ZARR_FORMAT: u8>(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    Path(ViewPath { ds, key }): Path<ViewPath>,
    headers: HeaderMap,
) -> Result<Response> {
    let flavor = if ZARR_FORMAT == 2 { Flavor::V2 } else { Flavor::V3 };
    serve(&state, flavor, &ds, &key, uri.path(), &headers, method == Method::HEAD).await
}

fn not_found(flavor: Flavor, key: &str) -> Error {
    Error::NotFound(format!(
        "no key `{key}` in the Zarr {} view of this dataset (`zarr.json` / `.zarray`, `.zgroup`, `.zattrs`, `.zmetadata` of its nodes and their chunks)",
        flavor.name()
    ))
}

/// The dataset's view tree; when the store refused to list (a plain web server) and has no
/// consolidated metadata, what `key` itself leads to (documents and chunks of the nodes
/// along it), without subtrees. Any other failure (a transient one too) is the answer.
async fn view_tree(state: &AppState, dataset: &Dataset, key: &str) -> Result<Arc<ViewTree>> {
    match Box::pin(state.catalog.view_tree(dataset)).await {
        Ok(tree) => Ok(tree),
        Err(e) if dataset.store.cannot_list() => {
            tracing::debug!(error = %e, "no view tree; serving the nodes along the key");
            Ok(Arc::new(Box::pin(state.catalog.partial_view_tree(dataset, key)).await?))
        }
        Err(e) => Err(e),
    }
}

async fn serve(
    state: &AppState,
    flavor: Flavor,
    ds: &str,
    key: &str,
    uri_path: &str,
    headers: &HeaderMap,
    head_only: bool,
) -> Result<Response> {
    let dataset = &state.catalog.dataset(ds).await?;
    let tree = view_tree(state, dataset, key).await?;
    let cache_control = state.config.http.cache_control.as_str();
    if key.is_empty() || key.ends_with('/') {
        let dir = key.trim_end_matches('/');
        if key.is_empty() && !uri_path.ends_with('/') {
            return Ok(listing::to_directory(uri_path));
        }
        let entries = directory(&tree, flavor, dir).ok_or_else(|| not_found(flavor, key))?;
        return listing::respond(uri_path, entries, headers, cache_control);
    }
    let (dir, name) = key.rsplit_once('/').unwrap_or(("", key));
    if tree.documents(dir, flavor).contains(&name) {
        let doc = match flavor {
            Flavor::V3 => tree.v3_document(dir).map(|doc| serde_json::to_string(&doc)),
            Flavor::V2 => tree.v2_document(dir, name).map(|doc| serde_json::to_string(&doc)),
        }
        .ok_or_else(|| not_found(flavor, key))?;
        let body = Bytes::from(doc.map_err(|e| Error::internal_from("a compat metadata document", e))?);
        let etag = EtagBuilder::new("compat-document").text(&String::from_utf8_lossy(&body)).finish();
        return Ranged::new(&body, "application/json")
            .head_only(head_only)
            .respond(Validators::new(etag, cache_control), headers);
    }
    if let Some((path, coords)) = tree.chunk(key, flavor) {
        let Some(ViewNode::Array { chunk_shape, .. }) = tree.nodes.get(path) else {
            return Err(not_found(flavor, key));
        };
        let entry = chunk(state, dataset, path, chunk_shape, &coords, key).await?;
        let Some(bytes) = entry.bytes.clone() else {
            return Err(Error::NotFound(format!(
                "view chunk `{key}` has no stored data (clients read it as the fill value)"
            )));
        };
        return Ranged::new(&bytes, "application/octet-stream")
            .head_only(head_only)
            .uncompressed()
            .respond(Validators::new(entry.etag.clone(), cache_control), headers);
    }
    if directory(&tree, flavor, key).is_some() {
        return Ok(listing::to_directory(uri_path));
    }
    Err(not_found(flavor, key))
}

/// The encoded view chunk `coords` of array `path`, from the cache or read now.
async fn chunk(
    state: &AppState,
    dataset: &Arc<Dataset>,
    path: &str,
    chunk_shape: &[u64],
    coords: &[u64],
    key: &str,
) -> Result<Arc<ViewEntry>> {
    let array = state.catalog.array(dataset, path).await?;
    let grid = view_grid_shape(&array.meta.shape, chunk_shape);
    if coords.iter().zip(&grid).any(|(c, n)| c >= n) {
        return Err(Error::NotFound(format!("view chunk `{key}` is outside the chunk grid, whose shape is {grid:?}")));
    }
    let cache_key = ViewChunkKey {
        dataset: Arc::clone(&dataset.name),
        path: path.to_owned(),
        digest: array.meta.digest,
        chunk_shape: chunk_shape.to_vec(),
        coords: coords.to_vec(),
    };
    let entry = state
        .catalog
        .view_chunks
        .get_or_load(cache_key, || async {
            // Boxed: the read engine's future is large, and this one lives in the cache's loader.
            let chunk = Box::pin(view_chunk(&array, chunk_shape, coords)).await?;
            let mut tag = EtagBuilder::new("compat-chunk");
            tag.text(&dataset.name).text(path).digest(array.meta.digest);
            for (&e, &c) in chunk_shape.iter().zip(coords) {
                tag.number(e).number(c);
            }
            let (bytes, passthrough) = match chunk {
                Some(chunk) => {
                    for (key, version) in &chunk.object_versions {
                        tag.text(key).text(version.as_str());
                    }
                    (Some(chunk.bytes), chunk.passthrough)
                }
                None => (None, false),
            };
            Ok::<_, ReadError>(Arc::new(ViewEntry { bytes, etag: tag.finish(), passthrough }))
        })
        .await
        .map_err(|e| Error::from(ReadError::unshare(e)))?;
    Ok(entry)
}

/// The entries of directory `dir` of a view, or `None` when it is not a directory there:
/// a node (its metadata documents and children; an array's chunk directory), or a level of
/// an array's chunk keys.
fn directory(tree: &ViewTree, flavor: Flavor, dir: &str) -> Option<Vec<Entry>> {
    if let Some(node) = tree.nodes.get(dir) {
        let mut entries: Vec<Entry> =
            tree.documents(dir, flavor).iter().map(|name| Entry::object(*name, None)).collect();
        match node {
            ViewNode::Group(_) => entries.extend(tree.children(dir).into_iter().map(Entry::directory)),
            ViewNode::Array { meta, chunk_shape } => match flavor {
                Flavor::V3 if meta.shape.is_empty() => entries.push(Entry::object("c", None)),
                Flavor::V3 if !meta.shape.contains(&0) => entries.push(Entry::directory("c")),
                Flavor::V3 => {}
                Flavor::V2 => entries.extend(chunk_level(&view_grid_shape(&meta.shape, chunk_shape), 0)),
            },
        }
        return Some(entries);
    }
    // A level of chunk keys: ARRAY/c[/i...] (v3) or ARRAY/i[/j...] (v2).
    let segments: Vec<&str> = dir.split('/').collect();
    for split in (0..segments.len()).rev() {
        let path = segments[..split].join("/");
        let Some(ViewNode::Array { meta, chunk_shape }) = tree.nodes.get(&path) else { continue };
        let grid = view_grid_shape(&meta.shape, chunk_shape);
        let rest = &segments[split..];
        let indices = match flavor {
            Flavor::V3 => match rest.split_first() {
                Some((&"c", indices)) => indices,
                _ => return None,
            },
            Flavor::V2 => rest,
        };
        if indices.len() >= grid.len()
            || indices.iter().zip(&grid).any(|(s, &n)| s.parse::<u64>().ok().is_none_or(|i| i >= n))
        {
            return None;
        }
        return Some(chunk_level(&grid, indices.len()));
    }
    None
}

/// The entries of chunk-key level `depth` (an index along dimension `depth`): directories,
/// or chunk objects at the last dimension.
fn chunk_level(grid: &[u64], depth: usize) -> Vec<Entry> {
    let Some(&n) = grid.get(depth) else { return vec![Entry::object("0", None)] };
    let last = depth + 1 == grid.len();
    // Bounded: `listing::respond` refuses more than its maximum anyway.
    (0..n.min(listing::MAX_ENTRIES as u64 + 1))
        .map(|i| if last { Entry::object(i.to_string(), None) } else { Entry::directory(i.to_string()) })
        .collect()
}
