//! Settings files, read in layers and merged into one view that remembers
//! where every rule came from.
//!
//! Precedence, lowest to highest: user (`$XDG_CONFIG_HOME/tern/settings.json`,
//! after `~/.claude/settings.json`), project (`.claude/settings.json`, then
//! `.tern/settings.json`), local (the same with `.local`), the command line
//! (`--settings <file|json>` and flags), and managed policy
//! (`/etc/tern/managed-settings.json`). Within a level tern's own file comes
//! after Claude Code's, so it wins. Scalars take the highest layer's value;
//! lists are concatenated without duplicates. Tightening settings
//! (`disableBypassPermissionsMode`) take effect from any layer and cannot be
//! undone by a lower one.
//!
//! A broken file is reported (file, line, what) and skipped; only an
//! unreadable managed policy stops tern, since running without it could
//! allow what an administrator forbade.

use std::path::{Path, PathBuf};

use super::trust::Gate;
use crate::json::{self, Value};

pub use crate::policy::{Behavior, Origin, Source};

/// A rule's text with its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleText {
    pub behavior: Behavior,
    pub text: String,
    pub origin: Origin,
}

/// One `hooks` entry: for `event`, commands run when `matcher` matches.
#[derive(Clone, Debug, PartialEq)]
pub struct HookEntry {
    pub event: String,
    pub matcher: String,
    pub command: String,
    pub timeout_secs: u64,
    pub origin: Origin,
}

/// The `sandbox` settings (Claude Code's keys where they fit).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxSettings {
    pub enabled: Option<bool>,
    /// A layer the user writes turned it on. A project may turn the
    /// sandbox on too (that only narrows), but its commands then still
    /// ask: auto-allowing them would widen what runs without a question.
    pub enabled_by_user: bool,
    pub fail_if_unavailable: Option<bool>,
    pub auto_allow_bash: Option<bool>,
    pub allow_write: Vec<PathBuf>,
    /// `sandbox.network.enabled`: TCP/UDP for sandboxed commands.
    pub network: Option<bool>,
    /// `sandbox.filesystem.allowTmp`: /tmp and $TMPDIR writable (default yes).
    pub allow_tmp: Option<bool>,
    pub excluded_commands: Vec<String>,
    pub allow_unsandboxed_commands: Option<bool>,
    /// `sandbox.filesystem.denyRead`, with the file that named each path:
    /// unreadable for sandboxed commands and, as deny rules, every tool.
    pub deny_read: Vec<(PathBuf, Origin)>,
    /// `sandbox.filesystem.denyWrite`: put back after each sandboxed command.
    pub deny_write: Vec<PathBuf>,
    /// `sandbox.network.allowAllUnixSockets` (default yes).
    pub allow_unix_sockets: Option<bool>,
    /// `sandbox.network.allowTcpPorts`: TCP connect to these ports only.
    pub allow_tcp_ports: Vec<u16>,
    /// `sandbox.network.allowedDomains`: reachable through tern's proxy.
    pub allowed_domains: Vec<String>,
    /// `sandbox.network.allowUnixSockets`: outside sockets allowed.
    pub allow_unix_socket_paths: Vec<PathBuf>,
    /// `sandbox.keepCapabilities`: capabilities the command keeps.
    pub keep_capabilities: Vec<String>,
    /// `sandbox.namespaces` (default true).
    pub namespaces: Option<bool>,
}

