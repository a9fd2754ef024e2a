//! The core crate's typed errors as HTTP problems: the one place that decides which status
//! a storage, read, selection or budget failure is answered with. Causes that may name
//! paths or URLs are logged in the request's span, never sent.

use zarrd_core::ops::budget::BudgetError;
use zarrd_core::read::ReadError;
use zarrd_core::read::selection::SelectionError;
use zarrd_core::store::{StoreError, StoreFailure};
use zarrd_core::zarr::codec::CodecError;

use super::Error;

/// A request beyond the budget is too large (413) or must wait (503 + `Retry-After`).
impl From<&BudgetError> for Error {
    fn from(e: &BudgetError) -> Self {
        match e {
            BudgetError::TooLarge { .. } => Error::TooManyChunks(e.to_string()),
            BudgetError::Busy => Error::Unavailable { detail: e.to_string(), retry_after: 1 },
        }
    }
}

impl From<BudgetError> for Error {
    fn from(e: BudgetError) -> Self {
        Error::from(&e)
    }
}

/// Read failures: stored data that cannot be decoded is a 502 naming its key; a chunk or
/// index beyond what one may decode is an unsupported feature (422).
impl From<&ReadError> for Error {
    fn from(e: &ReadError) -> Self {
        match e {
            ReadError::Store(s) => s.into(),
            ReadError::Shared(inner) => Error::from(inner.as_ref()),
            ReadError::Corrupt {
                key,
                source: source @ (CodecError::ChunkTooLarge { .. } | CodecError::IndexTooLarge { .. }),
            } => Error::Unsupported(format!("`{key}`: {source}")),
            corrupt @ (ReadError::Corrupt { .. } | ReadError::Changed { .. }) => {
                tracing::warn!(error = %corrupt, "unreadable stored data");
                Error::Corrupt(corrupt.to_string())
            }
            too_many @ ReadError::TooManyChunks { .. } => Error::TooManyChunks(too_many.to_string()),
            ReadError::TooLarge { what, size, limit } => Error::TooLarge { what, size: *size, limit: *limit },
            ReadError::Task(detail) => Error::internal(detail.clone()),
            ReadError::Budget(e) => e.into(),
        }
    }
}

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        Error::from(&e)
    }
}

/// A selection that cannot be read is the client's mistake: 400.
impl From<SelectionError> for Error {
    fn from(e: SelectionError) -> Self {
        Error::BadRequest(e.to_string())
    }
}

/// Storage failures: the cause is logged, not sent.
impl From<&StoreError> for Error {
    fn from(e: &StoreError) -> Self {
        match e.failure() {
            StoreFailure::InvalidKey => Error::NotFound(e.public_detail()),
            StoreFailure::RefusedReference => {
                tracing::warn!(error = %e, "reference refused");
                Error::Forbidden(e.public_detail())
            }
            StoreFailure::ReferenceTooLarge => Error::Unsupported(e.public_detail()),
            StoreFailure::Backend => {
                if let StoreError::Backend { source, .. } = e {
                    // The full cause (paths, URLs) is logged in the request's span, not sent.
                    tracing::warn!(error = %e, cause = ?source, "storage failure");
                }
                Error::Storage(e.public_detail())
            }
        }
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        Error::from(&e)
    }
}
