//! The launcher: `tern __tern_sandbox <spec> <shell> -c <command>`, a
//! fresh single-threaded process that builds the sandbox, forks the
//! command and supervises it. In order:
//!
//! 1. dies with tern (SIGTERM when its parent goes), `no_new_privs`;
//! 2. enters a mount namespace (a user namespace too when not root) and
//!    makes everything outside the writable roots read-only, protected
//!    paths read-only and `denyRead` paths hidden (`ns.rs`);
//! 3. the outer landlock layer: writes only beneath the roots (`landlock.rs`);
//! 4. forks. The child: a network namespace for the domain proxy, the
//!    inner landlock layer (scopes, TCP ports), a new session (no
//!    controlling terminal to inject keystrokes into), no capabilities,
//!    the seccomp filter, whose notification descriptor it hands to the
//!    parent; then it execs the shell.
//! 5. The parent becomes the supervisor (`supervise.rs`) and exits with
//!    the shell's status once nothing of the command is left.
//!
//! Fail closed: "the kernel has no landlock" (or seccomp) stops the
//! command only with `failIfUnavailable` — unless there is no mount
//! namespace either, when nothing would restrict writes and the command
//! never runs; any other error — a rule that cannot be added, a mount
//! that fails — always stops it, with its reason.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::seccomp::{self, Inet, Unix};
use super::{LaunchSpec, UnixSockets, landlock, notify, ns, proxy, supervise};

/// Device files a shell writes to.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/tty",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/full",
];

/// Writes a line to the command's stderr (the launcher's only output;
/// the model reads it with the command's).
pub(crate) fn say(message: &str) {
    let line = format!("tern sandbox: {message}\n");
    // SAFETY: writing a valid buffer to fd 2; a failure has nowhere to go.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}

static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// `say`, once per distinct message.
pub(crate) fn say_once(message: &str) {
    let fresh = SAID
        .lock()
        .map(|mut s| {
            if s.iter().any(|m| m == message) {
                false
            } else {
                s.push(message.to_string());
                true
            }
        })
        .unwrap_or(true);
    if fresh {
        say(message);
    }
}

/// Exit statuses of the launcher itself.
const COULD_NOT_SANDBOX: i32 = 126;
const COULD_NOT_EXEC: i32 = 127;

/// Splits paths into existing ones (canonical where they can be made so)
/// and missing ones. A path that exists but cannot be resolved stays as
/// given: whatever uses it then fails on it, and says so.
fn existing(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut have = Vec::new();
    let mut missing = Vec::new();
    for p in paths {
        let found = match std::fs::canonicalize(p) {
            Ok(c) => c,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(p).is_err() =>
            {
                missing.push(p.clone());
                continue;
            }
            Err(_) => p.clone(),
        };
        if !have.contains(&found) {
            have.push(found);
        }
    }
    (have, missing)
}

/// Block devices under /dev: reading one as root reads any file, so they
/// are hidden whenever `denyRead` is set.
fn block_devices() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir("/dev")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        .map(|e| e.path())
        .collect()
}

/// A denied file with another hard link would be readable under the
/// other name, which tern cannot find: refuse to run instead.
fn linked_denied(denied: &[PathBuf]) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let mut budget = 20_000usize;
    let mut stack: Vec<PathBuf> = denied.to_vec();
    while let Some(p) = stack.pop() {
        if budget == 0 {
            say("warning: a denyRead directory is too large to check for hard links");
            return None;
        }
        budget -= 1;
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        } else if m.is_file() && m.nlink() > 1 {
            return Some(format!(
                "{} is in sandbox.filesystem.denyRead but has {} hard links; the other names would show it. Remove them (find / -samefile {}) and run the command again",
                p.display(),
                m.nlink(),
                p.display()
            ));
        }
    }
    None
}

pub(crate) fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid two-element array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends `flags` and up to two descriptors over the handoff socket.
fn send_fds_to(sock: std::os::fd::BorrowedFd<'_>, flags: u8, fds: &[RawFd]) -> std::io::Result<()> {
    send_msg_raw(sock.as_raw_fd(), &[flags], fds)
}

/// Sends one message with `fds` attached (SCM_RIGHTS).
pub(crate) fn send_msg(sock: &OwnedFd, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    send_msg_raw(sock.as_raw_fd(), data, fds)
}

