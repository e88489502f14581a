//! What a git command reads of its repository, for the working-directory
//! check and `Read` rules: git prints files from its object store, which
//! no path operand shows.
//!
//! - The repository git will use (its work tree's top, or the git
//!   directory of a bare one) is read by every command, so it must lie
//!   in the working directories or be named by a `Read` allow rule:
//!   after `cd OUTSIDE` git reads another project's history.
//! - `REV:PATH`, `:PATH` and `:N:PATH` name a file in the repository
//!   (`./` and `../` from the command's directory, else from the top):
//!   a read of that path in the work tree, whatever the revision.
//! - A command that prints file contents (`show`, `log -p`, `diff`,
//!   `cat-file -p`, `grep`, `blame`, `status -v` …) reads what its
//!   pathspecs name when each is a plain path; with none, or one with
//!   wildcards or magic, it reads the whole repository (a recursive
//!   read of the top, which asks when a `Read` deny or ask rule names
//!   something in it). Commands that print only names, hashes and
//!   messages (`status`, `log`, `ls-files`, `rev-parse` …) read no file.

use std::path::{Component, Path, PathBuf};

use super::super::check::{Checker, Read};
use super::super::plan::Arg;
use super::super::spec::Parsed;

type R<T> = Result<T, String>;

/// Variables that point git at another repository, index or object
/// store than the one found from the directory.
const REPO_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
];

/// Options that make log, show and diff print file contents (or, for
/// the pickaxe `-S`/`-G`, pick commits by them).
const PATCH: &[&str] = &[
    "-S",
    "-G",
    "-p",
    "-u",
    "--patch",
    "-U",
    "--unified",
    "--patch-with-raw",
    "--patch-with-stat",
    "--word-diff",
    "--word-diff-regex",
    "--color-words",
    "-W",
    "--function-context",
    "-c",
    "--cc",
    "--dd",
    "-m",
    "--diff-merges",
    "--combined-all-paths",
    "-L",
    "--check",
    "--binary",
];

/// Output formats of `git diff` that print names and counts only.
const NAMES: &[&str] = &[
    "--stat",
    "--numstat",
    "--shortstat",
    "--dirstat",
    "--dirstat-by-file",
    "--compact-summary",
    "--summary",
    "--name-only",
    "--name-status",
    "--raw",
    "-s",
    "--no-patch",
    "--quiet",
];

/// The repository a git command uses, as git finds it.
pub(super) struct Repo {
    /// The work tree's top, or the git directory when bare.
    pub root: PathBuf,
}

/// Finds the repository git will use from `dir` and records that it is
/// read (None: there is none).
pub(super) fn locate(c: &mut Checker, dir: &Path) -> R<Option<Repo>> {
    if let Some(v) = REPO_VARS.iter().find(|v| c.env_var(v).is_some()) {
        return Err(format!(
            "git would use the repository {v} names (set in the environment), which tern does not check"
        ));
    }
    let found = super::discover::discover_kept(dir)?;
    let Some(f) = found else {
        return Ok(None);
    };
    let root = f.top.unwrap_or(f.gitdir);
    c.eff.reads.push(Read {
        repo: true,
        path: root.clone(),
        recursive: false,
        shown: "the repository".into(),
    });
    Ok(Some(Repo { root }))
}

/// Records the files `git SUB` with `p` reads of `repo`, run in `dir`;
/// `magic`: pathspecs may be globs (`--glob-pathspecs`,
/// `--icase-pathspecs`).
pub(super) fn record(c: &mut Checker, sub: &str, p: &Parsed, repo: &Repo, dir: &Path, magic: bool) {
    let mut blobs = Vec::new();
    for a in &p.operands {
        if let Arg::Lit(s) = a {
            for path in rev_paths(s) {
                blobs.push(Read {
                    repo: false,
                    path: in_repo(repo, dir, path),
                    recursive: true,
                    shown: s.clone(),
                });
            }
        }
    }
    let whole = || Read {
        repo: true,
        path: repo.root.clone(),
        recursive: true,
        shown: "the repository".into(),
    };
    if prints_contents(sub, p) {
        let revs = &p.operands[..p.dashdash.unwrap_or(p.operands.len())];
        // Only blobs named REV:PATH, and nothing else that could be a
        // commit or a tree's whole content.
        let only_blobs = !blobs.is_empty()
            && p.dashdash.is_none_or(|n| n == p.operands.len())
            && revs
                .iter()
                .all(|a| a.lit().is_some_and(|s| !rev_paths(s).is_empty()));
        if !only_blobs {
            match pathspecs(sub, p, dir, magic) {
                Some(paths) if !paths.is_empty() => c.eff.reads.extend(paths),
                _ => c.eff.reads.push(whole()),
            }
        }
    }
    c.eff.reads.extend(blobs);
}

