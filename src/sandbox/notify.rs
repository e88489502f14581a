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
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::seccomp::{Inet, Unix};
use super::syscalls::{Arch, Sys};

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

fn sun(path: &[u8]) -> Result<(libc::sockaddr_un, libc::socklen_t), Errno> {
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    if path.len() >= a.sun_path.len() {
        return Err(libc::ENAMETOOLONG);
    }
    for (d, s) in a.sun_path.iter_mut().zip(path) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + path.len() + 1;
    Ok((a, len as libc::socklen_t))
}

fn sock_domain(fd: &OwnedFd) -> Result<i32, Errno> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` describe a c_int buffer.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(if last() == libc::ENOTSOCK {
            libc::ENOTSOCK
        } else {
            last()
        });
    }
    Ok(v)
}

fn sys_result(r: libc::c_int) -> Result<i64, Errno> {
    if r < 0 { Err(last()) } else { Ok(i64::from(r)) }
}

/// The address bytes a connect or bind passed, bounded like the kernel's.
fn address(t: &Target<'_>, ptr: u64, len: u64) -> Result<Vec<u8>, Errno> {
    let len = len as u32 as usize;
    if len > std::mem::size_of::<libc::sockaddr_storage>() {
        return Err(libc::EINVAL);
    }
    t.read(ptr, len)
}

fn family(addr: &[u8]) -> Option<i32> {
    (addr.len() >= 2).then(|| i32::from(u16::from_ne_bytes([addr[0], addr[1]])))
}

/// Connects or binds `fd` to the raw address bytes (as the caller gave).
fn raw(fd: &OwnedFd, addr: &[u8], bind: bool) -> Result<i64, Errno> {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` fits in `storage` (checked by `address`).
    unsafe {
        std::ptr::copy_nonoverlapping(
            addr.as_ptr(),
            (&mut storage as *mut libc::sockaddr_storage).cast::<u8>(),
            addr.len(),
        );
    }
    let p = (&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr>();
    let len = addr.len() as libc::socklen_t;
    // SAFETY: `p` points at `len` valid bytes.
    sys_result(unsafe {
        if bind {
            libc::bind(fd.as_raw_fd(), p, len)
        } else {
            libc::connect(fd.as_raw_fd(), p, len)
        }
    })
}

fn connect_path(fd: &OwnedFd, path: &str, bind: bool) -> Result<i64, Errno> {
    let (a, len) = sun(path.as_bytes())?;
    let p = (&a as *const libc::sockaddr_un).cast::<libc::sockaddr>();
    // SAFETY: `p` points at a valid sockaddr_un of `len` bytes.
    sys_result(unsafe {
        if bind {
            libc::bind(fd.as_raw_fd(), p, len)
        } else {
            libc::connect(fd.as_raw_fd(), p, len)
        }
    })
}

/// Where an IPv4/IPv6 address points, as (ip, port).
fn inet(addr: &[u8]) -> Option<(std::net::IpAddr, u16)> {
    match family(addr)? {
        libc::AF_INET if addr.len() >= 8 => {
            let port = u16::from_be_bytes([addr[2], addr[3]]);
            let ip = std::net::Ipv4Addr::new(addr[4], addr[5], addr[6], addr[7]);
            Some((ip.into(), port))
        }
        libc::AF_INET6 if addr.len() >= 24 => {
            let port = u16::from_be_bytes([addr[2], addr[3]]);
            let mut o = [0u8; 16];
            o.copy_from_slice(&addr[8..24]);
            Some((std::net::Ipv6Addr::from(o).into(), port))
        }
        _ => None,
    }
}

