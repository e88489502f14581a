//! Answers the seccomp user notifications of `connect`, `bind` and (where
//! there is no mount namespace) metadata changes, by performing the call
//! itself on the command's own descriptor after checking it.
//!
//! Letting the kernel continue a checked call would be unsound: the
//! command can rewrite the address or path in its memory, or swap the
//! descriptor, between the check and the kernel's second read. So the
//! supervisor reads the arguments once, takes the descriptor with
//! `pidfd_getfd` (the same open file), resolves paths to descriptors it
//! holds, checks those, and acts on exactly what it checked:
//!
//! - `connect` to a pathname unix socket goes through `/proc/self/fd/N`
//!   of the socket file it checked. Allowed: sockets the sandbox bound
//!   during this command (their inode learnt from the kernel with
//!   sock_diag, not from the path, which could be raced), sockets
//!   `allowUnixSockets` names, or anything with `allowAllUnixSockets`.
//! - abstract unix sockets: the supervisor sits in a landlock domain
//!   scoped to the sandbox (ABI ≥ 6), so the kernel refuses outside ones;
//!   binding abstract names is refused unless the command has its own
//!   network namespace (they are global per namespace).
//! - TCP `connect` is allowed to the ports of `allowTcpPorts` and to the
//!   proxy on loopback; everything else is refused and reported.
//! - metadata calls are performed on a descriptor of the object after its
//!   path was found beneath a writable root; objects with more than one
//!   hard link are refused (the other name may be outside).
//!
//! The supervisor has the command's uid and no capabilities, so the
//! kernel's permission checks on what it performs are the command's.

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::seccomp::{Inet, Unix};
use super::syscalls::{Arch, Sys};

mod files;
mod net;

use files::{
    Object, at_obj, chmod, chown, path_obj, read_timespecs, read_timevals, removexattr, setxattr,
    utimens,
};
pub(crate) use net::socket_ids;
use net::{bind, connect};

/// What the supervisor allows, fixed for the command.
pub(crate) struct Policy {
    pub arch: &'static Arch,
    pub inet: Inet,
    pub unix: Unix,
    pub tcp_ports: Vec<u16>,
    /// The proxy's loopback port, in proxy mode.
    pub proxy_port: Option<u16>,
    /// (dev, ino) of the sockets `allowUnixSockets` names.
    pub unix_allowed: Vec<(u64, u64)>,
    /// Canonical writable roots (metadata checks).
    pub write_roots: Vec<PathBuf>,
    /// The command has its own network namespace.
    pub netns: bool,
    /// Abstract sockets are scoped by landlock (ABI ≥ 6).
    pub abstract_scoped: bool,
}

/// What the supervisor learns while the command runs.
#[derive(Default)]
pub(crate) struct State {
    /// (dev, ino) of socket files the sandbox bound.
    bound: HashSet<(u64, u64)>,
    /// Refusals already reported (each is said once).
    said: HashSet<String>,
}

pub(crate) struct Ctx {
    pub policy: Policy,
    pub state: Mutex<State>,
    pub listener: OwnedFd,
}

impl Ctx {
    /// Tells the model (through the command's stderr) once per message.
    pub(crate) fn report(&self, message: String) {
        let fresh = self
            .state
            .lock()
            .map(|mut s| s.said.insert(message.clone()))
            .unwrap_or(true);
        if fresh {
            super::launch::say(&message);
        }
    }
}

type Errno = i32;

fn last() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn owned(fd: libc::c_long) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        return Err(last());
    }
    // SAFETY: the caller passes a descriptor a syscall just returned.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The calling task, for reading its memory and taking its descriptors.
struct Target<'a> {
    ctx: &'a Ctx,
    id: u64,
    pid: libc::pid_t,
    pidfd: OwnedFd,
}

