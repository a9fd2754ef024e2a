//! kerchunk's parquet reference directories (what `kerchunk.df.refs_to_dataframe` and
//! `VirtualiZarr` write): `.zmetadata` holds the Zarr v2 metadata of every node and the
//! `record_size`; each array's chunk references are rows of `VAR/refs.N.parq` — row `i`
//! of the array's chunks in C order is row `i % record_size` of partition
//! `i / record_size` — with columns `path`, `offset`, `size` and `raw` (inline bytes). A row
//! with neither `path` nor `raw` is a missing chunk; `size` 0 names the whole file.
//! Partitions are read when a key in them is first asked for and kept in a cache bounded by
//! bytes, so a set of millions of chunks is never loaded whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use object_store::Result;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

use super::error::{RefsError, refs_error};
use super::kerchunk::Ref;
use crate::store::Store;

/// Bytes of decoded partitions kept.
const PARTITION_CACHE_BYTES: u64 = 128 << 20;
/// A partition file read at most.
const MAX_PARTITION_BYTES: u64 = 256 << 20;
/// Chunk keys listed at most per listing (a directory listing of a huge array).
const MAX_LISTED: u64 = 100_000;

/// An array's chunk grid, as its `.zarray` says.
struct Grid {
    /// Chunks along each dimension.
    counts: Vec<u64>,
    separator: String,
}

type Partition = Arc<Vec<Option<Ref>>>;

pub struct ParquetRefs {
    source: Store,
    folder: String,
    /// The Zarr metadata documents, by key (with `.zmetadata` itself, consolidated).
    metadata: BTreeMap<String, Bytes>,
    record_size: u64,
    arrays: BTreeMap<String, Grid>,
    partitions: moka::future::Cache<(String, u64), Partition>,
}

impl ParquetRefs {
    /// The set whose `.zmetadata` (in `folder` of `source`) is `zmetadata`.
    pub fn new(source: Store, folder: &str, zmetadata: &[u8]) -> Result<Self> {
        let invalid = |why: String| -> object_store::Error { RefsError::Invalid(format!(".zmetadata: {why}")).into() };
        let doc: Value = crate::zarr::json::from_slice(zmetadata).map_err(|e| invalid(e.to_string()))?;
        let record_size = doc.get("record_size").and_then(Value::as_u64).filter(|&n| n > 0);
        let record_size = record_size.ok_or_else(|| invalid("has no positive `record_size`".into()))?;
        let Some(Value::Object(entries)) = doc.get("metadata") else {
            return Err(invalid("has no `metadata` object".into()));
        };
        let mut metadata = BTreeMap::new();
        let mut consolidated = serde_json::Map::new();
        let mut arrays = BTreeMap::new();
        for (key, value) in entries {
            // Documents are kept as JSON objects by some writers and as their text by others.
            let parsed = match value {
                Value::String(text) => {
                    crate::zarr::json::from_slice(text.as_bytes()).map_err(|e| invalid(format!("`{key}`: {e}")))?
                }
                other => other.clone(),
            };
            if let Some(var) = key.strip_suffix(".zarray") {
                let var = var.strip_suffix('/').unwrap_or(var).to_owned();
                arrays.insert(var, grid(key, &parsed).map_err(invalid)?);
            }
            metadata.insert(key.clone(), Bytes::from(parsed.to_string()));
            consolidated.insert(key.clone(), parsed);
        }
        let zmetadata = serde_json::json!({"metadata": consolidated, "zarr_consolidated_format": 1});
        metadata.insert(".zmetadata".to_owned(), Bytes::from(zmetadata.to_string()));
        let partitions = moka::future::Cache::builder()
            .max_capacity(PARTITION_CACHE_BYTES)
            .weigher(|_, p: &Partition| u32::try_from(weight(p)).unwrap_or(u32::MAX))
            .build();
        Ok(Self { source, folder: folder.to_owned(), metadata, record_size, arrays, partitions })
    }

    /// The reference of `key`.
    pub async fn lookup(&self, key: &str) -> Result<Option<Ref>> {
        if let Some(doc) = self.metadata.get(key) {
            return Ok(Some(Ref::Inline(doc.clone())));
        }
        let Some((var, index)) = self.chunk(key) else { return Ok(None) };
        let partition = self.partition(var, index / self.record_size).await?;
        Ok(partition.get((index % self.record_size) as usize).cloned().flatten())
    }

