//! Chunk listings: the stored chunks (shards) a selection touches, in C order, a page at a
//! time, with existence and size; optionally the inner chunks of each shard from its index.
//!
//! Pages are cut from the product of per-dimension touch lists by position, so listing a
//! small selection of an array with millions of chunks touches only that page's objects.

use futures::{StreamExt, TryStreamExt};
use serde::Serialize;

use crate::read::error::ReadError;
use crate::read::indexer::{Part, Walk};
use crate::read::locate::Located;
use crate::read::reader::ArrayReader;
use crate::read::selection::DimSelection;
use crate::zarr::chunk_grid::ChunkGrid;

/// Inner chunks listed at most per page; a page stops early (with a cursor) beyond this.
pub const MAX_INNER_PER_PAGE: usize = 100_000;
/// Objects examined concurrently while listing.
const LIST_FAN_OUT: usize = 16;

/// Whether a stored chunk (or shard) exists: `"present"` or `"missing"` in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkState {
    Present,
    /// Never written (or deleted): read as the fill value.
    Missing,
}

/// Whether an inner chunk of a shard holds bytes: `"present"` or `"empty"` in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InnerState {
    Present,
    /// Not in the shard (its index says so): read as the fill value.
    Empty,
}

#[derive(Debug, Serialize)]
pub struct ChunkEntry {
    pub coords: Vec<u64>,
    pub key: String,
    pub origin: Vec<u64>,
    pub shape: Vec<u64>,
    pub state: ChunkState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<Vec<InnerEntry>>,
}

#[derive(Debug, Serialize)]
pub struct InnerEntry {
    pub coords: Vec<u64>,
    pub origin: Vec<u64>,
    pub shape: Vec<u64>,
    pub offset: Option<u64>,
    pub nbytes: Option<u64>,
    pub state: InnerState,
}

#[derive(Debug)]
pub struct Page {
    pub chunks: Vec<ChunkEntry>,
    /// Position of the next page, if any.
    pub next: Option<u64>,
}

impl ArrayReader {
    /// Lists up to `limit` touched chunks starting at position `offset`.
    pub async fn list_chunks(
        &self,
        selection: &[DimSelection],
        offset: u64,
        limit: u64,
        inner: bool,
    ) -> Result<Page, ReadError> {
        // Positions are decoded lazily, so a page costs O(limit) whatever the grid's size.
        let walk = Walk::new(self.grid(), selection);
        let total = walk.count();
        let end = (u128::from(offset) + u128::from(limit)).min(total);
        let steps: Vec<u64> = selection.iter().map(|s| s.step).collect();
        let mut entries = futures::stream::iter(u128::from(offset)..end)
            .map(|pos| {
                let part = walk.part(pos);
                let steps = &steps;
                async move { self.entry(part, steps, inner).await }
            })
            .buffered(LIST_FAN_OUT);
        // Entries arrive in order; the page ends early once it holds enough inner chunks
        // (dropping the stream cancels the lookups still pending).
        let mut chunks = Vec::new();
        let mut inner_count = 0usize;
        while let Some(entry) = entries.try_next().await? {
            inner_count += entry.inner.as_ref().map_or(0, Vec::len);
            if inner_count > MAX_INNER_PER_PAGE && !chunks.is_empty() {
                break;
            }
            chunks.push(entry);
        }
        let after = u128::from(offset) + chunks.len() as u128;
        Ok(Page { chunks, next: (after < total).then_some(after as u64) })
    }

