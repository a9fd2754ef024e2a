//! Other projects' test stores (tests/fixtures/corpus: zarrs' `tests/data`, zarrita.js'
//! `fixtures`, as committed there) read through zarrd: every array zarr-python 3.4.2 reads
//! must read the same, bit for bit, whole and strided; every array it refuses, zarrd
//! refuses with a 4xx. The expected values are zarr-python's reads
//! (`make_corpus_expected.py`), never zarrd's.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use crate::common;

use std::collections::BTreeMap;

use common::{Npy, get, parse_npy};
use serde_json::Value;

fn corpus() -> std::path::PathBuf {
    common::fixtures().join("corpus")
}

fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|s| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>())
        .collect::<Vec<_>>()
        .join("/")
}

/// The strided selection `1::2` along every dimension longer than one (`:` otherwise),
/// and the C-order indices of the elements it picks from an array of `shape`.
fn strided(shape: &[u64]) -> (String, Vec<u64>) {
    let picks: Vec<Vec<u64>> =
        shape.iter().map(|&n| if n > 1 { (1..n).step_by(2).collect() } else { (0..n).collect() }).collect();
    let s = shape.iter().map(|&n| if n > 1 { "1::2" } else { ":" }).collect::<Vec<_>>().join(",");
    let mut indices = vec![0u64];
    for (d, pick) in picks.iter().enumerate() {
        indices = indices.iter().flat_map(|&i| pick.iter().map(move |&p| i * shape[d] + p)).collect();
    }
    (s, indices)
}

/// The elements at `indices`. Text and bytes (`U`, `S`) without their NUL padding: a
/// selection's npy is as wide as its own longest element, as `NumPy` makes it.
fn elements(npy: &Npy, indices: &[u64]) -> Vec<Vec<u8>> {
    let n: u64 = npy.shape.iter().product::<u64>().max(1);
    let item = npy.data.len() / n as usize;
    let unit = match npy.descr.as_bytes().get(1) {
        Some(b'U') => 4,
        Some(b'S') => 1,
        _ => item.max(1) + 1,
    };
    indices
        .iter()
        .map(|&i| {
            let mut e = npy.data[i as usize * item..(i as usize + 1) * item].to_vec();
            while e.len() >= unit && e[e.len() - unit..].iter().all(|&b| b == 0) {
                e.truncate(e.len() - unit);
            }
            e
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_projects_test_stores_read_as_zarr_python_reads_them() {
    let manifest: Value = serde_json::from_slice(&std::fs::read(corpus().join("manifest.json")).unwrap()).unwrap();
    let mut by_store: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for entry in manifest["arrays"].as_array().unwrap() {
        by_store.entry(entry["store"].as_str().unwrap()).or_default().push(entry);
    }
    let (mut read, mut refused) = (0, 0);
    for (store, entries) in by_store {
        let url = corpus().join(store).to_str().unwrap().to_owned();
        let app = common::app_with(vec![("c", common::open_dataset(url, &[]))], common::config(""));
        for entry in entries {
            let path = entry["path"].as_str().unwrap();
            let at = if path.is_empty() { "c".to_owned() } else { format!("c/{}", encode_path(path)) };
            let ctx = format!("{store} `{path}`");
            let Some(expected) = entry["expected"].as_str() else {
                let reply = get(&app, &format!("/v1/slice/{at}")).await;
                assert!(
                    reply.status.is_client_error(),
                    "{ctx}: zarr-python refuses it ({}), zarrd: {}",
                    entry["error"],
                    reply.describe()
                );
                refused += 1;
                continue;
            };
            let want = parse_npy(&std::fs::read(corpus().join("expected").join(expected)).unwrap());
            let reply = get(&app, &format!("/v1/slice/{at}?format=npy")).await;
            assert_eq!(reply.status, 200, "{ctx}: {}", reply.describe());
            let got = parse_npy(&reply.body);
            let shape: Vec<u64> = entry["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(got.shape, shape, "{ctx}");
            assert_eq!(got.descr, want.descr, "{ctx}");
            if entry["uniform"] == true {
                // zarr-python read one value everywhere (nothing written): every element is it.
                let n = shape.iter().product::<u64>() as usize;
                assert_eq!(got.data.len(), n * want.data.len(), "{ctx}");
                assert!(got.data.chunks_exact(want.data.len()).all(|e| e == want.data), "{ctx}");
                read += 1;
                continue;
            }
            assert!(got.data == want.data, "{ctx}: values differ from zarr-python's");
            let (s, indices) = strided(&shape);
            let reply = get(&app, &format!("/v1/slice/{at}?format=npy&s={s}")).await;
            assert_eq!(reply.status, 200, "{ctx} s={s}: {}", reply.describe());
            let part = parse_npy(&reply.body);
            assert!(
                elements(&part, &(0..indices.len() as u64).collect::<Vec<_>>()) == elements(&want, &indices),
                "{ctx} s={s}"
            );
            read += 1;
        }
    }
    // The corpus is what its manifest says: a few hundred arrays, a few refused.
    assert!(read > 300 && refused > 0, "{read} read, {refused} refused");
}
