//! What a policy is made from. The session's policy and every
//! sub-agent's are built from one of these in one step: when they were
//! patched in field by field after `Policy::new`, each place had to
//! remember every field (the sandbox, the protected paths), and a new
//! setting had to be added to each.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{CommandEnv, Mode, Rule};
use crate::sandbox::SandboxPolicy;

#[derive(Clone)]
pub struct PolicySpec {
    pub mode: Mode,
    pub rules: Vec<Rule>,
    pub cwd: PathBuf,
    /// Working directories beyond `cwd` (`--add-dir`, a coordinator's
    /// scratchpad for its workers).
    pub extra_dirs: Vec<PathBuf>,
    /// The environment the session's commands start with; without one,
    /// tern's own (tests and benchmarks, which have no session).
    pub command_env: Option<Rc<CommandEnv>>,
    /// The Bash sandbox, when on.
    pub sandbox: Option<SandboxPolicy>,
    /// `autoAllowBashIfSandboxed`.
    pub sandbox_auto_allow: bool,
    /// Paths beyond the built-in names whose writing always asks.
    pub protected: Vec<PathBuf>,
}

impl PolicySpec {
    /// Rules and directories only: no sandbox, tern's own environment.
    pub fn new(mode: Mode, rules: Vec<Rule>, cwd: &Path, extra_dirs: &[PathBuf]) -> PolicySpec {
        PolicySpec {
            mode,
            rules,
            cwd: cwd.to_path_buf(),
            extra_dirs: extra_dirs.to_vec(),
            command_env: None,
            sandbox: None,
            sandbox_auto_allow: false,
            protected: Vec::new(),
        }
    }

    /// The same with the mode narrowed to `wanted` when that is narrower
    /// (a sub-agent's definition can take permissions away, never add).
    pub fn narrowed(&self, wanted: Option<Mode>) -> PolicySpec {
        PolicySpec {
            mode: self.mode.narrower(wanted),
            ..self.clone()
        }
    }
}
