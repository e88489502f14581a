//! The one path resolver policy and tools share.
//!
//! A path the model writes is turned into the path the kernel would open:
//! `~`, `~/x`, `~+`, `~user` expanded the way bash expands them; relative
//! paths taken from the working directory; then walked one component at a
//! time, each symlink replaced by its target *before* the next component
//! is looked at, so `link/..` means the parent of where `link` points (as
//! the kernel reads it), never a lexical shortcut. What comes back has no
//! symlink and no `..` left in it (as of the moment it was resolved), and
//! it is what rules and working-directory checks see and what the tool
//! opens.
//!
//! Components that do not exist yet (a file Write creates) are appended
//! as written; a `..` after a missing component is refused, since what it
//! would mean depends on directories that are not there yet.
//!
//! Caveats: resolution is a snapshot. A process running at the same time
//! could swap a directory for a symlink before the tool opens the path;
//! tools open the final component with `O_NOFOLLOW` so at least the last
//! step cannot be redirected.

use std::path::{Component, Path, PathBuf};

use super::memo::Node;

/// Linux gives up after 40 links in one lookup; so do we.
const MAX_LINKS: usize = 40;

/// Where `~` and relative paths point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
}

impl Base {
    /// The working directory with a home directory (the session's `HOME`,
    /// which the configuration knows; `None` leaves `~` unresolvable).
    pub fn new(cwd: &Path, home: Option<PathBuf>) -> Base {
        Base {
            cwd: cwd.to_path_buf(),
            home,
        }
    }
}

/// `~`, `~/x`, `~+`, `~+/x`, `~user`, `~user/x` expanded as bash does; a
/// `~user` naming nobody stays as written. `~-` (the previous directory)
/// has no meaning for tern and is refused.
pub fn expand_tilde(raw: &str, base: &Base) -> Result<PathBuf, String> {
    let Some(rest) = raw.strip_prefix('~') else {
        return Ok(PathBuf::from(raw));
    };
    let (user, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let dir = match user {
        "" => base
            .home
            .clone()
            .ok_or_else(|| format!("{raw}: HOME is not set, so ~ has no meaning"))?,
        "+" => base.cwd.clone(),
        "-" => {
            return Err(format!(
                "{raw}: ~- (the previous directory) is not supported"
            ));
        }
        name => match home_of(name) {
            Some(h) => h,
            None => return Ok(PathBuf::from(raw)),
        },
    };
    Ok(if tail.is_empty() { dir } else { dir.join(tail) })
}

/// The home directory of a user, from the password database.
pub(crate) fn home_of(name: &str) -> Option<PathBuf> {
    // Bash only expands names made of portable user-name characters.
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return None;
    }
    passwd_home(|fields| fields[0] == name)
}

/// The home directory of the user running tern, from the password database.
pub(crate) fn own_home() -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    passwd_home(|fields| fields[2] == uid)
}

/// The home field of the first /etc/passwd entry `pick` chooses.
fn passwd_home(pick: impl Fn(&[&str]) -> bool) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 6 && pick(&fields)).then(|| PathBuf::from(fields[5]))
    })
}

/// The path `raw` names, resolved as described in the module docs.
pub fn resolve(raw: &str, base: &Base) -> Result<PathBuf, String> {
    if raw.is_empty() {
        return Err("the path is empty".into());
    }
    if raw.contains('\0') {
        return Err("the path contains a NUL byte".into());
    }
    let expanded = expand_tilde(raw, base)?;
    let absolute = if expanded.is_absolute() {
        expanded
    } else {
        base.cwd.join(expanded)
    };
    walk_kept(&absolute).map_err(|e| format!("{raw}: {e}"))
}

/// The same for an absolute path, telling `seen` every path it looked at
/// (so a caller can tell whether the answer could change: it can when
/// any of them is in a directory someone can write).
pub(crate) fn resolve_traced(
    absolute: &Path,
    seen: &mut dyn FnMut(&Path),
) -> Result<PathBuf, String> {
    let mut w = Walk::new();
    w.go(absolute, seen)?;
    Ok(w.out)
}

/// Where a walk has got to: the path so far, whether a component was
/// missing (everything after it is appended as written), and how many
/// links it has followed.
#[derive(Clone)]
pub(crate) struct Walk {
    out: PathBuf,
    missing: bool,
    links: usize,
    /// A link under /proc was followed (`/proc/self`, `/proc/<pid>/cwd`;
    /// `/dev/fd` and `/dev/stdin` lead there): what it names depends on
    /// which process looks.
    per_process: bool,
}