/// `webSearch`: the provider's server-side web search.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WebSearchSettings {
    /// Offered or not; unset, it is offered on Anthropic's own API only
    /// (a gateway or local server may refuse the tool's definition).
    pub enabled: Option<bool>,
    /// `maxUses`: searches per request.
    pub max_uses: Option<u32>,
    /// `allowedDomains`: results only from these (trusted layers only:
    /// a repository may narrow the search, not widen it).
    pub allowed_domains: Vec<String>,
    /// `blockedDomains`: never results from these (any layer).
    pub blocked_domains: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Settings {
    pub rules: Vec<RuleText>,
    pub default_mode: Option<(String, Origin)>,
    pub additional_directories: Vec<PathBuf>,
    pub disable_bypass: Option<Origin>,
    pub env: Vec<(String, String)>,
    pub model: Option<String>,
    /// `contextWindow`: the model's window in tokens.
    pub context_window: Option<u64>,
    /// `provider`: `anthropic` or `openai` (the wire format).
    pub provider: Option<String>,
    /// `baseUrl`: the API endpoint.
    pub base_url: Option<String>,
    /// `apiKeyEnv`: the variable that holds the key.
    pub api_key_env: Option<String>,
    /// `tools`: only these built-in tools are offered.
    pub tools: Option<Vec<String>>,
    /// `coordinator`: the top level only delegates to workers.
    pub coordinator: Option<bool>,
    /// `alwaysThinkingEnabled`: think when no flag says otherwise.
    pub always_thinking: Option<bool>,
    /// `toolCallRecovery`: read tool calls a model writes as text.
    pub tool_call_recovery: Option<bool>,
    /// `repl.enabled`: offer the REPL tool (builds with the `repl` feature).
    pub repl: Option<bool>,
    /// `voice`: the recorder, the speech server and its key's variable
    /// (trusted layers only: it says where the microphone's audio goes
    /// and which program records it). Keys of higher layers win.
    pub voice: Option<Value>,
    /// `mcpServers` of each layer, with the file it came from and
    /// whether that layer is one a repository cannot write.
    pub mcp_servers: Vec<(String, Value, bool)>,
    pub hooks: Vec<HookEntry>,
    pub sandbox: SandboxSettings,
    pub web_search: WebSearchSettings,
    /// `scrubEnv`: more variables kept from children (any layer).
    pub scrub_env: Vec<String>,
    /// `passEnv`: credentials children may see after all (trusted layers only).
    pub pass_env: Vec<String>,
    /// Which project `.mcp.json` servers may start.
    pub mcp_approval: McpApproval,
    /// `allowedMemoryImports`: folders and files outside the repository
    /// that memory files may `@import` (trusted layers only).
    pub memory_imports: Vec<PathBuf>,
    /// Problems found in files that were skipped or partly used.
    pub warnings: Vec<String>,
    /// The files that were read and used, lowest precedence first.
    pub files: Vec<String>,
    /// The files that exist but were skipped, each with its problem.
    pub broken: Vec<String>,
}

/// Claude Code's approval of project `.mcp.json` servers. Enabling is read
/// only from layers a repository cannot write (user, `--settings`,
/// managed policy); disabling from any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpApproval {
    /// `enableAllProjectMcpServers`.
    pub all: bool,
    /// `enabledMcpjsonServers`.
    pub enabled: Vec<String>,
    /// `disabledMcpjsonServers`.
    pub disabled: Vec<String>,
}

impl McpApproval {
    /// May the project server `name` start?
    #[cfg(feature = "mcp")]
    pub fn allows(&self, name: &str) -> bool {
        !self.disabled.iter().any(|n| n == name)
            && (self.all || self.enabled.iter().any(|n| n == name))
    }
}

impl Source {
    /// Layers a repository cannot write: settings that widen what tern
    /// trusts (credentials for children, project MCP servers, imports
    /// from outside) are read only from these.
    pub fn is_trusted(self) -> bool {
        matches!(self, Source::User | Source::Cli | Source::Managed)
    }
}

/// Where to look; tests point these anywhere.
pub struct Locations {
    pub managed: PathBuf,
    pub user_dirs: Vec<PathBuf>,
    pub project: PathBuf,
    /// `--settings`: a file path or inline JSON.
    pub cli: Option<String>,
    /// `--setting-sources`: which of user, project, local to read (None: all).
    pub sources: Option<Vec<String>>,
    /// What `~/` in a settings path means.
    pub home: Option<PathBuf>,
    /// Read the project's `.mcp.json` (not with `--strict-mcp-config`).
    pub mcp_json: bool,
}

