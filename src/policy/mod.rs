//! Permission decisions. Every tool call, from any caller, is decided by
//! [`Policy::decide`] over the facts of the call ([`Call`]); nothing else
//! says yes, and nothing else can make the [`Permit`] a tool needs to run.
//! Policy imports no tool: it sees names, kinds, paths and inputs.
//!
//! File tools: each path is resolved once ([`resolve`]: symlinks followed
//! before `..`, `~`, `~+`, `~user`) and the permit carries the resolved
//! path the tool opens. A write to a protected path (`.git/`, `.tern/`,
//! `.claude/`, `.mcp.json`, hook scripts, …) or outside the working
//! directories asks in every mode but bypass, unless an allow rule names
//! that path. Searches carry the read rules that name paths and leave
//! such files out.
//!
//! Bash is decided in [`bash::decide`]: the line is parsed with
//! tree-sitter-bash, reduced to a plan of literal argv and held against
//! per-program specs; anything not understood asks.
//!
//! Order for the other tools: deny rules, then ask rules, then the mode
//! (bypass allows, plan refuses anything that writes), then allow rules,
//! then each tool's default: reading inside the working directories is allowed, editing
//! there is allowed in acceptEdits, everything else asks. `dontAsk` turns
//! every remaining ask into a refusal. Every decision names the rule (and
//! its file) or the reason behind it.
//!
//! Rule grammar (Claude Code's): `Tool`, `Tool(spec)`. Bash specs match
//! *each* simple command of a command line after wrappers (`timeout`,
//! `nice`, `env A=b` …) are stripped: `Bash(npm run test:*)` is a prefix,
//! `Bash(git diff *)` a glob, anything else exact; an allow rule approves a
//! command line only if every part is approved. File specs
//! (`Read(./.env)`, `Edit(/src/**)`, `Read(~/.ssh/**)`, `Read(//etc/**)`)
//! are gitignore-style paths matched after symlinks are resolved:
//! `//` is absolute, `~/` is home, `/` is the settings file's directory,
//! anything else the working directory. Read rules cover Glob and Grep;
//! Edit rules cover Write. `mcp__server` covers every tool of that server.

pub mod bash;
mod command_env;
mod memo;
mod path;
mod permit;
mod rules;
mod spec;
pub mod url;

use std::path::{Path, PathBuf};

use crate::json::Value;
pub use command_env::CommandEnv;
pub use path::{Base, canonical, resolve};
pub use permit::{Access, Call, Decision, Kind, PathUse, Permit, Question, ReadFilter, Reason};
use rules::PathPattern;
pub use rules::{Behavior, Mode, Origin, Rule, Source, split_tool_list};
pub use spec::PolicySpec;
use url::WebUrl;

pub struct Policy {
    pub mode: Mode,
    /// Set while the session runs (an SDK `set_permission_mode`).
    mode_now: std::cell::Cell<Option<Mode>>,
    pub rules: Vec<Rule>,
    /// Rules added while the session runs ("yes, for this session", an
    /// SDK's `updatedPermissions`).
    granted: std::cell::RefCell<Vec<Rule>>,
    /// The Bash sandbox, when on (shared with the permits of the lines
    /// that run in it).
    sandbox: Option<std::sync::Arc<crate::sandbox::SandboxPolicy>>,
    /// `autoAllowBashIfSandboxed`: a sandboxed command that would only be
    /// asked about (no rule, no check class) runs.
    sandbox_auto_allow: bool,
    /// Where reading (and, in acceptEdits, editing) needs no question:
    /// the working directory and any added ones, symlinks resolved.
    pub working_dirs: Vec<PathBuf>,
    /// Directories added while the session runs (SDK `addDirectories`).
    added_dirs: std::cell::RefCell<Vec<PathBuf>>,
    pub cwd: PathBuf,
    /// For `~` in paths and rules.
    pub home: Option<PathBuf>,
    /// The environment the session's commands start with.
    env: std::rc::Rc<CommandEnv>,
    /// Files and folders beyond the built-in list whose change can make
    /// tern or git run code or allow more (hook scripts, the user's
    /// settings folders): writing them always asks, outside bypass mode.
    protected: Vec<PathBuf>,
}

