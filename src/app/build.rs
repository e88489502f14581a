//! The second stage of configuration: the resolved [`Runtime`] builds the
//! parts of a session — the transcript, the scratch folder, the tool
//! registry, MCP servers, hooks, the policy and sandbox, sub-agents, the
//! pipeline, the agent and its printer. Nothing here reads flags or the
//! environment: every knob arrives in `Runtime`.
//!
//! It lives in `app` rather than in `config` because it needs every plane
//! above the control plane (the import rule in `src/lib.rs`).

use std::rc::Rc;

use smol::LocalExecutor;

use super::exit::Failure;
use crate::abort::Abort;
use crate::agent::hooks::{Hooks, SessionFacts};
use crate::agent::pipeline::{Approver, Pipeline};
use crate::agent::{Agent, Settings, subagent};
use crate::config::Runtime;
use crate::config::prompt::SystemParts;
use crate::config::settings::Behavior;
use crate::frontend::line;
use crate::frontend::sdk;
use crate::frontend::{Printer, SessionInfo};
use crate::json::{Map, Value};
use crate::model::client::Client;
use crate::obj;
use crate::policy::Policy;
use crate::session::transcript::{self, Transcript};
use crate::session::{SessionError, checkpoint, new_uuid, resume, store};
use crate::tools::scratch::Scratch;
use crate::tools::structured::Structured;
use crate::tools::{Registry, ToolContext};

/// A session's parts, ready to be driven.
pub(super) struct Parts {
    pub agent: Agent<'static>,
    pub printer: Printer,
    pub transcript: Option<Transcript>,
    /// The first prompt's blocks: the prompt, then what SessionStart
    /// hooks added.
    pub first_prompt: Vec<Value>,
    pub hooks: Rc<Hooks>,
    /// The SDK's control channel (used when stdin carries the session).
    pub control: Rc<sdk::Control>,
    pub structured: Rc<Structured>,
    #[cfg(feature = "mcp")]
    pub mcp_hub: Option<Rc<crate::mcp::Hub>>,
    pub scratch: Scratch,
    /// Line mode's reader of standard input.
    pub line_input: Option<Rc<line::Input>>,
    /// The terminal interface, when this session has one.
    #[cfg(feature = "tui")]
    pub tui: Option<Rc<crate::frontend::tui::Tui>>,
    pub system: SystemPrompt,
}

/// The system prompt's parts and how they are put together; an SDK may
/// replace parts during the session.
pub(super) struct SystemPrompt {
    pub parts: SystemParts,
    compact: bool,
    memory_budget: usize,
    coordinator: bool,
}

impl SystemPrompt {
    /// The blocks for the session's own agent, those for its workers (a
    /// coordinator's note is its own), and a notice when memory was cut
    /// to fit.
    pub fn compose(&self) -> (Vec<String>, Vec<String>, Option<String>) {
        let (workers, notice) = self.parts.compose(self.compact, self.memory_budget);
        let mut own = workers.clone();
        if self.coordinator {
            own.push(COORDINATOR_NOTE.to_string());
        }
        (own, workers, notice)
    }
}

const COORDINATOR_NOTE: &str = "You are the coordinator. You have only Agent, SendMessage and \
TaskStop: give every piece of work to a worker (use run_in_background for work that can run \
in parallel), steer running workers with SendMessage, stop useless ones with TaskStop, and \
combine their results, which arrive as <task-notification> messages, into your answer.";

/// Windows this small get the compact prompt and tool descriptions.
const COMPACT_WINDOW: u64 = 32_768;

