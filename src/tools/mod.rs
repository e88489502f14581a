//! The built-in tools and the contract every tool (built-in or, later, MCP)
//! follows.
//!
//! A tool describes itself (name, description, JSON schema), says whether
//! a given input only reads (`is_read_only`) and may overlap with other
//! calls (`is_concurrency_safe`), and runs. It never asks the user anything:
//! permission is decided before `call` by the policy plane.

pub(crate) mod agent;
mod ask;
mod bash;
pub(crate) mod deferred;
mod edit;
mod files;
mod glob;
mod grep;
pub(crate) mod input;
#[cfg(feature = "notebooks")]
mod notebook;
mod read;
#[cfg(feature = "repl")]
pub(crate) mod repl;
mod schema;
pub mod scratch;
mod skill;
mod spend;
pub use spend::Spend;
pub mod structured;
mod todo;
#[cfg(feature = "web")]
pub mod web;
mod write;

use std::cell::RefCell;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;

use crate::abort::Abort;
use crate::json::Value;
use crate::obj;
pub use crate::policy::{Access, Kind, PathUse, Permit};

pub(crate) use ask::questions;
pub use bash::Shells;
pub(crate) use edit::first_change as edit_change;
pub use files::FileStamps;
pub use schema::coerce_and_check as check_input;

pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What a call produced; `is_error` results go back to the model as such.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Attachments shown to the model beside the text, as (media type,
    /// base64): `image/*` become image blocks, `application/pdf` a
    /// document block (see `agent::executor::tool_result`).
    pub images: Vec<(String, String)>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// One side request (WebFetch's question about a page, the REPL's
/// `haiku()`): None when the turn is interrupted first. What it used is
/// the session's spending.
#[cfg(any(feature = "web", feature = "repl"))]
pub(crate) async fn ask_side(
    ctx: &ToolContext,
    side: &crate::model::once::SideModel,
    parts: &crate::model::request::RequestParts<'_>,
) -> Option<Result<crate::model::once::Answer, crate::model::ApiError>> {
    let abort = ctx.abort.clone();
    let answer = smol::future::or(
        async { Some(crate::model::once::complete(&side.client, parts).await) },
        async move {
            abort.wait().await;
            None
        },
    )
    .await;
    if let Some(Ok(a)) = &answer {
        let cost = crate::model::price::cost(&side.model, &a.usage);
        ctx.spend.record(&side.model, &a.usage, cost);
    }
    answer
}

/// The native timeout the file tools are known by (Read, Write, Edit,
/// Glob, Grep): not a limit they enforce, the base of the REPL's watchdog.
pub(crate) const FILE_TOOL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a question about a call is about, for whoever answers it: the
/// approvers show and offer by this, never by a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// Whether the call may run: its preview, yes or no, and the rule a
    /// yes may add.
    Permission,
    /// Whether it may change files: a yes may also accept edits for the
    /// rest of the session.
    Edit,
    /// Questions only a person answers (AskUserQuestion): the answers
    /// become the call's input.
    Answers,
    /// A plan to approve (ExitPlanMode): a yes also says which mode
    /// follows.
    Plan,
}

