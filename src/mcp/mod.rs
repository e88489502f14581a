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

pub mod config;
mod rpc;
mod tool;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use smol::LocalExecutor;
use smol::future::FutureExt;

use crate::json::Value;
use crate::obj;
use crate::tools::{Tool, ToolSource};
use config::ServerConfig;
use rpc::Connection;

/// Protocol versions tern speaks, newest first.
const VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Pending,
    Connected,
    Failed(String),
    /// Defined by the repository and not approved by the user: not started.
    NeedsApproval,
}

pub struct Server {
    pub name: String,
    status: RefCell<Status>,
    conn: RefCell<Option<Rc<Connection>>>,
    tools: RefCell<Vec<Rc<dyn Tool>>>,
    /// Bumped on every new catalog (tools/list_changed).
    pub generation: Cell<u64>,
    /// The server announced a change not yet fetched.
    stale: Cell<bool>,
    with_resources: Cell<bool>,
    tool_timeout: Duration,
}

impl Server {
    pub fn status(&self) -> Status {
        if let (Status::Connected, Some(conn)) = (&*self.status.borrow(), &*self.conn.borrow())
            && let Some(reason) = conn.closed.borrow().clone()
        {
            return Status::Failed(reason);
        }
        self.status.borrow().clone()
    }

    pub fn tool_count(&self) -> usize {
        self.tools.borrow().len()
    }

    fn connection(&self) -> Result<Rc<Connection>, String> {
        if let Status::Failed(reason) = self.status() {
            return Err(format!(
                "the MCP server {} is not available: {reason}",
                self.name
            ));
        }
        self.conn
            .borrow()
            .clone()
            .ok_or_else(|| format!("the MCP server {} is still starting", self.name))
    }
}

pub struct Hub {
    pub servers: Vec<Rc<Server>>,
}

impl ToolSource for Hub {
    fn tools(&self) -> Vec<Rc<dyn Tool>> {
        self.servers
            .iter()
            .filter(|s| s.status() == Status::Connected)
            .flat_map(|s| s.tools.borrow().clone())
            .collect()
    }

