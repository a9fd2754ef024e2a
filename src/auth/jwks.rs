//! The identity provider's signing keys (its JWKS, RFC 7517), from an `http(s)://` URL or a
//! file. The set is fetched on first use and kept; a token signed with a key it does not
//! hold (the provider rotated its keys) makes it fetch again, and so does a set older than
//! [`MAX_AGE`] (so a withdrawn key stops being accepted), but never more than once per
//! interval (a minute) however many such tokens arrive, and concurrent misses wait for the
//! one fetch. When the provider cannot be reached the last good set is kept.
//!
//! Until a first set is held (a pod that starts before its network or its provider), the
//! interval does not apply: attempts are spaced by a backoff from [`FIRST_RETRY`] doubling
//! to [`MAX_RETRY`], and [`Jwks::warm_up`] keeps trying at that pace from the start, so a
//! JWT works within seconds of the provider answering rather than a minute later.
//!
//! Only RSA keys (RS256) and P-256 EC keys (ES256) are taken; symmetric (`oct`) keys and
//! keys marked for encryption are left out, so no JWT can be verified as an HMAC.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::auth::denied::Denied;

/// The shortest time between two fetches.
pub const REFETCH_INTERVAL: Duration = Duration::from_mins(1);
/// The first wait before another attempt while no set is held.
pub const FIRST_RETRY: Duration = Duration::from_millis(500);
/// The longest wait between attempts while no set is held.
pub const MAX_RETRY: Duration = Duration::from_secs(4);
/// A set older than this is fetched again when next used.
pub const MAX_AGE: Duration = Duration::from_hours(1);
/// The longest a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest JWKS document read.
const MAX_DOCUMENT: usize = 1 << 20;

/// One verification key.
pub struct Key {
    pub kid: Option<String>,
    pub alg: Algorithm,
    pub key: DecodingKey,
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("no HTTP client: {0}")]
    Client(String),
    #[error("request failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("the document is larger than {MAX_DOCUMENT} bytes")]
    TooLarge,
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a JWKS document: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the set holds no RS256 or ES256 signing key")]
    NoKeys,
}

enum Source {
    Url { client: Result<reqwest::Client, String>, url: String },
    File(std::path::PathBuf),
}

struct Held {
    keys: Arc<Vec<Arc<Key>>>,
    /// When the set was last fetched successfully; `None`: never.
    fetched: Option<Instant>,
}

pub struct Jwks {
    source: Source,
    interval: Duration,
    held: RwLock<Held>,
    /// The attempts so far; the lock makes concurrent misses wait for one fetch.
    attempts: tokio::sync::Mutex<Attempts>,
}

#[derive(Default)]
struct Attempts {
    /// When the last fetch began.
    last: Option<Instant>,
    /// Failed fetches since the last success (or the start).
    failures: u32,
}

impl Attempts {
    /// How long after the last attempt the next may begin: the interval once a set is
    /// held, else a backoff that doubles from [`FIRST_RETRY`] to [`MAX_RETRY`].
    fn gap(&self, holding: bool, interval: Duration) -> Duration {
        if holding {
            return interval;
        }
        let backoff = FIRST_RETRY.saturating_mul(1 << self.failures.saturating_sub(1).min(8));
        backoff.min(MAX_RETRY).min(interval)
    }
}

impl Jwks {
    /// Keys from `location` (a URL or a file path), fetched at most once per `interval`.
    pub fn new(location: &str, interval: Duration) -> Self {
        let source = if location.starts_with("https://") || location.starts_with("http://") {
            let client = reqwest::Client::builder()
                .timeout(FETCH_TIMEOUT)
                .connect_timeout(FETCH_TIMEOUT)
                .build()
                .map_err(|e| e.to_string());
            Source::Url { client, url: location.to_owned() }
        } else {
            Source::File(location.into())
        };
        Self {
            source,
            interval,
            held: RwLock::new(Held { keys: Arc::default(), fetched: None }),
            attempts: tokio::sync::Mutex::default(),
        }
    }

    fn location(&self) -> String {
        match &self.source {
            Source::Url { url, .. } => url.clone(),
            Source::File(path) => path.display().to_string(),
        }
    }

    fn held(&self) -> (Arc<Vec<Arc<Key>>>, Option<Instant>) {
        let held = self.held.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        (Arc::clone(&held.keys), held.fetched)
    }

