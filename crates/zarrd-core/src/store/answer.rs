//! What the stores made of other stores' bytes (zip archives, reference sets, Icechunk
//! snapshots) answer alike: a GET whose bytes are already in hand, and the refusal of every
//! write.

use std::ops::Range;

use bytes::Bytes;
use futures::StreamExt as _;
use object_store::{Attributes, Extensions, GetResult, GetResultPayload, ObjectMeta};

/// The answer to a GET of `range` of the object `meta` describes, `bytes` being those bytes
/// (empty for a HEAD, whose range is then empty too).
pub fn answered(bytes: Bytes, range: Range<u64>, meta: ObjectMeta, head: bool) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(bytes) }).boxed()),
        attributes: Attributes::default(),
        range: if head { 0..0 } else { range },
        meta,
        extensions: Extensions::default(),
    }
}

/// The error of a write to a read-only store (`what`: "zipped datasets are read-only").
pub fn read_only(what: &'static str) -> object_store::Error {
    object_store::Error::NotSupported { source: what.into() }
}