pub trait Tool {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// Borrowed for every tool whose schema is fixed: built-in ones parse
    /// theirs once ([`input::Schema`]), MCP ones keep what the server sent.
    fn input_schema(&self) -> std::borrow::Cow<'_, Value>;
    fn kind(&self) -> Kind;
    /// True when this input cannot change anything outside tern.
    fn is_read_only(&self, input: &Value) -> bool;
    /// True when this call may run alongside others. Decided once, on the
    /// model's original input, when its block closes (`ctx` says where
    /// the shell is then).
    fn is_concurrency_safe(&self, input: &Value, _ctx: &ToolContext) -> bool {
        self.is_read_only(input)
    }
    /// The input field naming the one file this tool opens, and how it
    /// opens it: what `paths` reads by default.
    fn path_field(&self) -> Option<(Access, &'static str)> {
        None
    }
    /// The paths this input will open, as written. Policy resolves and
    /// checks them; `call` gets them back, resolved, on its permit. Read
    /// from the path field alone, so a question about a call whose other
    /// fields are wrong still names its file.
    fn paths(&self, input: &Value) -> Vec<PathUse> {
        self.path_field().map_or_else(Vec::new, |(access, field)| {
            let raw = input::Fields::of(input).and_then(|f| f.text(field));
            vec![PathUse::new(access, raw.unwrap_or_default())]
        })
    }
    /// Input fields only whoever answers the call's question may set (the
    /// answers to AskUserQuestion): removed from what the model sends.
    fn approver_fields(&self) -> &[&str] {
        &[]
    }
    /// What a question about this call is about.
    fn topic(&self) -> Topic {
        match self.kind() {
            Kind::Edit => Topic::Edit,
            _ => Topic::Permission,
        }
    }
    /// The permission mode a person's yes to this call moves a session in
    /// plan mode to, unless the answer names one (ExitPlanMode).
    fn mode_after(&self) -> Option<crate::policy::Mode> {
        None
    }
    /// How long this call runs at most by the tool's own reckoning, when
    /// it has one: the REPL's watchdog for an inner call is derived from it.
    fn native_timeout(&self, _input: &Value) -> Option<std::time::Duration> {
        None
    }
    /// Checks beyond the schema (ranges, relations between fields).
    fn validate(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        Ok(())
    }
    /// Runs the call. The permit proves the pipeline decided it may run.
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput>;
}

/// The facts of a call to `tool` with `input`, as policy decides over them.
pub fn facts<'a>(tool: &'a dyn Tool, id: &'a str, input: &'a Value) -> crate::policy::Call<'a> {
    crate::policy::Call {
        id,
        tool: tool.name(),
        kind: tool.kind(),
        read_only: std::cell::LazyCell::new(Box::new(move || tool.is_read_only(input))),
        input,
        paths: tool.paths(input),
        cwd: None,
        bash: std::cell::OnceCell::new(),
    }
}

/// Session state the tools share.
pub struct ToolContext {
    /// The project root: where file tools resolve relative paths.
    pub(crate) cwd: PathBuf,
    /// Where the next Bash command starts: the directory the last one
    /// ended in (see `bash::cwd`). Each agent has its own, starting at
    /// `cwd`.
    pub(crate) shell_cwd: crate::session::ShellCwd,
    /// Where oversized outputs are spilled (see `scratch`).
    pub(crate) scratch: scratch::Scratch,
    pub(crate) files: RefCell<FileStamps>,
    pub(crate) todos: RefCell<Value>,
    pub(crate) abort: Abort,
    /// The environment of the commands tern runs: the settings' `env`
    /// set, provider credentials removed.
    pub(crate) child_env: crate::config::ChildEnv,
    /// Longest tool result in characters (small context windows).
    pub(crate) result_limit: Option<usize>,
    /// The model's context window in tokens, when known: images and
    /// documents are sized to it.
    pub(crate) context_window: Option<u64>,
    /// Starts sub-agents for the Agent tool.
    pub(crate) subagents: Option<Rc<dyn Subagents>>,
    /// Background shells started by Bash (`run_in_background`).
    pub(crate) shells: Rc<Shells>,
    /// Model use inside tool calls, for the agent to count.
    pub(crate) spend: Rc<Spend>,
    /// The skills the Skill tool loads.
    pub(crate) skills: Rc<Vec<crate::config::skills::Skill>>,
    /// Where a running call's progress goes (the pipeline's reports).
    pub(crate) reports: Option<Rc<crate::report::Mailbox<crate::report::Report>>>,
    /// WebFetch's HTTP agents, cache and small model.
    #[cfg(feature = "web")]
    pub(crate) web: Option<Rc<web::Web>>,
    /// The session's `HOME`, for `~` in paths (as the policy reads them).
    pub(crate) home: Option<PathBuf>,
    /// The shell Bash commands run in (the configuration's choice).
    pub(crate) shell: String,
    /// The pipeline this context belongs to, for tools that call tools
    /// (REPL). Weak: the pipeline owns this context.
    pub(crate) inner: RefCell<Option<std::rc::Weak<dyn InnerCalls>>>,
    /// The editor the session runs in (an ACP client), whose open
    /// buffers Read sees instead of the saved files.
    pub(crate) editor: Option<Rc<dyn Editor>>,
    /// This agent's REPL context.
    #[cfg(feature = "repl")]
    pub(crate) repl: repl::Slot,
    /// The small model the REPL's `haiku()` asks.
    #[cfg(feature = "repl")]
    pub(crate) sampler: Option<Rc<crate::model::once::SideModel>>,
}

