//! The dataset's tree: every node, from consolidated metadata or found by listing groups
//! level by level (arrays never descended, so chunks are never enumerated), and the tree
//! the compatibility views present.

use std::sync::Arc;

use futures::StreamExt;
use zarrd_core::ops::caches::get_or_try_load;
use zarrd_core::zarr::metadata::Node;

use super::nodes::{self, TreeNode, describe, describe_doc};
use super::{Catalog, Dataset, NodeError, metadata_key};
use crate::compat::{ViewNode, ViewTree, view_chunk_shape};
use crate::error::{Error, Result};

/// Nodes listed (and directories visited) at most per dataset, and group nesting followed
/// at most, when a dataset has no consolidated metadata and its tree is found by listing.
const MAX_LISTED_NODES: usize = 10_000;
const MAX_LISTED_DEPTH: usize = 32;

impl Catalog {
    /// Every node of the dataset: from consolidated metadata when the root has it, else by
    /// listing groups (arrays are not descended into, so chunks are never enumerated).
    pub async fn tree(&self, ds: &Dataset) -> Result<Arc<Vec<TreeNode>>> {
        // Boxed: walking a tree nests many node loads, too large a future to move around.
        let discover = || async { Box::pin(self.discover(ds)).await.map(Arc::new) };
        get_or_try_load(&self.trees, Arc::clone(&ds.name), discover).await.map_err(Arc::unwrap_or_clone)
    }

    /// The dataset as the compatibility views present it: every node of [`Self::tree`] that
    /// zarrd can read (arrays with their view chunk shape), implicit groups made explicit.
    /// Nodes zarrd cannot serve are left out, so clients never meet them.
    pub async fn view_tree(&self, ds: &Dataset) -> Result<Arc<ViewTree>> {
        get_or_try_load(&self.views, Arc::clone(&ds.name), || async {
            let nodes = Box::pin(self.tree(ds)).await?;
            // The tree's nodes are usually cached already (listing them read them).
            let found = self.find_each(ds, nodes.iter().map(|n| n.path.clone()).collect()).await;
            let mut tree = ViewTree::default();
            for (path, node) in found {
                if let Some(node) = self.view_node(ds, &path, node)? {
                    tree.insert(path, node);
                }
            }
            tree.name_ome_axes();
            Ok(Arc::new(tree))
        })
        .await
        .map_err(Arc::unwrap_or_clone)
    }

    /// The part of the view along `key` when the whole tree cannot be had (a store that
    /// can neither list nor has consolidated metadata): the node at every prefix of the
    /// key, read directly. Marked incomplete, so groups claim no subtree.
    pub async fn partial_view_tree(&self, ds: &Dataset, key: &str) -> Result<ViewTree> {
        let mut tree = ViewTree { complete: false, ..ViewTree::default() };
        let segments: Vec<&str> = key.split('/').filter(|s| !s.is_empty()).collect();
        for end in 0..=segments.len() {
            let path = segments[..end].join("/");
            let found = Box::pin(self.find(ds, &path)).await;
            if let Some(node) = self.view_node(ds, &path, found)? {
                let array = matches!(node, ViewNode::Array { .. });
                tree.insert(path, node);
                // Nothing below an array is a node.
                if array {
                    break;
                }
            }
        }
        tree.name_ome_axes();
        Ok(tree)
    }

    /// The node at `path` as the views present it: an array with its view chunk shape, a
    /// group with its attributes; `None` for a node zarrd cannot serve (left out of the
    /// views, so clients never meet it). A storage failure fails the view.
    fn view_node(&self, ds: &Dataset, path: &str, found: Result<Node, Arc<NodeError>>) -> Result<Option<ViewNode>> {
        match found {
            Ok(Node::Array(meta)) => {
                let chunk_shape = view_chunk_shape(&meta, ds.compat.get(path).map(Vec::as_slice), &self.compat);
                Ok(Some(ViewNode::Array { meta, chunk_shape }))
            }
            Ok(Node::Group(group)) => Ok(Some(ViewNode::Group(group.attributes.clone()))),
            Err(e) if e.is_unservable() => Ok(None),
            Err(e) => Err(Error::from(e.as_ref())),
        }
    }