/// The internal verdict, before a permit is minted.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Allow,
    /// A Bash line allowed because it only reads: run it hardened.
    AllowHardened,
    /// A Bash line allowed to run as `command`, its globs replaced by
    /// what they were decided on (hardened when it only reads).
    AllowCommand {
        hardened: bool,
        command: String,
    },
    Ask(String),
    Deny(String),
}

/// What a call touches, for path rules and the working-directory check.
enum Target {
    /// Bash: the command line (decided in [`bash::decide`]).
    Command(String),
    /// File tools: the paths they open, resolved.
    Paths(Vec<(Access, PathBuf)>),
    /// A path that cannot be resolved, and why.
    Unresolvable(String),
    /// WebFetch: the URL as it will be requested.
    Web(WebUrl),
    /// A URL WebFetch will not request, and why.
    BadUrl(String),
    /// Tools with no path (TodoWrite) or unknown inputs.
    Nothing,
}

/// Directory names whose contents change what git, tern or an editor run
/// or allow: writing anything below one asks in every mode but bypass.
const PROTECTED_DIRS: &[&str] = &[".git", ".tern", ".claude", ".vscode", ".idea", ".husky"];
/// File names with the same power, wherever they are.
const PROTECTED_FILES: &[&str] = &[
    ".git",
    ".mcp.json",
    ".claude.json",
    ".gitconfig",
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".envrc",
    ".ripgreprc",
    // jq reads `~/.jq` as a module on every run.
    ".jq",
];

/// The built-in protected names, for `tern config permissions`.
pub fn protected_names() -> Vec<String> {
    PROTECTED_DIRS
        .iter()
        .map(|d| format!("{d}/"))
        .chain(PROTECTED_FILES.iter().map(|f| f.to_string()))
        .collect()
}

impl Policy {
    /// A policy with the working directory as its only root, no
    /// sandbox and tern's own environment (tests, benchmarks, tools that
    /// ask about one call); sessions build theirs with [`Policy::from_spec`].
    pub fn new(mode: Mode, rules: Vec<Rule>, cwd: &Path, extra_dirs: &[PathBuf]) -> Policy {
        Policy::from_spec(PolicySpec::new(mode, rules, cwd, extra_dirs))
    }

    /// The policy `spec` describes, whole.
    pub fn from_spec(spec: PolicySpec) -> Policy {
        let mut working_dirs = vec![canonical(&spec.cwd)];
        for d in &spec.extra_dirs {
            let c = canonical(d);
            if !working_dirs.contains(&c) {
                working_dirs.push(c);
            }
        }
        // Without the session's environment tern's own stands in, its
        // HOME taken as it is (no account lookup).
        let (env, home) = match spec.command_env {
            Some(env) => {
                let home = env.home();
                (env, home)
            }
            None => {
                let env = CommandEnv::inherited();
                let home = env.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
                (std::rc::Rc::new(env), home)
            }
        };
        Policy {
            mode: spec.mode,
            mode_now: std::cell::Cell::new(None),
            rules: spec.rules,
            granted: std::cell::RefCell::new(Vec::new()),
            sandbox: spec.sandbox.map(std::sync::Arc::new),
            sandbox_auto_allow: spec.sandbox_auto_allow,
            working_dirs,
            added_dirs: std::cell::RefCell::new(Vec::new()),
            cwd: spec.cwd,
            home,
            env,
            protected: spec.protected,
        }
    }

    /// The mode in force now.
    pub fn mode(&self) -> Mode {
        self.mode_now.get().unwrap_or(self.mode)
    }

    /// Changes the mode for the rest of the session.
    pub fn set_mode(&self, mode: Mode) {
        self.mode_now.set(Some(mode));
    }