/// Builds the session's parts from `rt`. `discovered` is what discovery
/// found (for `system/init`); `interactive` means line mode.
pub(super) async fn build(
    ex: &'static LocalExecutor<'static>,
    rt: &Runtime,
    client: Client,
    abort: Abort,
    discovered: Option<Value>,
    interactive: bool,
) -> Result<Parts, Failure> {
    let OpenedSession {
        session_id,
        mut transcript,
        history,
        earlier,
        shell_cwd: resumed_cwd,
    } = open_session(rt)?;
    // Only the REPL rebuilds state from the earlier session's log.
    #[cfg(not(feature = "repl"))]
    let _ = earlier;
    let checkpoints = transcript
        .as_ref()
        .map(|t| checkpoint::Checkpoints::open(t.path()));
    // Made private (mkdtemp) at the first spill and used through a
    // descriptor: sandboxed commands may write to /tmp.
    let scratch = Scratch::private(&rt.temp_dir);
    let mut registry = Registry::builtin();
    let (web_search, web_search_note) = rt.web_search_tool();
    if let Some(note) = web_search_note {
        eprintln!("tern: warning: {note}");
    }
    if let Some(definition) = web_search {
        registry.add_server_tool("WebSearch", definition);
    }
    // The REPL, and the tools its scripts register (offered while the
    // context that registered them lives).
    #[cfg(feature = "repl")]
    let repl_tools = Rc::new(std::cell::RefCell::new(Vec::new()));
    #[cfg(feature = "repl")]
    if rt.repl {
        registry.add(Rc::new(crate::tools::repl::Repl));
        registry.set_dynamic(
            Rc::new(crate::tools::repl::RegisteredTools(Rc::clone(&repl_tools))),
            Vec::new(),
        );
    }
    // A bare tool name in the deny list removes the tool from view entirely.
    let hidden: Vec<String> = rt
        .rules
        .iter()
        .filter(|r| r.behavior == Behavior::Deny && r.spec.is_none())
        .map(|r| r.tool.clone())
        .collect();
    registry.retain(|name| !hidden.iter().any(|h| h == name));
    // Without skills, the Skill tool would only cost tokens.
    let skills = Rc::new(rt.system.skills.clone());
    if skills.is_empty() {
        registry.retain(|name| name != "Skill");
    }
    for w in &rt.skill_warnings {
        eprintln!("tern: warning: {w}");
    }
    if let Some(only) = &rt.tools {
        for unknown in only.iter().filter(|t| !registry.has(t)) {
            eprintln!(
                "tern: warning: --tools names '{unknown}', which is not a built-in tool; ignored"
            );
        }
        registry.retain(|name| only.iter().any(|t| t == name));
    }
    // Coordinator mode: the top level only delegates; workers get the
    // other tools (but not Agent: they do the work) and a shared scratchpad.
    let worker_tools: Vec<String> = if rt.coordinator {
        registry
            .names()
            .into_iter()
            .filter(|t| *t != "Agent")
            .collect()
    } else {
        registry.names()
    };
    let server_tools = registry.server_tools();
    let scratchpad = match rt.coordinator {
        true => Some(
            scratch
                .make()
                .map_err(|source| Failure::Scratch {
                    dir: rt.temp_dir.clone(),
                    source,
                })?
                .join("scratchpad"),
        ),
        false => None,
    };
    if let Some(dir) = &scratchpad
        && let Err(source) = std::fs::create_dir_all(dir)
    {
        return Err(Failure::Scratchpad {
            dir: dir.clone(),
            source,
        });
    }
    if rt.coordinator {
        registry = Registry::coordinator();
    }
    let control = Rc::new(sdk::Control::default());
    // An SDK session's own servers answer over its control channel, which
    // is read only once the session runs: no waiting for them here.
    // Servers are told what this session can answer before they start:
    // forms where a person or an SDK host is there, sampling where
    // someone (or an allow rule) can allow it.
    #[cfg(feature = "mcp")]
    let offer = super::mcp_start::offer(
        rt,
        interactive || rt.stream_input,
        interactive || rt.sdk_permissions,
    );
    #[cfg(feature = "mcp")]
    let mcp_hub = if rt.stream_input {
        let carrier: Rc<dyn crate::mcp::sdk::Carrier> = Rc::clone(&control) as _;
        super::mcp_start::start(ex, rt, super::mcp_start::Wait::None, Some(carrier), offer).await
    } else {
        super::mcp_start::start(ex, rt, super::mcp_start::Wait::First, None, offer).await
    };
    // MCP tools: for the session's agent, and for sub-agents (a
    // coordinator itself only delegates, so there for its workers only).
    #[cfg(feature = "mcp")]
    let mcp_tools = mcp_hub
        .as_ref()
        .map(|hub| Rc::clone(hub) as Rc<dyn crate::tools::ToolSource>);
    #[cfg(not(feature = "mcp"))]
    let mcp_tools: Option<Rc<dyn crate::tools::ToolSource>> = None;
    // `--json-schema` (or an SDK's jsonSchema) adds StructuredOutput.
    let structured = Rc::new(Structured::default());
    if let Some(schema) = &rt.json_schema {
        structured.set_schema(schema.clone());
    }
    let own_mcp = mcp_tools.clone().filter(|_| !rt.coordinator);
    if own_mcp.is_some() || rt.json_schema.is_some() || rt.stream_input {
        registry.set_dynamic(
            Rc::new(crate::tools::structured::SessionTools {
                structured: Rc::clone(&structured),
                mcp: own_mcp,
            }),
            hidden.clone(),
        );
    }
    #[cfg(not(feature = "mcp"))]
    if !rt.mcp_configs.is_empty() || !rt.mcp_settings.is_empty() {
        eprintln!(
            "tern: warning: MCP servers are configured, but this tern was built without the mcp feature"
        );
    }
    let context_window = super::window::resolve(rt, &client).await;
    let compact = context_window <= COMPACT_WINDOW;
    registry.set_compact(compact);
    #[cfg(feature = "web")]
    let web = super::web::access(rt, &client, context_window);
    // A small window gets a budget for memory files and tool results, so
    // one big file cannot take the whole context.
    let system_prompt = SystemPrompt {
        parts: rt.system.clone(),
        compact,
        memory_budget: context_window as usize * 4 / 8,
        coordinator: rt.coordinator,
    };
    let (system, worker_system, memory_notice) = system_prompt.compose();
    if let Some(n) = memory_notice {
        eprintln!("tern: {n}");
    }
    let max_tokens = if compact {
        rt.max_tokens.min((context_window / 4) as u32)
    } else {
        rt.max_tokens
    };
    // The terminal interface, else line mode with one reader for all of
    // standard input.
    #[cfg(feature = "tui")]
    let tui = if interactive && crate::frontend::tui::wanted(rt.no_tui) {
        match start_tui(rt, context_window) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!(
                    "tern: warning: cannot set up the terminal interface ({e}); using line mode"
                );
                None
            }
        }
    } else {
        None
    };
    #[cfg(feature = "tui")]
    let interactive = interactive && tui.is_none();
    let line_input = interactive.then(line::Input::start);
    #[cfg(feature = "tui")]
    let tui_asker = tui.as_ref().map(|t| {
        Rc::new(crate::frontend::tui::TuiApprover::new(
            Rc::clone(t),
            abort.clone(),
        ))
    });
    #[cfg(feature = "tui")]
    let tui_approver = tui_asker.clone().map(|a| a as Rc<dyn Approver>);
    #[cfg(not(feature = "tui"))]
    let tui_approver: Option<Rc<dyn Approver>> = None;
    let line_approver = line_input
        .as_ref()
        .map(|input| Rc::new(line::LineApprover::new(Rc::clone(input), rt.cwd.clone())));
    let approver: Option<Rc<dyn Approver>> = if rt.sdk_permissions {
        Some(Rc::new(sdk::SdkApprover {
            control: Rc::clone(&control),
            abort: abort.clone(),
            cwd: rt.cwd.clone(),
        }))
    } else if let Some(a) = tui_approver {
        Some(a)
    } else if let Some(a) = &line_approver {
        Some(Rc::clone(a) as Rc<dyn Approver>)
    } else {
        None
    };
    // Who answers the servers' forms and sampling requests.
    #[cfg(feature = "mcp")]
    if let Some(hub) = &mcp_hub {
        use crate::frontend::elicit::{Asker, Forms};
        #[cfg(feature = "tui")]
        let tui_forms = tui_asker.map(Forms::Tui);
        #[cfg(not(feature = "tui"))]
        let tui_forms: Option<Forms> = None;
        let forms = if rt.stream_input {
            Some(Forms::Sdk(Rc::clone(&control)))
        } else if let Some(f) = tui_forms {
            Some(f)
        } else if let Some(l) = line_approver {
            Some(Forms::Line(l))
        } else {
            rt.mcp_accept_defaults.then_some(Forms::Defaults)
        };
        let asker = Asker {
            forms,
            approver: approver.clone(),
        };
        hub.services().set_asker(Some(Rc::new(asker)));
    }
    let info = SessionInfo {
        session_id: session_id.clone(),
        cwd: rt.cwd.display().to_string(),
        model: rt.model.clone(),
        tools: registry.names(),
        permission_mode: rt.mode.as_str(),
        api_key_source: rt.api_key_source.clone(),
        sandbox: sandbox_summary(rt.sandbox.as_ref()),
        #[cfg(feature = "mcp")]
        mcp_servers: mcp_hub.as_ref().map_or(Vec::new(), |h| h.summary()),
        #[cfg(not(feature = "mcp"))]
        mcp_servers: Vec::new(),
        discovered,
        agents: Vec::new(),
        skills: Vec::new(),
        slash_commands: Vec::new(),
        additional_directories: rt
            .extra_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        ignored: rt
            .ignored
            .iter()
            .map(|(flag, why)| obj! { "option" => flag.as_str(), "reason" => *why })
            .collect(),
        served_by_anthropic: rt.client.base_url == crate::config::DEFAULT_BASE_URL,
        context_window,
        max_output_tokens: max_tokens,
        memory: memory_summary(rt),
        trust: rt.trust.to_value(),
    };
    if rt.verbose {
        for s in &rt.memory_skipped {
            eprintln!("tern: memory: {s}");
        }
    }
    let hooks = Rc::new(
        Hooks::new(
            rt.hooks.clone(),
            SessionFacts {
                session_id: session_id.clone(),
                transcript_path: transcript
                    .as_ref()
                    .map(|t| t.path().display().to_string())
                    .unwrap_or_default(),
                cwd: rt.cwd.display().to_string(),
                permission_mode: rt.mode.as_str().to_string(),
            },
        )
        .with_env(rt.child_env.clone()),
    );
    let mut first_prompt = vec![obj! { "type" => "text", "text" => rt.prompt.clone() }];
    if hooks.wants("SessionStart", "startup") {
        let mut fields = Map::new();
        fields.insert("source", "startup");
        let v = hooks.run("SessionStart", "startup", fields).await;
        for n in &v.notices {
            eprintln!("tern: hook: {n}");
        }
        for c in v.context {
            first_prompt.push(obj! { "type" => "text", "text" => c });
        }
    }
    let result_limit = compact.then_some(context_window as usize * 3 / 4);
    let (defs, def_warnings) = subagent::defs::load(&rt.agent_dirs);
    for w in def_warnings {
        eprintln!("tern: warning: agent definition {w}");
    }
    let host = Rc::new(subagent::Host {
        ex,
        client: client.clone(),
        model: rt.model.clone(),
        max_tokens,
        system: worker_system,
        retry: rt.retry,
        context_window,
        mode: rt.mode,
        rules: rt.rules.clone(),
        extra_dirs: rt
            .extra_dirs
            .iter()
            .cloned()
            .chain(scratchpad.clone())
            .collect(),
        sandbox: rt.sandbox.clone(),
        sandbox_auto_allow: rt.sandbox_auto_allow,
        protected: rt.protected.clone(),
        tools: worker_tools,
        server_tools,
        child_env: rt.child_env.clone(),
        result_limit,
        cwd: rt.cwd.clone(),
        scratch: scratch.clone(),
        hooks: Rc::clone(&hooks),
        approver: approver.clone(),
        defs: std::cell::RefCell::new(defs),
        depth: 0,
        max_depth: rt.max_agent_depth,
        transcript_dir: transcript
            .as_ref()
            .map(|t| t.path().with_extension("").join("subagents")),
        session_id: session_id.clone(),
        local_rules: Some(rt.local_rules()),
        background: Rc::default(),
        inbox: Rc::default(),
        workers: Default::default(),
        mcp_tools: mcp_tools.map(|source| (source, hidden.clone())),
        relay: Rc::default(),
        child_note: scratchpad.as_ref().map(|dir| {
            format!(
                "You are a worker for a coordinating agent. Shared scratchpad directory: {} \
                 (other workers read and write it too; leave notes and results there).",
                dir.display()
            )
        }),
    });
    let mut policy = Policy::new(rt.mode, rt.rules.clone(), &rt.cwd, &rt.extra_dirs);
    policy.set_command_env(crate::policy::CommandEnv::new(rt.child_env.vars()));
    policy.sandbox = rt.sandbox.clone();
    policy.sandbox_auto_allow = rt.sandbox_auto_allow;
    policy.protected = rt.protected.clone();
    let home = policy.base().home;
    // Bash's directory starts where the resumed session's shell was, if
    // that is still a directory inside the working directories.
    let shell_cwd = crate::session::ShellCwd::new(&rt.cwd);
    if let Some(dir) = resumed_cwd.filter(|d| d.is_dir() && policy.inside(d)) {
        shell_cwd.set(&crate::policy::canonical(&dir));
    }
    if let Some(t) = transcript.as_mut() {
        t.follow_cwd(shell_cwd.clone());
    }
    // Model use inside tool calls, counted by the agent; a server's
    // sampling requests are written down here too.
    let spend: Rc<crate::tools::Spend> = Rc::default();
    #[cfg(feature = "mcp")]
    if let Some(hub) = &mcp_hub {
        hub.services().set_sampler(
            crate::mcp::serve::Sampler {
                model: crate::model::once::SideModel {
                    client: client.clone(),
                    model: rt.model.clone(),
                    window: context_window,
                },
                spend: Rc::clone(&spend),
                max_tokens,
                budget: rt.max_budget_usd,
            },
            &rt.rules,
        );
    }
    let mut pipeline = Pipeline::new(
        registry,
        policy,
        ToolContext {
            spend,
            child_env: rt.child_env.clone(),
            sandbox: rt.sandbox.clone(),
            result_limit,
            context_window: Some(context_window),
            subagents: Some(Rc::clone(&host) as Rc<dyn crate::tools::Subagents>),
            shells: Rc::new(crate::tools::Shells::new(ex)),
            skills: Rc::clone(&skills),
            #[cfg(feature = "web")]
            web,
            home,
            shell: rt.shell.clone(),
            shell_cwd,
            #[cfg(feature = "repl")]
            sampler: rt.repl.then(|| {
                let (model, window) = super::web::small_model(rt, context_window);
                Rc::new(crate::model::once::SideModel {
                    client: client.clone(),
                    model,
                    window,
                })
            }),
            #[cfg(feature = "repl")]
            repl: crate::tools::repl::Slot::sharing(
                repl_tools,
                transcript.as_ref().map(|t| t.path()),
                earlier.as_deref(),
                &history,
                rt.repl_memory_mib,
            ),
            ..ToolContext::new(rt.cwd.clone(), scratch.clone(), abort.clone())
        },
        approver,
        Rc::clone(&hooks),
    );
    pipeline.set_subagents(host);
    pipeline.set_local_rules(rt.local_rules());
    // The session's own loop also carries what parts without a pipeline
    // (MCP, the transcript writer, sub-agents) have to say.
    pipeline.set_reports(crate::report::notices());
    if let Some(c) = checkpoints {
        pipeline.set_checkpoints(c);
    }
    let agent = Agent::new(
        ex,
        client,
        Settings {
            model: rt.model.clone(),
            max_tokens,
            system,
            max_turns: rt.max_turns,
            retry: rt.retry,
            fallback_models: rt.fallback_models.clone(),
            max_budget_usd: rt.max_budget_usd,
            context_window,
            fallback_after: rt.fallback_after,
            structured: Some(Rc::clone(&structured)),
        },
        pipeline.share(),
        abort,
        history,
    );
    let mut printer = Printer::new(rt.format, rt.print, rt.verbose, info);
    printer.include_partial = rt.include_partial;
    printer.info.agents = agent_names(&agent);
    printer.info.skills = skills.iter().map(|s| s.name.clone()).collect();
    // Only stream-json's init names them (the SDK's session names them
    // at each prompt); reading the command folders is no part of a text
    // run's start.
    if rt.format == crate::cli::OutputFormat::StreamJson && !rt.stream_input {
        printer.info.slash_commands = slash_commands(rt, &agent);
    }
    Ok(Parts {
        agent,
        printer,
        transcript,
        first_prompt,
        hooks,
        control,
        structured,
        #[cfg(feature = "mcp")]
        mcp_hub,
        scratch,
        line_input,
        #[cfg(feature = "tui")]
        tui,
        system: system_prompt,
    })
}

