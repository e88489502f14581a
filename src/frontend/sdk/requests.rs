//! The control requests an SDK sends and tern's answers: `initialize`
//! (every field both SDKs send is read: honoured, listed in
//! `system/init` as not acted on, or refused with an error naming it),
//! `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`,
//! `mcp_reconnect`, `mcp_toggle`, `get_context_usage`, `stop_task` and
//! `rewind_files`. Anything else is answered with an error naming it.

use std::rc::Rc;

use super::{HookBridge, Input, Session, respond};
use crate::abort::Reason;
use crate::agent::Agent;
use crate::agent::hooks::Callback;
use crate::agent::subagent::AgentDef;
use crate::config::settings::{Behavior, Origin, Source};
use crate::json::{Map, Value};
use crate::obj;
use crate::policy::{Mode, Rule};

/// `initialize` fields that ask for behaviour tern does not have and
/// whose loss would change what the agent does: refused, by name.
const REFUSED_FIELDS: &[(&str, &str)] = &[
    (
        "settings",
        "tern reads settings from --settings, not from initialize; use settingsDelivery: 'argv'",
    ),
    (
        "managedSettings",
        "tern reads managed policy only from its managed-settings file; a policy sent here would not be enforced",
    ),
    (
        "appendSubagentSystemPrompt",
        "tern cannot add to sub-agents' system prompts",
    ),
    (
        "planModeInstructions",
        "tern has no replaceable plan-mode instructions",
    ),
    ("toolAliases", "tern has no tool aliases"),
    (
        "codeRunningMcpTools",
        "tern cannot mark MCP tools as running code",
    ),
];

/// Fields that only shape a user interface or a cache, accepted and
/// listed in `system/init` under `ignored_options`.
const NOTED_FIELDS: &[(&str, &str)] = &[
    ("title", "tern keeps no session titles"),
    ("promptSuggestions", "tern makes no prompt suggestions"),
    (
        "agentProgressSummaries",
        "sub-agent messages are relayed whole, not summarised",
    ),
    ("supportedDialogKinds", "tern opens no dialogs"),
    ("perTaskStopAffordance", "no user interface to shape"),
    ("rapidFollowupPreempt", "prompts queue in order"),
    (
        "forwardNestedSubagentToolCalls",
        "every sub-agent's messages are relayed",
    ),
    ("offersBypassSwitchBack", "no user interface to shape"),
    ("keepsBypassHeld", "no user interface to shape"),
    ("workspaceTrust", "tern has no workspace-trust dialog"),
    (
        "systemPromptSnapshot",
        "the system prompt is built once per session",
    ),
    (
        "excludeDynamicSections",
        "tern's system prompt keeps its environment section",
    ),
    (
        "sdkMcpServerConfigs",
        "SDK servers need no per-server settings in tern",
    ),
    (
        "sdkMcpServerManifests",
        "tern asks SDK servers for their tools itself",
    ),
    ("plugins", "tern has no plugins"),
    (
        "skills",
        "tern offers the skills of its skills folders; this list does not narrow them",
    ),
];

/// Fields tern reads and acts on.
const HONOURED_FIELDS: &[&str] = &[
    "subtype",
    "hooks",
    "agents",
    "sdkMcpServers",
    "mcpServers",
    "jsonSchema",
    "systemPrompt",
    "appendSystemPrompt",
    "disallowedTools",
    "allowedControlRequests",
    // Sub-agents' text is always relayed.
    "forwardSubagentText",
    // tern has no web search to isolate.
    "webSearchIsolationExemptMcpServers",
];

/// A value that was really sent (not null, not an empty list or object).
fn sent(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => o.iter().next().is_some(),
        _ => true,
    }
}

