//! Protected paths: places inside the writable directories where a
//! sandboxed command could plant something that later runs, or is read as
//! configuration, *outside* the sandbox — the git directory's hooks,
//! config, commondir (and those of submodules and worktrees), `.tern/`,
//! `.claude/`, `.mcp.json`, `denyWrite` paths, files hook commands name,
//! the folder `core.hooksPath` names and the files git's config includes,
//! git's XDG config folder, shell start-up files and `PATH` directories
//! when home is writable.
//!
//! First line: the launcher makes the existing ones read-only bind mounts
//! and pins the working directories and git directories as mount points
//! (which cannot be renamed or replaced), so they cannot change *during*
//! the command. Second line, here: after the command (once every process
//! of it is gone), each is checked. New ones are removed (a new git
//! directory is kept when its config and hooks are harmless); without a
//! mount namespace, changes are put back from the snapshot. Everything
//! is done through directory descriptors that never follow a symlink, so
//! a link planted in a protected path cannot send tern outside the
//! working directories; what cannot be undone is reported as such.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::fsat;

/// Snapshot bounds (beyond them tern says it could not keep a copy).
const MAX_FILES: usize = 4000;
const MAX_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    /// Where a git directory is or could appear (`<dir>/.git`).
    GitDir,
}

#[derive(Debug, Clone)]
struct Watched {
    path: PathBuf,
    kind: Kind,
}

/// What to protect for one command.
#[derive(Debug, Default, Clone)]
pub struct Plan {
    /// Exist now: read-only during the command.
    pub read_only: Vec<PathBuf>,
    /// Directories made mount points.
    pub pins: Vec<PathBuf>,
    watched: Vec<Watched>,
    /// Working directories that exist but could not be resolved (their
    /// protected paths could not be worked out).
    unseen: Vec<String>,
}

fn inside(p: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| p.starts_with(r))
}

fn canonical(p: &Path) -> Option<PathBuf> {
    RESOLVED.with(|r| r.borrow_mut().canon(p))
}

// Thread-local because the resolver is reached from every helper of one
// `plan` (cleared at its start), and a plan runs on one thread.
thread_local! {
    /// Canonical forms found during one `plan` (cleared at its start).
    static RESOLVED: std::cell::RefCell<Resolver> = std::cell::RefCell::new(Resolver::default());
}

/// Canonicalisation that remembers directories already resolved, so that
/// `dir/.git/hooks` costs one lstat, not a realpath of every component.
#[derive(Default)]
struct Resolver {
    cache: std::collections::HashMap<PathBuf, Option<PathBuf>>,
}

impl Resolver {
    fn canon(&mut self, p: &Path) -> Option<PathBuf> {
        use std::path::Component;
        if !p.is_absolute()
            || p.components()
                .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
        {
            return std::fs::canonicalize(p).ok();
        }
        if let Some(hit) = self.cache.get(p) {
            return hit.clone();
        }
        // The nearest ancestor already known, then one step at a time.
        let chain: Vec<&Path> = p.ancestors().collect();
        let mut cur = PathBuf::from("/");
        let mut from = chain.len() - 1;
        for (i, a) in chain.iter().enumerate() {
            if let Some(hit) = self.cache.get(*a) {
                cur = hit.clone()?;
                from = i;
                break;
            }
        }
        for i in (0..from).rev() {
            let name = chain[i].file_name()?;
            let joined = cur.join(name);
            let next = match std::fs::symlink_metadata(&joined) {
                Ok(m) if !m.file_type().is_symlink() => Some(joined),
                Ok(_) => std::fs::canonicalize(&joined).ok(),
                Err(_) => None,
            };
            self.cache.insert(chain[i].to_path_buf(), next.clone());
            cur = next?;
        }
        Some(cur)
    }
}

impl Plan {
    fn watch(&mut self, path: PathBuf, kind: Kind) {
        if !self.watched.iter().any(|w| w.path == path) {
            self.watched.push(Watched { path, kind });
        }
    }

    /// Protects `path` (made canonical when it exists).
    fn protect(&mut self, path: &Path, roots: &[PathBuf]) {
        match std::fs::symlink_metadata(path) {
            Ok(m) => {
                if m.file_type().is_symlink() {
                    // The link itself is checked after; its target, when
                    // writable, is what gets used, so that is protected.
                    self.watch(path.to_path_buf(), Kind::Plain);
                }
                // Never a root itself or one of its ancestors: that would
                // make a whole working directory read-only.
                if let Some(real) = canonical(path)
                    && inside(&real, roots)
                    && !roots.iter().any(|r| r.starts_with(&real))
                {
                    if !self.read_only.contains(&real) {
                        self.read_only.push(real.clone());
                    }
                    self.watch(real, Kind::Plain);
                }
            }
            Err(_) => {
                let parent_ok = path
                    .parent()
                    .and_then(canonical)
                    .is_some_and(|p| inside(&p, roots));
                if parent_ok
                    && let (Some(parent), Some(name)) = (path.parent(), path.file_name())
                    && let Some(p) = canonical(parent)
                {
                    self.watch(p.join(name), Kind::Plain);
                }
            }
        }
    }

