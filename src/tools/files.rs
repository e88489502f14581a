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

/// Files up to this size are remembered by their content too, so one
/// whose time changed but whose bytes did not is still fresh.
const MAX_HASHED: u64 = 16 << 20;

#[derive(Debug, Clone, Copy)]
struct Seen {
    stamp: Stamp,
    /// The content's hash, for files up to `MAX_HASHED`.
    hash: Option<u64>,
}

#[derive(Default, Clone)]
pub struct FileStamps {
    seen: HashMap<PathBuf, Seen>,
    /// Keyed per session: content cannot be chosen to collide.
    keys: std::hash::RandomState,
}

impl FileStamps {
    /// Records the file as the model now knows it.
    pub fn record(&mut self, path: &Path) {
        if let Some(stamp) = Stamp::of(path) {
            let hash = self.hash_of(path, stamp.len);
            self.seen.insert(path.to_path_buf(), Seen { stamp, hash });
        }
    }

    /// Ok when the model has read the file and it has not changed since:
    /// the same time and size, or (a touch, a formatter that changed
    /// nothing) a new time over the same bytes.
    pub fn check_fresh(&self, path: &Path, shown: &str) -> Result<(), String> {
        let Some(seen) = self.seen.get(path) else {
            return Err(format!(
                "{shown} has not been read in this session. Read it first, then edit."
            ));
        };
        let now = Stamp::of(path);
        if now == Some(seen.stamp) {
            return Ok(());
        }
        let same_bytes = match (now, seen.hash) {
            (Some(now), Some(hash)) if now.len == seen.stamp.len => {
                self.hash_of(path, now.len) == Some(hash)
            }
            _ => false,
        };
        if same_bytes {
            return Ok(());
        }
        Err(format!(
            "{shown} was modified since it was last read (by the user or a command). Read it again before editing."
        ))
    }

    fn hash_of(&self, path: &Path, len: u64) -> Option<u64> {
        use std::hash::{BuildHasher, Hasher};
        use std::io::Read;
        if len > MAX_HASHED {
            return None;
        }
        // Not following a link in the last component, nor opening a FIFO
        // put in the file's place: Read's own opener.
        let file = super::read::open_regular(path).ok()?;
        let mut hasher = self.keys.build_hasher();
        let mut reader = file.take(MAX_HASHED + 1);
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = reader.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            total += n as u64;
            hasher.write(&buf[..n]);
        }
        hasher.write_u64(total);
        (total <= MAX_HASHED).then(|| hasher.finish())
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