    /// Where `~` and relative paths point for this session.
    pub fn base(&self) -> Base {
        Base {
            cwd: self.cwd.clone(),
            home: self.home.clone(),
        }
    }

    fn target(&self, call: &Call) -> Target {
        if call.tool == "Bash" {
            return call
                .input
                .str_field("command")
                .map_or(Target::Nothing, |c| Target::Command(c.to_string()));
        }
        if call.tool == "WebFetch" {
            return match call.input.str_field("url").map(url::parse) {
                Some(Ok(u)) => Target::Web(u),
                Some(Err(e)) => Target::BadUrl(e),
                None => Target::BadUrl("no url given".into()),
            };
        }
        if call.paths.is_empty() {
            return Target::Nothing;
        }
        // A search without a path, or with a relative one, starts where
        // the shell is (the pipeline says where), as the tool will.
        let base = match &call.cwd {
            Some(dir) => Base {
                cwd: dir.clone(),
                home: self.home.clone(),
            },
            None => self.base(),
        };
        let mut out = Vec::new();
        for p in &call.paths {
            match resolve(&p.raw, &base) {
                Ok(r) => out.push((p.access, r)),
                Err(e) => return Target::Unresolvable(e),
            }
        }
        Target::Paths(out)
    }

    /// Does `rule` cover this call? (Not used for Bash lines, which
    /// [`bash::decide`] matches command by command.)
    fn matches(&self, rule: &Rule, tool: &str, target: &Target, _input: &Value) -> bool {
        if !rule.covers_tool(tool) {
            return false;
        }
        let Some(spec) = &rule.spec else {
            return true;
        };
        match (tool, target) {
            (_, Target::Paths(paths)) => {
                let pattern = self.pattern(rule, spec);
                paths.iter().any(|(_, p)| pattern.matches(p))
            }
            (_, Target::Web(u)) => spec
                .strip_prefix("domain:")
                .is_some_and(|domain| u.host.matches_domain(domain)),
            _ => false,
        }
    }

    fn rule_base<'r>(&'r self, rule: &'r Rule) -> &'r Path {
        rule.origin
            .as_ref()
            .map_or(self.cwd.as_path(), |o| o.base.as_path())
    }

    /// A rule's path pattern, built once per decision.
    fn pattern(&self, rule: &Rule, spec: &str) -> std::rc::Rc<PathPattern> {
        let rule_base = self.rule_base(rule);
        memo::pattern(rule_base, &self.cwd, spec, || {
            PathPattern::new(spec, rule_base, &self.base())
        })
    }

    /// One that outlives the decision (a search's filter keeps it).
    fn own_pattern(&self, rule: &Rule, spec: &str) -> PathPattern {
        PathPattern::new(spec, self.rule_base(rule), &self.base())
    }

    /// Decides one call from its facts. Only this (and a yes to the
    /// question it returns) makes a [`Permit`].
    pub fn decide(&self, call: &Call) -> Decision {
        memo::scope(|| self.decide_now(call))
    }

    fn decide_now(&self, call: &Call) -> Decision {
        let target = self.target(call);
        let verdict = self.verdict(call, &target);
        let filter = std::sync::Arc::new(self.read_filter(call, &target));
        let reach_local = match &target {
            Target::Web(u) => self.web_reaches_local(call, &target, u),
            _ => false,
        };
        // A line the sandbox would not hold (an excluded command, one
        // that asked to leave it) runs outside it only by this decision.
        let sandbox = match &target {
            Target::Command(_) => self
                .sandbox
                .clone()
                .filter(|p| bash::sandbox_applies(p, call.input)),
            _ => None,
        };
        let paths: Vec<PathBuf> = match target {
            Target::Paths(paths) => paths.into_iter().map(|(_, p)| p).collect(),
            _ => Vec::new(),
        };
        let permit = |hardened, command| Permit {
            call_id: call.id.to_string(),
            paths,
            filter,
            hardened,
            reach_local,
            command,
            cwd: call.cwd.clone(),
            sandbox,
        };
        match verdict {
            Verdict::Allow => Decision::Allow(permit(false, None)),
            Verdict::AllowHardened => Decision::Allow(permit(true, None)),
            Verdict::AllowCommand { hardened, command } => {
                Decision::Allow(permit(hardened, Some(command)))
            }
            Verdict::Ask(text) => Decision::Ask(Question {
                text,
                permit: permit(false, None),
            }),
            Verdict::Deny(text) => Decision::Deny(Reason(text)),
        }
    }

