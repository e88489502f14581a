//! The session's scratch folder, where oversized outputs are spilled.
//!
//! Sandboxed commands may write to /tmp, where the folder lives, so tern
//! never trusts the path again after making it: the folder comes from
//! `mkdtemp` (mode 0700, an unguessable name) and is held as a
//! descriptor; sub-folders and files are made through descriptors with
//! `O_NOFOLLOW`/`O_EXCL`. A command that swaps the folder, or a name in
//! it, for a symlink makes a spill fail; it never redirects one.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct Scratch {
    path: PathBuf,
    /// The folder made by `create`; `None` for a plain path (tests), made
    /// on first use.
    root: Option<Rc<OwnedFd>>,
    /// Sub-folders below `root`, made on first use.
    sub: Vec<String>,
}

impl Scratch {
    /// A fresh private folder in `temp_dir` (the configuration's
    /// temporary directory).
    pub fn create(temp_dir: &Path) -> std::io::Result<Scratch> {
        let (path, fd) = crate::sys::private_dir(temp_dir, "tern-")?;
        Ok(Scratch {
            path,
            root: Some(Rc::new(fd)),
            sub: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A sub-folder (one per sub-agent), made when first written.
    pub fn sub(&self, name: &str) -> Scratch {
        let mut s = self.clone();
        s.path = self.path.join(name);
        s.sub.push(name.replace('/', "_"));
        s
    }

    fn dir(&self) -> std::io::Result<OwnedFd> {
        let mut fd = match &self.root {
            Some(r) => r.try_clone()?,
            None => {
                let parent = self.path.parent().unwrap_or(Path::new("/"));
                std::fs::create_dir_all(parent)?;
                let name = self
                    .path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .ok_or(std::io::ErrorKind::InvalidInput)?;
                let p = crate::sys::open_dir_nofollow(parent)?;
                crate::sys::private_subdir(&p, name)?
            }
        };
        if self.root.is_some() {
            for s in &self.sub {
                fd = crate::sys::private_subdir(&fd, s)?;
            }
        }
        Ok(fd)
    }

    /// A new file `name` in the folder, and its path (for the model).
    pub fn create_file(&self, name: &str) -> std::io::Result<(PathBuf, File)> {
        let dir = self.dir()?;
        let f = crate::sys::create_new_in(&dir, name)?;
        Ok((self.path.join(name), f))
    }
}

impl From<PathBuf> for Scratch {
    fn from(path: PathBuf) -> Scratch {
        Scratch {
            path,
            root: None,
            sub: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the scratch folder swapped for a symlink made tern
    /// write a spill file wherever the link pointed.
    #[test]
    fn a_swapped_folder_never_redirects_a_spill() {
        let s = Scratch::create(&std::env::temp_dir()).unwrap();
        let elsewhere = std::env::temp_dir().join(format!("tern-elsewhere-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&elsewhere).unwrap();
        let moved = s.path().with_extension("moved");
        std::fs::rename(s.path(), &moved).unwrap();
        std::os::unix::fs::symlink(&elsewhere, s.path()).unwrap();
        let (_, mut f) = s.create_file("out.txt").unwrap();
        std::io::Write::write_all(&mut f, b"spilled").unwrap();
        assert!(!elsewhere.join("out.txt").exists(), "followed the symlink");
        assert_eq!(
            std::fs::read_to_string(moved.join("out.txt")).unwrap(),
            "spilled"
        );
        // A planted link inside the folder is refused, not followed.
        std::os::unix::fs::symlink(elsewhere.join("planted"), moved.join("link.txt")).unwrap();
        assert!(s.create_file("link.txt").is_err());
        assert!(!elsewhere.join("planted").exists());
        // Sub-folders are made through the descriptor too.
        let sub = s.sub("agent-1");
        let (p, _) = sub.create_file("x").unwrap();
        assert!(p.ends_with("agent-1/x"));
        assert!(moved.join("agent-1/x").exists());
        let meta = std::fs::metadata(&moved).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o700
        );
    }
}
