//! What this host lets the sandbox enforce, for `tern sandbox status` and
//! `system/init`: probed, never assumed, and said in both directions —
//! what is enforced and what is not.

use std::fmt::Write as _;

use super::{SandboxPolicy, UnixSockets};
use crate::json::Value;
use crate::obj;

/// What the kernel and this build can do.
pub struct Status {
    pub arch: &'static str,
    pub landlock: Result<i32, String>,
    pub seccomp_kernel: bool,
    /// tern carries a seccomp program for this architecture.
    pub seccomp_program: bool,
    /// seccomp user notifications and pidfd_getfd (the supervisor's checks).
    pub supervisor: bool,
    /// `Ok("mount")` as root, `Ok("user+mount")` unprivileged, or why not.
    pub namespaces: Result<&'static str, String>,
    /// A network namespace can be made (for the domain proxy).
    pub netns: bool,
}

/// Forks a child that tries `flags` and reports whether it could; only
/// raw syscalls run in the child, so this is safe in a threaded process.
fn try_unshare(flags: libc::c_int) -> bool {
    // SAFETY: the child only calls unshare and _exit.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(if libc::unshare(flags) == 0 { 0 } else { 1 });
        }
        if pid < 0 {
            return false;
        }
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0) == pid && libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0
    }
}

fn supervisor_available() -> bool {
    // GET_NOTIF_SIZES answers on kernels with user notifications (5.0);
    // pidfd_getfd with a bad descriptor says EBADF where it exists (5.6).
    let mut sizes = [0u16; 3];
    // SAFETY: GET_NOTIF_SIZES fills three u16s.
    let notif = unsafe { libc::syscall(libc::SYS_seccomp, 3, 0, sizes.as_mut_ptr()) } == 0;
    // SAFETY: invalid descriptors make the call fail without effect.
    let getfd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, -1, -1, 0) } < 0
        && std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS);
    notif && getfd
}

/// Whether the launcher will get a mount namespace here (probed once).
pub(crate) fn mount_namespaces() -> bool {
    static CACHED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CACHED.get_or_init(|| {
        try_unshare(libc::CLONE_NEWNS) || try_unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)
    })
}

pub fn probe() -> Status {
    let namespaces = if try_unshare(libc::CLONE_NEWNS) {
        Ok("mount")
    } else if try_unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) {
        Ok("user+mount")
    } else {
        Err("neither a mount namespace nor an unprivileged user namespace is allowed here".into())
    };
    let netns = match namespaces {
        Ok("mount") => try_unshare(libc::CLONE_NEWNET),
        Ok(_) => try_unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET),
        Err(_) => false,
    };
    Status {
        arch: std::env::consts::ARCH,
        landlock: crate::sys::landlock_abi().map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSYS) => "not in this kernel".to_string(),
            Some(libc::EOPNOTSUPP) => "built into the kernel but disabled at boot".to_string(),
            _ => e.to_string(),
        }),
        seccomp_kernel: crate::sys::seccomp_supported(),
        seccomp_program: super::syscalls::native().is_some(),
        supervisor: supervisor_available(),
        namespaces,
        netns,
    }
}

impl Status {
    fn seccomp(&self) -> bool {
        self.seccomp_kernel && self.seccomp_program
    }

    fn abi(&self) -> i32 {
        *self.landlock.as_ref().unwrap_or(&0)
    }

