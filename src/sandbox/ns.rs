//! Namespaces: a private mount namespace in which everything outside the
//! writable roots is read-only, protected paths are read-only bind mounts
//! and `denyRead` paths are covered by empty, unreadable ones; and, for
//! the domain proxy, a network namespace whose only way out is the proxy.
//!
//! Read-only mounts are what make metadata changes (chmod, chown, utimes,
//! xattrs) outside the roots fail — landlock has no rights for them — and
//! what makes protected paths unwritable *during* the command: landlock
//! grants are hierarchical, so `.git/hooks` cannot be carved out of a
//! writable working directory by a rule. Directories whose replacement
//! would defeat that (the working directories, `.git`) are made mount
//! points, which cannot be renamed or removed.
//!
//! As root the mount namespace needs no user namespace; otherwise an
//! unprivileged user namespace maps the caller's own uid and gid. Where
//! neither is allowed the launcher runs without, and says so.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
const MOUNT_ATTR_RDONLY: u64 = 1;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Which namespaces the launcher entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entered {
    /// A mount namespace, as root.
    Mount,
    /// A user and a mount namespace (unprivileged).
    UserMount,
}

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

fn err(what: &str, p: &Path) -> String {
    format!(
        "{what} {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    )
}

fn write_file(path: &str, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

/// Enters a mount namespace (and a user namespace where that is the only
/// way). `Err` says why none could be made; nothing has changed then.
pub(crate) fn enter() -> Result<Entered, String> {
    // SAFETY: unshare takes flags only; the launcher is single-threaded.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0 {
        return Ok(Entered::Mount);
    }
    let as_root = std::io::Error::last_os_error();
    let (uid, gid) = (crate::sys::uid(), crate::sys::gid());
    // SAFETY: as above.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(format!(
            "no mount namespace ({as_root}) and no user namespace ({})",
            std::io::Error::last_os_error()
        ));
    }
    // Past this point the process is in the new namespaces: a failure
    // cannot be undone and must stop the command.
    write_file("/proc/self/setgroups", "deny")
        .and_then(|_| write_file("/proc/self/uid_map", &format!("{uid} {uid} 1")))
        .and_then(|_| write_file("/proc/self/gid_map", &format!("{gid} {gid} 1")))
        .map_err(|e| format!("cannot map ids in the user namespace: {e}"))?;
    Ok(Entered::UserMount)
}

/// What the mount namespace should look like. All paths are canonical.
pub(crate) struct Plan<'a> {
    /// Stay writable (and everything else becomes read-only).
    pub write_roots: &'a [PathBuf],
    /// Become mount points, so they cannot be renamed or removed.
    pub pins: &'a [PathBuf],
    /// Become read-only, wherever they are.
    pub read_only: &'a [PathBuf],
    /// Covered by an empty, unreadable file or directory.
    pub hide: &'a [PathBuf],
}

fn open_tree(path: &Path, flags: libc::c_uint) -> Result<OwnedFd, String> {
    let c = cstr(path)?;
    // SAFETY: a valid C string; the call returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | flags,
        )
    };
    if fd < 0 {
        return Err(err("cannot clone the mount at", path));
    }
    // SAFETY: open_tree returned a descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn open_tree_at(dir: &OwnedFd, name: &str) -> Result<OwnedFd, String> {
    let c = CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: a descriptor we own and a valid C string.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            dir.as_raw_fd(),
            c.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(format!(
            "cannot clone the placeholder {name}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: as above.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn set_read_only(fd: &OwnedFd, recursive: bool) -> Result<(), String> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: `attr` is a valid mount_attr of the given size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(format!(
            "cannot make a mount read-only: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn move_onto(fd: &OwnedFd, path: &Path) -> Result<(), String> {
    let c = cstr(path)?;
    // SAFETY: a detached mount we own and a valid C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if r != 0 {
        return Err(err("cannot mount onto", path));
    }
    Ok(())
}

