//! API keys, known only by their SHA-256 digests (`[[auth.api_keys]]`): a presented key is
//! hashed and compared with every configured digest in constant time, so neither the
//! config nor the timing of a refusal tells anything about a key.

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::auth::caller::{Caller, Via};
use crate::config::ApiKeyConfig;

/// The configured keys: digest and holder.
pub struct ApiKeys {
    entries: Vec<([u8; 32], Caller)>,
}

impl ApiKeys {
    /// Keys whose digest is not 64 hex digits are left out (config validation refuses them).
    pub fn new(keys: &[ApiKeyConfig]) -> Self {
        let entries = keys
            .iter()
            .filter_map(|k| {
                let digest = parse_hex(&k.sha256)?;
                Some((digest, Caller { name: k.name.clone(), groups: k.groups.clone(), via: Via::ApiKey }))
            })
            .collect();
        Self { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The holder of `key`, comparing its digest with every configured one (no early exit).
    pub fn lookup(&self, key: &str) -> Option<Caller> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, (known, _)) in self.entries.iter().enumerate() {
            let equal = known.ct_eq(&digest);
            index.conditional_assign(&(i as u32), equal);
            found |= equal;
        }
        bool::from(found).then(|| self.entries[index as usize].1.clone())
    }
}

/// The 32 bytes of a 64-hex-digit digest.
pub fn parse_hex(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> ApiKeys {
        ApiKeys::new(&[
            ApiKeyConfig {
                // `printf %s alice-key | sha256sum`, in capitals: digests are case-insensitive.
                name: "alice".into(),
                sha256: "72EE9D4355CCB9D3A4C9DBF37382E38E75C1B1A225B5BD1F729EE91BBDA30C20".into(),
                groups: vec![],
            },
            ApiKeyConfig {
                name: "real".into(),
                sha256: hex(&Sha256::digest(b"the real key")),
                groups: vec!["lab".into()],
            },
            ApiKeyConfig { name: "other".into(), sha256: hex(&Sha256::digest(b"another key")), groups: vec![] },
        ])
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().fold(String::new(), |mut s, b| {
            use std::fmt::Write;
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    #[test]
    fn a_key_is_found_by_its_digest_only() {
        let keys = keys();
        let caller = keys.lookup("the real key").unwrap();
        assert_eq!(
            (caller.name.as_str(), caller.groups.as_slice(), caller.via),
            ("real", &["lab".to_owned()][..], Via::ApiKey)
        );
        assert_eq!(keys.lookup("another key").unwrap().name, "other");
        assert_eq!(keys.lookup("alice-key").unwrap().name, "alice");
        for wrong in ["", "the real key ", "The real key", "the real ke", &hex(&Sha256::digest(b"the real key"))] {
            assert_eq!(keys.lookup(wrong), None, "{wrong:?}");
        }
    }

    #[test]
    fn digests_parse_as_64_hex_digits() {
        assert_eq!(parse_hex(&"0".repeat(64)), Some([0; 32]));
        assert_eq!(parse_hex(&"fF".repeat(32)), Some([255; 32]));
        assert_eq!(parse_hex(&"0".repeat(63)), None);
        assert_eq!(parse_hex(&format!("{}g", "0".repeat(63))), None);
        assert_eq!(parse_hex(&format!("{}é", "0".repeat(62))), None);
        assert!(ApiKeys::new(&[]).is_empty());
    }
}