    /// (enforced, not enforced) for `policy`, or for the defaults.
    pub fn claims(&self, policy: Option<&SandboxPolicy>) -> (Vec<String>, Vec<String>) {
        let (mut yes, mut no) = (Vec::new(), Vec::new());
        let mounts = self.namespaces.is_ok() && policy.is_none_or(|p| p.namespaces);
        let abi = self.abi();
        if abi < 1 && !mounts {
            // The launcher refuses to run then (see launch.rs).
            no.push(
                "every sandboxed command: with neither landlock nor a mount namespace nothing would restrict writes, so sandboxed Bash refuses to run".into(),
            );
        }
        let mut say = |on: bool, what: String, otherwise: String| {
            if on {
                yes.push(what)
            } else {
                no.push(otherwise)
            }
        };
        say(
            abi >= 1,
            format!(
                "writes only beneath the working directories, additionalDirectories, allowWrite and temp (landlock ABI {abi})"
            ),
            if mounts {
                "landlock (writes are restricted only by the mount namespace's read-only view)"
                    .into()
            } else {
                "writes outside the working directories (no landlock)".into()
            },
        );
        say(
            mounts || (self.seccomp() && self.supervisor),
            if mounts {
                "chmod, chown, utimes and xattrs outside them fail (read-only mount namespace)"
                    .into()
            } else {
                "chmod, chown, utimes and xattrs outside them fail (checked by the supervisor)"
                    .into()
            },
            "metadata changes (chmod, chown, utimes, xattrs) outside the working directories"
                .into(),
        );
        say(
            mounts,
            ".git hooks/config/commondir, .tern, .claude, .mcp.json, denyWrite and hook scripts are read-only during the command, and checked after it".into(),
            "protected paths can be changed during the command: tern checks them after it and puts back what it copied".into(),
        );
        say(
            self.seccomp(),
            "no namespaces, mounts, chroot, ptrace, process_vm, bpf, perf, keyrings, io_uring, kexec, modules, reboot, swap, hostname, clock setting, terminal injection or chattr (seccomp)".into(),
            "namespace, mount, ptrace and other dangerous system calls (no seccomp filter here)".into(),
        );
        say(
            self.seccomp(),
            "no packet, raw, netlink (except route sockets with the network on) or unknown socket families (seccomp)".into(),
            "socket families".into(),
        );
        let network = match policy {
            Some(p) if p.network => "the network is fully on (sandbox.network.enabled)".to_string(),
            Some(p) if !p.allowed_domains.is_empty() => format!(
                "network only through tern's proxy to {}{}",
                p.allowed_domains.join(", "),
                if self.netns {
                    ", from a network namespace with no other way out"
                } else {
                    " (no network namespace here: only the proxy's port is allowed, by landlock and the supervisor)"
                }
            ),
            Some(p) if !p.tcp_ports.is_empty() => format!(
                "no network but TCP connect to port(s) {}",
                p.tcp_ports
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "no network (TCP, UDP and raw sockets blocked)".to_string(),
        };
        say(
            self.seccomp() && self.supervisor,
            network,
            "network restrictions (no seccomp)".into(),
        );
        let unix = policy.map_or(UnixSockets::Scoped, |p| p.unix_sockets);
        say(
            unix != UnixSockets::All && self.seccomp() && self.supervisor,
            "unix sockets reach only what the command made or allowUnixSockets names (the supervisor; abstract ones by landlock scope)".into(),
            if unix == UnixSockets::All {
                "unix sockets of outside processes are reachable (allowAllUnixSockets)".into()
            } else {
                "unix sockets of outside processes (no supervisor)".into()
            },
        );
        say(
            abi >= 6,
            "no signals to processes outside the sandbox (landlock scope, ABI ≥ 6)".into(),
            format!("signals to processes outside the sandbox (landlock ABI {abi} < 6)"),
        );
        say(
            true,
            "every process the command starts ends with it (the supervisor is its subreaper)"
                .into(),
            String::new(),
        );
        say(
            true,
            "all capabilities dropped, no_new_privs, no controlling terminal".into(),
            String::new(),
        );
        no.push("reading files outside sandbox.filesystem.denyRead".into());
        no.push("what a command does with the network it is allowed (a proxied domain may serve any content)".into());
        no.push(
            "git repositories nested below a working directory (their hooks are not protected)"
                .into(),
        );
        no.push("what project tools run for hooks (a hook that runs `npm test` runs what package.json says)".into());
        no.push("hard links to a denyRead file made outside the working directories before tern started".into());
        (yes, no)
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "architecture:  {}", self.arch);
        let _ = match &self.landlock {
            Ok(abi) => writeln!(out, "landlock:      available, ABI {abi}"),
            Err(why) => writeln!(out, "landlock:      unavailable ({why})"),
        };
        let seccomp = match (self.seccomp_kernel, self.seccomp_program) {
            (false, _) => "unavailable (the kernel has no seccomp filter support)".to_string(),
            (true, true) if self.supervisor => "available, with user notifications".to_string(),
            (true, true) => "available, without user notifications (kernel < 5.6)".to_string(),
            (true, false) => format!(
                "kernel supports it, but tern has no filter for {}",
                self.arch
            ),
        };
        let _ = writeln!(out, "seccomp:       {seccomp}");
        let _ = match &self.namespaces {
            Ok("mount") => writeln!(out, "namespaces:    mount namespace (as root)"),
            Ok(_) => writeln!(out, "namespaces:    unprivileged user + mount namespaces"),
            Err(why) => writeln!(out, "namespaces:    unavailable ({why})"),
        };
        let _ = writeln!(
            out,
            "network ns:    {}",
            if self.netns {
                "available (domain proxy)"
            } else {
                "unavailable"
            }
        );
        let (yes, no) = self.claims(None);
        let _ = writeln!(out, "when enabled, enforced:");
        for y in yes {
            let _ = writeln!(out, "  + {y}");
        }
        let _ = writeln!(out, "not enforced:");
        for n in no.iter().filter(|n| !n.is_empty()) {
            let _ = writeln!(out, "  - {n}");
        }
        let _ = writeln!(
            out,
            "sandbox:       off unless settings say \"sandbox\": {{\"enabled\": true}} (docs/sandbox.md)"
        );
        out
    }

    /// The `sandbox` object of `system/init`.
    pub fn summary(&self, policy: &SandboxPolicy) -> Value {
        let paths = |ps: &[std::path::PathBuf]| {
            ps.iter()
                .map(|p| Value::from(p.display().to_string()))
                .collect::<Vec<_>>()
        };
        let (yes, no) = self.claims(Some(policy));
        obj! {
            "enabled" => true,
            "landlock_abi" => self.landlock.as_ref().ok().map(|a| i64::from(*a)),
            "seccomp" => self.seccomp(),
            "namespaces" => self.namespaces.as_ref().ok().copied(),
            "network" => policy.network,
            "allowed_domains" => policy.allowed_domains.iter().map(|d| Value::from(d.as_str())).collect::<Vec<_>>(),
            "tcp_ports" => policy.tcp_ports.iter().map(|p| Value::from(i64::from(*p))).collect::<Vec<_>>(),
            "unix_sockets" => match policy.unix_sockets {
                UnixSockets::Off => "off",
                UnixSockets::Scoped => "scoped",
                UnixSockets::All => "all",
            },
            "write_roots" => paths(&policy.write_roots),
            "deny_read" => paths(&policy.deny_read),
            "protected_extra" => paths(&policy.protected),
            "enforced" => yes.into_iter().map(Value::from).collect::<Vec<_>>(),
            "not_enforced" => no.into_iter().filter(|n| !n.is_empty()).map(Value::from).collect::<Vec<_>>(),
        }
    }
}