    async fn discover(&self, ds: &Dataset) -> Result<Vec<TreeNode>> {
        let root = self.node(ds, "").await?;
        let mut nodes = vec![describe("", &root)];
        let Node::Group(group) = &root else { return Ok(nodes) };
        let listing = ds.store.list_dirs("").await;
        let mut candidates = match (&group.consolidated, listing) {
            (_, Ok(names)) => names,
            // Some stores cannot list (plain HTTP servers); consolidated metadata suffices.
            (Some(_), Err(e)) => {
                tracing::warn!(dataset = %ds.name, error = %e, "cannot list the dataset root; using consolidated metadata only");
                Vec::new()
            }
            (None, Err(e)) => return Err(e.into()),
        };
        if let Some(consolidated) = &group.consolidated {
            for (path, doc) in consolidated {
                nodes.push(describe_doc(path, doc));
            }
            // Their metadata is known already: the views and reads need no request for it.
            for (path, node) in &group.consolidated_nodes {
                if let Ok(key) = metadata_key(path) {
                    self.metadata.insert((Arc::clone(&ds.name), key), node.clone()).await;
                }
            }
            // Writers consolidate only what they recognise (zarr-python leaves out arrays
            // under an implicit group), so the root's other directories are walked too;
            // when the consolidated metadata is complete that costs this one listing.
            let known: std::collections::HashSet<&str> =
                consolidated.keys().filter_map(|k| k.split('/').next()).collect();
            candidates.retain(|name| !known.contains(name.as_str()));
        }
        self.walk(ds, candidates, &mut nodes).await?;
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        nodes::series(&mut nodes);
        Ok(nodes)
    }

    /// Probes `candidates` (paths of directories) for nodes, level by level: groups and
    /// directories without `zarr.json` are listed for the next level, arrays never (so
    /// chunks are never enumerated).
    async fn walk(&self, ds: &Dataset, mut candidates: Vec<String>, nodes: &mut Vec<TreeNode>) -> Result<()> {
        let mut visited = 0usize;
        for _ in 0..MAX_LISTED_DEPTH {
            visited += candidates.len();
            if candidates.is_empty() || nodes.len() >= MAX_LISTED_NODES || visited >= MAX_LISTED_NODES {
                break;
            }
            let found = self.find_each(ds, std::mem::take(&mut candidates)).await;
            let mut containers = Vec::new();
            for (path, node) in found {
                match node {
                    Ok(node) => {
                        if matches!(node, Node::Group(_)) {
                            containers.push(path.clone());
                        }
                        nodes.push(describe(&path, &node));
                    }
                    // A directory without zarr.json under a group is not a node, but old
                    // writers left implicit groups, so look inside (chunk directories only
                    // exist under arrays, which are never descended).
                    Err(e) if e.is_missing() => containers.push(path),
                    // A node the server cannot serve is still part of the tree, as what its
                    // document says it is; one whose kind cannot be told is left out.
                    Err(e) => match e.unreadable_kind() {
                        Some(Some(kind)) => nodes.push(TreeNode::bare(&path, kind)),
                        Some(None) => tracing::warn!(dataset = %ds.name, %path, error = %e, "unreadable node left out"),
                        // Storage failed: the listing fails (never "absent").
                        None => return Err(Error::from(e.as_ref())),
                    },
                }
                if nodes.len() >= MAX_LISTED_NODES {
                    return Ok(());
                }
            }
            for container in &containers {
                candidates.extend(ds.store.list_dirs(container).await?.into_iter().map(|name| join(container, &name)));
            }
        }
        Ok(())
    }

    /// [`Self::find`] for each of `paths`, 16 at a time, in the order given.
    async fn find_each(&self, ds: &Dataset, paths: Vec<String>) -> Vec<(String, Result<Node, Arc<NodeError>>)> {
        futures::stream::iter(paths)
            .map(|path| async move {
                // Boxed: a node load is a large future, and 16 are held at once.
                let node = Box::pin(self.find(ds, &path)).await;
                (path, node)
            })
            .buffered(16)
            .collect()
            .await
    }
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_owned() } else { format!("{parent}/{name}") }
}
