//! Paths as the kernel will see them: `..` is applied after symlinks are
//! followed, so a link inside the project that points out of it resolves
//! to where it points. Tilde forms (`~`, `~/x`, `~+`, `~-`, `~user`) are
//! expanded the way bash expands them, from the facts the plan knows.
//!
//! The walk itself is policy's one resolver (`policy/path.rs`): a path
//! through a component that does not exist is appended as written, a
//! `..` after one, a loop of links or a parent that cannot be looked at
//! is refused (and the command asks).

use std::path::{Path, PathBuf};

/// `p` resolved from the physical directory `dir` (itself resolved), by
/// the resolver policy and the file tools share, as the command's own
/// process will open it (`policy::path::resolve_word_for_child`). None
/// when it cannot be vouched for: links that loop, a `..` after a missing
/// directory, a parent that cannot be looked at, /proc's per-process
/// links (`/proc/self`, `/dev/fd`, `/dev/stdin`), which tern would
/// resolve as itself.
pub(crate) fn resolve(dir: &Path, p: &str) -> Option<PathBuf> {
    resolve_found(dir, p).map(|(p, _)| p)
}

/// The same, with whether the path exists (every component was found).
pub(crate) fn resolve_found(dir: &Path, p: &str) -> Option<(PathBuf, bool)> {
    crate::policy::path::resolve_word_for_child(dir, p).ok()
}

/// The home directory of `user` (None: the current user) from the
/// password database (policy's one reader of it); None when there is no
/// such user.
pub(crate) fn user_home(user: Option<&str>) -> Option<PathBuf> {
    match user {
        Some(u) => crate::policy::path::home_of(u),
        None => crate::policy::path::own_home(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tern-path-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(d).unwrap()
    }

    #[test]
    fn dotdot_after_a_link_leaves_from_where_it_points() {
        let root = temp();
        let proj = root.join("proj");
        let deep = root.join("outside/deep");
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.join("outside/secret"), "x").unwrap();
        std::os::unix::fs::symlink(&deep, proj.join("link")).unwrap();
        // Lexically this is proj/secret; the kernel opens outside/secret.
        assert_eq!(
            resolve(&proj, "link/../secret").unwrap(),
            root.join("outside/secret")
        );
        assert_eq!(resolve(&proj, "link").unwrap(), deep);
        // The kernel stops at the missing `a`; what `..` would mean is unknown.
        assert_eq!(resolve(&proj, "./a/../b"), None);
        std::fs::create_dir(proj.join("a")).unwrap();
        assert_eq!(resolve(&proj, "./a/../b").unwrap(), proj.join("b"));
        assert_eq!(
            resolve(&proj, "/etc/../etc").unwrap(),
            PathBuf::from("/etc")
        );
        // Relative links resolve from their own directory.
        std::os::unix::fs::symlink("../outside", proj.join("rel")).unwrap();
        assert_eq!(
            resolve(&proj, "rel/secret").unwrap(),
            root.join("outside/secret")
        );
        // Missing parts are appended as written.
        assert_eq!(resolve(&proj, "new/x").unwrap(), proj.join("new/x"));
    }

    #[test]
    fn link_loops_are_refused() {
        let root = temp();
        std::os::unix::fs::symlink(root.join("b"), root.join("a")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("b")).unwrap();
        assert_eq!(resolve(&root, "a/x"), None);
    }

    #[test]
    fn the_current_user_has_a_home() {
        assert!(user_home(None).is_some() || !Path::new("/etc/passwd").exists());
        assert_eq!(user_home(Some("no-such-user-tern")), None);
    }
}
