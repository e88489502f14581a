//! Workspace trust: what a checkout may add to a session, decided once,
//! here, before anything else reads the settings.
//!
//! A project's settings (`.claude/settings*.json`, `.tern/settings*.json`)
//! and its `.mcp.json` are the repository's words, and the repository is
//! the attacker's until a person trusts it — `tern -p` in CI runs on a pull
//! request's checkout. What those files would *add* is an [`Item`]: a hook
//! (it runs code), an allow rule, a mode above `default`, a directory
//! outside, an MCP server, a wider tool list, the REPL. Each is admitted
//! only when trust covers it. What only narrows (deny and ask rules, a
//! stricter mode, denyRead) is not an item: it always applies. What loosens
//! the sandbox, or says where credentials and commands go, is the user's
//! alone and never comes from a project, trusted or not
//! ([`Gate::user_only`]).
//!
//! Trust is pinned to content: a person's yes records each item's digest
//! ([`store`]), so an item that changes later (the pull request that edits
//! a hook, or the script the hook runs) has a new digest and stays out
//! until a person looks again. A run may instead be trusted whole, for
//! itself only: `--trust-project`, `TERN_TRUST_PROJECT=1`, a program's
//! `--setting-sources` naming `project` or `local` (the SDKs'
//! `setting_sources`), or the user's own `trustedDirectories`.
//!
//! The settings merge asks the [`Gate`] about each item; hooks, policy,
//! the sandbox and MCP receive settings that already reflect the answers.

use std::path::{Path, PathBuf};

use crate::json::Value;
use crate::obj;

pub(crate) mod store;

/// What kind of power an item would give the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A command tern runs on an event, outside any sandbox.
    Hook,
    /// A `permissions.allow` rule.
    Allow,
    /// `defaultMode` above `default` (acceptEdits, bypassPermissions).
    Mode,
    /// `additionalDirectories`: more places tools may read and write.
    Directory,
    /// An MCP server (`.mcp.json`, a project's `mcpServers`): a program.
    Mcp,
    /// A `tools` list naming tools a trusted layer left out.
    Tools,
    /// `repl.enabled`: the REPL tool.
    Repl,
}

impl Kind {
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Kind::Hook => "hook",
            Kind::Allow => "allow",
            Kind::Mode => "mode",
            Kind::Directory => "directory",
            Kind::Mcp => "mcp",
            Kind::Tools => "tools",
            Kind::Repl => "repl",
        }
    }
}

/// One thing a project's files would add, as the merge met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) kind: Kind,
    /// For a person: `hook SessionStart: touch /tmp/x`, `allow Bash(*)`.
    pub(crate) what: String,
    /// The file it came from.
    pub(crate) file: String,
    /// SHA-256 of the kind and everything that decides what it does.
    pub(crate) digest: String,
    pub(crate) admitted: bool,
    /// This directory was trusted before, without this item as it is now:
    /// it is new, or changed since.
    pub(crate) changed: bool,
    /// A person saw it and said no.
    pub(crate) declined: bool,
}

/// A setting only the user's own layers may give, met in a project's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserOnly {
    /// `sandbox.enabled=false`, `env (PATH)`.
    pub(crate) what: String,
    pub(crate) file: String,
}

/// What a person (or the invocation) said about this directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Everything the project holds, for this run: the reason is named.
    Whole(&'static str),
    /// The digests of the items a person trusted, and of those declined.
    Pinned {
        trusted: Vec<String>,
        declined: Vec<String>,
    },
    /// Nothing said: the project adds nothing.
    Nothing,
}

/// Answers the merge's questions and remembers them for the report.
#[derive(Debug)]
pub(crate) struct Gate {
    grant: Grant,
    items: Vec<Item>,
    user_only: Vec<UserOnly>,
}

impl Gate {
    pub(crate) fn new(grant: Grant) -> Gate {
        Gate {
            grant,
            items: Vec::new(),
            user_only: Vec::new(),
        }
    }