    /// For searches: the read rules (deny and ask) that name paths, which
    /// every file a search opens or lists must pass. A rule that covers
    /// the search's own root was decided for the whole call (it denied,
    /// or someone said yes) and does not filter again.
    fn read_filter(&self, call: &Call, target: &Target) -> ReadFilter {
        let Target::Paths(paths) = target else {
            return ReadFilter::default();
        };
        let roots: Vec<&PathBuf> = paths
            .iter()
            .filter(|(a, _)| *a == Access::Search)
            .map(|(_, p)| p)
            .collect();
        if roots.is_empty() {
            return ReadFilter::default();
        }
        let patterns = self
            .all_rules()
            .iter()
            .filter(|r| matches!(r.behavior, Behavior::Deny | Behavior::Ask))
            .filter(|r| r.covers_tool(call.tool))
            .filter_map(|r| r.spec.as_deref().map(|s| self.own_pattern(r, s)))
            .filter(|p| !roots.iter().any(|root| p.matches(root)))
            .collect();
        ReadFilter { patterns }
    }

    fn verdict(&self, call: &Call, target: &Target) -> Verdict {
        let (name, input) = (call.tool, call.input);
        if let Target::Unresolvable(why) = target {
            return Verdict::Deny(format!(
                "{name} cannot use that path ({why}); give the path without it"
            ));
        }
        if let Target::BadUrl(why) = target {
            return Verdict::Deny(format!("{name} will not fetch that URL: {why}"));
        }
        if let Target::Command(cmd) = target {
            return match self.decide_bash(call, cmd) {
                bash::decide::BashVerdict::Allow { hardened: false } => Verdict::Allow,
                bash::decide::BashVerdict::Allow { hardened: true } => Verdict::AllowHardened,
                bash::decide::BashVerdict::AllowPinned { hardened, command } => {
                    Verdict::AllowCommand { hardened, command }
                }
                bash::decide::BashVerdict::Ask(q) => Verdict::Ask(q),
                bash::decide::BashVerdict::Deny(r) => Verdict::Deny(r),
            };
        }
        let rules = self.all_rules();
        let of = |b: Behavior| rules.iter().filter(move |r| r.behavior == b);

        if let Some(rule) = of(Behavior::Deny).find(|r| self.matches(r, name, target, input)) {
            return Verdict::Deny(format!(
                "Permission to use {name} was denied by {}",
                rule.describe()
            ));
        }
        if call.kind == Kind::Ask {
            // What it asks for is a person's answer: no rule or mode gives it.
            return self.ask(format!("{name} needs your answer"));
        }
        if let Some(rule) = of(Behavior::Ask).find(|r| self.matches(r, name, target, input)) {
            return self.ask(format!(
                "{} requires approval ({})",
                what(name, input),
                rule.describe()
            ));
        }
        if let Some(sandbox) = &self.sandbox
            && input
                .get("dangerouslyDisableSandbox")
                .and_then(Value::as_bool)
                == Some(true)
        {
            // Leaving the sandbox always goes back to a person, even in bypass mode.
            if !sandbox.allow_unsandboxed {
                return Verdict::Deny(
                    "Running outside the sandbox is turned off (sandbox.allowUnsandboxedCommands is false)".into(),
                );
            }
            return self.ask(format!(
                "{} asks to run outside the sandbox",
                what(name, input)
            ));
        }
        if self.mode() == Mode::BypassPermissions {
            return Verdict::Allow;
        }
        if self.mode() == Mode::Plan && !*call.read_only {
            return Verdict::Deny(format!(
                "{name} would change things, and plan mode only allows reading. Finish the plan first."
            ));
        }
        match target {
            Target::Paths(paths) => self.decide_paths(call, target, paths),
            Target::Web(u) => self.decide_web(call, target, u),
            Target::Command(_) | Target::Nothing | Target::Unresolvable(_) | Target::BadUrl(_) => {
                if self.allowed_by_rules(name, target, input) || *call.read_only {
                    return Verdict::Allow;
                }
                self.ask(format!("{} needs approval", what(name, input)))
            }
        }
    }

