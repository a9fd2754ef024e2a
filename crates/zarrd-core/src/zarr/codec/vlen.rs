//! The `vlen-utf8` codec (array→bytes) of the `string` data type, and numcodecs' `VLenUTF8`
//! object codec of Zarr v2 `|O` arrays, which frame text the same way.
//!
//! Spec: zarr-extensions `codecs/vlen-utf8`. Layout: a u32 LE element count, then per element
//! (C order) a u32 LE byte length and that many UTF-8 bytes. Verified on zarr-python 3.4.2's
//! files: the count is the chunk's full element count (a boundary chunk stores padding `""`).
//!
//! Decoding keeps the chunk's bytes and records where each element lies, instead of one
//! allocation per element: only the elements a request selects are ever copied out.

use crate::zarr::codec::error::CodecError;

/// A decoded chunk of text: element `i` is `text[spans[i].0..spans[i].1]`, valid UTF-8.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VlenStrings {
    pub bytes: Vec<u8>,
    pub spans: Vec<(u32, u32)>,
}

impl VlenStrings {
    /// Element `i` (checked to be UTF-8 when decoded).
    pub fn get(&self, i: usize) -> &str {
        let (start, end) = self.spans.get(i).copied().unwrap_or((0, 0));
        self.bytes.get(start as usize..end as usize).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or_default()
    }

    /// Element `i` as bytes (`vlen-bytes`; for text, its UTF-8).
    pub fn get_bytes(&self, i: usize) -> &[u8] {
        let (start, end) = self.spans.get(i).copied().unwrap_or((0, 0));
        self.bytes.get(start as usize..end as usize).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// Bytes of the frame per element besides its text: its u32 length.
pub const BYTES_PER_ELEMENT: u64 = 4;

/// Decodes the framing of a chunk that must hold exactly `elements` elements. Every length
/// is checked against the bytes present before it is used, and the element count against
/// `elements` before anything proportional to it is allocated.
pub fn decode(bytes: Vec<u8>, elements: u64) -> Result<VlenStrings, CodecError> {
    decode_framed(bytes, elements, true)
}

/// [`decode`], checking each element is UTF-8 only when `utf8` (`vlen-utf8`; `vlen-bytes`
/// frames any bytes the same way).
pub fn decode_framed(bytes: Vec<u8>, elements: u64, utf8: bool) -> Result<VlenStrings, CodecError> {
    let corrupt = |detail: String| CodecError::corrupt(if utf8 { "vlen-utf8" } else { "vlen-bytes" }, detail);
    // Spans are u32 offsets: the chunk decoders cap their output far below 4 GiB.
    if u32::try_from(bytes.len()).is_err() {
        return Err(corrupt(format!("{} bytes of text is more than this server decodes per chunk", bytes.len())));
    }
    let u32_at = |at: usize| -> Option<u32> {
        bytes.get(at..at.checked_add(4)?).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let count =
        u32_at(0).ok_or_else(|| corrupt(format!("{} bytes is too short for the element count", bytes.len())))?;
    if u64::from(count) != elements {
        return Err(corrupt(format!("the chunk holds {count} elements, its shape has {elements}")));
    }
    // Each element takes at least its length prefix, so a count the bytes cannot hold is
    // refused before the span table is allocated.
    let room = (bytes.len() as u64 - 4) / BYTES_PER_ELEMENT;
    if u64::from(count) > room {
        return Err(corrupt(format!("{count} elements cannot fit in {} bytes", bytes.len())));
    }
    let mut spans = Vec::with_capacity(count as usize);
    let mut at = 4usize;
    for i in 0..count {
        let len = u32_at(at).ok_or_else(|| corrupt(format!("element {i}: the length is cut off at byte {at}")))?;
        let start = at + 4;
        let end = start.checked_add(len as usize).filter(|&end| end <= bytes.len()).ok_or_else(|| {
            corrupt(format!("element {i}: {len} bytes at byte {start} run past the end ({})", bytes.len()))
        })?;
        if utf8 {
            std::str::from_utf8(&bytes[start..end])
                .map_err(|e| corrupt(format!("element {i} is not valid UTF-8: {e}")))?;
        }
        // Both fit in u32: the whole buffer does (checked above).
        spans.push((start as u32, end as u32));
        at = end;
    }
    if at != bytes.len() {
        return Err(corrupt(format!("{} bytes follow the last element", bytes.len() - at)));
    }
    Ok(VlenStrings { bytes, spans })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(items: &[&[u8]]) -> Vec<u8> {
        let mut out = (items.len() as u32).to_le_bytes().to_vec();
        for item in items {
            out.extend((item.len() as u32).to_le_bytes());
            out.extend(*item);
        }
        out
    }

    #[test]
    fn decodes_the_layout_in_the_format_notes() {
        // ZARR_FORMAT.md: chunk ["a","bc"] -> 02000000 01000000 61 02000000 6263.
        let v = decode(vec![2, 0, 0, 0, 1, 0, 0, 0, 0x61, 2, 0, 0, 0, 0x62, 0x63], 2).unwrap();
        assert_eq!((v.get(0), v.get(1), v.len()), ("a", "bc", 2));
        let v = decode(frame(&["déf".as_bytes(), b""]), 2).unwrap();
        assert_eq!((v.get(0), v.get(1)), ("déf", ""));
    }

    #[test]
    fn corrupt_frames_are_errors() {
        let bad = |bytes: Vec<u8>, n: u64| decode(bytes, n).unwrap_err().to_string();
        assert!(bad(vec![1, 0], 1).contains("too short"));
        assert!(bad(frame(&[b"a"]), 2).contains("holds 1 elements"));
        // A huge count with few bytes is refused before allocating.
        assert!(bad(vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0], u64::from(u32::MAX)).contains("cannot fit"));
        let mut long = frame(&[b"abc"]);
        long[4] = 200;
        assert!(bad(long, 1).contains("run past the end"));
        assert!(bad(frame(&[&[0xff, 0xfe]]), 1).contains("UTF-8"));
        // `vlen-bytes` frames any bytes.
        let v = decode_framed(frame(&[&[0xff, 0xfe], b""]), 2, false).unwrap();
        assert_eq!((v.get_bytes(0), v.get_bytes(1)), (&[0xff, 0xfe][..], &b""[..]));
        assert!(decode_framed(frame(&[b"a"]), 2, false).unwrap_err().to_string().contains("vlen-bytes"));
        let mut extra = frame(&[b"a"]);
        extra.push(0);
        assert!(bad(extra, 1).contains("follow the last element"));
        let mut cut = frame(&[b"a", b"b"]);
        cut.truncate(12);
        assert!(bad(cut, 2).contains("cut off"));
    }
}
