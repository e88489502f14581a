//! A lab for sandbox tests: a working directory and an "outside" one,
//! commands run through tern's real launcher (or without it), as the
//! user running the tests and — when that is root — again as `nobody`
//! through `setpriv`, so every attack is tried privileged and not.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tern::harness::ProtectReport as Report;
use tern::harness::SandboxPolicy;

/// Who runs the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// The user running the tests (root in most containers).
    Me,
    /// uid/gid 65534 with no supplementary groups (only when `Me` is root).
    Nobody,
}

pub const NOBODY: u32 = 65534;

pub fn am_root() -> bool {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() == 0 }
}

impl Who {
    /// Root and nobody when the tests run as root; otherwise the one
    /// (unprivileged) user they run as.
    pub fn all() -> Vec<Who> {
        let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
        if am_root() && setpriv {
            vec![Who::Me, Who::Nobody]
        } else {
            vec![Who::Me]
        }
    }

    pub fn privileged(self) -> bool {
        self == Who::Me && am_root()
    }
}

pub struct Lab {
    pub base: PathBuf,
    pub work: PathBuf,
    pub outside: PathBuf,
    pub who: Who,
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Under cargo's target/tmp. The test policies do not make /tmp writable,
/// since the checkout itself may live there; commands get a TMPDIR inside
/// the working directory.
pub fn lab(name: &str, who: Who) -> Lab {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "sandbox-{name}-{who:?}-{}-{}",
        std::process::id(),
        nanos()
    ));
    let work = base.join("work");
    let outside = base.join("outside");
    std::fs::create_dir_all(work.join("tmp")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // Traversable for nobody all the way down.
    for d in [Path::new(env!("CARGO_TARGET_TMPDIR")), &base] {
        let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755));
    }
    Lab {
        work: std::fs::canonicalize(work).unwrap(),
        outside: std::fs::canonicalize(outside).unwrap(),
        base: std::fs::canonicalize(base).unwrap(),
        who,
    }
}

