//! One running command, foreground or background: how it starts (plain,
//! or under the sandbox's launcher), how its output is read (stdout and
//! stderr are one pipe, so lines come back in the order they were
//! written, as with `2>&1`), how it is stopped with everything it
//! started, and the protected-path check once it is gone.

use std::path::Path;
use std::time::Duration;

use smol::future::FutureExt;
use smol::io::AsyncReadExt;

use super::cwd::Record;

/// After the shell exits, how long straggling background children may keep
/// the pipes open before they are killed.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

/// How long a sandbox supervisor may take to stop everything it watches
/// after SIGTERM before tern kills it outright.
const SUPERVISOR_STOP: Duration = Duration::from_secs(10);

/// A running command: a plain child of tern, or a sandboxed one started
/// by the sandbox server, whose launcher reports its end on a pipe.
enum Running {
    Plain(smol::process::Child),
    Sandboxed {
        pid: u32,
        end: smol::Async<std::fs::File>,
    },
}

type Stream = Box<dyn smol::io::AsyncRead + Unpin>;

/// A started command. Dropped before [`Process::stop`] ran, it still takes
/// everything it started down (an interrupt racing the call, a session
/// that ends).
pub(super) struct Process {
    running: Running,
    /// stdout and stderr: one pipe.
    out: Stream,
    finish: Option<crate::sandbox::Finish>,
    /// Set once the shell is known to have ended (its code, if it exited).
    exit: Option<Option<i32>>,
    group: Option<crate::sys::GroupGuard>,
    supervisor: StopSupervisor,
}

/// What the protected-path check after a sandboxed command found.
#[derive(Debug, Default)]
pub(super) struct Verified {
    /// Lines for the model.
    pub notes: Vec<String>,
    /// Something could not be undone: nothing should run outside the
    /// sandbox before a person looks.
    pub unsafe_left: bool,
}

impl Process {
    /// Starts `command` in `cwd` with `env`, inside `sandbox` when given;
    /// with `record`, wrapped so that it says where its shell ended.
    pub(super) fn start(
        shell: &str,
        command: &str,
        cwd: &Path,
        sandbox: Option<&crate::sandbox::SandboxPolicy>,
        env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
        record: Option<&Record>,
    ) -> Result<Process, String> {
        let wrapped;
        let command = match record {
            Some(r) => {
                wrapped = r.wrap(command);
                wrapped.as_str()
            }
            None => command,
        };
        let Some(policy) = sandbox else {
            let mut c = std::process::Command::new(shell);
            c.arg("-c")
                .arg(command)
                .current_dir(cwd)
                .env_clear()
                .envs(env);
            if let Some(r) = record {
                r.hand_to(&mut c);
            }
            // stdin is /dev/null, so a program that reads stdin when it is a
            // pipe (`rg TODO`) does its ordinary thing; a bare chroot without
            // /dev gets a pipe closed at once instead.
            let null = std::fs::File::open("/dev/null").ok();
            let has_null = null.is_some();
            let stdin = null.map_or_else(std::process::Stdio::piped, std::process::Stdio::from);
            let (mut child, out) = crate::sys::spawn_group_merged(c, stdin)
                .map_err(|e| format!("Cannot start {shell}: {e}"))?;
            if !has_null {
                drop(child.stdin.take());
            }
            let group = crate::sys::GroupGuard::new(child.id());
            let out = smol::Async::new(out).map_err(|e| e.to_string())?;
            return Ok(Process {
                running: Running::Plain(child),
                out: Box::new(out),
                finish: None,
                exit: None,
                group: Some(group),
                supervisor: StopSupervisor(None),
            });
        };
        // A sandboxed command runs under a launcher, which stays as its
        // supervisor and ends every process of it; protected paths are
        // checked once that is done (see sandbox::protect).
        // Protected paths are worked out for the directory it runs in
        // too (a repository of its own below the project has its hooks).
        let git_protected = git_protected(policy, cwd, &env);
        let prepared = policy
            .prepare_in(shell, command, cwd, &env, &git_protected)
            .map_err(|e| e.to_string())?;
        let (spawned, finish) = prepared
            .spawn(cwd, env, record.map(Record::fds))
            .map_err(|e| e.to_string())?;
        let supervisor = StopSupervisor(Some(spawned.pid));
        let async_file = |f: std::fs::File| smol::Async::new(f).map_err(|e| e.to_string());
        let out = async_file(spawned.output)?;
        let end = async_file(std::fs::File::from(spawned.end))?;
        Ok(Process {
            running: Running::Sandboxed {
                pid: spawned.pid,
                end,
            },
            out: Box::new(out),
            finish: Some(finish),
            exit: None,
            group: None,
            supervisor,
        })
    }

