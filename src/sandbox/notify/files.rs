//! Metadata calls (chmod, chown, utimens, xattrs) performed on a descriptor
//! of the object found beneath a writable root.
//!
//! The file half of the supervisor, needed where the command has no mount
//! namespace to make the rest of the tree read-only: the object is opened
//! once, checked (beneath a writable root, no other hard links) and the
//! call made on that descriptor. It shares only the calling task's reader
//! ([`Target`]) and the report of refusals with the socket half.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use super::{Errno, Target, fstat, self_path, sys_result};

/// How a metadata call names its object.
pub(super) enum Object {
    Fd(u64),
    Path {
        dirfd: u64,
        path: u64,
        follow: bool,
        /// AT_EMPTY_PATH: an empty path means `dirfd` itself.
        empty_ok: bool,
    },
}

const AT_FDCWD: u64 = libc::AT_FDCWD as u32 as u64;

pub(super) fn path_obj(path: u64, follow: bool) -> Object {
    Object::Path {
        dirfd: AT_FDCWD,
        path,
        follow,
        empty_ok: false,
    }
}

pub(super) fn at_obj(dirfd: u64, path: u64, flags: u64) -> Object {
    let flags = flags as u32 as i32;
    Object::Path {
        dirfd,
        path,
        follow: flags & libc::AT_SYMLINK_NOFOLLOW == 0,
        empty_ok: flags & libc::AT_EMPTY_PATH != 0,
    }
}

/// Opens the object and checks it lies beneath a writable root.
fn object(t: &Target<'_>, obj: &Object) -> Result<(OwnedFd, libc::stat), Errno> {
    let fd = match *obj {
        Object::Fd(fd) => t.fd(fd)?,
        Object::Path {
            dirfd,
            path,
            follow,
            empty_ok,
        } => {
            let p = t.read_str(path)?;
            if p.is_empty() {
                if !empty_ok {
                    return Err(libc::ENOENT);
                }
                t.base(dirfd)?
            } else {
                t.open(dirfd, &p, follow)?
            }
        }
    };
    let st = fstat(&fd)?;
    let real = std::fs::read_link(self_path(&fd)).map_err(|_| libc::EPERM)?;
    let inside = real.is_absolute()
        && !real.as_os_str().as_bytes().ends_with(b" (deleted)")
        && t.ctx.policy.write_roots.iter().any(|r| real.starts_with(r));
    if !inside {
        t.ctx.report(format!(
            "refused to change the metadata of {} (outside the writable directories)",
            real.display()
        ));
        return Err(libc::EPERM);
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR && st.st_nlink > 1 {
        t.ctx.report(format!(
            "refused to change the metadata of {} (it has other hard links, which may be outside)",
            real.display()
        ));
        return Err(libc::EPERM);
    }
    Ok((fd, st))
}

fn is_symlink(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

pub(super) fn chmod(t: &Target<'_>, obj: Object, mode: u64) -> Result<i64, Errno> {
    let (fd, st) = object(t, &obj)?;
    if is_symlink(&st) {
        return Err(libc::EOPNOTSUPP);
    }
    t.valid()?;
    let c = CString::new(self_path(&fd)).map_err(|_| libc::EINVAL)?;
    // SAFETY: a valid C string naming our own descriptor.
    sys_result(unsafe { libc::chmod(c.as_ptr(), mode as libc::mode_t) })
}

pub(super) fn chown(t: &Target<'_>, obj: Object, uid: u64, gid: u64) -> Result<i64, Errno> {
    let (fd, _) = object(t, &obj)?;
    t.valid()?;
    // SAFETY: an empty path with AT_EMPTY_PATH acts on the descriptor.
    sys_result(unsafe {
        libc::fchownat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            uid as u32,
            gid as u32,
            libc::AT_EMPTY_PATH,
        )
    })
}

/// Sets times from the caller's `[timespec; 2]` (or now, for NULL).
pub(super) fn utimens(
    t: &Target<'_>,
    obj: Object,
    times: Option<[libc::timespec; 2]>,
) -> Result<i64, Errno> {
    let (fd, _) = object(t, &obj)?;
    t.valid()?;
    let p = times.as_ref().map_or(std::ptr::null(), |ts| ts.as_ptr());
    // SAFETY: `p` is null or points at two timespecs.
    sys_result(unsafe { libc::utimensat(fd.as_raw_fd(), c"".as_ptr(), p, libc::AT_EMPTY_PATH) })
}

pub(super) fn read_timespecs(
    t: &Target<'_>,
    ptr: u64,
    wide: bool,
) -> Result<Option<[libc::timespec; 2]>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let (size, half) = if wide || cfg!(target_pointer_width = "64") {
        (32, 8)
    } else {
        (16, 4)
    };
    let b = t.read(ptr, size)?;
    let field = |i: usize| -> i64 {
        let o = i * half;
        if half == 8 {
            i64::from_ne_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
        } else {
            i64::from(i32::from_ne_bytes(b[o..o + 4].try_into().unwrap_or([0; 4])))
        }
    };
    let ts = |i: usize| libc::timespec {
        tv_sec: field(2 * i) as _,
        tv_nsec: field(2 * i + 1) as _,
    };
    Ok(Some([ts(0), ts(1)]))
}

