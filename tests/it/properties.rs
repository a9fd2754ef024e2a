//! Property tests: the parsers that read client input (selections, `Range` headers) and
//! stored data (`zarr.json` documents, shard indexes) return an error for anything they
//! cannot use and never panic, whatever the input. Panics found here are kept as plain
//! regression tests beside the code they fixed.

#![allow(clippy::unwrap_used)] // test helpers panic on broken fixtures by design

use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};
use zarrd::http::conditional::ByteRange;
use zarrd_core::read::selection::Selection;
use zarrd_core::zarr::codec::ShardingCodec;
use zarrd_core::zarr::data_type::DataType;
use zarrd_core::zarr::metadata::Node;

/// `cases` per property, kept modest so the suite stays fast; `PROPTEST_CASES=100000`
/// runs a deeper search by hand.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Integers where the arithmetic is interesting: the edges of i64 and u64 and small ones.
fn edgy_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -20i64..20,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN + 1),
        1 => any::<i64>(),
    ]
}

fn edgy_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..40,
        1 => Just(u64::MAX),
        1 => Just(u64::MAX - 1),
        1 => Just(i64::MAX as u64),
        1 => Just(1u64 << 63),
        1 => any::<u64>(),
    ]
}

/// Text made of the characters selections are written in, plus a few others.
fn selection_text() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::string::string_regex("[0-9:,.+\\- ]{0,24}").unwrap(),
        proptest::collection::vec(
            prop_oneof![
                edgy_i64().prop_map(|i| i.to_string()),
                (proptest::option::of(edgy_i64()), proptest::option::of(edgy_i64()), proptest::option::of(edgy_i64()))
                    .prop_map(|(a, b, c)| {
                        let part = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
                        match c {
                            Some(c) => format!("{}:{}:{}", part(a), part(b), c),
                            None => format!("{}:{}", part(a), part(b)),
                        }
                    }),
                Just("...".to_owned()),
            ],
            0..6
        )
        .prop_map(|items| items.join(",")),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn selections_never_panic_and_stay_in_bounds(
        text in selection_text(),
        shape in proptest::collection::vec(edgy_u64(), 0..5),
    ) {
        let Ok(selection) = Selection::parse(&text) else { return Ok(()) };
        // What is displayed parses back to the same selection (it is echoed in errors).
        prop_assert_eq!(Selection::parse(&selection.to_string()), Ok(selection.clone()));
        let Ok(dims) = selection.resolve(&shape) else { return Ok(()) };
        prop_assert_eq!(dims.len(), shape.len());
        for (d, &len) in dims.iter().zip(&shape) {
            prop_assert!(d.step >= 1);
            if d.count > 0 {
                let last = u128::from(d.start) + u128::from(d.count - 1) * u128::from(d.step);
                prop_assert!(last < u128::from(len), "{d:?} leaves a dimension of {len}");
            }
            prop_assert!(!d.drop || d.count == 1);
        }
    }

    #[test]
    fn range_headers_never_panic_and_resolve_inside_the_object(
        value in prop_oneof![
            proptest::string::string_regex("(bytes|BYTES|items)?=?[0-9+\\- ,\t]{0,24}").unwrap(),
            (edgy_u64(), edgy_u64()).prop_map(|(a, b)| format!("bytes={a}-{b}")),
            edgy_u64().prop_map(|n| format!("bytes=-{n}")),
            any::<String>(),
        ],
        size in edgy_u64(),
    ) {
        let Some(range) = ByteRange::parse(&value) else { return Ok(()) };
        prop_assert!(!value.contains('+'), "{value} has a sign");
        if let Some(r) = range.resolve(size) {
            prop_assert!(r.start < r.end && r.end <= size, "{value} on {size} bytes gave {r:?}");
        }
    }

    #[test]
    fn well_formed_ranges_parse(a in any::<u64>(), b in any::<u64>()) {
        let (a, b) = (a.min(b), a.max(b));
        prop_assert_eq!(ByteRange::parse(&format!("bytes={a}-{b}")), Some(ByteRange::Bounded(a, b)));
        prop_assert_eq!(ByteRange::parse(&format!("bytes={a}-")), Some(ByteRange::From(a)));
        prop_assert_eq!(ByteRange::parse(&format!("bytes=-{b}")), Some(ByteRange::Suffix(b)));
    }
}

/// The `zarr.json` documents of the conformance fixtures, parsed (once).
fn fixture_documents() -> &'static [Value] {
    static DOCS: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    DOCS.get_or_init(read_fixture_documents)
}

