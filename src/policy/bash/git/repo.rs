//! The repository a git command will use, read the way git reads it,
//! before a read-only git command is auto-allowed. The repository — its
//! `.git` included: a checkout, an unpacked archive, a pull request — is
//! the attacker's, so everything git would read for the command is
//! looked at, and anything tern is not certain of asks:
//!
//! - which repository: `.git` (directory, link or `gitdir:` file) or a
//!   bare repository, as git discovers it walking up
//!   ([`super::discover`]); a `.git` file or
//!   link that leads outside the working directories asks unless the
//!   repository there names this directory as its own work tree (a
//!   linked worktree's `gitdir` file, a submodule's `core.worktree`); one
//!   that leads into the project outside any `.git` (or a bare repository
//!   there) is one the model could have made, and asks;
//! - every config git may read: the git directory's and the common
//!   directory's `config` and `config.worktree`, each worktree's
//!   `config.worktree`, every submodule's git directory (`modules/**`,
//!   and the `.git` of each submodule the index records, recursively),
//!   and the files they include; each key must be on the allow-list
//!   ([`super::allow`]), and keys naming files or directories must lead
//!   where git could read anyway;
//! - where objects and refs come from: `commondir`,
//!   `objects/info/alternates` and `http-alternates`, and symbolic links
//!   among the git directory's files, `objects/`, `refs/`, `logs/` and
//!   `reftable/`, must not lead outside the working directories and the
//!   repository.
//!
//! All of it is bounded (config size, number of files, git directories
//! and directory entries looked at); beyond a bound, the command asks.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::allow::{self, V};
use super::config::{self, Entry};
use super::discover::{
    Via, commondir, discover_kept, gitfile, looks_like_repo, names_as_work_tree, resolve,
    worktree_of,
};
use super::index;

type R<T> = Result<T, String>;

/// Config files (includes counted) read for one command.
const MAX_FILES: usize = 256;
/// Git directories (the repository, its submodules, theirs) looked at.
const MAX_GIT_DIRS: usize = 64;
/// Nesting of includes, and of submodules in submodules.
const MAX_DEPTH: usize = 10;
/// Directory entries looked at for links, per git directory.
const MAX_ENTRIES: usize = 20_000;

/// The repository git will use from `dir`, if one the model could have
/// planted, one that leads outside, or one whose config could make a
/// read-only command run a program or read elsewhere: Err names it.
/// Ok holds the programs (bare names, looked up on PATH) the accepted
/// config makes git run.
pub(crate) fn repo_check(dir: &Path, inside: &dyn Fn(&Path) -> bool) -> R<Vec<&'static str>> {
    let Some(found) = discover_kept(dir)? else {
        return Ok(Vec::new());
    };
    let g = &found.gitdir;
    let under_dot_git = g.components().any(|c| c.as_os_str() == ".git");
    if found.via == Via::Bare && inside(g) && !under_dot_git {
        return Err(format!(
            "{} looks like a bare repository the model could have made",
            g.display()
        ));
    }
    if let Via::File(p) | Via::Link(p) = &found.via {
        if inside(g) && !under_dot_git {
            return Err(format!(
                "{} points git at {}, a directory in the project outside .git",
                p.display(),
                g.display()
            ));
        }
        if !looks_like_repo(g) {
            return Err(format!(
                "{} points git at {}, which is not a repository",
                p.display(),
                g.display()
            ));
        }
        if !inside(g) && !names_as_work_tree(g, &found)? {
            return Err(format!(
                "{} points git at {}, a repository outside the working directories",
                p.display(),
                g.display()
            ));
        }
    }
    let common = commondir(g)?;
    if let Some(c) = &common
        && !inside(c)
        && !worktree_of(g, c)
    {
        return Err(format!(
            "{}/commondir points git at {}, outside the working directories",
            g.display(),
            c.display()
        ));
    }
    let mut ex = Examiner {
        inside,
        gitdirs: std::iter::once(g.clone()).chain(common).collect(),
        top: found.top.clone(),
        seen: Vec::new(),
        files: 0,
        programs: Vec::new(),
    };
    ex.git_dir(g, found.top.as_deref(), 0)?;
    Ok(ex.programs)
}