impl Target<'_> {
    /// The notification still stands (so `pid` is still the caller).
    fn valid(&self) -> Result<(), Errno> {
        let mut id = self.id;
        // SAFETY: ID_VALID reads one u64.
        let r = unsafe {
            libc::ioctl(
                self.ctx.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
                &mut id as *mut u64,
            )
        };
        if r != 0 { Err(libc::ENOENT) } else { Ok(()) }
    }

    fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let mut buf = vec![0u8; len];
        if len == 0 {
            return Ok(buf);
        }
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: addr as usize as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: `local` describes `buf`; the kernel checks `remote`.
        let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if n < 0 {
            return Err(last());
        }
        if n as usize != len {
            return Err(libc::EFAULT);
        }
        Ok(buf)
    }

    /// A NUL-terminated string, read a page at a time.
    fn read_str(&self, addr: u64) -> Result<Vec<u8>, Errno> {
        if addr == 0 {
            return Err(libc::EFAULT);
        }
        let mut out = Vec::new();
        let mut at = addr;
        while out.len() < libc::PATH_MAX as usize {
            let to_page = 4096 - (at as usize % 4096);
            let chunk = self.read(at, to_page)?;
            if let Some(end) = chunk.iter().position(|b| *b == 0) {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk);
            at += to_page as u64;
        }
        Err(libc::ENAMETOOLONG)
    }

    /// The caller's descriptor `fd`, as our own (the same open file).
    fn fd(&self, fd: u64) -> Result<OwnedFd, Errno> {
        let fd = fd as u32 as i32;
        // SAFETY: plain syscall; returns a new descriptor or -1.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.pidfd.as_raw_fd(), fd, 0) };
        owned(r).map_err(|e| if e == libc::EBADF { libc::EBADF } else { e })
    }

    /// Where a relative path of the caller starts: its cwd or `dirfd`.
    fn base(&self, dirfd: u64) -> Result<OwnedFd, Errno> {
        if dirfd as u32 as i32 == libc::AT_FDCWD {
            let p = CString::new(format!("/proc/{}/cwd", self.pid)).map_err(|_| libc::EINVAL)?;
            // SAFETY: a valid C string.
            owned(unsafe {
                libc::open(
                    p.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            } as libc::c_long)
        } else {
            self.fd(dirfd)
        }
    }

    /// Opens what `path` names for the caller, without following a final
    /// symlink unless `follow`.
    fn open(&self, dirfd: u64, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
        let base = self.base(dirfd)?;
        let c = CString::new(path).map_err(|_| libc::EINVAL)?;
        let flags = libc::O_PATH | libc::O_CLOEXEC | if follow { 0 } else { libc::O_NOFOLLOW };
        // SAFETY: a descriptor we own and a valid C string.
        owned(unsafe { libc::openat(base.as_raw_fd(), c.as_ptr(), flags) } as libc::c_long)
    }
}

fn fstat(fd: &OwnedFd) -> Result<libc::stat, Errno> {
    // SAFETY: a zeroed stat is a valid buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(last());
    }
    Ok(st)
}

