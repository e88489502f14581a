//! Permission decisions. Every tool call, from any caller, is decided by
//! [`Policy::decide`]; nothing else says yes.
//!
//! Order: deny rules, then ask rules, then the mode (bypass allows, plan
//! refuses anything that writes), then for Bash the fourteen check classes
//! (any hit asks), then allow rules, then each tool's
//! default: reading inside the working directories is allowed, editing
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
pub mod checks;
pub mod shell;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::settings::{Behavior, Origin};
use crate::json::Value;
use crate::tools::{Kind, Tool};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Default,
    AcceptEdits,
    BypassPermissions,
    Plan,
    DontAsk,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "default" | "manual" => Mode::Default,
            "acceptEdits" => Mode::AcceptEdits,
            "bypassPermissions" => Mode::BypassPermissions,
            "plan" => Mode::Plan,
            "dontAsk" => Mode::DontAsk,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::BypassPermissions => "bypassPermissions",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub behavior: Behavior,
    pub tool: String,
    pub spec: Option<String>,
    /// Where it was written (None for rules built in code).
    pub origin: Option<Origin>,
}

impl Rule {
    pub fn parse(text: &str, behavior: Behavior, origin: Option<Origin>) -> Rule {
        let text = text.trim();
        let (tool, spec) = match text.split_once('(') {
            Some((tool, rest)) if rest.ends_with(')') => {
                (tool.trim(), Some(rest[..rest.len() - 1].to_string()))
            }
            _ => (text, None),
        };
        Rule {
            behavior,
            tool: tool.to_string(),
            spec: spec.filter(|s| !s.is_empty() && s != "*"),
            origin,
        }
    }

    pub fn text(&self) -> String {
        match &self.spec {
            Some(s) => format!("{}({s})", self.tool),
            None => self.tool.clone(),
        }
    }

    fn describe(&self) -> String {
        match &self.origin {
            Some(o) => format!("the rule {} from {o}", self.text()),
            None => format!("the rule {}", self.text()),
        }
    }

    /// Does this rule's tool part cover `tool`?
    fn covers_tool(&self, tool: &str) -> bool {
        if self.tool == tool {
            return true;
        }
        match self.tool.as_str() {
            "Read" => matches!(tool, "Glob" | "Grep"),
            "Edit" => matches!(tool, "Write" | "NotebookEdit"),
            server if server.starts_with("mcp__") && !server[5..].contains("__") => tool
                .strip_prefix(server)
                .is_some_and(|rest| rest.starts_with("__")),
            _ => false,
        }
    }
}

/// Splits a tool list the way the CLI accepts it: commas and spaces,
/// except inside parentheses (`Bash(git log:*), Read`).
pub fn split_tool_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' | ' ' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Needs a person's yes; the reason says what is being asked.
    Ask(String),
    Deny(String),
}

pub struct Policy {
    pub mode: Mode,
    /// Set while the session runs (an SDK `set_permission_mode`).
    mode_now: std::cell::Cell<Option<Mode>>,
    pub rules: Vec<Rule>,
    /// Allow rules granted while the session runs ("yes, for this session").
    granted: std::cell::RefCell<Vec<Rule>>,
    /// The Bash sandbox, when on.
    pub sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// `autoAllowBashIfSandboxed`: a sandboxed command that would only be
    /// asked about (no rule, no check class) runs.
    pub sandbox_auto_allow: bool,
    /// Where reading (and, in acceptEdits, editing) needs no question:
    /// the working directory and any added ones, symlinks resolved.
    pub working_dirs: Vec<PathBuf>,
    pub cwd: PathBuf,
}

/// What a call touches, for path rules and the working-directory check.
enum Target {
    /// Bash: the command line, parsed once for every rule and check.
    Command(String, Result<shell::Script, shell::ParseError>),
    /// File tools: the path they act on.
    Path(PathBuf),
    /// Tools with no path (TodoWrite) or unknown inputs.
    Nothing,
}

