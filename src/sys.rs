//! The few calls std does not offer: signal delivery into the event loop,
//! killing a whole process group, private directories written through
//! descriptors. All of tern's `unsafe` outside the sandbox lives here.

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The write end of the self-pipe, read by the signal handler.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = sig as u8;
        // SAFETY: write(2) is async-signal-safe; the fd stays open for the
        // life of the process and the buffer is a local byte.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Routes SIGINT and SIGTERM into a pipe and returns its read end; each
/// byte read is a signal number.
pub fn catch_termination_signals() -> std::io::Result<File> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid two-element array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and ours.
    let (read_end, _write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    SIGNAL_PIPE.store(fds[1], Ordering::Relaxed);
    // The write end must outlive every handler call: leak it on purpose.
    std::mem::forget(_write_end);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid starting value; the handler
        // is an `extern "C" fn(c_int)` that only calls write(2).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(File::from(read_end))
}

/// Sends SIGKILL to every process in group `pgid`. A group that is already
/// gone is not an error.
pub fn kill_process_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
    // Killed once, the group is done with: forget it so a reused id is
    // never signalled later.
    unregister_child_group(pgid);
}

/// Kills a process group when dropped: a command or hook whose future is
/// dropped half-way (an interrupt racing it) still takes everything it
/// started down with it.
pub struct GroupGuard(u32);

impl GroupGuard {
    pub fn new(pgid: u32) -> GroupGuard {
        GroupGuard(pgid)
    }

    /// Forgets the group (already killed and reaped, so its id may belong
    /// to someone else by now).
    pub fn disarm(mut self) {
        self.0 = 0;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_process_group(self.0);
    }
}

/// Sends `signal` to a process group.
pub fn signal_group(pgid: u32, signal: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid targets a process group; it has
    // no memory-safety preconditions.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// Sends `signal` to one process.
pub fn signal_process(pid: u32, signal: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Process groups of every child tern starts (Bash commands, hooks, MCP
/// servers), killed if tern leaves in a hurry (a second Ctrl-C), so none is
/// orphaned. A group leaves the list when it is killed.
static CHILD_GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

pub fn register_child_group(pgid: u32) {
    if let Ok(mut g) = CHILD_GROUPS.lock() {
        g.push(pgid);
    }
}

pub fn unregister_child_group(pgid: u32) {
    if let Ok(mut g) = CHILD_GROUPS.lock() {
        g.retain(|p| *p != pgid);
    }
}

pub fn kill_registered_groups() {
    // Taken out first: signalling must not hold the lock that
    // kill_process_group takes.
    let groups = CHILD_GROUPS
        .lock()
        .map(|mut g| std::mem::take(&mut *g))
        .unwrap_or_default();
    for pgid in groups {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// Starts a long-lived server in its own process group that the kernel
/// terminates if tern dies without cleaning up (even SIGKILL).
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub fn spawn_server(mut cmd: std::process::Command) -> std::io::Result<smol::process::Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    spawn_group(cmd)
}

/// The kernel's landlock ABI version, or why there is none.
pub fn landlock_abi() -> Result<i32, std::io::Error> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag,
    // landlock_create_ruleset only returns the ABI version; it reads no
    // memory and creates no file descriptor.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

/// Whether the kernel supports seccomp filters (prctl answers rather than
/// failing with EINVAL).
pub fn seccomp_supported() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer arguments.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Fills `buf` from the kernel's random generator (getrandom(2), which
/// needs no /dev). False if the kernel refused.
pub fn random_bytes(buf: &mut [u8]) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `buf`.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getrandom,
                buf[filled..].as_mut_ptr(),
                buf.len() - filled,
                0 as libc::c_uint,
            )
        };
        if n <= 0 {
            return false;
        }
        filled += n as usize;
    }
    true
}

/// Writes a small file whole and private (0600): through a temporary
/// file beside it, renamed over the old one, so a reader or a crash never
/// sees half of it. Its folder is made when missing.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).create(dir)?;
    }
    let part = path.with_extension(format!("part{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&part)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&part, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    written
}

/// The real user id.
pub fn uid() -> u32 {
    // SAFETY: getuid(2) cannot fail and takes no arguments.
    unsafe { libc::getuid() }
}

/// The real group id.
pub fn gid() -> u32 {
    // SAFETY: getgid(2) cannot fail and takes no arguments.
    unsafe { libc::getgid() }
}

/// Makes a fresh directory `<base>/<prefix>XXXXXX` with mode 0700
/// (mkdtemp) and returns its path and a descriptor of it, through which
/// files are then made: swapping the path for a symlink later changes
/// nothing for tern.
pub fn private_dir(
    base: &std::path::Path,
    prefix: &str,
) -> std::io::Result<(std::path::PathBuf, OwnedFd)> {
    use std::os::unix::ffi::OsStrExt;
    let mut template = base.as_os_str().as_bytes().to_vec();
    template.push(b'/');
    template.extend_from_slice(prefix.as_bytes());
    template.extend_from_slice(b"XXXXXX\0");
    // SAFETY: `template` is a writable NUL-terminated buffer ending in
    // XXXXXX, as mkdtemp requires.
    let p = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if p.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    template.pop();
    let path = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&template));
    let fd = open_dir_nofollow(&path)?;
    Ok((path, fd))
}

