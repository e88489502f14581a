//! Where a person's answers about directories are kept: `trust.json` in
//! tern's state folder (`TERN_HOME`, `$XDG_DATA_HOME/tern`,
//! `~/.local/share/tern`), keyed by the resolved directory, each with the
//! digests of the items trusted and declined.
//!
//! Never the temporary fallback the transcripts may use: a file in a
//! shared temporary folder is one another user, or a sandboxed command
//! allowed to write `/tmp`, could plant. A record that is not a regular
//! file owned by this user and writable only by them is not read at all
//! (said once, as a warning), since whoever wrote it could grant trust.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Grant, Item};
use crate::json::{self, Map, Value};
use crate::obj;

const FILE: &str = "trust.json";

/// The record's file, when there is a state folder to keep it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Store {
    path: Option<PathBuf>,
}

impl Store {
    /// The store beside the transcripts' preferred root (`<state>/projects`).
    pub(crate) fn beside(projects: Option<&Path>) -> Store {
        Store {
            path: projects
                .and_then(Path::parent)
                .map(|state| state.join(FILE)),
        }
    }

    /// The file (protected: writing it is granting trust).
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// What was answered for `dir`; a warning when the record could not be
    /// used.
    pub(crate) fn grant(&self, dir: &Path) -> (Grant, Option<String>) {
        let (root, warning) = match self.read() {
            Ok(root) => (root, None),
            Err(e) => (Map::new(), Some(e)),
        };
        let Some(entry) = root
            .get("directories")
            .and_then(|d| d.get(&dir.display().to_string()))
        else {
            return (Grant::Nothing, warning);
        };
        let digests = |key: &str| -> Vec<String> {
            entry
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| i.str_field("digest"))
                .map(str::to_string)
                .collect()
        };
        (
            Grant::Pinned {
                trusted: digests("trusted"),
                declined: digests("declined"),
            },
            warning,
        )
    }

    /// Records a person's answer about `dir` as it holds `items` now. Yes
    /// trusts every item as it is (what was trusted and is gone is
    /// forgotten); no declines what is not already trusted.
    pub(crate) fn answer(&self, dir: &Path, items: &[Item], yes: bool) -> Result<(), String> {
        let path = self.writable()?;
        let mut root = self.read()?;
        let key = dir.display().to_string();
        let old = root
            .get("directories")
            .and_then(|d| d.get(&key))
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        let listed = |i: &Item| {
            obj! { "digest" => i.digest.clone(), "what" => i.what.clone(), "file" => i.file.clone() }
        };
        let (trusted, declined): (Vec<Value>, Vec<Value>) = if yes {
            (items.iter().map(listed).collect(), Vec::new())
        } else {
            let kept = |key: &str| {
                old.get(key)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            };
            let mut declined = kept("declined");
            for i in items.iter().filter(|i| !i.admitted) {
                if !declined
                    .iter()
                    .any(|d| d.str_field("digest") == Some(&i.digest))
                {
                    declined.push(listed(i));
                }
            }
            (kept("trusted"), declined)
        };
        let entry = obj! {
            "trusted" => trusted,
            "declined" => declined,
            "at" => now_secs(),
        };
        edit_directories(&mut root, |d| d.insert(key, entry));
        write(path, &root)
    }

    /// Adds one item to what is trusted in `dir` (a person's "always"
    /// answer, saved in the project's local settings, is theirs).
    pub(crate) fn add(&self, dir: &Path, item: &Item) -> Result<(), String> {
        let path = self.writable()?;
        let mut root = self.read()?;
        let key = dir.display().to_string();
        edit_directories(&mut root, |d| {
            let mut entry = match d.remove(&key) {
                Some(Value::Object(m)) => m,
                _ => Map::new(),
            };
            let mut trusted = match entry.remove("trusted") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            if !trusted
                .iter()
                .any(|t| t.str_field("digest") == Some(&item.digest))
            {
                trusted.push(obj! {
                    "digest" => item.digest.clone(),
                    "what" => item.what.clone(),
                    "file" => item.file.clone(),
                });
            }
            entry.insert("trusted", trusted);
            entry.insert("at", now_secs());
            d.insert(key, Value::Object(entry));
        });
        write(path, &root)
    }

    /// Forgets `dir`; false when there was nothing to forget.
    pub(crate) fn revoke(&self, dir: &Path) -> Result<bool, String> {
        let path = self.writable()?;
        let mut root = self.read()?;
        let key = dir.display().to_string();
        let gone = edit_directories(&mut root, |d| d.remove(&key).is_some());
        if gone {
            write(path, &root)?;
        }
        Ok(gone)
    }

    fn writable(&self) -> Result<&Path, String> {
        self.path.as_deref().ok_or_else(|| {
            "no state folder to keep trust in: set HOME, XDG_DATA_HOME or TERN_HOME".to_string()
        })
    }

    /// The whole record: empty when there is none; Err when one exists
    /// that cannot be used.
    fn read(&self) -> Result<Map, String> {
        let Some(path) = &self.path else {
            return Ok(Map::new());
        };
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        if !meta.file_type().is_file()
            || meta.uid() != crate::sys::uid()
            || meta.mode() & 0o022 != 0
        {
            return Err(format!(
                "{} is not used: it must be a regular file of yours that only you can write",
                path.display()
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        match json::parse(&text) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(format!(
                "{} is not a JSON object; no directory is trusted until it is fixed or removed",
                path.display()
            )),
        }
    }
}

/// Changes the `directories` object (made when missing or not an object).
fn edit_directories<T>(root: &mut Map, f: impl FnOnce(&mut Map) -> T) -> T {
    let mut dirs = match root.remove("directories") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let out = f(&mut dirs);
    root.insert("directories", Value::Object(dirs));
    out
}

fn write(path: &Path, root: &Map) -> Result<(), String> {
    let mut text = Value::Object(root.clone()).to_json();
    text.push('\n');
    crate::sys::write_private(path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