    async fn entry(&self, part: Part, steps: &[u64], inner: bool) -> Result<ChunkEntry, ReadError> {
        let coords = part.coords;
        let key = self.chunk_key(&coords);
        let origin = self.grid().chunk_origin(&coords);
        let shape = self.grid().data_shape(&coords);
        let mut entry = ChunkEntry { coords, key, origin, shape, state: ChunkState::Missing, size: None, inner: None };
        match self.meta.sharding().filter(|_| inner) {
            Some(sharding) => {
                let shard_shape = self.grid().chunk_shape(&entry.coords);
                let read_shape = self.meta.read_chunk_shape().unwrap_or_default();
                let inner_grid =
                    ChunkGrid::regular(&read_shape, &shard_shape).map_err(|e| ReadError::Task(e.to_string()))?;
                let inner_selection: Vec<DimSelection> = (0..steps.len())
                    .map(|d| DimSelection { start: part.start[d], step: steps[d], count: part.count[d], drop: false })
                    .collect();
                let inner_walk = Walk::new(&inner_grid, &inner_selection);
                let count = inner_walk.count();
                if count > MAX_INNER_PER_PAGE as u128 {
                    return Err(ReadError::TooManyChunks { chunks: count, limit: MAX_INNER_PER_PAGE as u64 });
                }
                let Some(index) = self.shard_index(sharding, &entry.key, &shard_shape).await? else { return Ok(entry) };
                entry.state = ChunkState::Present;
                entry.size = Some(index.shard_len);
                let mut list = Vec::new();
                for local in inner_walk.parts().map(|p| p.coords) {
                    let origin: Vec<u64> =
                        (0..local.len()).map(|d| entry.origin[d] + local[d] * read_shape[d]).collect();
                    let located = self.locate_in_shard(sharding, &entry.key, &index, &entry.origin, &origin).await?;
                    let (offset, nbytes, state) = match located {
                        Located::InShard { range, .. } => {
                            (Some(range.start), Some(range.end - range.start), InnerState::Present)
                        }
                        _ => (None, None, InnerState::Empty),
                    };
                    list.push(InnerEntry {
                        coords: origin.iter().zip(&read_shape).map(|(o, r)| o / r).collect(),
                        shape: origin
                            .iter()
                            .zip(&read_shape)
                            .zip(&self.meta.shape)
                            .map(|((o, r), e)| (*r).min(e - o))
                            .collect(),
                        origin,
                        offset,
                        nbytes,
                        state,
                    });
                }
                entry.inner = Some(list);
            }
            None => {
                if let Some(meta) = self.store.head(&entry.key).await? {
                    entry.state = ChunkState::Present;
                    entry.size = Some(meta.size);
                }
            }
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `/v1/chunks` contract: a chunk is `"present"` or `"missing"`, an inner chunk
    /// `"present"` or `"empty"`.
    #[test]
    fn states_serialize_as_the_listing_strings() {
        fn json(v: &impl Serialize) -> String {
            serde_json::to_string(v).unwrap()
        }
        assert_eq!(json(&ChunkState::Present), r#""present""#);
        assert_eq!(json(&ChunkState::Missing), r#""missing""#);
        assert_eq!(json(&InnerState::Present), r#""present""#);
        assert_eq!(json(&InnerState::Empty), r#""empty""#);
        let inner = |state, offset: Option<u64>| InnerEntry {
            coords: vec![0, 1],
            origin: vec![0, 8],
            shape: vec![8, 8],
            offset,
            nbytes: offset.map(|_| 5),
            state,
        };
        let entry = |state, inner| ChunkEntry {
            coords: vec![0, 0],
            key: "a/c/0/0".into(),
            origin: vec![0, 0],
            shape: vec![8, 16],
            state,
            size: (state == ChunkState::Present).then_some(480),
            inner,
        };
        assert_eq!(
            json(&entry(ChunkState::Missing, None)),
            r#"{"coords":[0,0],"key":"a/c/0/0","origin":[0,0],"shape":[8,16],"state":"missing"}"#
        );
        assert_eq!(
            json(&entry(
                ChunkState::Present,
                Some(vec![inner(InnerState::Present, Some(196)), inner(InnerState::Empty, None)])
            )),
            concat!(
                r#"{"coords":[0,0],"key":"a/c/0/0","origin":[0,0],"shape":[8,16],"state":"present","size":480,"inner":["#,
                r#"{"coords":[0,1],"origin":[0,8],"shape":[8,8],"offset":196,"nbytes":5,"state":"present"},"#,
                r#"{"coords":[0,1],"origin":[0,8],"shape":[8,8],"offset":null,"nbytes":null,"state":"empty"}]}"#
            )
        );
    }
}
