//! tern's own environment: the one module that reads it
//! (tests/it/architecture.rs holds the tree to this).
//!
//! A session reads its environment once, into an [`Env`], when
//! configuration starts; every knob that comes from a variable is
//! resolved from that snapshot into `config::Runtime`, and the parts are
//! handed values, never the environment. What passes the environment on
//! as a whole (to the commands, hooks and servers tern starts, see
//! `ChildEnv`) reads it here too. The frontends' own display checks
//! (`NO_COLOR`, `TERM`) stay with them.

use std::ffi::OsString;
use std::path::PathBuf;

/// A snapshot of environment variables (tern's own, or a test's).
/// Variables whose name or value is not UTF-8 are left out, as
/// `std::env::var` would not return them either.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    /// This process's environment, now.
    pub fn process() -> Env {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// Exactly these variables (tests).
    #[cfg(test)]
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`, as set (possibly empty).
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// The value of `name` when set and not empty.
    pub fn non_empty(&self, name: &str) -> Option<String> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// The directory for temporary files: `TMPDIR` when set, else `/tmp`
    /// (as `std::env::temp_dir` decides on Unix, but an empty `TMPDIR`
    /// does not mean the current directory).
    pub fn temp_dir(&self) -> PathBuf {
        self.non_empty("TMPDIR")
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
    }
}

/// This process's environment as the OS holds it, names and values
/// unconverted: what a child inherits (see `ChildEnv`).
pub(crate) fn process_vars_os() -> impl Iterator<Item = (OsString, OsString)> {
    std::env::vars_os()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_the_temporary_directory() {
        let env = Env::from_pairs([("A", "1"), ("E", ""), ("A", "2")]);
        assert_eq!(env.get("A").as_deref(), Some("2"), "the last one set wins");
        assert_eq!(env.get("E").as_deref(), Some(""));
        assert_eq!(env.non_empty("E"), None);
        assert_eq!(env.get("B"), None);
        assert_eq!(env.temp_dir(), PathBuf::from("/tmp"));
        let env = Env::from_pairs([("TMPDIR", "/var/tmp/x")]);
        assert_eq!(env.temp_dir(), PathBuf::from("/var/tmp/x"));
        assert_eq!(
            Env::from_pairs([("TMPDIR", "")]).temp_dir(),
            PathBuf::from("/tmp")
        );
    }
}