/// `utimes`/`futimesat` take timevals (microseconds); `utime` a utimbuf.
pub(super) fn read_timevals(
    t: &Target<'_>,
    ptr: u64,
    utimbuf: bool,
) -> Result<Option<[libc::timespec; 2]>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let half = std::mem::size_of::<libc::c_long>();
    let size = if utimbuf { 2 * half } else { 4 * half };
    let b = t.read(ptr, size)?;
    let field = |i: usize| -> i64 {
        let o = i * half;
        if half == 8 {
            i64::from_ne_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
        } else {
            i64::from(i32::from_ne_bytes(b[o..o + 4].try_into().unwrap_or([0; 4])))
        }
    };
    let ts = |sec: i64, usec: i64| libc::timespec {
        tv_sec: sec as _,
        tv_nsec: (usec * 1000) as _,
    };
    Ok(Some(if utimbuf {
        [ts(field(0), 0), ts(field(1), 0)]
    } else {
        [ts(field(0), field(1)), ts(field(2), field(3))]
    }))
}

pub(super) fn setxattr(
    t: &Target<'_>,
    obj: Object,
    name: u64,
    value: u64,
    size: u64,
    flags: u64,
) -> Result<i64, Errno> {
    let (fd, st) = object(t, &obj)?;
    if is_symlink(&st) {
        return Err(libc::EPERM);
    }
    let n = CString::new(t.read_str(name)?).map_err(|_| libc::EINVAL)?;
    let size = size as usize;
    if size > 65536 {
        return Err(libc::E2BIG);
    }
    let v = t.read(value, size)?;
    t.valid()?;
    let c = CString::new(self_path(&fd)).map_err(|_| libc::EINVAL)?;
    // SAFETY: valid C strings and a buffer of `size` bytes.
    sys_result(unsafe {
        libc::setxattr(
            c.as_ptr(),
            n.as_ptr(),
            v.as_ptr().cast(),
            size,
            flags as i32,
        )
    })
}

pub(super) fn removexattr(t: &Target<'_>, obj: Object, name: u64) -> Result<i64, Errno> {
    let (fd, st) = object(t, &obj)?;
    if is_symlink(&st) {
        return Err(libc::EPERM);
    }
    let n = CString::new(t.read_str(name)?).map_err(|_| libc::EINVAL)?;
    t.valid()?;
    let c = CString::new(self_path(&fd)).map_err(|_| libc::EINVAL)?;
    // SAFETY: valid C strings.
    sys_result(unsafe { libc::removexattr(c.as_ptr(), n.as_ptr()) })
}
