//! Markdown documents a project or the user supplies — skills, custom
//! commands, agent definitions — read the one careful way: only a regular
//! file whose resolved path lies inside its folder, of bounded size, as
//! UTF-8 text.
//!
//! A repository is untrusted: `.claude/agents/x.md` as a link to
//! `~/.aws/credentials` would put that file in a prompt the model sees,
//! and a FIFO named `x.md` would hang tern's start on its read. Such a
//! document is left out, and the reason is said.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The longest document read.
pub(crate) const MAX_BYTES: u64 = 256 * 1024;

/// Where documents of one kind (commands, agents) are read: a folder, or
/// one file a plugin's manifest names; the folder every document must
/// resolve inside (the folder itself, or the plugin's root); and the
/// namespace a plugin gives their names (`plugin:name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    pub path: PathBuf,
    pub root: PathBuf,
    pub namespace: Option<String>,
}

impl Folder {
    /// A folder of the project's or the user's, its names as they are.
    pub fn plain(path: PathBuf) -> Folder {
        Folder {
            root: path.clone(),
            path,
            namespace: None,
        }
    }

    /// The documents: the folder's `.md` files, or the one file.
    pub fn files(&self) -> Vec<PathBuf> {
        if self.path.is_file() {
            return vec![self.path.clone()]
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect();
        }
        markdown_files(&self.path)
    }

    /// A document's name as the person and the model use it.
    pub fn name(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}:{name}"),
            None => name.to_string(),
        }
    }
}

/// The `.md` files of a folder, sorted; none when the folder is missing.
pub fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

/// The text of `file`, which must resolve inside `root`; why not, as a
/// sentence naming the file.
pub fn read_inside(root: &Path, file: &Path) -> Result<String, String> {
    let name = file.display();
    let real = std::fs::canonicalize(file).map_err(|e| format!("{name}: {e}"))?;
    let real_root = std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    if !real.starts_with(&real_root) {
        return Err(format!(
            "{name} leads outside {} (to {})",
            root.display(),
            real.display()
        ));
    }
    // Non-blocking: a FIFO's open must not wait for a writer.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&real)
        .map_err(|e| format!("{name}: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("{name}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{name} is not a regular file"));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!("{name} is over {} KB", MAX_BYTES / 1024));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{name} is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_inside_their_folder_are_read() {
        let d = std::env::temp_dir().join(format!("tern-docs-{}", std::process::id()));
        let root = d.join("agents");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(d.join("secret"), "the key").unwrap();
        std::fs::write(root.join("ok.md"), "fine").unwrap();
        std::os::unix::fs::symlink(d.join("secret"), root.join("leak.md")).unwrap();
        std::os::unix::fs::symlink("ok.md", root.join("alias.md")).unwrap();
        let fifo = std::ffi::CString::new(root.join("fifo.md").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::write(root.join("big.md"), vec![b'x'; MAX_BYTES as usize + 1]).unwrap();
        std::fs::write(root.join("bin.md"), [0xff, 0xfe]).unwrap();

        assert_eq!(read_inside(&root, &root.join("ok.md")).unwrap(), "fine");
        assert_eq!(read_inside(&root, &root.join("alias.md")).unwrap(), "fine");
        let why = |f: &str| read_inside(&root, &root.join(f)).unwrap_err();
        assert!(
            why("leak.md").contains("leads outside"),
            "{}",
            why("leak.md")
        );
        assert!(why("fifo.md").contains("not a regular file"));
        assert!(why("big.md").contains("over 256 KB"));
        assert!(why("bin.md").contains("not UTF-8"));
        assert_eq!(markdown_files(&root).len(), 6);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
