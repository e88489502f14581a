//! The Bash sandbox as the settings layers describe it, and the hook
//! scripts it must keep a sandboxed command from changing.

use std::path::PathBuf;

use super::settings;
use crate::policy::Rule;

/// The sandbox for Bash, when the settings turn it on: writes beneath the
/// working directories, `allowWrite` paths and (unless turned off) the
/// temporary directories.
pub(super) fn sandbox_policy(
    s: &settings::SandboxSettings,
    hooks: &[settings::HookEntry],
    cwd: &std::path::Path,
    extra_dirs: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<crate::sandbox::SandboxPolicy> {
    if s.enabled != Some(true) {
        return None;
    }
    let mut roots = vec![cwd.to_path_buf()];
    roots.extend(extra_dirs.iter().cloned());
    roots.extend(s.allow_write.iter().cloned());
    if s.allow_tmp != Some(false) {
        roots.push(PathBuf::from("/tmp"));
        if let Some(t) = env("TMPDIR") {
            roots.push(PathBuf::from(t));
        }
    }
    // A path a sandboxed command could write and that later runs or is
    // read unsandboxed: read-only during each command where namespaces
    // allow, checked after it (see sandbox::protect).
    let writable = |p: &PathBuf| roots.iter().any(|r| p.starts_with(r));
    let protected = s
        .deny_write
        .iter()
        .cloned()
        .chain(hooks.iter().flat_map(|h| hook_files(&h.command, cwd)))
        .filter(writable)
        .collect();
    Some(crate::sandbox::SandboxPolicy {
        write_roots: roots,
        deny_read: s.deny_read.iter().map(|(p, _)| p.clone()).collect(),
        tcp_ports: s.allow_tcp_ports.clone(),
        allowed_domains: s.allowed_domains.clone(),
        unix_sockets: match s.allow_unix_sockets {
            Some(true) => crate::sandbox::UnixSockets::All,
            Some(false) => crate::sandbox::UnixSockets::Off,
            None => crate::sandbox::UnixSockets::Scoped,
        },
        unix_allow: s.allow_unix_socket_paths.clone(),
        keep_capabilities: s.keep_capabilities.clone(),
        namespaces: s.namespaces != Some(false),
        working: std::iter::once(cwd.to_path_buf())
            .chain(extra_dirs.iter().cloned())
            .collect(),
        protected,
        network: s.network == Some(true),
        fail_if_unavailable: s.fail_if_unavailable == Some(true),
        excluded: s.excluded_commands.clone(),
        allow_unsandboxed: s.allow_unsandboxed_commands != Some(false),
    })
}

/// `sandbox.filesystem.denyRead` for every tool, sandbox or not: each path
/// becomes a `Read` and an `Edit` deny rule naming it absolutely, as
/// written and with its symlinks resolved (rules are held against
/// resolved paths), with the settings file as origin. A plain path covers
/// everything below it, so a denied directory takes its contents along.
/// `Read` covers Read, Grep and Glob (searches prune what it names),
/// Bash's analysis of what a command reads and memory imports; `Edit`
/// covers Edit, Write and NotebookEdit, which read the file to change it.
/// The REPL's inner calls go through the same policy. The reason the
/// model gets names the setting and the file.
pub(super) fn deny_read_rules(s: &settings::SandboxSettings) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for (path, origin) in &s.deny_read {
        let origin = settings::Origin {
            file: format!("{}: sandbox.filesystem.denyRead", origin.file),
            ..origin.clone()
        };
        let real = crate::policy::canonical(path);
        let mut specs = vec![literal_spec(&real)];
        if real != *path {
            specs.push(literal_spec(path));
        }
        for tool in ["Read", "Edit"] {
            for spec in &specs {
                let rule = Rule {
                    behavior: settings::Behavior::Deny,
                    tool: tool.to_string(),
                    spec: Some(spec.clone()),
                    origin: Some(origin.clone()),
                };
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
    }
    out
}

/// A rule spec that names exactly this absolute path (`//abs/path`): the
/// characters a rule reads as a wildcard are escaped.
fn literal_spec(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    let mut spec = String::from("/");
    if !text.contains(['*', '?', '[', '{']) {
        spec.push_str(&text);
        return spec;
    }
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            spec.push('\\');
        }
        spec.push(c);
    }
    spec
}

