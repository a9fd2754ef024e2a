//! What can go wrong with references, as the `object_store` errors the stores above see
//! (`Generic` with store `refs` and this error as its source, which
//! [`StoreError::failure`](crate::store::StoreError::failure) finds again by downcasting):
//! a refused reference, a reference too long to read, anything else a failure whose
//! message names keys and references only.

use crate::store::{REFS_STORE, StoreError, StoreFailure};

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
        Self::Generic { store: REFS_STORE, source: Box::new(e) }
    }
}

/// Here rather than beside [`StoreError`], because only a reference set's errors need the
/// downcast (and `store` would otherwise import `store::refs`, which imports `store`).
impl StoreError {
    /// What kind of failure this is, for whoever must answer for it: found from the
    /// variant and, for a reference set's findings, by downcasting the boxed source.
    pub fn failure(&self) -> StoreFailure {
        match self {
            Self::InvalidKey(_) => StoreFailure::InvalidKey,
            Self::Backend { source, .. } => {
                let refs = match source {
                    object_store::Error::Generic { source, .. } => source.downcast_ref::<RefsError>(),
                    _ => None,
                };
                match refs {
                    Some(RefsError::Denied(_)) => StoreFailure::RefusedReference,
                    Some(RefsError::TooLarge { .. }) => StoreFailure::ReferenceTooLarge,
                    _ => StoreFailure::Backend,
                }
            }
        }
    }
}

/// A failure to show the client (it names keys and references only).
pub fn refs_error(message: String) -> object_store::Error {
    RefsError::Target(message).into()
}
