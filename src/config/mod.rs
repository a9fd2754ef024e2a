//! Configuration: the embedded default < a TOML file < `ZARRD__SECTION__KEY` environment
//! variables < command-line flags. Unknown fields are rejected and every value is
//! validated at load, so a bad configuration fails at startup naming the field.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::config::env::{apply_env, env_datasets};
pub use dataset::{DatasetConfig, DatasetKind};

mod auth;
mod dataset;
mod env;
mod error;

pub use crate::config::auth::{ApiKeyConfig, AuthConfig, JwtConfig, SigningKey};
pub use crate::config::error::ConfigError;
use crate::config::error::invalid;

/// The embedded default: serves the bundled sample on 127.0.0.1:8080 while no other
/// dataset is configured (its `fallback`).
pub const DEFAULT_CONFIG: &str = include_str!("../../config/default.toml");

pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;
pub const DEFAULT_MAX_CHUNKS_PER_REQUEST: u64 = 100_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub listen: SocketAddr,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default)]
    pub http: HttpConfig,
    #[serde(default)]
    pub health: HealthConfig,
    #[serde(default)]
    pub log: LogConfig,
    #[serde(default)]
    pub compat: CompatConfig,
    #[serde(default)]
    pub storage: StorageConfig,
    #[serde(default)]
    pub auth: AuthConfig,
    #[serde(default)]
    pub datasets: BTreeMap<String, DatasetConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest decoded result a data request may produce (413 beyond).
    pub max_response_bytes: u64,
    /// Most stored chunks one request may touch (413 beyond).
    pub max_chunks_per_request: u64,
    /// Most cells one reduction (`/v1/reduce`) may visit, counted before any read (413
    /// beyond). Its reads go block by block, each within `max_chunks_per_request`.
    pub max_reduce_cells: u64,
    /// Most cells of a curvilinear grid (2-D latitude/longitude) whose look-up zarrd
    /// builds (80 bytes a cell, counted in the memory budget; 413 beyond).
    pub max_grid_cells: u64,
    /// Whole-request deadline (504 beyond).
    pub request_timeout_secs: u64,
    /// Requests served at once; more are answered 503 with Retry-After.
    pub max_in_flight: usize,
    /// Working memory (decode buffers, outputs, response bodies) of all requests
    /// together; unset: half of the cgroup or machine memory minus the cache capacities.
    pub memory_bytes: Option<u64>,
    /// How long a request waits for its share of the memory budget before it is 503.
    pub memory_wait_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_chunks_per_request: DEFAULT_MAX_CHUNKS_PER_REQUEST,
            max_reduce_cells: 1 << 32,
            max_grid_cells: 1 << 26,
            request_timeout_secs: 30,
            max_in_flight: 512,
            memory_bytes: None,
            memory_wait_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// How long a branch of a versioned dataset keeps resolving to the snapshot it was
    /// last seen at before its head is read again.
    pub ref_ttl_s: u64,
    pub shard_index_bytes: u64,
    /// Decoded chunks kept for hot tiles; 0 turns the cache off.
    pub chunk_bytes: u64,
    /// Encoded chunks of the compatibility views (`/compat`); 0 turns the cache off.
    pub compat_bytes: u64,

    /// Rendered IIIF images kept; 0 turns the cache off.
    pub tile_bytes: u64,
    /// Whole responses of hot data requests (`responses`); 0 turns the cache off.
    pub response_bytes: u64,
    /// How long a kept response is replayed (at most the metadata and shard-index
    /// lifetimes); 0 turns the cache off.
    pub response_ttl_secs: u64,
    pub shard_index_ttl_secs: u64,
    pub metadata_ttl_secs: u64,
    /// How long "this object does not exist" is remembered (and the `max-age` of responses
    /// holding fill for missing objects); 0 never remembers it.
    pub missing_ttl_secs: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            shard_index_bytes: 64 * 1024 * 1024,
            chunk_bytes: 256 * 1024 * 1024,
            compat_bytes: 64 * 1024 * 1024,

            tile_bytes: 64 * 1024 * 1024,
            response_bytes: 64 * 1024 * 1024,
            response_ttl_secs: 1,
            shard_index_ttl_secs: 300,
            metadata_ttl_secs: 60,
            missing_ttl_secs: 5,
            ref_ttl_s: 5,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Origins allowed by CORS; `["*"]` allows any.
    pub cors_origins: Vec<String>,
    /// `Cache-Control` of successful data and metadata responses.
    pub cache_control: String,
    /// On SIGTERM, how long `/readyz` fails before the listener closes, so a load
    /// balancer stops sending requests first; in-flight requests then finish.
    pub drain_secs: u64,
    /// After the drain, how long in-flight requests may take before the remaining
    /// connections are closed and the process exits. `drain_secs + shutdown_timeout_secs`
    /// must fit in the orchestrator's grace period (Kubernetes: 30 s by default).
    pub shutdown_timeout_secs: u64,
    /// A connection must send its request headers within this time of being accepted (or,
    /// on HTTP/1, of its previous response), else it is closed: slowloris protection.
    pub header_read_timeout_secs: u64,
    /// A connection with no request in flight for this long is closed.
    pub keep_alive_secs: u64,
    /// Connections served at once; at the cap the server stops accepting and further
    /// clients wait in the kernel's backlog. Default: derived from the open-file limit
    /// ([`default_max_connections`]).
    pub max_connections: Option<usize>,
    /// How connections are served: `shared` (one work-stealing runtime whose threads take
    /// any connection's work) or `per_core` (one single-threaded runtime per core, each
    /// accepting on its own `SO_REUSEPORT` listener: no hand-off between threads, but a
    /// connection waits for the other requests of its thread). `per_core` by default:
    /// docs/performance.md ("Shared runtime or a runtime per core") says why.
    pub runtime: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            cors_origins: vec!["*".into()],
            cache_control: "public, max-age=60".into(),
            drain_secs: 2,
            shutdown_timeout_secs: 20,
            header_read_timeout_secs: 10,
            keep_alive_secs: 75,
            max_connections: None,
            runtime: "per_core".into(),
        }
    }
}

