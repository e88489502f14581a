//! Plugins: a folder in Claude Code's plugin format, named by
//! `--plugin-dir DIR` (the SDKs' `plugins` option) or by a settings
//! layer's `plugins` list. No marketplace and no network: a folder is a
//! plugin.
//!
//! ```text
//! my-plugin/
//!   .claude-plugin/plugin.json   {"name": "my-plugin", ...}
//!   commands/*.md                /my-plugin:NAME
//!   agents/*.md                  sub-agents my-plugin:NAME
//!   skills/NAME/SKILL.md         skills my-plugin:NAME
//!   hooks/hooks.json             {"hooks": {"PreToolUse": [...]}}
//!   .mcp.json                    {"mcpServers": {...}}: server plugin:my-plugin:NAME
//! ```
//!
//! The manifest may name more places (`commands`, `agents`, `skills`:
//! a path or a list; `hooks`, `mcpServers`: a path or the object itself),
//! each inside the plugin's folder. `${CLAUDE_PLUGIN_ROOT}` in hooks and
//! server entries is the folder.
//!
//! A plugin adds nothing the same part outside a plugin could not: its
//! commands, agents and skills are documents read the careful way
//! ([`super::documents`]); its hooks and MCP servers become one more
//! settings layer, merged by the same code as every other, so they pass
//! the trust gate exactly as a project's own would. Which layer: a plugin
//! named by a project's settings, or lying inside the checkout (a
//! `--plugin-dir ./plugin` in CI is a folder the pull request can edit),
//! is the project's; one named by the user's own settings or the command
//! line, elsewhere, is the user's.

use std::path::{Component, Path, PathBuf};

use super::Folder;
use super::settings::{Origin, Source};
use crate::json::{self, Map, Value};

/// The longest manifest, hooks file or `.mcp.json` read.
const MAX_JSON: u64 = 1024 * 1024;

/// A plugin folder someone named, and who.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) path: PathBuf,
    /// `--plugin-dir`, or the settings file that lists it.
    pub(crate) from: String,
    pub(crate) source: Source,
}

/// A plugin that loaded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plugin {
    pub(crate) name: String,
    pub(crate) version: Option<String>,
    pub(crate) description: Option<String>,
    /// The folder, resolved.
    pub(crate) root: PathBuf,
    pub(crate) from: String,
    /// Held to the project's trust (see the module's doc).
    pub(crate) project: bool,
    pub(crate) commands: Vec<Folder>,
    pub(crate) agents: Vec<Folder>,
    /// Skills folders (each holding `NAME/SKILL.md`).
    pub(crate) skills: Vec<PathBuf>,
    /// `{"hooks": …, "mcpServers": …}` with the root expanded: merged as a
    /// settings layer.
    pub(crate) layer: Map,
    /// The manifest: what the trust report names as the hooks' and
    /// servers' file.
    pub(crate) layer_file: String,
    /// Parts left out, and why.
    pub(crate) notes: Vec<String>,
}

/// A folder that is not a usable plugin, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) path: String,
    pub(crate) from: String,
    pub(crate) why: String,
}

impl Plugin {
    /// The settings layer its hooks and servers are merged as.
    pub(crate) fn origin(&self) -> Origin {
        Origin {
            source: if self.project {
                Source::Project
            } else {
                Source::Cli
            },
            file: self.layer_file.clone(),
            base: self.root.clone(),
        }
    }

    /// How many hooks and servers the plugin declares.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let hooks = self
            .layer
            .get("hooks")
            .and_then(Value::as_object)
            .map_or(0, |events| {
                events
                    .iter()
                    .filter_map(|(_, groups)| groups.as_array())
                    .flatten()
                    .filter_map(|g| g.get("hooks").and_then(Value::as_array))
                    .map(Vec::len)
                    .sum()
            });
        let servers = self
            .layer
            .get("mcpServers")
            .and_then(Value::as_object)
            .map_or(0, Map::len);
        (hooks, servers)
    }

    /// For `system/init` and the SDK.
    pub(crate) fn to_value(&self) -> Value {
        crate::obj! {
            "name" => self.name.clone(),
            "path" => self.root.display().to_string(),
        }
    }
}

