//! Permission rules and modes: the grammar of `Tool` / `Tool(spec)`
//! rules, where each rule was written, and how a spec matches a command
//! or a path. The settings layers produce these; [`super::Policy`]
//! evaluates them.

use std::fmt;
use std::path::{Path, PathBuf};

use super::path::{self, Base};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    User,
    Project,
    Local,
    Cli,
    Managed,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
            Source::Local => "local",
            Source::Cli => "command line",
            Source::Managed => "managed policy",
        }
    }

    /// The `--setting-sources` name, for the layers it can filter.
    pub(crate) fn filter_name(self) -> Option<&'static str> {
        match self {
            Source::User => Some("user"),
            Source::Project => Some("project"),
            Source::Local => Some("local"),
            Source::Cli | Source::Managed => None,
        }
    }
}

/// Where a setting was read: the layer and the file (or `--settings`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub source: Source,
    pub file: String,
    /// Directory that relative paths in this layer's rules are taken from.
    pub base: PathBuf,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.source.label(), self.file)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    Allow,
    Ask,
    Deny,
}

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

    /// Most restrictive first: plan refuses anything not read-only,
    /// dontAsk refuses every question, then default, acceptEdits, bypass.
    fn rank(self) -> u8 {
        match self {
            Mode::Plan => 0,
            Mode::DontAsk => 1,
            Mode::Default => 2,
            Mode::AcceptEdits => 3,
            Mode::BypassPermissions => 4,
        }
    }

    /// `self` unless `wanted` restricts more: a sub-agent's definition and
    /// an untrusted project may only move a mode this way.
    pub fn narrower(self, wanted: Option<Mode>) -> Mode {
        match wanted {
            Some(w) if w.rank() < self.rank() => w,
            _ => self,
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

    pub(crate) fn describe(&self) -> String {
        match &self.origin {
            Some(o) => format!("the rule {} from {o}", self.text()),
            None => format!("the rule {}", self.text()),
        }
    }

    /// Does this rule's tool part cover `tool`?
    pub(crate) fn covers_tool(&self, tool: &str) -> bool {
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

    /// Does this rule name `path` (resolved) for `tool`? For what reads
    /// files into the conversation outside a tool call (memory imports),
    /// which must honour the same deny rules as Read.
    pub(crate) fn names_path(&self, tool: &str, path: &Path, base: &Base) -> bool {
        if !self.covers_tool(tool) {
            return false;
        }
        let Some(spec) = &self.spec else {
            return true;
        };
        let rule_base = self
            .origin
            .as_ref()
            .map_or(base.cwd.as_path(), |o| o.base.as_path());
        PathPattern::new(spec, rule_base, base).matches(path)
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

/// A file rule's spec, compiled: gitignore-style, matched against
/// resolved paths. `//x` is absolute, `~/x` is home, `/x` is relative to
/// the settings file's directory, anything else to the working directory;
/// a plain path covers itself and everything under it.
pub(crate) struct PathPattern {
    plain: Option<PathBuf>,
    glob: Option<globset::GlobMatcher>,
    /// The directory the pattern is rooted at (its part before any
    /// wildcard), resolved; empty when it names nothing.
    root: PathBuf,
}

impl PathPattern {
    pub(crate) fn new(spec: &str, rule_base: &Path, base: &Base) -> PathPattern {
        let pattern = if let Some(abs) = spec.strip_prefix("//") {
            format!("/{abs}")
        } else if spec == "~" || spec.starts_with("~/") {
            path::expand_tilde(spec, base)
                .map(|p| p.display().to_string())
                // No home: the rule can name nothing.
                .unwrap_or_default()
        } else if let Some(rel) = spec.strip_prefix('/') {
            rule_base.join(rel).display().to_string()
        } else {
            base.cwd
                .join(spec.strip_prefix("./").unwrap_or(spec))
                .display()
                .to_string()
        };
        if pattern.is_empty() {
            return PathPattern {
                plain: None,
                glob: None,
                root: PathBuf::new(),
            };
        }
        let pattern = canonical_prefix(&pattern);
        if wildcard_at(&pattern).is_none() {
            return PathPattern {
                plain: Some(PathBuf::from(&pattern)),
                glob: None,
                root: PathBuf::from(pattern),
            };
        }
        let cut = wildcard_at(&pattern).unwrap_or(pattern.len());
        let root = PathBuf::from(match pattern[..cut].rfind('/') {
            Some(i) => &pattern[..i.max(1)],
            None => "",
        });
        let glob = globset::GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .ok()
            .map(|g| g.compile_matcher());
        PathPattern {
            plain: None,
            glob,
            root,
        }
    }

    /// Could the pattern name something below `dir` (a tree read as a
    /// whole)? A plain path inside it, or a glob rooted above or inside it.
    pub(crate) fn could_be_under(&self, dir: &Path) -> bool {
        if self.root.as_os_str().is_empty() {
            return false;
        }
        self.root.starts_with(dir) || (self.glob.is_some() && dir.starts_with(&self.root))
    }

    /// The one path a pattern without wildcards names (it covers what is
    /// below it too).
    pub(crate) fn plain(&self) -> Option<&Path> {
        self.plain.as_deref()
    }

    /// Does the pattern cover this resolved path (or a directory above it)?
    pub(crate) fn matches(&self, path: &Path) -> bool {
        if let Some(p) = &self.plain {
            return path.starts_with(p);
        }
        match &self.glob {
            Some(m) => m.is_match(path) || path.ancestors().any(|a| m.is_match(a)),
            None => false,
        }
    }
}

/// Where the first wildcard (`*`, `?`, `[`, `{`) is. (By bytes: these
/// are ASCII, and searching for a set of chars decodes every one.)
fn wildcard_at(pattern: &str) -> Option<usize> {
    pattern
        .bytes()
        .position(|b| matches!(b, b'*' | b'?' | b'[' | b'{'))
}

/// Resolves symlinks in the part of a pattern before its first wildcard,
/// so a rule and a resolved path compare like with like.
fn canonical_prefix(pattern: &str) -> String {
    let cut = wildcard_at(pattern).unwrap_or(pattern.len());
    let dir_end = pattern[..cut].rfind('/').unwrap_or(0);
    let (dir, rest) = pattern.split_at(dir_end);
    if dir.is_empty() {
        return pattern.to_string();
    }
    format!("{}{rest}", path::canonical(Path::new(dir)).display())
}
