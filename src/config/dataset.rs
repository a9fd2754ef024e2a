//! One dataset's configuration: where it is, what it is, and how it may be read.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::env::option_texts;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetConfig {
    /// A local path, `file://`, `s3://`, `gs://`, `az://` or `http(s)://` URL.
    pub url: String,
    #[serde(default)]
    pub title: Option<String>,
    /// `object_store` options (credentials, region, endpoint…); never shown by the API.
    /// Booleans and numbers are taken as their text (`allow_http = true`, or
    /// `ZARRD__DATASETS__B__OPTIONS__ALLOW_HTTP=true`, which arrives as a TOML boolean).
    #[serde(default, deserialize_with = "option_texts")]
    pub options: BTreeMap<String, String>,
    /// The chunk shape of an array in the compatibility views (`/compat`), by array path,
    /// overriding the default rule.
    #[serde(default)]
    pub compat: BTreeMap<String, Vec<u64>>,
    /// The overview source of an array, by array path: the URL (local path, `file://`,
    /// `s3://`…, opened with this dataset's `options`) of a pyramid written by
    /// `zarrd overviews`. IIIF reduced sizes of the array read its levels.
    #[serde(default)]
    pub overviews: BTreeMap<String, String>,
    /// Who may read the dataset (`docs/access-control.md`): caller names and groups. Absent:
    /// public.
    #[serde(default)]
    pub read: Option<Vec<String>>,
    /// What `url` points at; found from what is there when not given.
    #[serde(default)]
    pub kind: Option<DatasetKind>,
    /// The prefixes (`file:///…/`, `s3://bucket/…/`, `http(s)://host/…/`) under which the
    /// references of a virtual dataset may be followed; any other reference is refused.
    #[serde(default)]
    pub virtual_refs: Vec<String>,
    /// The version (branch, tag or snapshot id) of a versioned dataset served by default.
    #[serde(default, rename = "ref")]
    pub version: Option<String>,
    /// Served only while no other dataset is configured: the embedded default's `sample`
    /// (and a copy of that file's) gives way to the first dataset named by a file, the
    /// environment or `--dataset`, instead of being listed beside it.
    #[serde(default)]
    pub fallback: bool,
}

/// What a dataset's `url` points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// A Zarr store (a directory or a prefix).
    Zarr,
    /// A zipped Zarr store, read in place.
    Zip,
    /// A kerchunk reference set: a JSON file or a parquet reference directory.
    Kerchunk,
    /// An Icechunk repository.
    Icechunk,
}
