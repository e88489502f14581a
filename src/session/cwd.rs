//! The Bash tool's working directory: where the last command's shell
//! ended, kept for the next one as Claude Code keeps it (`cd src`, then
//! `ls` lists src). One value shared by the agent's tool context, which
//! runs commands there and records where they end, and its transcript,
//! which writes it on every entry so that a resume starts there again.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A shared handle: clones see the same directory.
#[derive(Clone, Debug)]
pub(crate) struct ShellCwd(Rc<RefCell<PathBuf>>);

impl ShellCwd {
    pub(crate) fn new(dir: &Path) -> ShellCwd {
        ShellCwd(Rc::new(RefCell::new(dir.to_path_buf())))
    }

    pub(crate) fn get(&self) -> PathBuf {
        self.0.borrow().clone()
    }

    pub(crate) fn set(&self, dir: &Path) {
        *self.0.borrow_mut() = dir.to_path_buf();
    }
}
