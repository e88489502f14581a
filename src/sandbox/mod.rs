//! The Bash sandbox: landlock and seccomp, applied in the child.
//!
//! Both restrict only the thread that applies them (landlock on all
//! threads needs ABI 8), and tern runs helper threads, so they are never
//! applied in tern's own process. Instead a sandboxed command starts as
//! `tern __tern_sandbox <policy> <shell> -c <command>`: that fresh,
//! single-threaded process sets `no_new_privs`, restricts itself and execs
//! the shell, which inherits the restrictions (see `docs/sandbox.md`).

pub mod landlock;
pub mod protect;
pub mod seccomp;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::obj;

/// The hidden first argument that turns the binary into the launcher.
pub const LAUNCHER_ARG: &str = "__tern_sandbox";

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Directories (and files) beneath which writing is allowed.
    pub write_roots: Vec<PathBuf>,
    /// Reading is refused beneath these (`sandbox.filesystem.denyRead`).
    pub deny_read: Vec<PathBuf>,
    /// All TCP/UDP allowed.
    pub network: bool,
    /// With the network off, TCP connect to these ports is still allowed.
    pub tcp_ports: Vec<u16>,
    /// `socket(AF_UNIX)` allowed.
    pub unix_sockets: bool,
    /// Restored after each command (protected paths beyond the built-in
    /// ones: `denyWrite` inside writable roots, hook scripts). Kept by
    /// tern, not passed to the launcher.
    pub protected: Vec<PathBuf>,
    /// Refuse to run when landlock or seccomp cannot be applied.
    pub fail_if_unavailable: bool,
    /// Programs that run outside the sandbox (`sandbox.excludedCommands`),
    /// through the ordinary permission rules.
    pub excluded: Vec<String>,
    /// Whether `dangerouslyDisableSandbox` may be asked for at all.
    pub allow_unsandboxed: bool,
}

/// Device files a shell writes to.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/tty",
    "/dev/zero",
    "/dev/urandom",
    "/dev/full",
];

impl SandboxPolicy {
    /// Writes beneath `write_roots`, no TCP/UDP, AF_UNIX allowed, nothing
    /// hidden; degrades with a warning where the kernel lacks support.
    pub fn new(write_roots: Vec<PathBuf>) -> SandboxPolicy {
        SandboxPolicy {
            write_roots,
            deny_read: Vec::new(),
            network: false,
            tcp_ports: Vec::new(),
            unix_sockets: true,
            protected: Vec::new(),
            fail_if_unavailable: false,
            excluded: Vec::new(),
            allow_unsandboxed: true,
        }
    }

    pub fn encode(&self) -> String {
        let paths = |ps: &[PathBuf]| {
            ps.iter()
                .map(|p| Value::from(p.display().to_string()))
                .collect::<Vec<_>>()
        };
        obj! {
            "write" => paths(&self.write_roots),
            "denyRead" => paths(&self.deny_read),
            "network" => self.network,
            "ports" => self.tcp_ports.iter().map(|p| Value::from(i64::from(*p))).collect::<Vec<_>>(),
            "unix" => self.unix_sockets,
            "strict" => self.fail_if_unavailable,
        }
        .to_json()
    }

    pub fn decode(text: &str) -> Option<SandboxPolicy> {
        let v = json::parse(text).ok()?;
        let paths = |key: &str| -> Option<Vec<PathBuf>> {
            Some(
                v.get(key)?
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(PathBuf::from)
                    .collect(),
            )
        };
        Some(SandboxPolicy {
            write_roots: paths("write")?,
            deny_read: paths("denyRead")?,
            network: v.get("network")?.as_bool()?,
            tcp_ports: v
                .get("ports")?
                .as_array()?
                .iter()
                .filter_map(|p| p.as_i64().and_then(|p| u16::try_from(p).ok()))
                .collect(),
            unix_sockets: v.get("unix")?.as_bool()?,
            fail_if_unavailable: v.get("strict")?.as_bool()?,
            excluded: Vec::new(),
            allow_unsandboxed: true,
            protected: Vec::new(),
        })
    }

    /// Does this Bash input run inside the sandbox? Not when it asks to
    /// leave it (`dangerouslyDisableSandbox`, approved by a person) or its
    /// first program is excluded.
    pub fn applies_to(&self, input: &Value) -> bool {
        if input
            .get("dangerouslyDisableSandbox")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return false;
        }
        let command = input.str_field("command").unwrap_or("");
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        let first = crate::policy::bash::first_command(command, &cwd).unwrap_or_default();
        !self
            .excluded
            .iter()
            .any(|e| first == *e || first.starts_with(&format!("{e} ")))
    }

    /// The command that runs `shell -c command` inside this sandbox.
    pub fn command(&self, launcher: &Path, shell: &str, command: &str) -> std::process::Command {
        let mut c = std::process::Command::new(launcher);
        c.arg(LAUNCHER_ARG)
            .arg(self.encode())
            .arg(shell)
            .arg("-c")
            .arg(command);
        c
    }
}

