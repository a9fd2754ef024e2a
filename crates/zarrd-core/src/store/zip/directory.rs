//! A zip archive's central directory, parsed from bytes read from the end of the archive:
//! the end-of-central-directory record (EOCD), the ZIP64 locator and end record when
//! present, then every central directory entry into name → [`Member`].
//!
//! Every count, offset and size in an archive is untrusted: they are read with bounds
//! checks and checked arithmetic, the directory's size is bounded before it is read, and
//! each member must lie before the central directory. A malformed archive is a
//! [`ZipError`], never a panic or an unbounded allocation.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

/// The fixed part of the EOCD record.
pub const EOCD_LEN: u64 = 22;
/// The ZIP64 end-of-central-directory locator, just before the EOCD.
const LOCATOR_LEN: usize = 20;
/// The fixed part of a ZIP64 end-of-central-directory record.
const ZIP64_END_LEN: u64 = 56;
/// The fixed part of a local file header (before the name and extra field).
pub const LOCAL_HEADER_LEN: u64 = 30;
/// The fixed part of a central directory entry.
const ENTRY_LEN: usize = 46;

/// How much of the archive's end is read when it is opened: the EOCD with the longest
/// comment it may have (65,535 bytes), the ZIP64 structures, and room for the central
/// directories of archives of up to about a thousand members, so those open in one request.
pub const TAIL_LEN: u64 = 128 * 1024;

/// The largest central directory read: about a million members of short names. A larger
/// declared size is refused before anything is read.
pub const MAX_DIRECTORY: u64 = 64 << 20;

const EOCD_SIGNATURE: [u8; 4] = *b"PK\x05\x06";
const LOCATOR_SIGNATURE: [u8; 4] = *b"PK\x06\x07";
const ZIP64_END_SIGNATURE: [u8; 4] = *b"PK\x06\x06";
const ENTRY_SIGNATURE: [u8; 4] = *b"PK\x01\x02";
const LOCAL_SIGNATURE: [u8; 4] = *b"PK\x03\x04";

/// Compression methods read in place.
pub const STORED: u16 = 0;
pub const DEFLATED: u16 = 8;

/// What can be wrong with an archive or one of its members. The messages name members by
/// their names inside the archive, never the archive's own path or URL, so clients may be
/// shown them.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ZipError {
    #[error("the dataset's zip archive does not exist")]
    Missing,
    #[error("the dataset's zip archive is truncated or not a zip archive (no end of central directory record)")]
    NoEnd,
    #[error("the dataset's zip archive is corrupt: {0}")]
    Corrupt(String),
    #[error("the dataset's zip archive is not supported: {0}")]
    Unsupported(String),
}

fn corrupt(why: impl Into<String>) -> ZipError {
    ZipError::Corrupt(why.into())
}

/// Little-endian fields of a byte slice, each read checked.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Result<[u8; N], ZipError> {
        at.checked_add(N)
            .and_then(|end| self.0.get(at..end))
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| corrupt("a record is cut short"))
    }
    fn u16(&self, at: usize) -> Result<u16, ZipError> {
        self.bytes(at).map(u16::from_le_bytes)
    }
    fn u32(&self, at: usize) -> Result<u32, ZipError> {
        self.bytes(at).map(u32::from_le_bytes)
    }
    fn u64(&self, at: usize) -> Result<u64, ZipError> {
        self.bytes(at).map(u64::from_le_bytes)
    }
}

/// Where the central directory is, from the end records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct End {
    pub directory: Range<u64>,
    pub entries: u64,
}

