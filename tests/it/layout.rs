//! The shape of the code (docs/ARCHITECTURE.md) where the compiler cannot see it, checked
//! on every test run. That the core crate (`crates/zarrd-core`) holds no HTTP is the
//! compiler's business (it cannot name a crate it does not depend on); what is left here:
//!
//! - **The core declares no HTTP crate**: axum, hyper, tower, tower-http, http-body are
//!   absent from its manifest (`object_store`'s own client may use them, out of our sight).
//! - **No import cycles** between modules (one module per source file): a module refers to
//!   another through `crate::`, `super::` or `self::` paths, in `use` items or in code;
//!   declaring a child (`mod x;`) is not a reference. Test modules are left out.
//! - **Leaf modules** (errors, JSON helpers, data types, the CPU pool, metrics) refer to no
//!   other module of the crate but the leaves listed with them.
//! - **Parts in layers**: the top-level modules import no cycle either.
//! - **Small files**: no source file over [`MAX_LINES`] lines.
//! - **The doc names every module**: docs/ARCHITECTURE.md names each module of both crates.
//!
//! Each check runs on both crates of the workspace, each graph within its crate.
//!
//! The module graph is read from the source text: a path is resolved to the longest prefix
//! that names a module file, and a path to an item of the crate root is a reference to
//! `lib`. The same checks as `cargo modules dependencies --acyclic`, without the tool.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest source file allowed, in lines (tests included).
const MAX_LINES: usize = 520;

/// The source roots of the workspace's crates.
const CRATES: &[&str] = &["src", "crates/zarrd-core/src"];

/// Modules that may refer only to the modules listed with them (besides other crates), by
/// crate root.
const LEAVES: &[(&str, &[(&str, &[&str])])] = &[("src", SERVER_LEAVES), ("crates/zarrd-core/src", CORE_LEAVES)];

const SERVER_LEAVES: &[(&str, &[&str])] = &[("error", &[]), ("markup", &[])];

const CORE_LEAVES: &[(&str, &[&str])] = &[
    ("ops/cpu", &[]),
    ("ops/metrics", &["ops/tally", "ops/cpu"]),
    ("ops/tally", &[]),
    ("ops/panics", &["ops/cpu"]),
    ("zarr/json", &[]),
    ("zarr/data_type", &["zarr/json", "zarr/time"]),
    ("zarr/time", &["zarr/json"]),
    ("zarr/codec/error", &["zarr/json"]),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every `.rs` file under `dir`, by module path (`zarr/codec/zstd`; `lib` for the root).
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            modules(&path, &format!("{prefix}{name}/"), out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let module =
                if name == "mod" { prefix.trim_end_matches('/').to_owned() } else { format!("{prefix}{name}") };
            let module = if module == "main" { continue } else { module };
            out.insert(module, path);
        }
    }
}

/// The source without comments, string literals and the `#[cfg(test)]` part.
fn code(text: &str) -> String {
    let text = text.split("\n#[cfg(test)]").next().unwrap();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
                out.push_str("\"\"");
            }
            // A char literal ('"' would open a string); lifetimes pass through.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') || rest.chars().nth(1) == Some('\'') {
                    for c in chars.by_ref() {
                        if c == '\'' && !out.ends_with('\\') {
                            break;
                        }
                        out.push(c);
                    }
                    out.push(' ');
                } else {
                    out.push(c);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The paths a source names from `crate`, `super` or `self`, each as segments from the
/// crate root, expanding `{a, b::c}` groups.
fn paths(module: &str, code: &str) -> Vec<Vec<String>> {
    let me: Vec<&str> = if module == "lib" { vec![] } else { module.split('/').collect() };
    // What `self` and `super` mean here: a file `a/b.rs` and a directory module
    // `a/b/mod.rs` are both the module `a::b`.
    let own = me;
    let parent: Vec<&str> = own[..own.len().saturating_sub(1)].to_vec();
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let word_start =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        let rest = &code[i..];
        let head = ["crate::", "super::", "self::"].into_iter().find(|h| word_start && rest.starts_with(h));
        let Some(head) = head else {
            i += 1;
            continue;
        };
        let mut base: Vec<String> = match head {
            "crate::" => vec![],
            "super::" => parent.iter().map(|s| (*s).to_owned()).collect(),
            _ => own.iter().map(|s| (*s).to_owned()).collect(),
        };
        let mut j = i + head.len();
        while code[j..].starts_with("super::") {
            base.pop();
            j += "super::".len();
        }
        let (tails, end) = path_tails(&code[j..]);
        for tail in tails {
            let mut full = base.clone();
            full.extend(tail);
            found.push(full);
        }
        i = j + end.max(1);
    }
    found
}