impl Locations {
    pub fn standard(env: &dyn Fn(&str) -> Option<String>, project: &Path) -> Locations {
        let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let managed = var("TERN_MANAGED_SETTINGS")
            .unwrap_or_else(|| PathBuf::from("/etc/tern/managed-settings.json"));
        let mut user_dirs = Vec::new();
        if let Some(home) = var("HOME") {
            user_dirs.push(home.join(".claude"));
        }
        match (var("XDG_CONFIG_HOME"), var("HOME")) {
            (Some(x), _) => user_dirs.push(x.join("tern")),
            (None, Some(home)) => user_dirs.push(home.join(".config/tern")),
            (None, None) => {}
        }
        Locations {
            managed,
            user_dirs,
            project: project.to_path_buf(),
            cli: None,
            sources: None,
            home: var("HOME"),
            mcp_json: true,
        }
    }
}

const KNOWN_KEYS: &[&str] = &[
    "$schema",
    "contextWindow",
    "coordinator",
    "repl",
    "mcpServers",
    "provider",
    "baseUrl",
    "apiKeyEnv",
    "tools",
    "permissions",
    "env",
    "model",
    "hooks",
    "sandbox",
    "apiKeyHelper",
    "cleanupPeriodDays",
    "includeCoAuthoredBy",
    "statusLine",
    "outputStyle",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "provider",
    "baseUrl",
    "apiKeyEnv",
    "fallbackModel",
    "scrubEnv",
    "passEnv",
    "allowedMemoryImports",
    "theme",
    "spinnerTipsEnabled",
    "alwaysThinkingEnabled",
    "toolCallRecovery",
    "webSearch",
    "voice",
    "trustedDirectories",
    "plugins",
];
const PERMISSION_KEYS: &[&str] = &[
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "additionalDirectories",
    "disableBypassPermissionsMode",
];

fn web_search_layer(
    v: &Value,
    trusted: bool,
    file: &str,
    out: &mut WebSearchSettings,
    warnings: &mut Vec<String>,
    gate: &mut Gate,
) {
    let domains = |key: &str| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|d| d.trim().to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .collect()
    };
    if let Some(e) = v.get("enabled").and_then(Value::as_bool) {
        out.enabled = Some(e);
    }
    if let Some(n) = v.get("maxUses") {
        match n.as_i64().filter(|n| (1..=100).contains(n)) {
            Some(n) => out.max_uses = Some(n as u32),
            None => warnings.push(format!(
                "{file}: webSearch.maxUses must be a number from 1 to 100; ignored"
            )),
        }
    }
    let allowed = domains("allowedDomains");
    if !allowed.is_empty() && !trusted {
        gate.user_only("webSearch.allowedDomains".into(), file);
    } else {
        out.allowed_domains.extend(allowed);
    }
    out.blocked_domains.extend(domains("blockedDomains"));
}

/// Every layer read and merged, the project's items admitted by `gate`.
#[cfg(test)]
pub fn load(loc: &Locations, gate: &mut Gate) -> Result<Settings, String> {
    Ok(read(loc)?.merge(gate, loc.home.as_deref()))
}

/// The settings files as read, before any is merged: the control plane
/// looks at the user's own (`trustedDirectories`) to decide how far the
/// project's are trusted, then merges.
pub struct Layers {
    /// Ascending precedence (stable, so tern's file follows Claude Code's).
    layers: Vec<Layer>,
    /// The project's `.mcp.json`: its path and its `mcpServers`.
    mcp_json: Option<(String, Value)>,
    warnings: Vec<String>,
    broken: Vec<String>,
}