/// What a tool that calls other tools needs from the pipeline (the agent
/// plane implements it): each inner call goes through every step an
/// outer one does, under its own call id.
pub trait InnerCalls {
    /// Runs one call; answers the call id it ran under, and its output.
    fn run_inner(&self, name: String, input: Value) -> LocalFuture<'_, (String, ToolOutput)>;
    /// The tools an inner call may name.
    fn inner_names(&self) -> Vec<String>;
}

/// An editor that holds files open (an ACP client offering `fs`): what
/// a person sees there, saved or not, is what the file says. Asked only
/// for a path policy has already checked.
pub trait Editor {
    /// The text of `path` as the editor has it; `Err` when it cannot
    /// say (the tool then reads the file from disk).
    fn read_text(&self, path: &Path) -> LocalFuture<'_, Result<String, String>>;
    /// Whether the editor takes [`Editor::write_text`].
    fn takes_writes(&self) -> bool;
    /// Puts `text` in the editor's buffer of `path`.
    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: String,
    ) -> LocalFuture<'a, Result<(), String>>;
}

/// Keeps an editor's open buffer in step with a change Write or Edit made
/// on disk. The disk stays the one truth (rewind's checkpoints and the
/// freshness check read it); the buffer is given the new text only when,
/// just before the change, it held exactly what the disk held — a buffer
/// with unsaved changes the model never saw is left to the editor's own
/// reload, never overwritten.
pub(crate) struct BufferSync {
    editor: Rc<dyn Editor>,
}

impl BufferSync {
    /// Before the change: `Some` when the buffer and the disk agree.
    pub(crate) async fn before(ctx: &ToolContext, path: &Path) -> Option<BufferSync> {
        let editor = Rc::clone(ctx.editor.as_ref().filter(|e| e.takes_writes())?);
        let owned = path.to_path_buf();
        let disk = smol::unblock(move || std::fs::read_to_string(owned))
            .await
            .ok()?;
        let buffer = editor.read_text(path).await.ok()?;
        (buffer == disk).then_some(BufferSync { editor })
    }

    /// After the change: the buffer gets the disk's new text. A failure
    /// changes nothing the tool did; the editor shows the disk's file.
    pub(crate) async fn after(self, path: &Path) {
        let owned = path.to_path_buf();
        let Ok(text) = smol::unblock(move || std::fs::read_to_string(owned)).await else {
            return;
        };
        let _ = self.editor.write_text(path, text).await;
    }
}

/// What the Agent, SendMessage and TaskStop tools need from whoever runs
/// sub-agents (the agent plane), without tools depending on it.
pub trait Subagents {
    /// Runs an Agent call: its answer, or for a background one its id.
    fn run<'a>(
        self: Rc<Self>,
        call: agent::AgentCall<'a>,
        ctx: &'a ToolContext,
        call_id: &'a str,
    ) -> LocalFuture<'a, ToolOutput>;
    /// Queues a message for a running background agent.
    fn send(&self, to: &str, message: &str) -> Result<(), String>;
    /// Interrupts a running background agent.
    fn stop(&self, task_id: &str) -> Result<(), String>;
}

