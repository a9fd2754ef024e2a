//! The `large` array again, as the virtual datasets zarrd serves, over the very same bytes:
//!
//! - `virtual/large.bin`: every shard of `data.zarr/large`, concatenated in C order — one
//!   big file with the chunks at offsets, the way an HDF5/NetCDF4 file holds its chunks;
//! - `virtual/large.json`: a kerchunk (version 1) reference set of the group: the
//!   metadata documents inline, each shard a `["large.bin", offset, length]` reference;
//! - `virtual/virtual.icechunk`: an Icechunk repository (written by the `icechunk` crate)
//!   whose shards are virtual chunks in `large.bin`;
//! - `virtual/native.icechunk`: an Icechunk repository holding the shards as its own
//!   (native) chunks.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use icechunk::format::manifest::{VirtualChunkLocation, VirtualChunkRef};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The shard keys of `large` (a `side`×`side` grid) in C order, with their bytes.
fn shards(root: &Path, side: u64) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut out = Vec::new();
    for i in 0..side {
        for j in 0..side {
            let key = format!("large/c/{i}/{j}");
            out.push((key.clone(), std::fs::read(root.join(&key))?));
        }
    }
    Ok(out)
}

/// Writes the three virtual forms of `root`'s `large` array under `out/virtual`.
pub fn write(root: &Path, out: &Path, side: u64) -> Result<(), Error> {
    let dir = out.join("virtual");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let group = std::fs::read_to_string(root.join("zarr.json"))?;
    let array = std::fs::read_to_string(root.join("large/zarr.json"))?;
    let shards = shards(root, side)?;

    // The concatenated file and the kerchunk references into it.
    let mut file = Vec::new();
    let mut refs = serde_json::Map::new();
    refs.insert("zarr.json".into(), group.clone().into());
    refs.insert("large/zarr.json".into(), array.clone().into());
    let mut placed = Vec::new();
    for (key, bytes) in &shards {
        let offset = file.len() as u64;
        file.extend_from_slice(bytes);
        refs.insert(key.clone(), serde_json::json!(["large.bin", offset, bytes.len()]));
        placed.push((key.clone(), offset, bytes.len() as u64));
    }
    std::fs::write(dir.join("large.bin"), &file)?;
    let set = serde_json::json!({"version": 1, "refs": refs});
    std::fs::write(dir.join("large.json"), serde_json::to_vec(&set)?)?;

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let bin = std::fs::canonicalize(dir.join("large.bin"))?;
    runtime.block_on(async {
        // Virtual chunks: the shards where they lie in large.bin.
        let store = repository(&dir.join("virtual.icechunk"), &group, &array).await?;
        let url = format!("file://{}", bin.display());
        for (key, offset, length) in &placed {
            let location = VirtualChunkLocation::from_url(&url).map_err(|e| format!("{e}"))?;
            let reference = VirtualChunkRef { location, offset: *offset, length: *length, checksum: None };
            store.set_virtual_ref(key, reference, false).await?;
        }
        commit(&store).await?;
        // Native chunks: the shards as the repository's own objects.
        let store = repository(&dir.join("native.icechunk"), &group, &array).await?;
        for (key, bytes) in shards {
            store.set(&key, Bytes::from(bytes)).await?;
        }
        commit(&store).await
    })?;
    println!("virtual: large.bin ({} shards), kerchunk large.json, virtual.icechunk, native.icechunk", placed.len());
    Ok(())
}

/// A new repository at `path` with the group and the array's metadata on `main`.
async fn repository(path: &Path, group: &str, array: &str) -> Result<icechunk::Store, Error> {
    std::fs::create_dir_all(path)?;
    let storage = icechunk::new_local_filesystem_storage(path).await?;
    let repo = icechunk::Repository::create(storage).execute().await?;
    let session = repo.writable_session("main").await?;
    let store = icechunk::Store::from_session(Arc::new(tokio::sync::RwLock::new(session))).await;
    store.set("zarr.json", Bytes::from(group.to_owned())).await?;
    store.set("large/zarr.json", Bytes::from(array.to_owned())).await?;
    Ok(store)
}

async fn commit(store: &icechunk::Store) -> Result<(), Error> {
    let session = store.session();
    let mut session = session.write().await;
    session.commit("benchmark data").execute().await?;
    Ok(())
}