/// Without the feature there is never an interface.
#[cfg(not(feature = "tui"))]
pub(super) enum NoTui {}

/// Takes the terminal for the interface, its status line filled in.
#[cfg(feature = "tui")]
fn start_tui(rt: &Runtime, context_window: u64) -> std::io::Result<Rc<crate::frontend::tui::Tui>> {
    use crate::frontend::commands;
    let mut names: Vec<(String, String)> = commands::BUILT_IN
        .iter()
        .map(|(usage, about)| {
            let name = usage.split_whitespace().next().unwrap_or(usage);
            (name.to_string(), about.to_string())
        })
        .collect();
    for c in commands::load(&rt.command_dirs) {
        names.push((format!("/{}", c.name), c.description.clone()));
    }
    let status = crate::frontend::tui::Status {
        model: rt.model.clone(),
        mode: rt.mode.as_str().to_string(),
        context: Some((0, context_window)),
        cost: 0.0,
        sandbox: rt.sandbox.is_some(),
        shells: 0,
    };
    crate::frontend::tui::Tui::start(rt.cwd.clone(), names, status)
}

impl Parts {
    /// The terminal interface, taken to drive the session.
    #[cfg(feature = "tui")]
    pub fn take_tui(&mut self) -> Option<Rc<crate::frontend::tui::Tui>> {
        self.tui.take()
    }