/// `absolute` walked, with the walk of its parent directory kept for the
/// rest of the decision: paths in one directory share it. Walking the
/// parent and then the last component is exactly the walk of the whole
/// (a walk reads its components in order), and inside a decision every
/// lookup it makes is itself kept ([`super::memo::node`]), so the kept
/// parent is what a fresh walk would find.
fn walk_kept(absolute: &Path) -> Result<PathBuf, String> {
    walked(absolute).map(|w| w.out)
}

/// The whole walk of `absolute` (see [`walk_kept`]).
fn walked(absolute: &Path) -> Result<Walk, String> {
    let mut comps = absolute.components();
    let Some(last) = comps.next_back() else {
        return Ok(Walk::new());
    };
    let parent = comps.as_path();
    if matches!(last, Component::RootDir | Component::Prefix(_)) || parent.as_os_str().is_empty() {
        let mut w = Walk::new();
        w.go(absolute, &mut |_| {})?;
        return Ok(w);
    }
    let mut w = super::memo::walk(parent, || {
        let mut w = Walk::new();
        w.go(parent, &mut |_| {}).map(|()| w)
    })?;
    w.go(Path::new(last.as_os_str()), &mut |_| {})?;
    Ok(w)
}

/// A word bash has already expanded (no `~` left to expand), resolved
/// from the resolved directory `dir` the same way, as a command tern
/// starts will open it; with whether it exists (every component was
/// found). Err when the walk followed a link under /proc or ends in tern's own
/// /proc entry (or a thread's): `/proc/self/cwd`, `/dev/fd/3` or
/// `/dev/stdin` name one thing for tern and another for the command.
pub(crate) fn resolve_word_for_child(dir: &Path, word: &str) -> Result<(PathBuf, bool), String> {
    if word.contains('\0') {
        return Err("the path contains a NUL byte".into());
    }
    let absolute = if word.starts_with('/') {
        PathBuf::from(word)
    } else {
        dir.join(word)
    };
    let w = walked(&absolute).map_err(|e| format!("{word}: {e}"))?;
    if w.per_process || is_own_proc(&w.out) {
        return Err(format!(
            "{word} goes through /proc's per-process entries, which name something else for the command than for tern"
        ));
    }
    Ok((w.out, !w.missing))
}

/// `/proc/<n>/…` where `n` is tern's process or one of its threads (each
/// thread's id is a /proc entry of its own).
fn is_own_proc(p: &Path) -> bool {
    let mut c = p.components().skip(1);
    if c.next().map(Component::as_os_str) != Some(std::ffi::OsStr::new("proc")) {
        return false;
    }
    let Some(n) = c.next().and_then(|n| n.as_os_str().to_str()) else {
        return false;
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    n == std::process::id().to_string()
        || std::fs::symlink_metadata(Path::new("/proc/self/task").join(n)).is_ok()
}

/// The next component of `bytes` from `*pos` (empty ones skipped).
fn next_component<'b>(bytes: &'b [u8], pos: &mut usize) -> Option<&'b [u8]> {
    while bytes.get(*pos) == Some(&b'/') {
        *pos += 1;
    }
    if *pos >= bytes.len() {
        return None;
    }
    let start = *pos;
    while *pos < bytes.len() && bytes[*pos] != b'/' {
        *pos += 1;
    }
    Some(&bytes[start..*pos])
}

impl Walk {
    fn new() -> Walk {
        Walk {
            out: PathBuf::from("/"),
            missing: false,
            links: 0,
            per_process: false,
        }
    }