/// Finds the end records in `tail`, the last bytes of an archive of `file_len` bytes.
pub fn find_end(tail: &[u8], file_len: u64) -> Result<End, ZipError> {
    let tail_start = file_len.checked_sub(tail.len() as u64).ok_or_else(|| corrupt("read past its end"))?;
    let last = tail.len().checked_sub(EOCD_LEN as usize).ok_or(ZipError::NoEnd)?;
    // The EOCD nearest the end whose comment fits in what follows it (a comment may itself
    // contain the signature; the record it belongs to is further back only if it does not fit).
    let at = (0..=last)
        .rev()
        .find(|&i| {
            tail[i..].starts_with(&EOCD_SIGNATURE)
                && Fields(tail).u16(i + 20).is_ok_and(|c| i + EOCD_LEN as usize + usize::from(c) <= tail.len())
        })
        .ok_or(ZipError::NoEnd)?;
    let eocd = Fields(&tail[at..]);
    let (disk, directory_disk) = (eocd.u16(4)?, eocd.u16(6)?);
    let mut entries = u64::from(eocd.u16(10)?);
    let mut size = u64::from(eocd.u32(12)?);
    let mut offset = u64::from(eocd.u32(16)?);
    let mut end_start = tail_start + at as u64;
    if at >= LOCATOR_LEN && tail[at - LOCATOR_LEN..].starts_with(&LOCATOR_SIGNATURE) {
        let locator = Fields(&tail[at - LOCATOR_LEN..at]);
        let record = locator.u64(8)?;
        let locator_start = end_start - LOCATOR_LEN as u64;
        if record.checked_add(ZIP64_END_LEN).is_none_or(|end| end > locator_start) {
            return Err(corrupt("its ZIP64 end record lies outside the archive"));
        }
        let Some(within) = record.checked_sub(tail_start) else {
            return Err(ZipError::Unsupported("its ZIP64 end record is far from its end".into()));
        };
        let zip64 = Fields(&tail[within as usize..]);
        if zip64.bytes::<4>(0)? != ZIP64_END_SIGNATURE {
            return Err(corrupt("its ZIP64 locator does not point at a ZIP64 end record"));
        }
        if zip64.u32(16)? != 0 || zip64.u32(20)? != 0 {
            return Err(ZipError::Unsupported("multi-volume archives are not read".into()));
        }
        (entries, size, offset) = (zip64.u64(32)?, zip64.u64(40)?, zip64.u64(48)?);
        end_start = record;
    } else if disk != 0 || directory_disk != 0 {
        return Err(ZipError::Unsupported("multi-volume archives are not read".into()));
    }
    if size > MAX_DIRECTORY {
        return Err(ZipError::Unsupported(format!(
            "its central directory of {size} bytes is larger than zarrd reads ({MAX_DIRECTORY} bytes)"
        )));
    }
    let directory = offset..offset.checked_add(size).ok_or_else(|| corrupt("its central directory overflows"))?;
    if directory.end > end_start {
        return Err(corrupt(format!(
            "its central directory (bytes {}..{}) does not end before its end record at byte {end_start}",
            directory.start, directory.end
        )));
    }
    if entries > size / ENTRY_LEN as u64 {
        return Err(corrupt(format!("{entries} members cannot fit in a central directory of {size} bytes")));
    }
    Ok(End { directory, entries })
}

/// One member of the archive, from its central directory entry.
#[derive(Debug)]
pub struct Member {
    /// Where its local header starts.
    pub header: u64,
    pub compressed: u64,
    pub size: u64,
    pub method: u16,
    pub flags: u16,
    pub crc32: u32,
    /// The central entry's name and extra field lengths: the local header usually has
    /// the same, so a first read can take the header and the data together.
    pub header_guess: u64,
    /// Where its data starts, once its local header has been read.
    pub data: OnceLock<u64>,
}

