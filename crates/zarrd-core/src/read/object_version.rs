//! The version of a stored object as a read saw it: what responses' validators (`ETags`)
//! are made of, and what the object-version cache remembers. ("Versions" alone are a
//! versioned dataset's branches, tags and snapshots.)

use std::cmp::Ordering;

/// What identifies the version of a stored object a read saw ([`crate::store::object_version`]:
/// its `ETag`, else its size and modification time), or that it did not exist (and was
/// read as the fill value).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ObjectVersion {
    Present(String),
    Missing,
}

impl ObjectVersion {
    /// What validators hash for a missing object: `-`, as they always have, so the same
    /// data keeps its `ETag`.
    pub const MISSING_TEXT: &'static str = "-";

    /// The text validators hash: the version, or [`Self::MISSING_TEXT`].
    pub fn as_str(&self) -> &str {
        match self {
            Self::Present(version) => version,
            Self::Missing => Self::MISSING_TEXT,
        }
    }

    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Missing)
    }
}

impl From<String> for ObjectVersion {
    fn from(version: String) -> Self {
        Self::Present(version)
    }
}

impl std::fmt::Display for ObjectVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ordered by the text validators hash (so a list of `(key, version)` sorts, and hashes,
/// as it did when versions were that text), a missing object after a present one whose
/// version reads `-`.
impl Ord for ObjectVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str()).then_with(|| self.is_missing().cmp(&other.is_missing()))
    }
}

impl PartialOrd for ObjectVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes validators hash are those of the version strings used before this type:
    /// the version itself, and `-` for a missing object.
    #[test]
    fn validators_hash_the_same_bytes_as_before() {
        assert_eq!(ObjectVersion::Missing.as_str().as_bytes(), b"-");
        assert_eq!(ObjectVersion::Missing.to_string(), "-");
        let etag = "\"9b2cf535f27731c974343645a3985328\"";
        assert_eq!(ObjectVersion::from(etag.to_owned()).as_str(), etag);
        assert_eq!(ObjectVersion::Present("1234-1700000000000000000".into()).to_string(), "1234-1700000000000000000");
        assert!(ObjectVersion::Missing.is_missing());
        assert!(!ObjectVersion::Present(String::new()).is_missing());
    }

    /// Lists of `(key, version)` sort as the lists of strings did, so their hash is
    /// unchanged: `-` (0x2d) after a quoted `ETag` (0x22), before a size (digits).
    #[test]
    fn sorts_as_the_text_it_hashes() {
        let texts = ["\"b\"", "-", "12-34", "\"a\"", "", "9"];
        let as_version = |t: &str| if t == "-" { ObjectVersion::Missing } else { ObjectVersion::Present(t.to_owned()) };
        let mut strings: Vec<(String, String)> =
            texts.iter().flat_map(|t| [("k".to_owned(), (*t).to_owned()), ("j".to_owned(), (*t).to_owned())]).collect();
        let mut versions: Vec<(String, ObjectVersion)> =
            strings.iter().map(|(k, t)| (k.clone(), as_version(t))).collect();
        strings.sort_unstable();
        versions.sort_unstable();
        let hashed: Vec<(&str, &str)> = versions.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let before: Vec<(&str, &str)> = strings.iter().map(|(k, t)| (k.as_str(), t.as_str())).collect();
        assert_eq!(hashed, before);
        // Equal only when the same: a present version that reads `-` is not a missing object.
        let dash = ObjectVersion::Present("-".into());
        assert_ne!(dash, ObjectVersion::Missing);
        assert_eq!(dash.cmp(&ObjectVersion::Missing), Ordering::Less);
    }
}
