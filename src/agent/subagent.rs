//! Sub-agents: the Agent tool starts a child that runs the same loop with
//! its own conversation, a subset of the tools, a permission context that
//! can only be narrower than its parent's, a copy of the parent's
//! file-read state and its own transcript. Depth is limited explicitly.
//!
//! A background child returns an id at once; its result reaches the
//! parent as a notification at the start of the parent's next iteration
//! (and a parent about to finish waits for its running children).
//!
//! What a child does is also relayed as it happens ([`Relayed`]): its
//! messages, tagged with the Agent call that started it, and its start
//! and end as a task. The parent's loop passes these on as events.

pub mod defs;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use smol::LocalExecutor;

use super::hooks::Hooks;
use super::pipeline::Approver;
use super::{Agent, Ending, Event, Settings, assemble};
use crate::abort::{Abort, Reason};
use crate::json::{Map, Value};
use crate::model::RetryPolicy;
use crate::model::client::Client;
use crate::obj;
use crate::policy::{Policy, PolicySpec};
use crate::session::transcript;
use crate::tools::agent::AgentCall;
use crate::tools::{Registry, ToolContext, ToolOutput};
pub use defs::AgentDef;

pub const DEFAULT_MAX_TURNS: u32 = 200;

/// What every agent of a session is assembled from and that does not
/// change while it runs. A child's is its parent's with the mode
/// narrowed by its definition and the tools cut to those it got.
#[derive(Clone)]
pub struct Spec {
    pub ex: &'static LocalExecutor<'static>,
    pub client: Client,
    pub model: String,
    pub max_tokens: u32,
    /// Children think as the session does.
    pub thinking: crate::model::thinking::Thinking,
    /// And read tool calls from text as it does.
    pub recover_calls: bool,
    /// And describe tools in the prompt to a server that refuses them.
    pub tools_as_text: bool,
    pub system: Vec<String>,
    pub retry: RetryPolicy,
    pub context_window: u64,
    /// When MCP tools wait behind ToolSearch.
    pub tool_search: crate::context::HoldBack,
    /// The permissions: mode, rules, directories, sandbox, environment.
    pub policy: PolicySpec,
    /// Tools the parent may use (a child gets at most these).
    pub tools: Vec<String>,
    /// Tools the provider runs (web search) that children offer too.
    pub server_tools: Vec<(String, Value)>,
    pub child_env: crate::config::ChildEnv,
    pub result_limit: Option<usize>,
    pub scratch: crate::tools::scratch::Scratch,
    pub hooks: Rc<Hooks>,
    pub approver: Option<Rc<dyn Approver>>,
    pub max_depth: u32,
    /// Where children's transcripts go (`<session>/subagents/`).
    pub transcript_dir: Option<PathBuf>,
    pub session_id: String,
    /// Where "always" answers are saved.
    pub(crate) local_rules: Option<crate::config::settings::LocalRules>,
    /// Written into every child's system prompt (the coordinator's shared
    /// scratchpad, say).
    pub child_note: Option<String>,
    /// MCP tools and the names kept out of view; a child gets them all,
    /// or those its definition's tool list names.
    pub mcp_tools: Option<(Rc<dyn crate::tools::ToolSource>, Vec<String>)>,
}

/// An agent's place in the tree: what its children are built from, and
/// what changes while it runs.
pub struct Host {
    pub spec: Spec,
    /// Definitions (files, the built-in, and any an SDK `initialize` adds).
    pub defs: RefCell<Vec<AgentDef>>,
    /// 0 for the session's own agent.
    pub depth: u32,
    pub background: Rc<Background>,
    /// Messages for this agent from its parent (SendMessage), read at the
    /// start of its next iteration.
    pub inbox: Rc<RefCell<Vec<String>>>,
    /// This agent's background children that are still running.
    pub workers: RefCell<HashMap<String, Worker>>,
    /// What this agent's children report, for this agent's loop to pass on.
    pub relay: Rc<Relay>,
}

/// Which message of a child's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Assistant,
    ToolResults,
}