/// Answers a control request; returns what the main loop must apply.
pub(super) fn answer(session: &Session, msg: &Value) -> Vec<Input> {
    let id = msg.str_field("request_id").unwrap_or_default().to_string();
    let request = msg.get("request").cloned().unwrap_or_default();
    let subtype = request.str_field("subtype").unwrap_or_default();
    let mut inputs = Vec::new();
    if let Some(allowed) = session.allowed_requests.borrow().as_ref()
        && subtype != "initialize"
        && !allowed.iter().any(|a| a == subtype)
    {
        respond(
            &id,
            Err(format!(
                "the control request '{subtype}' is not in initialize.allowedControlRequests"
            )),
        );
        return inputs;
    }
    let result = match subtype {
        "initialize" => initialize(session, &request, &mut inputs),
        "interrupt" => {
            session.abort.trigger(Reason::Requested);
            Ok(obj! { "still_queued" => Vec::new() })
        }
        "set_permission_mode" => match request.str_field("mode").and_then(Mode::parse) {
            Some(mode) => {
                session.pipeline.policy().set_mode(mode);
                Ok(obj! {})
            }
            None => Err(format!(
                "unknown permission mode {:?}",
                request.str_field("mode").unwrap_or_default()
            )),
        },
        "set_model" => match request.str_field("model") {
            Some(m) if !m.is_empty() => {
                inputs.push(Input::Model(m.to_string()));
                Ok(obj! {})
            }
            _ => Err("set_model needs a model name".into()),
        },
        "mcp_status" => mcp_status(session),
        "mcp_reconnect" => return mcp_change(session, &id, &request, None, inputs),
        "mcp_toggle" => match request.get("enabled").and_then(Value::as_bool) {
            Some(on) => return mcp_change(session, &id, &request, Some(on), inputs),
            None => Err("mcp_toggle needs enabled: true or false".into()),
        },
        "get_context_usage" => Ok(session.context.borrow().report()),
        "stop_task" => {
            let task = request.str_field("task_id").unwrap_or_default();
            match session.pipeline.subagents() {
                Some(host) => host.stop(task).map(|()| obj! {}),
                None => Err("this session runs no sub-agents".into()),
            }
        }
        "rewind_files" => rewind(session, &request),
        // A number is a budget (0: no thinking); null goes back to the
        // session's default, which for tern is not to ask.
        "set_max_thinking_tokens" => match request.get("max_thinking_tokens") {
            Some(Value::Null) | None => {
                inputs.push(Input::Thinking(crate::model::thinking::Mode::Unset));
                Ok(obj! {})
            }
            Some(n) => match n.as_i64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => {
                    inputs.push(Input::Thinking(crate::model::thinking::Mode::of_budget(n)));
                    Ok(obj! {})
                }
                None => {
                    Err("set_max_thinking_tokens needs a whole number of tokens or null".into())
                }
            },
        },
        other => Err(format!(
            "tern does not support the control request '{other}'"
        )),
    };
    respond(&id, result);
    inputs
}

fn initialize(
    session: &Session,
    request: &Value,
    inputs: &mut Vec<Input>,
) -> Result<Value, String> {
    let fields = request.as_object().cloned().unwrap_or_default();
    // Refusals first, so nothing is half applied.
    for (name, why) in REFUSED_FIELDS {
        if fields.get(name).is_some_and(sent) {
            return Err(format!("initialize field '{name}' is not supported: {why}"));
        }
    }
    #[cfg(not(feature = "mcp"))]
    for name in ["sdkMcpServers", "mcpServers"] {
        if fields.get(name).is_some_and(sent) {
            return Err(format!(
                "initialize field '{name}' needs MCP, and this tern was built without the mcp feature"
            ));
        }
    }
    let mut response = Map::new();
    for (name, v) in fields.iter() {
        if !sent(v) || HONOURED_FIELDS.contains(&name) {
            continue;
        }
        let why = NOTED_FIELDS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("not known to tern", |(_, why)| why);
        session.ignored.borrow_mut().push(obj! {
            "option" => format!("initialize.{name}"),
            "reason" => why,
        });
    }
    if fields.get("plugins").is_some_and(sent) {
        response.insert("plugins_applied", false);
    }
    if let Some(Value::Object(manifests)) = fields.get("sdkMcpServerManifests") {
        let mut parked = Map::new();
        for (name, _) in manifests.iter() {
            parked.insert(name, "not_honoured");
        }
        response.insert("sdk_mcp_manifests_parked", Value::Object(parked));
    }
    if let Some(list) = fields
        .get("allowedControlRequests")
        .and_then(Value::as_array)
    {
        *session.allowed_requests.borrow_mut() = Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        );
    }

    register_hooks(session, fields.get("hooks"));
    add_agents(session, fields.get("agents"));

    if let Some(schema) = fields.get("jsonSchema").filter(|v| sent(v)) {
        if schema.as_object().is_none() {
            return Err("initialize field 'jsonSchema' must be a JSON schema object".into());
        }
        session.structured.set_schema(schema.clone());
    }

    let text = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            ),
            _ => None,
        }
    };
    let custom = text(fields.get("systemPrompt"));
    let append = text(fields.get("appendSystemPrompt"));
    if custom.is_some() || append.is_some() {
        inputs.push(Input::System { custom, append });
    }

    if let Some(list) = fields.get("disallowedTools").and_then(Value::as_array) {
        let origin = Origin {
            source: Source::Cli,
            file: "the SDK's initialize request".into(),
            base: session.cwd.clone(),
        };
        for t in list.iter().filter_map(Value::as_str) {
            for rule in crate::policy::split_tool_list(t) {
                session.pipeline.policy().grant(Rule::parse(
                    &rule,
                    Behavior::Deny,
                    Some(origin.clone()),
                ));
            }
        }
        response.insert("disallowed_tools_applied", true);
    }

    #[cfg(feature = "mcp")]
    if let Some(hub) = &session.hub {
        let mut configs = Vec::new();
        if let Some(names) = fields.get("sdkMcpServers").and_then(Value::as_array) {
            for name in names.iter().filter_map(Value::as_str) {
                configs.push(crate::mcp::config::ServerConfig {
                    name: name.to_string(),
                    transport: Ok(crate::mcp::config::Transport::Sdk),
                    source: "sdk".into(),
                    // The application's own servers, not the repository's.
                    from_project: false,
                    oauth: Default::default(),
                });
            }
        }
        if let Some(servers) = fields.get("mcpServers").filter(|v| sent(v)) {
            let env = |k: &str| session.env.get(k);
            let text = obj! { "mcpServers" => servers.clone() }.to_json();
            let (found, warnings) = crate::mcp::config::load(&[], &[text], true, &env, &|_| false);
            if let Some(w) = warnings.first() {
                return Err(format!("initialize field 'mcpServers': {w}"));
            }
            configs.extend(found.into_iter().map(|mut c| {
                c.source = "initialize".into();
                c
            }));
            response.insert("mcp_servers_applied", true);
        }
        hub.add(configs);
    }

    let agents: Vec<Value> = session
        .pipeline
        .subagents()
        .map(|h| {
            h.defs
                .borrow()
                .iter()
                .map(|d| obj! { "name" => d.name.as_str(), "description" => d.description.as_str(), "model" => d.model.clone() })
                .collect()
        })
        .unwrap_or_default();
    response.insert("commands", Vec::new());
    response.insert("agents", agents);
    response.insert("output_style", "default");
    response.insert("available_output_styles", vec![Value::from("default")]);
    response.insert("models", Vec::new());
    response.insert("account", obj! {});
    response.insert("hooks_applied", true);
    response.insert("claude_code_version", crate::frontend::CLAUDE_CODE_SURFACE);
    Ok(Value::Object(response))
}