impl ToolContext {
    pub fn new(cwd: PathBuf, scratch: impl Into<scratch::Scratch>, abort: Abort) -> Self {
        ToolContext {
            shell_cwd: crate::session::ShellCwd::new(&cwd),
            cwd,
            scratch: scratch.into(),
            files: RefCell::new(FileStamps::default()),
            todos: RefCell::new(Value::Array(Vec::new())),
            abort,
            child_env: crate::config::ChildEnv::new(Vec::new(), "", &[], &[]),
            result_limit: None,
            context_window: None,
            subagents: None,
            shells: Rc::default(),
            spend: Rc::default(),
            skills: Rc::default(),
            reports: None,
            #[cfg(feature = "web")]
            web: None,
            home: None,
            // Sessions take the configuration's choice; others (tests,
            // benchmarks) run bash.
            shell: "bash".to_string(),
            inner: RefCell::new(None),
            editor: None,
            #[cfg(feature = "repl")]
            repl: repl::Slot::default(),
            #[cfg(feature = "repl")]
            sampler: None,
        }
    }

    /// The pipeline inner calls go through, while it is alive.
    pub fn inner_calls(&self) -> Option<Rc<dyn InnerCalls>> {
        self.inner
            .borrow()
            .as_ref()
            .and_then(std::rc::Weak::upgrade)
    }