pub fn open_dir_nofollow(path: &std::path::Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid C string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: open returned a descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes the directory `name` (0700) inside `dir`, or opens it when it
/// exists and is a directory, never through a symlink.
pub fn private_subdir(dir: &OwnedFd, name: &str) -> std::io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let c = std::ffi::CString::new(name)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a descriptor we own and a valid C string.
    let made = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o700) };
    if made != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat returned a descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Creates a new file `name` (0600) in `dir`; fails if anything, a
/// symlink included, is already there.
pub fn create_new_in(dir: &OwnedFd, name: &str) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    let c = std::ffi::CString::new(name)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a descriptor we own and a valid C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat returned a descriptor we now own.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A pipe, both ends close-on-exec: (read, write).
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid two-element array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Makes `fd` survive the exec of `cmd` (and only of `cmd`).
pub fn inherit_in_child(cmd: &mut std::process::Command, fd: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls fcntl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A descriptor of the running executable (`/proc/self/exe`), opened
/// once: what is at the path later does not matter.
pub fn open_own_executable() -> std::io::Result<OwnedFd> {
    // SAFETY: a valid C string.
    let fd = unsafe { libc::open(c"/proc/self/exe".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: open returned a descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Starts `cmd` as the leader of a new process group (so everything it
/// starts can be killed together) with stdin, stdout and stderr piped.
pub fn spawn_group(cmd: std::process::Command) -> std::io::Result<smol::process::Child> {
    spawn_group_reading(cmd, std::process::Stdio::piped())
}

/// The same, with `stdin` as the command's standard input.
pub fn spawn_group_reading(
    mut cmd: std::process::Command,
    stdin: std::process::Stdio,
) -> std::io::Result<smol::process::Child> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    cmd.process_group(0);
    // Stdio is set on the async command: the conversion does not carry it.
    let mut cmd = smol::process::Command::from(cmd);
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn()?;
    // Its caller kills the group when done (kill_process_group), which
    // also takes it off the list.
    register_child_group(child.id());
    Ok(child)
}

/// Starts `cmd` as the leader of a new process group with `stdin`, and
/// its stdout and stderr on one pipe (so what it writes to either comes
/// out in the order written); returns the child and the pipe's read end.
pub fn spawn_group_merged(
    mut cmd: std::process::Command,
    stdin: std::process::Stdio,
) -> std::io::Result<(smol::process::Child, File)> {
    use std::os::unix::process::CommandExt;
    let (read, write) = pipe()?;
    let err = write.try_clone()?;
    cmd.process_group(0);
    // Stdio is set on the async command: the conversion does not carry it.
    let mut cmd = smol::process::Command::from(cmd);
    cmd.stdin(stdin)
        .stdout(std::process::Stdio::from(write))
        .stderr(std::process::Stdio::from(err));
    let child = cmd.spawn()?;
    // The command holds the write ends until dropped: the pipe must see
    // its end when the child's copies close.
    drop(cmd);
    register_child_group(child.id());
    Ok((child, File::from(read)))
}

/// Turns O_NONBLOCK off again on a file opened with it (Read opens with
/// it so that a FIFO cannot block the open).
pub fn clear_nonblocking(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on a descriptor this File owns; no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// prctl(PR_SET_NO_NEW_PRIVS): exec can never gain privileges again.
pub fn set_no_new_privs() -> std::io::Result<()> {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Takes every variable whose name `erase` picks out of this process's
/// environment, and overwrites each such `NAME=value` with zeros in the
/// block the kernel shows as `/proc/<pid>/environ`: the strings the
/// process started with, which unsetting a variable leaves in place, so
/// any process of the same user (or root) could still read them there.
/// Returns how many entries were zeroed.
///
/// Each variable is unset first, so libc's `environ` points at none of
/// the strings about to be zeroed and no later `getenv` sees a half-gone
/// value. The bytes are then written through `/proc/self/mem` at the
/// block's bounds from `/proc/self/stat`, after checking that the memory
/// there is the block `/proc/self/environ` showed (an emulator's /proc
/// describes the host process, not this one). `Err` says why the block
/// could not be cleaned (no /proc, qemu-user); the variables are unset
/// all the same.
///
/// Call it once, early, while no other thread reads the environment.
pub fn erase_from_environ(erase: &dyn Fn(&[u8]) -> bool) -> std::io::Result<usize> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileExt;
    let block = std::fs::read("/proc/self/environ")?;
    // (offset in the block, length) of each entry to erase.
    let mut found: Vec<(usize, usize)> = Vec::new();
    let mut names: Vec<&[u8]> = Vec::new();
    let mut offset = 0;
    for entry in block.split(|b| *b == 0) {
        let name = entry.split(|b| *b == b'=').next().unwrap_or_default();
        if !name.is_empty() && erase(name) {
            found.push((offset, entry.len()));
            if !names.contains(&name) {
                names.push(name);
            }
        }
        offset += entry.len() + 1;
    }
    if found.is_empty() {
        return Ok(0);
    }
    for name in &names {
        // SAFETY: std's environment lock is held for the change, and the
        // caller runs this before any other thread could read the
        // environment behind that lock (libc's getenv). The name is not
        // empty and holds neither '=' nor NUL, so unsetenv accepts it.
        unsafe { std::env::remove_var(std::ffi::OsStr::from_bytes(name)) };
    }
    let (start, end) = environ_bounds()?;
    if end.checked_sub(start) != Some(block.len() as u64) {
        return Err(std::io::Error::other(
            "/proc/self/stat and /proc/self/environ disagree about the environment's size",
        ));
    }
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let mut seen = vec![0u8; block.len()];
    mem.read_exact_at(&mut seen, start)?;
    if seen != block {
        return Err(std::io::Error::other(
            "the memory at the environment's address is not the environment (an emulated /proc?)",
        ));
    }
    for (offset, len) in &found {
        mem.write_all_at(&vec![0u8; *len], start + *offset as u64)?;
    }
    // What a reader sees now.
    let after = std::fs::read("/proc/self/environ")?;
    let left = after
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .any(|e| erase(e.split(|b| *b == b'=').next().unwrap_or_default()));
    if left {
        return Err(std::io::Error::other(
            "the erased variables are still in /proc/self/environ",
        ));
    }
    Ok(found.len())
}

/// `env_start` and `env_end` of `/proc/self/stat` (fields 50 and 51,
/// counted after the parenthesised command name, which may hold spaces).
fn environ_bounds() -> std::io::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let bad = || std::io::Error::other("/proc/self/stat has no environment bounds");
    let after_name = stat.rsplit_once(')').ok_or_else(bad)?.1;
    // The first field after the name is field 3.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| -> std::io::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .ok_or_else(bad)
    };
    let (start, end) = (field(50)?, field(51)?);
    if start == 0 || end <= start {
        return Err(bad());
    }
    Ok((start, end))
}

/// prctl(PR_SET_DUMPABLE, 0): other processes of the same user can no
/// longer attach to tern or read its memory (where configuration keeps the
/// API key once it is out of the environment: a same-user reader of
/// `/proc/<tern>/mem` finds it in several places), and tern leaves no
/// core dump.
/// The cost: tern's owner-only /proc files become root's, so a non-root
/// tern can no longer open its own `/proc/self/environ`, `mem` or `auxv`
/// (hence after [`erase_from_environ`]); `stat`, `status`, `maps`, `fd/`,
/// `exe`, `task/` stay readable to it, and nothing else of tern reads the
/// others. A debugger of the same user cannot attach either. Every
/// program tern execs (its own helpers through `/proc/self/fd/N`
/// included) is dumpable again.
pub fn set_undumpable() -> std::io::Result<()> {
    // SAFETY: PR_SET_DUMPABLE takes integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Set for the copy of this test binary that erases its own block.
    const CHILD: &str = "TERN_TEST_ERASE_CHILD";

    /// Runs in a process of its own (this test binary again, one test),
    /// since erasing changes the whole process's environment.
    #[test]
    fn erasing_zeroes_the_block_and_unsets_the_variable() {
        if std::env::var_os("TERN_TEST_RUNNER").is_some_and(|r| !r.is_empty()) {
            eprintln!(
                "SKIPPED the environ erasure test (emulated run): qemu-user's /proc is the host's"
            );
            return;
        }
        // Through /proc/self/exe: a build may replace the file meanwhile.
        let out = std::process::Command::new("/proc/self/exe")
            .args(["sys::tests::erase_in_child", "--exact", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD, "1")
            .env("TERN_SECRET_A", "hunter2-a")
            .env("TERN_SECRET_B", "hunter2-b")
            .env("TERN_KEPT", "visible")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("erased 2"), "{text}");
    }

    #[test]
    fn erase_in_child() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let before = std::fs::read("/proc/self/environ").unwrap();
        let n = super::erase_from_environ(&|name| name.starts_with(b"TERN_SECRET_")).unwrap();
        let after = std::fs::read("/proc/self/environ").unwrap();
        // Same size, the entries zeroed whole, the rest untouched.
        assert_eq!(before.len(), after.len());
        let text = String::from_utf8_lossy(&after);
        assert!(!text.contains("hunter2") && !text.contains("TERN_SECRET"));
        assert!(text.contains("TERN_KEPT=visible"));
        assert!(std::env::var_os("TERN_SECRET_A").is_none());
        assert_eq!(std::env::var("TERN_KEPT").as_deref(), Ok("visible"));
        // Nothing left to do a second time.
        assert_eq!(
            super::erase_from_environ(&|n| n.starts_with(b"TERN_SECRET_")).unwrap(),
            0
        );
        println!("erased {n}");
    }
}