impl Policy {
    /// A policy with the working directory as its only root.
    pub fn new(mode: Mode, rules: Vec<Rule>, cwd: &Path, extra_dirs: &[PathBuf]) -> Policy {
        let mut working_dirs = vec![canonical(cwd)];
        for d in extra_dirs {
            let c = canonical(d);
            if !working_dirs.contains(&c) {
                working_dirs.push(c);
            }
        }
        Policy {
            mode,
            mode_now: std::cell::Cell::new(None),
            rules,
            granted: std::cell::RefCell::new(Vec::new()),
            sandbox: None,
            sandbox_auto_allow: false,
            working_dirs,
            cwd: cwd.to_path_buf(),
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

    fn target(&self, tool: &str, input: &Value) -> Target {
        if tool == "Bash" {
            return input.str_field("command").map_or(Target::Nothing, |c| {
                Target::Command(c.to_string(), shell::parse(c))
            });
        }
        let path = input.str_field("file_path").or_else(|| match tool {
            "Glob" | "Grep" => Some(input.str_field("path").unwrap_or(".")),
            _ => None,
        });
        match path {
            Some(p) => Target::Path(canonical(&bash::resolve(&self.cwd, p))),
            None => Target::Nothing,
        }
    }

    /// Does `rule` cover this call? For Bash: any one of its commands
    /// (allow rules are checked per command in `decide_command`).
    fn matches(&self, rule: &Rule, tool: &str, target: &Target, input: &Value) -> bool {
        if !rule.covers_tool(tool) {
            return false;
        }
        let Some(spec) = &rule.spec else {
            return true;
        };
        match (tool, target) {
            ("Bash", Target::Command(cmd, parsed)) => match parsed {
                Ok(script) if !script.commands.is_empty() => script
                    .commands
                    .iter()
                    .any(|c| command_matches(spec, &c.effective_text())),
                // Unparsable: deny and ask rules still match by text.
                _ => cmd.contains(spec.trim_end_matches(":*").trim_end_matches(" *")),
            },
            (_, Target::Path(path)) => {
                let base = rule
                    .origin
                    .as_ref()
                    .map_or(self.cwd.as_path(), |o| o.base.as_path());
                path_matches(spec, path, base, &self.cwd)
            }
            ("WebFetch", _) => match (spec.strip_prefix("domain:"), input.str_field("url")) {
                (Some(domain), Some(url)) => {
                    url_host(url).is_some_and(|h| h == domain || h.ends_with(&format!(".{domain}")))
                }
                _ => false,
            },
            _ => false,
        }
    }

    pub fn decide(&self, tool: &dyn Tool, input: &Value) -> Decision {
        let name = tool.name();
        let target = self.target(name, input);
        let rules = self.all_rules();
        let of = |b: Behavior| rules.iter().filter(move |r| r.behavior == b);

        if let Some(rule) = of(Behavior::Deny).find(|r| self.matches(r, name, &target, input)) {
            return Decision::Deny(format!(
                "Permission to use {name} was denied by {}",
                rule.describe()
            ));
        }
        if let Some(rule) = of(Behavior::Ask).find(|r| self.matches(r, name, &target, input)) {
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
                return Decision::Deny(
                    "Running outside the sandbox is turned off (sandbox.allowUnsandboxedCommands is false)".into(),
                );
            }
            return self.ask(format!(
                "{} asks to run outside the sandbox",
                what(name, input)
            ));
        }
        if self.mode() == Mode::BypassPermissions {
            return Decision::Allow;
        }
        let read_only = tool.is_read_only(input);
        if self.mode() == Mode::Plan && !read_only {
            return Decision::Deny(format!(
                "{name} would change things, and plan mode only allows reading. Finish the plan first."
            ));
        }
        if let Target::Command(cmd, parsed) = &target {
            return self.decide_command(name, input, cmd, parsed);
        }
        if self.allowed_by_rules(name, &target, input) {
            return Decision::Allow;
        }
        match (&target, read_only) {
            (Target::Path(p), true) => {
                if self.inside(p) {
                    return Decision::Allow;
                }
                return self.ask(format!(
                    "{} is outside the working directories",
                    what(name, input)
                ));
            }
            (Target::Nothing, true) => return Decision::Allow,
            _ => {}
        }
        if self.mode() == Mode::AcceptEdits
            && tool.kind() == Kind::Edit
            && let Target::Path(p) = &target
        {
            if self.inside(p) {
                return Decision::Allow;
            }
            return self.ask(format!(
                "{} is outside the working directories",
                what(name, input)
            ));
        }
        let why = format!("{} needs approval", what(name, input));
        self.ask(why)
    }

    /// Bash, after deny and ask rules and the mode: the check classes (any
    /// hit asks, whatever the allow rules say), then each simple command
    /// must be approved on its own — by an allow rule, or by being a
    /// read-only command whose paths stay inside the working directories.
    fn decide_command(
        &self,
        name: &str,
        input: &Value,
        cmd: &str,
        parsed: &Result<shell::Script, shell::ParseError>,
    ) -> Decision {
        let findings = checks::check_parsed(cmd, parsed);
        if !findings.is_empty() {
            let list: Vec<String> = findings.iter().map(ToString::to_string).collect();
            return self.ask(format!(
                "{} needs approval: {}",
                what(name, input),
                list.join("; ")
            ));
        }
        let rules = self.all_rules();
        let allows: Vec<&Rule> = rules
            .iter()
            .filter(|r| r.behavior == Behavior::Allow && r.covers_tool(name))
            .collect();
        if allows.iter().any(|r| r.spec.is_none()) {
            return Decision::Allow;
        }
        let refusal = match parsed {
            Err(e) => Some(format!("the command does not parse ({e})")),
            Ok(script) if script.complex => Some(
                "it uses shell constructs (case, functions, arithmetic) that are not analysed"
                    .into(),
            ),
            Ok(script) if script.commands.is_empty() => Some("it is empty".into()),
            Ok(script) => {
                let mut dir = self.cwd.clone();
                script.commands.iter().find_map(|part| {
                    let text = part.effective_text();
                    if allows
                        .iter()
                        .any(|r| r.spec.as_deref().is_some_and(|s| command_matches(s, &text)))
                    {
                        return None;
                    }
                    if script.has_background {
                        return Some("it starts a background job".to_string());
                    }
                    match bash::read_only_part(part, &mut dir) {
                        Err(reason) => Some(reason),
                        Ok(paths) => paths
                            .iter()
                            .map(|p| canonical(&p.0))
                            .find(|p| !self.inside(p))
                            .map(|p| {
                                format!("it reads {}, outside the working directories", p.display())
                            }),
                    }
                })
            }
        };
        match refusal {
            None => Decision::Allow,
            // The sandbox bounds what it can do; checks and rules still ran.
            Some(_)
                if self.sandbox_auto_allow
                    && self.sandbox.as_ref().is_some_and(|s| s.applies_to(input)) =>
            {
                Decision::Allow
            }
            Some(reason) => self.ask(format!("{} needs approval: {reason}", what(name, input))),
        }
    }

    /// An allow rule for a file tool or any other non-Bash tool.
    fn allowed_by_rules(&self, name: &str, target: &Target, input: &Value) -> bool {
        self.rules
            .iter()
            .any(|r| r.behavior == Behavior::Allow && self.matches(r, name, target, input))
    }

    /// The configured rules and those granted during the session.
    fn all_rules(&self) -> Vec<Rule> {
        let mut all = self.rules.clone();
        all.extend(self.granted.borrow().iter().cloned());
        all
    }

    /// Adds an allow rule for the rest of the session.
    pub fn grant(&self, rule: Rule) {
        self.granted.borrow_mut().push(rule);
    }

    /// The rule a person would most likely want for "don't ask again" about
    /// this call: `Bash(npm install:*)`, `Edit(./src/lib.rs)`,
    /// `Read(//abs/dir/**)`. None when no narrow rule fits (a compound
    /// command line).
    pub fn suggest_rule(&self, tool: &str, input: &Value) -> Option<String> {
        match self.target(tool, input) {
            Target::Command(_, parsed) => {
                let script = parsed.ok()?;
                if script.commands.len() != 1 || script.complex || script.has_substitution {
                    return None;
                }
                let words = script.commands[0].effective_words();
                let program = words.first()?;
                let mut prefix = program.text.clone();
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
                if let Some(sub) = words.get(1)
                    && WITH_SUBCOMMANDS.contains(&program.text.as_str())
                    && !sub.text.starts_with('-')
                    && !sub.text.contains(['/', '.', '='])
                    && !sub.expands
                {
                    prefix = format!("{prefix} {}", sub.text);
                }
                Some(format!("Bash({prefix}:*)"))
            }
            Target::Path(p) => {
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
                    Some(format!("{kind}(/{}/**)", dir.display()))
                }
            }
            Target::Nothing => Some(tool.to_string()),
        }
    }