    /// File tools, after deny and ask rules and the mode. A write to a
    /// protected path or outside the working directories asks unless an
    /// allow rule names that path (a bare `Edit` rule does not); then
    /// allow rules; reading inside the working directories is allowed,
    /// and so is editing there in acceptEdits.
    fn decide_paths(&self, call: &Call, target: &Target, paths: &[(Access, PathBuf)]) -> Verdict {
        let (name, input) = (call.tool, call.input);
        let named_by_rule = |p: &Path| {
            self.all_rules().iter().any(|r| {
                r.behavior == Behavior::Allow
                    && r.covers_tool(name)
                    && r.spec
                        .as_deref()
                        .is_some_and(|s| self.pattern(r, s).matches(p))
            })
        };
        for (access, p) in paths {
            if *access != Access::Write {
                continue;
            }
            if let Some(why) = self.protection(p) {
                if !named_by_rule(p) {
                    return self.ask(format!("{name} would change {} ({why})", p.display()));
                }
            } else if !self.inside(p) && !named_by_rule(p) {
                return self.ask(format!(
                    "{name} would change {}, outside the working directories",
                    p.display()
                ));
            }
        }
        if self.allowed_by_rules(name, target, input) {
            return Verdict::Allow;
        }
        if *call.read_only {
            return match paths.iter().find(|(_, p)| !self.inside(p)) {
                None => Verdict::Allow,
                Some((_, p)) => self.ask(format!(
                    "{name} would read {}, outside the working directories",
                    p.display()
                )),
            };
        }
        if self.mode() == Mode::AcceptEdits && call.kind == Kind::Edit {
            // Every write was checked above: inside and not protected.
            return Verdict::Allow;
        }
        self.ask(format!("{} needs approval", what(name, input)))
    }

    /// WebFetch, after deny and ask rules and the mode: a `domain:` rule
    /// naming the host allows; a bare `WebFetch` rule allows public hosts
    /// only (a local address behind a blanket yes is how a page's
    /// instructions reach a metadata service or a local admin port);
    /// anything else asks. Reading the network is never allowed by
    /// default, even though it changes nothing here.
    fn decide_web(&self, call: &Call, target: &Target, u: &WebUrl) -> Verdict {
        let rules = self.all_rules();
        let allows = |r: &&Rule| r.behavior == Behavior::Allow && r.covers_tool(call.tool);
        if rules
            .iter()
            .filter(allows)
            .any(|r| r.spec.is_some() && self.matches(r, call.tool, target, call.input))
        {
            return Verdict::Allow;
        }
        let blanket = rules.iter().filter(allows).find(|r| r.spec.is_none());
        match blanket {
            Some(_) if !u.host.is_local() => Verdict::Allow,
            Some(rule) => self.ask(format!(
                "{} would fetch {u}, a local address; {} covers public hosts only (a WebFetch(domain:{}) rule names this one)",
                call.tool,
                rule.describe(),
                u.host.bare()
            )),
            None => self.ask(format!("{} wants to fetch {u}", call.tool)),
        }
    }

