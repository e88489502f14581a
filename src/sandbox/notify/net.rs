//! connect and bind: unix sockets by the file checked, TCP by port.
//!
//! The network half of the supervisor: the policy's rules for unix
//! sockets (bound by the sandbox, named by `allowUnixSockets`, abstract)
//! and TCP ports, and the kernel's own record (sock_diag) of which socket
//! file a bind made. It shares only the calling task's reader ([`Target`])
//! and the report of refusals with the file half.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::{Errno, Inet, Target, Unix, fstat, last, owned, self_path, sys_result};

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

pub(super) fn connect(t: &Target<'_>, args: &[u64; 6]) -> Result<i64, Errno> {
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

pub(super) fn bind(t: &Target<'_>, args: &[u64; 6]) -> Result<i64, Errno> {
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