/// The files a hook command names, wherever they appear in it
/// (`bash tools/check.sh`, `cd x && "$CLAUDE_PROJECT_DIR"/run.sh`,
/// `python3 < hook.py`): each word and redirection target that, with the
/// project variables expanded, is an existing file. Hooks
/// run unsandboxed, so each of these is protected. A line the parser
/// cannot follow falls back to every whitespace-separated word.
pub(super) fn hook_files(command: &str, cwd: &std::path::Path) -> Vec<PathBuf> {
    let project = cwd.display().to_string();
    let expand = |word: &str| -> String {
        [
            "${CLAUDE_PROJECT_DIR}",
            "$CLAUDE_PROJECT_DIR",
            "${TERN_PROJECT_DIR}",
            "$TERN_PROJECT_DIR",
        ]
        .iter()
        .fold(word.replace(['"', '\''], ""), |acc, var| {
            acc.replace(var, &project)
        })
    };
    // Every word of the line as written, and the parsed words too (a
    // quoted path loses its quotes there): a hook script is protected
    // wherever it appears in the command.
    let mut words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    if let Some(commands) = crate::policy::bash::line_commands(command) {
        words.extend(commands.into_iter().flat_map(|c| c.words));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for w in words {
        let expanded = expand(&w);
        if expanded.is_empty() || expanded.starts_with('-') {
            continue;
        }
        let path = cwd.join(&expanded);
        if path.is_file() && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Value;
    use crate::obj;
    use crate::policy::{Decision, Mode, Policy};
    use settings::{Origin, SandboxSettings, Source};

    fn temp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tern-denyread-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        crate::policy::canonical(&d)
    }

    fn denying(paths: &[PathBuf]) -> Vec<Rule> {
        let origin = Origin {
            source: Source::User,
            file: "/home/u/.claude/settings.json".into(),
            base: PathBuf::from("/home/u/.claude"),
        };
        deny_read_rules(&SandboxSettings {
            deny_read: paths.iter().map(|p| (p.clone(), origin.clone())).collect(),
            ..SandboxSettings::default()
        })
    }

    /// The reason, when `tool` with `input` is denied in bypass mode.
    fn denied(rules: &[Rule], cwd: &std::path::Path, tool: &str, input: Value) -> Option<String> {
        let p = Policy::new(Mode::BypassPermissions, rules.to_vec(), cwd, &[]);
        let reg = crate::tools::Registry::builtin();
        let tool = reg.get(tool).unwrap();
        match p.decide(&crate::tools::facts(&*tool, "toolu_1", &input)) {
            Decision::Deny(r) => Some(r.0),
            _ => None,
        }
    }

    #[test]
    fn every_file_tool_is_denied_a_deny_read_path() {
        let d = temp();
        std::fs::create_dir_all(d.join("keys/deep")).unwrap();
        std::fs::write(d.join(".env"), "K=1\n").unwrap();
        std::fs::write(d.join("keys/deep/a.key"), "k\n").unwrap();
        std::fs::write(d.join("ok.txt"), "fine\n").unwrap();
        let rules = denying(&[d.join(".env"), d.join("keys")]);
        let edit = |p: &str| obj! { "file_path" => p, "old_string" => "K", "new_string" => "J" };
        for (tool, input) in [
            ("Read", obj! { "file_path" => ".env" }),
            ("Read", obj! { "file_path" => "keys/deep/a.key" }),
            ("Grep", obj! { "pattern" => "k", "path" => "keys" }),
            ("Glob", obj! { "pattern" => "*", "path" => "keys/deep" }),
            ("Edit", edit(".env")),
            (
                "Write",
                obj! { "file_path" => "keys/new.txt", "content" => "x" },
            ),
            (
                "NotebookEdit",
                obj! { "notebook_path" => "keys/n.ipynb", "cell_id" => "a", "new_source" => "x" },
            ),
            ("Bash", obj! { "command" => "cat .env" }),
            ("Bash", obj! { "command" => "head -1 keys/deep/a.key" }),
        ] {
            let why = denied(&rules, &d, tool, input.clone())
                .unwrap_or_else(|| panic!("{tool} {} was not denied", input.to_json()));
            assert!(
                why.contains("sandbox.filesystem.denyRead")
                    && why.contains("/home/u/.claude/settings.json"),
                "{tool}: {why}"
            );
        }
        for (tool, input) in [
            ("Read", obj! { "file_path" => "ok.txt" }),
            ("Edit", edit("ok.txt")),
            ("Bash", obj! { "command" => "cat ok.txt" }),
        ] {
            assert_eq!(denied(&rules, &d, tool, input), None, "{tool}");
        }
    }

    /// A tree read whole (`grep -r`) could reach a denied file: asked
    /// about unsandboxed, run when the sandbox hides the file anyway.
    #[test]
    fn a_recursive_read_asks_unless_the_sandbox_hides_the_path() {
        let d = temp();
        std::fs::write(d.join(".env"), "K=1\n").unwrap();
        let origin = Origin {
            source: Source::Project,
            file: "p".into(),
            base: d.clone(),
        };
        let settings = SandboxSettings {
            enabled: Some(true),
            deny_read: vec![(d.join(".env"), origin)],
            ..SandboxSettings::default()
        };
        let rules = deny_read_rules(&settings);
        let decide = |sandboxed: bool, command: &str| {
            let p = Policy::from_spec(crate::policy::PolicySpec {
                sandbox: sandboxed
                    .then(|| sandbox_policy(&settings, &[], &d, &[], &|_| None))
                    .flatten(),
                ..crate::policy::PolicySpec::new(Mode::Default, rules.clone(), &d, &[])
            });
            let reg = crate::tools::Registry::builtin();
            let tool = reg.get("Bash").unwrap();
            let input = obj! { "command" => command };
            match p.decide(&crate::tools::facts(&*tool, "toolu_1", &input)) {
                Decision::Allow(_) => "allow",
                Decision::Ask(_) => "ask",
                Decision::Deny(_) => "deny",
            }
        };
        assert_eq!(decide(false, "grep -r K ."), "ask");
        assert_eq!(decide(true, "grep -r K ."), "allow");
        assert_eq!(decide(false, "cat .env"), "deny");
        assert_eq!(decide(true, "cat .env"), "deny");
        assert_eq!(decide(false, "grep -r K /"), "ask");
    }

    #[test]
    fn a_linked_or_oddly_named_path_is_named_exactly() {
        let d = temp();
        // A denied symlink covers where it points (rules see resolved
        // paths); wildcard characters in a name are taken literally.
        std::fs::create_dir_all(d.join("real")).unwrap();
        std::fs::write(d.join("real/s.txt"), "s\n").unwrap();
        std::os::unix::fs::symlink(d.join("real"), d.join("link")).unwrap();
        std::fs::write(d.join("a[1]*.txt"), "s\n").unwrap();
        std::fs::write(d.join("a1x.txt"), "fine\n").unwrap();
        let rules = denying(&[d.join("link"), d.join("a[1]*.txt")]);
        let read = |p: &str| obj! { "file_path" => p };
        assert!(denied(&rules, &d, "Read", read("real/s.txt")).is_some());
        assert!(denied(&rules, &d, "Read", read("link/s.txt")).is_some());
        assert!(denied(&rules, &d, "Read", read("a[1]*.txt")).is_some());
        assert_eq!(denied(&rules, &d, "Read", read("a1x.txt")), None);
        assert_eq!(literal_spec(std::path::Path::new("/w/.env")), "//w/.env");
        assert_eq!(
            literal_spec(std::path::Path::new("/w/a[1]*")),
            "//w/a\\[1\\]\\*"
        );
    }
}