    /// May an allowed fetch reach loopback and private addresses? Only
    /// when the host was named as such: bypass mode, a `domain:` rule for
    /// it, or a local host that someone was asked about by name. A
    /// public name allowed by a blanket rule or a one-time yes is not
    /// followed to a local address (DNS rebinding).
    fn web_reaches_local(&self, call: &Call, target: &Target, u: &WebUrl) -> bool {
        self.mode() == Mode::BypassPermissions
            || u.host.is_local()
            || self.all_rules().iter().any(|r| {
                r.behavior == Behavior::Allow
                    && r.spec.is_some()
                    && self.matches(r, call.tool, target, call.input)
            })
    }

    /// Why writing `path` (resolved) could make tern, git or the shell do
    /// more than the user agreed to, if it could.
    fn protection(&self, path: &Path) -> Option<String> {
        for c in path.components() {
            let std::path::Component::Normal(n) = c else {
                continue;
            };
            let n = n.to_string_lossy();
            if PROTECTED_DIRS.contains(&n.as_ref()) && path.file_name() != Some(c.as_os_str()) {
                return Some(format!(
                    "it is inside {n}/, which can make tools run code or allow more"
                ));
            }
        }
        if let Some(f) = path.file_name().map(|f| f.to_string_lossy())
            && PROTECTED_FILES.contains(&f.as_ref())
        {
            return Some(format!("{f} can make tools run code or allow more"));
        }
        if let Some(p) = self
            .protected
            .iter()
            .map(|p| canonical(p))
            .find(|p| path.starts_with(p))
        {
            return Some(format!(
                "{} is protected (a hook script or settings)",
                p.display()
            ));
        }
        self.git_protected()
            .iter()
            .map(|p| canonical(p))
            .find(|p| path.starts_with(p))
            .map(|p| {
                format!(
                    "{} is protected (git runs hooks from it or reads it as config)",
                    p.display()
                )
            })
    }

    /// What git's config makes protected for this session: the hooks
    /// path of the user's and the repositories' config, git's XDG config
    /// folder, included config files (computed afresh: a config may
    /// change during the session).
    fn git_protected(&self) -> Vec<PathBuf> {
        let xdg = self
            .env
            .get("XDG_CONFIG_HOME")
            .filter(|x| !x.is_empty())
            .map(PathBuf::from);
        bash::git::protected_paths(&self.roots(), self.home.as_deref(), xdg.as_deref())
    }

    /// An allow rule for a file tool or any other non-Bash tool.
    fn allowed_by_rules(&self, name: &str, target: &Target, input: &Value) -> bool {
        self.all_rules()
            .iter()
            .any(|r| r.behavior == Behavior::Allow && self.matches(r, name, target, input))
    }