impl Member {
    pub fn encrypted(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// The members of an archive by name, and where its central directory starts (every
/// member's data must end before it).
#[derive(Debug)]
pub struct Directory {
    pub members: BTreeMap<String, Member>,
    pub directory_start: u64,
}

/// Parses the central directory `bytes` described by `end`.
pub fn parse_directory(bytes: &[u8], end: &End) -> Result<Directory, ZipError> {
    let mut members = BTreeMap::new();
    let mut at = 0usize;
    for _ in 0..end.entries {
        let entry = Fields(bytes.get(at..).unwrap_or_default());
        if entry.bytes::<4>(0)? != ENTRY_SIGNATURE {
            return Err(corrupt(format!("its central directory has no entry at byte {at}")));
        }
        let (flags, method, crc32) = (entry.u16(8)?, entry.u16(10)?, entry.u32(16)?);
        let (name_len, extra_len, comment_len) =
            (usize::from(entry.u16(28)?), usize::from(entry.u16(30)?), usize::from(entry.u16(32)?));
        let name_at = at + ENTRY_LEN;
        let extra_at = name_at + name_len;
        let next = extra_at + extra_len + comment_len;
        let (Some(name), Some(extra)) = (bytes.get(name_at..extra_at), bytes.get(extra_at..extra_at + extra_len))
        else {
            return Err(corrupt("its central directory is cut short"));
        };
        // Names are UTF-8 (flag bit 11) or, in old archives, CP437, which agrees with
        // ASCII: the only names a Zarr store has.
        let name = String::from_utf8_lossy(name).into_owned();
        let mut compressed = u64::from(entry.u32(20)?);
        let mut size = u64::from(entry.u32(24)?);
        let mut header = u64::from(entry.u32(42)?);
        if compressed == u64::from(u32::MAX) || size == u64::from(u32::MAX) || header == u64::from(u32::MAX) {
            zip64_fields(extra, &mut size, &mut compressed, &mut header)
                .map_err(|why| corrupt(format!("`{name}` {why}")))?;
        }
        let data_min = header
            .checked_add(LOCAL_HEADER_LEN)
            .and_then(|h| h.checked_add(compressed))
            .filter(|&e| e <= end.directory.start);
        if data_min.is_none() {
            return Err(corrupt(format!("member `{name}` does not lie before the central directory")));
        }
        at = next;
        if name.ends_with('/') {
            continue; // a directory entry: directories are implied by member names
        }
        let header_guess = LOCAL_HEADER_LEN + (name_len + extra_len) as u64;
        let member = Member { header, compressed, size, method, flags, crc32, header_guess, data: OnceLock::new() };
        // A name written twice (zarr-python's ZipStore appends when a key is rewritten):
        // the later entry is the current one, as Python's zipfile reads it.
        members.insert(name, member);
    }
    Ok(Directory { members, directory_start: end.directory.start })
}

/// The ZIP64 extended information extra field (0x0001): 64-bit values of the fields
/// whose 32-bit value is saturated, in this order.
fn zip64_fields(extra: &[u8], size: &mut u64, compressed: &mut u64, header: &mut u64) -> Result<(), &'static str> {
    let mut at = 0;
    while at + 4 <= extra.len() {
        let fields = Fields(extra);
        let (id, len) = (fields.u16(at).map_err(|_| "extra")?, usize::from(fields.u16(at + 2).map_err(|_| "extra")?));
        let data = extra.get(at + 4..at + 4 + len).ok_or("has a cut extra field")?;
        if id == 1 {
            let data = Fields(data);
            let mut next = 0;
            for field in [size, compressed, header] {
                if *field == u64::from(u32::MAX) {
                    *field = data.u64(next).map_err(|_| "has a ZIP64 field that is too short")?;
                    next += 8;
                }
            }
            return Ok(());
        }
        at += 4 + len;
    }
    Err("has saturated sizes and no ZIP64 field")
}

/// Where a member's data starts, from its local header (`header`, at least the fixed part).
pub fn data_start(name: &str, member: &Member, header: &[u8], directory_start: u64) -> Result<u64, ZipError> {
    let local = Fields(header);
    if local.bytes::<4>(0).ok() != Some(LOCAL_SIGNATURE) {
        return Err(corrupt(format!("member `{name}` has no local header where its entry says")));
    }
    let lengths = u64::from(local.u16(26)?) + u64::from(local.u16(28)?);
    let start = member.header + LOCAL_HEADER_LEN + lengths;
    if start.checked_add(member.compressed).is_none_or(|end| end > directory_start) {
        return Err(corrupt(format!("member `{name}` does not lie before the central directory")));
    }
    Ok(start)
}

/// The CRC-32 check of a whole member's bytes.
pub fn check_crc(name: &str, crc32: u32, bytes: &[u8]) -> Result<(), ZipError> {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    if crc.sum() == crc32 { Ok(()) } else { Err(corrupt(format!("member `{name}` fails its CRC-32 check"))) }
}

/// The largest deflated member inflated (it is inflated whole, even for a range of it).
pub const MAX_INFLATED: u64 = 256 << 20;

/// Inflates a deflated member's `compressed` bytes, checked against its declared size and
/// CRC-32. The declared size is untrusted: it is capped, and inflating stops one byte past it.
pub fn inflate(name: &str, size: u64, crc32: u32, compressed: &[u8]) -> Result<Vec<u8>, ZipError> {
    use std::io::Read as _;
    check_inflatable(name, size, compressed.len() as u64)?;
    let mut out = Vec::with_capacity(size as usize);
    let inflated = flate2::read::DeflateDecoder::new(compressed).take(size + 1).read_to_end(&mut out);
    if inflated.is_err() || out.len() as u64 != size {
        return Err(corrupt(format!("member `{name}` does not inflate to its declared {size} bytes")));
    }
    check_crc(name, crc32, &out)?;
    Ok(out)
}

/// Refuses members whose declared inflated size is over [`MAX_INFLATED`], and those whose
/// compressed size is more than deflate can make of it (stored blocks add 5 bytes in
/// 65,535), before their compressed bytes are read.
pub fn check_inflatable(name: &str, size: u64, compressed: u64) -> Result<(), ZipError> {
    if size > MAX_INFLATED {
        return Err(ZipError::Unsupported(format!(
            "member `{name}` inflates to {size} bytes, more than zarrd inflates ({MAX_INFLATED}); store large members uncompressed"
        )));
    }
    if compressed > size + (size >> 8) + 1024 {
        return Err(corrupt(format!("member `{name}` has {compressed} compressed bytes for {size} bytes")));
    }
    Ok(())
}

impl Directory {
    /// The folder of the archive that is the dataset's root: the archive's root when a
    /// Zarr metadata document is there; else, when every member is under one top folder
    /// (a zip of a `data.zarr/` folder) whose root has one, that folder. `""` or `name/`.
    pub fn detect_root(&self) -> String {
        const DOCUMENTS: [&str; 3] = ["zarr.json", ".zgroup", ".zarray"];
        if DOCUMENTS.iter().any(|d| self.members.contains_key(*d)) {
            return String::new();
        }
        let Some(first) = self.members.keys().next().and_then(|k| k.split_once('/')).map(|(top, _)| top) else {
            return String::new();
        };
        let prefix = format!("{first}/");
        let one_folder = self.members.keys().all(|k| k.starts_with(&prefix));
        if one_folder && DOCUMENTS.iter().any(|d| self.members.contains_key(&format!("{prefix}{d}"))) {
            prefix
        } else {
            String::new()
        }
    }