    /// The keys that may have signed a token with header `kid` and `alg`: the one named
    /// `kid`, or every key of `alg` when the token names none.
    pub async fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> Result<Vec<Arc<Key>>, Denied> {
        let (keys, fetched) = self.held();
        let found = matching(&keys, kid, alg);
        if found.is_empty() || fetched.is_none_or(|t| t.elapsed() >= MAX_AGE) {
            self.refresh().await;
        } else {
            return Ok(found);
        }
        let (keys, fetched) = self.held();
        let found = matching(&keys, kid, alg);
        match (found.is_empty(), fetched) {
            (false, _) => Ok(found),
            (true, None) => Err(Denied::KeysUnavailable),
            (true, Some(_)) => Err(Denied::UnknownSigner),
        }
    }

    /// Fetches the set unless the last attempt began too recently ([`Attempts::gap`]);
    /// keeps the last good set when the fetch fails.
    pub async fn refresh(&self) {
        let mut attempts = self.attempts.lock().await;
        let holding = self.held().1.is_some();
        if attempts.last.is_some_and(|t| t.elapsed() < attempts.gap(holding, self.interval)) {
            return;
        }
        attempts.last = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => {
                tracing::debug!(jwks = %self.location(), keys = keys.len(), "fetched the identity provider's keys");
                let mut held = self.held.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                *held = Held { keys: Arc::new(keys), fetched: Some(Instant::now()) };
                attempts.failures = 0;
            }
            Err(e) => {
                attempts.failures = attempts.failures.saturating_add(1);
                // A provider that stays away is retried every few seconds: warn at the 1st,
                // 2nd, 4th, 8th… failure, not at each.
                if attempts.failures.is_power_of_two() {
                    tracing::warn!(
                        jwks = %self.location(),
                        error = %e,
                        failures = attempts.failures,
                        "cannot fetch the identity provider's keys; keeping the last good set"
                    );
                }
            }
        }
    }

    /// Fetches the set at start, and while none is held tries again at the backoff's pace
    /// (run in a task of its own: it returns once a set is held).
    pub async fn warm_up(&self) {
        loop {
            self.refresh().await;
            if self.held().1.is_some() {
                return;
            }
            let wait = {
                let attempts = self.attempts.lock().await;
                let gap = attempts.gap(false, self.interval);
                attempts.last.map_or(Duration::ZERO, |t| gap.saturating_sub(t.elapsed()))
            };
            tokio::time::sleep(wait.max(Duration::from_millis(10))).await;
        }
    }

    async fn fetch(&self) -> Result<Vec<Arc<Key>>, FetchError> {
        let document = match &self.source {
            Source::File(path) => {
                let bytes = tokio::fs::read(path).await?;
                if bytes.len() > MAX_DOCUMENT {
                    return Err(FetchError::TooLarge);
                }
                bytes
            }
            Source::Url { client, url } => {
                let client = client.as_ref().map_err(|e| FetchError::Client(e.clone()))?;
                let mut response = client.get(url).send().await?;
                if !response.status().is_success() {
                    return Err(FetchError::Status(response.status().as_u16()));
                }
                let mut bytes = Vec::new();
                while let Some(chunk) = response.chunk().await? {
                    if bytes.len() + chunk.len() > MAX_DOCUMENT {
                        return Err(FetchError::TooLarge);
                    }
                    bytes.extend_from_slice(&chunk);
                }
                bytes
            }
        };
        let keys = parse(&document)?;
        if keys.is_empty() {
            return Err(FetchError::NoKeys);
        }
        Ok(keys)
    }
}

fn matching(keys: &[Arc<Key>], kid: Option<&str>, alg: Algorithm) -> Vec<Arc<Key>> {
    keys.iter().filter(|k| k.alg == alg && (kid.is_none() || k.kid.as_deref() == kid)).cloned().collect()
}

/// The RS256 and ES256 signing keys of a JWKS document; keys of other kinds, and keys
/// that do not parse, are skipped one by one.
pub fn parse(document: &[u8]) -> Result<Vec<Arc<Key>>, FetchError> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set = serde_json::from_slice(document)?;
    Ok(set.keys.into_iter().filter_map(|value| key(&serde_json::from_value(value).ok()?)).map(Arc::new).collect())
}

fn key(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))) {
        return None;
    }
    let (alg, declared) = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => (Algorithm::RS256, KeyAlgorithm::RS256),
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
            (Algorithm::ES256, KeyAlgorithm::ES256)
        }
        _ => return None,
    };
    // A key declared for another algorithm (RS384, PS256…) is not used for this one.
    if jwk.common.key_algorithm.is_some_and(|a| a != declared) {
        return None;
    }
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key { kid: jwk.common.key_id.clone(), alg, key })
}
