//! Finding single chunks of the read grid: the innermost chunks of a sharded array (down
//! through nested shards, each level's index from the cache) or the stored chunks of an
//! unsharded one, as a store key and byte range, without reading any chunk data.

use std::ops::Range;
use std::sync::Arc;

use crate::read::error::ReadError;
use crate::read::reader::ArrayReader;
use crate::zarr::chunk_grid::ChunkGrid;
use crate::zarr::codec::{CodecChain, CodecError, IndexLocation, InnerChunk, ShardIndex, ShardingCodec};

/// Where a read-grid chunk's encoded bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// A whole stored object (unsharded arrays); it may not exist.
    Object { key: String },
    /// The shard that would hold the chunk does not exist.
    MissingShard { key: String },
    /// The shard's index marks the chunk as never written.
    Empty { key: String },
    /// Bytes `range` of the shard object `key`.
    InShard { key: String, range: Range<u64>, e_tag: Option<String>, version: String },
}

impl ArrayReader {
    /// The read grid: innermost chunks of a sharded array, else the stored chunks.
    pub fn read_grid(&self) -> ChunkGrid {
        self.meta.read_grid()
    }

    /// The codec chain of one read-grid chunk.
    pub fn read_chain(&self) -> &CodecChain {
        let Some(mut level) = self.meta.sharding() else { return &self.meta.codecs };
        while let Some(nested) = level.codecs.sharding() {
            level = nested;
        }
        &level.codecs
    }

    /// Locates read-grid chunk `coords` (which the caller has checked is in the grid).
    pub async fn locate(&self, coords: &[u64]) -> Result<Located, ReadError> {
        let Some(sharding) = self.meta.sharding() else { return Ok(Located::Object { key: self.chunk_key(coords) }) };
        let read_grid = self.read_grid();
        let origin = read_grid.chunk_origin(coords);
        let grid = self.grid();
        let shard: Vec<u64> = grid.dims.iter().zip(&origin).map(|(d, &x)| d.chunk_index(x)).collect();
        let key = self.chunk_key(&shard);
        let shard_shape = grid.chunk_shape(&shard);
        let Some(index) = self.shard_index(sharding, &key, &shard_shape).await? else {
            return Ok(Located::MissingShard { key });
        };
        self.locate_in_shard(sharding, &key, &index, &grid.chunk_origin(&shard), &origin).await
    }

    /// Follows the chunk starting at array coordinate `origin` down through the levels of
    /// a shard whose top-level `index` is known.
    pub async fn locate_in_shard(
        &self,
        sharding: &ShardingCodec,
        key: &str,
        index: &Arc<ShardIndex>,
        shard_origin: &[u64],
        origin: &[u64],
    ) -> Result<Located, ReadError> {
        let mut level = sharding;
        let mut index = Arc::clone(index);
        let mut base = shard_origin.to_vec();
        let mut span_start = 0u64;
        loop {
            let local: Vec<u64> =
                origin.iter().zip(&base).zip(&level.chunk_shape).map(|((o, b), e)| (o - b) / e).collect();
            let linear = index.linear(&local);
            let range = match index.chunk(linear) {
                InnerChunk::Empty => return Ok(Located::Empty { key: key.to_owned() }),
                InnerChunk::Stored { offset, nbytes } => span_start + offset..span_start + offset + nbytes,
            };
            let Some(nested) = level.codecs.sharding() else {
                return Ok(Located::InShard {
                    key: key.to_owned(),
                    range,
                    e_tag: index.e_tag.clone(),
                    version: index.version.clone(),
                });
            };
            let sub_shape = level.chunk_shape.clone();
            for ((b, l), e) in base.iter_mut().zip(&local).zip(&sub_shape) {
                *b += l * e;
            }
            index = self.nested_index(nested, key, range.clone(), &sub_shape, &index).await?;
            span_start = range.start;
            level = nested;
        }
    }

    /// The index of a nested shard stored as bytes `span` of shard `key`; its offsets are
    /// relative to the start of `span`.
    async fn nested_index(
        &self,
        nested: &ShardingCodec,
        key: &str,
        span: Range<u64>,
        sub_shape: &[u64],
        parent: &ShardIndex,
    ) -> Result<Arc<ShardIndex>, ReadError> {
        let corrupt = |source: CodecError| ReadError::Corrupt { key: key.to_owned(), source };
        let cache_key = (Arc::clone(&self.dataset), format!("{key}#{}-{}", span.start, span.end));
        let loaded = self
            .indexes
            .get_or_load(cache_key, || async {
                let cps = nested.chunks_per_shard(sub_shape).map_err(corrupt)?;
                let size = nested.index_size(&cps);
                let len = span.end - span.start;
                if len < size {
                    return Err(corrupt(CodecError::corrupt(
                        "sharding_indexed",
                        format!("nested shard of {len} bytes is shorter than its {size}-byte index"),
                    )));
                }
                let range = match nested.index_location {
                    IndexLocation::End => span.end - size..span.end,
                    IndexLocation::Start => span.start..span.start + size,
                };
                let bytes = self.read_ranges(key, parent.e_tag.as_deref(), &[range]).await?;
                let mut index = nested.decode_index(&bytes[0], &cps, len).map_err(corrupt)?;
                index.e_tag.clone_from(&parent.e_tag);
                index.version.clone_from(&parent.version);
                Ok(Some(Arc::new(index)))
            })
            .await
            .map_err(ReadError::unshare)?;
        loaded.ok_or_else(|| ReadError::Task(format!("nested index of `{key}` vanished from the cache")))
    }
}
