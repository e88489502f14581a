//! The Bash sandbox: mount and user namespaces, landlock, seccomp with a
//! supervising parent, dropped capabilities — all applied in a launcher
//! process, never in tern's own.
//!
//! landlock and seccomp restrict only the thread that applies them
//! (landlock on all threads needs ABI 8), and tern runs helper threads. So
//! a sandboxed command starts as `tern __tern_sandbox <spec> <shell> -c
//! <command>`, executed from a descriptor of tern's own binary opened at
//! startup (a path could be replaced by the command). That fresh,
//! single-threaded process builds the sandbox, forks the shell into it and
//! stays as its supervisor (`launch.rs`); `docs/sandbox.md` has the threat
//! model and what each mechanism covers.

mod caps;
mod fsat;
pub(crate) mod landlock;
mod launch;
mod notify;
mod ns;
pub mod protect;
mod proxy;
pub(crate) mod seccomp;
mod server;
mod status;
mod supervise;
mod syscalls;

pub use launch::launch;
pub use server::{SERVER_ARG, Spawned, serve};

pub use status::probe;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::json::{self, Value};
use crate::obj;

/// The hidden first argument that turns the binary into the launcher.
pub const LAUNCHER_ARG: &str = "__tern_sandbox";

/// How far AF_UNIX sockets reach (`sandbox.network.allowAllUnixSockets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnixSockets {
    /// `false`: no `socket(AF_UNIX)` at all (stream socket pairs work).
    Off,
    /// Unset: sockets the command itself made, and `allowUnixSockets`.
    Scoped,
    /// `true`: every socket, including those of outside processes.
    All,
}

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
    /// `sandbox.network.allowedDomains`: reachable through tern's proxy.
    pub allowed_domains: Vec<String>,
    pub unix_sockets: UnixSockets,
    /// `sandbox.network.allowUnixSockets`: outside sockets that may be used.
    pub unix_allow: Vec<PathBuf>,
    /// `sandbox.keepCapabilities`: named capabilities kept (default none).
    pub keep_capabilities: Vec<String>,
    /// Use mount/user/network namespaces where the kernel allows
    /// (`sandbox.namespaces`, default true).
    pub namespaces: bool,
    /// The working directories (cwd, `additionalDirectories`): their git
    /// directories, `.tern`, `.claude` and `.mcp.json` are protected.
    pub working: Vec<PathBuf>,
    /// Protected beyond the built-in ones (`denyWrite` inside writable
    /// roots, files hook commands name). Read-only during the command
    /// where namespaces allow, and checked after it.
    pub protected: Vec<PathBuf>,
    /// Refuse to run when the kernel has no landlock or seccomp.
    pub fail_if_unavailable: bool,
    /// Programs that run outside the sandbox (`sandbox.excludedCommands`),
    /// through the ordinary permission rules.
    pub excluded: Vec<String>,
    /// Whether `dangerouslyDisableSandbox` may be asked for at all.
    pub allow_unsandboxed: bool,
}

/// What the launcher gets: the policy plus what tern worked out for this
/// command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    pub policy: SandboxPolicy,
    /// Read-only bind mounts (protected paths that exist).
    pub read_only: Vec<PathBuf>,
    /// Directories made mount points (cannot be renamed or replaced).
    pub pins: Vec<PathBuf>,
    /// How long processes may outlive the shell before they are killed.
    pub grace: Duration,
    /// Where the launcher reports how the command ended, once every
    /// process of it is gone (before the kernel tears its namespaces down,
    /// which tern need not wait for).
    pub status_fd: Option<i32>,
}

/// After the shell exits, how long its leftovers may finish writing.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(300);

static LAUNCHER: std::sync::OnceLock<Option<std::os::fd::OwnedFd>> = std::sync::OnceLock::new();

/// Opens tern's own executable, once, at startup: before any command can
/// replace the file (tern may live beneath a writable directory).
/// Seals the calling process: no file can be opened, no TCP connection
/// made, from here on (landlock). Err: the kernel cannot.
#[cfg(feature = "repl")]
pub fn seal_process() -> Result<(), String> {
    landlock::seal_all().map_err(|e| e.to_string())
}

