//! Opening a dataset's store from its URL: local directories (contained), zip archives
//! (read in place), and every backend `object_store` has, with its options checked.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::path::Path;

use crate::config::{ConfigError, DatasetConfig};
use crate::store::Store;
use crate::store::contained::ContainedFs;
use crate::store::zip::ZipFs;

/// Opens the store behind a dataset URL: a local path, `file://`, or any URL
/// `object_store` understands (`s3://`, `gs://`, `az://`, `http(s)://`, `memory:///`).
/// A path through a segment ending in `.zip` is a zipped dataset (`store::zip`).
pub fn open_store(name: &str, ds: &DatasetConfig) -> Result<Store, ConfigError> {
    open_url(&format!("datasets.{name}.url"), &ds.url, (&format!("datasets.{name}.options"), &ds.options))
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
            return Ok(Store::new(Arc::new(fs), Path::default()));
        }
        // Contained: symlinks that lead out of the dataset are never followed.
        let fs = ContainedFs::new(&path).map_err(|e| bad(format!("cannot open `{}`: {e}", path.display())))?;
        Ok(Store::new(Arc::new(fs), Path::default()))
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
    if let Some((archive, inner)) = crate::store::zip::split_archive(&root) {
        // A zipped dataset, read in place; its members are the dataset's objects.
        let zipped = ZipFs::new(Arc::from(store), archive, (!inner.is_empty()).then_some(inner));
        return Ok(Store::new(Arc::new(zipped), Path::default()));
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
