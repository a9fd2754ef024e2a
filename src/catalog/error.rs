//! What can go wrong finding a node, said in the catalog's terms: the caller decides what a
//! missing, unreadable or unreachable node means for it (the tree lists an unreadable node
//! as what its document says it is; a storage failure fails the listing, never reads as
//! "absent"), and [`crate::error`] alone turns it into an HTTP status.

use std::sync::Arc;

use zarrd_core::store::StoreError;

use crate::error::Error;

/// Which kind of node a document is, as far as it can be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Array,
    Group,
}

impl NodeKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Array => "array",
            Self::Group => "group",
        }
    }

    /// The kind a v3 `zarr.json` names in `node_type`, read leniently from a document
    /// that did not parse as metadata.
    pub fn named_in(document: &[u8]) -> Option<Self> {
        let doc: serde_json::Value = serde_json::from_slice(document).ok()?;
        match doc.get("node_type")?.as_str()? {
            "array" => Some(Self::Array),
            "group" => Some(Self::Group),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("`{0}` is not a valid node path (segments must be non-empty and not `.` or `..`)")]
    InvalidPath(String),
    #[error("dataset `{dataset}` has no zarr.json (nor Zarr v2 .zgroup or .zarray) at its root")]
    NoRoot { dataset: Arc<str> },
    #[error("no array or group `{path}` in dataset `{dataset}`")]
    Missing { dataset: Arc<str>, path: String },
    /// A document that uses a feature zarrd does not support.
    #[error("`{key}` uses an unsupported feature: {what}")]
    Unsupported { key: String, what: String, kind: Option<NodeKind> },
    /// A document that cannot be read as metadata.
    #[error("stored metadata `{key}` is invalid: {reason}")]
    Corrupt { key: String, reason: String, kind: Option<NodeKind> },
    #[error(transparent)]
    Storage(#[from] StoreError),
}

impl NodeError {
    /// Whether no node is there (rather than one that cannot be read or reached).
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::InvalidPath(_) | Self::NoRoot { .. } | Self::Missing { .. })
    }

    /// Whether there is no node zarrd can serve: none there, or one it cannot read (rather
    /// than one that cannot be reached).
    pub fn is_unservable(&self) -> bool {
        self.is_missing() || self.unreadable_kind().is_some()
    }

    /// The kind of a node that is there but cannot be served (`None`: not such a node, or
    /// its kind cannot be told).
    pub fn unreadable_kind(&self) -> Option<Option<NodeKind>> {
        match self {
            Self::Unsupported { kind, .. } | Self::Corrupt { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// A metadata document at `key` (of `kind`, when known) that did not parse.
    pub fn metadata(key: &str, kind: Option<NodeKind>, e: zarrd_core::zarr::json::MetadataError) -> Self {
        match e {
            zarrd_core::zarr::json::MetadataError::Unsupported(what) => {
                Self::Unsupported { key: key.to_owned(), what, kind }
            }
            other => Self::Corrupt { key: key.to_owned(), reason: other.to_string(), kind },
        }
    }
}

/// Missing nodes are 404, unsupported features 422, broken documents 502, storage
/// failures as the store says.
impl From<&NodeError> for Error {
    fn from(e: &NodeError) -> Self {
        match e {
            NodeError::InvalidPath(_) | NodeError::NoRoot { .. } | NodeError::Missing { .. } => {
                Error::NotFound(e.to_string())
            }
            NodeError::Unsupported { .. } => Error::Unsupported(e.to_string()),
            NodeError::Corrupt { .. } => Error::Corrupt(e.to_string()),
            NodeError::Storage(s) => s.into(),
        }
    }
}
