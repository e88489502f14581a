//! The environment of every process tern starts for someone else: Bash
//! commands (sandboxed or not), hooks and MCP servers.
//!
//! tern's own environment goes down to them minus the provider
//! credentials — `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`,
//! `CLAUDE_CODE_OAUTH_TOKEN`, `OPENAI_API_KEY`, the variable `apiKeyEnv`
//! names — and minus the names in the `scrubEnv` setting (exact, or a
//! prefix ending in `*`). The `passEnv` setting lets chosen names through
//! again; it is read only from the user's own settings, `--settings` and
//! managed policy, since a repository must not be able to hand itself the
//! user's keys. The settings' `env` values are set on top.

use std::ffi::OsString;

/// Always kept from children unless `passEnv` names them.
pub const CREDENTIALS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    /// Set for every child (the settings' `env`).
    pub set: Vec<(String, String)>,
    /// Taken out of what tern's environment passes down: exact names, or
    /// prefixes written `NAME_*`.
    pub remove: Vec<String>,
}

impl ChildEnv {
    /// The credentials (and the `apiKeyEnv` variable) plus `scrub`, less
    /// anything `pass` names.
    pub fn new(
        set: Vec<(String, String)>,
        api_key_var: &str,
        scrub: &[String],
        pass: &[String],
    ) -> ChildEnv {
        let mut remove: Vec<String> = Vec::new();
        let wanted = CREDENTIALS
            .iter()
            .map(|s| s.to_string())
            .chain(std::iter::once(api_key_var.to_string()))
            .chain(scrub.iter().cloned());
        for name in wanted {
            if !name.is_empty() && !pass.contains(&name) && !remove.contains(&name) {
                remove.push(name);
            }
        }
        ChildEnv { set, remove }
    }

    /// Is this variable kept from children?
    pub fn removes(&self, name: &str) -> bool {
        self.remove.iter().any(|r| match r.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => r == name,
        })
    }

    /// The names to take out of this process's environment now.
    fn names(&self) -> Vec<OsString> {
        super::env::process_vars_os()
            .map(|(k, _)| k)
            .filter(|k| k.to_str().is_some_and(|k| self.removes(k)))
            .collect()
    }

    /// The whole environment a command gets now: this process's, less
    /// what is removed, plus the settings' `env` and `TERN=1`. The one
    /// place it is worked out, for the commands and for the policy that
    /// decides about them (which must see the same `PATH` and `HOME`).
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = super::env::process_vars_os()
            .filter(|(k, _)| !k.to_str().is_some_and(|k| self.removes(k)))
            .collect();
        let extra = self
            .set
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .chain(std::iter::once(("TERN".into(), "1".into())));
        for (k, v) in extra {
            env.retain(|(old, _)| *old != k);
            env.push((k, v));
        }
        env
    }

    /// Applies this to a command about to start.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        for name in self.names() {
            cmd.env_remove(name);
        }
        cmd.envs(self.set.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_the_list_go_pass_brings_back() {
        let env = ChildEnv::new(
            vec![("A".into(), "1".into())],
            "MY_KEY",
            &["GITHUB_TOKEN".into(), "AWS_*".into()],
            &["OPENAI_API_KEY".into()],
        );
        for gone in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "MY_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(env.removes(gone), "{gone}");
        }
        assert!(!env.removes("OPENAI_API_KEY"));
        assert!(!env.removes("PATH"));
        assert!(!env.removes("GITHUB_TOKEN_X"));
    }
}
