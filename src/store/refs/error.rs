//! What can go wrong with references, as the `object_store` errors the stores above see:
//! a refused reference (403), a reference too long to read (422), anything else a 502
//! whose message names keys and references only.

use crate::store::{REFS_DENIED, REFS_LIMIT, REFS_STORE};

/// References held at most per set: a bigger set belongs in a parquet reference directory,
/// which is read a partition at a time.
pub const MAX_REFS: usize = 4_000_000;

/// The longest byte range one reference may read (a chunk of a virtual array).
pub const MAX_REFERENCED: u64 = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum RefsError {
    #[error("the reference set is invalid: {0}")]
    Invalid(String),
    #[error("the reference set has more than {} references; use a parquet reference directory", MAX_REFS)]
    TooMany,
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Target(String),
    #[error(
        "reference `{reference}` of `{key}` claims {length} bytes, more than the {MAX_REFERENCED} one reference may read"
    )]
    TooLarge { key: String, reference: String, length: u64 },
}

impl From<RefsError> for object_store::Error {
    fn from(e: RefsError) -> Self {
        let store = match e {
            RefsError::Denied(_) => REFS_DENIED,
            RefsError::TooLarge { .. } => REFS_LIMIT,
            _ => REFS_STORE,
        };
        Self::Generic { store, source: Box::new(e) }
    }
}

/// A failure to show the client (it names keys and references only).
pub fn refs_error(message: String) -> object_store::Error {
    RefsError::Target(message).into()
}