pub fn remember_launcher() {
    LAUNCHER.get_or_init(|| crate::sys::open_own_executable().ok());
}

/// For programs that are not tern (benchmarks): the launcher is the tern
/// binary at `path`, opened now. Without effect once one is remembered.
pub fn remember_launcher_at(path: &Path) {
    LAUNCHER.get_or_init(|| {
        std::fs::File::open(path)
            .ok()
            .map(std::os::fd::OwnedFd::from)
    });
}

/// What executes the launcher: `/proc/self/fd/N` of that descriptor,
/// which the forked child resolves to the very file tern started from.
pub fn launcher() -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    remember_launcher();
    LAUNCHER
        .get()
        .and_then(Option::as_ref)
        .map(|fd| PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())))
}

fn paths_json(ps: &[PathBuf]) -> Vec<Value> {
    ps.iter()
        .map(|p| Value::from(p.display().to_string()))
        .collect()
}

fn strings_json(ss: &[String]) -> Vec<Value> {
    ss.iter().map(|s| Value::from(s.as_str())).collect()
}

impl SandboxPolicy {
    /// Writes beneath `write_roots`, no network, AF_UNIX within the
    /// sandbox, nothing hidden; degrades with a warning where the kernel
    /// lacks support.
    pub fn new(write_roots: Vec<PathBuf>) -> SandboxPolicy {
        SandboxPolicy {
            write_roots,
            deny_read: Vec::new(),
            network: false,
            tcp_ports: Vec::new(),
            allowed_domains: Vec::new(),
            unix_sockets: UnixSockets::Scoped,
            unix_allow: Vec::new(),
            keep_capabilities: Vec::new(),
            namespaces: true,
            working: Vec::new(),
            protected: Vec::new(),
            fail_if_unavailable: false,
            excluded: Vec::new(),
            allow_unsandboxed: true,
        }
    }

    /// The command that runs `shell -c command` inside this sandbox, with
    /// no protected paths beyond the policy's (tests, benchmarks).
    pub fn command(&self, launcher: &Path, shell: &str, command: &str) -> std::process::Command {
        LaunchSpec {
            policy: self.clone(),
            read_only: Vec::new(),
            pins: Vec::new(),
            grace: DEFAULT_GRACE,
            status_fd: None,
        }
        .command(launcher, shell, command)
    }
}

/// A sandboxed command, ready to spawn, and what to check once it is over.
pub struct Prepared {
    spec: LaunchSpec,
    shell: String,
    command: String,
    snapshot: protect::Snapshot,
}

/// The pipe the launcher reports the command's end on.
pub struct EndPipe {
    /// Read by tern.
    pub read: std::os::fd::OwnedFd,
    /// Passed to the launcher; tern drops its copy after the spawn.
    write: Option<std::os::fd::OwnedFd>,
}

impl EndPipe {
    /// After the spawn: only the launcher holds the write end now, so the
    /// read end sees end-of-file if the launcher dies without a word.
    pub fn spawned(&mut self) {
        self.write = None;
    }
}

/// How the launcher said the command ended: `Some(Some(code))`, or
/// `Some(None)` for a signal; `None` if it said nothing (it was killed).
pub fn parse_status(message: &[u8]) -> Option<Option<i32>> {
    let text = std::str::from_utf8(message).ok()?.trim();
    match text.split_once(' ') {
        Some(("exit", code)) => code.parse().ok().map(Some),
        Some(("signal", _)) => Some(None),
        _ => None,
    }
}

/// Why a sandboxed command was not started (it never ran): the sandbox
/// plane's error. Its text is what the model and the user read.
#[derive(Debug)]
pub enum NotStarted {
    /// Protected paths tern could not examine, so it could not check
    /// them after the command either.
    Unexamined(Vec<String>),
    /// The protected paths are too large to copy, and there is no mount
    /// namespace to make them read-only.
    TooLarge,
    /// The pipe the launcher reports the command's end on.
    StatusPipe(std::io::Error),
    /// The sandbox server could not start the launcher.
    Server(std::io::Error),
}

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotStarted::Unexamined(paths) => write!(
                f,
                "tern could not examine these protected paths, so it could not check them after the command; the command was not run: {}",
                paths.join("; ")
            ),
            NotStarted::TooLarge => f.write_str(
                "the protected paths (.git hooks and config, .tern, .claude, …) are too large to copy, and this host has no mount namespace to make them read-only; the command was not run",
            ),
            NotStarted::StatusPipe(e) => write!(f, "cannot make the sandbox's status pipe: {e}"),
            NotStarted::Server(e) => {
                write!(f, "cannot start the sandbox: {e}; the command was not run")
            }
        }
    }
}