    fn pin(&mut self, dir: &Path, roots: &[PathBuf]) {
        if let Some(real) = canonical(dir)
            && inside(&real, roots)
            && real.is_dir()
            && !self.pins.contains(&real)
        {
            self.pins.push(real);
        }
    }

    /// A git directory's executable and redirecting parts.
    fn git_dir(&mut self, g: &Path, roots: &[PathBuf], depth: usize) {
        if depth > 4 {
            return;
        }
        self.pin(g, roots);
        for name in ["hooks", "config", "commondir", "config.worktree", "gitdir"] {
            self.protect(&g.join(name), roots);
        }
        if let Ok(text) = std::fs::read_to_string(g.join("commondir")) {
            let common = g.join(text.trim());
            if let Some(c) = canonical(&common)
                && c != g
            {
                self.pin(&c, roots);
                self.protect(&c.join("hooks"), roots);
                self.protect(&c.join("config"), roots);
            }
        }
        // Submodules keep whole git directories under modules/, nested
        // by name (which may contain slashes); worktrees under worktrees/.
        let mut stack = vec![(g.join("modules"), 0usize)];
        let mut seen = 0;
        while let Some((dir, level)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                seen += 1;
                if seen > 500 || level > 6 {
                    break;
                }
                let p = e.path();
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                if p.join("HEAD").exists() {
                    self.git_dir(&p, roots, depth + 1);
                } else {
                    stack.push((p, level + 1));
                }
            }
        }
        if let Ok(rd) = std::fs::read_dir(g.join("worktrees")) {
            for e in rd.flatten().take(200) {
                let w = e.path();
                self.pin(&w, roots);
                for name in ["commondir", "gitdir", "config.worktree"] {
                    self.protect(&w.join(name), roots);
                }
            }
        }
    }
}

/// Shell and tool start-up files that run or configure programs later,
/// protected when home is writable.
const HOME_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".ssh",
    ".gitconfig",
    ".config/git",
    // jq loads it as a module on every run (an auto-allowed reader).
    ".jq",
    ".ripgreprc",
    ".tern",
    ".claude",
    ".claude.json",
];

/// Works out the protected paths. `working` are the working directories
/// (cwd and `additionalDirectories`), `roots` every writable root; `home`
/// is the command's. `extra` holds what the layers above name: `denyWrite`
/// paths, hook scripts, and what git's config makes protected (hooks
/// folders, included files, git's XDG config: worked out by the caller
/// for each command, `policy::bash::git::protected_paths`).
pub fn plan(
    working: &[PathBuf],
    roots: &[PathBuf],
    extra: &[PathBuf],
    home: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Plan {
    RESOLVED.with(|r| r.borrow_mut().cache.clear());
    let roots: Vec<PathBuf> = roots.iter().filter_map(|r| canonical(r)).collect();
    let mut p = Plan::default();
    for w in working {
        let Some(w) = canonical(w) else {
            if let Err(e) = std::fs::symlink_metadata(w).and_then(|_| std::fs::canonicalize(w))
                && !absent(&e)
            {
                p.unseen.push(format!("{}: {e}", w.display()));
            }
            continue;
        };
        if !inside(&w, &roots) {
            continue;
        }
        p.pin(&w, &roots);
        for name in [".tern", ".claude", ".mcp.json"] {
            p.protect(&w.join(name), &roots);
        }
        let dot_git = w.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Err(_) => p.watch(dot_git, Kind::GitDir),
            Ok(m) if m.is_dir() => p.git_dir(&dot_git, &roots, 0),
            Ok(_) => {
                // A gitdir pointer file (worktree, submodule) or a link.
                p.protect(&dot_git, &roots);
                let target = std::fs::read_to_string(&dot_git)
                    .ok()
                    .and_then(|t| t.trim().strip_prefix("gitdir:").map(|g| w.join(g.trim())))
                    .or_else(|| canonical(&dot_git));
                if let Some(g) = target.and_then(|g| canonical(&g))
                    && g.is_dir()
                {
                    p.git_dir(&g, &roots, 0);
                }
            }
        }
    }
    for e in extra {
        p.protect(e, &roots);
    }
    if let Some(home) = home.and_then(canonical)
        && inside(&home, &roots)
    {
        for f in HOME_FILES {
            p.protect(&home.join(f), &roots);
        }
    }
    // A writable directory on PATH is a place to plant a program that
    // runs later under a familiar name.
    if let Some(path) = path_var {
        for dir in std::env::split_paths(path) {
            if let Some(d) = dir.is_absolute().then(|| canonical(&dir)).flatten()
                && inside(&d, &roots)
                && !roots.contains(&d)
                && !working.iter().filter_map(|w| canonical(w)).any(|w| w == d)
            {
                p.protect(&d, &roots);
            }
        }
    }
    // Nested read-only paths are covered by their parents' mounts.
    let ro = p.read_only.clone();
    p.read_only
        .retain(|r| !ro.iter().any(|o| o != r && r.starts_with(o)));
    p
}

