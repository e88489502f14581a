//! One settings layer merged into the whole, key by key: what each key
//! means, how it combines with the layers before it, and what is warned.

use super::*;

pub(super) fn merge_layer(
    out: &mut Settings,
    origin: &Origin,
    v: &Value,
    text: &str,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
) {
    let warn = |warnings: &mut Vec<String>, key: &str, what: &str| {
        warnings.push(format!(
            "{}:{}: {what} \"{key}\"",
            origin.file,
            line_of_key(text, key)
        ));
    };
    if let Some(map) = v.as_object() {
        for (key, _) in map.iter() {
            if !KNOWN_KEYS.contains(&key) {
                warn(warnings, key, "unknown setting");
            }
        }
    }
    if let Some(p) = v.get("permissions") {
        if let Some(map) = p.as_object() {
            for (key, _) in map.iter() {
                if !PERMISSION_KEYS.contains(&key) {
                    warn(warnings, key, "unknown permissions setting");
                }
            }
        }
        for (key, behavior) in [
            ("allow", Behavior::Allow),
            ("ask", Behavior::Ask),
            ("deny", Behavior::Deny),
        ] {
            for rule in p.get(key).and_then(Value::as_array).into_iter().flatten() {
                match rule.as_str() {
                    Some(text) => {
                        let exists = out
                            .rules
                            .iter()
                            .any(|r| r.behavior == behavior && r.text == text);
                        if !exists {
                            out.rules.push(RuleText {
                                behavior,
                                text: text.to_string(),
                                origin: origin.clone(),
                            });
                        }
                    }
                    None => warn(warnings, key, "non-string rule in"),
                }
            }
        }
        if let Some(mode) = p.str_field("defaultMode") {
            out.default_mode = Some((mode.to_string(), origin.clone()));
        }
        for dir in p
            .get("additionalDirectories")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let path = expand_path(dir, &origin.base, home);
            if !out.additional_directories.contains(&path) {
                out.additional_directories.push(path);
            }
        }
        if p.str_field("disableBypassPermissionsMode") == Some("disable")
            && out.disable_bypass.is_none()
        {
            out.disable_bypass = Some(origin.clone());
        }
    }
    // A repository's settings (project, local) are the repository's
    // words: they may not say where the API key goes (provider, baseUrl,
    // apiKeyEnv) nor what every command runs with (env: PATH, LD_PRELOAD,
    // GCONV_PATH, a proxy…), since a cloned repository would otherwise
    // read the key or run its own programs in place of approved ones.
    let trusted = origin.source.is_trusted();
    if let Some(env) = v.get("env").and_then(Value::as_object) {
        if !trusted {
            let names: Vec<&str> = env.iter().map(|(k, _)| k).collect();
            warnings.push(format!(
                "{}: env ({}) ignored: a repository's settings may not set the environment of tern's commands; set it in your user settings or your shell",
                origin.file,
                names.join(", ")
            ));
        }
        for (k, val) in env.iter().filter(|_| trusted) {
            if let Some(s) = val.as_str() {
                out.env.retain(|(name, _)| name != k);
                out.env.push((k.to_string(), s.to_string()));
            }
        }
    }
    if let Some(m) = v.str_field("model") {
        out.model = Some(m.to_string());
    }
    let strings = |key: &str| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let untrusted = |warnings: &mut Vec<String>, key: &str| {
        if v.get(key).is_some() && !trusted {
            warn(
                warnings,
                key,
                "ignored (only user settings, --settings and managed policy may set it):",
            );
        }
    };
    out.scrub_env.extend(strings("scrubEnv"));
    out.mcp_approval
        .disabled
        .extend(strings("disabledMcpjsonServers"));
    untrusted(warnings, "passEnv");
    untrusted(warnings, "enabledMcpjsonServers");
    untrusted(warnings, "enableAllProjectMcpServers");
    untrusted(warnings, "allowedMemoryImports");
    if trusted {
        out.pass_env.extend(strings("passEnv"));
        out.mcp_approval
            .enabled
            .extend(strings("enabledMcpjsonServers"));
        if let Some(all) = v.get("enableAllProjectMcpServers").and_then(Value::as_bool) {
            out.mcp_approval.all = all;
        }
        out.memory_imports.extend(
            strings("allowedMemoryImports")
                .iter()
                .map(|p| expand_path(p, &origin.base, home)),
        );
    }
    if let Some(n) = v.get("contextWindow") {
        match n.as_i64().filter(|n| *n >= 512) {
            Some(n) => out.context_window = Some(n as u64),
            None => warn(
                warnings,
                "contextWindow",
                "not a token count (at least 512) in",
            ),
        }
    }
    for key in ["provider", "baseUrl", "apiKeyEnv"] {
        untrusted(warnings, key);
    }
    for (key, slot) in [
        ("provider", &mut out.provider),
        ("baseUrl", &mut out.base_url),
        ("apiKeyEnv", &mut out.api_key_env),
    ] {
        if let Some(text) = v.str_field(key).filter(|_| trusted) {
            *slot = Some(text.to_string());
        }
    }
    if let Some(servers) = v.get("mcpServers").filter(|s| s.as_object().is_some()) {
        out.mcp_servers.push((
            origin.file.clone(),
            servers.clone(),
            origin.source.is_trusted(),
        ));
    }
    if let Some(c) = v.get("coordinator").and_then(Value::as_bool) {
        out.coordinator = Some(c);
    }
    if let Some(r) = v
        .get("repl")
        .and_then(|r| r.get("enabled"))
        .and_then(Value::as_bool)
    {
        out.repl = Some(r);
    }
    untrusted(warnings, "voice");
    if let Some(voice) = v.get("voice").filter(|_| trusted) {
        match (voice.as_object(), out.voice.as_mut()) {
            (None, _) => warn(warnings, "voice", "not an object in"),
            (Some(_), None) => out.voice = Some(voice.clone()),
            (Some(new), Some(Value::Object(old))) => {
                for (k, val) in new.iter() {
                    old.insert(k.to_string(), val.clone());
                }
            }
            (Some(_), Some(_)) => out.voice = Some(voice.clone()),
        }
    }
    if let Some(ws) = v.get("webSearch") {
        web_search_layer(ws, trusted, &origin.file, &mut out.web_search, warnings);
    }
    if let Some(list) = v.get("tools").and_then(Value::as_array) {
        out.tools = Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        );
    }
    if let Some(sb) = v.get("sandbox") {
        let flag = |key: &str| sb.get(key).and_then(Value::as_bool);
        let sandbox = &mut out.sandbox;
        sandbox.enabled = flag("enabled").or(sandbox.enabled);
        sandbox.fail_if_unavailable = flag("failIfUnavailable").or(sandbox.fail_if_unavailable);
        sandbox.auto_allow_bash = flag("autoAllowBashIfSandboxed").or(sandbox.auto_allow_bash);
        sandbox.allow_unsandboxed_commands =
            flag("allowUnsandboxedCommands").or(sandbox.allow_unsandboxed_commands);
        sandbox.namespaces = flag("namespaces").or(sandbox.namespaces);
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        sandbox
            .keep_capabilities
            .extend(strings(sb.get("keepCapabilities")));
        for c in sb
            .get("excludedCommands")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            sandbox
                .excluded_commands
                .push(c.trim_end_matches(":*").trim_end_matches(" *").to_string());
        }
        if let Some(fs) = sb.get("filesystem") {
            let paths = |key: &str| -> Vec<PathBuf> {
                fs.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|p| expand_path(p, &origin.base, home))
                    .collect()
            };
            sandbox.allow_write.extend(paths("allowWrite"));
            sandbox
                .deny_read
                .extend(paths("denyRead").into_iter().map(|p| (p, origin.clone())));
            sandbox.deny_write.extend(paths("denyWrite"));
            sandbox.allow_tmp = fs
                .get("allowTmp")
                .and_then(Value::as_bool)
                .or(sandbox.allow_tmp);
        }
        if let Some(net) = sb.get("network") {
            sandbox.network = net
                .get("enabled")
                .and_then(Value::as_bool)
                .or(sandbox.network);
            sandbox.allow_unix_sockets = net
                .get("allowAllUnixSockets")
                .and_then(Value::as_bool)
                .or(sandbox.allow_unix_sockets);
            sandbox
                .allowed_domains
                .extend(strings(net.get("allowedDomains")));
            sandbox.allow_unix_socket_paths.extend(
                strings(net.get("allowUnixSockets"))
                    .iter()
                    .map(|p| expand_path(p, &origin.base, home)),
            );
            for port in net
                .get("allowTcpPorts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match port.as_i64().and_then(|p| u16::try_from(p).ok()) {
                    Some(p) if p > 0 => sandbox.allow_tcp_ports.push(p),
                    _ => warn(
                        warnings,
                        "allowTcpPorts",
                        &format!("{} is not a port in", port.to_json()),
                    ),
                }
            }
        }
    }
    if let Some(hooks) = v.get("hooks").and_then(Value::as_object) {
        for (event, groups) in hooks.iter() {
            for group in groups.as_array().into_iter().flatten() {
                let matcher = group.str_field("matcher").unwrap_or("").to_string();
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match (hook.str_field("type"), hook.str_field("command")) {
                        (Some("command"), Some(command)) => out.hooks.push(HookEntry {
                            event: event.to_string(),
                            matcher: matcher.clone(),
                            command: command.to_string(),
                            timeout_secs: hook
                                .get("timeout")
                                .and_then(Value::as_i64)
                                .filter(|t| *t > 0)
                                .map_or(600, |t| t as u64),
                            origin: origin.clone(),
                        }),
                        _ => warn(
                            warnings,
                            event,
                            "unsupported hook (only type \"command\") for",
                        ),
                    }
                }
            }
        }
    }
}
