//! Access control (API.md "Access control"), with no HTTP in it: who the caller is
//! (`api_keys`: SHA-256 digests compared in constant time; `jwt` over `jwks`: OpenID
//! Connect tokens, RS256 and ES256 only), which datasets they may read (`policy`), and
//! capability tokens for clients that cannot send headers (`capability`: HMAC-SHA256,
//! stateless, so every replica verifies what any replica minted). The HTTP edge
//! (`http::auth`) applies it in one layer in front of every route.
//!
//! Every refusal has a [`Denied`] reason from a small fixed set: the reason labels
//! `zarrd_auth_denied_total` and the refusal's log line; the credential itself is never
//! logged nor echoed.

pub mod api_keys;
pub mod capability;
pub mod jwks;
pub mod jwt;
pub mod policy;

use std::sync::Arc;

use crate::config::Config;

/// Who made a request: a name and groups, from an API key, a JWT, or a capability token
/// minted by one of those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub groups: Vec<String>,
    pub via: Via,
}

/// How the caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    ApiKey,
    Jwt,
    Capability,
}

/// The caller of a request (`None`: anonymous), as the access layer found it; handlers
/// whose answer depends on the caller (`/v1/datasets`, `/metrics`, `/v1/tokens`) read it
/// from the request's extensions.
#[derive(Debug, Clone, Default)]
pub struct Identity(pub Option<Caller>);

/// Why a request was refused. `Malformed` to `OutsideStore` are 401s (the credential is
/// wrong); `NotAllowed` and `OutsidePrefix` are 404s (the caller is known but the
/// dataset or path is not theirs); `Anonymous` and `CannotMint` refuse minting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("the credential is not an API key, a JWT or a capability token zarrd accepts")]
    Malformed,
    #[error("unknown API key")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token's algorithm is not accepted (RS256 and ES256 only)")]
    Algorithm,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token is from another issuer")]
    WrongIssuer,
    #[error("the token is for another audience")]
    WrongAudience,
    #[error("the token is signed by a key the identity provider does not list")]
    UnknownSigner,
    #[error("the identity provider's keys cannot be fetched; retry later")]
    KeysUnavailable,
    #[error("this server accepts no JWTs")]
    NoJwt,
    #[error("the caller may not read this dataset")]
    NotAllowed,
    #[error("the path is outside the capability URL's prefix")]
    OutsidePrefix,
    #[error("minting a capability URL needs an API key or a JWT in `Authorization: Bearer`")]
    Anonymous,
    #[error("a capability URL cannot mint another; send an API key or a JWT in `Authorization: Bearer`")]
    CannotMint,
}

impl Denied {
    /// The `reason` label of `zarrd_auth_denied_total` and of the refusal's log line.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::UnknownKey => "unknown_key",
            Self::BadSignature => "bad_signature",
            Self::Algorithm => "algorithm",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::WrongIssuer => "wrong_issuer",
            Self::WrongAudience => "wrong_audience",
            Self::UnknownSigner => "unknown_signer",
            Self::KeysUnavailable => "keys_unavailable",
            Self::NoJwt => "no_jwt",
            Self::NotAllowed => "not_allowed",
            Self::OutsidePrefix => "outside_prefix",
            Self::Anonymous => "anonymous",
            Self::CannotMint => "cannot_mint",
        }
    }

    /// Every reason, for tests and dashboards.
    pub const ALL: [Self; 15] = [
        Self::Malformed,
        Self::UnknownKey,
        Self::BadSignature,
        Self::Algorithm,
        Self::Expired,
        Self::NotYetValid,
        Self::WrongIssuer,
        Self::WrongAudience,
        Self::UnknownSigner,
        Self::KeysUnavailable,
        Self::NoJwt,
        Self::NotAllowed,
        Self::OutsidePrefix,
        Self::Anonymous,
        Self::CannotMint,
    ];
}

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

    /// Whether `dataset` has a read list.
    pub fn is_private(&self, dataset: &str) -> bool {
        self.policy.is_private(dataset)
    }

    /// Whether `caller` (`None`: anonymous) may read `dataset` (public ones: everyone).
    pub fn may_read(&self, caller: Option<&Caller>, dataset: &str) -> bool {
        self.policy.may_read(caller, dataset)
    }

    /// Fetches the identity provider's keys once, so the first JWT does not wait for them
    /// and a wrong JWKS URL is logged at startup.
    pub async fn warm_up(&self) {
        if let Some(verifier) = &self.jwt {
            verifier.warm_up().await;
        }
    }
}

/// The longest credential read (a JWT with many groups fits easily).
pub const MAX_CREDENTIAL_BYTES: usize = 16 * 1024;
