//! Trees read by a program that follows the links it meets in them
//! (`diff -r`, `ls -LR`): each link's target is read too — the whole of
//! it when it is a directory, which is walked in turn — so it is held to
//! the working directories and the `Read` rules like any operand. The
//! walk is bounded; beyond the bound the command asks.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::super::path;
use super::{Checker, R, Read};

/// Most directory entries looked at for one command.
const MAX_ENTRIES: usize = 5000;

impl Checker<'_> {
    /// Records the targets of the links under `root` that `name` follows.
    pub(super) fn through_links(&mut self, root: &Path, name: &str) -> R<()> {
        let mut todo = vec![root.to_path_buf()];
        let mut seen = HashSet::new();
        let mut entries = 0usize;
        while let Some(dir) = todo.pop() {
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue;
            };
            // A file operand, or a directory met twice (links that loop).
            if !meta.is_dir() || !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            // What the program cannot list, it cannot follow either.
            let Ok(list) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in list {
                entries += 1;
                if entries > MAX_ENTRIES {
                    return Err(format!(
                        "{name} follows the links it meets, and the tree has more than {MAX_ENTRIES} entries to look through"
                    ));
                }
                let e = e.map_err(|err| format!("{name}: {}: {err}", dir.display()))?;
                let ft = e
                    .file_type()
                    .map_err(|err| format!("{name}: {}: {err}", e.path().display()))?;
                if ft.is_dir() {
                    todo.push(e.path());
                } else if ft.is_symlink() {
                    let shown = e.path().display().to_string();
                    let target = path::resolve(&dir, &e.file_name().to_string_lossy())
                        .filter(|_| e.file_name().to_str().is_some())
                        .ok_or_else(|| {
                            format!("{name} follows {shown}, which cannot be resolved")
                        })?;
                    let is_dir = target.is_dir();
                    self.eff.reads.push(Read {
                        repo: false,
                        path: target.clone(),
                        recursive: is_dir,
                        shown,
                    });
                    if is_dir {
                        todo.push(target);
                    }
                }
            }
        }
        Ok(())
    }
}