/// One thing a sub-agent reported.
#[derive(Debug, Clone)]
pub enum Relayed {
    /// A message of a child's conversation (API shape), started by the
    /// Agent call `parent_tool_use_id`.
    Message {
        parent_tool_use_id: String,
        kind: MessageKind,
        /// The message's identity (one per result for tool results), as
        /// the child's transcript records it.
        ids: Vec<String>,
        message: Value,
    },
    TaskStarted {
        task_id: String,
        tool_use_id: String,
        description: String,
        subagent_type: String,
        prompt: String,
        background: bool,
        depth: u32,
    },
    TaskFinished {
        task_id: String,
        tool_use_id: String,
        /// completed, failed or stopped.
        status: &'static str,
        summary: String,
        /// Where the child's transcript is (empty when none is kept).
        output_file: String,
        total_tokens: u64,
        tool_uses: u64,
        duration: std::time::Duration,
    },
}

/// A queue of [`Relayed`] reports with a wake-up for whoever drains it.
pub type Relay = crate::report::Mailbox<Relayed>;

/// A running background child: how to stop it and how to reach it.
pub struct Worker {
    pub abort: Abort,
    pub inbox: Rc<RefCell<Vec<String>>>,
}

/// Finished background children, waiting to be told to the parent.
pub struct Background {
    running: Cell<usize>,
    ready: RefCell<Vec<String>>,
    tx: smol::channel::Sender<String>,
    rx: smol::channel::Receiver<String>,
}

impl Default for Background {
    fn default() -> Self {
        let (tx, rx) = smol::channel::unbounded();
        Background {
            running: Cell::new(0),
            ready: RefCell::new(Vec::new()),
            tx,
            rx,
        }
    }
}

impl Background {
    pub fn running(&self) -> usize {
        self.running.get()
    }

    /// A child has finished and its notification is not yet delivered.
    pub fn has_news(&self) -> bool {
        !self.ready.borrow().is_empty() || !self.rx.is_empty()
    }

    /// Notifications ready for the parent.
    pub fn take(&self) -> Vec<String> {
        let mut out = std::mem::take(&mut *self.ready.borrow_mut());
        while let Ok(m) = self.rx.try_recv() {
            out.push(m);
        }
        out
    }

    /// Waits until some child finishes (at once if one has, or if none runs).
    pub async fn wait(&self) {
        if !self.ready.borrow().is_empty() || !self.rx.is_empty() || self.running.get() == 0 {
            return;
        }
        if let Ok(m) = self.rx.recv().await {
            self.ready.borrow_mut().push(m);
        }
    }

    fn started(&self) {
        self.running.set(self.running.get() + 1);
    }

    fn done(&self, notice: String) {
        self.running.set(self.running.get().saturating_sub(1));
        let _ = self.tx.try_send(notice);
    }
}

/// One Agent call's child, set to run: everything its run needs, owned,
/// so a background child's run can outlive the call.
struct Job {
    child: Agent<'static>,
    agent_id: String,
    /// The agent definition's name.
    kind: String,
    prompt: String,
    /// The call's description, for the task's summary.
    label: String,
    /// The Agent call that started it.
    parent_call: String,
    hooks: Rc<Hooks>,
    relay: Rc<Relay>,
    /// The child's transcript, when one is kept, and where it is.
    record: Option<transcript::Transcript>,
    output_file: String,
    /// What the child spends is the session's.
    spend: Rc<crate::tools::Spend>,
}

/// What an Agent call asks for, read from its input.
struct Request<'d> {
    def: &'d AgentDef,
    prompt: String,
    description: String,
    model: String,
    background: bool,
}

