//! Opening a dataset's store from its URL: local directories (contained), zip archives
//! (read in place), kerchunk reference sets, and every backend `object_store` has, with
//! its options checked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;

use crate::config::{ConfigError, DatasetConfig, DatasetKind};
use zarrd_core::store::Store;
use zarrd_core::store::coalesce::Windows;
use zarrd_core::store::contained::ContainedFs;
use zarrd_core::store::icechunk::{Location, Repo};
use zarrd_core::store::refs::targets::{Opener, Targets, prefix_url};
use zarrd_core::store::refs::{RefStore, RefsFormat};
use zarrd_core::store::web_origin::WebOrigin;
use zarrd_core::store::zip::ZipFs;

/// Opens the store behind a dataset URL: a local path, `file://`, or any URL
/// `object_store` understands (`s3://`, `gs://`, `az://`, `http(s)://`, `memory:///`).
/// A path through a segment ending in `.zip` is a zipped dataset (`store::zip`); a
/// kerchunk reference set is served as the Zarr store it describes (`store::refs`).
pub fn open_store(name: &str, ds: &DatasetConfig) -> Result<Store, ConfigError> {
    match open_dataset(name, ds, crate::config::StorageConfig::default().windows(), Duration::ZERO)? {
        Opened::Store(store) => Ok(store),
        Opened::Versioned(_) => Err(ConfigError::Invalid {
            field: format!("datasets.{name}.url"),
            reason: "an Icechunk repository has a store per version (Catalog::dataset resolves `NAME@REF`)".into(),
        }),
    }
}

/// What a dataset opens as: one store, or a repository with a store per version.
pub enum Opened {
    Store(Store),
    Versioned(Arc<Repo>),
}

/// The dataset at `ds.url`, of the kind configured or found there (looked at once):
/// reads of referenced files merged within `coalesce`, a versioned dataset's branches
/// resolved again after `ref_ttl`.
pub fn open_dataset(
    name: &str,
    ds: &DatasetConfig,
    coalesce: Windows,
    ref_ttl: Duration,
) -> Result<Opened, ConfigError> {
    let field = format!("datasets.{name}.url");
    let options_field = format!("datasets.{name}.options");
    let options = (options_field.as_str(), &ds.options);
    match ds.kind.unwrap_or_else(|| detect(&ds.url)) {
        DatasetKind::Zarr | DatasetKind::Zip => open_url(&field, &ds.url, options).map(Opened::Store),
        DatasetKind::Kerchunk => open_refs(name, ds, coalesce).map(Opened::Store),
        DatasetKind::Icechunk => open_repo(name, ds, ref_ttl, coalesce).map(|r| Opened::Versioned(Arc::new(r))),
    }
}

/// The Icechunk repository at the dataset URL: a local folder or `s3://bucket/prefix`
/// (with the dataset's `aws_*` options); its virtual chunks read under `virtual_refs`.
fn open_repo(name: &str, ds: &DatasetConfig, ref_ttl: Duration, coalesce: Windows) -> Result<Repo, ConfigError> {
    let field = format!("datasets.{name}.url");
    let bad = |reason: String| ConfigError::Invalid { field: field.clone(), reason };
    let location = if !ds.url.contains("://") || ds.url.starts_with("file://") {
        let path = match url::Url::parse(&ds.url) {
            Ok(u) if u.scheme() == "file" => u.to_file_path().map_err(|()| bad("not a valid file URL".into()))?,
            _ => std::path::PathBuf::from(&ds.url),
        };
        if !path.is_dir() {
            return Err(bad(format!("`{}` is not a directory", path.display())));
        }
        Location::Local(path.canonicalize().map_err(|e| bad(e.to_string()))?)
    } else {
        let url = url::Url::parse(&ds.url).map_err(|e| bad(format!("not a valid URL: {e}")))?;
        if url.scheme() != "s3" {
            return Err(bad("Icechunk repositories are served from local folders and `s3://` URLs".into()));
        }
        check_options(&format!("datasets.{name}.options"), "s3", &ds.options)?;
        let bucket = url.host_str().ok_or_else(|| bad("names no bucket".into()))?.to_owned();
        let prefix = url.path().trim_matches('/');
        let prefix = (!prefix.is_empty()).then(|| prefix.to_owned());
        Location::S3 { bucket, prefix, options: ds.options.clone() }
    };
    let targets = targets(name, ds, None)?;
    // Native chunks are read with zarrd's own store of the repository (contained local
    // reads, merged ranges, counted requests), its metadata through the crate.
    let repo_store = open_url(&field, &ds.url, (&format!("datasets.{name}.options"), &ds.options)).ok();
    Ok(Repo::new(name.into(), (location, repo_store), targets, ref_ttl, coalesce))
}