fn connect(t: &Target<'_>, args: &[u64; 6]) -> Result<i64, Errno> {
    let fd = t.fd(args[0])?;
    let addr = address(t, args[1], args[2])?;
    let domain = sock_domain(&fd)?;
    t.valid()?;
    let p = &t.ctx.policy;
    match domain {
        libc::AF_UNIX if family(&addr) == Some(libc::AF_UNIX) && addr.len() > 2 => {
            let path = &addr[2..];
            if p.unix == Unix::All {
                return raw(&fd, &addr, false);
            }
            if path[0] == 0 {
                if p.abstract_scoped || p.netns {
                    // The kernel confines the supervisor's own reach.
                    return raw(&fd, &addr, false);
                }
                t.ctx.report(
                    "refused a connection to an abstract unix socket (this kernel cannot scope them to the sandbox)".into(),
                );
                return Err(libc::EACCES);
            }
            let name = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
            let sock = t.open(libc::AT_FDCWD as u32 as u64, name, true)?;
            let st = fstat(&sock)?;
            if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
                return Err(libc::ECONNREFUSED);
            }
            let id = (st.st_dev, st.st_ino);
            let ours = t
                .ctx
                .state
                .lock()
                .map(|s| s.bound.contains(&id))
                .unwrap_or(false);
            if !ours && !p.unix_allowed.contains(&id) {
                t.ctx.report(format!(
                    "refused a connection to the unix socket {} (made outside the sandbox; sandbox.network.allowUnixSockets can allow it)",
                    String::from_utf8_lossy(name)
                ));
                return Err(libc::EACCES);
            }
            t.valid()?;
            connect_path(&fd, &self_path(&sock), false)
        }
        libc::AF_INET | libc::AF_INET6 => {
            let Some((ip, port)) = inet(&addr) else {
                // AF_UNSPEC (disconnect) or a malformed address: nothing
                // is reached, the kernel answers.
                return raw(&fd, &addr, false);
            };
            let allowed = p.inet == Inet::Open
                || p.tcp_ports.contains(&port)
                || (p.proxy_port == Some(port) && ip.is_loopback());
            if !allowed {
                t.ctx.report(if p.proxy_port.is_some() {
                    format!(
                        "refused a direct connection to {ip}:{port}; only the proxy (HTTP_PROXY) and sandbox.network.allowedDomains lead out"
                    )
                } else {
                    format!("refused a connection to {ip}:{port} (the sandbox's network is off)")
                });
                return Err(libc::EACCES);
            }
            raw(&fd, &addr, false)
        }
        _ => raw(&fd, &addr, false),
    }
}

/// The umask of `pid`, from /proc (bind creates its file with it).
fn umask_of(pid: libc::pid_t) -> Option<libc::mode_t> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Umask:"))?;
    libc::mode_t::from_str_radix(line.trim_start_matches("Umask:").trim(), 8).ok()
}

fn bind(t: &Target<'_>, args: &[u64; 6]) -> Result<i64, Errno> {
    let fd = t.fd(args[0])?;
    let addr = address(t, args[1], args[2])?;
    let domain = sock_domain(&fd)?;
    t.valid()?;
    let p = &t.ctx.policy;
    match domain {
        libc::AF_UNIX if family(&addr) == Some(libc::AF_UNIX) && addr.len() > 2 => {
            let path = &addr[2..];
            if p.unix == Unix::All {
                return raw(&fd, &addr, true);
            }
            if path[0] == 0 {
                if p.netns {
                    return raw(&fd, &addr, true);
                }
                t.ctx.report(
                    "refused to bind an abstract unix socket (its name would be visible to processes outside the sandbox); use a socket file".into(),
                );
                return Err(libc::EACCES);
            }
            let name = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
            let (dir, file): (&[u8], &[u8]) = match name.iter().rposition(|b| *b == b'/') {
                Some(0) => (b"/", &name[1..]),
                Some(i) => (&name[..i], &name[i + 1..]),
                None => (b".", name),
            };
            if file.is_empty() || file.contains(&0) {
                return Err(libc::EINVAL);
            }
            let dirfd = t.open(libc::AT_FDCWD as u32 as u64, dir, true)?;
            let target = format!("{}/{}", self_path(&dirfd), String::from_utf8_lossy(file));
            if std::str::from_utf8(file).is_err() {
                return Err(libc::EINVAL);
            }
            // The file is created with the caller's umask, not ours; this
            // thread has its own fs state (see `serve`).
            if let Some(mask) = umask_of(t.pid) {
                // SAFETY: umask cannot fail.
                unsafe { libc::umask(mask) };
            }
            t.valid()?;
            let r = connect_path(&fd, &target, true)?;
            match bound_inode(&fd) {
                Some(id) => {
                    if let Ok(mut s) = t.ctx.state.lock() {
                        s.bound.insert(id);
                    }
                }
                None => t.ctx.report(
                    "cannot tell which socket file a bind made (no sock_diag in this kernel); connections to it will be refused".into(),
                ),
            }
            Ok(r)
        }
        libc::AF_INET | libc::AF_INET6 if p.inet != Inet::Open => {
            t.ctx.report(
                "refused to bind a TCP port (the sandbox's network is off or limited)".into(),
            );
            Err(libc::EACCES)
        }
        _ => raw(&fd, &addr, true),
    }
}