/// What a pull request can write: the working directory and the
/// checkout it lies in (the nearest folder above holding `.git`), except
/// a home folder (dotfiles kept in git are the user's own).
fn checkout(cwd: &Path, user: &[PathBuf]) -> Vec<PathBuf> {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let repo = cwd
        .ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf);
    let homes: Vec<&Path> = user.iter().filter_map(|u| u.parent()).collect();
    std::iter::once(cwd)
        .chain(repo)
        .filter(|b| !homes.contains(&b.as_path()))
        .collect()
}

/// Loads every requested plugin, the command line's first; a name met
/// twice keeps the first.
pub(crate) fn load(
    requests: &[Request],
    cwd: &Path,
    user_dirs: &[PathBuf],
) -> (Vec<Plugin>, Vec<Refused>) {
    let home = user_dirs
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect::<Vec<_>>();
    let checkout = checkout(cwd, &home);
    let mut loaded: Vec<Plugin> = Vec::new();
    let mut refused = Vec::new();
    for r in requests {
        let refuse = |why: String| Refused {
            path: r.path.display().to_string(),
            from: r.from.clone(),
            why,
        };
        match one(r, &checkout, &home) {
            Ok(p) if loaded.iter().any(|q| q.name == p.name) => refused.push(refuse(format!(
                "a plugin named {} is already loaded",
                p.name
            ))),
            Ok(p) => loaded.push(p),
            Err(why) => refused.push(refuse(why)),
        }
    }
    (loaded, refused)
}

/// Is this folder the repository's to edit? Checked on the path as
/// written and as resolved, so a link cannot carry it either way; the
/// user's own settings folders stay the user's.
fn in_checkout(written: &Path, root: &Path, checkout: &[PathBuf], user: &[PathBuf]) -> bool {
    if user.iter().any(|u| root.starts_with(u)) {
        return false;
    }
    checkout
        .iter()
        .any(|b| root.starts_with(b) || written.starts_with(b))
}

fn one(r: &Request, checkout: &[PathBuf], user: &[PathBuf]) -> Result<Plugin, String> {
    let meta = std::fs::metadata(&r.path).map_err(|e| format!("cannot read the folder: {e}"))?;
    if !meta.is_dir() {
        return Err("not a folder".into());
    }
    let root = std::fs::canonicalize(&r.path).map_err(|e| format!("cannot resolve it: {e}"))?;
    let manifest_path = root.join(".claude-plugin/plugin.json");
    let manifest = match read_json(&root, &manifest_path)? {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(".claude-plugin/plugin.json is not a JSON object".into()),
        None => return Err("no .claude-plugin/plugin.json in it".into()),
    };
    let name = manifest
        .get("name")
        .and_then(Value::as_str)
        .ok_or(".claude-plugin/plugin.json has no \"name\"")?
        .to_string();
    if !valid_name(&name) {
        return Err(format!(
            "its name {name:?} is not 1-64 letters, digits, '-', '_' or '.'"
        ));
    }
    let project = r.source == Source::Project
        || r.source == Source::Local
        || in_checkout(&absolute(&r.path), &root, checkout, user);
    let mut p = Plugin {
        name: name.clone(),
        version: manifest
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string),
        description: manifest
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        layer_file: manifest_path.display().to_string(),
        root,
        from: r.from.clone(),
        project,
        commands: Vec::new(),
        agents: Vec::new(),
        skills: Vec::new(),
        layer: Map::new(),
        notes: Vec::new(),
    };
    documents(&mut p, &manifest);
    hooks(&mut p, &manifest);
    servers(&mut p, &manifest);
    Ok(p)
}

/// Commands, agents and skills: the default folders, and what the
/// manifest adds.
fn documents(p: &mut Plugin, manifest: &Map) {
    for key in ["commands", "agents", "skills"] {
        let mut places = vec![p.root.join(key)];
        for written in paths(manifest.get(key)) {
            match inside(&p.root, &written) {
                Ok(path) => places.push(path),
                Err(why) => p.notes.push(format!("{key} {written:?} left out: {why}")),
            }
        }
        places.dedup();
        for path in places.into_iter().filter(|d| d.exists()) {
            let folder = Folder {
                path: path.clone(),
                root: p.root.clone(),
                namespace: Some(p.name.clone()),
            };
            match key {
                "commands" => p.commands.push(folder),
                "agents" => p.agents.push(folder),
                _ => p.skills.push(path),
            }
        }
    }
}

