//! A git directory a command created where there was none: kept when
//! it is harmless (sample hooks, a config of keys `git init` and `git
//! clone` write), otherwise what is not is removed — all through
//! directory descriptors, never following a link.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::fsat;
use super::{MAX_FILES, Report};

/// Git config keys that neither run programs nor point git elsewhere:
/// what `git init`/`git clone` write. A new repository's config with any
/// other key is removed.
const SAFE_GIT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "extensions.objectformat",
    "extensions.refstorage",
    "init.defaultbranch",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "user.name",
    "user.email",
    "pull.rebase",
    "push.default",
    "submodule.*.url",
    "submodule.*.active",
];

/// The first key of a git config that is not known to be harmless.
pub(super) fn unsafe_git_key(text: &str) -> Option<String> {
    let mut section = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            let head = head.split(']').next().unwrap_or("");
            section = match head.split_once(char::is_whitespace) {
                Some((s, _sub)) => format!("{}.*", s.to_ascii_lowercase()),
                None => head.to_ascii_lowercase(),
            };
            // Anything after `]` on the same line is a key too.
            let rest = line.split_once(']').map(|(_, r)| r.trim()).unwrap_or("");
            if rest.is_empty() {
                continue;
            }
            let key = rest
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            let full = format!("{section}.{key}");
            if !SAFE_GIT_KEYS.contains(&full.as_str()) {
                return Some(full);
            }
            continue;
        }
        let key = line
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let full = format!("{section}.{key}");
        if !SAFE_GIT_KEYS.contains(&full.as_str()) {
            return Some(full);
        }
    }
    None
}

/// A git directory the command created: kept when its hooks are samples
/// and its config harmless; what is not is removed.
pub(super) fn check_new_git(dir: &OwnedFd, name: &OsStr, shown: &Path, report: &mut Report) {
    let Ok(st) = fsat::stat_at(dir, name) else {
        return;
    };
    let mut budget = MAX_FILES;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        // A pointer file or a link could lead git anywhere.
        match fsat::remove_tree(dir, name, &mut budget) {
            Ok(()) => report.undone.push(format!(
                "removed {} (a new git pointer or link, which could lead git outside)",
                shown.display()
            )),
            Err(e) => report.refused.push(format!("{}: {e}", shown.display())),
        }
        return;
    }
    let Ok(g) = fsat::open_subdir(dir, name) else {
        return;
    };
    if let Ok(hooks) = fsat::open_subdir(&g, OsStr::new("hooks")) {
        for n in fsat::list(&hooks).unwrap_or_default() {
            let sample = n.as_bytes().ends_with(b".sample")
                && fsat::stat_at(&hooks, &n)
                    .is_ok_and(|s| s.st_mode & libc::S_IFMT == libc::S_IFREG);
            if !sample {
                let mut b = MAX_FILES;
                match fsat::remove_tree(&hooks, &n, &mut b) {
                    Ok(()) => report.undone.push(format!(
                        "removed {}/hooks/{}",
                        shown.display(),
                        n.to_string_lossy()
                    )),
                    Err(e) => report.refused.push(format!(
                        "{}/hooks/{}: {e}",
                        shown.display(),
                        n.to_string_lossy()
                    )),
                }
            }
        }
    } else if fsat::stat_at(&g, OsStr::new("hooks")).is_ok() {
        let mut b = MAX_FILES;
        if fsat::remove_tree(&g, OsStr::new("hooks"), &mut b).is_ok() {
            report.undone.push(format!(
                "removed {}/hooks (not a directory)",
                shown.display()
            ));
        }
    }
    for extra in ["commondir", "config.worktree", "gitdir"] {
        let n = OsStr::new(extra);
        if fsat::stat_at(&g, n).is_ok() {
            let mut b = MAX_FILES;
            match fsat::remove_tree(&g, n, &mut b) {
                Ok(()) => report
                    .undone
                    .push(format!("removed {}/{extra}", shown.display())),
                Err(e) => report
                    .refused
                    .push(format!("{}/{extra}: {e}", shown.display())),
            }
        }
    }
    let config = OsStr::new("config");
    if fsat::stat_at(&g, config).is_ok() {
        let verdict = match fsat::read_at(&g, config, 1 << 20) {
            Ok(bytes) => unsafe_git_key(&String::from_utf8_lossy(&bytes)),
            Err(_) => Some("(not a readable file)".into()),
        };
        if let Some(key) = verdict {
            let mut b = MAX_FILES;
            match fsat::remove_tree(&g, config, &mut b) {
                Ok(()) => report.undone.push(format!(
                    "removed {}/config of the new repository: it set {key}, which tern does not know to be harmless",
                    shown.display()
                )),
                Err(e) => report.refused.push(format!("{}/config: {e}", shown.display())),
            }
        }
    }
}