/// The path segments after a `crate::`-like head: one path, or a `{…}` group of them.
fn path_tails(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut segments = Vec::new();
    let mut i = 0;
    loop {
        let rest = &s[i..];
        if rest.starts_with('{') {
            // A group: split at top-level commas.
            let mut depth = 0;
            let mut end = 0;
            for (k, c) in rest.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &rest[1..end];
            let mut items = Vec::new();
            let (mut depth, mut start) = (0, 0);
            for (k, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(&inner[start..k]);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            items.push(&inner[start..]);
            let mut out = Vec::new();
            for item in items.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
                for tail in path_tails(item).0 {
                    let mut full = segments.clone();
                    full.extend(tail);
                    out.push(full);
                }
            }
            return (out, i + end + 1);
        }
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if len == 0 {
            return (vec![segments], i);
        }
        segments.push(rest[..len].to_owned());
        i += len;
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![segments], i);
        }
    }
}

/// Paths through the children a module declares (`mod x;` … `x::Item`), which name them
/// without `self::`.
fn child_paths(module: &str, code: &str) -> Vec<Vec<String>> {
    let me: Vec<String> = if module == "lib" { vec![] } else { module.split('/').map(str::to_owned).collect() };
    let mut children = Vec::new();
    for line in code.lines() {
        let line = line.trim();
        let decl = line.strip_prefix("pub ").or_else(|| line.strip_prefix("pub(crate) ")).unwrap_or(line);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            children.push(name.trim().to_owned());
        }
    }
    let mut found = Vec::new();
    for child in children {
        let needle = format!("{child}::");
        for (at, _) in code.match_indices(&needle) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut full = me.clone();
            full.push(child.clone());
            found.push(full);
        }
    }
    found
}

struct Graph {
    edges: BTreeMap<String, BTreeSet<String>>,
    files: BTreeMap<String, PathBuf>,
}

/// The module graph of the crate whose source root is `src` (relative to the workspace).
fn graph(src: &str) -> Graph {
    let mut files = BTreeMap::new();
    modules(&root().join(src), "", &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let targets = edges.entry(module.clone()).or_default();
        let code = code(&text);
        let mut named = paths(module, &code);
        named.extend(child_paths(module, &code));
        for full in named {
            // The longest prefix that is a module; none: an item of the crate root.
            let target = (0..=full.len())
                .rev()
                .map(|n| full[..n].join("/"))
                .find(|m| files.contains_key(m.as_str()))
                .unwrap_or_else(|| "lib".to_owned());
            let target = if target.is_empty() { "lib".to_owned() } else { target };
            if &target != module {
                targets.insert(target);
            }
        }
    }
    Graph { edges, files }
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let lw = s.low[w.as_str()];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w.as_str()) {
                let iw = s.index[w.as_str()];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}

/// `cargo test --test it layout::print_the_module_graph -- --nocapture` prints the graphs.
#[test]
fn print_the_module_graph() {
    for src in CRATES {
        println!("{src}:");
        for (module, targets) in &graph(src).edges {
            let list: Vec<&str> = targets.iter().map(String::as_str).collect();
            println!("  {module} -> {}", list.join(" "));
        }
    }
}

#[test]
fn the_core_declares_no_http_crate() {
    let manifest = std::fs::read_to_string(root().join("crates/zarrd-core/Cargo.toml")).unwrap();
    let manifest: toml::Table = manifest.parse().unwrap();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let Some(deps) = manifest.get(section).and_then(toml::Value::as_table) else { continue };
        for http in ["axum", "hyper", "hyper-util", "tower", "tower-http", "http", "http-body", "http-body-util"] {
            assert!(
                !deps.contains_key(http),
                "crates/zarrd-core [{section}] declares `{http}`: HTTP belongs in the server"
            );
        }
    }
}

#[test]
fn modules_import_no_cycle() {
    for src in CRATES {
        no_cycle_in(src);
    }
}

fn no_cycle_in(src: &str) {
    let graph = graph(src);
    let found = cycles(&graph.edges);
    let describe: Vec<String> = found
        .iter()
        .map(|c| {
            let inside: Vec<String> = c
                .iter()
                .map(|m| {
                    let to: Vec<&str> = graph.edges[m].iter().filter(|t| c.contains(t)).map(String::as_str).collect();
                    format!("{m} -> {}", to.join(", "))
                })
                .collect();
            inside.join("\n    ")
        })
        .collect();
    assert!(found.is_empty(), "import cycles in {src}:\n  {}", describe.join("\n  ---\n  "));
}

/// The parts (top-level modules: `http`, `read`, `zarr`…) import no cycle either: the
/// layers of docs/ARCHITECTURE.md.
#[test]
fn parts_import_no_cycle() {
    let part = |m: &str| m.split('/').next().unwrap_or(m).to_owned();
    for src in CRATES {
        let mut parts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, targets) in graph(src).edges {
            let from = part(&module);
            let entry = parts.entry(from.clone()).or_default();
            entry.extend(targets.iter().map(|t| part(t)).filter(|t| *t != from));
        }
        let found = cycles(&parts);
        assert!(found.is_empty(), "the parts of {src} import a cycle: {found:?} ({parts:?})");
    }
}

