//! Where references may lead: a reference (absolute URL, absolute local path, or a path
//! relative to the reference set) is resolved to a URL, and followed only when that URL is
//! under one of the dataset's `virtual_refs` prefixes. Each prefix is opened once, as a
//! store of its own (a local prefix through the contained file system, so a symlink out of
//! it is not followed), and the reference read as a key of it: a resolved URL can never
//! name a file outside its prefix.

use std::sync::{Arc, OnceLock};

use percent_encoding::percent_decode_str;
use url::Url;

use super::error::RefsError;
use crate::store::Store;

/// Opens the store of a prefix URL (with the dataset's options).
pub type Opener = Arc<dyn Fn(&str) -> Result<Store, String> + Send + Sync>;

struct Allowed {
    prefix: Url,
    store: OnceLock<Result<Store, String>>,
}

/// The dataset's `virtual_refs`, and how to resolve relative references.
pub struct Targets {
    /// The folder of the reference set (relative references are resolved against it).
    base: Option<Url>,
    allowed: Vec<Allowed>,
    open: Opener,
}

impl std::fmt::Debug for Targets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefixes: Vec<&str> = self.allowed.iter().map(|a| a.prefix.as_str()).collect();
        write!(f, "Targets({prefixes:?})")
    }
}

/// A `virtual_refs` entry as a prefix URL: a URL (or a local path) that ends in `/`.
pub fn prefix_url(prefix: &str) -> Result<Url, String> {
    let url = if prefix.contains("://") {
        Url::parse(prefix).map_err(|e| format!("`{prefix}` is not a valid URL: {e}"))?
    } else {
        let path = std::path::Path::new(prefix);
        if !path.is_absolute() {
            return Err(format!("`{prefix}` is neither a URL nor an absolute path"));
        }
        Url::from_directory_path(path).map_err(|()| format!("`{prefix}` is not a valid path"))?
    };
    if !url.path().ends_with('/') {
        return Err(format!("`{prefix}` must end with `/` (a prefix of folders, not of names)"));
    }
    if url.cannot_be_a_base() || url.query().is_some() || url.fragment().is_some() {
        return Err(format!("`{prefix}` must be a folder URL without query or fragment"));
    }
    Ok(url)
}

impl Targets {
    /// `prefixes` are checked [`prefix_url`]s; `base` is the folder URL of the reference
    /// set, when it has one relative references may use.
    pub fn new(base: Option<Url>, prefixes: Vec<Url>, open: Opener) -> Self {
        let allowed = prefixes.into_iter().map(|prefix| Allowed { prefix, store: OnceLock::new() }).collect();
        Self { base, allowed, open }
    }

    /// The store and key that `reference` names, or why it may not be read.
    pub fn resolve(&self, reference: &str) -> Result<(Store, String), RefsError> {
        let denied = |why: &str| RefsError::Denied(format!("reference `{reference}` {why}"));
        let url = if reference.contains("://") {
            Url::parse(reference).map_err(|_| denied("is not a valid URL"))?
        } else if reference.starts_with('/') {
            Url::from_file_path(reference).map_err(|()| denied("is not a valid path"))?
        } else {
            let base = self.base.as_ref().ok_or_else(|| denied("is relative, and this reference set has no folder"))?;
            base.join(reference).map_err(|_| denied("is not a valid relative path"))?
        };
        let (allowed, key) = self
            .allowed
            .iter()
            .find_map(|a| under(&a.prefix, &url).map(|key| (a, key)))
            .ok_or_else(|| denied("is outside this dataset's `virtual_refs` and was not read"))?;
        let key = key.map_err(|why| denied(&why))?;
        let store = allowed.store.get_or_init(|| (self.open)(allowed.prefix.as_str()));
        let store = store.clone().map_err(|e| RefsError::Target(format!("cannot open `{}`: {e}", allowed.prefix)))?;
        Ok((store, key))
    }
}

/// The key of `url` under `prefix` (decoded, each segment a plain name), if it is there.
fn under(prefix: &Url, url: &Url) -> Option<Result<String, String>> {
    if prefix.scheme() != url.scheme()
        || prefix.host_str() != url.host_str()
        || prefix.port_or_known_default() != url.port_or_known_default()
        || prefix.username() != url.username()
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return None;
    }
    let rest = url.path().strip_prefix(prefix.path())?;
    let mut key = Vec::new();
    for segment in rest.split('/') {
        let Ok(name) = percent_decode_str(segment).decode_utf8() else {
            return Some(Err("is not UTF-8".into()));
        };
        // `..` and `.` segments are resolved by URL parsing for special schemes only; an
        // encoded `/` would hide a folder: neither may reach past the prefix.
        if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\\') {
            return Some(Err("has an empty, `.` or `..` segment".into()));
        }
        key.push(name.into_owned());
    }
    Some(Ok(key.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(prefixes: &[&str]) -> Targets {
        let prefixes = prefixes.iter().map(|p| prefix_url(p).unwrap()).collect();
        let open: Opener = Arc::new(|url: &str| {
            let store = object_store::memory::InMemory::new();
            Ok(Store::new(Arc::new(store), object_store::path::Path::from(url.replace(':', "_"))))
        });
        Targets::new(Some(Url::parse("file:///data/refs/").unwrap()), prefixes, open)
    }

    fn key(t: &Targets, reference: &str) -> Result<String, RefsError> {
        t.resolve(reference).map(|(_, k)| k)
    }

    #[test]
    fn references_resolve_under_their_prefix() {
        let t = targets(&["file:///data/nc/", "s3://bucket/archive/", "https://host.example/files/"]);
        assert_eq!(key(&t, "../nc/a.nc").unwrap(), "a.nc");
        assert_eq!(key(&t, "/data/nc/sub/b.nc").unwrap(), "sub/b.nc");
        assert_eq!(key(&t, "file:///data/nc/c%20d.nc").unwrap(), "c d.nc");
        assert_eq!(key(&t, "s3://bucket/archive/2020/x.nc").unwrap(), "2020/x.nc");
        assert_eq!(key(&t, "https://host.example:443/files/y.grib").unwrap(), "y.grib");
    }

    #[test]
    fn everything_else_is_denied() {
        let t = targets(&["file:///data/nc/", "s3://bucket/archive/", "https://host.example/files/"]);
        for reference in [
            "file:///etc/passwd",
            "/etc/passwd",
            "../../../../etc/hostname",
            "file:///data/nc/../secret/x",
            "file:///data/nc/%2e%2e/secret/x",
            "file:///data/nc/a%2fb",
            "file:///data/ncx/a.nc",
            "s3://bucket/archive/../other/x",
            "s3://bucket/archive/%2E%2E/other/x",
            "s3://other/archive/x",
            "http://host.example/files/y",
            "https://host.example:8443/files/y",
            "https://user@host.example/files/y",
            "https://host.example/files/y?x=1",
            "http://127.0.0.1:1/x",
            "ftp:",
            "",
        ] {
            assert!(matches!(key(&t, reference), Err(RefsError::Denied(_))), "{reference}");
        }
    }

    #[test]
    fn prefixes_must_be_folders() {
        assert!(prefix_url("s3://bucket/archive").is_err());
        assert!(prefix_url("relative/dir/").is_err());
        assert!(prefix_url("https://h/x/?q=1").is_err());
        assert_eq!(prefix_url("/data/nc").unwrap().as_str(), "file:///data/nc/");
    }
}
