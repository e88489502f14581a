//! One settings layer merged into the whole, key by key: what each key
//! means, how it combines with the layers before it, what is warned, and
//! — for a project's layers — what must first pass the trust [`Gate`].
//!
//! Three kinds of key, by what a repository may do with them:
//! - narrowing (deny and ask rules, a stricter mode, `denyRead`,
//!   `scrubEnv`…): taken from every layer;
//! - widening (allow rules, a looser mode, directories, hooks, MCP
//!   servers, tools, the REPL): from a project's layers only as far as
//!   the gate admits them;
//! - the user's alone (the environment, credentials for children, where
//!   the key goes, and anything that loosens the sandbox): never from a
//!   project's layers, trusted or not.

use std::path::{Path, PathBuf};

use super::{
    Behavior, KNOWN_KEYS, Origin, PERMISSION_KEYS, RuleText, Settings, expand_path, line_of_key,
    web_search_layer,
};
use crate::config::trust::{Gate, Kind};
use crate::json::Value;
use crate::policy::Mode;

/// One layer's reading context.
struct Layer<'a> {
    origin: &'a Origin,
    v: &'a Value,
    text: &'a str,
    home: Option<&'a Path>,
    /// A layer the user writes (user, `--settings`, managed policy).
    users: bool,
}

impl Layer<'_> {
    fn warn(&self, warnings: &mut Vec<String>, key: &str, what: &str) {
        warnings.push(format!(
            "{}:{}: {what} \"{key}\"",
            self.origin.file,
            line_of_key(self.text, key)
        ));
    }

    fn path(&self, p: &str) -> PathBuf {
        expand_path(p, &self.origin.base, self.home)
    }

    /// Admits an item of a project's layer (a user's layer needs no
    /// admission).
    fn admit(&self, gate: &mut Gate, kind: Kind, what: String, parts: &[&[u8]]) -> bool {
        self.users || gate.admit(kind, what, &self.origin.file, parts)
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

pub(super) fn merge_layer(
    out: &mut Settings,
    origin: &Origin,
    v: &Value,
    text: &str,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
    gate: &mut Gate,
) {
    let l = Layer {
        origin,
        v,
        text,
        home,
        users: origin.source.is_trusted(),
    };
    if let Some(map) = v.as_object() {
        for (key, _) in map.iter() {
            if !KNOWN_KEYS.contains(&key) {
                l.warn(warnings, key, "unknown setting");
            }
        }
    }
    if let Some(p) = v.get("permissions") {
        permissions(out, &l, p, warnings, gate);
    }
    users_alone(out, &l, warnings, gate);
    if let Some(m) = v.str_field("model") {
        out.model = Some(m.to_string());
    }
    out.scrub_env.extend(strings(v.get("scrubEnv")));
    out.mcp_approval
        .disabled
        .extend(strings(v.get("disabledMcpjsonServers")));
    if let Some(n) = v.get("contextWindow") {
        match n.as_i64().filter(|n| *n >= 512) {
            Some(n) => out.context_window = Some(n as u64),
            None => l.warn(
                warnings,
                "contextWindow",
                "not a token count (at least 512) in",
            ),
        }
    }
    if let Some(servers) = v.get("mcpServers").filter(|s| s.as_object().is_some()) {
        if l.users {
            out.mcp_servers
                .push((origin.file.clone(), servers.clone(), true));
        } else {
            project_servers(out, &origin.file, servers, gate);
        }
    }
    if let Some(c) = v.get("coordinator").and_then(Value::as_bool) {
        out.coordinator = Some(c);
    }
    if let Some(t) = v.get("alwaysThinkingEnabled").and_then(Value::as_bool) {
        out.always_thinking = Some(t);
    }
    if let Some(r) = v.get("toolCallRecovery").and_then(Value::as_bool) {
        out.tool_call_recovery = Some(r);
    }
    if let Some(r) = v
        .get("repl")
        .and_then(|r| r.get("enabled"))
        .and_then(Value::as_bool)
        && (!r || l.admit(gate, Kind::Repl, "repl.enabled=true".into(), &[b"on"]))
    {
        out.repl = Some(r);
    }
    if let Some(ws) = v.get("webSearch") {
        web_search_layer(
            ws,
            l.users,
            &origin.file,
            &mut out.web_search,
            warnings,
            gate,
        );
    }
    if let Some(list) = v.get("tools").and_then(Value::as_array) {
        tools(out, &l, list, gate);
    }
    if let Some(sb) = v.get("sandbox") {
        sandbox(out, &l, sb, warnings, gate);
    }
    if let Some(hooks) = v.get("hooks").and_then(Value::as_object) {
        for (event, groups) in hooks.iter() {
            for group in groups.as_array().into_iter().flatten() {
                hook_group(out, &l, event, group, warnings, gate);
            }
        }
    }
}

fn permissions(
    out: &mut Settings,
    l: &Layer<'_>,
    p: &Value,
    warnings: &mut Vec<String>,
    gate: &mut Gate,
) {
    if let Some(map) = p.as_object() {
        for (key, _) in map.iter() {
            if !PERMISSION_KEYS.contains(&key) {
                l.warn(warnings, key, "unknown permissions setting");
            }
        }
    }
    for (key, behavior) in [
        ("allow", Behavior::Allow),
        ("ask", Behavior::Ask),
        ("deny", Behavior::Deny),
    ] {
        for rule in p.get(key).and_then(Value::as_array).into_iter().flatten() {
            let Some(text) = rule.as_str() else {
                l.warn(warnings, key, "non-string rule in");
                continue;
            };
            let exists = out
                .rules
                .iter()
                .any(|r| r.behavior == behavior && r.text == text);
            // Deny and ask only narrow; an allow is the project's to add
            // only as far as it is trusted.
            if exists
                || (behavior == Behavior::Allow
                    && !l.admit(
                        gate,
                        Kind::Allow,
                        format!("allow {text}"),
                        &[text.as_bytes()],
                    ))
            {
                continue;
            }
            out.rules.push(RuleText {
                behavior,
                text: text.to_string(),
                origin: l.origin.clone(),
            });
        }
    }
    if let Some(text) = p.str_field("defaultMode") {
        default_mode(out, l, text, warnings, gate);
    }
    for dir in strings(p.get("additionalDirectories")) {
        let path = l.path(&dir);
        let what = format!("additional directory {}", path.display());
        if !out.additional_directories.contains(&path)
            && l.admit(
                gate,
                Kind::Directory,
                what,
                &[path.as_os_str().as_encoded_bytes()],
            )
        {
            out.additional_directories.push(path);
        }
    }
    if p.str_field("disableBypassPermissionsMode") == Some("disable")
        && out.disable_bypass.is_none()
    {
        out.disable_bypass = Some(l.origin.clone());
    }
}

/// A layer's `defaultMode`: a project's applies when it restricts at
/// least as much as what the layers before it say, else only if admitted.
fn default_mode(
    out: &mut Settings,
    l: &Layer<'_>,
    text: &str,
    warnings: &mut Vec<String>,
    gate: &mut Gate,
) {
    let set = |out: &mut Settings| out.default_mode = Some((text.to_string(), l.origin.clone()));
    if l.users {
        return set(out);
    }
    let Some(wanted) = Mode::parse(text) else {
        // Unknown text would fall back to default, which may be looser
        // than what the user set: not taken from a project.
        l.warn(warnings, "defaultMode", "unknown mode; ignored:");
        return;
    };
    let current = out
        .default_mode
        .as_ref()
        .and_then(|(t, _)| Mode::parse(t))
        .unwrap_or(Mode::Default);
    if current.narrower(Some(wanted)) == wanted
        || l.admit(
            gate,
            Kind::Mode,
            format!("defaultMode {text}"),
            &[text.as_bytes()],
        )
    {
        set(out);
    }
}

/// Keys only the user's own layers may set: the environment of every
/// command, credentials for children, where the key goes, project MCP
/// approval, memory imports from outside, the microphone. A project's
/// are named and ignored, trusted or not.
fn users_alone(out: &mut Settings, l: &Layer<'_>, warnings: &mut Vec<String>, gate: &mut Gate) {
    let v = l.v;
    let file = &l.origin.file;
    if !l.users {
        if let Some(env) = v.get("env").and_then(Value::as_object) {
            let names: Vec<&str> = env.iter().map(|(k, _)| k).collect();
            gate.user_only(format!("env ({})", names.join(", ")), file);
        }
        for key in [
            "passEnv",
            "enabledMcpjsonServers",
            "enableAllProjectMcpServers",
            "allowedMemoryImports",
            "provider",
            "baseUrl",
            "apiKeyEnv",
            "voice",
            "trustedDirectories",
        ] {
            if v.get(key).is_some() {
                gate.user_only(format!("\"{key}\""), file);
            }
        }
        return;
    }
    if let Some(env) = v.get("env").and_then(Value::as_object) {
        for (k, val) in env.iter() {
            if let Some(s) = val.as_str() {
                out.env.retain(|(name, _)| name != k);
                out.env.push((k.to_string(), s.to_string()));
            }
        }
    }
    out.pass_env.extend(strings(v.get("passEnv")));
    out.mcp_approval
        .enabled
        .extend(strings(v.get("enabledMcpjsonServers")));
    if let Some(all) = v.get("enableAllProjectMcpServers").and_then(Value::as_bool) {
        out.mcp_approval.all = all;
    }
    out.memory_imports.extend(
        strings(v.get("allowedMemoryImports"))
            .iter()
            .map(|p| l.path(p)),
    );
    for (key, slot) in [
        ("provider", &mut out.provider),
        ("baseUrl", &mut out.base_url),
        ("apiKeyEnv", &mut out.api_key_env),
    ] {
        if let Some(text) = v.str_field(key) {
            *slot = Some(text.to_string());
        }
    }
    if let Some(voice) = v.get("voice") {
        match (voice.as_object(), out.voice.as_mut()) {
            (None, _) => l.warn(warnings, "voice", "not an object in"),
            (Some(_), None) => out.voice = Some(voice.clone()),
            (Some(new), Some(Value::Object(old))) => {
                for (k, val) in new.iter() {
                    old.insert(k.to_string(), val.clone());
                }
            }
            (Some(_), Some(_)) => out.voice = Some(voice.clone()),
        }
    }
}

/// A project's MCP servers (`.mcp.json`, its settings' `mcpServers`):
/// each one a program the repository names, admitted one by one.
pub(super) fn project_servers(out: &mut Settings, file: &str, servers: &Value, gate: &mut Gate) {
    let Some(map) = servers.as_object() else {
        return;
    };
    let mut kept = crate::json::Map::new();
    for (name, entry) in map.iter() {
        let what = format!("MCP server {name}: {}", server_summary(entry));
        let shape = entry.to_json();
        if gate.admit(Kind::Mcp, what, file, &[name.as_bytes(), shape.as_bytes()]) {
            kept.insert(name, entry.clone());
        }
    }
    if !kept.is_empty() {
        out.mcp_servers
            .push((file.to_string(), Value::Object(kept), false));
    }
}

/// What a server entry runs or reaches, for a person to judge.
fn server_summary(entry: &Value) -> String {
    if let Some(cmd) = entry.str_field("command") {
        let args = strings(entry.get("args"));
        return std::iter::once(cmd.to_string())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ");
    }
    entry.str_field("url").unwrap_or("(no command)").to_string()
}

/// `tools`: only these built-in tools. A project's list narrows what the
/// layers before it allow; naming more than they do needs admission.
fn tools(out: &mut Settings, l: &Layer<'_>, list: &[Value], gate: &mut Gate) {
    let named: Vec<String> = list
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let extra: Vec<&String> = match &out.tools {
        Some(current) => named.iter().filter(|t| !current.contains(t)).collect(),
        None => Vec::new(),
    };
    let widen = !extra.is_empty()
        && l.admit(
            gate,
            Kind::Tools,
            format!(
                "tools adds {}",
                extra
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &[named.join("\0").as_bytes()],
        );
    out.tools = Some(match out.tools.take() {
        Some(current) if !extra.is_empty() && !widen => {
            named.into_iter().filter(|t| current.contains(t)).collect()
        }
        _ => named,
    });
}

/// The `sandbox` keys. Whatever loosens it — turning it off, write,
/// network or socket exceptions, excluded commands, kept capabilities,
/// auto-allowing sandboxed commands — is the user's alone; a project's
/// layer may only tighten it.
fn sandbox(
    out: &mut Settings,
    l: &Layer<'_>,
    sb: &Value,
    warnings: &mut Vec<String>,
    gate: &mut Gate,
) {
    let file = &l.origin.file;
    let sandbox = &mut out.sandbox;
    // A flag is taken when the layer is the user's, or when its value is
    // the tighter one.
    let mut flag = |slot: &mut Option<bool>, key: &str, value: Option<bool>, tight: bool| {
        let Some(value) = value else { return };
        if l.users || value == tight {
            *slot = Some(value);
        } else {
            gate.user_only(format!("sandbox.{key}={value}"), file);
        }
    };
    let get = |v: &Value, key: &str| v.get(key).and_then(Value::as_bool);
    flag(&mut sandbox.enabled, "enabled", get(sb, "enabled"), true);
    if l.users && get(sb, "enabled") == Some(true) {
        sandbox.enabled_by_user = true;
    }
    if l.users && get(sb, "enabled") == Some(false) {
        sandbox.enabled_by_user = false;
    }
    flag(
        &mut sandbox.fail_if_unavailable,
        "failIfUnavailable",
        get(sb, "failIfUnavailable"),
        true,
    );
    flag(
        &mut sandbox.auto_allow_bash,
        "autoAllowBashIfSandboxed",
        get(sb, "autoAllowBashIfSandboxed"),
        false,
    );
    flag(
        &mut sandbox.allow_unsandboxed_commands,
        "allowUnsandboxedCommands",
        get(sb, "allowUnsandboxedCommands"),
        false,
    );
    flag(
        &mut sandbox.namespaces,
        "namespaces",
        get(sb, "namespaces"),
        true,
    );
    let fs = sb.get("filesystem");
    let net = sb.get("network");
    if let Some(fs) = fs {
        flag(
            &mut sandbox.allow_tmp,
            "filesystem.allowTmp",
            get(fs, "allowTmp"),
            false,
        );
        let paths = |key: &str| -> Vec<PathBuf> {
            strings(fs.get(key)).iter().map(|p| l.path(p)).collect()
        };
        sandbox
            .deny_read
            .extend(paths("denyRead").into_iter().map(|p| (p, l.origin.clone())));
        sandbox.deny_write.extend(paths("denyWrite"));
    }
    if let Some(net) = net {
        flag(
            &mut sandbox.network,
            "network.enabled",
            get(net, "enabled"),
            false,
        );
        flag(
            &mut sandbox.allow_unix_sockets,
            "network.allowAllUnixSockets",
            get(net, "allowAllUnixSockets"),
            false,
        );
    }
    // Lists that only ever widen.
    let lists: [(&str, Option<&Value>); 6] = [
        ("keepCapabilities", sb.get("keepCapabilities")),
        ("excludedCommands", sb.get("excludedCommands")),
        (
            "filesystem.allowWrite",
            fs.and_then(|f| f.get("allowWrite")),
        ),
        (
            "network.allowedDomains",
            net.and_then(|n| n.get("allowedDomains")),
        ),
        (
            "network.allowUnixSockets",
            net.and_then(|n| n.get("allowUnixSockets")),
        ),
        (
            "network.allowTcpPorts",
            net.and_then(|n| n.get("allowTcpPorts")),
        ),
    ];
    for (key, value) in lists {
        let Some(list) = value.and_then(Value::as_array).filter(|a| !a.is_empty()) else {
            continue;
        };
        if !l.users {
            let shown: Vec<String> = list.iter().map(Value::to_json).collect();
            gate.user_only(format!("sandbox.{key} [{}]", shown.join(", ")), file);
            continue;
        }
        let texts = strings(Some(&Value::Array(list.clone())));
        match key {
            "keepCapabilities" => sandbox.keep_capabilities.extend(texts),
            "excludedCommands" => sandbox.excluded_commands.extend(
                texts
                    .iter()
                    .map(|c| c.trim_end_matches(":*").trim_end_matches(" *").to_string()),
            ),
            "filesystem.allowWrite" => sandbox.allow_write.extend(texts.iter().map(|p| l.path(p))),
            "network.allowedDomains" => sandbox.allowed_domains.extend(texts),
            "network.allowUnixSockets" => sandbox
                .allow_unix_socket_paths
                .extend(texts.iter().map(|p| l.path(p))),
            _ => {
                for port in list {
                    match port.as_i64().and_then(|p| u16::try_from(p).ok()) {
                        Some(p) if p > 0 => sandbox.allow_tcp_ports.push(p),
                        _ => l.warn(
                            warnings,
                            "allowTcpPorts",
                            &format!("{} is not a port in", port.to_json()),
                        ),
                    }
                }
            }
        }
    }
}

/// One `hooks` group: its command hooks, each a program tern will run
/// outside any sandbox. A project's is admitted with its command and the
/// content of every file the command names, so editing the script is a
/// change too.
fn hook_group(
    out: &mut Settings,
    l: &Layer<'_>,
    event: &str,
    group: &Value,
    warnings: &mut Vec<String>,
    gate: &mut Gate,
) {
    let matcher = group.str_field("matcher").unwrap_or("").to_string();
    for hook in group
        .get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some("command"), Some(command)) = (hook.str_field("type"), hook.str_field("command"))
        else {
            l.warn(
                warnings,
                event,
                "unsupported hook (only type \"command\") for",
            );
            continue;
        };
        let timeout_secs = hook
            .get("timeout")
            .and_then(Value::as_i64)
            .filter(|t| *t > 0)
            .map_or(600, |t| t as u64);
        if !l.users {
            let files: Vec<Vec<u8>> = crate::config::sandbox::hook_files(command, &l.origin.base)
                .iter()
                .map(|f| crate::config::trust::file_part(f))
                .collect();
            let mut parts: Vec<&[u8]> =
                vec![event.as_bytes(), matcher.as_bytes(), command.as_bytes()];
            parts.extend(files.iter().map(Vec::as_slice));
            let on = if matcher.is_empty() {
                event.to_string()
            } else {
                format!("{event}[{matcher}]")
            };
            if !gate.admit(
                Kind::Hook,
                format!("hook {on}: {command}"),
                &l.origin.file,
                &parts,
            ) {
                continue;
            }
        }
        out.hooks.push(super::HookEntry {
            event: event.to_string(),
            matcher: matcher.clone(),
            command: command.to_string(),
            timeout_secs,
            origin: l.origin.clone(),
        });
    }
}
