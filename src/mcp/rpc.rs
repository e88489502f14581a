//! JSON-RPC with one MCP server, over stdio (newline-delimited messages to
//! a child process), HTTP (streamable, or the older HTTP+SSE transport:
//! `remote`) or the SDK's control channel.
//!
//! Responses are matched to requests by id; notifications go to a
//! handler; requests from the server are answered (`ping`, `roots/list`),
//! handed to the session (`serve`: elicitation, sampling) or refused. A
//! dead server fails every pending request with the reason. An SDK server
//! (`mcp::sdk`) gets each message through the SDK's control channel, and
//! its answer comes back as the reply to that message.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use smol::LocalExecutor;
use smol::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::config::Transport;
use super::error::McpError;
use crate::json::{self, Value};
use crate::obj;

type Reply = Result<Value, McpError>;
type Notify = Box<dyn Fn(&str, &Value)>;
/// Takes a request from the server (its id, method and params) and sees
/// to its answer; false: not offered.
type Serve = Box<dyn Fn(Value, &str, Value) -> bool>;

pub(super) enum Link {
    Stdio {
        stdin: RefCell<Option<smol::process::ChildStdin>>,
        pgid: u32,
        child: RefCell<Option<smol::process::Child>>,
    },
    Remote(Box<super::remote::Remote>),
    Sdk {
        carrier: Rc<dyn super::sdk::Carrier>,
        /// The name the SDK knows the server by (its `mcpServers` key).
        server: String,
    },
}

pub struct Connection {
    pub(super) link: Link,
    /// The server's name (for sign-in hints).
    pub(super) name: String,
    pub(super) pending: RefCell<HashMap<i64, smol::channel::Sender<Reply>>>,
    next_id: Cell<i64>,
    on_notify: RefCell<Option<Notify>>,
    on_request: RefCell<Option<Serve>>,
    /// Why the connection is gone, once it is.
    pub closed: RefCell<Option<String>>,
    /// The last lines the server wrote to stderr (for failure reasons).
    stderr_tail: Rc<RefCell<String>>,
    /// Closed when the connection ends: its streams and watchers stop.
    pub(super) ended: (smol::channel::Sender<()>, smol::channel::Receiver<()>),
    /// What `initialize` offered the server: a session started again
    /// offers the same.
    pub(super) offer: Cell<super::serve::Offer>,
}

/// What a remote server's connection needs from the session.
#[derive(Clone, Default)]
pub struct RemoteSetup {
    /// SSL_CERT_FILE's certificates, added to the built-in roots.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// Where sign-ins are kept; none: OAuth is off.
    pub auth: Option<super::oauth::Store>,
    /// How this server signs in (its definition's `"oauth"`), set per server.
    pub oauth: super::oauth::OauthConfig,
    /// Opens an address in the person's browser, where a session can: a
    /// new authorization (scope step-up) then happens in the session.
    pub browser: Option<super::oauth::Browser>,
}

impl Connection {
    fn with_link(link: Link, name: &str) -> Connection {
        Connection {
            offer: Cell::new(super::serve::Offer::default()),
            link,
            name: name.to_string(),
            pending: RefCell::default(),
            next_id: Cell::new(1),
            on_notify: RefCell::default(),
            on_request: RefCell::default(),
            closed: RefCell::default(),
            stderr_tail: Rc::default(),
            ended: smol::channel::bounded(1),
        }
    }