/// The launcher's entry point: restrict this process, then exec. Returns
/// only on failure, with the exit status to use (126: could not sandbox,
/// 127: could not exec).
pub fn launch(args: &[std::ffi::OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    let say = |m: &str| eprintln!("tern sandbox: {m}");
    let (Some(policy), Some(shell)) = (
        args.first()
            .and_then(|a| a.to_str())
            .and_then(SandboxPolicy::decode),
        args.get(1),
    ) else {
        say("bad launcher arguments");
        return 126;
    };
    if let Err(e) = crate::sys::set_no_new_privs() {
        say(&format!("cannot set no_new_privs: {e}"));
        return 126;
    }
    let roots: Vec<&Path> = policy.write_roots.iter().map(PathBuf::as_path).collect();
    let devices: Vec<&Path> = DEVICES.iter().map(Path::new).collect();
    let deny_read: Vec<&Path> = policy.deny_read.iter().map(PathBuf::as_path).collect();
    let rules = landlock::Rules {
        write_roots: &roots,
        devices: &devices,
        deny_read: &deny_read,
        tcp_ports: (!policy.network).then_some(policy.tcp_ports.as_slice()),
    };
    let mut tcp_by_port = false;
    match landlock::restrict(&rules) {
        Ok(enforced) => tcp_by_port = enforced.network_restricted,
        Err(e) => {
            if policy.fail_if_unavailable {
                say(&format!(
                    "landlock is unavailable ({e}); refusing to run (sandbox.failIfUnavailable)"
                ));
                return 126;
            }
            say(&format!(
                "warning: landlock is unavailable ({e}); writes are NOT restricted"
            ));
        }
    }
    let inet = if policy.network {
        seccomp::Inet::Open
    } else if !policy.tcp_ports.is_empty() && tcp_by_port {
        seccomp::Inet::TcpOnly
    } else {
        if !policy.tcp_ports.is_empty() {
            say("warning: allowTcpPorts needs landlock ABI 4; TCP stays off");
        }
        seccomp::Inet::Off
    };
    let sockets = seccomp::Sockets {
        inet,
        unix: policy.unix_sockets,
    };
    if let Err(e) = seccomp::install(sockets) {
        if policy.fail_if_unavailable {
            say(&format!(
                "seccomp is unavailable ({e}); refusing to run (sandbox.failIfUnavailable)"
            ));
            return 126;
        }
        say(&format!(
            "warning: seccomp is unavailable ({e}); network and syscalls are NOT restricted"
        ));
    }
    let err = std::process::Command::new(shell).args(&args[2..]).exec();
    say(&format!("cannot run {}: {err}", shell.to_string_lossy()));
    127
}

/// What the kernel and this build can do.
pub struct Status {
    pub arch: &'static str,
    pub landlock: Result<i32, String>,
    pub seccomp_kernel: bool,
    /// tern carries a seccomp BPF program for this architecture.
    pub seccomp_program: bool,
}

pub fn probe() -> Status {
    Status {
        arch: std::env::consts::ARCH,
        landlock: crate::sys::landlock_abi().map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSYS) => "not in this kernel".to_string(),
            Some(libc::EOPNOTSUPP) => "built into the kernel but disabled at boot".to_string(),
            _ => e.to_string(),
        }),
        seccomp_kernel: crate::sys::seccomp_supported(),
        seccomp_program: cfg!(any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "arm"
        )),
    }
}

impl Status {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "architecture:  {}", self.arch);
        let _ = match &self.landlock {
            Ok(abi) => writeln!(out, "landlock:      available, ABI {abi}"),
            Err(why) => writeln!(out, "landlock:      unavailable ({why})"),
        };
        let seccomp = match (self.seccomp_kernel, self.seccomp_program) {
            (false, _) => "unavailable (the kernel has no seccomp filter support)".to_string(),
            (true, true) => "available".to_string(),
            (true, false) => format!(
                "kernel supports it, but tern has no filter program for {} yet (known gap)",
                self.arch
            ),
        };
        let _ = writeln!(out, "seccomp:       {seccomp}");
        let enforced = match (&self.landlock, self.seccomp_kernel && self.seccomp_program) {
            (Ok(abi), true) if *abi >= 4 => "writes limited to the working directories and temp; TCP and UDP blocked; dangerous syscalls denied".to_string(),
            (Ok(_), true) => "writes limited; UDP and dangerous syscalls denied; TCP blocked by seccomp only (landlock ABI < 4)".to_string(),
            (Ok(_), false) => "writes limited by landlock; no seccomp filter, so network and syscalls are NOT restricted".to_string(),
            (Err(_), true) => "no landlock, so writes are NOT restricted; network and dangerous syscalls denied by seccomp".to_string(),
            (Err(_), false) => "nothing can be enforced on this host".to_string(),
        };
        let _ = writeln!(out, "when enabled:  {enforced}");
        let _ = writeln!(
            out,
            "sandbox:       off unless settings say \"sandbox\": {{\"enabled\": true}}; domain allow-lists are not enforced (no proxy)"
        );
        out
    }
}