    /// Walks the components of `path` on from here (a leading `/` is
    /// ignored: the caller starts absolute paths at the root).
    fn go(&mut self, path: &Path, seen: &mut dyn FnMut(&Path)) -> Result<(), String> {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        // What is left to walk: the path, and above it the targets of
        // links met on the way (each walked before what followed its link).
        let mut pending: Vec<(std::borrow::Cow<[u8]>, usize)> =
            vec![(std::borrow::Cow::Borrowed(path.as_os_str().as_bytes()), 0)];
        while let Some((bytes, pos)) = pending.last_mut() {
            let Some(part) = next_component(bytes, pos) else {
                pending.pop();
                continue;
            };
            if part == b"." {
                continue;
            }
            if part == b".." {
                if self.missing {
                    return Err(".. follows a directory that does not exist".into());
                }
                self.out.pop();
                continue;
            }
            self.out.push(std::ffi::OsStr::from_bytes(part));
            if self.missing {
                continue;
            }
            seen(&self.out);
            match super::memo::node(&self.out) {
                Node::Link(target) => {
                    self.per_process |= self.out.starts_with("/proc");
                    self.links += 1;
                    if self.links > MAX_LINKS {
                        return Err("too many levels of symbolic links".into());
                    }
                    self.out.pop();
                    if target.is_absolute() {
                        self.out = PathBuf::from("/");
                    }
                    pending.push((
                        std::borrow::Cow::Owned(target.into_os_string().into_vec()),
                        0,
                    ));
                }
                Node::Other => {}
                Node::Missing => self.missing = true,
                // Whether it is a link cannot be told, so the path cannot be
                // vouched for.
                Node::Unknowable(why) => return Err(why),
            }
        }
        Ok(())
    }
}

/// The path with symlinks resolved, for paths that are already absolute
/// (working directories, rule bases). A path that cannot be resolved is
/// returned as given.
pub fn canonical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(d) => d.join(path),
            Err(_) => return path.to_path_buf(),
        }
    };
    walk_kept(&absolute).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn temp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tern-path-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(&d).unwrap()
    }

    #[test]
    fn dotdot_after_a_symlink_is_taken_physically() {
        let t = temp();
        let repo = t.join("repo");
        let outside = t.join("outside/deep");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(t.join("outside/secret"), "s").unwrap();
        symlink(&outside, repo.join("link")).unwrap();
        let base = Base {
            cwd: repo.clone(),
            home: None,
        };
        // Lexically `link/../secret` is `repo/secret`; the kernel opens
        // `outside/secret`. The resolver must agree with the kernel.
        let got = resolve("link/../secret", &base).unwrap();
        assert_eq!(got, t.join("outside/secret"));
        assert_eq!(
            std::fs::read_to_string(repo.join("link/../secret")).unwrap(),
            "s"
        );
        assert_eq!(resolve("link", &base).unwrap(), outside);
        assert_eq!(resolve("./a/./b", &base).unwrap(), repo.join("a/b"));
    }

    #[test]
    fn missing_parts_are_appended_but_dotdot_after_them_is_refused() {
        let t = temp();
        let base = Base {
            cwd: t.clone(),
            home: None,
        };
        assert_eq!(resolve("new/dir/f", &base).unwrap(), t.join("new/dir/f"));
        assert!(
            resolve("new/../../etc/passwd", &base)
                .unwrap_err()
                .contains("does not exist")
        );
    }

    #[test]
    fn relative_links_chains_and_loops() {
        let t = temp();
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        symlink("a/b", t.join("l1")).unwrap();
        symlink("l1/../b", t.join("l2")).unwrap();
        symlink("loop2", t.join("loop1")).unwrap();
        symlink("loop1", t.join("loop2")).unwrap();
        let base = Base {
            cwd: t.clone(),
            home: None,
        };
        assert_eq!(resolve("l1", &base).unwrap(), t.join("a/b"));
        // l2 -> l1/../b -> a/b/../b -> a/b
        assert_eq!(resolve("l2", &base).unwrap(), t.join("a/b"));
        assert!(resolve("loop1/x", &base).unwrap_err().contains("too many"));
    }

    #[test]
    fn tilde_forms() {
        let t = temp();
        let base = Base {
            cwd: t.join("w"),
            home: Some(t.join("h")),
        };
        assert_eq!(resolve("~", &base).unwrap(), t.join("h"));
        assert_eq!(resolve("~/x", &base).unwrap(), t.join("h/x"));
        assert_eq!(resolve("~+/x", &base).unwrap(), t.join("w/x"));
        assert!(resolve("~-/x", &base).is_err());
        // root's home from /etc/passwd, when the file says so.
        if let Some(root) = home_of("root") {
            assert_eq!(expand_tilde("~root/y", &base).unwrap(), root.join("y"));
        }
        // Nobody by that name: the word stays as written (relative).
        assert_eq!(
            resolve("~no-such-user-xyz/f", &base).unwrap(),
            t.join("w/~no-such-user-xyz/f")
        );
        let unset = Base {
            cwd: t.clone(),
            home: None,
        };
        assert!(resolve("~/x", &unset).is_err());
    }
}