/// Reads every layer `loc` names; Err only for an unusable managed policy
/// or `--settings`.
pub fn read(loc: &Locations) -> Result<Layers, String> {
    let mut layers: Vec<(Origin, Value, String)> = Vec::new();
    let mut warnings = Vec::new();
    let mut broken = Vec::new();
    let wanted = |s: Source| match (&loc.sources, s.filter_name()) {
        (Some(list), Some(name)) => list.iter().any(|n| n == name),
        _ => true,
    };
    // In the home folder, the project's `.claude/settings.json` is the
    // user's own file: read once, as the user's.
    let user_files: Vec<PathBuf> = loc
        .user_dirs
        .iter()
        .filter_map(|d| std::fs::canonicalize(d.join("settings.json")).ok())
        .collect();

    let mut add = |source: Source, path: PathBuf, base: PathBuf, warnings: &mut Vec<String>| {
        if !wanted(source) {
            return Ok(());
        }
        if matches!(source, Source::Project | Source::Local)
            && std::fs::canonicalize(&path).is_ok_and(|p| user_files.contains(&p))
        {
            return Ok(());
        }
        let before = warnings.len();
        if let Some(layer) = read_layer(source, &path, base, warnings)? {
            layers.push(layer);
        }
        broken.extend(warnings[before..].iter().cloned());
        Ok::<(), String>(())
    };
    for dir in &loc.user_dirs {
        add(
            Source::User,
            dir.join("settings.json"),
            dir.clone(),
            &mut warnings,
        )?;
    }
    for (source, name) in [
        (Source::Project, "settings.json"),
        (Source::Local, "settings.local.json"),
    ] {
        for dir in [".claude", ".tern"] {
            let path = loc.project.join(dir).join(name);
            add(source, path, loc.project.clone(), &mut warnings)?;
        }
    }
    let mut inline = None;
    if let Some(cli) = &loc.cli {
        if cli.trim_start().starts_with('{') {
            match json::parse(cli) {
                Ok(v @ Value::Object(_)) => {
                    inline = Some((
                        Origin {
                            source: Source::Cli,
                            file: "--settings".into(),
                            base: loc.project.clone(),
                        },
                        v,
                        cli.clone(),
                    ))
                }
                _ => return Err("--settings is neither a readable file nor a JSON object".into()),
            }
        } else {
            let path = PathBuf::from(cli);
            if !path.exists() {
                return Err(format!("--settings file {cli} does not exist"));
            }
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            add(Source::Cli, path, base, &mut warnings)?;
        }
    }
    add(
        Source::Managed,
        loc.managed.clone(),
        PathBuf::from("/"),
        &mut warnings,
    )?;
    layers.extend(inline);
    layers.sort_by_key(|(o, _, _)| o.source);
    let mcp_json = if loc.mcp_json {
        read_mcp_json(&loc.project, &mut warnings)
    } else {
        None
    };
    Ok(Layers {
        layers,
        mcp_json,
        warnings,
        broken,
    })
}

/// The project's `.mcp.json` servers: they are the repository's, and go
/// through the same gate as its settings.
fn read_mcp_json(project: &Path, warnings: &mut Vec<String>) -> Option<(String, Value)> {
    let path = project.join(".mcp.json");
    let text = std::fs::read_to_string(&path).ok()?;
    match json::parse(&text) {
        Ok(v) => Some((
            ".mcp.json".to_string(),
            v.get("mcpServers").cloned().unwrap_or(Value::Null),
        )),
        Err(e) => {
            warnings.push(format!("{}: {e}; no servers read from it", path.display()));
            None
        }
    }
}