/// (dev, ino) of the file a unix socket is bound to, from the kernel's
/// own record (sock_diag), so a rename race cannot substitute another.
fn bound_inode(sock: &OwnedFd) -> Option<(u64, u64)> {
    let ino = fstat(sock).ok()?.st_ino as u32;
    // SAFETY: plain socket creation.
    let nl = owned(unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    } as libc::c_long)
    .ok()?;
    // nlmsghdr (16) + unix_diag_req (24).
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const UDIAG_SHOW_VFS: u32 = 0x02;
    const UNIX_DIAG_VFS: u16 = 1;
    let mut req = [0u8; 40];
    req[0..4].copy_from_slice(&40u32.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    // unix_diag_req: family, protocol, pad, states, ino, show, cookie[2].
    req[16] = libc::AF_UNIX as u8;
    req[24..28].copy_from_slice(&ino.to_ne_bytes());
    req[28..32].copy_from_slice(&UDIAG_SHOW_VFS.to_ne_bytes());
    req[32..40].copy_from_slice(&[0xff; 8]); // no cookie
    // SAFETY: `req` is a valid buffer of its length.
    if unsafe { libc::send(nl.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    // SAFETY: `buf` is a valid buffer of its length.
    let n = unsafe { libc::recv(nl.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 16 + 16 {
        return None;
    }
    let msg = &buf[..n as usize];
    let kind = u16::from_ne_bytes([msg[4], msg[5]]);
    if kind != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    // unix_diag_msg is 16 bytes after the header; attributes follow.
    let mut at = 16 + 16;
    while at + 4 <= msg.len() {
        let len = usize::from(u16::from_ne_bytes([msg[at], msg[at + 1]]));
        let ty = u16::from_ne_bytes([msg[at + 2], msg[at + 3]]);
        if len < 4 || at + len > msg.len() {
            break;
        }
        if ty == UNIX_DIAG_VFS && len >= 12 {
            let vino = u32::from_ne_bytes([msg[at + 4], msg[at + 5], msg[at + 6], msg[at + 7]]);
            let vdev = u32::from_ne_bytes([msg[at + 8], msg[at + 9], msg[at + 10], msg[at + 11]]);
            // The kernel's own encoding (major << 20 | minor).
            let dev = libc::makedev(vdev >> 20, vdev & 0xf_ffff);
            return Some((dev as u64, u64::from(vino)));
        }
        at += (len + 3) & !3;
    }
    None
}

/// How a metadata call names its object.
enum Object {
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

fn path_obj(path: u64, follow: bool) -> Object {
    Object::Path {
        dirfd: AT_FDCWD,
        path,
        follow,
        empty_ok: false,
    }
}

fn at_obj(dirfd: u64, path: u64, flags: u64) -> Object {
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

fn chmod(t: &Target<'_>, obj: Object, mode: u64) -> Result<i64, Errno> {
    let (fd, st) = object(t, &obj)?;
    if is_symlink(&st) {
        return Err(libc::EOPNOTSUPP);
    }
    t.valid()?;
    let c = CString::new(self_path(&fd)).map_err(|_| libc::EINVAL)?;
    // SAFETY: a valid C string naming our own descriptor.
    sys_result(unsafe { libc::chmod(c.as_ptr(), mode as libc::mode_t) })
}

fn chown(t: &Target<'_>, obj: Object, uid: u64, gid: u64) -> Result<i64, Errno> {
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
fn utimens(t: &Target<'_>, obj: Object, times: Option<[libc::timespec; 2]>) -> Result<i64, Errno> {
    let (fd, _) = object(t, &obj)?;
    t.valid()?;
    let p = times.as_ref().map_or(std::ptr::null(), |ts| ts.as_ptr());
    // SAFETY: `p` is null or points at two timespecs.
    sys_result(unsafe { libc::utimensat(fd.as_raw_fd(), c"".as_ptr(), p, libc::AT_EMPTY_PATH) })
}

fn read_timespecs(
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
fn read_timevals(
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

fn setxattr(
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

fn removexattr(t: &Target<'_>, obj: Object, name: u64) -> Result<i64, Errno> {
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

/// Resolves `allowUnixSockets` paths to the socket inodes they name now.
pub(crate) fn socket_ids(paths: &[PathBuf]) -> Vec<(u64, u64)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    paths
        .iter()
        .filter_map(|p: &PathBuf| std::fs::metadata(Path::new(p)).ok())
        .filter(|m| m.file_type().is_socket())
        .map(|m| (m.dev(), m.ino()))
        .collect()
}

/// Shared for the handler threads.
pub(crate) type Shared = Arc<Ctx>;
