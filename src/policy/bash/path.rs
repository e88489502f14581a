//! Paths as the kernel will see them: `..` is applied after symlinks are
//! followed, so a link inside the project that points out of it resolves
//! to where it points. Tilde forms (`~`, `~/x`, `~+`, `~-`, `~user`) are
//! expanded the way bash expands them, from the facts the plan knows.
//!
//! A path through a component that does not exist cannot be opened (the
//! kernel stops there with ENOENT), so everything after it is appended
//! lexically; a path that loops or nests links too deeply is refused.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Like the kernel's ELOOP limit.
const MAX_LINKS: usize = 40;

/// `p` resolved from the physical directory `dir` (itself resolved).
/// None when the links loop or nest too deeply.
pub(crate) fn resolve(dir: &Path, p: &str) -> Option<PathBuf> {
    let mut hops = 0;
    let start = if p.starts_with('/') {
        PathBuf::from("/")
    } else {
        dir.to_path_buf()
    };
    walk(start, Path::new(p), &mut hops)
}

fn walk(mut cur: PathBuf, rest: &Path, hops: &mut usize) -> Option<PathBuf> {
    let mut missing = false;
    for c in rest.components() {
        match c {
            Component::RootDir => cur = PathBuf::from("/"),
            Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                // `cur` has no links in it, so its parent is the physical one.
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                if missing {
                    cur = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        *hops += 1;
                        if *hops > MAX_LINKS {
                            return None;
                        }
                        let target = std::fs::read_link(&next).ok()?;
                        cur = walk(cur, &target, hops)?;
                    }
                    Ok(_) => cur = next,
                    Err(_) => {
                        missing = true;
                        cur = next;
                    }
                }
            }
        }
    }
    Some(cur)
}

/// The home directory bash uses for `~`: `$HOME`, else the password entry.
pub(crate) fn home() -> Option<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Some(PathBuf::from(h)),
        _ => user_home(None),
    }
}

/// The home directory of `user` (None: the current user) from the
/// password database; None when there is no such user.
pub(crate) fn user_home(user: Option<&str>) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 7 {
            return None;
        }
        let hit = match user {
            Some(u) => f[0] == u,
            None => f[2] == uid,
        };
        hit.then(|| PathBuf::from(OsString::from(f[5])))
    })
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