/// A directory's entry names, and which of them are directories.
#[derive(Default)]
struct Listing {
    names: Vec<OsString>,
    dirs: Vec<OsString>,
}

type DirId = (u64, u64, i64, i64, i64, i64);

// Thread-local because listing `.git` on every git line would dominate its
// decision; kept by the directory's identity, so a change is seen.
thread_local! {
    /// Listings without links, by directory and identity.
    static LISTINGS: std::cell::RefCell<Vec<(PathBuf, DirId, Rc<Listing>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Directory listings kept across decisions.
const KEPT_LISTINGS: usize = 256;

/// The names in a git directory and in its `objects/info`.
#[derive(Default)]
struct Names {
    top: Vec<OsString>,
    info: Vec<OsString>,
}

impl Names {
    fn has(&self, name: &str) -> bool {
        self.top.iter().any(|n| n == name)
    }
}

struct Examiner<'a> {
    inside: &'a dyn Fn(&Path) -> bool,
    /// The repository's git and common directories.
    gitdirs: Vec<PathBuf>,
    /// Its work tree.
    top: Option<PathBuf>,
    seen: Vec<PathBuf>,
    files: usize,
    programs: Vec<&'static str>,
}

impl Examiner<'_> {
    /// Where objects, refs and git directories may come from: the working
    /// directories and the repository's own git directories (its
    /// submodules' included, once accepted).
    fn strict(&self, p: &Path) -> bool {
        (self.inside)(p)
            || self
                .gitdirs
                .iter()
                .chain(&self.seen)
                .any(|g| p.starts_with(g))
    }

    /// Where files the config names may be: those, and the work tree git
    /// reads anyway.
    fn wide(&self, p: &Path) -> bool {
        self.strict(p) || self.top.as_ref().is_some_and(|t| p.starts_with(t))
    }

    /// One git directory `x` (with its work tree `top`, when known):
    /// links, configs, object sources, submodules, worktrees.
    fn git_dir(&mut self, x: &Path, top: Option<&Path>, depth: usize) -> R<()> {
        if self.seen.iter().any(|s| s == x) {
            return Ok(());
        }
        self.seen.push(x.to_path_buf());
        if self.seen.len() > MAX_GIT_DIRS || depth > MAX_DEPTH {
            return Err(format!(
                "the repository has more submodules than tern looks at (at {})",
                x.display()
            ));
        }
        // One listing of each git directory says which files to read.
        let names = self.links(x)?;
        let common = if names.has("commondir") {
            commondir(x)?
        } else {
            None
        };
        if let Some(c) = &common
            && !self.strict(c)
            && !worktree_of(x, c)
        {
            return Err(format!(
                "{}/commondir points git at {}, outside the working directories",
                x.display(),
                c.display()
            ));
        }
        let mut dirs = vec![(x.to_path_buf(), names)];
        if let Some(c) = common {
            let n = self.links(&c)?;
            dirs.push((c, n));
        }
        let mut sha256 = false;
        for (g, names) in &dirs {
            for name in ["config", "config.worktree"] {
                if !names.has(name) {
                    continue;
                }
                for e in self.config(&g.join(name), g, top, 0)? {
                    if e.is("extensions", "objectformat") {
                        sha256 = e.value.as_deref() == Some(b"sha256");
                    }
                }
            }
            self.alternates(g, names)?;
        }
        // Submodules of the work tree first (their work tree is known),
        // then any other git directory under modules/.
        if let Some(top) = top
            && dirs[0].1.has("index")
        {
            let links = index::gitlinks(&x.join("index"), if sha256 { 32 } else { 20 })?;
            for p in links.iter() {
                self.submodule(top, p, depth)?;
            }
        }
        for (g, names) in &dirs {
            if names.has("modules") {
                self.modules(&g.join("modules"), depth)?;
            }
            if names.has("worktrees") {
                self.worktrees(&g.join("worktrees"))?;
            }
        }
        Ok(())
    }

    /// A config file and the files it includes: every key on the
    /// allow-list, with the values it allows. The entries, includes
    /// spliced in.
    fn config(&mut self, file: &Path, g: &Path, top: Option<&Path>, depth: usize) -> R<Vec<Entry>> {
        let Some(bytes) = config::read(file)? else {
            return Ok(Vec::new());
        };
        self.files += 1;
        if self.files > MAX_FILES || depth > MAX_DEPTH {
            return Err(format!(
                "the repository has more config files than tern reads (at {})",
                file.display()
            ));
        }
        let shown = file.display();
        let entries = config::parse(&bytes).map_err(|e| {
            format!("the repository config {shown} cannot be read with certainty: {e}")
        })?;
        let mut all = Vec::with_capacity(entries.len());
        for e in entries {
            let include = e.is("include", "path")
                || (e.section == "includeif" && e.sub.is_some() && e.key == "path");
            if include {
                // Followed whatever the condition: more is checked, never less.
                if let Some(target) = self.named_file(&e, file.parent().unwrap_or(g), "includes")? {
                    all.extend(self.config(&target, g, top, depth + 1)?);
                }
                continue;
            }
            let kind =
                allow::kind(&e).map_err(|why| format!("the repository config {shown} {why}"))?;
            match kind {
                V::Worktree => {
                    let w = e.value.as_deref().ok_or_else(|| {
                        format!("the repository config {shown} sets core.worktree without a value")
                    })?;
                    let w = resolve(g, w)?;
                    if !self.wide(&w) {
                        return Err(format!(
                            "the repository config {shown} sets core.worktree to {}, outside the working directories",
                            w.display()
                        ));
                    }
                }
                V::File => {
                    // git reads a relative name from the work tree's top
                    // (the git directory, when bare): both must be fine.
                    let bases: Vec<&Path> = top.into_iter().chain([g]).collect();
                    for b in bases {
                        self.named_file(&e, b, "names")?;
                    }
                }
                _ => {}
            }
            if let Some(p) = allow::programs(&e)
                && !self.programs.contains(&p)
            {
                self.programs.push(p);
            }
            all.push(e);
        }
        Ok(all)
    }

    /// The file a key names, resolved from `base`: Err unless it is where
    /// git could read anyway. None for an empty value.
    fn named_file(&self, e: &Entry, base: &Path, verb: &str) -> R<Option<PathBuf>> {
        let name = e.name();
        let v = e
            .value
            .as_deref()
            .ok_or_else(|| format!("the repository config sets {name} without a value"))?;
        if v.is_empty() {
            return Ok(None);
        }
        // `~` (HOME), `%(prefix)` and `:(optional)` mean more than a path.
        if matches!(v.first(), Some(b'~' | b'%' | b':')) {
            return Err(format!(
                "the repository config {verb} {}, a path tern does not resolve ({name})",
                String::from_utf8_lossy(v)
            ));
        }
        let p = resolve(base, v)?;
        if !self.wide(&p) {
            return Err(format!(
                "the repository config {verb} {}, outside the working directories ({name})",
                p.display()
            ));
        }
        Ok(Some(p))
    }

    /// `objects/info/alternates` (and theirs, recursively) lead only
    /// inside; `http-alternates` is not followed at all.
    fn alternates(&self, g: &Path, names: &Names) -> R<()> {
        let mut todo = vec![(g.join("objects"), 0)];
        while let Some((objects, level)) = todo.pop() {
            let info = objects.join("info");
            // The git directory's own were listed already.
            let here = |n: &str| level > 0 || names.info.iter().any(|i| i == n);
            if here("http-alternates")
                && config::read(&info.join("http-alternates"))?
                    .is_some_and(|b| !b.trim_ascii().is_empty())
            {
                return Err(format!(
                    "{}/http-alternates makes git read objects from elsewhere",
                    info.display()
                ));
            }
            if !here("alternates") {
                continue;
            }
            let Some(list) = config::read(&info.join("alternates"))? else {
                continue;
            };
            for line in list.split(|&c| c == b'\n') {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.is_empty() || line.starts_with(b"#") {
                    continue;
                }
                if line.starts_with(b"\"") {
                    return Err(format!(
                        "{}/alternates has a quoted path, which tern does not read",
                        info.display()
                    ));
                }
                let p = resolve(&objects, line)?;
                if !self.strict(&p) {
                    return Err(format!(
                        "{}/alternates makes git read objects from {}, outside the working directories",
                        info.display(),
                        p.display()
                    ));
                }
                // git follows five levels of alternates.
                if level < 5 {
                    todo.push((p, level + 1));
                }
            }
        }
        Ok(())
    }

    /// Symbolic links among the git directory's own files, `objects/`
    /// (its loose-object directories, `pack/`, `info/`), `refs/`, `logs/`
    /// and `reftable/` (all the way down) lead only inside. (`hooks` is left
    /// alone: the hardened environment runs none.) The names in the git
    /// directory and in `objects/info`, for what to read next.
    fn links(&self, g: &Path) -> R<Names> {
        let mut budget = MAX_ENTRIES;
        let mut names = Names {
            top: self.scan(g, false, &mut budget)?,
            info: Vec::new(),
        };
        if names.has("objects") {
            let objects = g.join("objects");
            let inner = self.scan(&objects, false, &mut budget)?;
            if inner.iter().any(|n| n == "pack") {
                self.scan(&objects.join("pack"), false, &mut budget)?;
            }
            if inner.iter().any(|n| n == "info") {
                // With its commit-graph chain.
                names.info = self.scan(&objects.join("info"), true, &mut budget)?;
            }
        }
        for deep in ["refs", "logs", "reftable"] {
            if names.has(deep) {
                self.scan(&g.join(deep), true, &mut budget)?;
            }
        }
        Ok(names)
    }

    /// The names in `d` (none when it is missing), each link among them
    /// (and below, when `deep`) checked to lead inside.
    fn scan(&self, d: &Path, deep: bool, budget: &mut usize) -> R<Vec<OsString>> {
        let mut names = Vec::new();
        let mut todo = vec![d.to_path_buf()];
        while let Some(dir) = todo.pop() {
            let Some(listing) = self.listing(&dir, d, deep)? else {
                continue;
            };
            *budget = budget
                .checked_sub(listing.names.len())
                .ok_or_else(|| format!("{} has more entries than tern looks at", d.display()))?;
            if dir == d {
                names.extend(listing.names.iter().cloned());
            }
            if deep {
                todo.extend(listing.dirs.iter().map(|n| dir.join(n)));
            }
        }
        Ok(names)
    }

    /// One directory's entries, its links checked (`hooks` at the top of
    /// a git directory left alone). A listing without links is kept while
    /// the directory's identity stays the same: adding, removing or
    /// replacing an entry changes its change time.
    fn listing(&self, dir: &Path, start: &Path, deep: bool) -> R<Option<Rc<Listing>>> {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::metadata(dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
                return Ok(None);
            }
            Err(e) => return Err(format!("{} cannot be read ({e})", dir.display())),
        };
        let id = (
            meta.dev(),
            meta.ino(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
        );
        let hit = LISTINGS.with(|l| {
            l.borrow()
                .iter()
                .find(|(p, i, _)| p == dir && *i == id)
                .map(|(_, _, v)| Rc::clone(v))
        });
        if let Some(hit) = hit {
            return Ok(Some(hit));
        }
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
                return Ok(None);
            }
            Err(e) => return Err(format!("{} cannot be read ({e})", dir.display())),
        };
        let mut listing = Listing::default();
        let mut links = false;
        for entry in rd {
            let entry = entry.map_err(|e| format!("{} cannot be read ({e})", dir.display()))?;
            let ft = entry
                .file_type()
                .map_err(|e| format!("{} cannot be read ({e})", entry.path().display()))?;
            let name = entry.file_name();
            if ft.is_symlink() {
                links = true;
                if !(dir == start && !deep && name == "hooks") {
                    let p = entry.path();
                    let real = std::fs::canonicalize(&p).map_err(|e| {
                        format!("{} is a link tern cannot follow ({e})", p.display())
                    })?;
                    if !self.strict(&real) {
                        return Err(format!(
                            "{} is a link to {}, outside the working directories",
                            p.display(),
                            real.display()
                        ));
                    }
                }
            } else if ft.is_dir() {
                listing.dirs.push(name.clone());
            }
            listing.names.push(name);
        }
        let listing = Rc::new(listing);
        // Where a link was followed, its target may change unseen: not kept.
        if !links {
            LISTINGS.with(|l| {
                let mut l = l.borrow_mut();
                l.retain(|(p, _, _)| p != dir);
                if l.len() >= KEPT_LISTINGS {
                    l.remove(0);
                }
                l.push((dir.to_path_buf(), id, Rc::clone(&listing)));
            });
        }
        Ok(Some(listing))
    }

    /// The submodule at `top/path`, when its work tree holds a `.git`.
    fn submodule(&mut self, top: &Path, path: &[u8], depth: usize) -> R<()> {
        let sub = resolve(top, path)?;
        if !self.wide(&sub) {
            return Err(format!(
                "the submodule {} leads outside the working directories",
                sub.display()
            ));
        }
        let dotgit = sub.join(".git");
        let gitdir = match std::fs::symlink_metadata(&dotgit) {
            Err(_) => return Ok(()),
            Ok(m) if m.is_file() => gitfile(&dotgit, &sub)?,
            Ok(_) => std::fs::canonicalize(&dotgit)
                .map_err(|e| format!("{} cannot be resolved ({e})", dotgit.display()))?,
        };
        // Inside the work tree (an embedded `.git`) is the repository's own.
        if !self.wide(&gitdir) {
            return Err(format!(
                "the submodule's {} points git at {}, outside the working directories",
                dotgit.display(),
                gitdir.display()
            ));
        }
        if gitdir.is_dir() {
            self.git_dir(&gitdir, Some(&sub), depth + 1)?;
        }
        Ok(())
    }

    /// Submodules' git directories under `modules/` (named by path, so
    /// nested through directories that are not themselves repositories).
    fn modules(&mut self, dir: &Path, depth: usize) -> R<()> {
        let mut todo = vec![(dir.to_path_buf(), 0usize)];
        let mut budget = MAX_ENTRIES;
        while let Some((d, level)) = todo.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in rd.flatten() {
                budget = budget
                    .checked_sub(1)
                    .filter(|_| level <= MAX_DEPTH)
                    .ok_or_else(|| {
                        format!("{} has more entries than tern looks at", dir.display())
                    })?;
                let p = entry.path();
                let real = std::fs::canonicalize(&p)
                    .map_err(|e| format!("{} cannot be resolved ({e})", p.display()))?;
                if !self.strict(&real) {
                    return Err(format!(
                        "{} is a link to {}, outside the working directories",
                        p.display(),
                        real.display()
                    ));
                }
                if !real.is_dir() {
                    continue;
                }
                if real.join("HEAD").exists() || real.join("config").exists() {
                    self.git_dir(&real, None, depth + 1)?;
                } else {
                    todo.push((real, level + 1));
                }
            }
        }
        Ok(())
    }

    /// Each linked worktree's `config.worktree` and `commondir`.
    fn worktrees(&mut self, dir: &Path) -> R<()> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for (n, entry) in rd.flatten().enumerate() {
            if n > MAX_GIT_DIRS {
                return Err(format!(
                    "{} has more worktrees than tern looks at",
                    dir.display()
                ));
            }
            let w = entry.path();
            let real = std::fs::canonicalize(&w)
                .map_err(|e| format!("{} cannot be resolved ({e})", w.display()))?;
            if !self.strict(&real) {
                return Err(format!(
                    "{} is a link to {}, outside the working directories",
                    w.display(),
                    real.display()
                ));
            }
            if !real.is_dir() {
                continue;
            }
            if let Some(c) = commondir(&real)?
                && !self.strict(&c)
            {
                return Err(format!(
                    "{}/commondir points git at {}, outside the working directories",
                    real.display(),
                    c.display()
                ));
            }
            self.config(&real.join("config.worktree"), &real, None, 0)?;
        }
        Ok(())
    }
}
