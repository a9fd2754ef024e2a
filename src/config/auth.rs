//! The `[auth]` section (`docs/access-control.md` "Configuration"): API keys by the SHA-256
//! digest of the key, an `OpenID Connect` provider's JWKS, and the signing key of capability
//! URLs, which is read from the environment (never from a file that might be committed or
//! shown).

use std::sync::Arc;

use serde::Deserialize;

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

/// An `OpenID Connect` provider whose RS256/ES256 JWTs are accepted.
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

    /// Checks the section, and the datasets' `read` lists (by dataset name).
    pub(super) fn validate<'a>(
        &self,
        read_lists: impl Iterator<Item = (&'a String, Option<&'a Vec<String>>)>,
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
            for (field, value) in [
                ("auth.jwt.issuer", &jwt.issuer),
                ("auth.jwt.audience", &jwt.audience),
                ("auth.jwt.groups_claim", &jwt.groups_claim),
            ] {
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
        for (name, read) in read_lists {
            if read.into_iter().flatten().any(|who| who.trim().is_empty()) {
                return Err(invalid(&format!("datasets.{name}.read"), "names and groups must not be empty"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError, Overrides};

    const DIGEST: &str = "72ee9d4355ccb9d3a4c9dbf37382e38e75c1b1a225b5bd1f729ee91bbda30c20";

    fn load(auth: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            format!("listen = \"127.0.0.1:0\"\n{auth}\n[datasets.a]\nurl = \"/tmp\"\nread = [\"x\"]\n"),
        )
        .unwrap();
        Config::load(Some(&path), env.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())), &Overrides::default())
    }

    #[test]
    fn keys_providers_and_the_signing_key_load() {
        let c = load(
            &format!("[[auth.api_keys]]\nname = \"alice\"\nsha256 = \"{DIGEST}\"\ngroups = [\"lab\"]\n[auth.jwt]\njwks = \"https://idp/jwks\"\nissuer = \"i\"\naudience = \"a\"\n"),
            &[("ZARRD_SIGNING_KEY", &"k".repeat(32))],
        )
        .unwrap();
        assert_eq!(
            (c.auth.api_keys[0].name.as_str(), c.auth.api_keys[0].groups.as_slice()),
            ("alice", &["lab".to_owned()][..])
        );
        let jwt = c.auth.jwt.as_ref().unwrap();
        assert_eq!((jwt.groups_claim.as_str(), c.auth.max_token_ttl_s), ("groups", 86_400));
        assert_eq!(c.auth.signing_key.as_ref().unwrap().0.as_ref(), "k".repeat(32).as_bytes());
        assert_eq!(c.datasets["a"].read.as_deref(), Some(&["x".to_owned()][..]));
        // The key never shows in Debug output.
        assert!(!format!("{c:?}").contains(&"k".repeat(32)), "{c:?}");
        // Another variable, keys from the environment (a Kubernetes Secret), as inline TOML.
        let keys = format!("[{{name = \"bob\", sha256 = \"{DIGEST}\", groups = [\"g\"]}}]");
        let c = load(
            "[auth]\nsigning_key_env = \"MY_KEY\"\n",
            &[("ZARRD_SIGNING_KEY", "ignored"), ("MY_KEY", &"m".repeat(40)), ("ZARRD__AUTH__API_KEYS", &keys)],
        )
        .unwrap();
        assert_eq!(c.auth.signing_key.unwrap().0.len(), 40);
        assert_eq!((c.auth.api_keys[0].name.as_str(), c.auth.api_keys[0].groups.len()), ("bob", 1));
        assert!(load("", &[]).unwrap().auth.signing_key.is_none());
    }

    #[test]
    fn bad_auth_configs_name_the_field() {
        let key = |name: &str, digest: &str| format!("[[auth.api_keys]]\nname = \"{name}\"\nsha256 = \"{digest}\"\n");
        let cases = [
            (key("a", "abc"), "auth.api_keys[0].sha256"),
            (key("a", &format!("{}g", &DIGEST[1..])), "auth.api_keys[0].sha256"),
            (key("", DIGEST), "auth.api_keys[0].name"),
            (format!("{}{}", key("a", DIGEST), key("a", &DIGEST.replace('7', "8"))), "auth.api_keys[1].name"),
            (format!("{}{}", key("a", DIGEST), key("b", &DIGEST.to_uppercase())), "auth.api_keys[1].sha256"),
            (format!("{}key = \"the key itself\"\n", key("a", DIGEST)), "key"),
            ("[auth.jwt]\njwks = \"/no/such/file\"\nissuer = \"i\"\naudience = \"a\"\n".into(), "auth.jwt.jwks"),
            ("[auth.jwt]\njwks = \"https://idp\"\nissuer = \"\"\naudience = \"a\"\n".into(), "auth.jwt.issuer"),
            ("[auth.jwt]\njwks = \"https://idp\"\nissuer = \"i\"\n".into(), "audience"),
            ("[auth]\nmax_token_ttl_s = 0\n".into(), "auth.max_token_ttl_s"),
            ("[auth]\nsigning_key = \"inline\"\n".into(), "signing_key"),
        ];
        for (text, field) in cases {
            let err = load(&text, &[]).unwrap_err().to_string();
            assert!(err.contains(field), "{err} should name {field}");
        }
        let err = load("", &[("ZARRD_SIGNING_KEY", "short")]).unwrap_err().to_string();
        assert!(err.contains("ZARRD_SIGNING_KEY") && err.contains("32 bytes"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "listen = \"127.0.0.1:0\"\n[datasets.a]\nurl = \"/tmp\"\nread = [\"\"]\n").unwrap();
        let err = Config::load(Some(&path), [], &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("datasets.a.read"), "{err}");
    }
}
