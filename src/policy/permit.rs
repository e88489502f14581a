//! What policy decides over and what it hands out.
//!
//! A tool call comes to policy as [`Call`]: facts only (the tool's name,
//! its kind, whether this input only reads, the paths it will open as the
//! model wrote them, the input). Policy answers with a [`Decision`]; only
//! an `Allow` carries a [`Permit`], and a [`Question`] turns into one only
//! when someone says yes. Every field of both is private to this module,
//! so no other code can make one: a tool that needs a permit to run can
//! only run through policy.
//!
//! The permit carries what was checked — the resolved paths, and for
//! searches the read rules a result must pass — so the tool opens exactly
//! what policy looked at, not a string it resolves again.

use std::fmt;
use std::path::{Path, PathBuf};

use super::rules::PathPattern;
use crate::json::Value;

/// Whether a tool, by its nature, edits files (acceptEdits allows these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Edit,
    Execute,
    Other,
    /// The call is a question for a person (AskUserQuestion, ExitPlanMode):
    /// it is asked in every mode, and only deny rules stop it first.
    Ask,
}

/// How a tool uses a path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Opens one file to read it (Read).
    Read,
    /// Walks a directory, or reads one file, and reports what it finds (Grep, Glob).
    Search,
    /// Creates or changes the file (Write, Edit).
    Write,
}

/// A path a call will open, as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathUse {
    pub access: Access,
    pub raw: String,
}

impl PathUse {
    pub fn new(access: Access, raw: impl Into<String>) -> PathUse {
        PathUse {
            access,
            raw: raw.into(),
        }
    }
}

/// The facts of one call: all that [`super::Policy::decide`] looks at.
pub struct Call<'a> {
    /// The tool_use id.
    pub id: &'a str,
    pub tool: &'a str,
    pub kind: Kind,
    /// True when this input cannot change anything outside tern; worked
    /// out only when a branch of the decision asks (never for Bash, whose
    /// line the analysis below judges).
    pub read_only: std::cell::LazyCell<bool, Box<dyn FnOnce() -> bool + 'a>>,
    pub input: &'a Value,
    /// What the tool will open, in the order the tool asks for them back.
    pub paths: Vec<PathUse>,
    /// Bash: the directory the line will run in (the shell's, carried
    /// from the last command); None: the session's working directory.
    /// The permit carries it to the run, so the line runs where it was
    /// judged.
    pub cwd: Option<PathBuf>,
    /// Bash: the line's analysis, made at the first need in the session's
    /// environment and `cwd`, then shared by the decision and the rule a
    /// yes would add. It lives and dies with these facts: a changed input
    /// is new facts, and a later decision looks at the files again.
    pub bash: std::cell::OnceCell<std::rc::Rc<super::bash::Analysis>>,
}

/// Paths a search must leave out: those read rules deny or ask about.
#[derive(Default)]
pub struct ReadFilter {
    pub(super) patterns: Vec<PathPattern>,
}

