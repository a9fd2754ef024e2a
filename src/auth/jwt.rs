//! `OpenID Connect` ID and access tokens (RFC 7519 JWTs) from the configured provider: the
//! header's `alg` must be RS256 or ES256 and match the key that verifies it (so `none`
//! and an HMAC made with a public key are refused before any claim is read); `exp`, `nbf`,
//! `iss` and `aud` are checked with [`LEEWAY_S`] of clock skew; `sub` names the caller and
//! the configured claim lists their groups.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use crate::auth::caller::{Caller, Via};
use crate::auth::denied::Denied;
use crate::auth::jwks::Jwks;
use crate::config::JwtConfig;

/// Clock skew allowed between zarrd and the identity provider, in seconds.
pub const LEEWAY_S: u64 = 60;

pub struct Verifier {
    jwks: Jwks,
    issuer: String,
    audience: String,
    groups_claim: String,
}

impl Verifier {
    pub fn new(config: &JwtConfig, jwks: Jwks) -> Self {
        Self {
            jwks,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            groups_claim: config.groups_claim.clone(),
        }
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        v.leeway = LEEWAY_S;
        v.validate_exp = true;
        v.validate_nbf = true;
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[&self.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v
    }

    /// The caller a JWT names, once its signature and claims verify.
    pub async fn verify(&self, token: &str) -> Result<Caller, Denied> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Denied::Malformed)?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(Denied::Algorithm);
        }
        let candidates = self.jwks.candidates(header.kid.as_deref(), header.alg).await?;
        let mut outcome = Err(Denied::UnknownSigner);
        for key in candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &self.validation(key.alg)) {
                Ok(data) => return self.caller(&data.claims),
                Err(e) => {
                    outcome = Err(match e.kind() {
                        ErrorKind::InvalidSignature => Denied::BadSignature,
                        ErrorKind::ExpiredSignature => Denied::Expired,
                        ErrorKind::ImmatureSignature => Denied::NotYetValid,
                        ErrorKind::InvalidIssuer => Denied::WrongIssuer,
                        ErrorKind::InvalidAudience => Denied::WrongAudience,
                        ErrorKind::InvalidAlgorithm => Denied::Algorithm,
                        _ => Denied::Malformed,
                    });
                    // Another key of the same algorithm may still verify the signature;
                    // a failed claim means the signature verified and the token is bad.
                    if !matches!(e.kind(), ErrorKind::InvalidSignature) {
                        break;
                    }
                }
            }
        }
        outcome
    }

    fn caller(&self, claims: &Map<String, Value>) -> Result<Caller, Denied> {
        let name = claims.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or(Denied::Malformed)?;
        let groups = match claims.get(&self.groups_claim) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(g)) => vec![g.clone()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Some(_) => return Err(Denied::Malformed),
        };
        Ok(Caller { name: name.to_owned(), groups, via: Via::Jwt })
    }

    /// Fetches the provider's keys ahead of the first token, retrying until it answers.
    pub async fn warm_up(&self) {
        self.jwks.warm_up().await;
    }
}