/// `hooks`: `hooks/hooks.json`, or what the manifest names or holds.
fn hooks(p: &mut Plugin, manifest: &Map) {
    let declared = match manifest.get("hooks") {
        Some(Value::String(written)) => file_value(p, "hooks", written),
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            p.notes
                .push("hooks left out: neither a path nor an object".into());
            None
        }
        None => file_value(p, "hooks", "hooks/hooks.json"),
    };
    let Some(v) = declared else {
        return;
    };
    // A hooks file is `{"hooks": {EVENT: […]}}`; the manifest may hold
    // the events directly.
    let events = match v.get("hooks") {
        Some(inner @ Value::Object(_)) => inner.clone(),
        _ => v,
    };
    if events.as_object().is_some() {
        let root = p.root.display().to_string();
        p.layer.insert("hooks", expand_root(&events, &root));
    } else {
        p.notes.push("hooks left out: not an object".into());
    }
}

/// `mcpServers`: `.mcp.json`, or what the manifest names or holds. Each
/// server is `plugin:PLUGIN:NAME` (its tools `mcp__plugin_PLUGIN_NAME__…`).
fn servers(p: &mut Plugin, manifest: &Map) {
    let declared = match manifest.get("mcpServers") {
        Some(Value::String(written)) => file_value(p, "mcpServers", written),
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            p.notes
                .push("mcpServers left out: neither a path nor an object".into());
            None
        }
        None => file_value(p, "mcpServers", ".mcp.json"),
    };
    let Some(v) = declared else {
        return;
    };
    let servers = match v.get("mcpServers") {
        Some(inner @ Value::Object(_)) => inner.clone(),
        _ => v,
    };
    let Some(map) = servers.as_object() else {
        p.notes.push("mcpServers left out: not an object".into());
        return;
    };
    let root = p.root.display().to_string();
    let mut named = Map::new();
    for (name, entry) in map.iter() {
        named.insert(
            format!("plugin:{}:{name}", p.name),
            expand_root(entry, &root),
        );
    }
    if !named.is_empty() {
        p.layer.insert("mcpServers", Value::Object(named));
    }
}

/// The JSON of a file the plugin names; a missing default file is no
/// note, a broken one is.
fn file_value(p: &mut Plugin, key: &str, written: &str) -> Option<Value> {
    let path = match inside(&p.root, written) {
        Ok(path) => path,
        Err(why) => {
            p.notes.push(format!("{key} {written:?} left out: {why}"));
            return None;
        }
    };
    match read_json(&p.root, &path) {
        Ok(v) => v,
        Err(why) => {
            p.notes.push(format!("{key} left out: {why}"));
            None
        }
    }
}

/// A path the manifest wrote, which must stay inside the plugin: relative,
/// and resolving inside once links are followed (when it exists).
fn inside(root: &Path, written: &str) -> Result<PathBuf, String> {
    let rel = Path::new(written);
    if rel.is_absolute() || rel.components().any(|c| c == Component::ParentDir) {
        return Err("paths must stay inside the plugin's folder".into());
    }
    let path = root.join(rel);
    match std::fs::canonicalize(&path) {
        Ok(real) if !real.starts_with(root) => Err(format!(
            "it leads outside the plugin's folder (to {})",
            real.display()
        )),
        _ => Ok(path),
    }
}

/// A JSON file inside the plugin, read the careful way (a regular file of
/// bounded size, resolving inside); `Ok(None)` when it does not exist.
fn read_json(root: &Path, path: &Path) -> Result<Option<Value>, String> {
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    let shown = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    if meta.len() > MAX_JSON {
        return Err(format!("{shown} is over {} KB", MAX_JSON / 1024));
    }
    let text = super::read_inside(root, path)?;
    json::parse(&text)
        .map(Some)
        .map_err(|e| format!("{shown} is not JSON: {e}"))
}