    fn ask(&self, question: String) -> Decision {
        if self.mode() == Mode::DontAsk {
            Decision::Deny(format!(
                "{question}, and dontAsk mode refuses anything not allowed in advance."
            ))
        } else {
            Decision::Ask(question)
        }
    }

    /// Inside a working directory, symlinks resolved.
    pub fn inside(&self, path: &Path) -> bool {
        let real = canonical(path);
        self.working_dirs.iter().any(|d| real.starts_with(d))
    }
}

/// How a Bash spec matches one simple command.
pub fn command_matches(spec: &str, command: &str) -> bool {
    if let Some(prefix) = spec.strip_suffix(":*") {
        return command == prefix || command.starts_with(&format!("{prefix} "));
    }
    if let Some(prefix) = spec.strip_suffix(" *")
        && !prefix.contains('*')
    {
        return command == prefix || command.starts_with(&format!("{prefix} "));
    }
    if spec.contains('*') {
        return wildcard(spec, command);
    }
    spec == command
}

/// `*` matches any run of characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

fn path_matches(spec: &str, path: &Path, base: &Path, cwd: &Path) -> bool {
    let pattern = if let Some(abs) = spec.strip_prefix("//") {
        format!("/{abs}")
    } else if spec == "~" || spec.starts_with("~/") {
        bash::resolve(cwd, spec).display().to_string()
    } else if let Some(rel) = spec.strip_prefix('/') {
        base.join(rel).display().to_string()
    } else {
        cwd.join(spec.strip_prefix("./").unwrap_or(spec))
            .display()
            .to_string()
    };
    let pattern = canonical_prefix(&pattern);
    // A plain path covers itself and everything under it (gitignore-style).
    if !pattern.contains(['*', '?', '[', '{']) {
        return path == Path::new(&pattern) || path.starts_with(&pattern);
    }
    match globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
    {
        Ok(g) => {
            let m = g.compile_matcher();
            m.is_match(path) || path.ancestors().any(|a| m.is_match(a))
        }
        Err(_) => false,
    }
}

/// Resolves symlinks in the part of a pattern before its first wildcard,
/// so a rule and a canonical path compare like with like.
fn canonical_prefix(pattern: &str) -> String {
    let cut = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let dir_end = pattern[..cut].rfind('/').unwrap_or(0);
    let (dir, rest) = pattern.split_at(dir_end);
    if dir.is_empty() {
        return pattern.to_string();
    }
    format!("{}{rest}", canonical(Path::new(dir)).display())
}

/// The path with symlinks resolved; for a path that does not exist yet,
/// its nearest existing ancestor is resolved and the rest appended.
pub fn canonical(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&cur) {
            let mut out = real;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (cur.file_name().map(|n| n.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                cur = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit('@').next()?;
    Some(host.split(':').next().unwrap_or(host))
}

fn what(name: &str, input: &Value) -> String {
    match (
        name,
        input.str_field("command"),
        input.str_field("file_path"),
    ) {
        ("Bash", Some(cmd), _) => format!("Running `{}`", first_line(cmd)),
        (_, _, Some(path)) => format!("{name} on {path}"),
        _ => format!("Using {name}"),
    }
}

fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    crate::tools::cut_str(line, 200)
}

#[cfg(test)]
mod tests;