    /// May the project add this? `parts` are everything that decides what
    /// the item does (a hook's command and the scripts it names), so a
    /// change to any of them is a new item.
    pub(crate) fn admit(&mut self, kind: Kind, what: String, file: &str, parts: &[&[u8]]) -> bool {
        let digest = digest(kind, parts);
        let (admitted, changed, declined) = match &self.grant {
            Grant::Whole(_) => (true, false, false),
            Grant::Pinned { trusted, declined } => {
                let known = trusted.contains(&digest);
                (known, !known, declined.contains(&digest))
            }
            Grant::Nothing => (false, false, false),
        };
        let seen = self
            .items
            .iter()
            .any(|i| i.digest == digest && i.file == file);
        if !seen {
            self.items.push(Item {
                kind,
                what,
                file: file.to_string(),
                digest,
                admitted,
                changed,
                declined,
            });
        }
        admitted
    }

    /// A project layer tried to set what only the user may: never used.
    pub(crate) fn user_only(&mut self, what: String, file: &str) {
        let entry = UserOnly {
            what,
            file: file.to_string(),
        };
        if !self.user_only.contains(&entry) {
            self.user_only.push(entry);
        }
    }

    /// The report the rest of the program sees.
    pub(crate) fn finish(self, dir: PathBuf) -> Trust {
        let (by, recorded) = match &self.grant {
            Grant::Whole(why) => (Some(*why), false),
            Grant::Pinned { .. } => (None, true),
            Grant::Nothing => (None, false),
        };
        Trust {
            dir,
            by,
            recorded,
            items: self.items,
            user_only: self.user_only,
        }
    }
}

/// The project's standing for this run: what it would add, what of that
/// was admitted, and what it tried that only the user may set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// The project directory, resolved: the key of its record.
    pub(crate) dir: PathBuf,
    /// Trusted whole for this run, and why (`--trust-project`, …).
    pub(crate) by: Option<&'static str>,
    /// A person answered for this directory before.
    pub(crate) recorded: bool,
    pub(crate) items: Vec<Item>,
    pub(crate) user_only: Vec<UserOnly>,
}

impl Trust {
    /// The items left out.
    pub(crate) fn ignored(&self) -> impl Iterator<Item = &Item> {
        self.items.iter().filter(|i| !i.admitted)
    }

    /// Something is left out that no person has answered for yet: an
    /// interactive start asks.
    pub(crate) fn to_ask(&self) -> bool {
        self.ignored().any(|i| !i.declined)
    }

    /// Where the project stands.
    pub(crate) fn standing(&self) -> Standing {
        let mut ignored = self.ignored().peekable();
        if ignored.peek().is_none() {
            return if self.items.is_empty() && self.by.is_none() && !self.recorded {
                Standing::Nothing
            } else {
                Standing::Trusted
            };
        }
        if ignored.all(|i| i.declined) {
            Standing::Declined
        } else if self.recorded {
            Standing::Changed
        } else {
            Standing::Untrusted
        }
    }

    /// What to tell a person on stderr: nothing when nothing was left out.
    pub(crate) fn notice(&self) -> Vec<String> {
        let mut out = Vec::new();
        let ignored: Vec<&Item> = self.ignored().collect();
        if !ignored.is_empty() {
            out.push(match self.standing() {
                Standing::Changed => format!(
                    "{} changed since you trusted it; not used until you look again:",
                    self.dir.display()
                ),
                Standing::Declined => format!(
                    "{} is not trusted (you said no); not used:",
                    self.dir.display()
                ),
                _ => format!(
                    "{} is not a trusted directory; its settings were not used for:",
                    self.dir.display()
                ),
            });
            for i in &ignored {
                let mark = if i.changed { " (new or changed)" } else { "" };
                out.push(format!("  {}{mark}  [{}]", i.what, i.file));
            }
            out.push(
                "to use them: review them, then run `tern trust` here (or pass --trust-project for one run)"
                    .to_string(),
            );
        }
        for u in &self.user_only {
            out.push(format!(
                "{}: {} ignored (only user settings, --settings and managed policy may set it)",
                u.file, u.what
            ));
        }
        out
    }