/// The manifest's paths: a string or a list of strings.
fn paths(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// `${CLAUDE_PLUGIN_ROOT}` replaced by the folder in every string.
fn expand_root(v: &Value, root: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("${CLAUDE_PLUGIN_ROOT}", root)),
        Value::Array(a) => Value::Array(a.iter().map(|x| expand_root(x, root)).collect()),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m.iter() {
                out.insert(k, expand_root(x, root));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tern-plugins-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(d).unwrap()
    }

    #[test]
    fn paths_stay_inside_the_plugin_even_through_links() {
        let d = scratch("inside");
        std::fs::create_dir_all(d.join("p/commands")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("p/out")).unwrap();
        let root = d.join("p");
        assert!(inside(&root, "commands").is_ok());
        assert!(
            inside(&root, "not-yet").is_ok(),
            "a missing path is no escape"
        );
        for bad in ["../x", "/etc", "commands/../../x", "out"] {
            assert!(inside(&root, bad).is_err(), "{bad}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_folder_in_the_checkout_is_the_projects_however_it_is_reached() {
        let d = scratch("checkout");
        let repo = d.join("repo");
        let home = d.join("home");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub/plugin")).unwrap();
        std::fs::create_dir_all(home.join(".claude/plugins/mine")).unwrap();
        std::fs::create_dir_all(d.join("elsewhere")).unwrap();
        // A link from outside into the checkout, and one from inside out.
        std::os::unix::fs::symlink(repo.join("sub/plugin"), d.join("link-in")).unwrap();
        std::os::unix::fs::symlink(d.join("elsewhere"), repo.join("link-out")).unwrap();
        let user = vec![home.join(".claude")];
        let checkout = checkout(&repo.join("sub"), &user);
        assert_eq!(checkout, [repo.join("sub"), repo.clone()]);
        // Run from the home folder, that folder is no checkout.
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert!(super::checkout(&home, &user).is_empty());
        let judge = |written: &Path| {
            let root = std::fs::canonicalize(written).unwrap();
            in_checkout(written, &root, &checkout, &user)
        };
        assert!(judge(&repo.join("sub/plugin")));
        assert!(judge(&d.join("link-in")), "resolved into the checkout");
        assert!(judge(&repo.join("link-out")), "written inside the checkout");
        assert!(!judge(&d.join("elsewhere")));
        assert!(!judge(&home.join(".claude/plugins/mine")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_root_is_expanded_everywhere_and_servers_are_namespaced() {
        let d = scratch("expand");
        let root = d.join("p");
        std::fs::create_dir_all(root.join(".claude-plugin")).unwrap();
        std::fs::write(
            root.join(".claude-plugin/plugin.json"),
            r#"{"name": "p", "mcpServers": {"s": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/s", "args": ["--dir", "${CLAUDE_PLUGIN_ROOT}"], "env": {"X": "${CLAUDE_PLUGIN_ROOT}/x"}}},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/stop.sh"}]}]}}"#,
        )
        .unwrap();
        let req = Request {
            path: root.clone(),
            from: "--plugin-dir".into(),
            source: Source::Cli,
        };
        // Run from a folder beside it: the plugin is the user's.
        std::fs::create_dir_all(d.join("work")).unwrap();
        let (loaded, refused) = load(&[req], &d.join("work"), &[]);
        assert!(refused.is_empty(), "{refused:?}");
        let p = &loaded[0];
        let r = root.display().to_string();
        let server = p
            .layer
            .get("mcpServers")
            .unwrap()
            .get("plugin:p:s")
            .unwrap();
        assert_eq!(
            server.str_field("command"),
            Some(format!("{r}/bin/s").as_str())
        );
        assert!(server.to_json().contains(&format!("\"--dir\",\"{r}\"")));
        assert!(server.to_json().contains(&format!("{r}/x")));
        assert!(
            !Value::Object(p.layer.clone())
                .to_json()
                .contains("${CLAUDE_PLUGIN_ROOT}")
        );
        assert_eq!(p.counts(), (1, 1));
        assert_eq!(p.origin().source, Source::Cli);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