fn self_path(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

fn sys_result(r: libc::c_int) -> Result<i64, Errno> {
    if r < 0 { Err(last()) } else { Ok(i64::from(r)) }
}

fn dispatch(t: &Target<'_>, nr: u32, a: &[u64; 6]) -> Result<i64, Errno> {
    let arch = t.ctx.policy.arch;
    let is = |s: Sys| arch.nr(s) == Some(nr);
    if is(Sys::Connect) {
        return connect(t, a);
    }
    if is(Sys::Bind) {
        return bind(t, a);
    }
    if is(Sys::Chmod) {
        return chmod(t, path_obj(a[0], true), a[1]);
    }
    if is(Sys::Fchmod) {
        return chmod(t, Object::Fd(a[0]), a[1]);
    }
    if is(Sys::Fchmodat) {
        return chmod(t, at_obj(a[0], a[1], 0), a[2]);
    }
    if is(Sys::Fchmodat2) {
        return chmod(t, at_obj(a[0], a[1], a[3]), a[2]);
    }
    if is(Sys::Chown) {
        return chown(t, path_obj(a[0], true), a[1], a[2]);
    }
    if is(Sys::Lchown) {
        return chown(t, path_obj(a[0], false), a[1], a[2]);
    }
    if is(Sys::Fchown) {
        return chown(t, Object::Fd(a[0]), a[1], a[2]);
    }
    if is(Sys::Fchownat) {
        return chown(t, at_obj(a[0], a[1], a[4]), a[2], a[3]);
    }
    if is(Sys::Utime) {
        let times = read_timevals(t, a[1], true)?;
        return utimens(t, path_obj(a[0], true), times);
    }
    if is(Sys::Utimes) {
        let times = read_timevals(t, a[1], false)?;
        return utimens(t, path_obj(a[0], true), times);
    }
    if is(Sys::Futimesat) {
        let times = read_timevals(t, a[2], false)?;
        return utimens(t, at_obj(a[0], a[1], 0), times);
    }
    if is(Sys::Utimensat) || is(Sys::UtimensatTime64) {
        let times = read_timespecs(t, a[2], is(Sys::UtimensatTime64))?;
        let obj = if a[1] == 0 {
            // futimens: the descriptor itself.
            Object::Fd(a[0])
        } else {
            at_obj(a[0], a[1], a[3])
        };
        return utimens(t, obj, times);
    }
    if is(Sys::Setxattr) {
        return setxattr(t, path_obj(a[0], true), a[1], a[2], a[3], a[4]);
    }
    if is(Sys::Lsetxattr) {
        return setxattr(t, path_obj(a[0], false), a[1], a[2], a[3], a[4]);
    }
    if is(Sys::Fsetxattr) {
        return setxattr(t, Object::Fd(a[0]), a[1], a[2], a[3], a[4]);
    }
    if is(Sys::Removexattr) {
        return removexattr(t, path_obj(a[0], true), a[1]);
    }
    if is(Sys::Lremovexattr) {
        return removexattr(t, path_obj(a[0], false), a[1]);
    }
    if is(Sys::Fremovexattr) {
        return removexattr(t, Object::Fd(a[0]), a[1]);
    }
    // setxattrat, removexattrat, file_setattr: libcs fall back to the
    // calls above when these are missing.
    Err(libc::ENOSYS)
}

/// Handles one notification and sends the answer.
pub(crate) fn serve(ctx: &Ctx, n: &libc::seccomp_notif) {
    // The bind handler changes the umask: keep that to this thread.
    // SAFETY: flags only.
    unsafe { libc::unshare(libc::CLONE_FS) };
    let pid = n.pid as libc::pid_t;
    // SAFETY: plain syscall; returns a new descriptor or -1.
    let pidfd = owned(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) });
    let result = match pidfd {
        Ok(pidfd) => {
            let t = Target {
                ctx,
                id: n.id,
                pid,
                pidfd,
            };
            match t.valid() {
                Ok(()) => dispatch(&t, n.data.nr as u32, &n.data.args),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    let (val, error) = match result {
        Ok(v) => (v, 0),
        Err(e) => (0, -e),
    };
    let mut resp = libc::seccomp_notif_resp {
        id: n.id,
        val,
        error,
        flags: 0,
    };
    // SAFETY: `resp` is a valid seccomp_notif_resp; a failure means the
    // caller is gone, which needs no answer.
    unsafe {
        libc::ioctl(
            ctx.listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        );
    }
}

/// Receives one notification, if one is pending.
pub(crate) fn receive(listener: &OwnedFd) -> Option<libc::seccomp_notif> {
    // SAFETY: an all-zero seccomp_notif is what RECV requires.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: `n` is a valid buffer for RECV.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut n as *mut libc::seccomp_notif,
        )
    };
    (r == 0).then_some(n)
}

/// Shared for the handler threads.
pub(crate) type Shared = Arc<Ctx>;