impl ReadFilter {
    /// May a search open (or list) this path? The path is one the search
    /// reached without following symlinks, below a root policy resolved.
    pub fn allows(&self, path: &Path) -> bool {
        !self.patterns.iter().any(|p| p.matches(path))
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

/// Proof that policy allowed one call, and what it allowed.
/// [`crate::tools::Tool::call`] takes one; only policy makes them.
pub struct Permit {
    pub(super) call_id: String,
    /// The call's paths resolved, in the order of [`Call::paths`].
    pub(super) paths: Vec<PathBuf>,
    pub(super) filter: std::sync::Arc<ReadFilter>,
    /// A Bash line allowed because every command in it only reads: it
    /// runs with the hardened environment ([`super::bash::env::hardened`]).
    pub(super) hardened: bool,
    /// WebFetch: the host was named (a rule, a question about that very
    /// address, bypass mode), so loopback and private addresses it
    /// resolves to may be reached.
    pub(super) reach_local: bool,
    /// Bash: the command line to run instead of the input's, its globs
    /// replaced by the names they were decided on.
    pub(super) command: Option<String>,
    /// Bash: the directory the line was judged in, to run it there.
    pub(super) cwd: Option<PathBuf>,
    /// Bash: the sandbox the line runs in, as decided (None: the session
    /// has none, or a person let this call leave it).
    pub(super) sandbox: Option<std::sync::Arc<crate::sandbox::SandboxPolicy>>,
}

impl Permit {
    /// The tool_use id of the call this permit was issued for.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Run with the hardened environment (a Bash line policy allowed
    /// because it only reads).
    pub fn hardened(&self) -> bool {
        self.hardened
    }

    /// WebFetch may connect to loopback and private addresses.
    pub fn may_reach_local(&self) -> bool {
        self.reach_local
    }

    /// Bash: the line policy decided, to run instead of the input's text
    /// (each glob already expanded, so no later expansion sees other
    /// files); None to run the input as written.
    pub fn command(&self) -> Option<&str> {
        self.command.as_deref()
    }

    /// Bash: the directory policy judged the line in (None: the
    /// session's working directory).
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// Bash: the sandbox to run the line in, the one its decision
    /// assumed (an auto-allow because sandboxed holds only inside it).
    pub fn sandbox(&self) -> Option<&crate::sandbox::SandboxPolicy> {
        self.sandbox.as_deref()
    }

    /// The `i`th path of the call, as policy resolved and checked it.
    pub fn path(&self, i: usize) -> Option<&Path> {
        self.paths.get(i).map(PathBuf::as_path)
    }

    /// The first path, or an error result's text when the call had none
    /// (a tool asking for a path it did not declare).
    pub fn target(&self) -> Result<&Path, String> {
        self.path(0)
            .ok_or_else(|| "no path was checked for this call; it was not run".to_string())
    }

    /// What a search must leave out. Shared so a search on a worker
    /// thread can hold it.
    pub fn read_filter(&self) -> std::sync::Arc<ReadFilter> {
        std::sync::Arc::clone(&self.filter)
    }

    /// The permit, kept back until a person says yes (a PreToolUse hook
    /// asked for approval of an allowed call).
    pub fn into_question(self, text: String) -> Question {
        Question { text, permit: self }
    }

    /// A permit for unit tests of WebFetch against servers on loopback.
    #[cfg(all(test, feature = "web"))]
    pub(crate) fn for_tests_reaching_local() -> Permit {
        Permit {
            reach_local: true,
            ..Permit::for_tests(Vec::new())
        }
    }

    /// A permit for unit tests of single tools: the paths as given.
    #[cfg(test)]
    pub(crate) fn for_tests(paths: Vec<PathBuf>) -> Permit {
        Permit {
            call_id: "toolu_test".into(),
            paths,
            filter: Default::default(),
            hardened: false,
            reach_local: false,
            command: None,
            cwd: None,
            sandbox: None,
        }
    }
}

/// A call that may run if a person (or a hook speaking for one) says yes.
pub struct Question {
    pub(super) text: String,
    pub(super) permit: Permit,
}

impl Question {
    /// What is being asked, for the person.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The yes: the permit for exactly the call that was asked about.
    /// Call only with an answer from the user, an SDK's `can_use_tool`,
    /// or a PreToolUse hook's `allow`.
    pub fn approve(self) -> Permit {
        self.permit
    }
}

impl fmt::Debug for Question {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Question({:?})", self.text)
    }
}

/// Why a call was refused, for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason(pub String);

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub enum Decision {
    Allow(Permit),
    /// Needs a person's yes; the question says what is being asked.
    Ask(Question),
    Deny(Reason),
}

impl fmt::Debug for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Allow(p) => write!(f, "Allow({:?})", p.paths),
            Decision::Ask(q) => write!(f, "Ask({:?})", q.text),
            Decision::Deny(r) => write!(f, "Deny({:?})", r.0),
        }
    }
}

impl Decision {
    pub fn is_allow(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
    pub fn is_ask(&self) -> bool {
        matches!(self, Decision::Ask(_))
    }
    pub fn is_deny(&self) -> bool {
        matches!(self, Decision::Deny(_))
    }
    /// The question's or the refusal's text (empty for an allow).
    pub fn text(&self) -> &str {
        match self {
            Decision::Allow(_) => "",
            Decision::Ask(q) => &q.text,
            Decision::Deny(r) => &r.0,
        }
    }
}