    /// The shell's pid (the launcher's for a sandboxed command).
    pub(super) fn pid(&self) -> u32 {
        match &self.running {
            Running::Plain(child) => child.id(),
            Running::Sandboxed { pid, .. } => *pid,
        }
    }

    /// Hands output to `sink` in the order written (stdout and stderr
    /// share the pipe) until the command is done: the pipe closed and the
    /// shell gone, or
    /// a short grace after the shell went (a background child may hold the
    /// pipes open). Returns the exit code (None: killed by a signal).
    /// Cancelled half-way, what it learnt of the shell's end is kept.
    pub(super) async fn wait(&mut self, sink: &mut dyn FnMut(&[u8])) -> Option<i32> {
        if let Some(code) = self.exit {
            return code;
        }
        let Process {
            running, out, exit, ..
        } = self;
        let pump = async {
            let mut buf = [0u8; 8192];
            loop {
                match out.read(&mut buf).await {
                    Ok(n) if n > 0 => sink(&buf[..n]),
                    _ => break,
                }
            }
        };
        let slot = &mut *exit;
        let (exited_tx, exited_rx) = smol::channel::bounded::<()>(1);
        let waiter = async move {
            let code = match running {
                Running::Plain(child) => child.status().await.ok().and_then(|s| s.code()),
                // The launcher says how it ended once every process of it
                // is gone, before the kernel tears its namespaces down.
                Running::Sandboxed { end, .. } => read_end(end).await.flatten(),
            };
            *slot = Some(code);
            let _ = exited_tx.try_send(());
        };
        let grace = async {
            let _ = exited_rx.recv().await;
            smol::Timer::after(DRAIN_GRACE).await;
        };
        async {
            smol::future::zip(pump, waiter).await;
        }
        .or(grace)
        .await;
        exit.flatten()
    }

    /// Ends whatever is left of the command and waits until it is gone.
    pub(super) async fn stop(&mut self) {
        match &mut self.running {
            Running::Plain(child) => {
                crate::sys::kill_process_group(child.id());
                let _ = child.status().await;
                // Killed and reaped: the id may be reused from now on.
                if let Some(g) = self.group.take() {
                    g.disarm();
                }
            }
            Running::Sandboxed { pid, end } => {
                // The supervisor kills every descendant (daemons that left
                // the process group too), reports, and exits.
                if self.exit.is_none() {
                    crate::sys::signal_process(*pid, libc::SIGTERM);
                    let stopped = async {
                        let _ = read_end(end).await;
                        true
                    }
                    .or(async {
                        smol::Timer::after(SUPERVISOR_STOP).await;
                        false
                    })
                    .await;
                    if !stopped {
                        crate::sys::kill_process_group(*pid);
                    }
                }
            }
        }
        self.supervisor.0 = None;
    }

    /// The protected-path check (sandboxed commands), once the command is
    /// gone: what was undone, and what could not be.
    pub(super) fn verify(&mut self) -> Verified {
        let mut v = Verified::default();
        let Some(finish) = self.finish.take() else {
            return v;
        };
        let report = finish.run();
        if !report.undone.is_empty() {
            v.notes.push(format!(
                "[tern] The command changed protected paths, which run code outside the sandbox; tern undid it: {}",
                report.undone.join("; ")
            ));
        }
        if !report.refused.is_empty() {
            v.unsafe_left = true;
            v.notes.push(format!(
                "[tern] Protected paths changed in ways tern could not undo: {}. Do not run anything outside the sandbox before they are checked.",
                report.refused.join("; ")
            ));
        }
        v
    }
}

/// Asks a sandboxed command's supervisor to stop (SIGTERM: it kills every
/// process of the command, daemons included, and exits) when dropped
/// while still armed.
struct StopSupervisor(Option<u32>);

impl Drop for StopSupervisor {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            crate::sys::signal_process(pid, libc::SIGTERM);
        }
    }
}

/// Reads the launcher's end-of-command report (see `parse_status`).
async fn read_end(pipe: &mut smol::Async<std::fs::File>) -> Option<Option<i32>> {
    let mut message = Vec::new();
    pipe.read_to_end(&mut message).await.ok()?;
    crate::sandbox::parse_status(&message)
}

/// What git's config makes protected for a sandboxed command in `cwd`:
/// the hooks folders of the repositories' and the user's config, the files
/// they include, git's XDG config folder (worked out afresh each command:
/// a config may change during the session).
fn git_protected(
    policy: &crate::sandbox::SandboxPolicy,
    cwd: &std::path::Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Vec<std::path::PathBuf> {
    let var = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| std::path::PathBuf::from(v))
    };
    let mut working = policy.working.clone();
    if !working.iter().any(|w| w == cwd) {
        working.insert(0, cwd.to_path_buf());
    }
    crate::policy::bash::git::protected_paths(
        &working,
        var("HOME").as_deref(),
        var("XDG_CONFIG_HOME").as_deref(),
    )
}