#[test]
fn leaf_modules_import_only_leaves() {
    for (src, leaves) in LEAVES {
        let graph = graph(src);
        for (leaf, allowed) in *leaves {
            let targets = graph.edges.get(*leaf).unwrap_or_else(|| panic!("no module {leaf} in {src}"));
            let above: Vec<&String> = targets.iter().filter(|t| !allowed.contains(&t.as_str())).collect();
            assert!(above.is_empty(), "leaf module {leaf} of {src} imports {above:?}");
        }
    }
}

#[test]
fn no_source_file_is_long() {
    let long: Vec<String> = CRATES
        .iter()
        .flat_map(|src| graph(src).files.into_values())
        .filter_map(|p| {
            let n = std::fs::read_to_string(&p).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", p.strip_prefix(root()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "source files over {MAX_LINES} lines: {long:?}");
}

/// Every module of both crates, at every depth (`main.rs` too; `lib` and `tests` modules
/// left out), is named in docs/ARCHITECTURE.md, so a new module fails here until the doc
/// says what it is. The rule, stated in the doc too: a module is named by its path from
/// its crate's `src/` in backticks (`read/plan`, `http/routes/maps.rs`, `images/iiif/`,
/// `src/error/core.rs`, `images/maps::TileJson`), or, in a table row whose first cell is a
/// folder (`` `http/routes/` ``), by its path from that folder in backticks (`maps`).
#[test]
fn the_architecture_names_every_module() {
    let named = named_modules(&std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap());
    let mut missing = Vec::new();
    for src in CRATES {
        let mut files = BTreeMap::new();
        modules(&root().join(src), "", &mut files);
        let main = root().join(src).join("main.rs");
        if main.exists() {
            files.insert("main".to_owned(), main);
        }
        for (module, path) in files {
            let test = module.rsplit('/').next() == Some("tests");
            if module != "lib" && !test && !named.contains(&module) {
                missing.push(format!("`{module}` ({})", path.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names no\n  {}", missing.join("\n  "));
}

/// The modules a Markdown text names, by the rule of `the_architecture_names_every_module`.
fn named_modules(doc: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let prose: Vec<&str> = doc
        .lines()
        .filter(|l| {
            fenced ^= l.starts_with("```");
            !fenced && !l.starts_with("```")
        })
        .collect();
    let spans = |text: &str| -> Vec<String> { text.split('`').skip(1).step_by(2).filter_map(as_module).collect() };
    let mut named: BTreeSet<String> = spans(&prose.join("\n")).into_iter().collect();
    for row in prose.iter().filter(|l| l.starts_with('|')) {
        let first = row.split('|').nth(1).unwrap_or_default();
        let folders = first.split('`').skip(1).step_by(2).filter(|s| s.ends_with('/')).filter_map(as_module);
        for folder in folders {
            named.extend(spans(row).iter().map(|m| format!("{folder}/{m}")));
        }
    }
    named
}

/// A backticked span as a module path from its crate's `src/`, where it has that form.
fn as_module(span: &str) -> Option<String> {
    let path = span.strip_prefix("crates/zarrd-core/src/").or_else(|| span.strip_prefix("src/")).unwrap_or(span);
    let path = path.split("::").next().unwrap_or_default();
    let path = path.strip_suffix(".rs").or_else(|| path.strip_suffix('/')).unwrap_or(path);
    let word = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '/';
    (!path.is_empty() && path.chars().all(word)).then(|| path.to_owned())
}

#[test]
fn the_checker_sees_paths_and_groups() {
    let code = code(
        "use super::{a::B, c};\nuse crate::x::y::{self, Z}; // crate::comment\nlet s = \"crate::str\";\nself::q::r();",
    );
    let found = paths("p/m", &code);
    let as_text: Vec<String> = found.iter().map(|p| p.join("/")).collect();
    assert_eq!(as_text, ["p/a/B", "p/c", "x/y/self", "x/y/Z", "p/m/q/r"]);
    let mut edges = BTreeMap::new();
    edges.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    edges.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    edges.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    edges.insert("d".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(cycles(&edges), [["a", "b", "c"]]);
    let doc = "`src/a.rs`, `b/c::D`, `Not`\n```\n`e`\n```\n| `f/` | `h`, `i/j.rs` |";
    let named: Vec<String> = named_modules(doc).into_iter().collect();
    assert_eq!(named, ["a", "b/c", "f", "f/f", "f/h", "f/i/j", "h", "i/j"]);
}
