//! The sandbox server: one launcher process started at tern's first
//! sandboxed command (from the descriptor of tern's own binary), which
//! forks a fresh launcher per command instead of tern exec'ing one. The
//! work is the same (`launch::launch_with`); what is saved is an exec and
//! the start of a new process image each time, most of the sandbox's
//! cost per command.
//!
//! It is single-threaded, so each fork may run ordinary code. A request
//! is one message on a socket pair: a memfd holding the spec, shell,
//! arguments, working directory and environment, with the command's
//! stdin, its output (stdout and stderr are one pipe, so what it writes
//! arrives in order), the end-report pipe and, when asked, one more
//! descriptor the command gets at a number the request names. The reply is the
//! new launcher's pid (tern signals it to stop the command). The server
//! ends when tern closes the socket or dies; the launchers it forked stop
//! their commands when it goes (parent-death signal).

use std::ffi::{OsStr, OsString};
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::Mutex;

use super::LaunchSpec;
use super::launch::{recv_msg, say, send_msg, socketpair};

/// The hidden first argument that starts the server.
pub const SERVER_ARG: &str = "__tern_sandbox_server";

/// Length-prefixed byte strings: arguments and environments may hold
/// any bytes.
fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn take<'a>(buf: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let b = buf.get(4..4 + len)?;
    *buf = &buf[4 + len..];
    Some(b)
}

struct Request {
    spec: LaunchSpec,
    shell: OsString,
    args: Vec<OsString>,
    cwd: OsString,
    env: Vec<(OsString, OsString)>,
    /// The number the extra descriptor gets in the command (-1: none).
    keep_fd: i32,
}

fn encode(r: &Request) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, r.spec.encode().as_bytes());
    put(&mut out, r.shell.as_bytes());
    put(&mut out, r.cwd.as_bytes());
    put(&mut out, &r.keep_fd.to_le_bytes());
    put(&mut out, &(r.args.len() as u32).to_le_bytes());
    for a in &r.args {
        put(&mut out, a.as_bytes());
    }
    put(&mut out, &(r.env.len() as u32).to_le_bytes());
    for (k, v) in &r.env {
        put(&mut out, k.as_bytes());
        put(&mut out, v.as_bytes());
    }
    out
}

fn decode(mut buf: &[u8]) -> Option<Request> {
    let b = &mut buf;
    let spec = LaunchSpec::decode(std::str::from_utf8(take(b)?).ok()?)?;
    let shell = OsString::from_vec(take(b)?.to_vec());
    let cwd = OsString::from_vec(take(b)?.to_vec());
    let keep_fd = i32::from_le_bytes(take(b)?.try_into().ok()?);
    let count = |b: &mut &[u8]| -> Option<usize> {
        Some(u32::from_le_bytes(take(b)?.try_into().ok()?) as usize)
    };
    let n = count(b)?;
    let mut args = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        args.push(OsString::from_vec(take(b)?.to_vec()));
    }
    let n = count(b)?;
    let mut env = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let k = OsString::from_vec(take(b)?.to_vec());
        let v = OsString::from_vec(take(b)?.to_vec());
        env.push((k, v));
    }
    Some(Request {
        spec,
        shell,
        args,
        cwd,
        env,
        keep_fd,
    })
}

/// The server's entry point: `tern __tern_sandbox_server <fd>`.
pub fn serve(args: &[OsString]) -> i32 {
    let Some(fd) = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|s| s.parse::<RawFd>().ok())
    else {
        say("bad server arguments");
        return 126;
    };
    // SAFETY: the descriptor was passed to us for this purpose.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fcntl, prctl and signal take integers only.
    unsafe {
        libc::fcntl(sock.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // Terminal signals are tern's to act on, not the server's.
        for s in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
            libc::signal(s, libc::SIG_IGN);
        }
    }
    populate_image();
    // Launchers are reaped as they end (so their resource use is counted
    // where it belongs): SIGCHLD through a signalfd, beside the socket.
    let old_mask = match super::supervise::block_signals() {
        Ok(m) => m,
        Err(e) => {
            say(&format!("cannot block signals: {e}"));
            return 126;
        }
    };
    let Some(sigfd) = child_signals() else {
        say("cannot watch child processes");
        return 126;
    };
    loop {
        let mut fds = [
            libc::pollfd {
                fd: sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: a valid array of two pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if fds[1].revents & libc::POLLIN != 0 {
            drain(&sigfd);
            reap();
        }
        if fds[0].revents == 0 {
            continue;
        }
        let Some((_, mut fds)) = recv_msg(&sock, 16) else {
            // tern closed its end (or died): done.
            return 0;
        };
        if fds.len() != 5 && fds.len() != 6 {
            let _ = send_msg(&sock, b"E", &[]);
            continue;
        }
        let memfd = fds.remove(0);
        let mut text = Vec::new();
        let ok = std::fs::File::from(memfd).read_to_end(&mut text).is_ok();
        let Some(req) = ok.then(|| decode(&text)).flatten() else {
            let _ = send_msg(&sock, b"E", &[]);
            continue;
        };
        // SAFETY: single-threaded, so the child may run ordinary code.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            drop(sock);
            drop(sigfd);
            // SAFETY: restoring the mask saved above.
            unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut()) };
            child(req, fds);
        }
        drop(fds);
        let reply = if pid > 0 {
            format!("P{pid}")
        } else {
            "E".to_string()
        };
        let _ = send_msg(&sock, reply.as_bytes(), &[]);
    }
}

