//! What one decision looks up more than once: the type of each path
//! component it walks (a symlink and its target, or not) and the path
//! patterns of the rules. A Bash line names the working directory in
//! nearly every path and checks each path against every read rule, so
//! without this the same lstat and glob compilation repeat dozens of
//! times. Lives only inside [`scope`] — one decision — because the
//! filesystem changes between calls; outside a scope nothing is kept.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::path::Walk;
use super::rules::PathPattern;

/// One path component as lstat saw it.
#[derive(Clone)]
pub(crate) enum Node {
    /// A symlink, with its target.
    Link(PathBuf),
    /// Exists and is not a symlink.
    Other,
    /// Does not exist (or a parent is not a directory).
    Missing,
    /// Cannot be looked at; the message says why.
    Unknowable(String),
}

/// A short multiplicative hash, eight bytes at a time (FxHash's): the
/// maps live for one decision and hold a few dozen keys, so this beats
/// SipHash. Keys an adversary aligned to collide would only slow the
/// decision (a line makes as many keys as it has paths), never change it.
#[derive(Default)]
struct Quick(u64);

impl Hasher for Quick {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut mix = |w: u64| {
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        };
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            mix(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            mix(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<Quick>>;

/// Patterns with one hash of their three parts (base, cwd, spec), each
/// kept with those parts so a collision is told apart.
type Patterns = Map<u64, Vec<([OsString; 3], Rc<PathPattern>)>>;

/// Paths are keyed by their bytes (as written: two spellings of one path
/// are two keys, each worked out on its own).
#[derive(Default)]
struct Memo {
    nodes: Map<OsString, Node>,
    patterns: Patterns,
    other: Map<&'static str, Map<String, Rc<dyn std::any::Any>>>,
    by_path: Map<&'static str, Map<OsString, Rc<dyn std::any::Any>>>,
    walks: Map<OsString, Result<Walk, String>>,
}

// Thread-local because the lookups it saves are made deep inside the
// analysis, whose every function would otherwise carry it; `scope` bounds
// it to one decision, which runs on one thread.
thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// Ends the scope it opened, also when `f` unwinds.
struct Close(bool);

impl Drop for Close {
    fn drop(&mut self) {
        if self.0 {
            MEMO.with(|m| *m.borrow_mut() = None);
        }
    }
}

/// Runs `f` with the caches on; a scope inside a scope shares the outer one.
pub(crate) fn scope<R>(f: impl FnOnce() -> R) -> R {
    let opened = MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.is_some() {
            false
        } else {
            *m = Some(Memo::default());
            true
        }
    });
    let _close = Close(opened);
    f()
}

fn look(path: &Path) -> Node {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::read_link(path) {
            Ok(target) => Node::Link(target),
            Err(e) => Node::Unknowable(format!("cannot read the link {}: {e}", path.display())),
        },
        Ok(_) => Node::Other,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            Node::Missing
        }
        // EACCES on a parent, EIO: whether it is a link cannot be told.
        Err(e) => Node::Unknowable(format!("cannot look at {}: {e}", path.display())),
    }
}

/// The kept value `find` finds, or `make()` — kept with `keep` when a
/// scope is open. `make` runs with no borrow held (it may look things up).
fn cached<T: Clone>(
    find: impl FnOnce(&Memo) -> Option<T>,
    keep: impl FnOnce(&mut Memo, T),
    make: impl FnOnce() -> T,
) -> T {
    match MEMO.with(|m| m.borrow().as_ref().map(find)) {
        Some(Some(v)) => v,
        Some(None) => {
            let v = make();
            MEMO.with(|m| {
                if let Some(memo) = m.borrow_mut().as_mut() {
                    keep(memo, v.clone());
                }
            });
            v
        }
        None => make(),
    }
}

/// lstat (and readlink) of `path`, once per scope.
pub(crate) fn node(path: &Path) -> Node {
    cached(
        |m| m.nodes.get(path.as_os_str()).cloned(),
        |m, n| {
            m.nodes.insert(path.as_os_str().to_os_string(), n);
        },
        || look(path),
    )
}