    /// The `trust` field of `system/init` and of `tern doctor --json`.
    pub(crate) fn to_value(&self) -> Value {
        let ignored: Vec<Value> = self
            .ignored()
            .map(|i| {
                obj! {
                    "kind" => i.kind.tag(),
                    "what" => i.what.clone(),
                    "file" => i.file.clone(),
                    "changed" => i.changed,
                    "declined" => i.declined,
                }
            })
            .collect();
        let user_only: Vec<Value> = self
            .user_only
            .iter()
            .map(|u| obj! { "what" => u.what.clone(), "file" => u.file.clone() })
            .collect();
        obj! {
            "state" => self.standing().as_str(),
            "directory" => self.dir.display().to_string(),
            "by" => self.by.map_or(Value::Null, Value::from),
            "ignored" => ignored,
            "user_only" => user_only,
        }
    }
}

/// The item an allow rule of a project's settings is: what a person's
/// "always" answer adds, so that it can be recorded as theirs.
pub(crate) fn allow_item(rule: &str, file: &str) -> Item {
    Item {
        kind: Kind::Allow,
        what: format!("allow {rule}"),
        file: file.to_string(),
        digest: digest(Kind::Allow, &[rule.as_bytes()]),
        admitted: true,
        changed: false,
        declined: false,
    }
}

/// Where a project stands, in one word each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Its settings add nothing that runs or widens: trust is moot.
    Nothing,
    /// Everything they add is in (trusted whole, or as recorded).
    Trusted,
    /// Never answered: what they add is left out.
    Untrusted,
    /// Answered before, but items are new or changed since.
    Changed,
    /// A person said no to what is left out.
    Declined,
}

impl Standing {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Standing::Nothing => "nothing",
            Standing::Trusted => "trusted",
            Standing::Untrusted => "untrusted",
            Standing::Changed => "changed",
            Standing::Declined => "declined",
        }
    }
}

/// How this run is trusted whole, if it is: the flag, the variable, a
/// program asking for the project's settings, or the user's list.
pub(crate) fn whole(
    flag: bool,
    env: &dyn Fn(&str) -> Option<String>,
    sources: Option<&[String]>,
    listed: bool,
) -> Option<&'static str> {
    let yes = |v: String| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes");
    if flag {
        Some("--trust-project")
    } else if env(ENV_VAR).is_some_and(yes) {
        Some(ENV_VAR)
    } else if sources.is_some_and(|s| s.iter().any(|n| n == "project" || n == "local")) {
        Some("--setting-sources")
    } else if listed {
        Some("trustedDirectories")
    } else {
        None
    }
}

/// The variable that trusts one run's project.
pub(crate) const ENV_VAR: &str = "TERN_TRUST_PROJECT";

/// Does one of the user's `trustedDirectories` entries name `dir`? An
/// entry is a directory (exactly that one) or `DIR/**` (it and below).
pub(crate) fn listed(dir: &Path, entries: &[PathBuf]) -> bool {
    entries.iter().any(|e| {
        let text = e.to_string_lossy();
        match text.strip_suffix("/**") {
            Some(root) => resolved(Path::new(root)).is_some_and(|r| dir.starts_with(r)),
            None => resolved(e).is_some_and(|r| r == dir),
        }
    })
}

/// The directory as the kernel names it (links followed), if it exists.
pub(crate) fn resolved(dir: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(dir).ok()
}

/// Hex SHA-256 of the kind's tag and the parts, each length-prefixed so
/// no two different lists of parts hash alike.
fn digest(kind: Kind, parts: &[&[u8]]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(kind.tag().as_bytes());
    for p in parts {
        ctx.update(&(p.len() as u64).to_le_bytes());
        ctx.update(p);
    }
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A file's content for a digest: what a hook runs. Bounded (a hook's
/// script is small; past 16 MiB the size and the head stand for it), and
/// a file that cannot be read is said to be so (a later readable one is
/// a change).
pub(crate) fn file_part(path: &Path) -> Vec<u8> {
    use std::io::Read;
    const CAP: u64 = 16 * 1024 * 1024;
    let mut out = path.as_os_str().as_encoded_bytes().to_vec();
    out.push(0);
    match std::fs::File::open(path) {
        Ok(f) => {
            let size = f.metadata().map_or(0, |m| m.len());
            out.extend_from_slice(&size.to_le_bytes());
            let _ = f.take(CAP).read_to_end(&mut out);
        }
        Err(_) => out.extend_from_slice(b"\0unreadable"),
    }
    out
}

#[cfg(test)]
mod tests;