    /// A new catalog generation for every server that announced one.
    fn refresh(&self) -> crate::tools::LocalFuture<'_, ()> {
        Box::pin(async move {
            for server in self.servers.iter().filter(|s| s.stale.get()) {
                server.stale.set(false);
                let Ok(conn) = server.connection() else {
                    continue;
                };
                let fetched = fetch_tools(server, &conn, server.with_resources.get())
                    .or(async {
                        smol::Timer::after(server.tool_timeout).await;
                        Err("no answer to tools/list".to_string())
                    })
                    .await;
                match fetched {
                    Ok(catalog) => {
                        *server.tools.borrow_mut() = catalog;
                        server.generation.set(server.generation.get() + 1);
                    }
                    Err(e) => eprintln!(
                        "tern: MCP server {}: refreshing its tools failed: {e}",
                        server.name
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
    pub async fn start(
        ex: &'static LocalExecutor<'static>,
        configs: Vec<ServerConfig>,
        approved: &dyn Fn(&str) -> bool,
        env: &crate::config::ChildEnv,
        cwd: &std::path::Path,
        timeout: Duration,
        first_wait: Duration,
    ) -> Rc<Hub> {
        let tool_timeout = Duration::from_secs(
            std::env::var("MCP_TOOL_TIMEOUT")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(600, |ms| ms / 1000),
        );
        let servers: Vec<Rc<Server>> = configs
            .iter()
            .map(|c| {
                Rc::new(Server {
                    name: c.name.clone(),
                    status: RefCell::new(Status::Pending),
                    conn: RefCell::new(None),
                    tools: RefCell::new(Vec::new()),
                    generation: Cell::new(0),
                    stale: Cell::new(false),
                    with_resources: Cell::new(false),
                    tool_timeout,
                })
            })
            .collect();
        let (done_tx, done_rx) = smol::channel::unbounded::<()>();
        let mut waiting = 0;
        for (server, cfg) in servers.iter().zip(configs) {
            if cfg.from_project && !approved(&cfg.name) {
                *server.status.borrow_mut() = Status::NeedsApproval;
                continue;
            }
            waiting += 1;
            let server = Rc::clone(server);
            let done = done_tx.clone();
            let cwd = cwd.to_path_buf();
            let env = env.clone();
            ex.spawn(async move {
                let result = match cfg.transport {
                    Err(e) => Err(e),
                    Ok(transport) => {
                        let attempt = connect(ex, &server, &transport, &cwd, &env);
                        let limit = async {
                            smol::Timer::after(timeout).await;
                            Err(format!(
                                "no answer within {} s (MCP_TIMEOUT)",
                                timeout.as_secs_f64()
                            ))
                        };
                        attempt.or(limit).await
                    }
                };
                if let Err(reason) = result {
                    *server.status.borrow_mut() = Status::Failed(reason);
                    let conn = server.conn.borrow_mut().take();
                    if let Some(c) = conn {
                        c.shutdown(Duration::from_millis(500)).await;
                    }
                } else {
                    *server.status.borrow_mut() = Status::Connected;
                }
                let _ = done.send(()).await;
            })
            .detach();
        }
        drop(done_tx);
        let all = async {
            for _ in 0..waiting {
                if done_rx.recv().await.is_err() {
                    break;
                }
            }
        };
        all.or(async {
            smol::Timer::after(first_wait).await;
        })
        .await;
        Rc::new(Hub { servers })
    }

    /// For `system/init`: `[{name, status}]` (and the reason of a failure).
    pub fn summary(&self) -> Vec<Value> {
        self.servers
            .iter()
            .map(|s| match s.status() {
                Status::Pending => obj! { "name" => s.name.as_str(), "status" => "pending" },
                Status::Connected => obj! { "name" => s.name.as_str(), "status" => "connected", "tools" => s.tool_count() },
                Status::Failed(r) => obj! { "name" => s.name.as_str(), "status" => "failed", "error" => r },
                Status::NeedsApproval => obj! {
                    "name" => s.name.as_str(),
                    "status" => "needs-approval",
                    "error" => APPROVAL_HINT,
                },
            })
            .collect()
    }

    pub async fn shutdown(&self) {
        for s in &self.servers {
            let conn = s.conn.borrow_mut().take();
            if let Some(c) = conn {
                c.shutdown(Duration::from_secs(2)).await;
            }
        }
    }
}

/// Why a project server did not start, and how to let it.
pub const APPROVAL_HINT: &str = "defined by the project and not approved: add its name to \
enabledMcpjsonServers (or set enableAllProjectMcpServers) in your user settings or --settings";

async fn connect(
    ex: &'static LocalExecutor<'static>,
    server: &Rc<Server>,
    transport: &config::Transport,
    cwd: &std::path::Path,
    env: &crate::config::ChildEnv,
) -> Result<(), String> {
    let conn = Connection::open(ex, transport, cwd, env)?;
    *server.conn.borrow_mut() = Some(Rc::clone(&conn));
    let init = conn
        .request(
            "initialize",
            obj! {
                "protocolVersion" => VERSIONS[0],
                "capabilities" => obj! { "roots" => obj! { "listChanged" => false } },
                "clientInfo" => obj! { "name" => "tern", "version" => env!("CARGO_PKG_VERSION") },
            },
        )
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    let version = init
        .str_field("protocolVersion")
        .unwrap_or_default()
        .to_string();
    if !VERSIONS.contains(&version.as_str()) {
        return Err(format!(
            "the server speaks MCP {version}; tern speaks {}",
            VERSIONS.join(", ")
        ));
    }
    conn.set_protocol(&version);
    conn.notify("notifications/initialized", obj! {}).await?;
    let caps = init.get("capabilities").cloned().unwrap_or_default();
    let with_resources = caps.get("resources").is_some();
    let catalog = fetch_tools(server, &conn, with_resources).await?;
    *server.tools.borrow_mut() = catalog;
    server.generation.set(1);
    server.with_resources.set(with_resources);
    // A changed catalog is fetched before the next request is built.
    let weak = Rc::downgrade(server);
    conn.on_notification(Box::new(move |method, _| {
        if method == "notifications/tools/list_changed"
            && let Some(server) = weak.upgrade()
        {
            server.stale.set(true);
        }
    }));
    Ok(())
}

async fn fetch_tools(
    server: &Rc<Server>,
    conn: &Rc<Connection>,
    with_resources: bool,
) -> Result<Vec<Rc<dyn Tool>>, String> {
    let mut out: Vec<Rc<dyn Tool>> = Vec::new();
    let mut cursor: Option<String> = None;
    // Pagination, bounded so a looping cursor cannot hang the session.
    for _ in 0..100 {
        let params = match &cursor {
            Some(c) => obj! { "cursor" => c.as_str() },
            None => obj! {},
        };
        let page = conn
            .request("tools/list", params)
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        for t in page
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(tool) = tool::McpTool::from_listing(server, t) {
                out.push(Rc::new(tool));
            }
        }
        cursor = page.str_field("nextCursor").map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    if with_resources {
        out.extend(tool::resource_tools(server));
    }
    Ok(out)
}