    /// Tokens the images or document of one result may take: half the
    /// window, and no more than the text of a result may take in a small
    /// one (about four characters a token). None: only the API's limits.
    pub fn media_budget(&self) -> Option<u64> {
        let by_window = self.context_window.map(|w| w / 2);
        let by_limit = self.result_limit.map(|l| l as u64 / 4);
        match (by_window, by_limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Tells whoever watches what running call `id` is doing now.
    pub fn progress(&self, id: &str, text: String) {
        if let Some(r) = &self.reports {
            r.push(crate::report::Report::ToolProgress {
                id: id.to_string(),
                text,
            });
        }
    }

    /// Where `~` and relative paths point for the tools.
    pub fn base(&self) -> crate::policy::Base {
        crate::policy::Base::new(&self.cwd, self.home.clone())
    }

    /// Resolves a path from the model the way policy does, for checks
    /// made before the decision (validation). What a tool opens comes
    /// from its permit, never from here.
    pub fn resolve(&self, path: &str) -> PathBuf {
        crate::policy::resolve(path, &self.base()).unwrap_or_else(|_| self.cwd.join(path))
    }

    /// A path for display: relative to the working directory when inside it.
    /// `path` as a search shows it: relative to the shell's directory
    /// when below it (Claude Code's searches list from there), else whole.
    pub(crate) fn display_here(&self, path: &Path) -> String {
        let here = self.here();
        if here == self.cwd {
            return self.display(path);
        }
        path.strip_prefix(&here)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// The shell's directory, as the session's own spelling when it is
    /// the project root (the shell records it with links resolved).
    pub(crate) fn here(&self) -> PathBuf {
        let here = self.shell_cwd.get();
        if here == crate::policy::canonical(&self.cwd) {
            self.cwd.clone()
        } else {
            here
        }
    }

    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.cwd)
            .or_else(|_| path.strip_prefix(crate::policy::canonical(&self.cwd)))
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

pub struct Registry {
    tools: Vec<Rc<dyn Tool>>,
    compact: bool,
    /// Tools that come and go while the session runs (MCP servers).
    dynamic: Vec<Rc<dyn ToolSource>>,
    /// Dynamic tools kept out of view (bare names in deny rules).
    hidden: Vec<String>,
    /// When set, only the changing catalogs' tools these name are offered
    /// (a sub-agent's `tools` list naming MCP tools or servers).
    dynamic_only: Option<Vec<String>>,
    /// Tools the provider runs itself (the Messages API's web search):
    /// (name tern and rules know it by, the definition sent).
    server: Vec<(String, Value)>,
    /// MCP tools held back from a window they would crowd.
    deferral: Option<Rc<deferred::Deferral>>,
}

/// Does a tool list's entry cover this tool name? The name itself,
/// `mcp__server` for every tool of that server, or a prefix ending in `*`.
pub fn covers(entry: &str, name: &str) -> bool {
    if let Some(prefix) = entry.strip_suffix('*') {
        return name.starts_with(prefix);
    }
    entry == name
        || (entry.starts_with("mcp__")
            && entry.matches("__").count() == 1
            && name
                .strip_prefix(entry)
                .is_some_and(|rest| rest.starts_with("__")))
}

/// A catalog that may change between model iterations.
pub trait ToolSource {
    fn tools(&self) -> Vec<Rc<dyn Tool>>;
    /// Brings a catalog that announced a change up to date.
    fn refresh(&self) -> LocalFuture<'_, ()> {
        Box::pin(async {})
    }
    /// Slash commands it offers, as (name without `/`, description):
    /// MCP prompts.
    fn commands(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// A prompt that is one of its commands, as the blocks to send
    /// instead (or why not); `None` when the text is not its own.
    fn expand<'a>(&'a self, _text: &'a str) -> LocalFuture<'a, Option<Result<Vec<Value>, String>>> {
        Box::pin(async { None })
    }
    /// What a prompt names that this catalog holds (`@server:uri`), as
    /// blocks to attach to it.
    fn attach<'a>(&'a self, _text: &'a str) -> LocalFuture<'a, Vec<Value>> {
        Box::pin(async { Vec::new() })
    }
    /// News for the model before its next request (a changed resource).
    fn news(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Registry {
    /// The built-in tools, in the order they are advertised.
    pub fn builtin() -> Registry {
        let mut tools: Vec<Rc<dyn Tool>> = vec![
            Rc::new(bash::Bash),
            Rc::new(bash::BashOutput),
            Rc::new(bash::KillShell),
            Rc::new(read::Read),
            Rc::new(write::Write),
            Rc::new(edit::Edit),
            #[cfg(feature = "notebooks")]
            Rc::new(notebook::NotebookEdit),
            Rc::new(glob::Glob),
            Rc::new(grep::Grep),
        ];
        #[cfg(feature = "web")]
        tools.push(Rc::new(web::WebFetch));
        tools.push(Rc::new(todo::TodoWrite));
        tools.push(Rc::new(agent::AgentTool));
        tools.push(Rc::new(ask::AskUserQuestion));
        tools.push(Rc::new(ask::ExitPlanMode));
        tools.push(Rc::new(skill::Skill));
        Registry::new(tools)
    }

    /// A coordinator's tools: it delegates, it does not work itself.
    pub fn coordinator() -> Registry {
        Registry::new(vec![
            Rc::new(agent::AgentTool),
            Rc::new(agent::SendMessage),
            Rc::new(agent::TaskStop),
        ])
    }

    /// A registry of exactly these tools.
    pub fn new(tools: Vec<Rc<dyn Tool>>) -> Registry {
        Registry {
            tools,
            compact: false,
            dynamic: Vec::new(),
            hidden: Vec::new(),
            dynamic_only: None,
            server: Vec::new(),
            deferral: None,
        }
    }

    /// Adds a tool (one the configuration turns on).
    pub fn add(&mut self, tool: Rc<dyn Tool>) {
        self.tools.push(tool);
    }

    /// Offers a tool the provider runs (nothing here runs it): its
    /// definition goes into the request as it is, its calls and results
    /// come back as content blocks kept as they are.
    pub fn add_server_tool(&mut self, name: &str, definition: Value) {
        self.server.retain(|(n, _)| n != name);
        self.server.push((name.to_string(), definition));
    }

    /// The provider-run tools offered, for sub-agents to offer too.
    pub fn server_tools(&self) -> Vec<(String, Value)> {
        self.server.clone()
    }

    /// A tool of this name is offered (run here or by the provider).
    pub fn has(&self, name: &str) -> bool {
        self.server.iter().any(|(n, _)| n == name) || self.get(name).is_some()
    }

    /// Offers only the changing catalogs' tools that these names cover:
    /// a tool's own name, `mcp__server` for all of a server's, or a
    /// name ending in `*`.
    pub fn limit_dynamic(&mut self, only: Vec<String>) {
        self.dynamic_only = Some(only);
    }

    /// Adds a changing catalog; `hidden` names are never offered.
    pub fn set_dynamic(&mut self, source: Rc<dyn ToolSource>, hidden: Vec<String>) {
        self.dynamic.push(source);
        self.hidden.extend(hidden);
    }

    /// Has a catalog that may change while the session runs.
    pub fn is_dynamic(&self) -> bool {
        !self.dynamic.is_empty()
    }

    /// Catches up with changed catalogs before a request is built.
    pub async fn refresh(&self) {
        for d in &self.dynamic {
            d.refresh().await;
        }
    }

    /// The slash commands the changing catalogs offer.
    pub fn commands(&self) -> Vec<(String, String)> {
        self.dynamic.iter().flat_map(|d| d.commands()).collect()
    }

    /// A prompt expanded by the catalog whose command it is, if any.
    pub async fn expand(&self, text: &str) -> Option<Result<Vec<Value>, String>> {
        for d in &self.dynamic {
            if let Some(done) = d.expand(text).await {
                return Some(done);
            }
        }
        None
    }

    /// What a prompt names from the catalogs, to attach to it.
    pub async fn attach(&self, text: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for d in &self.dynamic {
            out.extend(d.attach(text).await);
        }
        out
    }

    /// News from the catalogs for the model.
    pub fn news(&self) -> Vec<String> {
        self.dynamic.iter().flat_map(|d| d.news()).collect()
    }

    fn dynamic_tools(&self) -> Vec<Rc<dyn Tool>> {
        self.dynamic
            .iter()
            .flat_map(|d| d.tools())
            .filter(|t| !self.hidden.iter().any(|h| covers(h, t.name())))
            .filter(|t| {
                // The limit is on MCP tools; a child's own registered
                // REPL tools are its own.
                !t.name().starts_with("mcp__")
                    || self
                        .dynamic_only
                        .as_ref()
                        .is_none_or(|only| only.iter().any(|p| covers(p, t.name())))
            })
            .collect()
    }

    /// Describe tools briefly (first sentence, no per-field prose): for
    /// small context windows.
    pub fn set_compact(&mut self, compact: bool) {
        self.compact = compact;
    }

    /// Holds MCP tools back behind ToolSearch when their definitions
    /// would take more of `context_window` than `search` allows.
    pub fn defer_mcp(&mut self, search: crate::context::HoldBack, context_window: u64) {
        self.deferral = deferred::Deferral::new(search, context_window);
    }

    /// A resumed conversation's loaded MCP tools are offered again.
    pub fn reload_deferred(&self, history: &[Value]) {
        if let Some(d) = &self.deferral {
            d.reload(history);
        }
    }

    /// The tool a call names: one offered, one held back (a call reaches
    /// it, through the same checks), or ToolSearch while it is offered.
    pub fn get(&self, name: &str) -> Option<Rc<dyn Tool>> {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .or_else(|| self.dynamic_tools().into_iter().find(|t| t.name() == name))
            .or_else(|| {
                let d = self.deferral.as_ref().filter(|d| d.is_offered())?;
                (name == deferred::NAME)
                    .then(|| Rc::new(deferred::ToolSearch(Rc::clone(d))) as Rc<dyn Tool>)
            })
    }

    /// What a request offers by name (a held-back tool is named too: it
    /// can be loaded and called).
    pub fn names(&self) -> Vec<String> {
        let (dynamic, mcp, held_back) = self.split_dynamic();
        self.tools
            .iter()
            .chain(&dynamic)
            .map(|t| t.name().to_string())
            .chain(held_back.then(|| deferred::NAME.to_string()))
            .chain(mcp.iter().map(|(t, _)| t.name().to_string()))
            .chain(self.server.iter().map(|(n, _)| n.clone()))
            .collect()
    }

    /// Keeps only the tools `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|t| keep(t.name()));
        self.server.retain(|(n, _)| keep(n.as_str()));
    }

    /// The `tools` array of a request. Each schema is made from its tool
    /// here, once per run of the loop, and moved into its definition: a
    /// copy kept on the side and cloned was a sixth of a one-turn run.
    /// Held-back MCP tools give way to ToolSearch; those it loaded follow.
    pub fn definitions(&self) -> Vec<Value> {
        let (dynamic, mcp, held_back) = self.split_dynamic();
        let mut out: Vec<Value> = self
            .tools
            .iter()
            .chain(&dynamic)
            .map(|t| self.definition(t.as_ref()))
            .collect();
        match self.deferral.as_ref() {
            Some(d) if held_back => {
                d.set_catalog(mcp.iter().map(|(t, _)| Rc::clone(t)).collect());
                out.push(d.definition(self.compact));
                out.extend(
                    mcp.into_iter()
                        .filter(|(t, _)| d.is_loaded(t.name()))
                        .map(|(_, v)| v),
                );
            }
            d => {
                if let Some(d) = d {
                    d.set_catalog(Vec::new());
                }
                out.extend(mcp.into_iter().map(|(_, v)| v));
            }
        }
        out.extend(self.server.iter().map(|(_, d)| d.clone()));
        out
    }

    /// The changing catalogs' tools other than MCP ones; the MCP tools
    /// with their definitions; and whether those are held back.
    #[allow(clippy::type_complexity)]
    fn split_dynamic(&self) -> (Vec<Rc<dyn Tool>>, Vec<(Rc<dyn Tool>, Value)>, bool) {
        let (mcp, other): (Vec<_>, Vec<_>) = self
            .dynamic_tools()
            .into_iter()
            .partition(|t| t.name().starts_with("mcp__"));
        let mcp: Vec<(Rc<dyn Tool>, Value)> = mcp
            .into_iter()
            .map(|t| {
                let def = self.definition(t.as_ref());
                (t, def)
            })
            .collect();
        let held_back = self.deferral.as_ref().is_some_and(|d| {
            let bytes: usize = mcp.iter().map(|(_, v)| v.to_json().len()).sum();
            d.holds_back(crate::context::estimate_bytes(bytes))
        });
        (other, mcp, held_back)
    }

    fn definition(&self, t: &dyn Tool) -> Value {
        let schema = t.input_schema().into_owned();
        if self.compact {
            obj! {
                "name" => t.name(),
                "description" => first_sentence(t.description()),
                "input_schema" => without_descriptions(&schema),
            }
        } else {
            obj! {
                "name" => t.name(),
                "description" => t.description(),
                "input_schema" => schema,
            }
        }
    }
}

/// Up to the first full stop followed by a space (or the whole text).
fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |i| &text[..=i])
}

/// The schema with every `description` removed: field names carry most
/// of the meaning, and a small window cannot afford the prose.
fn without_descriptions(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = crate::json::Map::new();
    for (k, v) in map.iter() {
        match (k, v) {
            ("description", Value::String(_)) => {}
            // Property names are data, not keywords: keep them all.
            ("properties", Value::Object(props)) => {
                let mut kept = crate::json::Map::new();
                for (name, sub) in props.iter() {
                    kept.insert(name, without_descriptions(sub));
                }
                out.insert(k, Value::Object(kept));
            }
            ("items", sub) => out.insert(k, without_descriptions(sub)),
            _ => out.insert(k, v.clone()),
        }
    }
    Value::Object(out)
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub fn cut_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_schemas_are_objects_with_properties() {
        let reg = Registry::builtin();
        for name in reg.names() {
            let schema = reg.get(&name).unwrap().input_schema().into_owned();
            assert_eq!(schema.str_field("type"), Some("object"), "{name}");
            assert!(
                schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some(),
                "{name}"
            );
        }
    }

    /// Each tool's reader takes every input its schema lets through: a
    /// field read as the wrong type would fail calls the schema allowed.
    #[test]
    fn every_builtin_reads_what_its_schema_allows() {
        fn sample(schema: &Value) -> Value {
            if let Some(first) = schema.get("enum").and_then(Value::as_array) {
                return first[0].clone();
            }
            match schema.str_field("type") {
                Some("string") => Value::from("x"),
                Some("integer" | "number") => Value::from(1i64),
                Some("boolean") => Value::Bool(true),
                Some("array") => Value::Array(Vec::new()),
                _ => obj! {},
            }
        }
        let (ctx, _dir) = testing::context();
        let mut tools = Registry::builtin().tools;
        tools.extend(Registry::coordinator().tools);
        #[cfg(feature = "repl")]
        tools.push(Rc::new(repl::Repl));
        for tool in tools {
            let schema = tool.input_schema().into_owned();
            let props = schema.get("properties").and_then(Value::as_object).unwrap();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut least = crate::json::Map::new();
            let mut all = crate::json::Map::new();
            for (name, sub) in props.iter() {
                if required.contains(&name) {
                    least.insert(name, sample(sub));
                }
                all.insert(name, sample(sub));
            }
            for input in [Value::Object(least), Value::Object(all)] {
                check_input(&schema, &mut input.clone()).unwrap();
                if let Err(e) = tool.validate(&input, &ctx) {
                    assert!(
                        !e.contains("` must be") && !e.contains("` is required"),
                        "{}: its reader refused {input:?}: {e}",
                        tool.name()
                    );
                }
            }
        }
    }

    /// What the approvers go by: a question's topic, from the tool.
    #[test]
    fn each_builtin_says_what_a_question_about_it_is() {
        let reg = Registry::builtin();
        let topic = |name: &str| reg.get(name).unwrap().topic();
        assert_eq!(topic("AskUserQuestion"), Topic::Answers);
        assert_eq!(topic("ExitPlanMode"), Topic::Plan);
        for name in ["Edit", "Write"] {
            assert_eq!(topic(name), Topic::Edit, "{name}");
        }
        #[cfg(feature = "notebooks")]
        assert_eq!(topic("NotebookEdit"), Topic::Edit);
        for name in [
            "Bash",
            "Read",
            "Glob",
            "Grep",
            "Agent",
            "TodoWrite",
            "Skill",
        ] {
            assert_eq!(topic(name), Topic::Permission, "{name}");
        }
    }

    #[test]
    fn retain_keeps_the_tools_named_and_their_schemas() {
        let mut reg = Registry::builtin();
        reg.retain(|n| n != "Bash" && n != "Write" && n != "WebFetch");
        assert_eq!(
            reg.names(),
            [
                "BashOutput",
                "KillShell",
                "Read",
                "Edit",
                #[cfg(feature = "notebooks")]
                "NotebookEdit",
                "Glob",
                "Grep",
                "TodoWrite",
                "Agent",
                "AskUserQuestion",
                "ExitPlanMode",
                "Skill"
            ]
        );
        // Each definition carries its own tool's schema.
        let defs = reg.definitions();
        let edit = defs
            .iter()
            .find(|d| d.str_field("name") == Some("Edit"))
            .unwrap();
        assert!(
            edit.get("input_schema")
                .unwrap()
                .get("properties")
                .unwrap()
                .get("old_string")
                .is_some()
        );
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A context rooted in a fresh temporary directory.
    pub fn context() -> (ToolContext, PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "tern-unit-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let ctx = ToolContext::new(dir.clone(), dir.join(".scratch"), Abort::new());
        (ctx, dir)
    }

    pub fn run(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> ToolOutput {
        smol::block_on(call(tool, ctx, input))
    }

    /// The call as the pipeline makes it once policy said yes.
    pub async fn call(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> ToolOutput {
        let mut input = input;
        if let Err(e) = check_input(&tool.input_schema(), &mut input) {
            return ToolOutput::error(e);
        }
        if let Err(e) = tool.validate(&input, ctx) {
            return ToolOutput::error(e);
        }
        // The paths resolved as policy would, without its decision.
        let base = ctx.base();
        let paths = tool
            .paths(&input)
            .iter()
            .map(|p| crate::policy::resolve(&p.raw, &base).unwrap())
            .collect();
        let permit = Permit::for_tests(paths);
        tool.call(input, ctx, &permit).await
    }
}
