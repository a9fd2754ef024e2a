//! Map-tile fixtures: the app serving every store a manifest lists, and tiles as values.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{app_with, config, local_store, parse_npy};

/// The app serving each store of `manifest["datasets"]` (under `dir`) as a dataset named
/// after it.
pub fn manifest_app(dir: &Path, manifest: &Value) -> axum::Router {
    let stores: Vec<(&str, zarrd_core::store::Store)> = manifest["datasets"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, d)| (name.as_str(), local_store(&dir.join(d["store"].as_str().unwrap()))))
        .collect();
    app_with(stores, config(""))
}

/// A tile's values from an `.npy` body: 256 × 256 float32, rows north to south.
pub fn tile_values(npy: &[u8]) -> Vec<f32> {
    let npy = parse_npy(npy);
    assert_eq!((npy.descr.as_str(), npy.shape.as_slice()), ("<f4", &[256u64, 256][..]));
    npy.data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

/// An expected tile from a gzipped `.npy` file.
pub fn gzipped_tile(file: &Path) -> Vec<f32> {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap()).read_to_end(&mut raw).unwrap();
    tile_values(&raw)
}

/// A directory of grid fixtures: stores, `manifest.json` and `expected/` files in the
/// layout of `make_grids_fixtures.py` (the curvilinear fixtures share it).
pub struct Fixtures {
    pub dir: PathBuf,
    pub manifest: Value,
}

impl Fixtures {
    pub fn at(dir: PathBuf) -> Self {
        let manifest = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        Self { dir, manifest }
    }

    /// The app serving each fixture store as a dataset named after it.
    pub fn app(&self) -> axum::Router {
        manifest_app(&self.dir, &self.manifest)
    }

    /// Every (dataset, array path, its manifest entry).
    pub fn arrays(&self) -> Vec<(String, String, Value)> {
        let mut out = Vec::new();
        for (name, d) in self.manifest["datasets"].as_object().unwrap() {
            for (path, a) in d["arrays"].as_object().unwrap() {
                out.push((name.clone(), path.clone(), a.clone()));
            }
        }
        out
    }

    /// An expected tile: 256 × 256 float32, rows north to south.
    pub fn tile(&self, file: &str) -> Vec<f32> {
        gzipped_tile(&self.dir.join("expected").join(file))
    }

    /// An expected JSON file.
    pub fn expected(&self, file: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.dir.join("expected").join(file)).unwrap()).unwrap()
    }
}
