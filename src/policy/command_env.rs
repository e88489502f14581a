//! The environment the commands tern runs will have, as the Bash analysis
//! must see it: which program a bare name runs depends on their `PATH`,
//! what `~` means on their `HOME`, and whether `name=value` reaches a
//! program on whether `name` is exported. The session's comes from the
//! configuration (tern's own environment with the settings' `env` applied
//! and credentials removed, `config::ChildEnv::vars`); without one, tern's
//! own environment stands in.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct CommandEnv {
    vars: Vec<(OsString, OsString)>,
    /// `path()`, worked out once (every bare program name asks for it).
    path: std::cell::OnceCell<String>,
}

impl CommandEnv {
    pub fn new(vars: Vec<(OsString, OsString)>) -> CommandEnv {
        CommandEnv {
            vars,
            path: std::cell::OnceCell::new(),
        }
    }

    /// This process's environment, for callers that have no session's.
    pub fn inherited() -> CommandEnv {
        CommandEnv::new(std::env::vars_os().collect())
    }

    /// The value a command sees for `name` (the last one set wins).
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// `PATH`, or the shell's default search path when it is unset.
    pub fn path(&self) -> String {
        self.path_str().to_string()
    }

    /// The same, borrowed.
    pub(crate) fn path_str(&self) -> &str {
        self.path.get_or_init(|| {
            self.get("PATH")
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
        })
    }

    /// The home directory bash uses for `~`: `HOME` when set and not
    /// empty, else the password entry of the user running tern.
    pub fn home(&self) -> Option<PathBuf> {
        match self.get("HOME") {
            Some(h) if !h.is_empty() => Some(PathBuf::from(h)),
            _ => super::path::own_home(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_value_wins_and_defaults_fill_in() {
        let env = CommandEnv::new(vec![
            ("PATH".into(), "/a".into()),
            ("HOME".into(), "/h".into()),
            ("PATH".into(), "/b".into()),
        ]);
        assert_eq!(env.path(), "/b");
        assert_eq!(env.home(), Some(PathBuf::from("/h")));
        assert_eq!(env.get("NOPE"), None);
        let bare = CommandEnv::new(vec![("HOME".into(), "".into())]);
        assert_eq!(bare.path(), "/usr/local/bin:/usr/bin:/bin");
        assert_eq!(bare.home(), super::super::path::own_home());
    }
}