/// File descriptors kept free of client connections for storage sockets, local files,
/// logs and the runtime itself.
pub const FD_HEADROOM: u64 = 256;

/// The connection cap when `http.max_connections` is not set: the open-file limit minus
/// [`FD_HEADROOM`], or half of it when the limit is so low that the headroom would eat
/// most of it; at least 1.
pub fn default_max_connections(fd_limit: u64) -> usize {
    let cap = if fd_limit > 2 * FD_HEADROOM { fd_limit - FD_HEADROOM } else { fd_limit / 2 };
    usize::try_from(cap.max(1)).unwrap_or(usize::MAX)
}

/// How reads reach storage.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Inner-chunk reads of one shard in an object store or on a web server arriving
    /// within this many milliseconds (from concurrent requests) are merged into one read
    /// per run of close ranges; 0: off.
    pub coalesce_window_ms: u64,
    /// The same for files on this machine; 0 (off) by default: a local read takes
    /// microseconds, and the window would only delay it (a network file system, where a
    /// read costs a round trip, may want one).
    pub local_coalesce_window_ms: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self { coalesce_window_ms: DEFAULT_COALESCE_WINDOW_MS, local_coalesce_window_ms: 0 }
    }
}

impl StorageConfig {
    /// The coalescing windows of reads, by where the object is.
    pub fn windows(&self) -> zarrd_core::store::coalesce::Windows {
        zarrd_core::store::coalesce::Windows {
            remote: Duration::from_millis(self.coalesce_window_ms),
            local: Duration::from_millis(self.local_coalesce_window_ms),
        }
    }
}