impl std::error::Error for NotStarted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NotStarted::StatusPipe(e) | NotStarted::Server(e) => Some(e),
            NotStarted::Unexamined(_) | NotStarted::TooLarge => None,
        }
    }
}

impl SandboxPolicy {
    /// Works out the protected paths for a command run in `cwd` whose
    /// environment is `env` (its `HOME` and `PATH` decide which start-up
    /// files and program directories are protected), with `also` those
    /// the caller names for this command (what git's config protects),
    /// and takes their snapshot. Foreground commands and (later)
    /// background shells share this, and `Finish`.
    pub fn prepare_in(
        &self,
        shell: &str,
        command: &str,
        cwd: &Path,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        also: &[PathBuf],
    ) -> Result<Prepared, NotStarted> {
        let var = |name: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_os_str())
        };
        let mut working = self.working.clone();
        if !working.iter().any(|w| w == cwd) {
            working.insert(0, cwd.to_path_buf());
        }
        let extra: Vec<PathBuf> = self.protected.iter().chain(also).cloned().collect();
        let plan = protect::plan(
            &working,
            &self.write_roots,
            &extra,
            var("HOME").filter(|h| !h.is_empty()).map(Path::new),
            var("PATH"),
        );
        // Without a mount namespace nothing stops changes during the
        // command, so contents are kept to put back.
        let full = !(self.namespaces && status::mount_namespaces());
        let snapshot = protect::take(&plan, full);
        // Resolved once here, so the launcher need not.
        let canonical = |ps: &[PathBuf]| -> Vec<PathBuf> {
            ps.iter()
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
                .collect()
        };
        let policy = SandboxPolicy {
            write_roots: canonical(&self.write_roots),
            deny_read: canonical(&self.deny_read),
            ..self.clone()
        };
        if !snapshot.unseen.is_empty() {
            return Err(NotStarted::Unexamined(snapshot.unseen.clone()));
        }
        if full && snapshot.incomplete {
            return Err(NotStarted::TooLarge);
        }
        Ok(Prepared {
            spec: LaunchSpec {
                policy,
                read_only: plan.read_only.clone(),
                pins: plan.pins.clone(),
                grace: DEFAULT_GRACE,
                status_fd: None,
            },
            shell: shell.to_string(),
            command: command.to_string(),
            snapshot,
        })
    }
}

impl Prepared {
    /// The launcher as a command to exec (`launcher` is tern's binary),
    /// the pipe its end is reported on, and the check to run afterwards.
    pub fn command(
        self,
        launcher: &Path,
    ) -> Result<(std::process::Command, EndPipe, Finish), NotStarted> {
        let (read, write) = crate::sys::pipe().map_err(NotStarted::StatusPipe)?;
        let spec = LaunchSpec {
            status_fd: Some(std::os::fd::AsRawFd::as_raw_fd(&write)),
            ..self.spec
        };
        let mut command = spec.command(launcher, &self.shell, &self.command);
        crate::sys::inherit_in_child(&mut command, std::os::fd::AsRawFd::as_raw_fd(&write));
        Ok((
            command,
            EndPipe {
                read,
                write: Some(write),
            },
            Finish(self.snapshot),
        ))
    }

    /// Starts it through the sandbox server, in `cwd` with exactly `env`.
    /// `keep`: a descriptor the command gets, and at what number.
    pub fn spawn(
        self,
        cwd: &Path,
        env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
        keep: Option<(std::os::fd::RawFd, std::os::fd::RawFd)>,
    ) -> Result<(Spawned, Finish), NotStarted> {
        let args = ["-c".into(), self.command.clone().into()];
        match server::spawn(
            &self.spec,
            std::ffi::OsStr::new(&self.shell),
            &args,
            cwd,
            env,
            keep,
        ) {
            Ok(s) => Ok((s, Finish(self.snapshot))),
            Err(e) => Err(NotStarted::Server(e)),
        }
    }
}

