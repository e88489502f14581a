//! The supervisor: the launcher's own process after it forked the
//! command. It is the command's subreaper, so everything the command
//! starts — daemons that `setsid -f` away included — stays its
//! descendant; it answers seccomp notifications; and when the command's
//! shell exits (after a short grace for output), on SIGTERM from tern, or
//! when tern dies, it kills every descendant left and only then exits, so
//! tern's checks after the command never race a survivor.
//!
//! The command cannot signal it (landlock scopes signals to the inner
//! domain) or trace it (non-dumpable, landlock, seccomp).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::notify;

/// How the command ended.
pub(crate) enum Ended {
    /// The shell's wait status.
    Status(libc::c_int),
    /// tern (or the user) asked the supervisor to stop.
    Stopped(libc::c_int),
}

/// The signals the supervisor takes through a signalfd.
pub(crate) fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the supervisor's signals (before fork, so none is lost) and
/// returns the previous mask for the child to restore.
pub(crate) fn block_signals() -> std::io::Result<libc::sigset_t> {
    let set = signal_set();
    // SAFETY: valid sets; the launcher is single-threaded.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        if libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(old)
    }
}

fn signalfd() -> std::io::Result<OwnedFd> {
    let set = signal_set();
    // SAFETY: a valid set; returns a new descriptor or -1.
    let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: signalfd returned a descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reaps what has exited; returns (the shell's status if it was among
/// them, whether no child at all is left).
fn reap(shell: libc::pid_t) -> (Option<libc::c_int>, bool) {
    let mut status = None;
    loop {
        let mut st = 0;
        // SAFETY: `st` is a valid int; WNOHANG never blocks.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG | libc::__WALL) };
        if r > 0 {
            if r == shell {
                status = Some(st);
            }
            continue;
        }
        let none_left =
            r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD);
        return (status, none_left);
    }
}

/// The supervisor's live children (reparented orphans included).
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id() as libc::pid_t;
    let mut out = Vec::new();
    // Fast path: each thread's children list (CONFIG_PROC_CHILDREN).
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        let mut all_read = true;
        for t in tasks.flatten() {
            match std::fs::read_to_string(t.path().join("children")) {
                Ok(s) => out.extend(
                    s.split_whitespace()
                        .filter_map(|p| p.parse::<libc::pid_t>().ok()),
                ),
                Err(_) => all_read = false,
            }
        }
        if all_read {
            return out;
        }
        out.clear();
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) S ppid ..." — comm may hold spaces and parentheses.
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|s| s.parse::<libc::pid_t>().ok());
        if ppid == Some(me) {
            out.push(pid);
        }
    }
    out
}

/// Kills every descendant: as subreaper, each orphan becomes a child, so
/// killing children until none is left reaches the whole tree. Returns how
/// many were killed and whether some could not be (uninterruptible).
pub(crate) fn kill_all(shell: libc::pid_t) -> (usize, bool) {
    let mut killed = std::collections::HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        reap(shell);
        let kids = children();
        if kids.is_empty() {
            let (_, none_left) = reap(shell);
            if none_left {
                return (killed.len(), false);
            }
        }
        for k in &kids {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(*k, libc::SIGKILL) };
            killed.insert(*k);
        }
        if Instant::now() > deadline {
            return (killed.len(), true);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs until the command is over; see the module comment.
pub(crate) fn run(shell: libc::pid_t, ctx: Option<notify::Shared>, grace: Duration) -> Ended {
    let sigfd = match signalfd() {
        Ok(fd) => fd,
        Err(e) => {
            super::launch::say(&format!("cannot watch signals: {e}"));
            kill_all(shell);
            return Ended::Stopped(libc::SIGTERM);
        }
    };
    let mut status: Option<libc::c_int> = None;
    let mut exited_at: Option<Instant> = None;
    let mut listening = ctx.is_some();
    let ended = loop {
        let mut fds = vec![libc::pollfd {
            fd: sigfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if let (true, Some(c)) = (listening, &ctx) {
            fds.push(libc::pollfd {
                fd: c.listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let timeout = match exited_at {
            Some(t) => grace.saturating_sub(t.elapsed()).as_millis() as libc::c_int,
            None => -1,
        };
        // SAFETY: `fds` is a valid array of pollfd.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break Ended::Stopped(libc::SIGTERM);
        }
        if fds[0].revents & libc::POLLIN != 0 {
            let mut stop = None;
            // SAFETY: reading whole signalfd_siginfo records into a buffer.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: `info` is a valid buffer of `size` bytes.
            while unsafe {
                libc::read(
                    sigfd.as_raw_fd(),
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    size,
                )
            } == size as isize
            {
                if info.ssi_signo != libc::SIGCHLD as u32 {
                    stop = Some(info.ssi_signo as libc::c_int);
                }
            }
            if let Some(sig) = stop {
                break Ended::Stopped(sig);
            }
        }
        if let (Some(c), Some(p)) = (&ctx, fds.get(1)) {
            if p.revents & libc::POLLIN != 0
                && let Some(n) = notify::receive(&c.listener)
            {
                let shared = Arc::clone(c);
                let spawned = std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || notify::serve(&shared, &n));
                if spawned.is_err() {
                    // No thread: answer here rather than leave it hanging.
                    notify::serve(c, &n);
                }
            } else if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                // No filtered process is left to notify.
                listening = false;
            }
        }
        let (st, none_left) = reap(shell);
        if st.is_some() {
            status = st;
            exited_at = Some(Instant::now());
        }
        if let Some(st) = status
            && (none_left || exited_at.is_some_and(|t| t.elapsed() >= grace))
        {
            break Ended::Status(st);
        }
    };
    let (killed, stuck) = kill_all(shell);
    if killed > 0 && matches!(ended, Ended::Status(_)) {
        super::launch::say(&format!(
            "stopped {killed} process{} the command left running (every process ends with its command)",
            if killed == 1 { "" } else { "es" }
        ));
    }
    if stuck {
        super::launch::say("some processes could not be killed (stuck in the kernel)");
    }
    ended
}