/// How the compatibility views (`/compat`) size their chunks for the network
/// (`docs/clients.md` "View chunks"; the rule is `compat::view_chunk_shape`).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CompatConfig {
    /// A stored (or inner) chunk of a regular grid holding at least this many decoded bytes
    /// is a view chunk as it is.
    pub min_chunk_bytes: u64,
    /// The decoded size aimed at by view chunks made for smaller chunks and rectilinear grids.
    pub chunk_bytes: u64,
}

impl Default for CompatConfig {
    fn default() -> Self {
        Self { min_chunk_bytes: 256 * 1024, chunk_bytes: 1024 * 1024 }
    }
}

/// The background check of every dataset's root (see `health`); `/readyz` never waits on it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthConfig {
    /// How often each dataset's root is checked.
    pub check_interval_secs: u64,
    /// A check that has not answered after this long counts as failing.
    pub check_timeout_secs: u64,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self { check_interval_secs: 30, check_timeout_secs: 10 }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: String,
    /// A tracing filter, e.g. `info` or `zarrd=debug`.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: "text".into(), level: "info".into() }
    }
}

/// `storage.coalesce_window_ms` when not configured.
pub const DEFAULT_COALESCE_WINDOW_MS: u64 = 2;
/// The longest a coalescing window may be configured.
pub const MAX_COALESCE_WINDOW_MS: u64 = 1000;

/// Overrides from the command line; `None` leaves the file's value.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    /// `NAME=URL` pairs added to (or replacing) configured datasets; a fallback dataset
    /// gives way to them.
    pub datasets: Vec<String>,
    pub log_format: Option<String>,
}

impl Config {
    /// The memory budget in bytes: configured, or the documented default.
    pub fn memory_budget_bytes(&self) -> u64 {
        self.limits.memory_bytes.unwrap_or_else(|| {
            zarrd_core::ops::budget::default_budget(
                self.cache.chunk_bytes
                    + self.cache.shard_index_bytes
                    + self.cache.compat_bytes
                    + self.cache.tile_bytes
                    + self.cache.response_bytes,
            )
        })
    }