/// One entry of a snapshotted tree, relative to the protected path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    rel: PathBuf,
    mode: u32,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    /// File contents (full snapshots) or a symlink's target.
    bytes: Option<Vec<u8>>,
}

impl Entry {
    fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
    /// Same content as far as tern can restore it: type, mode, bytes
    /// (times and inode numbers are not put back, so not compared).
    fn same(&self, other: &Entry) -> bool {
        self.mode == other.mode
            && self.rel == other.rel
            && (self.is_dir() || (self.size == other.size && self.bytes == other.bytes))
    }
}

#[derive(Debug)]
struct Item {
    watched: Watched,
    /// The parent directory's (dev, ino) when the snapshot was taken.
    parent: Option<(u64, u64)>,
    /// None: the path did not exist.
    tree: Option<Vec<Entry>>,
}

/// The protected paths as they were before a command.
#[derive(Debug)]
pub struct Snapshot {
    items: Vec<Item>,
    /// Contents were kept (needed when nothing stops changes during the
    /// command, i.e. without a mount namespace).
    full: bool,
    /// The contents were too large to keep whole.
    pub incomplete: bool,
    /// Protected paths tern could not examine, with the reason: nothing
    /// could be checked against them afterwards, so the command must not
    /// run (an unseen path would later read as "did not exist").
    pub unseen: Vec<String>,
}

/// "Not there" as opposed to "could not look".
fn absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    Some((path.parent()?, path.file_name()?))
}

/// A stat time as (seconds, nanoseconds); both fields are 32-bit on armv7.
fn time(sec: impl Into<i64>, nsec: impl Into<i64>) -> (i64, i64) {
    (sec.into(), nsec.into())
}

fn id(st: &libc::stat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}

/// Walks `name` in `dir` into entries, parents first, never following a
/// link; an explicit stack, since the tree is the command's making.
/// `Ok(None)`: it does not exist; `Err`: part of it could not be read
/// (named relative to `name`).
fn walk(
    dir: &OwnedFd,
    name: &OsStr,
    full: bool,
    budget: &mut (usize, usize),
) -> Result<Option<Vec<Entry>>, String> {
    use std::rc::Rc;
    let mut out = Vec::new();
    let mut stack: Vec<(Rc<OwnedFd>, OsString, PathBuf)> = vec![(
        Rc::new(dir.try_clone().map_err(|e| e.to_string())?),
        name.to_os_string(),
        PathBuf::new(),
    )];
    let unread =
        |rel: &Path, e: std::io::Error| format!("{}: {e}", Path::new(name).join(rel).display());
    while let Some((parent, entry_name, rel)) = stack.pop() {
        let st = match fsat::stat_at(&parent, &entry_name) {
            Ok(st) => st,
            Err(e) if absent(&e) && out.is_empty() => return Ok(None),
            // Gone between listing and stat: the tree is changing under us.
            Err(e) => return Err(unread(&rel, e)),
        };
        budget.0 += 1;
        if budget.0 > MAX_FILES {
            return Ok(Some(out));
        }
        let kind = st.st_mode & libc::S_IFMT;
        let bytes = if kind == libc::S_IFLNK {
            Some(fsat::read_link_at(&parent, &entry_name).map_err(|e| unread(&rel, e))?)
        } else if full && kind == libc::S_IFREG {
            budget.1 += st.st_size.max(0) as usize;
            if budget.1 > MAX_BYTES {
                None
            } else {
                Some(fsat::read_at(&parent, &entry_name, MAX_BYTES).map_err(|e| unread(&rel, e))?)
            }
        } else {
            None
        };
        out.push(Entry {
            rel: rel.clone(),
            mode: st.st_mode,
            size: st.st_size,
            mtime: time(st.st_mtime, st.st_mtime_nsec),
            ctime: time(st.st_ctime, st.st_ctime_nsec),
            ino: st.st_ino,
            bytes,
        });
        if kind == libc::S_IFDIR {
            let sub = fsat::open_subdir(&parent, &entry_name).map_err(|e| unread(&rel, e))?;
            let names = fsat::list(&sub).map_err(|e| unread(&rel, e))?;
            let sub = Rc::new(sub);
            // Reversed, so that the stack hands them out in order.
            for n in names.into_iter().rev() {
                let r = rel.join(&n);
                stack.push((Rc::clone(&sub), n, r));
            }
        }
    }
    Ok(Some(out))
}

