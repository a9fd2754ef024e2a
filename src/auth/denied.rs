//! Why a request was refused: a small fixed set of reasons, the `reason` label of
//! `zarrd_auth_denied_total` and of the refusal's log line.

/// Why a request was refused. `Malformed` to `NoJwt` are 401s (the credential is wrong),
/// but `KeysUnavailable`, a 503 (the identity provider cannot be reached, no fault of the
/// caller's); `NotAllowed` and `OutsidePrefix` are 404s (the dataset or path is not the
/// caller's); `Anonymous` and `CannotMint` refuse minting (401).
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