/// The dataset's `virtual_refs`, each prefix opened (with the dataset's options) when first
/// followed; relative references resolved against `base`.
fn targets(name: &str, ds: &DatasetConfig, base: Option<url::Url>) -> Result<Targets, ConfigError> {
    let prefix_field = format!("datasets.{name}.virtual_refs");
    let prefixes = ds
        .virtual_refs
        .iter()
        .map(|p| prefix_url(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|reason| ConfigError::Invalid { field: prefix_field.clone(), reason })?;
    let options = ds.options.clone();
    let open: Opener = Arc::new(move |prefix: &str| {
        open_url(&prefix_field, prefix, (&prefix_field, &options)).map_err(|e| e.to_string())
    });
    Ok(Targets::new(base, prefixes, open))
}

/// What a dataset URL points at, from its name (and, for local paths, what is there):
/// a `.json` file or a folder with a kerchunk `.zmetadata` (one with `record_size`) is a
/// kerchunk reference set; a name ending in `.icechunk` or a folder with Icechunk's `repo`
/// file and `snapshots/` an Icechunk repository; anything else a Zarr store (zipped or not).
fn detect(url: &str) -> DatasetKind {
    let path = url.split(['?', '#']).next().unwrap_or(url).trim_end_matches('/');
    let extension = std::path::Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_default();
    let named = |ext: &str| extension.eq_ignore_ascii_case(ext);
    if named("json") || named("parq") || named("parquet") {
        return DatasetKind::Kerchunk;
    }
    let local = if url.contains("://") {
        url::Url::parse(url).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok())
    } else {
        Some(std::path::PathBuf::from(url))
    };
    if named("icechunk") {
        return DatasetKind::Icechunk;
    }
    if let Some(dir) = &local
        && dir.join("repo").is_file()
        && dir.join("snapshots").is_dir()
    {
        return DatasetKind::Icechunk;
    }
    if let Some(dir) = local
        && let Ok(text) = std::fs::read_to_string(dir.join(".zmetadata"))
        && serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|doc| doc.get("record_size").is_some())
    {
        return DatasetKind::Kerchunk;
    }
    DatasetKind::Zarr
}

/// A kerchunk reference set: the file (JSON) or folder (parquet) at the dataset URL, its
/// references followed under `virtual_refs` (opened with the dataset's options).
fn open_refs(name: &str, ds: &DatasetConfig, coalesce: Windows) -> Result<Store, ConfigError> {
    let field = format!("datasets.{name}.url");
    let bad = |reason: String| ConfigError::Invalid { field: field.clone(), reason };
    let url = if ds.url.contains("://") {
        url::Url::parse(&ds.url).map_err(|e| bad(format!("not a valid URL: {e}")))?
    } else {
        let path = std::path::absolute(&ds.url).map_err(|e| bad(format!("not a valid path: {e}")))?;
        url::Url::from_file_path(&path).map_err(|()| bad("not a valid path".into()))?
    };
    let trimmed = url.path().trim_end_matches('/');
    let (parent, set) = trimmed.rsplit_once('/').ok_or_else(|| bad("names no file or folder".into()))?;
    let set = percent_encoding::percent_decode_str(set).decode_utf8_lossy().into_owned();
    let json = std::path::Path::new(&set).extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let format = if json { RefsFormat::Json } else { RefsFormat::Parquet };
    let mut folder = url.clone();
    folder.set_path(&format!("{parent}/"));
    folder.set_query(None);
    // The reference set's folder: the set is a key in it (a JSON file) or a folder of it.
    let source = open_url(&field, folder.as_str(), (&format!("datasets.{name}.options"), &ds.options))?;
    let targets = targets(name, ds, Some(folder))?;
    let refs = RefStore::new(name.into(), (source, set), format, targets, coalesce);
    Ok(Store::uncounted(Arc::new(refs)))
}