    pub fn open(
        ex: &'static LocalExecutor<'static>,
        transport: &Transport,
        cwd: &std::path::Path,
        name: &str,
        carrier: Option<Rc<dyn super::sdk::Carrier>>,
        inherited: &crate::config::ChildEnv,
        setup: &RemoteSetup,
    ) -> Result<Rc<Connection>, McpError> {
        match transport {
            Transport::Sdk => {
                let carrier = carrier.ok_or(McpError::NoControlChannel)?;
                Ok(Rc::new(Connection::with_link(
                    Link::Sdk {
                        carrier,
                        server: name.to_string(),
                    },
                    name,
                )))
            }
            Transport::Stdio { command, args, env } => {
                let mut cmd = std::process::Command::new(command);
                cmd.args(args).current_dir(cwd);
                // Credentials stay with tern; the server's own `env` is
                // what its configuration asked for.
                inherited.apply(&mut cmd);
                cmd.envs(env.iter().map(|(k, v)| (k, v)));
                let mut child = crate::sys::spawn_server(cmd).map_err(|e| McpError::Spawn {
                    command: command.clone(),
                    source: std::sync::Arc::new(e),
                })?;
                let pgid = child.id();
                crate::sys::register_child_group(pgid);
                let (Some(stdin), Some(stdout), Some(stderr)) =
                    (child.stdin.take(), child.stdout.take(), child.stderr.take())
                else {
                    return Err(McpError::NoStdio);
                };
                let conn = Rc::new(Connection::with_link(
                    Link::Stdio {
                        stdin: RefCell::new(Some(stdin)),
                        pgid,
                        child: RefCell::new(Some(child)),
                    },
                    name,
                ));
                let tail = Rc::clone(&conn.stderr_tail);
                ex.spawn(async move {
                    let mut err = stderr;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = err.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let mut t = tail.borrow_mut();
                        t.push_str(&String::from_utf8_lossy(&buf[..n]));
                        if t.len() > 2048 {
                            let cut = t.len() - 2048;
                            let cut = (cut..t.len()).find(|&i| t.is_char_boundary(i)).unwrap_or(0);
                            t.drain(..cut);
                        }
                    }
                })
                .detach();
                let reader = Rc::clone(&conn);
                ex.spawn(async move { reader.read_stdio(stdout).await })
                    .detach();
                Ok(conn)
            }
            Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                let legacy = matches!(transport, Transport::Sse { .. });
                let agent =
                    super::wire::agent(setup.extra_ca_pem.as_deref()).map_err(McpError::Gone)?;
                // A configured Authorization header is the user's choice of
                // credentials; OAuth is for servers without one.
                let own_auth = headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
                let auth = match (&setup.auth, own_auth) {
                    (Some(store), false) => Some(super::remote::Auth::new(
                        name,
                        url,
                        store.clone(),
                        agent.clone(),
                        setup.oauth.clone(),
                        setup.browser.clone(),
                    )),
                    _ => None,
                };
                let remote = super::remote::Remote::new(agent, url, headers.clone(), legacy, auth);
                Ok(Rc::new(Connection::with_link(
                    Link::Remote(Box::new(remote)),
                    name,
                )))
            }
        }
    }

    pub fn on_notification(&self, f: Notify) {
        *self.on_notify.borrow_mut() = Some(f);
    }

    /// Requests from the server beyond `ping` and `roots/list`
    /// (elicitation, sampling) go to `f`, which answers through `reply`.
    pub fn on_request(&self, f: Serve) {
        *self.on_request.borrow_mut() = Some(f);
    }

    /// Answers the server's request `id`: a result, or an error's code
    /// and message.
    pub async fn reply(&self, id: Value, answer: Result<Value, (i64, String)>) {
        let mut reply = obj! { "jsonrpc" => "2.0", "id" => id };
        if let Some(m) = reply.as_object_mut() {
            match answer {
                Ok(r) => m.insert("result", r),
                Err((code, e)) => m.insert("error", obj! { "code" => code, "message" => e }),
            }
        }
        let _ = self.send_raw(&reply).await;
    }

    pub fn set_protocol(&self, version: &str) {
        if let Link::Remote(r) = &self.link {
            *r.protocol.borrow_mut() = Some(version.to_string());
        }
    }

    /// The reason the server is gone, with what it last printed.
    fn death(&self, what: &str) -> String {
        let tail = self.stderr_tail.borrow();
        let last = tail.trim().lines().last().unwrap_or_default();
        if last.is_empty() {
            what.to_string()
        } else {
            format!("{what} (its last words: {last})")
        }
    }

    async fn read_stdio(self: Rc<Self>, stdout: smol::process::ChildStdout) {
        let mut lines = smol::io::BufReader::new(stdout).lines();
        use smol::stream::StreamExt;
        let mut complained = false;
        while let Some(Ok(line)) = lines.next().await {
            if line.trim().is_empty() {
                continue;
            }
            match json::parse(&line) {
                Ok(msg) => self.dispatch(msg).await,
                Err(e) if !complained => {
                    complained = true;
                    crate::report::notice(
                        crate::report::Level::Warning,
                        format!("an MCP server wrote a line that is not JSON-RPC ({e}); ignored"),
                    );
                }
                Err(_) => {}
            }
        }
        self.close(self.death("the server exited"));
    }

    pub(super) fn close(&self, reason: String) {
        if self.closed.borrow().is_none() {
            *self.closed.borrow_mut() = Some(reason.clone());
        }
        self.ended.0.close();
        for (_, tx) in self.pending.borrow_mut().drain() {
            let _ = tx.try_send(Err(McpError::Gone(reason.clone())));
        }
    }

    pub(super) async fn dispatch(&self, msg: Value) {
        let id = msg.get("id").and_then(Value::as_i64);
        match (id, msg.str_field("method")) {
            (Some(id), None) => {
                let Some(tx) = self.pending.borrow_mut().remove(&id) else {
                    return;
                };
                let reply = match msg.get("error") {
                    Some(e) => Err(McpError::Rpc {
                        code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: e.str_field("message").unwrap_or("error").to_string(),
                    }),
                    None => Ok(msg.get("result").cloned().unwrap_or_default()),
                };
                let _ = tx.try_send(reply);
            }
            (_, Some(method)) if msg.get("id").is_some() => {
                // A request from the server.
                let id = msg.get("id").cloned().unwrap_or_default();
                let result = match method {
                    "ping" => Ok(obj! {}),
                    "roots/list" => Ok(obj! { "roots" => Vec::new() }),
                    other => {
                        let params = msg.get("params").cloned().unwrap_or_default();
                        let taken = self
                            .on_request
                            .borrow()
                            .as_ref()
                            .is_some_and(|f| f(id.clone(), other, params));
                        if taken {
                            return;
                        }
                        Err((-32601, format!("tern does not offer {other}")))
                    }
                };
                self.reply(id, result).await;
            }
            (None, Some(method)) => {
                if let Some(f) = self.on_notify.borrow().as_ref() {
                    f(method, msg.get("params").unwrap_or(&Value::Null));
                }
            }
            _ => {}
        }
    }

    async fn send_raw(&self, msg: &Value) -> Result<(), McpError> {
        if let Some(reason) = self.closed.borrow().clone() {
            return Err(McpError::Gone(reason));
        }
        match &self.link {
            Link::Stdio { stdin, .. } => {
                let mut text = msg.to_json();
                text.push('\n');
                let taken = stdin.borrow_mut().take();
                let Some(mut w) = taken else {
                    return Err(McpError::InputClosed);
                };
                let written = w.write_all(text.as_bytes()).await.and(w.flush().await);
                *stdin.borrow_mut() = Some(w);
                written.map_err(|e| {
                    McpError::Gone(self.death(&format!("writing to the server failed: {e}")))
                })
            }
            Link::Remote(_) => self.post_remote(msg).await,
            Link::Sdk { carrier, server } => {
                let request = super::sdk::is_request(msg);
                let answer = carrier
                    .carry(server, msg.clone())
                    .await
                    .map_err(McpError::Carrier)?;
                // A notification's acknowledgement carries nothing.
                if request {
                    Box::pin(self.dispatch(answer)).await;
                }
                Ok(())
            }
        }
    }

    pub async fn request(&self, method: &str, params: Value) -> Reply {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = smol::channel::bounded(1);
        self.pending.borrow_mut().insert(id, tx);
        let msg = obj! { "jsonrpc" => "2.0", "id" => id, "method" => method, "params" => params };
        if let Err(e) = self.send_raw(&msg).await {
            self.pending.borrow_mut().remove(&id);
            return Err(e);
        }
        match rx.recv().await {
            Ok(r) => r,
            Err(_) => Err(match self.closed.borrow().clone() {
                Some(reason) => McpError::Gone(reason),
                None => McpError::NoAnswer(method.to_string()),
            }),
        }
    }

    /// The id the next request will get (for cancellation notices).
    pub fn next_request_id(&self) -> i64 {
        self.next_id.get()
    }

    /// Forgets a pending request (after cancelling it).
    pub fn abandon(&self, id: i64) {
        self.pending.borrow_mut().remove(&id);
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        let msg = obj! { "jsonrpc" => "2.0", "method" => method, "params" => params };
        self.send_raw(&msg).await
    }

    /// Ends the server as the stdio transport prescribes: its input
    /// closed (a well-behaved server finishes what it read and exits),
    /// then SIGTERM to its process group, then SIGKILL, `grace` apart.
    pub async fn shutdown(&self, grace: Duration) {
        let already = self.closed.borrow().is_some();
        self.close("shut down".into());
        if let Link::Remote(r) = &self.link {
            if !already {
                r.end_session(grace).await;
            }
            return;
        }
        let Link::Stdio { stdin, pgid, child } = &self.link else {
            return;
        };
        drop(stdin.borrow_mut().take());
        let taken = child.borrow_mut().take();
        if let Some(mut c) = taken {
            for signal in [None, Some(libc::SIGTERM), Some(libc::SIGKILL)] {
                if let Some(s) = signal {
                    crate::sys::signal_group(*pgid, s);
                }
                let exited = smol::future::or(async { c.status().await.is_ok() }, async {
                    smol::Timer::after(grace).await;
                    false
                })
                .await;
                if exited {
                    break;
                }
            }
        }
        crate::sys::kill_process_group(*pgid);
        crate::sys::unregister_child_group(*pgid);
    }
}
