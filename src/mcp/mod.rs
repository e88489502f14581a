//! The MCP client (feature `mcp`): tern as a host of Model Context
//! Protocol servers, over stdio and streamable HTTP.
//!
//! All servers start in parallel. The first turn waits for them only a
//! short while; a slow one keeps connecting in the background (up to
//! MCP_TIMEOUT) and its tools join from the next model iteration, and a
//! broken one is reported with its reason, never blocking the others.
//! Tools are named `mcp__<server>__<tool>` and go through the one
//! permission pipeline like every other tool. `tools/list_changed` makes a
//! new catalog generation. On exit servers get SIGTERM, then SIGKILL.
//!
//! Servers can join while the session runs (an SDK's `initialize` names
//! its own), be reconnected, and be switched off and on again.

pub mod config;
mod content;
pub mod elicit;
mod error;
pub mod oauth;
mod prompts;
mod remote;
mod report;
mod rpc;
pub mod sdk;
pub mod serve;
mod tool;
mod wire;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use smol::LocalExecutor;
use smol::future::FutureExt;

use crate::json::Value;
use crate::obj;
use crate::tools::{Tool, ToolSource};
use config::ServerConfig;
pub use error::McpError;
use rpc::Connection;
pub use rpc::RemoteSetup;

/// How many times in a row a dropped remote server is connected again.
const RECONNECTS: u32 = 5;

/// Protocol versions tern speaks, newest first.
const VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Pending,
    Connected,
    Failed(String),
    /// Switched off by the controller (`mcp_toggle`).
    Disabled,
    /// Defined by the repository and not approved by the user: not started.
    NeedsApproval,
    /// The server wants a sign-in (`tern mcp login NAME`): why.
    NeedsAuth(String),
}

impl Status {
    /// Claude Code's word for it.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Connected => "connected",
            Status::Failed(_) => "failed",
            Status::Disabled => "disabled",
            Status::NeedsApproval => "needs-approval",
            Status::NeedsAuth(_) => "needs-auth",
        }
    }
}

pub struct Server {
    pub name: String,
    /// How it was configured (kept for reconnecting).
    config: ServerConfig,
    /// What the server said about itself in `initialize`.
    server_info: RefCell<Option<Value>>,
    /// The raw `tools/list` entries, for status reports.
    listing: RefCell<Vec<Value>>,
    status: RefCell<Status>,
    conn: RefCell<Option<Rc<Connection>>>,
    tools: RefCell<Vec<Rc<dyn Tool>>>,
    /// Bumped on every new catalog (tools/list_changed).
    pub generation: Cell<u64>,
    /// The server announced a change not yet fetched.
    stale: Cell<bool>,
    with_resources: Cell<bool>,
    tool_timeout: Duration,
    /// Its prompts (slash commands), and whether they changed.
    prompts: RefCell<Vec<prompts::Prompt>>,
    prompts_stale: Cell<bool>,
    /// It takes `resources/subscribe`.
    subscribe: Cell<bool>,
    /// What this session subscribed to, and what changed since.
    subscribed: RefCell<Vec<String>>,
    updated: RefCell<Vec<String>>,
    /// The session's answers to the server's own requests.
    services: Rc<serve::Services>,
    /// The `capabilities` the server declared in `initialize`.
    capabilities: RefCell<Value>,
    /// Calls running now, by progress token: where their progress goes.
    progress: RefCell<Vec<(String, tool::Watch)>>,
}