fn register_hooks(session: &Session, hooks: Option<&Value>) {
    let mut callbacks = Vec::new();
    if let Some(hooks) = hooks.and_then(Value::as_object) {
        for (event, matchers) in hooks.iter() {
            for m in matchers.as_array().into_iter().flatten() {
                let matcher = m.str_field("matcher").unwrap_or("").to_string();
                let timeout_secs = m
                    .get("timeout")
                    .and_then(Value::as_f64)
                    .map_or(60, |t| t.max(1.0) as u64);
                for id in m
                    .get("hookCallbackIds")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    callbacks.push(Callback {
                        event: event.to_string(),
                        matcher: matcher.clone(),
                        id: id.to_string(),
                        timeout_secs,
                    });
                }
            }
        }
    }
    if !callbacks.is_empty() {
        session.pipeline.hooks().register(
            callbacks,
            Rc::new(HookBridge {
                control: Rc::clone(&session.control),
            }),
        );
    }
}

fn add_agents(session: &Session, agents: Option<&Value>) {
    let (Some(agents), Some(host)) = (
        agents.and_then(Value::as_object),
        session.pipeline.subagents(),
    ) else {
        return;
    };
    let mut defs = host.defs.borrow_mut();
    for (name, a) in agents.iter() {
        let list = |key: &str| -> Option<Vec<String>> {
            a.get(key).and_then(Value::as_array).map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
        };
        defs.retain(|d| d.name != name);
        defs.push(AgentDef {
            name: name.to_string(),
            description: a.str_field("description").unwrap_or_default().to_string(),
            tools: list("tools"),
            disallowed: list("disallowedTools").unwrap_or_default(),
            model: a.str_field("model").map(str::to_string),
            max_turns: a.get("maxTurns").and_then(Value::as_i64).map(|n| n as u32),
            permission_mode: a.str_field("permissionMode").and_then(Mode::parse),
            prompt: a.str_field("prompt").unwrap_or_default().to_string(),
            source: "SDK initialize".into(),
        });
    }
}

#[cfg(feature = "mcp")]
fn mcp_status(session: &Session) -> Result<Value, String> {
    let servers = session
        .hub
        .as_ref()
        .map_or(Vec::new(), |h| h.status_report());
    Ok(obj! { "mcpServers" => servers })
}

