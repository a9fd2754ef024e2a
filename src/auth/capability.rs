//! Capability tokens: `BASE64URL(payload) "." BASE64URL(HMAC-SHA256(key, CONTEXT ||
//! BASE64URL(payload)))`, the payload being JSON `{sub, groups, prefix, exp}`. They carry
//! their owner's identity, so any replica with the same signing key verifies them without
//! shared state; the owner's rights are still checked against the current read lists at
//! every request. The MAC is checked (in constant time) before the payload is even parsed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::auth::caller::{Caller, Via};
use crate::auth::denied::Denied;

/// Domain separation: a MAC made for anything else with the same key never verifies here.
const CONTEXT: &[u8] = b"zarrd capability v1\n";
/// The longest token read.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    sub: String,
    groups: Vec<String>,
    prefix: String,
    exp: u64,
}

/// What a verified token grants: its owner's identity under its path prefix, until `exp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub caller: Caller,
    pub prefix: String,
    pub exp: u64,
}

impl Grant {
    /// Whether `path` (as requested, percent-encoded) is under the token's prefix.
    pub fn covers(&self, path: &str) -> bool {
        path.starts_with(&self.prefix)
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub struct Signer {
    key: std::sync::Arc<[u8]>,
}

impl Signer {
    pub fn new(key: std::sync::Arc<[u8]>) -> Self {
        Self { key }
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(CONTEXT);
        mac
    }

    /// A token for `caller`'s rights under `prefix`, expiring at `exp` (Unix seconds).
    pub fn mint(&self, caller: &Caller, prefix: &str, exp: u64) -> String {
        let payload = Payload { sub: caller.name.clone(), groups: caller.groups.clone(), prefix: prefix.into(), exp };
        let json = serde_json::to_vec(&payload).expect("a payload of strings and a number serializes");
        let body = URL_SAFE_NO_PAD.encode(json);
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        format!("{body}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    }

    /// The grant of `token` at time `now`: `BadSignature` for anything not minted with this
    /// key (altered, truncated, garbage), `Expired` once `exp` has passed.
    pub fn verify(&self, token: &str, now: u64) -> Result<Grant, Denied> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Denied::Malformed);
        }
        let (body, tag) = token.split_once('.').ok_or(Denied::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Denied::Malformed)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| Denied::BadSignature)?;
        // Only what this key signed gets here.
        let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| Denied::Malformed)?;
        let payload: Payload = serde_json::from_slice(&json).map_err(|_| Denied::Malformed)?;
        if payload.exp <= now {
            return Err(Denied::Expired);
        }
        Ok(Grant {
            caller: Caller { name: payload.sub, groups: payload.groups, via: Via::Capability },
            prefix: payload.prefix,
            exp: payload.exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(key: &[u8]) -> Signer {
        Signer::new(key.into())
    }

    fn alice() -> Caller {
        Caller { name: "alice".into(), groups: vec!["lab".into()], via: Via::ApiKey }
    }

    #[test]
    fn a_token_verifies_until_it_expires() {
        let s = signer(&[7; 32]);
        let token = s.mint(&alice(), "/zarr/lab/", 1000);
        let grant = s.verify(&token, 999).unwrap();
        assert_eq!(grant.caller, Caller { via: Via::Capability, ..alice() });
        assert_eq!((grant.prefix.as_str(), grant.exp), ("/zarr/lab/", 1000));
        assert!(grant.covers("/zarr/lab/x/zarr.json") && !grant.covers("/zarr/la") && !grant.covers("/zarr/other/"));
        assert_eq!(s.verify(&token, 1000), Err(Denied::Expired));
        // The payload is readable JSON, but only the key makes a MAC for it.
        let (body, _) = token.split_once('.').unwrap();
        let json: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"sub": "alice", "groups": ["lab"], "prefix": "/zarr/lab/", "exp": 1000}));
    }

    #[test]
    fn altered_or_foreign_tokens_do_not_verify() {
        let s = signer(&[7; 32]);
        let token = s.mint(&alice(), "/zarr/lab/", 1000);
        let (body, tag) = token.split_once('.').unwrap();
        // Another key, another payload under the old MAC, a changed MAC, pieces missing.
        assert_eq!(signer(&[8; 32]).verify(&token, 0), Err(Denied::BadSignature));
        let widened = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","groups":["lab"],"prefix":"/","exp":1000}"#);
        assert_eq!(s.verify(&format!("{widened}.{tag}"), 0), Err(Denied::BadSignature));
        let later = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","groups":["lab"],"prefix":"/zarr/lab/","exp":9999}"#);
        assert_eq!(s.verify(&format!("{later}.{tag}"), 0), Err(Denied::BadSignature));
        let mut flipped = URL_SAFE_NO_PAD.decode(tag).unwrap();
        flipped[0] ^= 1;
        assert_eq!(s.verify(&format!("{body}.{}", URL_SAFE_NO_PAD.encode(&flipped)), 0), Err(Denied::BadSignature));
        assert_eq!(s.verify(&format!("{body}.{}", &tag[..tag.len() - 3]), 0), Err(Denied::BadSignature));
        for garbage in ["", ".", body, &format!("{body}."), &format!(".{tag}"), "a.b", "a.b.c", "€.€"] {
            assert!(s.verify(garbage, 0).is_err(), "{garbage:?}");
        }
        // A JSON payload that this key signed but with fields missing is refused too.
        let odd = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice"}"#);
        let mut mac = s.mac();
        mac.update(odd.as_bytes());
        let odd = format!("{odd}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()));
        assert_eq!(s.verify(&odd, 0), Err(Denied::Malformed));
        assert_eq!(s.verify(&"a".repeat(MAX_TOKEN_BYTES + 1), 0), Err(Denied::Malformed));
    }
}
