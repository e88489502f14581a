//! What the session knows about files it has read, so Write and Edit can
//! refuse to overwrite a file the model has not seen or that changed on
//! disk since it was read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl Stamp {
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

#[derive(Default, Clone)]
pub struct FileStamps {
    seen: HashMap<PathBuf, Stamp>,
}

impl FileStamps {
    /// Records the file as the model now knows it.
    pub fn record(&mut self, path: &Path) {
        if let Some(stamp) = Stamp::of(path) {
            self.seen.insert(path.to_path_buf(), stamp);
        }
    }

    /// Ok when the model has read the file and it has not changed since.
    pub fn check_fresh(&self, path: &Path, shown: &str) -> Result<(), String> {
        match self.seen.get(path) {
            None => Err(format!(
                "{shown} has not been read in this session. Read it first, then edit."
            )),
            Some(seen) if Stamp::of(path) != Some(*seen) => Err(format!(
                "{shown} was modified since it was last read (by the user or a command). Read it again before editing."
            )),
            Some(_) => Ok(()),
        }
    }
}

/// Writes `content` to `path` through a temporary file and a rename, so a
/// crash or full disk never leaves a half-written file behind.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tern-{}", std::process::id()));
    let result = (|| {
        std::fs::write(&tmp, content)?;
        // Keep the original file's permissions (an executable script stays executable).
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// True when the leading bytes look binary (a NUL byte, as git and grep judge).
pub fn looks_binary(head: &[u8]) -> bool {
    memchr::memchr(0, &head[..head.len().min(8192)]).is_some()
}