#[cfg(not(feature = "mcp"))]
fn mcp_status(_: &Session) -> Result<Value, String> {
    Ok(obj! { "mcpServers" => Vec::new() })
}

/// `mcp_reconnect` (`enabled` None) and `mcp_toggle`: answered once the
/// server has connected again (or failed), MCP_TIMEOUT at most.
#[cfg(feature = "mcp")]
fn mcp_change(
    session: &Session,
    id: &str,
    request: &Value,
    enabled: Option<bool>,
    inputs: Vec<Input>,
) -> Vec<Input> {
    let changed = (|| -> Result<std::rc::Rc<crate::mcp::Hub>, String> {
        let name = request
            .str_field("serverName")
            .ok_or("the request needs serverName")?;
        let hub = session
            .hub
            .clone()
            .ok_or("this session has no MCP servers")?;
        match enabled {
            None => hub.reconnect(name).map_err(|e| e.to_string())?,
            Some(on) => hub.toggle(name, on).map_err(|e| e.to_string())?,
        }
        Ok(hub)
    })();
    match changed {
        Err(e) => respond(id, Err(e)),
        Ok(hub) => {
            let id = id.to_string();
            let limit = hub.start_timeout();
            session
                .ex
                .spawn(async move {
                    hub.settle(limit).await;
                    respond(&id, Ok(obj! {}));
                })
                .detach();
        }
    }
    inputs
}

#[cfg(not(feature = "mcp"))]
fn mcp_change(_: &Session, id: &str, _: &Value, _: Option<bool>, inputs: Vec<Input>) -> Vec<Input> {
    respond(
        id,
        Err("this tern was built without the mcp feature".into()),
    );
    inputs
}

/// `rewind_files`: Edit and Write changes made after the user message
/// `user_message_id` are undone (`dryRun` only says what would be).
fn rewind(session: &Session, request: &Value) -> Result<Value, String> {
    use crate::session::checkpoint;
    let transcript = session.transcript.as_ref().ok_or(
        "this session keeps no transcript (--no-session-persistence), so it has no checkpoints",
    )?;
    let to = request
        .str_field("user_message_id")
        .ok_or("rewind_files needs user_message_id")?;
    let plan = checkpoint::plan(transcript, Some(to)).map_err(|e| e.to_string())?;
    let dry = request.get("dryRun").and_then(Value::as_bool) == Some(true)
        || request.get("dry_run").and_then(Value::as_bool) == Some(true);
    let files: Vec<Value> = plan
        .actions
        .iter()
        .map(|a| match a {
            checkpoint::Action::Restore { path, .. }
            | checkpoint::Action::Remove(path)
            | checkpoint::Action::Cannot(path, _) => Value::from(path.display().to_string()),
        })
        .collect();
    let report = if dry {
        checkpoint::describe(&plan)
    } else {
        checkpoint::apply(transcript, &plan)
    };
    Ok(obj! {
        "canRewind" => true,
        "filesChanged" => files,
        "report" => report.into_iter().map(Value::from).collect::<Vec<_>>(),
        "untracked" => checkpoint::untracked_note(&plan),
    })
}

/// What fills the context window, as `get_context_usage` reports it.
#[derive(Debug, Clone, Default)]
pub struct ContextView {
    pub model: String,
    pub window: u64,
    pub max_output: u64,
    pub system_tokens: u64,
    pub memory_tokens: u64,
    pub builtin_tool_tokens: u64,
    /// (tool, server, tokens)
    pub mcp_tools: Vec<(String, String, u64)>,
    /// (agent, source, tokens)
    pub agents: Vec<(String, String, u64)>,
    pub tool_call_tokens: u64,
    pub tool_result_tokens: u64,
    pub assistant_tokens: u64,
    pub user_tokens: u64,
    /// The last request's usage as the server counted it.
    pub api_usage: Option<crate::model::stream::Usage>,
}

/// A block's tokens: its JSON at four bytes a token, its images and
/// documents at what the API charges for them.
fn tokens_of(v: &Value) -> u64 {
    let media = crate::context::media::block_cost(v);
    crate::context::estimate_bytes(v.to_json().len().saturating_sub(media.bytes)) + media.tokens
}