fn send_msg_raw(sock: RawFd, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let mut data = data.to_vec();
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32) };
    let mut control = vec![0u8; space as usize];
    // SAFETY: an all-zero msghdr is valid; fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: `control` is large enough for one cmsg holding `fds`.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c).cast::<RawFd>(),
                fds.len(),
            );
        }
    }
    // SAFETY: `msg` describes valid buffers.
    if unsafe { libc::sendmsg(sock, &msg, 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Receives what `send_fds` sent; `None` when the child closed without.
fn recv_fds(sock: &OwnedFd) -> Option<(u8, Vec<OwnedFd>)> {
    let (data, fds) = recv_msg(sock, 1)?;
    (data.len() == 1).then(|| (data[0], fds))
}

/// Receives one message of at most `max` bytes and its descriptors;
/// `None` at end of file or on error.
pub(crate) fn recv_msg(sock: &OwnedFd, max: usize) -> Option<(Vec<u8>, Vec<OwnedFd>)> {
    let mut data = vec![0u8; max];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: max,
    };
    let mut control = [0u8; 64];
    // SAFETY: an all-zero msghdr is valid; fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() as _;
    // SAFETY: `msg` describes valid buffers; CMSG_CLOEXEC for what arrives.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n <= 0 {
        return None;
    }
    data.truncate(n as usize);
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(p.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Some((data, fds))
}

const HANDOFF_NETNS: u8 = 1;

fn loopback_listener(port: u16) -> std::io::Result<std::net::TcpListener> {
    std::net::TcpListener::bind(("127.0.0.1", port))
}

/// Everything the child needs after fork.
struct ChildPlan<'a> {
    spec: &'a LaunchSpec,
    rules: seccomp::Rules,
    /// Built before the clone, so the child only installs it.
    filter: &'a Result<Vec<seccomp::Insn>, seccomp::InstallError>,
    scope_abstract: bool,
    /// Domain proxy: the port, and whether to try a network namespace.
    proxy: Option<(u16, bool)>,
    keep_caps: &'a [u32],
    old_mask: libc::sigset_t,
    /// The child's end of the handoff socket.
    handoff: RawFd,
    shell: &'a std::ffi::OsStr,
    args: &'a [OsString],
    /// The command's whole environment (else the launcher's own).
    env: Option<&'a [(OsString, OsString)]>,
}

/// Ends the child without running exit handlers or flushing buffers,
/// which belong to the launcher whose memory it shares.
fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(code) }
}

