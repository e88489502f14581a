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
//!
//! Once configuration has its copy, those names leave tern's own
//! environment too, and the block `/proc/<tern>/environ` shows
//! ([`ChildEnv::erase_from_own_environment`]): any child of the same user
//! could read them there. What `passEnv` lets through is then handed to
//! children from here.

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
    /// Everything that must not stay in tern's own environment: `remove`
    /// before `passEnv` took names out of it.
    secret: Vec<String>,
    /// The values `passEnv` lets through, kept when tern's environment
    /// lost them: set for every child.
    passed: Vec<(OsString, OsString)>,
}

/// Is `name` one of `list` (exact names, or prefixes written `NAME_*`)?
fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|r| match r.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => r == name,
    })
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
        let mut secret: Vec<String> = Vec::new();
        let wanted = CREDENTIALS
            .iter()
            .map(|s| s.to_string())
            .chain(std::iter::once(api_key_var.to_string()))
            .chain(scrub.iter().cloned());
        for name in wanted {
            if !name.is_empty() && !secret.contains(&name) {
                secret.push(name);
            }
        }
        let remove = secret
            .iter()
            .filter(|n| !pass.contains(n))
            .cloned()
            .collect();
        ChildEnv {
            set,
            remove,
            secret,
            passed: Vec::new(),
        }
    }

    /// Is this variable kept from children?
    pub fn removes(&self, name: &str) -> bool {
        listed(&self.remove, name)
    }

    /// Takes every credential and `scrubEnv` name out of tern's own
    /// environment and zeroes it in the block `/proc/<tern>/environ`
    /// shows, keeping what `passEnv` lets through for the children; then
    /// makes tern undumpable, so that another process of the user cannot
    /// read the copy configuration keeps either (see `sys`). Called once
    /// the configuration has read the environment, before tern starts any
    /// thread or child that could read it. What could not be done comes
    /// back as warnings; the run goes on.
    pub fn erase_from_own_environment(&mut self) -> Vec<String> {
        let secret = |name: &str| listed(&self.secret, name);
        self.passed = super::env::process_vars_os()
            .filter(|(k, _)| k.to_str().is_some_and(|k| secret(k) && !self.removes(k)))
            .collect();
        let erase = |name: &[u8]| std::str::from_utf8(name).is_ok_and(secret);
        // Erased first: an undumpable process may not open its own
        // /proc/self/mem unless it is root.
        let erased = crate::sys::erase_from_environ(&erase);
        let undumpable = crate::sys::set_undumpable();
        let mut warnings = Vec::new();
        if let Err(e) = erased {
            let who = if undumpable.is_ok() {
                "root"
            } else {
                "any process of the same user"
            };
            warnings.push(format!(
                "the credentials could not be erased from tern's environment block ({e}); \
                 {who} can read them in /proc/{}/environ",
                std::process::id()
            ));
        }
        if let Err(e) = undumpable {
            warnings.push(format!(
                "cannot make tern undumpable ({e}); a process of the same user may read its memory"
            ));
        }
        warnings
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
            .passed
            .iter()
            .cloned()
            .chain(
                self.set
                    .iter()
                    .map(|(k, v)| (OsString::from(k), OsString::from(v))),
            )
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
        cmd.envs(self.passed.iter().map(|(k, v)| (k, v)));
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
        // Passed or not, each leaves tern's own environment.
        for secret in ["OPENAI_API_KEY", "MY_KEY", "AWS_REGION"] {
            assert!(listed(&env.secret, secret), "{secret}");
        }
        assert!(!listed(&env.secret, "PATH"));
    }

    #[test]
    fn what_pass_let_through_reaches_children_once_tern_lost_it() {
        let mut env = ChildEnv::new(
            vec![("A".into(), "1".into())],
            "",
            &[],
            &["OPENAI_API_KEY".into()],
        );
        env.passed = vec![("OPENAI_API_KEY".into(), "sk-kept".into())];
        let vars = env.vars();
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("OPENAI_API_KEY"), Some("sk-kept".into()));
        assert_eq!(get("A"), Some("1".into()));
        let mut cmd = std::process::Command::new("true");
        env.apply(&mut cmd);
        assert!(
            cmd.get_envs()
                .any(|(k, v)| k == "OPENAI_API_KEY" && v == Some("sk-kept".as_ref()))
        );
    }
}