/// Measures the agent's request as it would be sent now.
pub fn context_view(agent: &Agent<'_>, memory: Option<&str>) -> ContextView {
    let mut view = ContextView {
        model: agent.settings().model.clone(),
        window: agent.settings().context_window,
        max_output: u64::from(agent.settings().max_tokens),
        ..ContextView::default()
    };
    let memory_tokens = memory.map_or(0, |m| crate::context::estimate_bytes(m.len()));
    let system: usize = agent.settings().system.iter().map(String::len).sum();
    view.memory_tokens = memory_tokens;
    view.system_tokens = crate::context::estimate_bytes(system).saturating_sub(memory_tokens);
    for def in agent.pipeline().registry().definitions() {
        let name = def.str_field("name").unwrap_or_default().to_string();
        let tokens = tokens_of(&def);
        match name.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
            Some((server, _)) => view
                .mcp_tools
                .push((name.clone(), server.to_string(), tokens)),
            None => view.builtin_tool_tokens += tokens,
        }
    }
    if let Some(host) = agent.pipeline().subagents() {
        for d in host.defs.borrow().iter() {
            let tokens = crate::context::estimate_bytes(d.name.len() + d.description.len() + 8);
            view.agents.push((d.name.clone(), d.source.clone(), tokens));
        }
    }
    for m in agent.messages() {
        let assistant = m.str_field("role") == Some("assistant");
        let blocks = match m.get("content") {
            Some(Value::Array(b)) => b.clone(),
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        for b in &blocks {
            let t = tokens_of(b);
            match (b.str_field("type"), assistant) {
                (Some("tool_use"), _) => view.tool_call_tokens += t,
                (Some("tool_result"), _) => view.tool_result_tokens += t,
                (_, true) => view.assistant_tokens += t,
                (_, false) => view.user_tokens += t,
            }
        }
    }
    view
}

impl ContextView {
    /// Claude Code's `get_context_usage` answer: categories by name, the
    /// total against the window, and the parts behind each category.
    pub fn report(&self) -> Value {
        let mcp: u64 = self.mcp_tools.iter().map(|t| t.2).sum();
        let agents: u64 = self.agents.iter().map(|a| a.2).sum();
        let messages = self.tool_call_tokens
            + self.tool_result_tokens
            + self.assistant_tokens
            + self.user_tokens;
        let thresholds = crate::context::Thresholds::for_window(self.window, self.max_output);
        let used = [
            (
                "system_prompt",
                "System prompt",
                self.system_tokens,
                "promptBorder",
            ),
            (
                "system_tools",
                "System tools",
                self.builtin_tool_tokens,
                "inactive",
            ),
            ("mcp_tools", "MCP tools", mcp, "cyan_FOR_SUBAGENTS_ONLY"),
            ("custom_agents", "Custom agents", agents, "permission"),
            ("memory_files", "Memory files", self.memory_tokens, "claude"),
            (
                "messages",
                "Messages",
                messages,
                "purple_FOR_SUBAGENTS_ONLY",
            ),
        ];
        let total: u64 = used.iter().map(|u| u.2).sum();
        let buffer = self.window.saturating_sub(thresholds.compact);
        let free = self.window.saturating_sub(total).saturating_sub(buffer);
        let mut categories: Vec<Value> = used
            .iter()
            .filter(|u| u.2 > 0)
            .map(|(id, name, tokens, color)| {
                obj! { "id" => *id, "name" => *name, "tokens" => *tokens, "color" => *color, "kind" => "used" }
            })
            .collect();
        categories.push(obj! { "id" => "autocompact_buffer", "name" => "Autocompact buffer", "tokens" => buffer, "color" => "inactive", "kind" => "buffer" });
        categories.push(obj! { "id" => "free_space", "name" => "Free space", "tokens" => free, "color" => "promptBorder", "kind" => "free" });
        let percentage = (total * 100).checked_div(self.window).unwrap_or(0);
        obj! {
            "categories" => categories,
            "totalTokens" => total,
            "maxTokens" => self.window,
            "rawMaxTokens" => self.window,
            "percentage" => percentage,
            "gridRows" => Vec::new(),
            "model" => self.model.as_str(),
            "memoryFiles" => Vec::new(),
            "mcpTools" => self.mcp_tools.iter().map(|(name, server, tokens)| obj! {
                "name" => name.as_str(), "serverName" => server.as_str(), "tokens" => *tokens, "isLoaded" => true,
            }).collect::<Vec<_>>(),
            "agents" => self.agents.iter().map(|(name, source, tokens)| obj! {
                "agentType" => name.as_str(), "source" => source.as_str(), "tokens" => *tokens,
            }).collect::<Vec<_>>(),
            "isAutoCompactEnabled" => true,
            "autoCompactThreshold" => thresholds.compact,
            "messageBreakdown" => obj! {
                "toolCallTokens" => self.tool_call_tokens,
                "toolResultTokens" => self.tool_result_tokens,
                "assistantMessageTokens" => self.assistant_tokens,
                "userMessageTokens" => self.user_tokens,
            },
            "apiUsage" => self.api_usage.map(|u| u.to_json()),
        }
    }
}