impl Host {
    /// Runs the Agent tool's call: in the foreground (the result is the
    /// child's answer) or in the background (the result is its id).
    pub async fn call(
        self: &Rc<Host>,
        input: AgentCall<'_>,
        parent: &ToolContext,
        call_id: &str,
    ) -> ToolOutput {
        if self.depth + 1 > self.spec.max_depth {
            return ToolOutput::error(format!(
                "Sub-agent depth limit reached: this agent is already {} level(s) down and the limit is {} \
                 (TERN_MAX_AGENT_DEPTH). Do this work directly with your own tools.",
                self.depth, self.spec.max_depth
            ));
        }
        let defs = self.defs.borrow().clone();
        let request = match self.request(input, &defs) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(e),
        };
        let agent_id = format!("agent-{}", &crate::session::new_uuid()[..8]);
        // The child stops when its parent is interrupted, or on TaskStop.
        let child_abort = Abort::new();
        let (from_parent, to_child) = (parent.abort.clone(), child_abort.clone());
        self.spec
            .ex
            .spawn(async move {
                from_parent.wait().await;
                to_child.trigger(Reason::Requested);
            })
            .detach();
        let inbox = Rc::new(RefCell::new(Vec::new()));
        let child = self.child_agent(
            request.def,
            request.model.clone(),
            parent,
            &agent_id,
            &child_abort,
            &inbox,
        );
        let job = self.job(child, &request, &agent_id, parent, call_id);
        self.relay.push(Relayed::TaskStarted {
            task_id: agent_id.clone(),
            tool_use_id: call_id.to_string(),
            description: request.description.clone(),
            subagent_type: request.def.name.clone(),
            prompt: request.prompt.clone(),
            background: request.background,
            depth: self.depth + 1,
        });
        if request.background {
            self.in_background(job, &request, child_abort, inbox, call_id);
            return ToolOutput::ok(format!(
                "Started the {kind_name} agent in the background (id {agent_id}). Its result will arrive \
                 as a <task-notification> message when it finishes; carry on meanwhile.",
                kind_name = request.def.name,
            ));
        }
        let (id, outcome) = job.run().await;
        let (status, text) = summary(&outcome.ending, &outcome.result);
        let body = format!(
            "{text}\n\n[agent {id} ({}) {status} after {} turns]",
            request.def.name, outcome.num_turns
        );
        if status == "completed" {
            ToolOutput::ok(body)
        } else {
            ToolOutput::error(body)
        }
    }

    /// The call's input read against the definitions: which agent, with
    /// what prompt and model (the call's, else the definition's, else the
    /// session's), and whether in the background.
    fn request<'d>(
        &self,
        input: AgentCall<'_>,
        defs: &'d [AgentDef],
    ) -> Result<Request<'d>, String> {
        let kind = input.subagent_type.unwrap_or("general-purpose");
        let Some(def) = defs.iter().find(|d| d.name == kind) else {
            let known: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
            return Err(format!(
                "No agent type '{kind}'. Available: {}",
                known.join(", ")
            ));
        };
        let model = input
            .model
            .map(str::to_string)
            .or_else(|| def.model.clone().filter(|m| m != "inherit"))
            .unwrap_or_else(|| self.spec.model.clone());
        Ok(Request {
            def,
            prompt: input.prompt.to_string(),
            description: input.description.unwrap_or(kind).to_string(),
            model,
            background: input.run_in_background,
        })
    }

    /// The child's run, with its transcript opened (following its shell's
    /// directory) under the session's.
    fn job(
        &self,
        child: Agent<'static>,
        request: &Request<'_>,
        agent_id: &str,
        parent: &ToolContext,
        call_id: &str,
    ) -> Job {
        let transcript_path = self
            .spec
            .transcript_dir
            .as_ref()
            .map(|dir| dir.join(format!("{agent_id}.jsonl")));
        let mut record = transcript_path.as_ref().and_then(|path| {
            transcript::create_at(path, &self.spec.policy.cwd, &self.spec.session_id).ok()
        });
        if let Some(t) = record.as_mut() {
            t.follow_cwd(child.pipeline().ctx().shell_cwd.clone());
        }
        let output_file = transcript_path
            .filter(|_| record.is_some())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        Job {
            child,
            agent_id: agent_id.to_string(),
            kind: request.def.name.clone(),
            prompt: request.prompt.clone(),
            label: request.description.clone(),
            parent_call: call_id.to_string(),
            hooks: Rc::clone(&self.spec.hooks),
            relay: Rc::clone(&self.relay),
            record,
            output_file,
            spend: Rc::clone(&parent.spend),
        }
    }

    /// Runs `job` on the executor; its notification reaches this agent's
    /// loop when it ends, and until then it can be sent messages and
    /// stopped by id.
    fn in_background(
        self: &Rc<Host>,
        job: Job,
        request: &Request<'_>,
        abort: Abort,
        inbox: Rc<RefCell<Vec<String>>>,
        call_id: &str,
    ) {
        let bg = Rc::clone(&self.background);
        bg.started();
        self.workers
            .borrow_mut()
            .insert(job.agent_id.clone(), Worker { abort, inbox });
        let host = Rc::clone(self);
        let call_id = call_id.to_string();
        let description = request.description.clone();
        self.spec
            .ex
            .spawn(async move {
                let (id, outcome) = job.run().await;
                host.workers.borrow_mut().remove(&id);
                let (status, text) = summary(&outcome.ending, &outcome.result);
                bg.done(format!(
                    "<task-notification>\n<task-id>{id}</task-id>\n<tool-use-id>{call_id}</tool-use-id>\n\
                     <description>{description}</description>\n<status>{status}</status>\n\
                     <result>\n{text}\n</result>\n<turns>{}</turns>\n</task-notification>",
                    outcome.num_turns
                ));
            })
            .detach();
    }

    /// SendMessage: queues `message` for a running background child.
    pub fn send(&self, to: &str, message: &str) -> Result<(), String> {
        match self.workers.borrow().get(to) {
            Some(w) => {
                w.inbox.borrow_mut().push(message.to_string());
                Ok(())
            }
            None => Err(self.not_running(to)),
        }
    }

    /// TaskStop: interrupts a running background child; its notification
    /// follows with status "interrupted".
    pub fn stop(&self, task_id: &str) -> Result<(), String> {
        match self.workers.borrow().get(task_id) {
            Some(w) => {
                w.abort.trigger(Reason::Requested);
                Ok(())
            }
            None => Err(self.not_running(task_id)),
        }
    }

    fn not_running(&self, id: &str) -> String {
        let mut running: Vec<String> = self.workers.borrow().keys().cloned().collect();
        running.sort();
        format!(
            "No running agent '{id}'. Running: {}",
            if running.is_empty() {
                "none".to_string()
            } else {
                running.join(", ")
            }
        )
    }

    /// The session's own host: depth 0, nothing running yet.
    pub fn new(spec: Spec, defs: Vec<AgentDef>) -> Host {
        Host {
            spec,
            defs: RefCell::new(defs),
            depth: 0,
            background: Rc::default(),
            inbox: Rc::default(),
            workers: RefCell::new(HashMap::new()),
            relay: Rc::default(),
        }
    }

    /// The child `def` describes, assembled like the session's agent
    /// from this host's spec, with the narrower of the two modes and the
    /// tools both allow.
    fn child_agent(
        &self,
        def: &AgentDef,
        model: String,
        parent: &ToolContext,
        agent_id: &str,
        abort: &Abort,
        inbox: &Rc<RefCell<Vec<String>>>,
    ) -> Agent<'static> {
        let (registry, repl_tools) = self.child_tools(def);
        let spec = Spec {
            policy: self.spec.policy.narrowed(def.permission_mode),
            tools: registry.names(),
            ..self.spec.clone()
        };
        let policy = Policy::from_spec(spec.policy.clone());
        let ctx = self.child_context(parent, agent_id, abort, repl_tools);
        let mut system = self.spec.system.clone();
        if !def.prompt.trim().is_empty() {
            system.push(def.prompt.clone());
        }
        if let Some(note) = &self.spec.child_note {
            system.push(note.clone());
        }
        let settings = Settings {
            model,
            max_tokens: spec.max_tokens,
            system,
            max_turns: Some(def.max_turns.unwrap_or(DEFAULT_MAX_TURNS)),
            retry: spec.retry,
            fallback_models: Vec::new(),
            max_budget_usd: None,
            // The session's limits stop its children with it.
            max_output_tokens: None,
            deadline: None,
            context_window: spec.context_window,
            fallback_after: crate::config::DEFAULT_FALLBACK_AFTER,
            structured: None,
            thinking: spec.thinking,
            recover_calls: spec.recover_calls,
            tools_as_text: spec.tools_as_text,
        };
        let host = Rc::new(Host {
            spec,
            defs: RefCell::new(self.defs.borrow().clone()),
            depth: self.depth + 1,
            background: Rc::default(),
            inbox: Rc::clone(inbox),
            workers: RefCell::new(HashMap::new()),
            relay: Rc::default(),
        });
        let parts = assemble::Parts {
            policy,
            registry,
            ctx,
            settings,
            history: Vec::new(),
            abort: abort.clone(),
        };
        assemble::assemble(host, parts, assemble::SessionOnly::default())
    }

    /// The tools a child offers: those its parent may use that its
    /// definition allows, the REPL when the session has it (the tools its
    /// scripts register offered to this child alone), and the MCP tools
    /// its definition names (a tool, or `mcp__server` for all of a
    /// server's).
    fn child_tools(&self, def: &AgentDef) -> (Registry, ChildRepl) {
        let mut registry = Registry::builtin();
        for (name, definition) in &self.spec.server_tools {
            registry.add_server_tool(name, definition.clone());
        }
        #[cfg(feature = "repl")]
        let repl_tools = Rc::new(RefCell::new(Vec::new()));
        #[cfg(feature = "repl")]
        if self.spec.tools.iter().any(|t| t == "REPL") {
            registry.add(Rc::new(crate::tools::repl::Repl));
            registry.set_dynamic(
                Rc::new(crate::tools::repl::RegisteredTools(Rc::clone(&repl_tools))),
                Vec::new(),
            );
        }
        registry.retain(|name| {
            self.spec.tools.iter().any(|t| t == name)
                && def
                    .tools
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|t| t == name))
                && !def.disallowed.iter().any(|t| t == name)
        });
        if let Some((source, hidden)) = &self.spec.mcp_tools {
            let mut hidden = hidden.clone();
            hidden.extend(def.disallowed.iter().cloned());
            if let Some(only) = &def.tools {
                registry.limit_dynamic(only.clone());
            }
            registry.set_dynamic(Rc::clone(source), hidden);
        }
        let search = if def
            .disallowed
            .iter()
            .any(|t| t == crate::tools::deferred::NAME)
        {
            crate::context::HoldBack::Never
        } else {
            self.spec.tool_search
        };
        registry.set_compact(crate::context::is_small(self.spec.context_window));
        registry.defer_mcp(search, self.spec.context_window);
        #[cfg(feature = "repl")]
        return (registry, repl_tools);
        #[cfg(not(feature = "repl"))]
        (registry, ())
    }

    /// What a child's tools run with: the session's environment, sandbox
    /// and limits, shells of its own, a scratch folder under the
    /// session's, and — shared with its parent — what the parent has read
    /// (it may edit it), the skills, the web cache and the REPL's model.
    fn child_context(
        &self,
        parent: &ToolContext,
        agent_id: &str,
        abort: &Abort,
        #[cfg_attr(not(feature = "repl"), allow(unused_variables))] repl_tools: ChildRepl,
    ) -> ToolContext {
        let spec = &self.spec;
        let ctx = ToolContext {
            child_env: spec.child_env.clone(),
            result_limit: spec.result_limit,
            context_window: Some(spec.context_window),
            shells: Rc::new(crate::tools::Shells::new(spec.ex)),
            skills: Rc::clone(&parent.skills),
            home: parent.home.clone(),
            shell: parent.shell.clone(),
            editor: parent.editor.clone(),
            #[cfg(feature = "web")]
            web: parent.web.clone(),
            #[cfg(feature = "repl")]
            sampler: parent.sampler.clone(),
            #[cfg(feature = "repl")]
            repl: parent.repl.for_child(repl_tools),
            ..ToolContext::new(
                spec.policy.cwd.clone(),
                spec.scratch.sub(agent_id),
                abort.clone(),
            )
        };
        *ctx.files.borrow_mut() = parent.files.borrow().clone();
        ctx
    }
}