fn read_fixture_documents() -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/data.zarr");
    let mut docs = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "zarr.json") {
                docs.push(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
            }
        }
    }
    docs.sort_by_key(Value::to_string);
    docs
}

/// Values a mutation puts into a document: edges of every JSON type and the names the
/// metadata parser looks for.
fn replacements() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(1),
        json!(-1),
        json!(3),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
        json!(-0.5),
        json!(9_007_199_254_740_993_u64),
        json!(""),
        json!("NaN"),
        json!("Infinity"),
        json!("0x7fc00000"),
        json!("0xffffffffffffffffffff"),
        json!("start"),
        json!("end"),
        json!("little"),
        json!("big"),
        json!("regular"),
        json!("rectilinear"),
        json!("rectangular"),
        json!("sharding_indexed"),
        json!("bytes"),
        json!("zstd"),
        json!("blosc"),
        json!("transpose"),
        json!("float32"),
        json!("uint64"),
        json!("complex128"),
        json!("bool"),
        json!([]),
        json!([0]),
        json!([u64::MAX]),
        json!([u64::MAX, u64::MAX]),
        json!([1, 0]),
        json!([[1, u64::MAX]]),
        json!([[u64::MAX, 2], 3]),
        json!([[0, 0]]),
        json!([1.5, -2]),
        json!({}),
        json!({"name": "regular", "configuration": {"chunk_shape": [0]}}),
        json!({"name": "sharding_indexed", "configuration": {"chunk_shape": [u64::MAX]}}),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Any value of [`replacements`].
    Replace(usize),
    /// A value of the same JSON type: another number, string, a list one longer or shorter.
    Tweak(usize),
    Remove,
}

#[derive(Debug, Clone)]
struct Mutation {
    path: Vec<usize>,
    op: Op,
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "9007199254740993",
    "18446744073709551615",
    "-9223372036854775808",
    "1e308",
    "0.5",
    "4294967296",
];
const STRINGS: &[&str] = &[
    "",
    "start",
    "end",
    "little",
    "big",
    "regular",
    "rectilinear",
    "sharding_indexed",
    "bytes",
    "crc32c",
    "transpose",
    "zstd",
    "gzip",
    "blosc",
    "lz4",
    "shuffle",
    "bitshuffle",
    "float64",
    "int8",
    "uint64",
    "complex64",
    "bool",
    "NaN",
    "-Infinity",
    "0x7fc00000",
    "0x",
    ".",
    "/",
    "v2",
    "default",
];

fn tweak(value: &Value, k: usize) -> Value {
    match value {
        Value::Number(_) => serde_json::from_str(NUMBERS[k % NUMBERS.len()]).unwrap(),
        Value::String(_) => json!(STRINGS[k % STRINGS.len()]),
        Value::Array(a) if k.is_multiple_of(2) || a.is_empty() => {
            let mut a = a.clone();
            a.push(a.first().cloned().unwrap_or(json!(1)));
            Value::Array(a)
        }
        Value::Array(a) => Value::Array(a[..a.len() - 1].to_vec()),
        Value::Bool(b) => json!(!b),
        Value::Object(_) | Value::Null => json!(k % 3),
    }
}

