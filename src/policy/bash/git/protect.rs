//! The places git's own config makes into programs or config, beyond
//! `.git/`: the folder `core.hooksPath` names (in the repository's config
//! and in the user's), the files those configs include, and git's XDG
//! config folder. Writing there plants a hook or a setting that runs at
//! the user's next `git commit`, outside tern and its sandbox, so policy
//! treats them as protected paths and the sandbox restores them. One
//! function computes them for both.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::config;
use super::discover;

/// Includes followed from one config file.
const MAX_INCLUDES: usize = 32;

/// The hooks git runs (githooks(5)): protected one by one when a hooks
/// path is a working directory or above one, where protecting the whole
/// folder would make every write ask.
const HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// The protected paths git's config adds, for the working directories
/// `working`, the home directory and `$XDG_CONFIG_HOME` the user's git
/// reads. Paths as configured (callers resolve them); missing ones are
/// included (creating one is what must ask).
pub(crate) fn protected_paths(
    working: &[PathBuf],
    home: Option<&Path>,
    xdg: Option<&Path>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let xdg = xdg.filter(|x| x.is_absolute());
    let mut user_files = Vec::new();
    if let Some(x) = xdg {
        out.push(x.join("git"));
        user_files.push(x.join("git/config"));
    }
    if let Some(h) = home {
        out.push(h.join(".config/git"));
        user_files.push(h.join(".config/git/config"));
        user_files.push(h.join(".gitconfig"));
    }
    user_files.push(PathBuf::from("/etc/gitconfig"));
    let mut user_hooks = Vec::new();
    for f in &user_files {
        collect(f, home, &mut user_hooks, &mut out);
    }
    // Each working directory's repository: its hooks path is taken from
    // its work tree's top (the git directory, when bare).
    let mut tops = Vec::new();
    for w in working {
        let Ok(Some(found)) = discover::discover(w) else {
            continue;
        };
        let top = found.top.clone().unwrap_or_else(|| found.gitdir.clone());
        let mut dirs = vec![found.gitdir.clone()];
        if let Ok(b) = std::fs::read(found.gitdir.join("commondir")) {
            dirs.push(found.gitdir.join(OsStr::from_bytes(b.trim_ascii_end())));
        }
        let mut hooks = Vec::new();
        for d in &dirs {
            for name in ["config", "config.worktree"] {
                collect(&d.join(name), home, &mut hooks, &mut out);
            }
        }
        for h in hooks {
            out.extend(place(&h, std::slice::from_ref(&top), home));
        }
        tops.push(top);
    }
    if tops.is_empty() {
        tops = working.to_vec();
    }
    for h in user_hooks {
        out.extend(place(&h, &tops, home));
    }
    let mut uniq: Vec<PathBuf> = Vec::with_capacity(out.len());
    for p in out {
        let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        let broad = working.iter().any(|w| w.starts_with(&real))
            || home.is_some_and(|h| h.starts_with(&real));
        let each: Vec<PathBuf> = if broad {
            HOOKS.iter().map(|h| p.join(h)).collect()
        } else {
            vec![p]
        };
        for p in each {
            if !uniq.contains(&p) {
                uniq.push(p);
            }
        }
    }
    uniq
}

/// Where a hooks path points: `~/…` from home, an absolute path as it
/// is, a relative one from each work tree's top.
fn place(value: &[u8], tops: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    if value.is_empty() || value == b"/dev/null" {
        return Vec::new();
    }
    match expand(value, home) {
        Some(p) if p.is_absolute() => vec![p],
        Some(p) => tops.iter().map(|t| t.join(&p)).collect(),
        None => Vec::new(),
    }
}

/// `~`, `~/x` and `~user/x` expanded; None when they cannot be.
fn expand(value: &[u8], home: Option<&Path>) -> Option<PathBuf> {
    let Some(rest) = value.strip_prefix(b"~") else {
        return Some(PathBuf::from(OsStr::from_bytes(value)));
    };
    let (user, tail) = match rest.iter().position(|&c| c == b'/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let dir = if user.is_empty() {
        home?.to_path_buf()
    } else {
        crate::policy::path::home_of(std::str::from_utf8(user).ok()?)?
    };
    Some(dir.join(OsStr::from_bytes(tail)))
}

/// The `core.hooksPath` values of a config file and those it includes
/// (the included files join `out`: writing them changes git's config).
fn collect(file: &Path, home: Option<&Path>, hooks: &mut Vec<Vec<u8>>, out: &mut Vec<PathBuf>) {
    let mut todo = vec![file.to_path_buf()];
    let mut seen = 0;
    while let Some(f) = todo.pop() {
        seen += 1;
        if seen > MAX_INCLUDES {
            break;
        }
        let Ok(Some(bytes)) = config::read(&f) else {
            continue;
        };
        let Ok(entries) = config::parse(&bytes) else {
            continue;
        };
        for e in entries {
            let Some(v) = e.value.clone() else {
                continue;
            };
            if e.is("core", "hookspath") {
                hooks.push(v);
            } else if (e.is("include", "path")
                || (e.section == "includeif" && e.sub.is_some() && e.key == "path"))
                && let Some(p) = expand(&v, home)
            {
                let p = match f.parent() {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p,
                };
                out.push(p.clone());
                todo.push(p);
            }
        }
    }
}