/// The tools a child's REPL scripts register (nothing without the REPL).
#[cfg(feature = "repl")]
type ChildRepl = Rc<RefCell<Vec<Rc<crate::tools::repl::Registered>>>>;
#[cfg(not(feature = "repl"))]
type ChildRepl = ();

impl Job {
    /// The child's whole run: SubagentStart hooks' context with the
    /// prompt, every message relayed (and recorded) as it happens, its
    /// background shells stopped and its spending counted when it ends,
    /// then SubagentStop hooks. Returns the child's id and outcome.
    async fn run(mut self) -> (String, super::Outcome) {
        let started = std::time::Instant::now();
        let prompt = self.prompt_blocks().await;
        let mut tool_uses = 0u64;
        let (relay, parent_call, record) = (&self.relay, &self.parent_call, &mut self.record);
        let outcome = self
            .child
            .run(prompt, &mut |ev| {
                if let Some(t) = record.as_mut() {
                    super::record(t, &ev);
                }
                relay_event(relay, parent_call, &ev, &mut tool_uses);
            })
            .await;
        // What the child left running in the background ends with it.
        self.child.pipeline.ctx().shells.shutdown().await;
        for m in &outcome.model_usage {
            self.spend.record(&m.model, &m.usage, m.cost_usd);
        }
        let (status, text) = summary(&outcome.ending, &outcome.result);
        let u = &outcome.usage;
        self.relay.push(Relayed::TaskFinished {
            task_id: self.agent_id.clone(),
            tool_use_id: self.parent_call.clone(),
            status: match outcome.ending {
                Ending::Completed => "completed",
                Ending::Aborted(_) => "stopped",
                _ => "failed",
            },
            summary: format!("{}: {status}. {}", self.label, first_chars(&text, 500)),
            output_file: std::mem::take(&mut self.output_file),
            total_tokens: u.input_tokens
                + u.output_tokens
                + u.cache_creation_input_tokens
                + u.cache_read_input_tokens,
            tool_uses,
            duration: started.elapsed(),
        });
        if self.hooks.wants("SubagentStop", &self.kind) {
            let mut fields = Map::new();
            fields.insert("agent_id", self.agent_id.as_str());
            fields.insert("agent_type", self.kind.as_str());
            fields.insert("stop_hook_active", false);
            let _ = self.hooks.run("SubagentStop", &self.kind, fields).await;
        }
        (self.agent_id, outcome)
    }

