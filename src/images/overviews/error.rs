//! What can go wrong writing overviews, as `zarrd overviews` says it: the command's own
//! errors, with no HTTP status (nothing serves them).

use zarrd_core::ops::budget::BudgetError;
use zarrd_core::read::ReadError;
use zarrd_core::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum OverviewsError {
    /// `--out` cannot be parsed, created or opened.
    #[error("{0}")]
    Destination(String),
    /// No pyramid is made of this source with these options: fewer than two dimensions,
    /// values without a mean, a tile size out of range, an output that holds one already,
    /// a row of more chunks than the configuration reads at once.
    #[error("{0}")]
    Refused(String),
    /// Reading the source failed.
    #[error("reading the source: {0}")]
    Read(#[from] ReadError),
    /// Looking at the output failed.
    #[error("the output: {0}")]
    Store(#[from] StoreError),
    /// Writing a level failed.
    #[error("{0}")]
    Write(String),
    /// The memory budget cannot hold a band and its reduction.
    #[error("{0}")]
    Budget(#[from] BudgetError),
    /// A tile could not be compressed.
    #[error("compressing a tile: {0}")]
    Compress(std::io::Error),
}

pub type Result<T, E = OverviewsError> = std::result::Result<T, E>;