/// Maps every page of tern's own image now, so that each forked launcher
/// inherits the page tables instead of faulting its code in again (each
/// fault costs microseconds, and a launcher touches hundreds of pages).
fn populate_image() {
    const MADV_POPULATE_READ: libc::c_int = 22;
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
    let exe = exe.to_string_lossy();
    for line in maps.lines().filter(|l| l.ends_with(&*exe)) {
        let Some((range, _)) = line.split_once(' ') else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else {
            continue;
        };
        // SAFETY: advice on a mapping of our own image; it changes no
        // contents (a kernel without the advice answers EINVAL).
        unsafe { libc::madvise(a as *mut libc::c_void, b - a, MADV_POPULATE_READ) };
    }
}

/// Ignored by the server, restored for each launcher.
const SIGNALS: &[libc::c_int] = &[libc::SIGINT, libc::SIGQUIT, libc::SIGHUP];

fn child_signals() -> Option<OwnedFd> {
    // SAFETY: sigemptyset/sigaddset fill a local set; signalfd returns a
    // new descriptor or -1.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    }
}

fn drain(sigfd: &OwnedFd) {
    let mut buf = [0u8; 128];
    // SAFETY: reading into a local buffer; the descriptor is non-blocking.
    while unsafe { libc::read(sigfd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

fn reap() {
    loop {
        let mut st = 0;
        // SAFETY: WNOHANG never blocks.
        if unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } <= 0 {
            return;
        }
    }
}

/// A forked launcher for one command: takes over the command's stdio and
/// working directory, then does what an exec'd one does (the command's
/// environment is passed to its exec, not set here).
fn child(req: Request, fds: Vec<OwnedFd>) -> ! {
    // SAFETY: setpgid, dup2 and chdir on descriptors and a path we own.
    unsafe {
        for s in SIGNALS {
            libc::signal(*s, libc::SIG_DFL);
        }
        libc::setpgid(0, 0);
        for (i, f) in fds.iter().take(3).enumerate() {
            libc::dup2(f.as_raw_fd(), i as RawFd);
        }
        let cwd = std::ffi::CString::new(req.cwd.as_bytes()).unwrap_or_default();
        if libc::chdir(cwd.as_ptr()) != 0 {
            say(&format!(
                "cannot enter {}: {}",
                Path::new(&req.cwd).display(),
                std::io::Error::last_os_error()
            ));
            std::process::exit(126);
        }
    }
    let mut fds = fds;
    // stdin, stdout, stderr, the end pipe, and maybe the extra one.
    if fds.len() == 5
        && let Some(extra) = fds.pop()
        && req.keep_fd > 2
        && !fds.iter().any(|f| f.as_raw_fd() == req.keep_fd)
    {
        // SAFETY: dup2 onto a number the command expects (no descriptor
        // still needed has it); the copy is not close-on-exec, so the
        // shell inherits it. Already there, only the flag is cleared.
        unsafe {
            if extra.as_raw_fd() == req.keep_fd {
                libc::fcntl(req.keep_fd, libc::F_SETFD, 0);
                std::mem::forget(extra);
            } else {
                libc::dup2(extra.as_raw_fd(), req.keep_fd);
            }
        }
    }
    let end = fds.pop();
    drop(fds);
    let status = end.map(|e| {
        let fd = e.as_raw_fd();
        std::mem::forget(e);
        fd
    });
    let code = super::launch::launch_with(&req.spec, &req.shell, &req.args, Some(&req.env), status);
    std::process::exit(code)
}

/// A command started by the server.
pub struct Spawned {
    /// The launcher's pid (also its process group).
    pub pid: u32,
    /// stdout and stderr, one pipe.
    pub output: std::fs::File,
    /// The launcher's end-of-command report.
    pub end: OwnedFd,
}

struct Conn {
    sock: OwnedFd,
    server: std::process::Child,
}

static CONN: Mutex<Option<Conn>> = Mutex::new(None);

fn start() -> std::io::Result<Conn> {
    let exe = super::launcher().ok_or_else(|| std::io::Error::other("no launcher"))?;
    let (ours, theirs) = socketpair()?;
    let mut cmd = std::process::Command::new(exe);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // The server reads no variable (each command's environment comes with
    // its request), so it holds none of tern's credentials either.
    cmd.env_clear()
        .arg(SERVER_ARG)
        .arg(theirs.as_raw_fd().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    crate::sys::inherit_in_child(&mut cmd, theirs.as_raw_fd());
    let server = cmd.spawn()?;
    drop(theirs);
    Ok(Conn { sock: ours, server })
}

fn memfd(bytes: &[u8]) -> std::io::Result<std::fs::File> {
    // SAFETY: a valid C string; returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"tern-request".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: memfd_create returned a descriptor we now own.
    let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    f.write_all(bytes)?;
    f.rewind()?;
    Ok(f)
}

/// Starts `shell -c command` in the sandbox through the server (started
/// on first use, restarted once if it is gone). `keep`: a descriptor of
/// tern's the command gets, and the number it gets it at.
pub fn spawn(
    spec: &LaunchSpec,
    shell: &OsStr,
    args: &[OsString],
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    keep: Option<(RawFd, RawFd)>,
) -> std::io::Result<Spawned> {
    let req = Request {
        spec: LaunchSpec {
            status_fd: None,
            ..spec.clone()
        },
        shell: shell.to_os_string(),
        args: args.to_vec(),
        cwd: cwd.as_os_str().to_os_string(),
        env,
        keep_fd: keep.map_or(-1, |(_, at)| at),
    };
    let body = encode(&req);
    let mut conn = CONN
        .lock()
        .map_err(|_| std::io::Error::other("sandbox server lock"))?;
    for attempt in 0..2 {
        if conn.is_none() {
            *conn = Some(start()?);
        }
        let Some(c) = conn.as_mut() else { continue };
        // stdin is /dev/null (so `rg TODO` searches files, not stdin), or
        // where there is none a pipe at end of file at once.
        let in_r: OwnedFd = match std::fs::File::open("/dev/null") {
            Ok(f) => f.into(),
            Err(_) => crate::sys::pipe()?.0,
        };
        let (out_r, out_w) = crate::sys::pipe()?;
        let (end_r, end_w) = crate::sys::pipe()?;
        let m = memfd(&body)?;
        let mut fds = vec![
            m.as_raw_fd(),
            in_r.as_raw_fd(),
            out_w.as_raw_fd(),
            // stderr is stdout's pipe: one stream, in the order written.
            out_w.as_raw_fd(),
            end_w.as_raw_fd(),
        ];
        fds.extend(keep.map(|(fd, _)| fd));
        let sent = send_msg(&c.sock, b"R", &fds);
        let reply = sent.ok().and_then(|_| recv_msg(&c.sock, 32));
        match reply.as_ref().map(|(d, _)| d.as_slice()) {
            Some([b'P', pid @ ..]) => {
                let pid = std::str::from_utf8(pid)
                    .ok()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| std::io::Error::other("bad reply from the sandbox server"))?;
                return Ok(Spawned {
                    pid,
                    output: std::fs::File::from(out_r),
                    end: end_r,
                });
            }
            Some(_) => {
                return Err(std::io::Error::other(
                    "the sandbox server refused the command",
                ));
            }
            None if attempt == 0 => {
                // The server is gone: reap it and start another.
                if let Some(mut old) = conn.take() {
                    let _ = old.server.kill();
                    let _ = old.server.wait();
                }
            }
            None => {}
        }
    }
    Err(std::io::Error::other("the sandbox server does not answer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_with_any_bytes() {
        let r = Request {
            spec: LaunchSpec {
                policy: super::super::SandboxPolicy::new(vec!["/w".into()]),
                read_only: vec![],
                pins: vec![],
                grace: std::time::Duration::from_millis(300),
                status_fd: None,
            },
            shell: "bash".into(),
            args: vec!["-c".into(), OsString::from_vec(vec![b'e', 0xff, b'x'])],
            cwd: "/w".into(),
            env: vec![("K".into(), OsString::from_vec(vec![0xfe]))],
            keep_fd: 150,
        };
        let back = decode(&encode(&r)).unwrap();
        assert_eq!(back.keep_fd, 150);
        assert_eq!(back.args, r.args);
        assert_eq!(back.env, r.env);
        assert_eq!(back.spec, r.spec);
        assert!(decode(&encode(&r)[..10]).is_none());
    }
}