    #[cfg(not(feature = "tui"))]
    pub fn take_tui(&mut self) -> Option<NoTui> {
        None
    }

    /// After the last turn: background shells stopped, SessionEnd hooks,
    /// the MCP servers stopped, what is left to say, the scratch folder
    /// removed if empty.
    pub async fn finish(self) {
        // Background shells end with the session (and are checked).
        self.agent.pipeline().ctx().shells.shutdown().await;
        if self.hooks.wants("SessionEnd", "") {
            let mut fields = Map::new();
            fields.insert("reason", "other");
            let _ = self.hooks.run("SessionEnd", "", fields).await;
        }
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp_hub {
            hub.shutdown().await;
        }
        // Said after the last turn (a server that failed late, say).
        for r in crate::report::notices().take() {
            if let crate::report::Report::Notice { text, .. } = r {
                eprintln!("tern: {text}");
            }
        }
        // Spill files are referenced by tool results the model has seen; they
        // stay for the user to inspect unless nothing was spilled.
        if let Some(dir) = self.scratch.made_path() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The slash commands a prompt may start with, without their `/`: the
/// built-in ones, the user's, and the MCP servers' prompts.
pub(super) fn slash_commands(rt: &Runtime, agent: &Agent<'_>) -> Vec<String> {
    use crate::frontend::commands;
    let mut out: Vec<String> = commands::BUILT_IN
        .iter()
        .filter_map(|(usage, _)| usage.split_whitespace().next())
        .map(|n| n.trim_start_matches('/').to_string())
        .collect();
    out.extend(commands::load(&rt.command_dirs).into_iter().map(|c| c.name));
    out.extend(
        agent
            .pipeline()
            .registry()
            .commands()
            .into_iter()
            .map(|(n, _)| n),
    );
    out
}

/// The agent definitions the Agent tool can start.
pub(super) fn agent_names(agent: &Agent<'_>) -> Vec<String> {
    agent
        .pipeline()
        .subagents()
        .map(|h| h.defs.borrow().iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default()
}

struct OpenedSession {
    session_id: String,
    transcript: Option<Transcript>,
    /// The conversation so far (empty for a new session).
    history: Vec<Value>,
    /// The transcript `history` was read from (resumed or forked).
    earlier: Option<std::path::PathBuf>,
    /// Where the Bash tool's shell was when that transcript ended.
    shell_cwd: Option<std::path::PathBuf>,
}

/// A new session, or a recorded one resumed (same id, same file) or
/// forked (new id, history copied into a new file).
fn open_session(rt: &Runtime) -> Result<OpenedSession, SessionError> {
    let choice = &rt.session;
    let places = &rt.transcripts;
    let source = match (&choice.resume, choice.continue_latest) {
        (Some(id), _) => Some(store::find(places, &rt.cwd, id)?),
        (None, true) => Some(store::latest(places, &rt.cwd)?),
        (None, false) => None,
    };
    let Some(source) = source else {
        let session_id = choice.id.clone().unwrap_or_else(new_uuid);
        if let Some(id) = &choice.id
            && store::find(places, &rt.cwd, id).is_ok()
        {
            return Err(SessionError::Exists { id: id.clone() });
        }
        let transcript = rt
            .persist_session
            .then(|| new_transcript(rt, &session_id))
            .flatten();
        return Ok(OpenedSession {
            session_id,
            transcript,
            history: Vec::new(),
            earlier: None,
            shell_cwd: None,
        });
    };
    let loaded = resume::load_file(&source).map_err(|e| SessionError::Resume {
        path: source.clone(),
        source: Box::new(e),
    })?;
    for w in &loaded.warnings {
        eprintln!("tern: resume: {w}");
    }
    let old_id = source
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    if !choice.fork {
        let mut transcript = if rt.persist_session {
            match transcript::reopen(&source, &rt.cwd, &old_id, loaded.leaf.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    eprintln!(
                        "tern: warning: cannot append to {} ({e}); this run is not recorded",
                        source.display()
                    );
                    None
                }
            }
        } else {
            None
        };
        // The made-up results become part of the record, so the next
        // resume sees the same conversation.
        if let Some(t) = transcript.as_mut()
            && !loaded.synthesized.is_empty()
        {
            t.append(
                "user",
                &obj! { "role" => "user", "content" => loaded.synthesized.clone() },
                &new_uuid(),
            );
        }
        return Ok(OpenedSession {
            session_id: old_id,
            transcript,
            history: loaded.messages,
            earlier: Some(source),
            shell_cwd: loaded.cwd,
        });
    }
    let session_id = choice.id.clone().unwrap_or_else(new_uuid);
    let mut transcript = rt
        .persist_session
        .then(|| new_transcript(rt, &session_id))
        .flatten();
    if let Some(t) = transcript.as_mut() {
        for m in &loaded.messages {
            t.append(m.str_field("role").unwrap_or("user"), m, &new_uuid());
        }
    }
    Ok(OpenedSession {
        session_id,
        transcript,
        history: loaded.messages,
        earlier: Some(source),
        shell_cwd: loaded.cwd,
    })
}

fn new_transcript(rt: &Runtime, session_id: &str) -> Option<Transcript> {
    let opened = transcript::open(&rt.transcripts, &rt.cwd, session_id);
    if let Some(notice) = opened.notice {
        eprintln!("tern: {notice}");
    }
    opened.transcript
}

/// The memory files read and those left out, for `system/init`.
fn memory_summary(rt: &Runtime) -> Value {
    let shown = |p: &std::path::Path| Value::from(p.display().to_string());
    obj! {
        "files" => rt.memory_files.iter().map(|p| shown(p)).collect::<Vec<_>>(),
        "not_read" => rt.memory_skipped.iter().map(|s| obj! {
            "path" => shown(&s.path),
            "imported_by" => s.from.as_deref().map(shown),
            "reason" => s.to_string(),
        }).collect::<Vec<_>>(),
    }
}

/// What the sandbox will enforce in this session, for `system/init`.
fn sandbox_summary(policy: Option<&crate::sandbox::SandboxPolicy>) -> Value {
    match policy {
        Some(p) => crate::sandbox::probe().summary(p),
        None => obj! { "enabled" => false },
    }
}
