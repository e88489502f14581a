//! Directory-descriptor file operations that never follow a symlink, for
//! the checks tern runs (unsandboxed) after a sandboxed command: whatever
//! the command turned into a symlink, these act on the link itself, and
//! nothing is reached through one.

use std::ffi::{CString, OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn c(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput.into())
}

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn fd(r: libc::c_long) -> std::io::Result<OwnedFd> {
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the caller passes a descriptor a syscall just returned.
    Ok(unsafe { OwnedFd::from_raw_fd(r as i32) })
}

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;

/// Opens an absolute directory path with no symlink anywhere along it
/// (ELOOP if there is one).
pub(crate) fn open_dir_strict(path: &Path) -> std::io::Result<OwnedFd> {
    let p = c(path.as_os_str())?;
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a valid C string and open_how of the size passed.
    fd(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            p.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    })
}

/// lstat of `name` in `dir`.
pub(crate) fn stat_at(dir: &OwnedFd, name: &OsStr) -> std::io::Result<libc::stat> {
    let n = c(name)?;
    // SAFETY: a zeroed stat is a valid buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, C string and buffer.
    check(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            n.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(st)
}

pub(crate) fn stat_fd(f: &OwnedFd) -> std::io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and buffer.
    check(unsafe { libc::fstat(f.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// Opens the directory `name` in `dir`, refusing a symlink.
pub(crate) fn open_subdir(dir: &OwnedFd, name: &OsStr) -> std::io::Result<OwnedFd> {
    let n = c(name)?;
    // SAFETY: valid descriptor and C string.
    fd(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            n.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    } as libc::c_long)
}

/// The names in a directory (through its descriptor, not a path).
pub(crate) fn list(dir: &OwnedFd) -> std::io::Result<Vec<OsString>> {
    let mut names: Vec<OsString> = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    Ok(names)
}

/// Reads a regular file `name` in `dir`, up to `limit` bytes.
pub(crate) fn read_at(dir: &OwnedFd, name: &OsStr, limit: usize) -> std::io::Result<Vec<u8>> {
    let n = c(name)?;
    // SAFETY: valid descriptor and C string; O_NONBLOCK keeps a FIFO from
    // blocking, O_NOFOLLOW refuses a symlink.
    let f = fd(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            n.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    } as libc::c_long)?;
    if stat_fd(&f)?.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    let mut out = Vec::new();
    std::fs::File::from(f)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)?;
    if out.len() > limit {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    Ok(out)
}

pub(crate) fn read_link_at(dir: &OwnedFd, name: &OsStr) -> std::io::Result<Vec<u8>> {
    let n = c(name)?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: valid descriptor, C string and buffer.
    let len = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            n.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if len < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate(len as usize);
    Ok(buf)
}

/// Writes a new regular file (it must not exist) with `mode`.
pub(crate) fn create_at(
    dir: &OwnedFd,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let n = c(name)?;
    // SAFETY: valid descriptor and C string.
    let f = fd(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            n.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    } as libc::c_long)?;
    // SAFETY: valid descriptor.
    check(unsafe { libc::fchmod(f.as_raw_fd(), mode & 0o7777) })?;
    std::fs::File::from(f).write_all(bytes)
}

pub(crate) fn mkdir_at(dir: &OwnedFd, name: &OsStr, mode: u32) -> std::io::Result<()> {
    let n = c(name)?;
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), n.as_ptr(), (mode & 0o7777) as libc::mode_t) })
}

pub(crate) fn symlink_at(target: &[u8], dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
    let t = c(OsStr::from_bytes(target))?;
    let n = c(name)?;
    // SAFETY: valid descriptor and C strings.
    check(unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), n.as_ptr()) })
}

fn unlink_at(dir: &OwnedFd, name: &OsStr, is_dir: bool) -> std::io::Result<()> {
    let n = c(name)?;
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), n.as_ptr(), flags) })
}

/// Removes `name` in `dir` and, for a directory, everything beneath it,
/// without following any symlink. At most `budget` entries.
pub(crate) fn remove_tree(dir: &OwnedFd, name: &OsStr, budget: &mut usize) -> std::io::Result<()> {
    let st = stat_at(dir, name)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return unlink_at(dir, name, false);
    }
    let sub = open_subdir(dir, name)?;
    for entry in list(&sub)? {
        if *budget == 0 {
            return Err(std::io::Error::other("too many files"));
        }
        *budget -= 1;
        remove_tree(&sub, &entry, budget)?;
    }
    unlink_at(dir, name, true)
}
