//! Which repository git uses from a directory, found as git finds it
//! (`.git` directory, link or `gitdir:` file, or a bare repository,
//! walking up; a directory git passes over is passed over here too), and
//! the small files that point from one git directory to another
//! (`gitdir:`, `commondir`, a worktree's `gitdir`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::config;

type R<T> = Result<T, String>;

/// How git found its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Via {
    /// `<top>/.git` is the directory.
    Dir,
    /// `<top>/.git` is a `gitdir:` file (this one).
    File(PathBuf),
    /// `<top>/.git` is a symbolic link (this one).
    Link(PathBuf),
    /// The directory itself is a (bare) repository.
    Bare,
}

#[derive(Debug, Clone)]
pub(super) struct Found {
    /// Resolved.
    pub gitdir: PathBuf,
    /// The work tree's top (None for a bare repository).
    pub top: Option<PathBuf>,
    pub via: Via,
}

/// What git needs to call a directory a repository: a HEAD it accepts,
/// and objects/ and refs/ (in the common directory, for a linked
/// worktree). Where git would pass over a directory and go on up, so
/// does tern, or it would check one repository while git used another.
pub(super) fn looks_like_repo(g: &Path) -> bool {
    let common = read_pointer(&g.join("commondir"))
        .ok()
        .flatten()
        .map_or_else(|| g.to_path_buf(), |c| g.join(OsStr::from_bytes(&c)));
    head_valid(&g.join("HEAD")) && common.join("objects").is_dir() && common.join("refs").is_dir()
}

/// HEAD as git accepts it: a link into `refs/`, `ref: refs/…`, or an
/// object name in hex.
fn head_valid(head: &Path) -> bool {
    match std::fs::symlink_metadata(head) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::read_link(head).is_ok_and(|t| t.starts_with("refs/"))
        }
        Ok(m) if m.is_file() => {
            let Ok(Some(b)) = config::read(head) else {
                return false;
            };
            if let Some(r) = b.strip_prefix(b"ref:") {
                return r.trim_ascii_start().starts_with(b"refs/");
            }
            b.len() >= 40 && b[..40].iter().all(u8::is_ascii_hexdigit)
        }
        _ => false,
    }
}

/// A one-line file's content (`commondir`, a worktree's `gitdir`)
/// without its line end; None when there is no such file.
pub(super) fn read_pointer(path: &Path) -> R<Option<Vec<u8>>> {
    let Some(mut b) = config::read(path)? else {
        return Ok(None);
    };
    while b.last().is_some_and(|c| matches!(c, b'\n' | b'\r')) {
        b.pop();
    }
    if b.is_empty() || b.contains(&b'\n') || b.contains(&0) {
        return Err(format!("{} is not a path git reads", path.display()));
    }
    Ok(Some(b))
}

/// `bytes` as a path from `base`, resolved (links followed, `..` after
/// them); Err when that cannot be done with certainty.
pub(super) fn resolve(base: &Path, bytes: &[u8]) -> R<PathBuf> {
    let p = Path::new(OsStr::from_bytes(bytes));
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    crate::policy::path::resolve_traced(&abs, &mut |_| {})
        .map_err(|e| format!("{} cannot be resolved ({e})", abs.display()))
}

/// The `gitdir:` a `.git` file names, resolved from its directory.
pub(super) fn gitfile(dotgit: &Path, dir: &Path) -> R<PathBuf> {
    let bytes = config::read(dotgit)?.unwrap_or_default();
    let target = bytes
        .strip_prefix(b"gitdir: ")
        .map(|t| {
            let mut t = t.to_vec();
            while t.last().is_some_and(|c| c.is_ascii_whitespace()) {
                t.pop();
            }
            t
        })
        .filter(|t| !t.is_empty() && !t.contains(&b'\n') && !t.contains(&0))
        .ok_or_else(|| format!("{} is not a gitdir link git reads", dotgit.display()))?;
    resolve(dir, &target)
}

/// [`discover`], once per decision (the checks of a command and of its
/// repository both ask).
pub(super) fn discover_kept(dir: &Path) -> R<Option<Found>> {
    crate::policy::memo::remember_path("git-discover", dir, || discover(dir))
}

/// Walks up from `dir` as git does: `<d>/.git` (a directory that is a
/// repository, a link to one, or a `gitdir:` file), then `<d>` itself as
/// a bare repository.
pub(super) fn discover(dir: &Path) -> R<Option<Found>> {
    for d in dir.ancestors() {
        let dotgit = d.join(".git");
        match std::fs::symlink_metadata(&dotgit) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(real) = std::fs::canonicalize(&dotgit) {
                    if real.is_file() {
                        return Err(format!(
                            "{} is a link to a file, which tern does not follow",
                            dotgit.display()
                        ));
                    }
                    if looks_like_repo(&real) {
                        return Ok(Some(Found {
                            gitdir: real,
                            top: Some(d.to_path_buf()),
                            via: Via::Link(dotgit),
                        }));
                    }
                }
            }
            Ok(m) if m.is_dir() => {
                if looks_like_repo(&dotgit) {
                    return Ok(Some(Found {
                        gitdir: dotgit,
                        top: Some(d.to_path_buf()),
                        via: Via::Dir,
                    }));
                }
            }
            Ok(_) => {
                return Ok(Some(Found {
                    gitdir: gitfile(&dotgit, d)?,
                    top: Some(d.to_path_buf()),
                    via: Via::File(dotgit),
                }));
            }
            Err(_) => {}
        }
        if looks_like_repo(d) {
            return Ok(Some(Found {
                gitdir: d.to_path_buf(),
                top: None,
                via: Via::Bare,
            }));
        }
    }
    Ok(None)
}

/// The common directory `g/commondir` names, if any.
pub(super) fn commondir(g: &Path) -> R<Option<PathBuf>> {
    let Some(c) = read_pointer(&g.join("commondir"))? else {
        return Ok(None);
    };
    let c = resolve(g, &c)?;
    Ok((c != g).then_some(c))
}

/// `g` is `<c>/worktrees/<id>`: the layout `git worktree add` makes.
pub(super) fn worktree_of(g: &Path, c: &Path) -> bool {
    g.parent()
        .filter(|p| p.file_name() == Some(OsStr::new("worktrees")))
        .and_then(Path::parent)
        == Some(c)
}

/// Whether the repository at `g` (outside the working directories) has
/// the directory holding the `.git` file as its work tree: a linked
/// worktree's `gitdir` names that `.git` file, or a submodule's
/// `core.worktree` names the directory. Only a repository set up that
/// way (by git, for this directory) passes; one the `.git` file merely
/// points at does not.
pub(super) fn names_as_work_tree(g: &Path, found: &Found) -> R<bool> {
    let (Via::File(dotgit), Some(top)) = (&found.via, &found.top) else {
        return Ok(false);
    };
    if let Some(back) = read_pointer(&g.join("gitdir"))? {
        let back = resolve(g, &back)?;
        let here = resolve(Path::new("/"), dotgit.as_os_str().as_bytes())?;
        return Ok(back == here);
    }
    let Some(bytes) = config::read(&g.join("config"))? else {
        return Ok(false);
    };
    let Ok(entries) = config::parse(&bytes) else {
        return Ok(false);
    };
    let worktree = entries
        .iter()
        .rev()
        .find(|e| e.is("core", "worktree"))
        .and_then(|e| e.value.as_deref());
    match worktree {
        Some(w) => Ok(resolve(g, w)? == *top),
        None => Ok(false),
    }
}
