//! The Bash sandbox as the settings layers describe it, and the hook
//! scripts it must keep a sandboxed command from changing.

use std::path::PathBuf;

use super::settings;

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
        deny_read: s.deny_read.clone(),
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