/// The check to run once every process of the command has ended.
pub struct Finish(protect::Snapshot);

impl Finish {
    pub fn run(self) -> protect::Report {
        self.0.verify()
    }
}

impl LaunchSpec {
    pub fn encode(&self) -> String {
        let p = &self.policy;
        obj! {
            "write" => paths_json(&p.write_roots),
            "denyRead" => paths_json(&p.deny_read),
            "network" => p.network,
            "ports" => p.tcp_ports.iter().map(|x| Value::from(i64::from(*x))).collect::<Vec<_>>(),
            "domains" => strings_json(&p.allowed_domains),
            "unix" => match p.unix_sockets {
                UnixSockets::Off => "off",
                UnixSockets::Scoped => "scoped",
                UnixSockets::All => "all",
            },
            "unixAllow" => paths_json(&p.unix_allow),
            "caps" => strings_json(&p.keep_capabilities),
            "ns" => p.namespaces,
            "strict" => p.fail_if_unavailable,
            "readOnly" => paths_json(&self.read_only),
            "pins" => paths_json(&self.pins),
            "graceMs" => self.grace.as_millis() as i64,
            "statusFd" => self.status_fd.map(i64::from),
        }
        .to_json()
    }

    pub fn decode(text: &str) -> Option<LaunchSpec> {
        let v = json::parse(text).ok()?;
        let list = |key: &str| -> Option<Vec<String>> {
            Some(
                v.get(key)?
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            )
        };
        let paths = |key: &str| -> Option<Vec<PathBuf>> {
            Some(list(key)?.into_iter().map(PathBuf::from).collect())
        };
        let policy = SandboxPolicy {
            write_roots: paths("write")?,
            deny_read: paths("denyRead")?,
            network: v.get("network")?.as_bool()?,
            tcp_ports: v
                .get("ports")?
                .as_array()?
                .iter()
                .filter_map(|p| p.as_i64().and_then(|p| u16::try_from(p).ok()))
                .collect(),
            allowed_domains: list("domains")?,
            unix_sockets: match v.get("unix")?.as_str()? {
                "off" => UnixSockets::Off,
                "scoped" => UnixSockets::Scoped,
                "all" => UnixSockets::All,
                _ => return None,
            },
            unix_allow: paths("unixAllow")?,
            keep_capabilities: list("caps")?,
            namespaces: v.get("ns")?.as_bool()?,
            fail_if_unavailable: v.get("strict")?.as_bool()?,
            working: Vec::new(),
            protected: Vec::new(),
            excluded: Vec::new(),
            allow_unsandboxed: true,
        };
        Some(LaunchSpec {
            policy,
            read_only: paths("readOnly")?,
            pins: paths("pins")?,
            grace: Duration::from_millis(u64::try_from(v.get("graceMs")?.as_i64()?).ok()?),
            status_fd: v
                .get("statusFd")
                .and_then(Value::as_i64)
                .and_then(|f| i32::try_from(f).ok()),
        })
    }

    /// The command that runs `shell -c command` inside the sandbox.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_round_trips() {
        let spec = LaunchSpec {
            policy: SandboxPolicy {
                deny_read: vec!["/home/u/.ssh".into()],
                tcp_ports: vec![5432],
                allowed_domains: vec!["*.example.com".into()],
                unix_sockets: UnixSockets::All,
                unix_allow: vec!["/run/pg.sock".into()],
                keep_capabilities: vec!["CAP_NET_BIND_SERVICE".into()],
                namespaces: false,
                fail_if_unavailable: true,
                ..SandboxPolicy::new(vec!["/w".into(), "/tmp".into()])
            },
            read_only: vec!["/w/.git/hooks".into()],
            pins: vec!["/w".into(), "/w/.git".into()],
            grace: Duration::from_millis(250),
            status_fd: Some(7),
        };
        assert_eq!(LaunchSpec::decode(&spec.encode()), Some(spec));
        assert_eq!(LaunchSpec::decode("{}"), None);
    }
}