/// Follows `path` (each step picks a member or element modulo the count; the root's
/// `zarr_format` and `node_type` are left alone, or nearly every document would be
/// rejected right there) and applies the operation at the last step it can take.
fn apply(doc: &mut Value, mutation: &Mutation, values: &[Value]) {
    let mut node = doc;
    for (depth, &step) in mutation.path.iter().enumerate() {
        let pick = |m: &serde_json::Map<String, Value>| -> Option<String> {
            let keys: Vec<&String> =
                m.keys().filter(|k| depth > 0 || !matches!(k.as_str(), "zarr_format" | "node_type")).collect();
            (!keys.is_empty()).then(|| keys[step % keys.len()].clone())
        };
        let descend = depth + 1 < mutation.path.len()
            && match &*node {
                Value::Object(m) => pick(m).is_some_and(|k| m[&k].is_object() || m[&k].is_array()),
                Value::Array(a) => !a.is_empty() && (a[step % a.len()].is_object() || a[step % a.len()].is_array()),
                _ => false,
            };
        if descend {
            node = match node {
                Value::Object(m) => {
                    let key = pick(m).unwrap();
                    m.get_mut(&key).unwrap()
                }
                Value::Array(a) => {
                    let len = a.len();
                    &mut a[step % len]
                }
                _ => return,
            };
            continue;
        }
        match node {
            Value::Object(m) => {
                let Some(key) = pick(m) else { return };
                match mutation.op {
                    Op::Replace(k) => {
                        m.insert(key, values[k % values.len()].clone());
                    }
                    Op::Tweak(k) => {
                        let v = tweak(&m[&key], k);
                        m.insert(key, v);
                    }
                    Op::Remove => {
                        m.remove(&key);
                    }
                }
            }
            Value::Array(a) if !a.is_empty() => {
                let i = step % a.len();
                match mutation.op {
                    Op::Replace(k) => a[i] = values[k % values.len()].clone(),
                    Op::Tweak(k) => a[i] = tweak(&a[i], k),
                    Op::Remove => {
                        a.remove(i);
                    }
                }
            }
            _ => {}
        }
        return;
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let op = prop_oneof![
        3 => any::<usize>().prop_map(Op::Replace),
        6 => any::<usize>().prop_map(Op::Tweak),
        1 => Just(Op::Remove),
    ];
    (proptest::collection::vec(0usize..64, 1..7), op).prop_map(|(path, op)| Mutation { path, op })
}

/// What the server derives from a parsed array before reading it must not panic either:
/// the chunk grid at its first and last chunk, keys, shard index sizes.
fn use_node(node: &Node) {
    let Node::Array(array) = node else { return };
    let grid = &array.chunk_grid;
    let _ = grid.to_json();
    let _ = array.read_chunk_shape();
    let grid_shape = grid.grid_shape();
    if grid_shape.contains(&0) {
        return;
    }
    let last: Vec<u64> = grid_shape.iter().map(|n| n - 1).collect();
    for coords in [vec![0; last.len()], last] {
        assert!(grid.contains(&coords));
        let shard_shape = grid.chunk_shape(&coords);
        let _ = (grid.chunk_origin(&coords), grid.data_shape(&coords), array.chunk_key_encoding.encode(&coords));
        if let Some(sharding) = array.sharding()
            && let Ok(cps) = sharding.chunks_per_shard(&shard_shape)
        {
            let _ = sharding.index_size(&cps);
        }
    }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn mutated_zarr_json_never_panics(
        which in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let docs = fixture_documents();
        let values = replacements();
        let mut doc = docs[which % docs.len()].clone();
        for m in &mutations {
            apply(&mut doc, m, &values);
        }
        if let Ok(node) = Node::parse(doc.to_string().as_bytes()) {
            use_node(&node);
        }
    }

    #[test]
    fn zarr_json_bytes_never_panic(
        which in any::<usize>(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..8),
        junk in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let docs = fixture_documents();
        let mut bytes = serde_json::to_vec(&docs[which % docs.len()]).unwrap();
        for (at, byte, op) in edits {
            let at = at % (bytes.len() + 1);
            match op {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ => {}
            }
        }
        if let Ok(node) = Node::parse(&bytes) {
            use_node(&node);
        }
        let _ = Node::parse(&junk);
    }
}

fn sharding(index_codecs: &Value, location: &str, rank: usize) -> ShardingCodec {
    let config = json!({
        "chunk_shape": vec![2; rank],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": index_codecs,
        "index_location": location,
    });
    ShardingCodec::from_config(config.as_object(), DataType::Float32, &vec![vec![4]; rank]).unwrap()
}

fn chunks_per_shard() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(prop_oneof![8 => 0u64..5, 1 => edgy_u64()], 1..4)
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn shard_indexes_never_panic(
        crc in any::<bool>(),
        big_endian in any::<bool>(),
        start in any::<bool>(),
        cps in chunks_per_shard(),
        encoded in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            // Plausible entries: (offset, nbytes) pairs of edgy values.
            proptest::collection::vec(edgy_u64(), 0..40)
                .prop_map(|words| words.iter().flat_map(|w| w.to_le_bytes()).collect()),
        ],
        shard_len in edgy_u64(),
    ) {
        let endian = if big_endian { "big" } else { "little" };
        let mut codecs = vec![json!({"name": "bytes", "configuration": {"endian": endian}})];
        if crc {
            codecs.push(json!({"name": "crc32c"}));
        }
        let codec = sharding(&Value::Array(codecs), if start { "start" } else { "end" }, cps.len());
        let _ = codec.index_size(&cps);
        if let Ok(index) = codec.decode_index(&encoded, &cps, shard_len) {
            prop_assert_eq!(index.chunks_per_shard, cps);
        }
        let _ = codec.index_of_shard(&encoded, &vec![4; codec.chunk_shape.len()]);
    }
}