/// Records the protected paths of `plan`; `full` keeps contents.
pub fn take(plan: &Plan, full: bool) -> Snapshot {
    let mut budget = (0usize, 0usize);
    let mut items = Vec::new();
    let mut unseen = plan.unseen.clone();
    let mut parents = Parents::default();
    for w in &plan.watched {
        let Some((parent, name)) = split(&w.path) else {
            continue;
        };
        let opened = match parents.get(parent) {
            Ok(o) => Some(o),
            Err(e) if absent(&e) => None,
            Err(e) => {
                unseen.push(format!("{}: {e}", parent.display()));
                None
            }
        };
        let parent_id = opened.as_ref().map(|(_, i)| *i);
        let tree = opened.as_ref().map(|(f, _)| &**f).and_then(|f| {
            // In mount mode only the top entry matters (the rest is read-only).
            if full {
                walk(f, name, true, &mut budget).unwrap_or_else(|e| {
                    unseen.push(format!("{}/{e}", parent.display()));
                    None
                })
            } else {
                let st = match fsat::stat_at(f, name) {
                    Ok(st) => st,
                    Err(e) => {
                        if !absent(&e) {
                            unseen.push(format!("{}: {e}", w.path.display()));
                        }
                        return None;
                    }
                };
                Some(vec![Entry {
                    rel: PathBuf::new(),
                    mode: st.st_mode,
                    size: st.st_size,
                    mtime: time(st.st_mtime, st.st_mtime_nsec),
                    ctime: time(st.st_ctime, st.st_ctime_nsec),
                    ino: st.st_ino,
                    bytes: None,
                }])
            }
        });
        items.push(Item {
            watched: w.clone(),
            parent: parent_id,
            tree,
        });
    }
    Snapshot {
        items,
        full,
        incomplete: budget.0 > MAX_FILES || budget.1 > MAX_BYTES,
        unseen,
    }
}

/// An opened parent directory and its (device, inode).
type OpenDir = (std::rc::Rc<OwnedFd>, (u64, u64));

/// Parent directories opened once per snapshot or check (many protected
/// paths share one: `.git/hooks`, `.git/config`, ...).
#[derive(Default)]
struct Parents {
    open: Vec<(PathBuf, Option<OpenDir>)>,
}

impl Parents {
    fn get(&mut self, dir: &Path) -> Result<OpenDir, std::io::Error> {
        if let Some((_, hit)) = self.open.iter().find(|(p, _)| p == dir) {
            return hit
                .clone()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound));
        }
        let opened = fsat::open_dir_strict(dir).and_then(|f| {
            let st = fsat::stat_fd(&f)?;
            Ok((std::rc::Rc::new(f), id(&st)))
        });
        self.open
            .push((dir.to_path_buf(), opened.as_ref().ok().cloned()));
        opened
    }

    /// Forgets what was opened at or below `path` (the check just
    /// removed or recreated it, so a kept descriptor would be stale).
    fn forget_under(&mut self, path: &Path) {
        self.open.retain(|(p, _)| !p.starts_with(path));
    }
}

/// What the check after a command did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Changes tern undid.
    pub undone: Vec<String>,
    /// Changes tern found and could not undo.
    pub refused: Vec<String>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.undone.is_empty() && self.refused.is_empty()
    }
}

/// Opens `rel` (a relative path of plain components) under `dir`.
fn open_rel(dir: &OwnedFd, name: &OsStr, rel: &Path) -> Option<OwnedFd> {
    let mut cur = fsat::open_subdir(dir, name).ok()?;
    for c in rel.components() {
        cur = fsat::open_subdir(&cur, c.as_os_str()).ok()?;
    }
    Some(cur)
}

