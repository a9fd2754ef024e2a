//! Opens confined to a directory by the kernel (Linux `openat2` with `RESOLVE_BENEATH`),
//! and reads that never wait for the disk (`RESOLVE_CACHED`, `preadv2(RWF_NOWAIT)`).
//!
//! `RESOLVE_BENEATH` makes the containment check part of the open: a path (symlinks
//! included) that would leave the directory fails with `EXDEV` instead of being followed,
//! so there is no window for a swapped symlink and no `realpath` walk per read.
//! Absolute symlinks fail the same way even when they point back inside, which is why
//! `EXDEV` sends the caller to the `realpath` check instead of answering "not found".
//!
//! The no-wait variants let a request read a small range straight from the page cache on
//! the thread that asked for it — no hand-off to the blocking pool and back — and say
//! "would block" (`EAGAIN`) whenever the kernel would have to wait for I/O, so an
//! async worker is never stalled by a slow disk.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;

use rustix::buffer::spare_capacity;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::{Errno, ReadWriteFlags};

/// Whether a call may wait for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Fail with [`io::ErrorKind::WouldBlock`] rather than wait for I/O.
    No,
    Yes,
}

/// `EXDEV`: what [`open_file`] fails with for a path that leaves the directory or
/// goes through an absolute symlink.
pub const ESCAPES: i32 = Errno::XDEV.raw_os_error();

/// Whether the kernel (and any seccomp filter) offers `openat2` for confined opens below
/// `root`; where it does not, callers check paths with `realpath`.
pub fn available(root: &std::path::Path) -> bool {
    open_file(root, ".", Wait::Yes).is_ok()
}

/// Opens `relative` (a path without a leading `/`) read-only beneath the directory `root`;
/// fails with [`ESCAPES`] for a path that would leave it. `root` itself is looked up by
/// its path on every open, not held open: a dataset directory replaced by another at the
/// same path (a deploy that swaps directories) is then read from the new one, consistently
/// with the metadata, never from the old one's files.
pub fn open_file(root: &std::path::Path, relative: &str, wait: Wait) -> io::Result<File> {
    let cached = if wait == Wait::No { ResolveFlags::CACHED } else { ResolveFlags::empty() };
    let dir: OwnedFd = rustix::fs::openat2(
        rustix::fs::CWD,
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        cached,
    )?;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | cached;
    let fd = rustix::fs::openat2(&dir, relative, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty(), resolve)?;
    Ok(File::from(fd))
}

/// Reads `len` bytes of `file` from `offset`. With [`Wait::No`], any part not in the page
/// cache fails the call with [`io::ErrorKind::WouldBlock`]. A file shorter than the range
/// is `UnexpectedEof`.
pub fn read_at(file: &File, offset: u64, len: usize, wait: Wait) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let at = offset + buf.len() as u64;
        let read = match wait {
            // Straight into the vector's spare capacity: no zeroing of memory the kernel
            // overwrites (megabytes per shard for a large slice).
            Wait::Yes => rustix::io::pread(file, spare_capacity(&mut buf), at),
            // `preadv2`, the only read that can refuse to wait, takes initialized memory;
            // these reads are small (the inline limit of the caller).
            Wait::No => {
                let done = buf.len();
                buf.resize(len, 0);
                let read =
                    rustix::io::preadv2(file, &mut [io::IoSliceMut::new(&mut buf[done..])], at, ReadWriteFlags::NOWAIT);
                buf.truncate(done + read.as_ref().copied().unwrap_or(0));
                read
            }
        };
        match read {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was read")),
            Ok(_) | Err(Errno::INTR) => {}
            // A file system without no-wait reads: retried on the blocking pool, like any
            // other "would block".
            Err(Errno::OPNOTSUPP) if wait == Wait::No => return Err(io::ErrorKind::WouldBlock.into()),
            Err(e) => return Err(e.into()),
        }
    }
    // Spare capacity beyond `len` (an allocator's rounding) may have been read into.
    buf.truncate(len);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confines_opens_and_reads_ranges() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("inside")).unwrap();
        std::fs::write(root.path().join("inside/data"), b"0123456789").unwrap();
        std::os::unix::fs::symlink("inside", root.path().join("relative-in")).unwrap();
        std::os::unix::fs::symlink(root.path().join("inside"), root.path().join("absolute-in")).unwrap();
        std::os::unix::fs::symlink("../../", root.path().join("inside/up")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("absolute-out")).unwrap();
        if !available(root.path()) {
            eprintln!("openat2 is not available here: the realpath check is used instead");
            return;
        }
        let dir = root.path().to_owned();
        // Wait::Yes first: the file is then in the page cache. A no-wait call may still say
        // "would block" (a file system whose lookups always revalidate, as on CI's overlay
        // mounts): that is its contract, and the caller retries on the blocking pool. What
        // it may never do is answer wrongly.
        for wait in [Wait::Yes, Wait::No] {
            for key in ["inside/data", "relative-in/data"] {
                let file = match open_file(&dir, key, wait) {
                    Err(e) if wait == Wait::No && e.kind() == io::ErrorKind::WouldBlock => continue,
                    opened => opened.unwrap(),
                };
                match read_at(&file, 2, 5, wait) {
                    Err(e) if wait == Wait::No && e.kind() == io::ErrorKind::WouldBlock => continue,
                    read => assert_eq!(read.unwrap(), b"23456"),
                }
                let err = read_at(&file, 8, 5, wait).unwrap_err();
                assert!(
                    err.kind() == io::ErrorKind::UnexpectedEof
                        || (wait == Wait::No && err.kind() == io::ErrorKind::WouldBlock),
                    "{err}"
                );
            }
            // Leaving the root, by `..` or by a symlink, and absolute symlinks: EXDEV.
            for key in ["../x", "inside/../../x", "inside/up/etc", "absolute-out/secret", "absolute-in/data"] {
                let err = open_file(&dir, key, Wait::Yes).unwrap_err();
                assert_eq!(err.raw_os_error(), Some(ESCAPES), "{key}");
            }
            let err = open_file(&dir, "inside/none", Wait::Yes).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
        }
        // A directory swapped in at the root's path is what later opens read.
        let old = root.path().with_extension("old");
        std::fs::rename(root.path(), &old).unwrap();
        std::fs::create_dir_all(root.path().join("inside")).unwrap();
        std::fs::write(root.path().join("inside/data"), b"new").unwrap();
        let file = open_file(&dir, "inside/data", Wait::Yes).unwrap();
        assert_eq!(read_at(&file, 0, 3, Wait::Yes).unwrap(), b"new");
        std::fs::remove_dir_all(old).unwrap();
    }
}