    /// Loads the default or `file`, then the environment, then `overrides`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &Overrides,
    ) -> Result<Self, ConfigError> {
        let text = match file {
            None => DEFAULT_CONFIG.to_owned(),
            Some(p) => std::fs::read_to_string(p)
                .map_err(|source| ConfigError::Read { path: p.display().to_string(), source })?,
        };
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
        let env: Vec<(String, String)> = env.into_iter().collect();
        apply_env(&mut table, env.iter().cloned())?;
        let mut config: Self =
            toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
        config.auth.read_signing_key(&env)?;
        if let Some(listen) = overrides.listen {
            config.listen = listen;
        }
        if let Some(format) = &overrides.log_format {
            config.log.format.clone_from(format);
        }
        for pair in &overrides.datasets {
            let (name, url) =
                pair.split_once('=').ok_or_else(|| invalid("--dataset", format!("`{pair}` is not NAME=URL")))?;
            config.datasets.insert(name.to_owned(), DatasetConfig { url: url.to_owned(), ..DatasetConfig::default() });
        }
        // A fallback (the bundled sample) is the default only: any dataset named anywhere
        // replaces it. One the environment names (`ZARRD__DATASETS__SAMPLE__URL=…`) is
        // configured, not a fallback, unless the environment sets its `fallback` too.
        let (named, kept_fallback) = env_datasets(&env);
        for (name, ds) in &mut config.datasets {
            if named.contains(name) && !kept_fallback.contains(name) {
                ds.fallback = false;
            }
        }
        if config.datasets.values().any(|ds| !ds.fallback) {
            config.datasets.retain(|_, ds| !ds.fallback);
        }
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.datasets.is_empty() {
            return Err(invalid("datasets", "at least one dataset must be configured"));
        }
        for (name, ds) in &self.datasets {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') {
                return Err(invalid(
                    &format!("datasets.{name}"),
                    "names may use only letters, digits, '-', '_' and '.'",
                ));
            }
            if ds.url.trim().is_empty() {
                return Err(invalid(&format!("datasets.{name}.url"), "is empty"));
            }
            for (path, url) in &ds.overviews {
                if path.is_empty() || url.trim().is_empty() {
                    return Err(invalid(
                        &format!("datasets.{name}.overviews.{path}"),
                        "needs an array path and the URL of its pyramid (written by `zarrd overviews`)",
                    ));
                }
            }
            for prefix in &ds.virtual_refs {
                zarrd_core::store::refs::targets::prefix_url(prefix)
                    .map_err(|why| invalid(&format!("datasets.{name}.virtual_refs"), why))?;
            }
            for (path, shape) in &ds.compat {
                if shape.contains(&0) {
                    return Err(invalid(&format!("datasets.{name}.compat.{path}"), "chunk edges must be at least 1"));
                }
            }
        }
        if self.compat.chunk_bytes == 0
            || self.compat.chunk_bytes > zarrd_core::zarr::codec::MAX_DECODED_CHUNK_BYTES as u64
        {
            return Err(invalid(
                "compat.chunk_bytes",
                format!(
                    "must be between 1 and {} (a view chunk is decoded whole)",
                    zarrd_core::zarr::codec::MAX_DECODED_CHUNK_BYTES
                ),
            ));
        }
        let l = &self.limits;
        for (field, value) in [
            ("limits.max_response_bytes", l.max_response_bytes),
            ("limits.max_chunks_per_request", l.max_chunks_per_request),
            ("limits.max_reduce_cells", l.max_reduce_cells),
            ("limits.max_grid_cells", l.max_grid_cells),
            ("limits.request_timeout_secs", l.request_timeout_secs),
            ("limits.max_in_flight", l.max_in_flight as u64),
            ("limits.memory_bytes", l.memory_bytes.unwrap_or(1)),
            ("cache.shard_index_ttl_secs", self.cache.shard_index_ttl_secs),
            ("http.shutdown_timeout_secs", self.http.shutdown_timeout_secs),
            ("http.header_read_timeout_secs", self.http.header_read_timeout_secs),
            ("http.keep_alive_secs", self.http.keep_alive_secs),
            ("http.max_connections", self.http.max_connections.map_or(1, |n| n as u64)),
            ("health.check_interval_secs", self.health.check_interval_secs),
            ("health.check_timeout_secs", self.health.check_timeout_secs),
        ] {
            if value == 0 {
                return Err(invalid(field, "must be greater than 0"));
            }
        }
        for (field, value) in [
            ("storage.coalesce_window_ms", self.storage.coalesce_window_ms),
            ("storage.local_coalesce_window_ms", self.storage.local_coalesce_window_ms),
        ] {
            // Every cold read of a request waits this long: a second is a mistake, not a choice.
            if value > MAX_COALESCE_WINDOW_MS {
                return Err(invalid(field, format!("must be at most {MAX_COALESCE_WINDOW_MS} (0 turns it off)")));
            }
        }
        if !matches!(self.http.runtime.as_str(), "shared" | "per_core") {
            return Err(invalid("http.runtime", format!("`{}` is not `shared` or `per_core`", self.http.runtime)));
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(invalid("log.format", format!("`{}` is not `text` or `json`", self.log.format)));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.level).is_err() {
            return Err(invalid("log.level", format!("`{}` is not a valid filter", self.log.level)));
        }
        for origin in &self.http.cors_origins {
            if origin != "*" && axum::http::HeaderValue::from_str(origin).is_err() {
                return Err(invalid("http.cors_origins", format!("`{origin}` is not a valid origin")));
            }
        }
        if axum::http::HeaderValue::from_str(&self.http.cache_control).is_err() {
            return Err(invalid("http.cache_control", "is not a valid header value"));
        }
        self.auth.validate(self.datasets.iter().map(|(name, ds)| (name, ds.read.as_ref())))
    }
}

#[cfg(test)]
mod tests;