/// Recreates `entries` (whose first is the top) as `name` in `dir`.
fn restore_tree(dir: &OwnedFd, name: &OsStr, entries: &[Entry]) -> Result<(), String> {
    let mut budget = MAX_FILES;
    if fsat::stat_at(dir, name).is_ok() {
        fsat::remove_tree(dir, name, &mut budget).map_err(|e| e.to_string())?;
    }
    for e in entries {
        let (pdir, leaf): (OwnedFd, OsString) = if e.rel.as_os_str().is_empty() {
            (
                dir.try_clone().map_err(|e| e.to_string())?,
                name.to_os_string(),
            )
        } else {
            let parent = e.rel.parent().unwrap_or(Path::new(""));
            let pd = if parent.as_os_str().is_empty() {
                fsat::open_subdir(dir, name).map_err(|e| e.to_string())?
            } else {
                open_rel(dir, name, parent).ok_or("a parent directory vanished")?
            };
            (pd, e.rel.file_name().unwrap_or_default().to_os_string())
        };
        let kind = e.mode & libc::S_IFMT;
        let r = match kind {
            libc::S_IFDIR => fsat::mkdir_at(&pdir, &leaf, e.mode),
            libc::S_IFLNK => fsat::symlink_at(e.bytes.as_deref().unwrap_or_default(), &pdir, &leaf),
            libc::S_IFREG => match &e.bytes {
                Some(b) => fsat::create_at(&pdir, &leaf, b, e.mode),
                None => return Err("no copy was kept".into()),
            },
            _ => return Err("not a file tern can recreate".into()),
        };
        r.map_err(|err| format!("{}: {err}", e.rel.display()))?;
    }
    Ok(())
}

impl Snapshot {
    /// Checks every protected path against the snapshot (after every
    /// process of the command has ended) and undoes what it can.
    pub fn verify(&self) -> Report {
        let mut report = Report::default();
        let mut parents = Parents::default();
        for item in &self.items {
            let acted = report.undone.len() + report.refused.len();
            self.verify_item(item, &mut parents, &mut report);
            if report.undone.len() + report.refused.len() != acted {
                parents.forget_under(&item.watched.path);
            }
        }
        report
    }

    fn verify_item(&self, item: &Item, parents: &mut Parents, report: &mut Report) {
        let path = &item.watched.path;
        let Some((parent, name)) = split(path) else {
            return;
        };
        let (pfd, now_parent) = match parents.get(parent) {
            Ok((f, i)) => (f, Some(i)),
            Err(e) => {
                if item.parent.is_some() {
                    report.refused.push(format!(
                        "could not check {}: its directory now cannot be reached without following a symlink ({e}); check it by hand",
                        path.display()
                    ));
                }
                return;
            }
        };
        if item.parent.is_some() && now_parent != item.parent {
            report.refused.push(format!(
                "could not check {}: its directory was replaced during the command",
                path.display()
            ));
            return;
        }
        let now = fsat::stat_at(&pfd, name).ok();
        match (&item.tree, now) {
            (None, None) => {}
            (None, Some(_)) if item.watched.kind == Kind::GitDir => {
                check_new_git(&pfd, name, path, report);
            }
            (None, Some(_)) => {
                let mut budget = MAX_FILES;
                match fsat::remove_tree(&pfd, name, &mut budget) {
                    Ok(()) => report.undone.push(format!(
                        "removed {}, which the command created",
                        path.display()
                    )),
                    Err(e) => report
                        .refused
                        .push(format!("could not remove {}: {e}", path.display())),
                }
            }
            (Some(before), now) => {
                let unchanged = match &now {
                    None => false,
                    // Read-only during the command: any change to the inode
                    // (or a new one in its place) moves its ctime.
                    Some(st) if !self.full => before.first().is_some_and(|b| {
                        b.mode == st.st_mode
                            && b.ino == st.st_ino
                            && b.ctime == time(st.st_ctime, st.st_ctime_nsec)
                            && b.mtime == time(st.st_mtime, st.st_mtime_nsec)
                    }),
                    Some(_) => {
                        let mut budget = (0, 0);
                        walk(&pfd, name, true, &mut budget)
                            .ok()
                            .flatten()
                            .is_some_and(|t| {
                                t.len() == before.len()
                                    && t.iter().zip(before).all(|(a, b)| a.same(b))
                            })
                    }
                };
                if unchanged {
                    return;
                }
                if !self.full || self.incomplete {
                    report.refused.push(format!(
                        "{} changed during the command and tern kept no copy to put back; check it by hand",
                        path.display()
                    ));
                    return;
                }
                match restore_tree(&pfd, name, before) {
                    Ok(()) => report.undone.push(format!("restored {}", path.display())),
                    Err(e) => report.refused.push(format!(
                        "{} changed and could not be put back: {e}",
                        path.display()
                    )),
                }
            }
        }
    }
}

mod new_git;
use new_git::check_new_git;

#[cfg(test)]
mod tests;
