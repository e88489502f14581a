//! The session's scratch folder, where oversized outputs are spilled.
//!
//! Sandboxed commands may write to /tmp, where the folder lives, so tern
//! never trusts the path again after making it: the folder comes from
//! `mkdtemp` (mode 0700, an unguessable name) and is held as a
//! descriptor; sub-folders and files are made through descriptors with
//! `O_NOFOLLOW`/`O_EXCL`. A command that swaps the folder, or a name in
//! it, for a symlink makes a spill fail; it never redirects one.
//!
//! The folder is made at the first spill, not at start: most runs spill
//! nothing, and making and removing it was a tenth of a one-turn run's
//! system time. Its name is unknown until then, so nothing can be
//! planted there beforehand.

use std::cell::OnceCell;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct Scratch {
    root: Rc<Root>,
    /// Sub-folders below the root (one per sub-agent), made on first use.
    sub: Vec<String>,
}

#[derive(Debug)]
enum Root {
    /// A private folder to make in this temporary directory.
    Private {
        temp_dir: PathBuf,
        made: OnceCell<(PathBuf, OwnedFd)>,
    },
    /// A plain path (tests), made on first use.
    Plain(PathBuf),
}

impl Scratch {
    /// The session's folder, to be made in `temp_dir` (the configuration's
    /// temporary directory) when first written.
    pub fn private(temp_dir: &Path) -> Scratch {
        Scratch {
            root: Rc::new(Root::Private {
                temp_dir: temp_dir.to_path_buf(),
                made: OnceCell::new(),
            }),
            sub: Vec::new(),
        }
    }

    /// The folder's path, once it exists (a plain path always).
    pub fn made_path(&self) -> Option<PathBuf> {
        let root = match &*self.root {
            Root::Private { made, .. } => made.get()?.0.clone(),
            Root::Plain(p) => p.clone(),
        };
        Some(self.sub.iter().fold(root, |p, s| p.join(s)))
    }

    /// Makes the folder now (a coordinator's workers are told its path
    /// before anything is spilled); returns its path.
    pub fn make(&self) -> std::io::Result<PathBuf> {
        self.dir()?;
        self.made_path().ok_or(std::io::ErrorKind::NotFound.into())
    }

    /// A sub-folder (one per sub-agent), made when first written.
    pub fn sub(&self, name: &str) -> Scratch {
        let mut s = self.clone();
        s.sub.push(name.replace('/', "_"));
        s
    }

    fn dir(&self) -> std::io::Result<OwnedFd> {
        let mut fd = match &*self.root {
            Root::Private { temp_dir, made } => {
                let fd = match made.get() {
                    Some((_, fd)) => fd,
                    None => {
                        let new = crate::sys::private_dir(temp_dir, "tern-")?;
                        &made.get_or_init(|| new).1
                    }
                };
                fd.try_clone()?
            }
            Root::Plain(path) => {
                let parent = path.parent().unwrap_or(Path::new("/"));
                std::fs::create_dir_all(parent)?;
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .ok_or(std::io::ErrorKind::InvalidInput)?;
                let p = crate::sys::open_dir_nofollow(parent)?;
                crate::sys::private_subdir(&p, name)?
            }
        };
        for s in &self.sub {
            fd = crate::sys::private_subdir(&fd, s)?;
        }
        Ok(fd)
    }

    /// A new file `name` in the folder, and its path (for the model).
    pub fn create_file(&self, name: &str) -> std::io::Result<(PathBuf, File)> {
        let dir = self.dir()?;
        let f = crate::sys::create_new_in(&dir, name)?;
        let path = self.made_path().ok_or(std::io::ErrorKind::NotFound)?;
        Ok((path.join(name), f))
    }
}

impl From<PathBuf> for Scratch {
    fn from(path: PathBuf) -> Scratch {
        Scratch {
            root: Rc::new(Root::Plain(path)),
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
        let s = Scratch::private(&std::env::temp_dir());
        assert_eq!(s.made_path(), None, "made before anything was spilled");
        let made = s.make().unwrap();
        let elsewhere = std::env::temp_dir().join(format!("tern-elsewhere-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&elsewhere).unwrap();
        let moved = made.with_extension("moved");
        std::fs::rename(&made, &moved).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &made).unwrap();
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