    /// The prompt, then what SubagentStart hooks give the child.
    async fn prompt_blocks(&self) -> Value {
        let mut blocks = vec![obj! { "type" => "text", "text" => self.prompt.as_str() }];
        if self.hooks.wants("SubagentStart", &self.kind) {
            let mut fields = Map::new();
            fields.insert("agent_id", self.agent_id.as_str());
            fields.insert("agent_type", self.kind.as_str());
            let v = self.hooks.run("SubagentStart", &self.kind, fields).await;
            for n in &v.notices {
                crate::report::notice(crate::report::Level::Warning, format!("hook: {n}"));
            }
            for c in v.context {
                blocks.push(obj! { "type" => "text", "text" => c });
            }
        }
        Value::Array(blocks)
    }
}

/// Passes one event of a child's loop up: its messages, tagged with the
/// Agent call that started it (tool uses counted), a grandchild's reports
/// unchanged, its notices to whoever watches the session.
fn relay_event(relay: &Relay, parent_call: &str, ev: &Event<'_>, tool_uses: &mut u64) {
    let (kind, ids, message) = match ev {
        Event::Assistant { id, message } => (MessageKind::Assistant, vec![id.to_string()], message),
        Event::ToolResults { ids, message } => (MessageKind::ToolResults, ids.to_vec(), message),
        Event::Relayed(r) => {
            relay.push((*r).clone());
            return;
        }
        Event::Report(crate::report::Report::Notice { level, text }) => {
            crate::report::notice(*level, text.clone());
            return;
        }
        _ => return,
    };
    if kind == MessageKind::Assistant {
        *tool_uses += message
            .get("content")
            .and_then(Value::as_array)
            .map_or(0, |b| {
                b.iter()
                    .filter(|b| b.str_field("type") == Some("tool_use"))
                    .count() as u64
            });
    }
    relay.push(Relayed::Message {
        parent_tool_use_id: parent_call.to_string(),
        kind,
        ids,
        message: (*message).clone(),
    });
}

