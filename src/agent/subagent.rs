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
use super::pipeline::{Approver, Pipeline};
use super::{Agent, Ending, Event, Settings};
use crate::abort::{Abort, Reason};
use crate::json::{Map, Value};
use crate::model::RetryPolicy;
use crate::model::client::Client;
use crate::obj;
use crate::policy::{Mode, Policy, Rule};
use crate::session::transcript;
use crate::tools::{Registry, ToolContext, ToolOutput};
pub use defs::AgentDef;

pub const DEFAULT_MAX_TURNS: u32 = 200;

/// What a child inherits from the session.
pub struct Host {
    pub ex: &'static LocalExecutor<'static>,
    pub client: Client,
    pub model: String,
    pub max_tokens: u32,
    pub system: Vec<String>,
    pub retry: RetryPolicy,
    pub context_window: u64,
    /// The parent's permissions when the session started.
    pub mode: Mode,
    pub rules: Vec<Rule>,
    pub extra_dirs: Vec<PathBuf>,
    pub sandbox: Option<crate::sandbox::SandboxPolicy>,
    pub sandbox_auto_allow: bool,
    /// Paths whose writing always asks (see `config::Runtime::protected`).
    pub protected: Vec<PathBuf>,
    /// Tools the parent may use (a child gets at most these).
    pub tools: Vec<String>,
    /// Tools the provider runs (web search) that children offer too.
    pub server_tools: Vec<(String, Value)>,
    pub child_env: crate::config::ChildEnv,
    pub result_limit: Option<usize>,
    pub cwd: PathBuf,
    pub scratch: crate::tools::scratch::Scratch,
    pub hooks: Rc<Hooks>,
    pub approver: Option<Rc<dyn Approver>>,
    /// Definitions (files, the built-in, and any an SDK `initialize` adds).
    pub defs: RefCell<Vec<AgentDef>>,
    /// 0 for the session's own agent.
    pub depth: u32,
    pub max_depth: u32,
    /// Where children's transcripts go (`<session>/subagents/`).
    pub transcript_dir: Option<PathBuf>,
    pub session_id: String,
    /// Where "always" answers are saved.
    pub(crate) local_rules: Option<crate::config::settings::LocalRules>,
    pub background: Rc<Background>,
    /// Messages for this agent from its parent (SendMessage), read at the
    /// start of its next iteration.
    pub inbox: Rc<RefCell<Vec<String>>>,
    /// This agent's background children that are still running.
    pub workers: RefCell<HashMap<String, Worker>>,
    /// Written into every child's system prompt (the coordinator's shared
    /// scratchpad, say).
    pub child_note: Option<String>,
    /// MCP tools and the names kept out of view; a child gets them all,
    /// or those its definition's tool list names.
    pub mcp_tools: Option<(Rc<dyn crate::tools::ToolSource>, Vec<String>)>,
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

impl Host {
    /// Runs the Agent tool's call: in the foreground (the result is the
    /// child's answer) or in the background (the result is its id).
    pub async fn call(
        self: &Rc<Host>,
        input: &Value,
        parent: &ToolContext,
        call_id: &str,
    ) -> ToolOutput {
        if self.depth + 1 > self.max_depth {
            return ToolOutput::error(format!(
                "Sub-agent depth limit reached: this agent is already {} level(s) down and the limit is {} \
                 (TERN_MAX_AGENT_DEPTH). Do this work directly with your own tools.",
                self.depth, self.max_depth
            ));
        }
        let kind = input
            .str_field("subagent_type")
            .unwrap_or("general-purpose");
        let defs = self.defs.borrow().clone();
        let Some(def) = defs.iter().find(|d| d.name == kind) else {
            let known: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
            return ToolOutput::error(format!(
                "No agent type '{kind}'. Available: {}",
                known.join(", ")
            ));
        };
        let prompt = input.str_field("prompt").unwrap_or_default().to_string();
        let description = input.str_field("description").unwrap_or(kind).to_string();
        let model = input
            .str_field("model")
            .filter(|m| !m.is_empty() && *m != "inherit")
            .map(str::to_string)
            .or_else(|| def.model.clone().filter(|m| m != "inherit"))
            .unwrap_or_else(|| self.model.clone());
        let agent_id = format!("agent-{}", &crate::session::new_uuid()[..8]);
        let ack_id = agent_id.clone();
        // The child stops when its parent is interrupted, or on TaskStop.
        let child_abort = Abort::new();
        let (from_parent, to_child) = (parent.abort.clone(), child_abort.clone());
        self.ex
            .spawn(async move {
                from_parent.wait().await;
                to_child.trigger(Reason::Requested);
            })
            .detach();
        let inbox = Rc::new(RefCell::new(Vec::new()));
        let mut child = self.child_agent(def, model, parent, &agent_id, &child_abort, &inbox);
        // What the child spends is the session's (its side requests included).
        let spend = Rc::clone(&parent.spend);
        let transcript_path = self
            .transcript_dir
            .as_ref()
            .map(|dir| dir.join(format!("{agent_id}.jsonl")));
        let mut record = transcript_path
            .as_ref()
            .and_then(|path| transcript::create_at(path, &self.cwd, &self.session_id).ok());
        if let Some(t) = record.as_mut() {
            t.follow_cwd(child.pipeline().ctx().shell_cwd.clone());
        }
        let output_file = transcript_path
            .filter(|_| record.is_some())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let hooks = Rc::clone(&self.hooks);
        let kind = def.name.clone();
        let background = input.get("run_in_background").and_then(Value::as_bool) == Some(true);
        let relay = Rc::clone(&self.relay);
        relay.push(Relayed::TaskStarted {
            task_id: agent_id.clone(),
            tool_use_id: call_id.to_string(),
            description: description.clone(),
            subagent_type: kind.clone(),
            prompt: prompt.clone(),
            background,
            depth: self.depth + 1,
        });
        let parent_call = call_id.to_string();
        let started = std::time::Instant::now();
        let label = description.clone();
        let run = async move {
            let mut prompt_blocks = vec![obj! { "type" => "text", "text" => prompt }];
            // SubagentStart hooks may give the child context of their own.
            if hooks.wants("SubagentStart", &kind) {
                let mut fields = Map::new();
                fields.insert("agent_id", agent_id.as_str());
                fields.insert("agent_type", kind.as_str());
                let v = hooks.run("SubagentStart", &kind, fields).await;
                for n in &v.notices {
                    crate::report::notice(crate::report::Level::Warning, format!("hook: {n}"));
                }
                for c in v.context {
                    prompt_blocks.push(obj! { "type" => "text", "text" => c });
                }
            }
            let prompt_blocks = Value::Array(prompt_blocks);
            let mut tool_uses = 0u64;
            let outcome = child
                .run(prompt_blocks, &mut |ev| {
                    if let Some(t) = record.as_mut() {
                        super::record(t, &ev);
                    }
                    let (kind, ids, message) = match ev {
                        Event::Assistant { id, message } => {
                            (MessageKind::Assistant, vec![id.to_string()], message)
                        }
                        Event::ToolResults { ids, message } => {
                            (MessageKind::ToolResults, ids.to_vec(), message)
                        }
                        // A grandchild's report goes up unchanged.
                        Event::Relayed(r) => {
                            relay.push(r.clone());
                            return;
                        }
                        // The child's notices reach whoever watches the session.
                        Event::Report(crate::report::Report::Notice { level, text }) => {
                            crate::report::notice(*level, text.clone());
                            return;
                        }
                        _ => return,
                    };
                    if kind == MessageKind::Assistant {
                        tool_uses +=
                            message
                                .get("content")
                                .and_then(Value::as_array)
                                .map_or(0, |b| {
                                    b.iter()
                                        .filter(|b| b.str_field("type") == Some("tool_use"))
                                        .count() as u64
                                });
                    }
                    relay.push(Relayed::Message {
                        parent_tool_use_id: parent_call.clone(),
                        kind,
                        ids,
                        message: message.clone(),
                    });
                })
                .await;
            // What the child left running in the background ends with it.
            child.pipeline.ctx().shells.shutdown().await;
            for m in &outcome.model_usage {
                spend.record(&m.model, &m.usage, m.cost_usd);
            }
            let (status, text) = summary(&outcome.ending, &outcome.result);
            let u = &outcome.usage;
            relay.push(Relayed::TaskFinished {
                task_id: agent_id.clone(),
                tool_use_id: parent_call.clone(),
                status: match outcome.ending {
                    Ending::Completed => "completed",
                    Ending::Aborted(_) => "stopped",
                    _ => "failed",
                },
                summary: format!("{label}: {status}. {}", first_chars(&text, 500)),
                output_file,
                total_tokens: u.input_tokens
                    + u.output_tokens
                    + u.cache_creation_input_tokens
                    + u.cache_read_input_tokens,
                tool_uses,
                duration: started.elapsed(),
            });
            if hooks.wants("SubagentStop", &kind) {
                let mut fields = Map::new();
                fields.insert("agent_id", agent_id.as_str());
                fields.insert("agent_type", kind.as_str());
                fields.insert("stop_hook_active", false);
                let _ = hooks.run("SubagentStop", &kind, fields).await;
            }
            (agent_id, outcome)
        };
        if background {
            let bg = Rc::clone(&self.background);
            bg.started();
            self.workers.borrow_mut().insert(
                ack_id.clone(),
                Worker {
                    abort: child_abort,
                    inbox,
                },
            );
            let host = Rc::clone(self);
            let call_id = call_id.to_string();
            let task = self.ex.spawn(async move {
                let (id, outcome) = run.await;
                host.workers.borrow_mut().remove(&id);
                let (status, text) = summary(&outcome.ending, &outcome.result);
                bg.done(format!(
                    "<task-notification>\n<task-id>{id}</task-id>\n<tool-use-id>{call_id}</tool-use-id>\n\
                     <description>{description}</description>\n<status>{status}</status>\n\
                     <result>\n{text}\n</result>\n<turns>{}</turns>\n</task-notification>",
                    outcome.num_turns
                ));
            });
            task.detach();
            return ToolOutput::ok(format!(
                "Started the {kind_name} agent in the background (id {ack_id}). Its result will arrive \
                 as a <task-notification> message when it finishes; carry on meanwhile.",
                kind_name = def.name,
            ));
        }
        let (id, outcome) = run.await;
        let (status, text) = summary(&outcome.ending, &outcome.result);
        let body = format!(
            "{text}\n\n[agent {id} ({}) {status} after {} turns]",
            def.name, outcome.num_turns
        );
        if status == "completed" {
            ToolOutput::ok(body)
        } else {
            ToolOutput::error(body)
        }
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

    fn child_agent(
        &self,
        def: &AgentDef,
        model: String,
        parent: &ToolContext,
        agent_id: &str,
        abort: &Abort,
        inbox: &Rc<RefCell<Vec<String>>>,
    ) -> Agent<'static> {
        let mut registry = Registry::builtin();
        for (name, definition) in &self.server_tools {
            registry.add_server_tool(name, definition.clone());
        }
        // The REPL, when the session has it: a context of the child's own,
        // and the tools its scripts register offered to the child alone.
        #[cfg(feature = "repl")]
        let repl_tools = Rc::new(RefCell::new(Vec::new()));
        #[cfg(feature = "repl")]
        if self.tools.iter().any(|t| t == "REPL") {
            registry.add(Rc::new(crate::tools::repl::Repl));
            registry.set_dynamic(
                Rc::new(crate::tools::repl::RegisteredTools(Rc::clone(&repl_tools))),
                Vec::new(),
            );
        }
        registry.retain(|name| {
            self.tools.iter().any(|t| t == name)
                && def
                    .tools
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|t| t == name))
                && !def.disallowed.iter().any(|t| t == name)
        });
        // MCP tools: all of them, or those the definition's list names
        // (a tool, or `mcp__server` for all of a server's).
        if let Some((source, hidden)) = &self.mcp_tools {
            let mut hidden = hidden.clone();
            hidden.extend(def.disallowed.iter().cloned());
            if let Some(only) = &def.tools {
                registry.limit_dynamic(only.clone());
            }
            registry.set_dynamic(Rc::clone(source), hidden);
        }
        let mut policy = Policy::new(
            self.mode.narrower(def.permission_mode),
            self.rules.clone(),
            &self.cwd,
            &self.extra_dirs,
        );
        policy.set_command_env(crate::policy::CommandEnv::new(self.child_env.vars()));
        policy.sandbox = self.sandbox.clone();
        policy.sandbox_auto_allow = self.sandbox_auto_allow;
        policy.protected = self.protected.clone();
        let mut ctx = ToolContext {
            child_env: self.child_env.clone(),
            sandbox: self.sandbox.clone(),
            result_limit: self.result_limit,
            context_window: Some(self.context_window),
            shells: Rc::new(crate::tools::Shells::new(self.ex)),
            skills: Rc::clone(&parent.skills),
            home: parent.home.clone(),
            shell: parent.shell.clone(),
            ..ToolContext::new(self.cwd.clone(), self.scratch.sub(agent_id), abort.clone())
        };
        // The child knows what the parent has read (and may edit it).
        *ctx.files.borrow_mut() = parent.files.borrow().clone();
        // And shares its web cache and HTTP agents.
        #[cfg(feature = "web")]
        {
            ctx.web = parent.web.clone();
        }
        #[cfg(feature = "repl")]
        {
            ctx.sampler = parent.sampler.clone();
            ctx.repl = parent.repl.for_child(repl_tools);
        }
        let background = Rc::new(Background::default());
        let host = Rc::new(Host {
            ex: self.ex,
            client: self.client.clone(),
            model: model.clone(),
            max_tokens: self.max_tokens,
            system: self.system.clone(),
            retry: self.retry,
            context_window: self.context_window,
            mode: policy.mode,
            rules: self.rules.clone(),
            extra_dirs: self.extra_dirs.clone(),
            sandbox: self.sandbox.clone(),
            sandbox_auto_allow: self.sandbox_auto_allow,
            protected: self.protected.clone(),
            tools: registry.names(),
            server_tools: self.server_tools.clone(),
            child_env: self.child_env.clone(),
            result_limit: self.result_limit,
            cwd: self.cwd.clone(),
            scratch: self.scratch.clone(),
            hooks: Rc::clone(&self.hooks),
            approver: self.approver.clone(),
            defs: RefCell::new(self.defs.borrow().clone()),
            depth: self.depth + 1,
            max_depth: self.max_depth,
            transcript_dir: self.transcript_dir.clone(),
            session_id: self.session_id.clone(),
            local_rules: self.local_rules.clone(),
            background,
            inbox: Rc::clone(inbox),
            workers: RefCell::new(HashMap::new()),
            child_note: self.child_note.clone(),
            mcp_tools: self.mcp_tools.clone(),
            relay: Rc::default(),
        });
        ctx.subagents = Some(Rc::clone(&host) as Rc<dyn crate::tools::Subagents>);
        let mut pipeline = Pipeline::new(
            registry,
            policy,
            ctx,
            self.approver.clone(),
            Rc::clone(&self.hooks),
        );
        pipeline.set_subagents(host);
        if let Some(rules) = &self.local_rules {
            pipeline.set_local_rules(rules.clone());
        }
        let mut system = self.system.clone();
        if !def.prompt.trim().is_empty() {
            system.push(def.prompt.clone());
        }
        if let Some(note) = &self.child_note {
            system.push(note.clone());
        }
        Agent::new(
            self.ex,
            self.client.clone(),
            Settings {
                model,
                max_tokens: self.max_tokens,
                system,
                max_turns: Some(def.max_turns.unwrap_or(DEFAULT_MAX_TURNS)),
                retry: self.retry,
                fallback_models: Vec::new(),
                max_budget_usd: None,
                context_window: self.context_window,
                fallback_after: crate::config::DEFAULT_FALLBACK_AFTER,
                structured: None,
            },
            pipeline.share(),
            abort.clone(),
            Vec::new(),
        )
    }
}

impl crate::tools::Subagents for Host {
    fn run<'a>(
        self: Rc<Self>,
        input: &'a Value,
        ctx: &'a ToolContext,
        call_id: &'a str,
    ) -> crate::tools::LocalFuture<'a, ToolOutput> {
        Box::pin(async move { self.call(input, ctx, call_id).await })
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
        Ending::StructuredOutputRetries(n) => (
            "failed",
            format!("no valid structured output after {n} tries"),
        ),
    }
}