/// What a directory listing said of `path` (its entry's type is what
/// lstat would say): kept like a look, unless one was already made.
pub(crate) fn seen_in_listing(path: &Path, is_link: bool) {
    if is_link {
        // A link's target is not in the listing; lstat and readlink will tell.
        return;
    }
    MEMO.with(|m| {
        if let Some(memo) = m.borrow_mut().as_mut() {
            memo.nodes
                .entry(path.as_os_str().to_os_string())
                .or_insert(Node::Other);
        }
    });
}

/// The walk of the directory `dir` (see `path::walk_kept`), once per scope.
pub(crate) fn walk(
    dir: &Path,
    make: impl FnOnce() -> Result<Walk, String>,
) -> Result<Walk, String> {
    cached(
        |m| m.walks.get(dir.as_os_str()).cloned(),
        |m, w| {
            m.walks.insert(dir.as_os_str().to_os_string(), w);
        },
        make,
    )
}

/// The pattern of `spec` for a rule based at `base`, in working
/// directory `cwd`, built once per scope.
pub(crate) fn pattern(
    base: &Path,
    cwd: &Path,
    spec: &str,
    make: impl FnOnce() -> PathPattern,
) -> Rc<PathPattern> {
    // Looked up by a hash of the three, then compared in full (no key is
    // built unless one is kept).
    let parts = [
        base.as_os_str(),
        cwd.as_os_str(),
        std::ffi::OsStr::new(spec),
    ];
    let mut h = Quick::default();
    parts.hash(&mut h);
    let hash = h.finish();
    let same = |k: &[OsString; 3]| k.iter().zip(&parts).all(|(a, b)| a == b);
    cached(
        |m| {
            m.patterns
                .get(&hash)?
                .iter()
                .find(|(k, _)| same(k))
                .map(|(_, p)| Rc::clone(p))
        },
        |m, p| {
            m.patterns
                .entry(hash)
                .or_default()
                .push((parts.map(|x| x.to_os_string()), p));
        },
        || Rc::new(make()),
    )
}

/// `make()`, once per scope for each (`kind`, `key`); `kind` names what
/// is kept, and so its type.
pub(crate) fn remember<T: Clone + 'static>(
    kind: &'static str,
    key: &str,
    make: impl FnOnce() -> T,
) -> T {
    cached(
        |m| {
            m.other
                .get(kind)?
                .get(key)
                .and_then(|v| v.downcast_ref::<T>().cloned())
        },
        |m, v| {
            m.other
                .entry(kind)
                .or_default()
                .insert(key.to_string(), Rc::new(v));
        },
        make,
    )
}

/// The same for a key that is a path (compared byte for byte, never
/// through a lossy string).
pub(crate) fn remember_path<T: Clone + 'static>(
    kind: &'static str,
    key: &Path,
    make: impl FnOnce() -> T,
) -> T {
    cached(
        |m| {
            m.by_path
                .get(kind)?
                .get(key.as_os_str())
                .and_then(|v| v.downcast_ref::<T>().cloned())
        },
        |m, v| {
            m.by_path
                .entry(kind)
                .or_default()
                .insert(key.as_os_str().to_os_string(), Rc::new(v));
        },
        make,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside a scope a path is looked at once; outside, every time, so a
    /// change between decisions is always seen.
    #[test]
    fn kept_only_inside_a_scope() {
        let d = std::env::temp_dir().join(format!(
            "tern-memo-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        let l = d.join("l");
        std::os::unix::fs::symlink("a", &l).unwrap();
        scope(|| {
            assert!(matches!(node(&l), Node::Link(t) if t == Path::new("a")));
            std::fs::remove_file(&l).unwrap();
            // Same decision: the first look stands.
            assert!(matches!(node(&l), Node::Link(_)));
            scope(|| assert!(matches!(node(&l), Node::Link(_))));
        });
        assert!(matches!(node(&l), Node::Missing));
        std::os::unix::fs::symlink("b", &l).unwrap();
        assert!(matches!(node(&l), Node::Link(t) if t == Path::new("b")));
        scope(|| assert!(matches!(node(&l), Node::Link(t) if t == Path::new("b"))));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
