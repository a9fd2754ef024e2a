//! Access control (`docs/access-control.md`), with no HTTP in it: who the caller is
//! (`api_keys`: SHA-256 digests compared in constant time; `jwt` over `jwks`: `OpenID
//! Connect` tokens, RS256 and ES256 only), which datasets they may read (`policy`), and
//! capability tokens for clients that cannot send headers (`capability`: HMAC-SHA256,
//! stateless, so every replica verifies what any replica minted). The HTTP edge
//! (`http::auth`) applies it in one layer in front of every route.
//!
//! Every refusal has a [`Denied`] reason from a small fixed set: the reason labels
//! `zarrd_auth_denied_total` and the refusal's log line; the credential itself is never
//! logged nor echoed.

pub mod api_keys;
pub mod caller;
pub mod capability;
pub mod denied;
pub mod jwks;
pub mod jwt;
pub mod policy;

pub use caller::{Caller, CapabilityPath, Identity, Via};
pub use denied::Denied;

use std::sync::Arc;

use crate::config::Config;

/// Access control as configured: the callers zarrd knows, the datasets' read lists and
/// the capability-token signer.
pub struct Auth {
    keys: api_keys::ApiKeys,
    jwt: Option<jwt::Verifier>,
    signer: Option<capability::Signer>,
    policy: policy::Policy,
    /// The longest capability-token lifetime, in seconds.
    pub max_token_ttl_s: u64,
}

impl Auth {
    pub fn new(config: &Config) -> Self {
        let auth = &config.auth;
        let policy = policy::Policy::new(config.datasets.iter().map(|(name, ds)| (name, ds.read.as_deref())));
        if policy.any_private() && !auth.has_callers() {
            tracing::warn!("datasets have `read` lists but no [[auth.api_keys]] nor [auth.jwt]: nobody can read them");
        }
        Self {
            keys: api_keys::ApiKeys::new(&auth.api_keys),
            jwt: auth.jwt.as_ref().map(|j| jwt::Verifier::new(j, jwks::Jwks::new(&j.jwks, jwks::REFETCH_INTERVAL))),
            signer: auth.signing_key.as_ref().map(|k| capability::Signer::new(Arc::clone(&k.0))),
            policy,
            max_token_ttl_s: auth.max_token_ttl_s,
        }
    }

    /// Whether `Authorization` is read at all: without API keys and JWTs it is ignored,
    /// as it was before access control existed.
    pub fn reads_credentials(&self) -> bool {
        !self.keys.is_empty() || self.jwt.is_some()
    }

    /// The caller an `Authorization: Bearer` credential names: a JWT (three dot-separated
    /// parts) or an API key.
    pub async fn bearer(&self, credential: &str) -> Result<Caller, Denied> {
        if credential.is_empty() || credential.len() > MAX_CREDENTIAL_BYTES {
            return Err(Denied::Malformed);
        }
        if credential.bytes().filter(|&b| b == b'.').count() == 2 {
            return match &self.jwt {
                Some(verifier) => verifier.verify(credential).await,
                None => Err(Denied::NoJwt),
            };
        }
        self.keys.lookup(credential).ok_or(Denied::UnknownKey)
    }

    /// The grant of a capability token, if it verifies and has not expired.
    pub fn capability(&self, token: &str) -> Result<capability::Grant, Denied> {
        let signer = self.signer.as_ref().ok_or(Denied::BadSignature)?;
        signer.verify(token, capability::now())
    }

    /// The capability signer, when a signing key is configured.
    pub fn signer(&self) -> Option<&capability::Signer> {
        self.signer.as_ref()
    }

    /// Whether any dataset has a read list.
    pub fn any_private(&self) -> bool {
        self.policy.any_private()
    }

    /// Whether `dataset` has a read list.
    pub fn is_private(&self, dataset: &str) -> bool {
        self.policy.is_private(dataset)
    }

    /// Whether `caller` (`None`: anonymous) may read `dataset` (public ones: everyone).
    pub fn may_read(&self, caller: Option<&Caller>, dataset: &str) -> bool {
        self.policy.may_read(caller, dataset)
    }

    /// Fetches the identity provider's keys, so the first JWT does not wait for them and a
    /// wrong JWKS URL is logged at startup; retries until the provider answers.
    pub async fn warm_up(&self) {
        if let Some(verifier) = &self.jwt {
            verifier.warm_up().await;
        }
    }
}

/// The longest credential read (a JWT with many groups fits easily).
pub const MAX_CREDENTIAL_BYTES: usize = 16 * 1024;