/// A small read-only tmpfs holding an empty directory `d` and an empty
/// file `f`, both mode 000: what denied paths are covered with.
fn placeholders() -> Result<OwnedFd, String> {
    let fail = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    // SAFETY: a valid C string; returns a new descriptor or -1.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
    if fs < 0 {
        return Err(fail("cannot make a tmpfs"));
    }
    // SAFETY: fsopen returned a descriptor we now own.
    let fs = unsafe { OwnedFd::from_raw_fd(fs as i32) };
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: FSCONFIG_CMD_CREATE takes no key or value.
    if unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            null,
            null,
            0,
        )
    } != 0
    {
        return Err(fail("cannot create the tmpfs"));
    }
    // SAFETY: a configured fs context we own.
    let m = unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, 0) };
    if m < 0 {
        return Err(fail("cannot mount the tmpfs"));
    }
    // SAFETY: fsmount returned a descriptor we now own.
    let m = unsafe { OwnedFd::from_raw_fd(m as i32) };
    // SAFETY: relative names in a directory descriptor we own.
    let made = unsafe {
        libc::mkdirat(m.as_raw_fd(), c"d".as_ptr(), 0) == 0 && {
            let f = libc::openat(
                m.as_raw_fd(),
                c"f".as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0,
            );
            f >= 0 && libc::close(f) == 0
        }
    };
    if !made {
        return Err(fail("cannot make the placeholders"));
    }
    set_read_only(&m, false)?;
    Ok(m)
}

/// Keeps only roots that are not beneath another root.
fn outermost(roots: &[PathBuf]) -> Vec<&PathBuf> {
    roots
        .iter()
        .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
        .collect()
}

/// Builds the mount tree of `plan` in the current (new) mount namespace.
pub(crate) fn mount(plan: &Plan<'_>) -> Result<(), String> {
    // SAFETY: valid C strings; MS_PRIVATE|MS_REC changes propagation only.
    if unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    } != 0
    {
        return Err(err("cannot make mounts private under", Path::new("/")));
    }
    // Writable copies of the roots, taken before the rest turns read-only.
    let roots = outermost(plan.write_roots);
    let mut clones = Vec::with_capacity(roots.len());
    for root in &roots {
        clones.push(open_tree(root, AT_RECURSIVE)?);
    }
    let everything = open_root()?;
    set_read_only_at_root(&everything)?;
    for (root, clone) in roots.iter().zip(&clones) {
        move_onto(clone, root)?;
    }
    for pin in plan.pins {
        let fd = open_tree(pin, AT_RECURSIVE)?;
        move_onto(&fd, pin)?;
    }
    for path in plan.read_only {
        let fd = open_tree(path, AT_RECURSIVE)?;
        set_read_only(&fd, true)?;
        move_onto(&fd, path)?;
    }
    if !plan.hide.is_empty() {
        let holder = placeholders()?;
        for path in plan.hide {
            let is_dir = std::fs::symlink_metadata(path)
                .map(|m| m.is_dir())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let fd = open_tree_at(&holder, if is_dir { "d" } else { "f" })?;
            move_onto(&fd, path)?;
        }
    }
    // The working directory was looked up on the old, now read-only, tree.
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the cwd: {e}"))?;
    std::env::set_current_dir(&cwd).map_err(|e| format!("cannot re-enter {}: {e}", cwd.display()))
}

fn open_root() -> Result<OwnedFd, String> {
    // SAFETY: a valid C string; O_PATH opens without reading.
    let fd = unsafe {
        libc::open(
            c"/".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(err("cannot open", Path::new("/")));
    }
    // SAFETY: open returned a descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Every mount of this namespace read-only (per mount, not the
/// filesystems: the host's mounts are untouched).
fn set_read_only_at_root(root: &OwnedFd) -> Result<(), String> {
    set_read_only(root, true)
}

/// Enters a fresh network namespace with the loopback interface up.
/// Needs CAP_SYS_ADMIN (root, or the user namespace's).
pub(crate) fn enter_network() -> Result<(), String> {
    // SAFETY: flags only.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "no network namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    loopback_up()
}

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn loopback_up() -> Result<(), String> {
    // SAFETY: plain socket creation.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(format!("socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: socket returned a descriptor we now own.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    let mut req = IfReq {
        name: [0; 16],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
    const SIOCSIFFLAGS: libc::c_ulong = 0x8914;
    // SAFETY: `req` is a valid ifreq for both requests.
    let ok = unsafe {
        libc::ioctl(s.as_raw_fd(), SIOCGIFFLAGS as _, &mut req as *mut IfReq) == 0 && {
            req.flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(s.as_raw_fd(), SIOCSIFFLAGS as _, &mut req as *mut IfReq) == 0
        }
    };
    if !ok {
        return Err(format!(
            "cannot bring up loopback: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