impl Lab {
    /// Hands everything in the lab to the user the commands run as.
    pub fn hand_over(&self) {
        if self.who != Who::Nobody {
            return;
        }
        let mut stack = vec![self.base.clone()];
        while let Some(p) = stack.pop() {
            let _ = std::os::unix::fs::lchown(&p, Some(NOBODY), Some(NOBODY));
            if p.is_dir()
                && !p.is_symlink()
                && let Ok(rd) = std::fs::read_dir(&p)
            {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        }
    }

    pub fn expand(&self, script: &str) -> String {
        script
            .replace("OUTSIDE", &self.outside.display().to_string())
            .replace("WORK", &self.work.display().to_string())
    }

    /// The lab's default policy: writes beneath the working directory.
    pub fn policy(&self) -> SandboxPolicy {
        SandboxPolicy {
            fail_if_unavailable: true,
            working: vec![self.work.clone()],
            ..SandboxPolicy::new(vec![self.work.clone()])
        }
    }

    /// Runs `script` with bash in the working directory, as the lab's
    /// user, inside `sandbox` (with protected paths worked out and checked
    /// after, as the Bash tool does) or not.
    pub fn run(&self, sandbox: Option<&SandboxPolicy>, script: &str) -> (Output, Report) {
        let script = self.expand(script);
        // The end pipe stays open until the command has run (the launcher
        // inherits its write end at the spawn).
        let (cmd, finish, _end) = match sandbox {
            Some(p) => {
                let env: Vec<_> = std::env::vars_os().collect();
                let (c, e, f) = p
                    .prepare_in("/bin/bash", &script, &self.work, &env, &[])
                    .and_then(|p| p.command(Path::new(super::tern_bin())))
                    .unwrap_or_else(|e| panic!("prepare: {e}"));
                (c, Some(f), Some(e))
            }
            None => {
                let mut c = Command::new("/bin/bash");
                c.arg("-c").arg(&script);
                (c, None, None)
            }
        };
        let mut cmd = self.as_user(cmd);
        cmd.current_dir(&self.work)
            .env("TMPDIR", self.work.join("tmp"))
            .env("HOME", &self.base)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
        let out = cmd.output().unwrap();
        let report = finish.map(|f| f.run()).unwrap_or_default();
        (out, report)
    }

    /// `cmd` as the lab's user.
    pub fn as_user(&self, cmd: Command) -> Command {
        if self.who != Who::Nobody {
            return cmd;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        c
    }
}

pub fn text(out: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

type Adjust<'a> = Box<dyn Fn(&Lab, &mut SandboxPolicy) + 'a>;
type Judge<'a> = Box<dyn Fn(&Lab, &Output) -> bool + 'a>;

/// One attack, tried four ways: as root and as nobody, with and without
/// the sandbox. Without it, it must work (unless it needs root and runs
/// as nobody); with it, it must fail.
pub struct Attack<'a> {
    name: &'a str,
    script: &'a str,
    setup: Box<dyn Fn(&Lab) + 'a>,
    then: Box<dyn Fn(&Lab) + 'a>,
    adjust: Adjust<'a>,
    escaped: Judge<'a>,
    needs_root: bool,
}

impl<'a> Attack<'a> {
    pub fn new(name: &'a str, script: &'a str) -> Attack<'a> {
        Attack {
            name,
            script,
            setup: Box::new(|_| {}),
            then: Box::new(|_| {}),
            adjust: Box::new(|_, _| {}),
            escaped: Box::new(|_, out| stdout(out).contains("ESCAPED")),
            needs_root: false,
        }
    }

    pub fn setup(mut self, f: impl Fn(&Lab) + 'a) -> Self {
        self.setup = Box::new(f);
        self
    }

    /// Runs after the lab is handed over to its user.
    pub fn then(mut self, f: impl Fn(&Lab) + 'a) -> Self {
        self.then = Box::new(f);
        self
    }

    pub fn policy(mut self, f: impl Fn(&Lab, &mut SandboxPolicy) + 'a) -> Self {
        self.adjust = Box::new(f);
        self
    }

    pub fn escaped(mut self, f: impl Fn(&Lab, &Output) -> bool + 'a) -> Self {
        self.escaped = Box::new(f);
        self
    }

    /// Without the sandbox only root gets out this way.
    pub fn needs_root(mut self) -> Self {
        self.needs_root = true;
        self
    }

    /// `needs_root` where a kernel setting reserves the call for root.
    pub fn needs_root_if(mut self, yes: bool) -> Self {
        self.needs_root = yes;
        self
    }

    pub fn run(self) {
        for who in Who::all() {
            for sandboxed in [false, true] {
                let lab = lab(self.name, who);
                (self.setup)(&lab);
                lab.hand_over();
                (self.then)(&lab);
                let policy = sandboxed.then(|| {
                    let mut p = lab.policy();
                    (self.adjust)(&lab, &mut p);
                    p
                });
                let (out, _) = lab.run(policy.as_ref(), self.script);
                let got = (self.escaped)(&lab, &out);
                let want = !sandboxed && (who.privileged() || !self.needs_root);
                assert_eq!(
                    got,
                    want,
                    "{}: as {who:?}, sandboxed={sandboxed}: escaped={got}\n{}",
                    self.name,
                    text(&out)
                );
            }
        }
    }
}

/// The C probe of tests/fixtures/sandbox_probe.c, built once.
pub fn probe_binary() -> String {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // One per user: the suite may run as root and as another user
            // over the same target directory.
            // SAFETY: getuid cannot fail.
            let uid = unsafe { libc::getuid() };
            let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("sandbox_probe-{uid}"));
            let src = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/sandbox_probe.c"
            );
            let ok = Command::new("cc")
                .args(["-O1", "-o"])
                .arg(&out)
                .arg(src)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "cannot build {src} with cc");
            out.display().to_string()
        })
        .clone()
}
