//! What can go wrong reading an array. The status each failure is answered with is the
//! server's business (`src/error/core.rs`), not the core's.

use std::sync::Arc;

use crate::ops::budget::BudgetError;
use crate::store::StoreError;
use crate::zarr::codec::CodecError;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("stored data in `{key}` is corrupt: {source}")]
    Corrupt {
        key: String,
        #[source]
        source: CodecError,
    },
    #[error("the selection touches {chunks} chunks; at most {limit} are read per request")]
    TooManyChunks { chunks: u128, limit: u64 },
    /// A result whose size is only known while it is read (text) outgrew the response limit.
    #[error("the {what} selected is at least {size} bytes, more than the {limit} bytes allowed per response")]
    TooLarge { what: &'static str, size: u128, limit: u64 },
    #[error("shard `{key}` changed while it was being read")]
    Changed { key: String },
    #[error("a decoding task failed: {0}")]
    Task(String),
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// The failure of a load shared by concurrent requests (single-flight).
    #[error(transparent)]
    Shared(Arc<ReadError>),
}

impl crate::store::coalesce::BatchError for ReadError {
    fn short(key: &str) -> Self {
        Self::Task(format!("a coalesced read of `{key}` came back short"))
    }

    fn abandoned() -> Self {
        Self::Task("a coalesced storage read was abandoned".into())
    }

    fn unshare(shared: Arc<Self>) -> Self {
        Self::unshare(shared)
    }
}

impl ReadError {
    /// The error of a shared (single-flight) load: the error itself when this caller holds
    /// the last reference, else a shared view of it.
    pub fn unshare(e: Arc<Self>) -> Self {
        Arc::try_unwrap(e).unwrap_or_else(Self::Shared)
    }

    /// Whether the shard changed under the read (possibly reported through a shared load).
    pub fn is_changed(&self) -> bool {
        match self {
            Self::Changed { .. } => true,
            Self::Shared(inner) => inner.is_changed(),
            _ => false,
        }
    }
}