/// Opens the store at `url` with `object_store` options (and the name of the field they
/// come from); errors name `field`.
pub fn open_url(
    field: &str,
    url: &str,
    (options_field, options): (&str, &BTreeMap<String, String>),
) -> Result<Store, ConfigError> {
    let bad = |reason: String| ConfigError::Invalid { field: field.to_owned(), reason };
    let local = |path: std::path::PathBuf| -> Result<Store, ConfigError> {
        if !path.is_dir() {
            // A zip file, or a folder in one: a zipped dataset, read in place.
            let zipped = ZipFs::local(&path).ok_or_else(|| bad(format!("`{}` is not a directory", path.display())))?;
            let fs = zipped.map_err(|e| bad(format!("cannot open `{}`: {e}", path.display())))?;
            return Ok(Store::new(Arc::new(fs), Path::default()).on_this_machine());
        }
        // Contained: symlinks that lead out of the dataset are never followed.
        let fs = ContainedFs::new(&path).map_err(|e| bad(format!("cannot open `{}`: {e}", path.display())))?;
        Ok(Store::new(Arc::new(fs), Path::default()).on_this_machine())
    };
    if !url.contains("://") {
        return local(std::path::PathBuf::from(url));
    }
    let parsed = url::Url::parse(url).map_err(|e| bad(format!("not a valid URL: {e}")))?;
    if parsed.scheme() == "file" {
        return local(parsed.to_file_path().map_err(|()| bad("not a valid file URL".into()))?);
    }
    check_options(options_field, parsed.scheme(), options)?;
    // A URL that says `http://` asks for plain HTTP; object_store refuses it unless told.
    let mut options = options.clone();
    if parsed.scheme() == "http" && !options.keys().any(|k| k.eq_ignore_ascii_case("allow_http")) {
        options.insert("allow_http".to_owned(), "true".to_owned());
    }
    let (store, root) = object_store::parse_url_opts(&parsed, &options).map_err(|e| bad(e.to_string()))?;
    if let Some((archive, inner)) = zarrd_core::store::zip::split_archive(&root) {
        // A zipped dataset, read in place; its members are the dataset's objects.
        let zipped = ZipFs::new(Arc::from(store), archive, (!inner.is_empty()).then_some(inner));
        return Ok(Store::new(Arc::new(zipped), Path::default()));
    }
    if matches!(parsed.scheme(), "http" | "https") {
        // A plain web server may neither list nor honour `Range` (Python's http.server).
        return Ok(Store::web(WebOrigin::new(Arc::from(store)), root));
    }
    Ok(Store::new(Arc::from(store), root))
}

/// `object_store` ignores option names it does not know; a typo in a credential name must
/// fail at startup instead.
fn check_options(options_field: &str, scheme: &str, options: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    use std::str::FromStr;
    for key in options.keys() {
        let k = key.to_ascii_lowercase();
        let known = match scheme {
            "s3" | "s3a" => object_store::aws::AmazonS3ConfigKey::from_str(&k).is_ok(),
            "gs" => object_store::gcp::GoogleConfigKey::from_str(&k).is_ok(),
            "az" | "adl" | "azure" | "abfs" | "abfss" => object_store::azure::AzureConfigKey::from_str(&k).is_ok(),
            "http" | "https" => object_store::ClientConfigKey::from_str(&k).is_ok(),
            _ => false,
        };
        if !known {
            return Err(ConfigError::Invalid {
                field: format!("{options_field}.{key}"),
                reason: format!(
                    "not an option of the `{scheme}` backend (see the object_store documentation for its config keys)"
                ),
            });
        }
    }
    Ok(())
}