/// Does `git SUB` print the contents of files?
fn prints_contents(sub: &str, p: &Parsed) -> bool {
    match sub {
        "show" | "range-diff" | "grep" | "blame" | "annotate" => true,
        "diff" => p.has_any(PATCH) || !p.has_any(NAMES),
        "log" | "whatchanged" | "rev-list" | "shortlog" | "diff-tree" | "diff-index"
        | "diff-files" => p.has_any(PATCH),
        "cat-file" => !p.has_any(&["-t", "-s", "-e", "--batch-check"]),
        "status" => p.has_any(&["-v", "--verbose"]),
        _ => false,
    }
}

/// The paths a command's pathspecs limit it to, each a plain path; None
/// when one is not (a wildcard, magic, a value computed at run time).
/// Without `--`, an operand is a pathspec when it exists (git takes the
/// rest for revisions); after `--`, every one is. blame's operands are
/// all taken for paths.
fn pathspecs(sub: &str, p: &Parsed, dir: &Path, magic: bool) -> Option<Vec<Read>> {
    let given: Vec<&Arg> = match (sub, p.dashdash) {
        ("blame" | "annotate", _) => p.operands.iter().collect(),
        (_, Some(n)) => p.operands[n..].iter().collect(),
        (_, None) => p
            .operands
            .iter()
            .filter(|a| match a {
                Arg::Lit(s) => {
                    super::super::path::resolve_found(dir, s).is_none_or(|(_, found)| found)
                }
                _ => true,
            })
            .collect(),
    };
    given
        .into_iter()
        .map(|a| match a {
            Arg::Lit(s) if !magic && !s.starts_with(':') && !s.contains(['*', '?', '[', '\\']) => {
                Some(Read {
                    repo: false,
                    path: lexical(&dir.join(s)),
                    recursive: true,
                    shown: s.clone(),
                })
            }
            _ => None,
        })
        .collect()
}

/// The repository paths a revision operand names: `REV:PATH`, `:PATH`,
/// `:N:PATH`, on either side of a range. Empty for a plain revision and
/// for `:/TEXT` (a search of commit messages).
fn rev_paths(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    // Each side of `A..B` / `A...B` too (a path may hold `..`: both
    // readings are kept).
    let sides = s.split("..").map(|t| t.trim_start_matches('.'));
    for p in std::iter::once(s).chain(sides).filter_map(rev_path) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn rev_path(t: &str) -> Option<&str> {
    if let Some(rest) = t.strip_prefix(':') {
        if rest.starts_with('/') {
            return None;
        }
        let b = rest.as_bytes();
        if b.len() >= 2 && (b'0'..=b'3').contains(&b[0]) && b[1] == b':' {
            return Some(&rest[2..]);
        }
        return Some(rest);
    }
    // The first `:` outside `{…}` (`HEAD@{1 day ago}`, `^{/text}`).
    let mut depth = 0usize;
    for (i, ch) in t.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => return Some(&t[i + 1..]),
            _ => {}
        }
    }
    None
}

/// A repository path as a path in the work tree: from the command's
/// directory for `./` and `../`, else from the top.
fn in_repo(repo: &Repo, dir: &Path, path: &str) -> PathBuf {
    let base = if path == "." || path == ".." || path.starts_with("./") || path.starts_with("../") {
        dir
    } else {
        &repo.root
    };
    lexical(&base.join(path))
}

/// `..` and `.` taken away by the text: these are paths in git's trees,
/// where no link is followed.
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_paths_are_read_as_git_reads_them() {
        assert_eq!(rev_paths("HEAD:.env"), vec![".env"]);
        assert_eq!(rev_paths("HEAD~2:src/a.rs"), vec!["src/a.rs"]);
        assert_eq!(rev_paths(":.env"), vec![".env"]);
        assert_eq!(rev_paths(":2:.env"), vec![".env"]);
        assert_eq!(rev_paths("HEAD@{1 day ago}:x"), vec!["x"]);
        assert_eq!(rev_paths("HEAD^{/fix: it}:y"), vec!["y"]);
        assert_eq!(rev_paths("HEAD:"), vec![""]);
        assert!(rev_paths(":/fix: it").is_empty());
        assert!(rev_paths("HEAD~3").is_empty());
        assert!(rev_paths("main..feature").is_empty());
        assert_eq!(rev_paths("HEAD:a..HEAD:b"), vec!["a..HEAD:b", "a", "b"]);
        let repo = Repo {
            root: PathBuf::from("/r"),
        };
        let here = Path::new("/r/sub");
        assert_eq!(in_repo(&repo, here, ".env"), PathBuf::from("/r/.env"));
        assert_eq!(in_repo(&repo, here, "./.env"), PathBuf::from("/r/sub/.env"));
        assert_eq!(in_repo(&repo, here, "../.env"), PathBuf::from("/r/.env"));
        assert_eq!(in_repo(&repo, here, ""), PathBuf::from("/r"));
    }
}