    /// The array and the C-order chunk index `key` names, if it names a chunk.
    fn chunk<'k>(&self, key: &'k str) -> Option<(&'k str, u64)> {
        let mut candidates = key.match_indices('/').map(|(at, _)| (&key[..at], &key[at + 1..])).collect::<Vec<_>>();
        candidates.push(("", key));
        candidates.into_iter().find_map(|(var, rest)| {
            let grid = self.arrays.get(var)?;
            let parts: Vec<&str> =
                if grid.counts.is_empty() { vec![rest] } else { rest.split(&grid.separator).collect() };
            let coords: Vec<u64> = parts.iter().map(|p| p.parse().ok()).collect::<Option<_>>()?;
            if grid.counts.is_empty() {
                return (coords == [0]).then_some((var, 0));
            }
            if coords.len() != grid.counts.len() || coords.iter().zip(&grid.counts).any(|(c, n)| c >= n) {
                return None;
            }
            let index =
                coords.iter().zip(&grid.counts).try_fold(0u64, |acc, (c, n)| acc.checked_mul(*n)?.checked_add(*c))?;
            Some((var, index))
        })
    }

    async fn partition(&self, var: &str, n: u64) -> Result<Partition> {
        let file = join(&join(&self.folder, var), &format!("refs.{n}.parq"));
        let load = async {
            let Some(meta) = self.source.head(&file).await.map_err(|e| refs_error(e.public_detail()))? else {
                // No partition file: none of its chunks exist.
                return Ok(Arc::new(Vec::new()));
            };
            if meta.size > MAX_PARTITION_BYTES {
                return Err(refs_error(format!("`{file}` is larger than the {MAX_PARTITION_BYTES} bytes read")));
            }
            let bytes = self.source.get(&file).await.map_err(|e| refs_error(e.public_detail()))?.unwrap_or_default();
            let name = file.clone();
            tokio::task::spawn_blocking(move || decode(&name, bytes))
                .await
                .map_err(|e| refs_error(e.to_string()))?
                .map(Arc::new)
        };
        crate::ops::caches::get_or_try_load(&self.partitions, (var.to_owned(), n), || load)
            .await
            .map_err(crate::store::coalesce::BatchError::unshare)
    }

    /// Keys under `prefix`, sorted; chunk keys of the arrays that `prefix` is in (all the
    /// arrays under it when `deep`), at most [`MAX_LISTED`] per array.
    pub async fn keys(&self, prefix: &str, deep: bool) -> Result<Vec<(String, Ref)>> {
        let mut out: Vec<(String, Ref)> = self
            .metadata
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), Ref::Inline(v.clone())))
            .collect();
        for (var, grid) in &self.arrays {
            let folder = if var.is_empty() { String::new() } else { format!("{var}/") };
            let listed = if deep { folder.starts_with(prefix) } else { prefix.starts_with(&folder) };
            if !listed {
                continue;
            }
            let total = grid.counts.iter().product::<u64>().min(MAX_LISTED);
            for index in 0..total {
                let partition = self.partition(var, index / self.record_size).await?;
                let Some(Some(reference)) = partition.get((index % self.record_size) as usize) else { continue };
                let key = format!("{folder}{}", chunk_key(grid, index));
                if key.starts_with(prefix) {
                    out.push((key, reference.clone()));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// The chunk grid of a `.zarray` document.
fn grid(key: &str, doc: &Value) -> Result<Grid, String> {
    let dims = |field: &str| -> Result<Vec<u64>, String> {
        doc.get(field)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
            .ok_or_else(|| format!("`{key}` has no list of integers `{field}`"))
    };
    let (shape, chunks) = (dims("shape")?, dims("chunks")?);
    if shape.len() != chunks.len() || chunks.contains(&0) {
        return Err(format!("`{key}` has chunks that do not fit its shape"));
    }
    let counts = shape.iter().zip(&chunks).map(|(s, c)| s.div_ceil(*c)).collect();
    let separator = doc.get("dimension_separator").and_then(Value::as_str).unwrap_or(".").to_owned();
    Ok(Grid { counts, separator })
}

fn chunk_key(grid: &Grid, mut index: u64) -> String {
    if grid.counts.is_empty() {
        return "0".into();
    }
    let mut coords = vec![0; grid.counts.len()];
    for (c, n) in coords.iter_mut().zip(&grid.counts).rev() {
        *c = index % n;
        index /= n;
    }
    coords.iter().map(u64::to_string).collect::<Vec<_>>().join(&grid.separator)
}

fn weight(p: &Partition) -> usize {
    p.iter()
        .map(|r| match r {
            Some(Ref::Inline(b)) => 48 + b.len(),
            Some(Ref::Range { url, .. } | Ref::Whole { url }) => 64 + url.len(),
            None => 16,
        })
        .sum()
}

/// `name` in `folder` (`""` for the top).
pub fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() { name.to_owned() } else { format!("{folder}/{name}") }
}

/// The rows of a partition file.
fn decode(name: &str, bytes: Bytes) -> Result<Vec<Option<Ref>>> {
    let bad = |why: String| -> object_store::Error { RefsError::Invalid(format!("`{name}`: {why}")).into() };
    let reader = SerializedFileReader::new(bytes).map_err(|e| bad(e.to_string()))?;
    let rows = reader.metadata().file_metadata().num_rows();
    let mut out = Vec::with_capacity(usize::try_from(rows).unwrap_or(0).min(1 << 24));
    // One URL per distinct path, shared by the rows that name it.
    let mut urls: BTreeMap<String, Arc<str>> = BTreeMap::new();
    for row in reader.get_row_iter(None).map_err(|e| bad(e.to_string()))? {
        let row = row.map_err(|e| bad(e.to_string()))?;
        let (mut path, mut offset, mut size, mut raw) = (None, 0u64, 0u64, None);
        for (column, field) in row.get_column_iter() {
            match (column.as_str(), field) {
                ("path", Field::Str(s)) => path = Some(s.clone()),
                ("path", Field::Bytes(b)) => path = Some(String::from_utf8_lossy(b.data()).into_owned()),
                ("offset", f) => offset = integer(f).ok_or_else(|| bad("an `offset` is not an integer".into()))?,
                ("size", f) => size = integer(f).ok_or_else(|| bad("a `size` is not an integer".into()))?,
                ("raw", Field::Bytes(b)) => raw = Some(Bytes::copy_from_slice(b.data())),
                ("raw", Field::Str(s)) => raw = Some(Bytes::copy_from_slice(s.as_bytes())),
                _ => {}
            }
        }
        out.push(match (raw, path) {
            (Some(raw), _) => Some(Ref::Inline(raw)),
            (None, Some(path)) => {
                let url = Arc::clone(urls.entry(path).or_insert_with_key(|p| p.as_str().into()));
                Some(if size == 0 { Ref::Whole { url } } else { Ref::Range { url, offset, length: size } })
            }
            (None, None) => None,
        });
    }
    Ok(out)
}

/// A non-negative integer column value (null as 0).
fn integer(field: &Field) -> Option<u64> {
    match field {
        Field::Null => Some(0),
        Field::Long(v) => u64::try_from(*v).ok(),
        Field::Int(v) => u64::try_from(*v).ok(),
        Field::ULong(v) => Some(*v),
        Field::UInt(v) => Some(u64::from(*v)),
        Field::Double(v) if v.fract() == 0.0 && *v >= 0.0 && *v < 9e15 => Some(*v as u64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_keys_map_to_rows_in_c_order() {
        let grid = Grid { counts: vec![2, 3], separator: ".".into() };
        assert_eq!(chunk_key(&grid, 0), "0.0");
        assert_eq!(chunk_key(&grid, 4), "1.1");
        let refs = ParquetRefs::new(
            Store::new(Arc::new(object_store::memory::InMemory::new()), object_store::path::Path::default()),
            "",
            br#"{"record_size": 4, "metadata": {".zgroup": {"zarr_format": 2},
                "a/b/.zarray": "{\"shape\": [10, 9], \"chunks\": [5, 3], \"dimension_separator\": \"/\"}",
                ".zarray": {"shape": [], "chunks": []}}}"#,
        )
        .unwrap();
        assert_eq!(refs.chunk("a/b/1/2"), Some(("a/b", 5)));
        assert_eq!(refs.chunk("a/b/2/0"), None);
        assert_eq!(refs.chunk("a/b/1.2"), None);
        assert_eq!(refs.chunk("0"), Some(("", 0)));
        assert_eq!(refs.chunk("a/b/x/0"), None);
        assert!(refs.metadata.contains_key(".zmetadata"));
    }
}