    /// The folders and members directly under `prefix` (`""` or ending in `/`).
    pub fn entries(&self, prefix: &str) -> (Vec<String>, Vec<(&str, &Member)>) {
        let (mut dirs, mut objects) = (Vec::new(), Vec::new());
        let mut from = prefix.to_owned();
        while let Some((name, member)) = self.members.range(from.clone()..).next() {
            let Some(rest) = name.strip_prefix(prefix) else { break };
            if let Some((dir, _)) = rest.split_once('/') {
                dirs.push(dir.to_owned());
                // Past every name in this folder: '0' sorts right after '/'.
                from = format!("{prefix}{dir}0");
            } else {
                objects.push((rest, member));
                from = format!("{name}\0");
            }
        }
        (dirs, objects)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    const COMMENT: &str = "PK\u{5}\u{6} a comment that looks like an end record";

    /// An archive of `members` written by the `zip` crate (an independent writer).
    fn archive(members: &[(&str, &[u8])], method: zip::CompressionMethod, zip64: bool) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(method).large_file(zip64);
        if zip64 {
            writer.set_raw_zip64_extensible_data_sector(Box::new([]));
        }
        writer.set_comment(COMMENT).unwrap();
        for (name, bytes) in members {
            writer.start_file(*name, options).unwrap();
            writer.write_all(bytes).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    fn open(bytes: &[u8]) -> Result<Directory, ZipError> {
        let tail = &bytes[bytes.len().saturating_sub(TAIL_LEN as usize)..];
        let end = find_end(tail, bytes.len() as u64)?;
        let cd = bytes.get(end.directory.start as usize..end.directory.end as usize).ok_or(ZipError::NoEnd)?;
        parse_directory(cd, &end)
    }

    fn read(bytes: &[u8], directory: &Directory, name: &str) -> Result<Vec<u8>, ZipError> {
        let member = &directory.members[name];
        let start = data_start(name, member, &bytes[member.header as usize..], directory.directory_start)?;
        let data = &bytes[start as usize..(start + member.compressed) as usize];
        match member.method {
            DEFLATED => inflate(name, member.size, member.crc32, data),
            _ => check_crc(name, member.crc32, data).map(|()| data.to_vec()),
        }
    }

    fn members() -> Vec<(&'static str, Vec<u8>)> {
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        vec![("zarr.json", b"{\"zarr_format\":3}".to_vec()), ("a/c/0/0", big), ("a/zarr.json", b"{}".to_vec())]
    }

    #[test]
    fn reads_what_the_zip_crate_writes() {
        let members = members();
        let refs: Vec<(&str, &[u8])> = members.iter().map(|(n, b)| (*n, b.as_slice())).collect();
        for method in [zip::CompressionMethod::Stored, zip::CompressionMethod::Deflated] {
            for zip64 in [false, true] {
                let bytes = archive(&refs, method, zip64);
                let locator = bytes.windows(4).any(|w| w == LOCATOR_SIGNATURE);
                assert_eq!(locator, zip64, "a ZIP64 end record exactly when forced");
                let directory = open(&bytes).unwrap();
                assert_eq!(directory.members.len(), 3);
                // Forced ZIP64: the central entries' sizes are in their ZIP64 extra fields.
                let end = find_end(&bytes, bytes.len() as u64).unwrap();
                let first = &bytes[end.directory.start as usize..];
                assert_eq!(first[20..24] == [0xff; 4], zip64, "{method:?}: sizes saturated exactly when forced");
                for (name, want) in &members {
                    assert_eq!(&read(&bytes, &directory, name).unwrap(), want, "{name} {method:?} zip64={zip64}");
                }
                assert_eq!(directory.detect_root(), "");
                let (dirs, objects) = directory.entries("");
                assert_eq!(
                    (dirs, objects.iter().map(|o| o.0).collect::<Vec<_>>()),
                    (vec!["a".into()], vec!["zarr.json"])
                );
                let (dirs, objects) = directory.entries("a/");
                assert_eq!(
                    (dirs, objects.iter().map(|o| o.0).collect::<Vec<_>>()),
                    (vec!["c".into()], vec!["zarr.json"])
                );
            }
        }
    }

    #[test]
    fn finds_a_root_folder() {
        let bytes = archive(
            &[("data.zarr/zarr.json", b"{}"), ("data.zarr/x/c/0", b"1")],
            zip::CompressionMethod::Stored,
            false,
        );
        assert_eq!(open(&bytes).unwrap().detect_root(), "data.zarr/");
        let bytes =
            archive(&[("data.zarr/zarr.json", b"{}"), ("other/x", b"1")], zip::CompressionMethod::Stored, false);
        assert_eq!(open(&bytes).unwrap().detect_root(), "");
    }

    #[test]
    fn malformed_archives_are_errors() {
        let members = members();
        let refs: Vec<(&str, &[u8])> = members.iter().map(|(n, b)| (*n, b.as_slice())).collect();
        let good = archive(&refs, zip::CompressionMethod::Deflated, false);
        let end = find_end(&good, good.len() as u64).unwrap();
        // Cut anywhere in the central directory or its end record: no end record, or one
        // whose directory is out of bounds.
        for cut in [end.directory.start + 10, end.directory.end - 3, good.len() as u64 - 30, good.len() as u64 - 1] {
            assert!(open(&good[..cut as usize]).is_err(), "cut at {cut}");
        }
        let eocd = good.len() - EOCD_LEN as usize - COMMENT.len();
        assert_eq!(&good[eocd..eocd + 4], b"PK\x05\x06");
        let patched = |at: usize, value: &[u8]| {
            let mut bytes = good.clone();
            bytes[at..at + value.len()].copy_from_slice(value);
            bytes
        };
        // The directory's offset past the end, its size huge, its entry count too large.
        assert!(matches!(open(&patched(eocd + 16, &u32::MAX.to_le_bytes())), Err(ZipError::Corrupt(_))));
        assert!(matches!(open(&patched(eocd + 12, &u32::MAX.to_le_bytes())), Err(ZipError::Unsupported(_))));
        assert!(matches!(open(&patched(eocd + 10, &u16::MAX.to_le_bytes())), Err(ZipError::Corrupt(_))));
        // A member's declared sizes: huge (refused before anything is inflated), or wrong.
        let entry = end.directory.start as usize;
        let first_entry = |at: usize, value: &[u8]| patched(entry + at, value);
        let huge = first_entry(24, &(u32::MAX - 1).to_le_bytes());
        let directory = open(&huge).unwrap();
        assert!(matches!(read(&huge, &directory, "zarr.json"), Err(ZipError::Unsupported(_))));
        // More compressed bytes than deflate makes of the declared size: refused unread.
        let err = check_inflatable("m", 1, 2000).unwrap_err();
        assert!(err.to_string().contains("2000 compressed bytes for 1 bytes"), "{err}");
        let wrong = first_entry(24, &3u32.to_le_bytes());
        let directory = open(&wrong).unwrap();
        assert!(matches!(read(&wrong, &directory, "zarr.json"), Err(ZipError::Corrupt(_))));
        // A CRC-32 that does not match.
        let bad_crc = first_entry(16, &0u32.to_le_bytes());
        let directory = open(&bad_crc).unwrap();
        let err = read(&bad_crc, &directory, "zarr.json").unwrap_err();
        assert!(err.to_string().contains("`zarr.json` fails its CRC-32 check"), "{err}");
        // A member whose data would run into the central directory.
        assert!(matches!(open(&first_entry(20, &u32::MAX.to_le_bytes())), Err(ZipError::Corrupt(_))));
        // Saturated sizes without the ZIP64 field that should hold them.
        assert!(open(&first_entry(42, &u32::MAX.to_le_bytes())).is_err());
        // Not a zip at all; empty.
        assert!(matches!(open(b"just some text that is longer than an end record"), Err(ZipError::NoEnd)));
        assert!(matches!(open(b""), Err(ZipError::NoEnd)));
    }
}