    /// The configured rules and those granted during the session.
    fn all_rules(&self) -> std::borrow::Cow<'_, [Rule]> {
        let granted = self.granted.borrow();
        if granted.is_empty() {
            return std::borrow::Cow::Borrowed(&self.rules);
        }
        let mut all = self.rules.clone();
        all.extend(granted.iter().cloned());
        std::borrow::Cow::Owned(all)
    }

    /// Adds a rule (allow, ask or deny) for the rest of the session.
    pub fn grant(&self, rule: Rule) {
        self.granted.borrow_mut().push(rule);
    }

    /// Adds a working directory for the rest of the session.
    pub fn add_dir(&self, dir: &Path) {
        let c = canonical(dir);
        let mut added = self.added_dirs.borrow_mut();
        if !self.working_dirs.contains(&c) && !added.contains(&c) {
            added.push(c);
        }
    }

    /// The rule a person would most likely want for "don't ask again" about
    /// this call: `Bash(npm install:*)`, `Edit(./src/lib.rs)`,
    /// `Read(//abs/dir)` (the folder and all below). None when no narrow rule fits (a compound
    /// command line).
    pub fn suggest_rule(&self, call: &Call) -> Option<String> {
        let tool = call.tool;
        match self.target(call) {
            Target::Command(cmd) => {
                // The analysis the decision was made from.
                let a = self.bash_analysis(call, &cmd);
                let p = a.planned.as_ref().ok()?;
                let [c] = p.commands.as_slice() else {
                    return None;
                };
                let words = bash::rules::effective(&c.step.argv);
                let program = words.first()?.lit()?;
                let mut prefix = program.to_string();
                // Tools with subcommands get them in the rule: `npm install`, not `npm`.
                const WITH_SUBCOMMANDS: &[&str] = &[
                    "git",
                    "cargo",
                    "npm",
                    "npx",
                    "yarn",
                    "pnpm",
                    "go",
                    "docker",
                    "kubectl",
                    "pip",
                    "pip3",
                    "uv",
                    "poetry",
                    "bundle",
                    "dotnet",
                    "gradle",
                    "mvn",
                    "brew",
                    "apt",
                    "apt-get",
                    "systemctl",
                    "terraform",
                    "helm",
                    "gh",
                    "make",
                    "rustup",
                ];
                if let Some(sub) = words.get(1).and_then(|w| w.lit())
                    && WITH_SUBCOMMANDS.contains(&program)
                    && !sub.starts_with('-')
                    && !sub.contains(['/', '.', '='])
                {
                    prefix = format!("{prefix} {sub}");
                }
                Some(format!("Bash({prefix}:*)"))
            }
            Target::Paths(paths) => {
                let p = paths.first()?.1.clone();
                let kind = if matches!(tool, "Read" | "Glob" | "Grep") {
                    "Read"
                } else {
                    "Edit"
                };
                if let Ok(rel) = p.strip_prefix(canonical(&self.cwd)) {
                    Some(format!("{kind}(./{})", rel.display()))
                } else {
                    let dir = if p.is_dir() {
                        p.clone()
                    } else {
                        p.parent()?.to_path_buf()
                    };
                    Some(format!("{kind}(/{})", dir.display()))
                }
            }
            Target::Web(u) => Some(format!("{tool}(domain:{})", u.host.bare())),
            Target::Unresolvable(_) | Target::BadUrl(_) => None,
            Target::Nothing => Some(tool.to_string()),
        }
    }

    fn ask(&self, question: String) -> Verdict {
        if self.mode() == Mode::DontAsk {
            Verdict::Deny(format!(
                "{question}, and dontAsk mode refuses anything not allowed in advance."
            ))
        } else {
            Verdict::Ask(question)
        }
    }

    /// Inside a working directory, for a path already resolved.
    pub(crate) fn inside_resolved(&self, real: &Path) -> bool {
        self.working_dirs.iter().any(|d| real.starts_with(d))
            || self.added_dirs.borrow().iter().any(|d| real.starts_with(d))
    }

    /// The working directories, added ones included.
    pub(crate) fn roots(&self) -> Vec<PathBuf> {
        let mut all = self.working_dirs.clone();
        all.extend(self.added_dirs.borrow().iter().cloned());
        all
    }

    /// Inside a working directory, symlinks resolved.
    pub fn inside(&self, path: &Path) -> bool {
        let real = canonical(path);
        self.working_dirs.iter().any(|d| real.starts_with(d))
            || self.added_dirs.borrow().iter().any(|d| real.starts_with(d))
    }
}

pub(crate) fn what(name: &str, input: &Value) -> String {
    match (
        name,
        input.str_field("command"),
        input.str_field("file_path"),
    ) {
        ("Bash", Some(cmd), _) => format!("Running `{}`", first_line(cmd)),
        ("WebFetch", _, _) => match input.str_field("url") {
            Some(url) => format!("Fetching {}", first_line(url)),
            None => format!("Using {name}"),
        },
        (_, _, Some(path)) => format!("{name} on {path}"),
        _ => format!("Using {name}"),
    }
}

fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

#[cfg(test)]
mod tests;
