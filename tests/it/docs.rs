//! The manual stays true to the repository: every relative link of the README and of
//! `docs/` names a file or folder that exists in it (none points outside it), and
//! `docs/performance.md` is a page of today's figures (at most 400 lines; the history is in
//! git) whose every `benches/…` path exists.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages: the README and every Markdown file of `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages
}

/// The targets of the inline links `[text](target)` of `text`, outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_names_a_file_of_the_repository() {
    let root = root().canonicalize().unwrap();
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            let path = target.split('#').next().unwrap();
            if path.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let resolved = page.parent().unwrap().join(path);
            let inside = resolved.canonicalize().is_ok_and(|p| p.starts_with(&root));
            if !inside {
                broken.push(format!("{}: ({target})", page.strip_prefix(&root).unwrap_or(&page).display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing in the repository:\n{}", broken.join("\n"));
}

#[test]
fn the_performance_page_is_todays_figures_with_commands_that_exist() {
    let text = std::fs::read_to_string(root().join("docs/performance.md")).unwrap();
    let lines = text.lines().count();
    assert!(lines <= 400, "docs/performance.md has {lines} lines: today's figures only (the history is in git)");
    let mut missing = Vec::new();
    for (at, _) in text.match_indices("benches/") {
        let path: String =
            text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || "/_.-".contains(*c)).collect();
        let glob = text[at + path.len()..].starts_with('*');
        let path = path.trim_end_matches(['.', '/']);
        // `dir/prefix*`: some file of `dir` begins so.
        let found = if glob {
            let (dir, prefix) = path.rsplit_once('/').unwrap();
            std::fs::read_dir(root().join(dir))
                .is_ok_and(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(prefix)))
        } else {
            Path::new(&root().join(path)).exists()
        };
        if !found && !missing.contains(&path.to_owned()) {
            missing.push(path.to_owned());
        }
    }
    assert!(missing.is_empty(), "docs/performance.md cites what is not there: {missing:?}");
}