/// The child's entry point for `clone`: runs in the launcher's address
/// space (CLONE_VM) while the launcher waits (CLONE_VFORK), like
/// posix_spawn's child. It only reads the plan, allocates and frees its
/// own memory, and ends by exec or exit; its descriptors, credentials,
/// landlock domain and seccomp filter are its own.
extern "C" fn child_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the plan, which the launcher keeps alive
    // while it waits for this child to exec or exit.
    let plan = unsafe { &*(arg as *const ChildPlan<'_>) };
    child(plan)
}

/// The child's side: never returns.
fn child(p: &ChildPlan<'_>) -> ! {
    use std::os::unix::process::CommandExt;
    // SAFETY: restoring the mask saved before fork.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &p.old_mask, std::ptr::null_mut()) };
    let fail = |m: String| -> ! {
        say(&m);
        exit_now(COULD_NOT_SANDBOX)
    };
    let mut flags = 0u8;
    let mut ns_listener = None;
    if let Some((port, try_netns)) = p.proxy
        && try_netns
    {
        match ns::enter_network() {
            Ok(()) => {
                flags |= HANDOFF_NETNS;
                match loopback_listener(port) {
                    Ok(l) => ns_listener = Some(l),
                    Err(e) => fail(format!(
                        "cannot start the proxy in the network namespace: {e}"
                    )),
                }
            }
            Err(why) => say_once(&format!(
                "note: {why}; only the proxy's port is reachable, through landlock and the supervisor"
            )),
        }
    }
    let mut ports: Vec<u16> = p.spec.policy.tcp_ports.clone();
    if let Some((port, _)) = p.proxy {
        ports.push(port);
    }
    let tcp = (p.rules.inet != Inet::Open).then_some(ports.as_slice());
    if let Err(e) = landlock::restrict_inner(p.scope_abstract, tcp)
        && !matches!(e, landlock::Error::Unavailable(_))
    {
        fail(e.to_string());
    }
    // SAFETY: setsid has no preconditions; the child is not a group leader.
    if unsafe { libc::setsid() } < 0 {
        fail(format!("setsid: {}", std::io::Error::last_os_error()));
    }
    if let Err(e) = super::caps::drop_all_except(p.keep_caps) {
        fail(format!("cannot drop capabilities: {e}"));
    }
    let installed = match p.filter {
        Ok(prog) => seccomp::install(prog, true),
        Err(seccomp::InstallError::Unavailable(m)) => {
            Err(seccomp::InstallError::Unavailable(m.clone()))
        }
        Err(seccomp::InstallError::Refused(m)) => Err(seccomp::InstallError::Refused(m.clone())),
    };
    let listener = match installed {
        Ok(l) => l,
        Err(seccomp::InstallError::Unavailable(m)) if !p.spec.policy.fail_if_unavailable => {
            say_once(&format!(
                "warning: {m}; network, namespaces and dangerous syscalls are NOT restricted"
            ));
            None
        }
        Err(e) => fail(format!(
            "{e}; refusing to run{}",
            if p.spec.policy.fail_if_unavailable {
                " (sandbox.failIfUnavailable)"
            } else {
                ""
            }
        )),
    };
    let mut fds: Vec<RawFd> = Vec::new();
    if let Some(l) = &listener {
        fds.push(l.as_raw_fd());
    }
    if let Some(l) = &ns_listener {
        fds.push(l.as_raw_fd());
    }
    // SAFETY: the handoff descriptor is open for the child's whole life;
    // borrowing it here does not outlive that.
    let handoff = unsafe { std::os::fd::BorrowedFd::borrow_raw(p.handoff) };
    if let Err(e) = send_fds_to(handoff, flags, &fds) {
        fail(format!("cannot hand over to the supervisor: {e}"));
    }
    // The command must never hold its own notification descriptor (the
    // rest of the launcher's descriptors are close-on-exec).
    drop(listener);
    drop(ns_listener);
    let mut cmd = std::process::Command::new(p.shell);
    cmd.args(p.args);
    if let Some(env) = p.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some((port, _)) = p.proxy {
        cmd.envs(proxy::env(port));
    }
    let err = cmd.exec();
    say(&format!("cannot run {}: {err}", p.shell.to_string_lossy()));
    exit_now(COULD_NOT_EXEC)
}

/// Starts the child: a clone sharing the launcher's memory until it
/// execs (no page tables copied, no copy-on-write faults), the launcher
/// waiting meanwhile.
fn spawn_child(plan: &ChildPlan<'_>) -> std::io::Result<libc::pid_t> {
    const STACK: usize = 1 << 20;
    // SAFETY: an anonymous private mapping for the child's stack.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the stack grows down from its end; CLONE_VFORK keeps this
    // frame (and `plan`) alive until the child has exec'd or exited.
    let pid = unsafe {
        libc::clone(
            child_entry,
            stack.cast::<u8>().add(STACK).cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (plan as *const ChildPlan<'_>).cast_mut().cast(),
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: the child no longer uses the stack (it exec'd or exited).
    unsafe { libc::munmap(stack, STACK) };
    if pid < 0 { Err(err) } else { Ok(pid) }
}

/// The launcher's entry point. Returns only with an exit status.
pub fn launch(args: &[OsString]) -> i32 {
    let (Some(spec), Some(shell)) = (
        args.first()
            .and_then(|a| a.to_str())
            .and_then(LaunchSpec::decode),
        args.get(1),
    ) else {
        say("bad launcher arguments");
        return COULD_NOT_SANDBOX;
    };
    // The status pipe is the launcher's alone: the command never gets it.
    let status = spec.status_fd.filter(|fd| {
        // SAFETY: fstat and fcntl on a number that may or may not be open;
        // only a pipe is taken for the status pipe.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            libc::fstat(*fd, &mut st) == 0
                && st.st_mode & libc::S_IFMT == libc::S_IFIFO
                && libc::fcntl(*fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0
        }
    });
    launch_with(&spec, shell, &args[2..], None, status)
}

/// Runs one sandboxed command in this process (a fresh launcher, or a
/// child of the sandbox server) and reports its end on `status`.
pub(crate) fn launch_with(
    spec: &LaunchSpec,
    shell: &std::ffi::OsStr,
    args: &[OsString],
    env: Option<&[(OsString, OsString)]>,
    status: Option<RawFd>,
) -> i32 {
    let code = run(spec, shell, args, env);
    if let Some(fd) = status {
        let message = match code {
            Ok(c) => format!("exit {c}\n"),
            Err(sig) => format!("signal {sig}\n"),
        };
        // SAFETY: writing a valid buffer; closing our own descriptor.
        unsafe {
            libc::write(fd, message.as_ptr().cast(), message.len());
            libc::close(fd);
        }
    }
    match code {
        Ok(c) => c,
        Err(sig) => die_by(sig),
    }
}

/// Builds the sandbox, runs the command, supervises it: `Ok(code)` or
/// `Err(signal)` as the shell ended.
fn run(
    spec: &LaunchSpec,
    shell: &std::ffi::OsStr,
    args: &[OsString],
    env: Option<&[(OsString, OsString)]>,
) -> Result<i32, i32> {
    let policy = &spec.policy;
    // SAFETY: integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) };
    if let Err(e) = crate::sys::set_no_new_privs() {
        say(&format!("cannot set no_new_privs: {e}"));
        return Ok(COULD_NOT_SANDBOX);
    }
    let (roots, missing) = existing(&policy.write_roots);
    for m in missing {
        say_once(&format!(
            "note: the writable directory {} does not exist, so nothing there is writable",
            m.display()
        ));
    }
    let (denied, _) = existing(&policy.deny_read);
    if let Some(why) = linked_denied(&denied) {
        say(&why);
        return Ok(COULD_NOT_SANDBOX);
    }
    // Mount namespace: read-only world, protected paths, hidden paths.
    let mut mounted = false;
    let mut in_userns = false;
    if policy.namespaces {
        match ns::enter() {
            Ok(entered) => {
                in_userns = entered == ns::Entered::UserMount;
                let (read_only, _) = existing(&spec.read_only);
                let (pins, _) = existing(&spec.pins);
                let plan = ns::Plan {
                    write_roots: &roots,
                    pins: &pins,
                    read_only: &read_only,
                    hide: &denied,
                };
                if let Err(e) = ns::mount(&plan) {
                    say(&format!(
                        "cannot build the sandbox's mounts: {e}; refusing to run"
                    ));
                    return Ok(COULD_NOT_SANDBOX);
                }
                mounted = true;
            }
            Err(why) => say_once(&format!(
                "note: {why}; metadata outside the working directories is guarded by the supervisor and protected paths are only checked after the command"
            )),
        }
    }
    // Outer landlock layer, shared with the supervisor.
    let devices: Vec<&Path> = DEVICES.iter().map(Path::new).collect();
    let mut landlock_deny: Vec<PathBuf> = if mounted { Vec::new() } else { denied.clone() };
    if !policy.deny_read.is_empty() {
        landlock_deny.extend(block_devices());
    }
    let scope_abstract = policy.unix_sockets != UnixSockets::All;
    let outer = landlock::Outer {
        write_roots: &roots,
        devices: &devices,
        deny_read: &landlock_deny,
        scope_abstract,
    };
    let mut landlock_on = true;
    match landlock::restrict_outer(&outer) {
        Ok(()) => {}
        // Without landlock and without a mount namespace nothing would
        // restrict writes: that is running unsandboxed, whatever
        // `failIfUnavailable` says.
        Err(e @ landlock::Error::Unavailable(_)) if !mounted => {
            say(&format!(
                "{e} and no mount namespace could be made, so nothing would restrict writes; refusing to run"
            ));
            return Ok(COULD_NOT_SANDBOX);
        }
        Err(landlock::Error::Unavailable(m)) if !policy.fail_if_unavailable => {
            landlock_on = false;
            say_once(&format!(
                "warning: the kernel has no landlock ({m}); writes are restricted only by the mount namespace's read-only view"
            ));
        }
        Err(e @ landlock::Error::Unavailable(_)) => {
            say(&format!("{e}; refusing to run (sandbox.failIfUnavailable)"));
            return Ok(COULD_NOT_SANDBOX);
        }
        Err(e) => {
            say(&format!("{e}; refusing to run"));
            return Ok(COULD_NOT_SANDBOX);
        }
    }
    let abi = crate::sys::landlock_abi().unwrap_or(0);
    let inet = if policy.network {
        Inet::Open
    } else if !policy.tcp_ports.is_empty() || !policy.allowed_domains.is_empty() {
        Inet::TcpOnly
    } else {
        Inet::Off
    };
    let unix = match policy.unix_sockets {
        UnixSockets::Off => Unix::Off,
        UnixSockets::Scoped => Unix::Scoped,
        UnixSockets::All => Unix::All,
    };
    let rules = seccomp::Rules {
        inet,
        unix,
        notify_net: !(inet == Inet::Open && unix == Unix::All),
        notify_metadata: !mounted,
    };
    let keep_caps: Vec<u32> = policy
        .keep_capabilities
        .iter()
        .filter_map(|n| super::caps::number(n))
        .collect();
    // The domain proxy: a loopback listener outside, in case the child
    // gets no network namespace of its own.
    let mut host_proxy = None;
    let proxy = if policy.allowed_domains.is_empty() || policy.network {
        None
    } else {
        match loopback_listener(0).and_then(|l| Ok((l.local_addr()?.port(), l))) {
            Ok((port, l)) => {
                host_proxy = Some(l);
                Some((port, mounted || in_userns))
            }
            Err(e) => {
                say(&format!(
                    "cannot start the domain proxy: {e}; refusing to run"
                ));
                return Ok(COULD_NOT_SANDBOX);
            }
        }
    };
    let old_mask = match supervise::block_signals() {
        Ok(m) => m,
        Err(e) => {
            say(&format!("cannot block signals: {e}"));
            return Ok(COULD_NOT_SANDBOX);
        }
    };
    let (parent_end, child_end) = match socketpair() {
        Ok(p) => p,
        Err(e) => {
            say(&format!("cannot make the handoff socket: {e}"));
            return Ok(COULD_NOT_SANDBOX);
        }
    };
    let filter = seccomp::build(&rules);
    let plan = ChildPlan {
        spec,
        rules,
        filter: &filter,
        scope_abstract,
        proxy,
        keep_caps: &keep_caps,
        old_mask,
        handoff: child_end.as_raw_fd(),
        shell,
        args,
        env,
    };
    // Its subreaper before the command exists: set after the fork, a
    // command that daemonizes at once (`setsid -f`) could orphan a process
    // to outside the sandbox's tree while the supervisor was not yet
    // scheduled (seen under load). Not inherited by the child.
    // SAFETY: integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let pid = match spawn_child(&plan) {
        Ok(pid) => pid,
        Err(e) => {
            say(&format!("cannot start the command: {e}"));
            return Ok(COULD_NOT_SANDBOX);
        }
    };
    drop(child_end);
    // The supervisor: not traceable by the command.
    // SAFETY: integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    let handoff = recv_fds(&parent_end);
    drop(parent_end);
    // Its permission checks must be the command's: no capabilities.
    if let Err(e) = super::caps::drop_own(&keep_caps) {
        say(&format!("cannot drop the supervisor's capabilities: {e}"));
        supervise::kill_all(pid);
        return Ok(COULD_NOT_SANDBOX);
    }
    let ended = match handoff {
        None => supervise::run(pid, None, spec.grace),
        Some((flags, mut fds)) => {
            let netns = flags & HANDOFF_NETNS != 0;
            let listener = if rules.notify_net || rules.notify_metadata {
                (!fds.is_empty()).then(|| fds.remove(0))
            } else {
                None
            };
            if let Some((port, _)) = proxy {
                let l = if netns {
                    fds.pop().map(std::net::TcpListener::from)
                } else {
                    host_proxy.take()
                };
                if let Some(l) = l {
                    let report: Arc<dyn Fn(String) + Send + Sync> =
                        Arc::new(|m: String| say_once(&m));
                    proxy::serve(l, Arc::new(policy.allowed_domains.clone()), report);
                }
                let _ = port;
            }
            drop(host_proxy);
            let ctx = listener.map(|l| {
                Arc::new(notify::Ctx {
                    policy: notify::Policy {
                        arch: super::syscalls::native().unwrap_or(&super::syscalls::X86_64),
                        inet,
                        unix,
                        tcp_ports: policy.tcp_ports.clone(),
                        proxy_port: proxy.map(|(p, _)| p),
                        unix_allowed: notify::socket_ids(&policy.unix_allow),
                        write_roots: roots.clone(),
                        netns,
                        abstract_scoped: landlock_on && abi >= 6,
                    },
                    state: Mutex::new(notify::State::default()),
                    listener: l,
                })
            });
            supervise::run(pid, ctx, spec.grace)
        }
    };
    exit_like(ended)
}

/// The way the shell ended: its code, or its signal.
fn exit_like(ended: supervise::Ended) -> Result<i32, i32> {
    match ended {
        supervise::Ended::Status(st) if libc::WIFEXITED(st) => Ok(libc::WEXITSTATUS(st)),
        supervise::Ended::Status(st) if libc::WIFSIGNALED(st) => Err(libc::WTERMSIG(st)),
        supervise::Ended::Status(_) => Ok(COULD_NOT_SANDBOX),
        supervise::Ended::Stopped(sig) => Ok(128 + sig),
    }
}

/// Ends the launcher by `sig`, as the shell ended.
fn die_by(sig: i32) -> i32 {
    // SAFETY: resetting the disposition and unblocking, then raising:
    // the process ends by the shell's signal.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    128 + sig
}