impl crate::tools::Subagents for Host {
    fn run<'a>(
        self: Rc<Self>,
        call: AgentCall<'a>,
        ctx: &'a ToolContext,
        call_id: &'a str,
    ) -> crate::tools::LocalFuture<'a, ToolOutput> {
        Box::pin(async move { self.call(call, ctx, call_id).await })
    }
    fn send(&self, to: &str, message: &str) -> Result<(), String> {
        Host::send(self, to, message)
    }
    fn stop(&self, task_id: &str) -> Result<(), String> {
        Host::stop(self, task_id)
    }
}

fn first_chars(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

/// The status word and the text to hand back.
fn summary(ending: &Ending, result: &str) -> (&'static str, String) {
    match ending {
        Ending::Completed => ("completed", result.to_string()),
        Ending::MaxTurns => ("stopped at its turn limit", result.to_string()),
        Ending::Aborted(_) => ("interrupted", "The agent was interrupted.".to_string()),
        Ending::ModelError(e) | Ending::Blocked(e) => ("failed", e.clone()),
        Ending::BudgetExceeded(spent) => ("failed", format!("budget reached (${spent:.4})")),
        Ending::OutputTokensExceeded(n) => (
            "failed",
            format!("output token budget reached ({n} tokens)"),
        ),
        Ending::StructuredOutputRetries(n) => (
            "failed",
            format!("no valid structured output after {n} tries"),
        ),
    }
}
