//! What goes wrong decoding stored bytes, and the bounds every decoder keeps to: stored
//! metadata and bytes are untrusted, so no chunk shape or stream may make the server
//! allocate without bound. A leaf of the codecs.

use std::io::Read;

/// A failure to decode stored bytes: the data is corrupt or not what the metadata says.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("{codec} checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum { codec: &'static str, stored: u32, computed: u32 },
    #[error("{codec}: {detail}")]
    Corrupt { codec: &'static str, detail: String },
    #[error("{codec}: decoded data exceeds the expected {limit} bytes")]
    TooLarge { codec: &'static str, limit: usize },
    #[error("a chunk of {bytes} bytes decoded is larger than the {limit} bytes this server decodes at once")]
    ChunkTooLarge { bytes: u128, limit: usize },
    #[error("a shard of {entries} inner chunks has a larger index than the {limit} entries this server reads")]
    IndexTooLarge { entries: u128, limit: u64 },
}

/// The largest chunk (or shard, when it must be decoded whole) decoded in one piece:
/// metadata is untrusted, and a chunk shape must not make the server allocate without
/// bound.
pub const MAX_DECODED_CHUNK_BYTES: usize = 1 << 30;

/// The elements in a chunk of `shape`: 0 when any edge is 0 (whatever the others), `None`
/// when the count overflows. Shapes come from stored metadata and shard indexes, so a
/// plain product could overflow (a panic in debug builds, a wrong size in release ones).
pub fn element_count(shape: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
}

impl CodecError {
    pub(crate) fn corrupt(codec: &'static str, detail: impl Into<String>) -> Self {
        Self::Corrupt { codec, detail: detail.into() }
    }
}

/// Reads a decompressing stream to its end, failing once it yields more than `max_len`
/// bytes, so corrupt or hostile input cannot allocate without bound.
pub(crate) fn read_capped(
    reader: impl std::io::Read,
    max_len: usize,
    codec: &'static str,
) -> Result<Vec<u8>, CodecError> {
    // Room for exactly `max_len` + 1 bytes up front (the caller has reserved them from the
    // memory budget): grown as it fills, the buffer would be copied at each doubling and
    // end up to twice its length, and freed copies are not always handed back at once.
    // The one spare byte lets a too-long stream be told apart without growing at all.
    let mut out = Vec::new();
    if out.try_reserve_exact(max_len.saturating_add(1)).is_err() {
        out.reserve(max_len.min(1 << 26));
    }
    std::io::Read::take(reader, max_len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CodecError::corrupt(codec, e.to_string()))?;
    if out.len() > max_len {
        return Err(CodecError::TooLarge { codec, limit: max_len });
    }
    Ok(out)
}