impl Layers {
    /// `trustedDirectories` from the layers the user writes (user,
    /// `--settings`, managed policy), resolved against each file's folder.
    pub fn trusted_directories(&self, home: Option<&Path>) -> Vec<PathBuf> {
        self.layers
            .iter()
            .filter(|(o, _, _)| o.source.is_trusted())
            .flat_map(|(o, v, _)| {
                v.get("trustedDirectories")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|p| expand_path(p, &o.base, home))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The plugin folders each layer's `plugins` lists, resolved against
    /// the file's folder, with who listed them.
    pub(crate) fn plugin_requests(&self, home: Option<&Path>) -> Vec<super::plugins::Request> {
        self.layers
            .iter()
            .flat_map(|(o, v, _)| {
                v.get("plugins")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|p| super::plugins::Request {
                        path: expand_path(p, &o.base, home),
                        from: o.file.clone(),
                        source: o.source,
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// A plugin's hooks and MCP servers, merged after every file as one
    /// more layer of the plugin's standing (`Plugin::origin`).
    pub(crate) fn add_plugin(&mut self, plugin: &super::plugins::Plugin) {
        if plugin.layer.is_empty() {
            return;
        }
        let value = Value::Object(plugin.layer.clone());
        let text = value.to_json();
        self.layers.push((plugin.origin(), value, text));
    }

    /// One view of every layer, lowest precedence first; what a project
    /// layer would add goes through `gate`.
    pub fn merge(self, gate: &mut Gate, home: Option<&Path>) -> Settings {
        let mut warnings = self.warnings;
        let mut out = Settings::default();
        if let Some((file, servers)) = &self.mcp_json {
            merge::project_servers(&mut out, file, servers, gate);
        }
        for (origin, value, text) in &self.layers {
            merge_layer(&mut out, origin, value, text, home, &mut warnings, gate);
        }
        out.warnings = warnings;
        out.broken = self.broken;
        out.files = self.layers.iter().map(|(o, _, _)| o.file.clone()).collect();
        out
    }
}

type Layer = (Origin, Value, String);

/// Reads one settings file: Ok(None) when it does not exist; a warning and
/// Ok(None) when it is broken; Err only for a broken managed policy.
fn read_layer(
    source: Source,
    path: &Path,
    base: PathBuf,
    warnings: &mut Vec<String>,
) -> Result<Option<Layer>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let msg = format!("cannot read {}: {e}", path.display());
            if source == Source::Managed {
                return Err(msg);
            }
            warnings.push(msg);
            return Ok(None);
        }
    };
    let problem = match json::parse(&text) {
        Ok(v @ Value::Object(_)) => {
            let origin = Origin {
                source,
                file: path.display().to_string(),
                base,
            };
            return Ok(Some((origin, v, text)));
        }
        Ok(_) => format!("{}: settings must be a JSON object", path.display()),
        Err(e) => format!(
            "{}:{}: invalid JSON: {}",
            path.display(),
            line_of(&text, e.offset),
            e.message
        ),
    };
    if source == Source::Managed {
        return Err(problem);
    }
    warnings.push(format!("{problem}; file skipped"));
    Ok(None)
}

/// Where a person's "always" answers go: the project's local settings,
/// and the trust record, since the rule is the person's own (untrusted,
/// a local settings file's allow rules are not used).
#[derive(Debug, Clone)]
pub(crate) struct LocalRules {
    pub(crate) project: PathBuf,
    pub(crate) store: super::trust::store::Store,
}

impl LocalRules {
    /// Saves `rule`; the file's path, or why it could not be saved.
    pub(crate) fn save(&self, rule: &str) -> Result<PathBuf, String> {
        let path = add_local_allow(&self.project, rule)?;
        let dir = super::trust::resolved(&self.project).unwrap_or_else(|| self.project.clone());
        let item = super::trust::allow_item(rule, &path.display().to_string());
        self.store
            .add(&dir, &item)
            .map_err(|e| format!("saved to {}, but {e}", path.display()))?;
        Ok(path)
    }
}

/// Adds an allow rule to the project's `.tern/settings.local.json` (the
/// "always" answer to a permission question), keeping what is there.
/// Refuses to touch a file it cannot parse.
pub fn add_local_allow(project: &Path, rule: &str) -> Result<PathBuf, String> {
    let path = project.join(".tern/settings.local.json");
    let mut root = match std::fs::read_to_string(&path) {
        Ok(text) => match json::parse(&text) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(format!(
                    "{} is not a JSON object; not changing it",
                    path.display()
                ));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(json::Map::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let Some(top) = root.as_object_mut() else {
        return Err(format!("{} is not a JSON object", path.display()));
    };
    if top.get("permissions").and_then(Value::as_object).is_none() {
        top.insert("permissions", Value::Object(json::Map::new()));
    }
    let Some(perms) = top.get_mut("permissions").and_then(Value::as_object_mut) else {
        return Err("permissions is not an object".into());
    };
    if perms.get("allow").and_then(Value::as_array).is_none() {
        perms.insert("allow", Value::Array(Vec::new()));
    }
    if let Some(Value::Array(allow)) = perms.get_mut("allow")
        && !allow.iter().any(|r| r.as_str() == Some(rule))
    {
        allow.push(Value::from(rule));
    }
    let dir = project.join(".tern");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".settings.local.json.{}", std::process::id()));
    std::fs::write(&tmp, root.to_json() + "\n")
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// `~/x` (with `home`) and relative paths, resolved.
pub fn expand_path(p: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    if let Some(rest) = p.strip_prefix("~/")
        && let Some(home) = home
    {
        return home.join(rest);
    }
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn line_of_key(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    text.find(&quoted).map_or(1, |at| line_of(text, at))
}

mod merge;
#[cfg(test)]
mod tests;

use merge::merge_layer;