impl Server {
    /// A notification from the server.
    fn notified(&self, method: &str, params: &Value) {
        match method {
            "notifications/tools/list_changed" => self.stale.set(true),
            "notifications/prompts/list_changed" => self.prompts_stale.set(true),
            "notifications/resources/updated" => {
                if let Some(uri) = params.str_field("uri")
                    && self.subscribed.borrow().iter().any(|u| u == uri)
                    && !self.updated.borrow().iter().any(|u| u == uri)
                {
                    self.updated.borrow_mut().push(uri.to_string());
                }
            }
            "notifications/progress" => self.progressed(params),
            "notifications/message" => {
                let level = params.str_field("level").unwrap_or("info");
                if matches!(level, "error" | "critical" | "alert" | "emergency") {
                    let data = params.get("data").map(Value::to_json).unwrap_or_default();
                    crate::report::notice(
                        crate::report::Level::Warning,
                        format!(
                            "MCP server {} ({level}): {}",
                            self.name,
                            data.chars()
                                .filter(|c| !c.is_control())
                                .take(300)
                                .collect::<String>()
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    pub fn status(&self) -> Status {
        if let (Status::Connected, Some(conn)) = (&*self.status.borrow(), &*self.conn.borrow())
            && let Some(reason) = conn.closed.borrow().clone()
        {
            return Status::Failed(reason);
        }
        self.status.borrow().clone()
    }

    /// A `notifications/progress` for a running call: on its card or line.
    fn progressed(&self, params: &Value) {
        let token = match params.get("progressToken") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_json(),
            None => return,
        };
        let watches = self.progress.borrow();
        if let Some((_, watch)) = watches.iter().find(|(t, _)| *t == token) {
            watch.report(params);
        }
    }

    /// What the server said it offers (tools, prompts, resources, …).
    pub fn offers(&self) -> Vec<String> {
        let caps = self.capabilities.borrow();
        caps.as_object()
            .map(|m| m.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default()
    }

    /// What tern offered the server (elicitation, sampling).
    pub fn granted(&self) -> serve::Offer {
        self.services.offer
    }

    pub fn tool_count(&self) -> usize {
        self.tools.borrow().len()
    }

    pub fn prompt_count(&self) -> usize {
        self.prompts.borrow().len()
    }

    fn connection(&self) -> Result<Rc<Connection>, McpError> {
        if let Status::Failed(reason) = self.status() {
            return Err(McpError::Unavailable {
                server: self.name.clone(),
                reason,
            });
        }
        self.conn
            .borrow()
            .clone()
            .ok_or_else(|| McpError::Starting(self.name.clone()))
    }
}

pub struct Hub {
    servers: RefCell<Vec<Rc<Server>>>,
    ex: &'static LocalExecutor<'static>,
    cwd: std::path::PathBuf,
    /// MCP_TIMEOUT: how long a server may take to start.
    timeout: Duration,
    tool_timeout: Duration,
    /// The SDK's control channel, for servers of type "sdk".
    carrier: RefCell<Option<Rc<dyn sdk::Carrier>>>,
    /// TLS roots and the sign-in store, for remote servers.
    remote: RemoteSetup,
    /// What a started server inherits (credentials removed).
    env: crate::config::ChildEnv,
    /// Elicitation and sampling: what the servers are offered, and who
    /// answers them.
    services: Rc<serve::Services>,
    /// Woken whenever a server settles (connected or failed).
    settled_tx: smol::channel::Sender<()>,
    settled_rx: smol::channel::Receiver<()>,
}

impl ToolSource for Hub {
    fn tools(&self) -> Vec<Rc<dyn Tool>> {
        self.servers
            .borrow()
            .iter()
            // A server connecting again keeps its tools on offer: a call
            // waits for it.
            .filter(|s| matches!(s.status(), Status::Connected | Status::Pending))
            .flat_map(|s| s.tools.borrow().clone())
            .collect()
    }

    fn commands(&self) -> Vec<(String, String)> {
        self.prompt_commands()
    }

    fn expand<'a>(
        &'a self,
        text: &'a str,
    ) -> crate::tools::LocalFuture<'a, Option<Result<Vec<Value>, String>>> {
        Box::pin(self.expand_prompt(text))
    }

    fn attach<'a>(&'a self, text: &'a str) -> crate::tools::LocalFuture<'a, Vec<Value>> {
        Box::pin(self.attach_mentions(text))
    }

    fn news(&self) -> Vec<String> {
        self.resource_news()
    }

    /// A new catalog generation for every server that announced one.
    fn refresh(&self) -> crate::tools::LocalFuture<'_, ()> {
        Box::pin(async move {
            for server in self.servers() {
                if server.prompts_stale.replace(false)
                    && let Ok(conn) = server.connection()
                    && let Ok(list) = prompts::fetch(&conn).await
                {
                    *server.prompts.borrow_mut() = list;
                }
            }
            let stale: Vec<Rc<Server>> = self
                .servers
                .borrow()
                .iter()
                .filter(|s| s.stale.get())
                .cloned()
                .collect();
            for server in stale {
                server.stale.set(false);
                let Ok(conn) = server.connection() else {
                    continue;
                };
                let fetched = fetch_tools(&server, &conn, server.with_resources.get())
                    .or(async {
                        smol::Timer::after(server.tool_timeout).await;
                        Err(McpError::NoAnswer("tools/list".to_string()))
                    })
                    .await;
                match fetched {
                    Ok(catalog) => {
                        *server.tools.borrow_mut() = catalog;
                        server.generation.set(server.generation.get() + 1);
                    }
                    Err(e) => crate::report::notice(
                        crate::report::Level::Warning,
                        format!(
                            "MCP server {}: refreshing its tools failed: {e}",
                            server.name
                        ),
                    ),
                }
            }
        })
    }
}

impl Hub {
    /// Starts every configured server; returns once all have settled or
    /// `first_wait` has passed, whichever is sooner.
    /// `approved` says which repository-defined servers the user approved;
    /// the others are listed but never started. `env` is what a started
    /// server inherits.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        ex: &'static LocalExecutor<'static>,
        configs: Vec<ServerConfig>,
        approved: &dyn Fn(&str) -> bool,
        env: &crate::config::ChildEnv,
        cwd: &std::path::Path,
        timeout: Duration,
        tool_timeout: Duration,
        first_wait: Duration,
        carrier: Option<Rc<dyn sdk::Carrier>>,
        remote: RemoteSetup,
        offer: serve::Offer,
    ) -> Rc<Hub> {
        let (settled_tx, settled_rx) = smol::channel::unbounded();
        let hub = Rc::new(Hub {
            servers: RefCell::new(Vec::new()),
            ex,
            cwd: cwd.to_path_buf(),
            timeout,
            tool_timeout,
            carrier: RefCell::new(carrier),
            remote,
            env: env.clone(),
            services: Rc::new(serve::Services::new(offer)),
            settled_tx,
            settled_rx,
        });
        let (held, started): (Vec<ServerConfig>, Vec<ServerConfig>) = configs
            .into_iter()
            .partition(|c| c.from_project && !approved(&c.name));
        for cfg in held {
            let server = hub.new_server(cfg);
            *server.status.borrow_mut() = Status::NeedsApproval;
            hub.servers.borrow_mut().push(server);
        }
        hub.add(started);
        hub.settle(first_wait).await;
        hub
    }

    /// Who answers the servers' elicitation and sampling requests.
    pub fn services(&self) -> &serve::Services {
        &self.services
    }

    /// Every server, in the order they were added.
    /// How long a server may take to start (MCP_TIMEOUT).
    pub fn start_timeout(&self) -> Duration {
        self.timeout
    }

    pub fn servers(&self) -> Vec<Rc<Server>> {
        self.servers.borrow().clone()
    }

    pub fn server(&self, name: &str) -> Option<Rc<Server>> {
        self.servers
            .borrow()
            .iter()
            .find(|s| s.name == name)
            .cloned()
    }

    /// Starts these servers in the background; one with the name of a
    /// server already there replaces it.
    pub fn add(&self, configs: Vec<ServerConfig>) {
        for cfg in configs {
            let old = {
                let mut servers = self.servers.borrow_mut();
                let at = servers.iter().position(|s| s.name == cfg.name);
                at.map(|i| servers.remove(i))
            };
            if let Some(old) = old {
                self.stop(&old);
            }
            let server = self.new_server(cfg);
            self.servers.borrow_mut().push(Rc::clone(&server));
            self.launch(server);
        }
    }

    fn new_server(&self, cfg: ServerConfig) -> Rc<Server> {
        Rc::new(Server {
            name: cfg.name.clone(),
            config: cfg,
            server_info: RefCell::new(None),
            listing: RefCell::new(Vec::new()),
            status: RefCell::new(Status::Pending),
            conn: RefCell::new(None),
            tools: RefCell::new(Vec::new()),
            generation: Cell::new(0),
            stale: Cell::new(false),
            with_resources: Cell::new(false),
            tool_timeout: self.tool_timeout,
            prompts: RefCell::default(),
            prompts_stale: Cell::new(false),
            subscribe: Cell::new(false),
            subscribed: RefCell::default(),
            updated: RefCell::default(),
            services: Rc::clone(&self.services),
            capabilities: RefCell::default(),
            progress: RefCell::default(),
        })
    }

    fn launch(&self, server: Rc<Server>) {
        let (ex, cwd, timeout) = (self.ex, self.cwd.clone(), self.timeout);
        let carrier = self.carrier.borrow().clone();
        let env = self.env.clone();
        let remote = self.remote.clone();
        let done = self.settled_tx.clone();
        *server.status.borrow_mut() = Status::Pending;
        self.ex
            .spawn(async move {
                let mut drops = 0u32;
                loop {
                    let result = match server.config.transport.clone() {
                        Err(e) => Err(McpError::Config(e)),
                        Ok(transport) => {
                            let attempt = connect(
                                ex,
                                &server,
                                &transport,
                                &cwd,
                                carrier.clone(),
                                &env,
                                &remote,
                            );
                            let limit = async {
                                smol::Timer::after(timeout).await;
                                Err(McpError::StartTimeout(timeout))
                            };
                            attempt.or(limit).await
                        }
                    };
                    let conn = server.conn.borrow().clone();
                    // Switched off while it was starting: stays off.
                    let off = *server.status.borrow() == Status::Disabled;
                    match result {
                        Ok(()) if !off => *server.status.borrow_mut() = Status::Connected,
                        _ => {
                            if let (Err(e), false) = (result, off) {
                                *server.status.borrow_mut() = match e.login_reason() {
                                    Some(why) => Status::NeedsAuth(why.to_string()),
                                    None => Status::Failed(e.to_string()),
                                };
                            }
                            let conn = server.conn.borrow_mut().take();
                            if let Some(c) = conn {
                                c.shutdown(Duration::from_millis(500)).await;
                            }
                        }
                    }
                    let _ = done.send(()).await;
                    // A remote server whose connection drops is connected
                    // again (its stream was the session, or the server ended
                    // it); a local one that exits stays failed.
                    let remote_kind = matches!(
                        server.config.transport,
                        Ok(config::Transport::Http { .. } | config::Transport::Sse { .. })
                    );
                    let Some(conn) = conn.filter(|_| remote_kind) else {
                        break;
                    };
                    if *server.status.borrow() != Status::Connected {
                        break;
                    }
                    let lived = std::time::Instant::now();
                    let _ = conn.ended.1.recv().await;
                    let current = server.conn.borrow().clone();
                    // Stopped on purpose: switched off, replaced or shut down.
                    if !current.is_some_and(|c| Rc::ptr_eq(&c, &conn)) {
                        break;
                    }
                    let why = conn.closed.borrow().clone().unwrap_or_default();
                    drops = if lived.elapsed() > Duration::from_secs(30) {
                        1
                    } else {
                        drops + 1
                    };
                    if drops > RECONNECTS {
                        *server.status.borrow_mut() =
                            Status::Failed(format!("{why}; gave up after {RECONNECTS} reconnects"));
                        break;
                    }
                    *server.status.borrow_mut() = Status::Pending;
                    server.conn.borrow_mut().take();
                    crate::report::notice(
                        crate::report::Level::Info,
                        format!("MCP server {}: {why}; connecting again", server.name),
                    );
                    smol::Timer::after(Duration::from_millis(
                        250 << drops.min(7).saturating_sub(1),
                    ))
                    .await;
                    if *server.status.borrow() != Status::Pending {
                        break;
                    }
                }
            })
            .detach();
    }

    fn stop(&self, server: &Rc<Server>) {
        server.tools.borrow_mut().clear();
        let conn = server.conn.borrow_mut().take();
        if let Some(c) = conn {
            self.ex
                .spawn(async move { c.shutdown(Duration::from_secs(2)).await })
                .detach();
        }
    }

    /// Waits until no server is still starting, or `wait` has passed.
    pub async fn settle(&self, wait: Duration) {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let pending = self
                .servers
                .borrow()
                .iter()
                .any(|s| s.status() == Status::Pending);
            let now = std::time::Instant::now();
            if !pending || now >= deadline {
                return;
            }
            let woke = async {
                let _ = self.settled_rx.recv().await;
                true
            }
            .or(async {
                smol::Timer::at(deadline).await;
                false
            })
            .await;
            if !woke {
                return;
            }
        }
    }

    /// `mcp_reconnect`: closes the server's connection and starts it again.
    pub fn reconnect(&self, name: &str) -> Result<(), McpError> {
        let server = self.server(name).ok_or_else(|| self.unknown(name))?;
        held_for_approval(&server)?;
        self.stop(&server);
        self.launch(server);
        Ok(())
    }

    /// `mcp_toggle`: off closes the server and hides its tools; on starts
    /// it again.
    pub fn toggle(&self, name: &str, enabled: bool) -> Result<(), McpError> {
        let server = self.server(name).ok_or_else(|| self.unknown(name))?;
        held_for_approval(&server)?;
        if enabled {
            if server.status() == Status::Disabled {
                self.launch(server);
            }
        } else {
            *server.status.borrow_mut() = Status::Disabled;
            self.stop(&server);
        }
        Ok(())
    }

    fn unknown(&self, name: &str) -> McpError {
        McpError::Unknown {
            name: name.to_string(),
            configured: self
                .servers
                .borrow()
                .iter()
                .map(|s| s.name.clone())
                .collect(),
        }
    }

    pub async fn shutdown(&self) {
        for s in self.servers() {
            let conn = s.conn.borrow_mut().take();
            if let Some(c) = conn {
                c.shutdown(Duration::from_secs(2)).await;
            }
        }
    }
}

/// An HTTP agent as remote servers get (for `tern mcp login`).
pub fn http_agent(extra_ca_pem: Option<&[u8]>) -> Result<ureq::Agent, String> {
    wire::agent(extra_ca_pem)
}

/// Why a project server did not start, and how to let it.
pub const APPROVAL_HINT: &str = "defined by the project and not approved: add its name to \
enabledMcpjsonServers (or set enableAllProjectMcpServers) in your user settings or --settings";

/// A controller cannot start what the user has not approved.
fn held_for_approval(server: &Server) -> Result<(), McpError> {
    if server.status() == Status::NeedsApproval {
        return Err(McpError::NeedsApproval(server.name.clone()));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn connect(
    ex: &'static LocalExecutor<'static>,
    server: &Rc<Server>,
    transport: &config::Transport,
    cwd: &std::path::Path,
    carrier: Option<Rc<dyn sdk::Carrier>>,
    env: &crate::config::ChildEnv,
    remote: &RemoteSetup,
) -> Result<(), McpError> {
    let remote = RemoteSetup {
        oauth: server.config.oauth.clone(),
        ..remote.clone()
    };
    let conn = Connection::open(ex, transport, cwd, &server.name, carrier, env, &remote)?;
    *server.conn.borrow_mut() = Some(Rc::clone(&conn));
    // Set before anything is asked: a GET stream may speak at once.
    let weak = Rc::downgrade(server);
    conn.on_notification(Box::new(move |method, params| {
        if let Some(server) = weak.upgrade() {
            server.notified(method, params);
        }
    }));
    // Elicitation and sampling wait for a person: each is answered from
    // a task of its own, so the server's other messages keep flowing.
    let (weak, link) = (Rc::downgrade(server), Rc::downgrade(&conn));
    conn.on_request(Box::new(move |id, method, params| {
        let Some(server) = weak.upgrade() else {
            return false;
        };
        let (method, link) = (method.to_string(), link.clone());
        ex.spawn(async move {
            let services = Rc::clone(&server.services);
            let answer = services.answer(&server.name, &method, params).await;
            if let Some(conn) = link.upgrade() {
                conn.reply(id, answer).await;
            }
        })
        .detach();
        true
    }));
    if let config::Transport::Sse { .. } = transport {
        conn.start_legacy(ex).await.map_err(|e| McpError::Step {
            step: "opening the SSE stream",
            source: Box::new(e),
        })?;
    }
    let offer = server.services.offer;
    let init = match initialize(&conn, offer).await {
        // An older server: streamable HTTP is refused, the SSE transport
        // may answer at the same address.
        Err(McpError::Step { source, .. })
            if matches!(transport, config::Transport::Http { .. })
                && matches!(
                    *source,
                    McpError::Http {
                        status: 400 | 404 | 405,
                        ..
                    }
                ) =>
        {
            if let Err(e) = conn.start_legacy(ex).await {
                return Err(McpError::Step {
                    step: "initialize",
                    source: Box::new(McpError::Gone(format!(
                        "streamable HTTP was refused ({source}), and as an SSE server: {e}"
                    ))),
                });
            }
            initialize(&conn, offer).await?
        }
        other => other?,
    };
    let version = init
        .str_field("protocolVersion")
        .unwrap_or_default()
        .to_string();
    if !VERSIONS.contains(&version.as_str()) {
        return Err(McpError::Version {
            theirs: version,
            ours: VERSIONS.join(", "),
        });
    }
    conn.set_protocol(&version);
    *server.server_info.borrow_mut() = init.get("serverInfo").cloned();
    conn.notify("notifications/initialized", obj! {}).await?;
    conn.listen(ex);
    let caps = init.get("capabilities").cloned().unwrap_or_default();
    *server.capabilities.borrow_mut() = caps.clone();
    let with_resources = caps.get("resources").is_some();
    let catalog = fetch_tools(server, &conn, with_resources).await?;
    *server.tools.borrow_mut() = catalog;
    server.generation.set(1);
    server.with_resources.set(with_resources);
    server.subscribe.set(
        caps.get("resources")
            .and_then(|r| r.get("subscribe"))
            .and_then(Value::as_bool)
            == Some(true),
    );
    server.subscribed.borrow_mut().clear();
    // Prompts are a bonus: a server that fails to list them keeps its tools.
    *server.prompts.borrow_mut() = if caps.get("prompts").is_some() {
        prompts::fetch(&conn).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(())
}

/// What tern says of itself in `initialize`, offering `offer`.
pub(super) fn initialize_offering(offer: serve::Offer) -> Value {
    obj! {
        "protocolVersion" => VERSIONS[0],
        "capabilities" => offer.capabilities(),
        "clientInfo" => obj! { "name" => "tern", "version" => env!("CARGO_PKG_VERSION") },
    }
}

async fn initialize(conn: &Connection, offer: serve::Offer) -> Result<Value, McpError> {
    conn.offer.set(offer);
    conn.request("initialize", initialize_offering(offer))
        .await
        .map_err(|e| McpError::Step {
            step: "initialize",
            source: Box::new(e),
        })
}

async fn fetch_tools(
    server: &Rc<Server>,
    conn: &Rc<Connection>,
    with_resources: bool,
) -> Result<Vec<Rc<dyn Tool>>, McpError> {
    let mut out: Vec<Rc<dyn Tool>> = Vec::new();
    let mut listing = Vec::new();
    for t in list_all(conn, "tools/list", "tools").await? {
        if let Some(tool) = tool::McpTool::from_listing(server, &t) {
            out.push(Rc::new(tool));
            listing.push(t);
        }
    }
    if with_resources {
        out.extend(tool::resource_tools(server));
    }
    *server.listing.borrow_mut() = listing;
    Ok(out)
}

/// Every entry of a paginated list (`tools/list`, `prompts/list`): each
/// page's `nextCursor` followed, at most 100 pages, so a looping cursor
/// cannot hang the session.
async fn list_all(
    conn: &Connection,
    method: &'static str,
    field: &str,
) -> Result<Vec<Value>, McpError> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = match &cursor {
            Some(c) => obj! { "cursor" => c.as_str() },
            None => obj! {},
        };
        let page = conn
            .request(method, params)
            .await
            .map_err(|e| McpError::Step {
                step: method,
                source: Box::new(e),
            })?;
        if let Some(Value::Array(items)) = page.get(field) {
            out.extend(items.iter().cloned());
        }
        cursor = page.str_field("nextCursor").map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    Ok(out)
}
