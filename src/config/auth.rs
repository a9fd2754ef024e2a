//! The `[auth]` section (API.md "Access control"): API keys by the SHA-256 digest of the
//! key, an OpenID Connect provider's JWKS, and the signing key of capability URLs, which is
//! read from the environment (never from a file that might be committed or shown).

use std::sync::Arc;

use serde::Deserialize;

use crate::config::DatasetConfig;
use crate::config::error::{ConfigError, invalid};

pub const DEFAULT_MAX_TOKEN_TTL_S: u64 = 86_400;
pub const DEFAULT_SIGNING_KEY_ENV: &str = "ZARRD_SIGNING_KEY";
/// The shortest signing key accepted: HMAC-SHA256 keys shorter than its 32-byte output
/// weaken it.
pub const MIN_SIGNING_KEY_BYTES: usize = 32;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub api_keys: Vec<ApiKeyConfig>,
    pub jwt: Option<JwtConfig>,
    /// The longest lifetime of a capability URL minted by `POST /v1/tokens`.
    pub max_token_ttl_s: u64,
    /// The environment variable holding the signing key of capability URLs.
    pub signing_key_env: String,
    /// The signing key, read from `signing_key_env` at load.
    #[serde(skip)]
    pub signing_key: Option<SigningKey>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            api_keys: Vec::new(),
            jwt: None,
            max_token_ttl_s: DEFAULT_MAX_TOKEN_TTL_S,
            signing_key_env: DEFAULT_SIGNING_KEY_ENV.into(),
            signing_key: None,
        }
    }
}

/// One API key: who holds it, and the lowercase or uppercase hex SHA-256 digest of the key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    pub name: String,
    pub sha256: String,
    #[serde(default)]
    pub groups: Vec<String>,
}

/// An OpenID Connect provider whose RS256/ES256 JWTs are accepted.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// The provider's JWKS: an `http(s)://` URL or a local file.
    pub jwks: String,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The `aud` every token must carry (one of its values).
    pub audience: String,
    /// The claim holding the caller's groups (a string or an array of strings).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
}

fn default_groups_claim() -> String {
    "groups".into()
}

/// Key bytes that never show in `Debug` output (configs are logged and printed in tests).
#[derive(Clone)]
pub struct SigningKey(pub Arc<[u8]>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({} bytes, redacted)", self.0.len())
    }
}

impl AuthConfig {
    /// Whether any credential can be accepted (otherwise `Authorization` is ignored, as
    /// before access control existed).
    pub fn has_callers(&self) -> bool {
        !self.api_keys.is_empty() || self.jwt.is_some()
    }

    /// Takes the signing key from the variable named by `signing_key_env`.
    pub(super) fn read_signing_key(&mut self, env: &[(String, String)]) -> Result<(), ConfigError> {
        let Some((_, value)) = env.iter().rev().find(|(name, _)| *name == self.signing_key_env) else {
            return Ok(());
        };
        if value.len() < MIN_SIGNING_KEY_BYTES {
            return Err(invalid(
                &self.signing_key_env,
                format!(
                    "the capability-URL signing key must be at least {MIN_SIGNING_KEY_BYTES} bytes (e.g. `openssl rand -base64 48`)"
                ),
            ));
        }
        self.signing_key = Some(SigningKey(value.as_bytes().into()));
        Ok(())
    }

    pub(super) fn validate<'a>(
        &self,
        datasets: impl Iterator<Item = (&'a String, &'a DatasetConfig)>,
    ) -> Result<(), ConfigError> {
        let mut names = std::collections::BTreeSet::new();
        let mut digests = std::collections::BTreeSet::new();
        for (i, key) in self.api_keys.iter().enumerate() {
            let field = format!("auth.api_keys[{i}]");
            if key.name.trim().is_empty() {
                return Err(invalid(&format!("{field}.name"), "is empty"));
            }
            if !names.insert(key.name.as_str()) {
                return Err(invalid(&format!("{field}.name"), format!("`{}` is given to two keys", key.name)));
            }
            if key.sha256.len() != 64 || !key.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(
                    &format!("{field}.sha256"),
                    "must be the 64 hex digits of the key's SHA-256 digest (e.g. `printf %s KEY | sha256sum`), never the key",
                ));
            }
            if !digests.insert(key.sha256.to_ascii_lowercase()) {
                return Err(invalid(&format!("{field}.sha256"), "the same key digest is given twice"));
            }
            if key.groups.iter().any(|g| g.trim().is_empty()) {
                return Err(invalid(&format!("{field}.groups"), "group names must not be empty"));
            }
        }
        if let Some(jwt) = &self.jwt {
            let remote = jwt.jwks.starts_with("https://") || jwt.jwks.starts_with("http://");
            if !remote && !std::path::Path::new(&jwt.jwks).is_file() {
                return Err(invalid("auth.jwt.jwks", "must be an http(s):// URL or an existing file"));
            }
            for (field, value) in
                [("auth.jwt.issuer", &jwt.issuer), ("auth.jwt.audience", &jwt.audience), ("auth.jwt.groups_claim", &jwt.groups_claim)]
            {
                if value.trim().is_empty() {
                    return Err(invalid(field, "is empty"));
                }
            }
        }
        if self.max_token_ttl_s == 0 {
            return Err(invalid("auth.max_token_ttl_s", "must be greater than 0"));
        }
        if self.signing_key_env.is_empty() {
            return Err(invalid("auth.signing_key_env", "is empty"));
        }
        for (name, ds) in datasets {
            if ds.read.iter().flatten().any(|who| who.trim().is_empty()) {
                return Err(invalid(&format!("datasets.{name}.read"), "names and groups must not be empty"));
            }
        }
        Ok(())
    }
}
