//! The checksum codecs (bytes→bytes): the data with a 32-bit little-endian checksum before
//! or after it. v3 `crc32c` appends a CRC-32C (spec `codecs/crc32c`); numcodecs' `crc32`
//! and `adler32` put theirs first by default, `crc32c`, `fletcher32` and
//! `jenkins_lookup3` last (numcodecs `checksum32.py`, `fletcher32.pyx`, `jenkins.pyx`).
//! Decoding verifies the checksum: a mismatch is an error, never data.

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::lookup3;
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Crc32,
    Crc32c,
    Adler32,
    /// HDF5's Fletcher-32: big-endian 16-bit words, sums folded every 360 words.
    Fletcher32,
    /// Bob Jenkins' lookup3 `hashlittle`, as HDF5 computes it, seeded with `initval`.
    JenkinsLookup3 {
        initval: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checksum {
    pub algorithm: Algorithm,
    /// Whether the checksum follows the data (else it precedes it).
    pub at_end: bool,
}

impl Checksum {
    /// The v3 `crc32c` codec.
    pub const CRC32C: Self = Self { algorithm: Algorithm::Crc32c, at_end: true };

    /// A numcodecs checksum codec's configuration (`location`, `initval`, `prefix`).
    pub fn from_config(algorithm: Algorithm, config: Option<&Map<String, Value>>) -> Result<Self, MetadataError> {
        let name = algorithm.name();
        let get = |key: &str| config.and_then(|c| c.get(key)).filter(|v| !v.is_null());
        let at_end = match (algorithm, get("location")) {
            (Algorithm::Crc32 | Algorithm::Adler32, None) => false,
            (Algorithm::Crc32 | Algorithm::Adler32 | Algorithm::Crc32c, Some(Value::String(s))) if s == "start" => {
                false
            }
            (Algorithm::Crc32 | Algorithm::Adler32 | Algorithm::Crc32c, Some(Value::String(s))) if s == "end" => true,
            (_, None) => true,
            (_, Some(other)) => {
                return Err(MetadataError::invalid(name, &format!("`location` {other} is not \"start\" or \"end\"")));
            }
        };
        let algorithm = match algorithm {
            Algorithm::JenkinsLookup3 { .. } => {
                if get("prefix").is_some() {
                    return Err(MetadataError::Unsupported("jenkins_lookup3 with a `prefix`".into()));
                }
                let initval = match get("initval") {
                    None => 0,
                    Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                        MetadataError::invalid(name, &format!("`initval` {v} is not a 32-bit unsigned integer"))
                    })?,
                };
                Algorithm::JenkinsLookup3 { initval }
            }
            other => other,
        };
        Ok(Self { algorithm, at_end })
    }

    /// Verifies the checksum and returns the data without it.
    pub fn decode(self, input: &[u8]) -> Result<&[u8], CodecError> {
        let name = self.algorithm.name();
        if input.len() < 4 {
            return Err(CodecError::corrupt(name, format!("{} bytes is too short to hold a checksum", input.len())));
        }
        let (data, stored) = if self.at_end { input.split_at(input.len() - 4) } else { (&input[4..], &input[..4]) };
        let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
        let computed = self.algorithm.checksum(data);
        if stored != computed {
            return Err(CodecError::Checksum { codec: name, stored, computed });
        }
        Ok(data)
    }
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Self::Crc32 => "crc32",
            Self::Crc32c => "crc32c",
            Self::Adler32 => "adler32",
            Self::Fletcher32 => "fletcher32",
            Self::JenkinsLookup3 { .. } => "jenkins_lookup3",
        }
    }

    fn checksum(self, data: &[u8]) -> u32 {
        match self {
            Self::Crc32 => crc32fast::hash(data),
            Self::Crc32c => ::crc32c::crc32c(data),
            Self::Adler32 => adler2::adler32_slice(data),
            Self::Fletcher32 => fletcher32(data),
            Self::JenkinsLookup3 { initval } => lookup3::hashlittle(data, initval),
        }
    }
}

/// HDF5's `H5_checksum_fletcher32`, as numcodecs ports it: the data as big-endian 16-bit
/// words (an odd last byte is the high byte of a final word), both sums folded to 16 bits
/// every 360 words so that they cannot overflow.
fn fletcher32(data: &[u8]) -> u32 {
    let fold = |s: u32| (s & 0xffff) + (s >> 16);
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.chunks_exact(2);
    let odd = words.remainder().first().copied();
    let words: Vec<u16> = words.map(|w| u16::from_be_bytes([w[0], w[1]])).collect();
    for block in words.chunks(360) {
        for &w in block {
            sum1 += u32::from(w);
            sum2 += sum1;
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if let Some(b) = odd {
        sum1 += u32::from(b) << 8;
        sum2 += sum1;
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    (fold(sum2) << 16) | fold(sum1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(algorithm: Algorithm, at_end: bool, data: &[u8]) -> Vec<u8> {
        let sum = algorithm.checksum(data).to_le_bytes();
        if at_end { [data, &sum].concat() } else { [&sum[..], data].concat() }
    }

    #[test]
    fn known_answers() {
        // RFC 3720 B.4: 32 bytes of zeros -> 0x8a9136aa; zlib's crc32 and adler32 of "abc".
        assert_eq!(Algorithm::Crc32c.checksum(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(Algorithm::Crc32.checksum(b"abc"), 0x3524_41c2);
        assert_eq!(Algorithm::Adler32.checksum(b"abc"), 0x024d_0127);
        // Fletcher-32 of "abcde" (big-endian words "ab", "cd", then "e" as 0x6500), by
        // hand: sum1 = 0x6162 + 0x6364 = 0xc4c6, sum2 = 0x6162 + 0xc4c6 = 0x12628 -> 0x2629;
        // then 0xc4c6 + 0x6500 = 0x129c6 -> 0x29c7 and 0x2629 + 0x129c6 = 0x14fef -> 0x4ff0.
        // numcodecs' `Fletcher32().encode(b"abcde")` ends in the same 0x4ff029c7.
        assert_eq!(fletcher32(b"abcde"), 0x4ff0_29c7);
    }

    #[test]
    fn verifies_where_the_configuration_puts_it() {
        let data = b"some chunk bytes";
        for (algorithm, config, at_end) in [
            (Algorithm::Crc32, json!({}), false),
            (Algorithm::Adler32, json!({"location": "end"}), true),
            (Algorithm::Crc32c, json!({}), true),
            (Algorithm::Fletcher32, json!({}), true),
            (Algorithm::JenkinsLookup3 { initval: 0 }, json!({"initval": 7}), true),
        ] {
            let c = Checksum::from_config(algorithm, config.as_object()).unwrap();
            let mut stored = with(c.algorithm, at_end, data);
            assert_eq!(c.decode(&stored).unwrap(), data, "{c:?}");
            let last = stored.len() - 1;
            stored[if at_end { 0 } else { last }] ^= 1;
            assert!(matches!(c.decode(&stored), Err(CodecError::Checksum { .. })), "{c:?}");
            assert!(c.decode(&[1, 2, 3]).is_err());
        }
        assert!(Checksum::from_config(Algorithm::Crc32, json!({"location": "middle"}).as_object()).is_err());
        let seeded = json!({"prefix": "abc"});
        assert!(Checksum::from_config(Algorithm::JenkinsLookup3 { initval: 0 }, seeded.as_object()).is_err());
    }
}
