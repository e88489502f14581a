//! The Agent Client Protocol (ACP, version 1): JSON-RPC 2.0 over stdin
//! and stdout, one message a line, as editors (Zed, JetBrains, Neovim)
//! speak to the agents they start.
//!
//! This module owns the wire: it reads and checks every frame, answers
//! `initialize` itself, passes the session methods on to the driver
//! (`app::acp`) as [`Call`]s, and carries tern's own requests to the
//! client — permission questions ([`AcpApprover`]) and reads of the
//! editor's buffers ([`AcpEditor`]). `updates` turns the loop's events
//! into `session/update` notifications.
//!
//! A bad frame is answered with the JSON-RPC error it deserves (-32700
//! not JSON, -32600 not a request, -32601 unknown method, -32602 bad
//! params) and the session goes on; end of input ends it.
//!
//! Caveats: stdout belongs to the protocol, so nothing else may print
//! there; each message is written whole under the stdout lock, so lines
//! never interleave.

pub(crate) mod updates;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::abort::Abort;
use crate::agent::pipeline::{Approval, Approver, Asking, Update};
use crate::json::{self, Value};
use crate::obj;
use crate::policy::Mode;
use crate::tools::{Editor, LocalFuture, Topic};

/// The protocol version tern speaks.
pub(crate) const PROTOCOL_VERSION: i64 = 1;

/// The permission modes a client may pick, as `session/new` offers them.
pub(crate) const MODES: &[(Mode, &str, &str)] = &[
    (
        Mode::Default,
        "Default",
        "Ask before edits and commands that are not known to be harmless",
    ),
    (
        Mode::AcceptEdits,
        "Accept edits",
        "File edits inside the working directories run without asking",
    ),
    (
        Mode::Plan,
        "Plan",
        "Read and plan; nothing is changed until the plan is approved",
    ),
    (
        Mode::BypassPermissions,
        "Bypass permissions",
        "Everything runs without asking (deny rules and the sandbox still hold)",
    ),
];

/// A JSON-RPC error: its code and message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub(crate) const PARSE: i64 = -32700;
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    pub(crate) const NO_METHOD: i64 = -32601;
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    pub(crate) const INTERNAL: i64 = -32603;
    /// ACP's "resource not found" (an unknown session).
    pub(crate) const NOT_FOUND: i64 = -32002;

    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(RpcError::INVALID_PARAMS, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(RpcError::INTERNAL, message)
    }
}

type Reply = Result<Value, RpcError>;

/// The other end of the connection: writes tern's messages and waits
/// for the answers to its requests.
#[derive(Default)]
pub(crate) struct Peer {
    pending: RefCell<HashMap<i64, smol::channel::Sender<Reply>>>,
    counter: Cell<i64>,
    closed: Cell<bool>,
    /// What the client said it offers in `initialize`.
    caps: RefCell<ClientCaps>,
}

/// The client's capabilities that change what tern does. Writes stay
/// tern's own on disk (Edit and Write keep their checkpoints and
/// stale-file checks there); with `writeTextFile` an open buffer that
/// held what the disk held is then given the new text
/// (`tools::BufferSync`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientCaps {
    pub read_text_file: bool,
    pub write_text_file: bool,
}

impl Peer {
    /// Writes one message as one line.
    fn send(&self, v: &Value) {
        let mut text = v.to_json();
        text.push('\n');
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    /// Answers the request `id`.
    pub(crate) fn respond(&self, id: &Value, result: Reply) {
        let msg = match result {
            Ok(v) => obj! { "jsonrpc" => "2.0", "id" => id.clone(), "result" => v },
            Err(e) => obj! {
                "jsonrpc" => "2.0",
                "id" => id.clone(),
                "error" => obj! { "code" => e.code, "message" => e.message },
            },
        };
        self.send(&msg);
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&obj! { "jsonrpc" => "2.0", "method" => method, "params" => params });
    }

    /// One `session/update` for `session`.
    pub(crate) fn update(&self, session: &str, update: Value) {
        self.notify(
            "session/update",
            obj! { "sessionId" => session, "update" => update },
        );
    }

    /// Asks the client and waits for its answer (an error when the
    /// client has gone).
    pub(crate) async fn request(&self, method: &str, params: Value) -> Reply {
        if self.closed.get() {
            return Err(RpcError::internal("the client has closed the connection"));
        }
        let id = self.counter.get() + 1;
        self.counter.set(id);
        let (tx, rx) = smol::channel::bounded(1);
        self.pending.borrow_mut().insert(id, tx);
        self.send(&obj! { "jsonrpc" => "2.0", "id" => id, "method" => method, "params" => params });
        rx.recv()
            .await
            .unwrap_or_else(|_| Err(RpcError::internal("the client went away without answering")))
    }

    pub(crate) fn caps(&self) -> ClientCaps {
        *self.caps.borrow()
    }

    /// A response to one of tern's requests.
    fn resolve(&self, msg: &Value) {
        let Some(id) = msg.get("id").and_then(Value::as_i64) else {
            return;
        };
        let Some(tx) = self.pending.borrow_mut().remove(&id) else {
            return;
        };
        let reply = match msg.get("error") {
            Some(e) => Err(RpcError::new(
                e.get("code").and_then(Value::as_i64).unwrap_or(0),
                e.str_field("message").unwrap_or("error"),
            )),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.try_send(reply);
    }

    fn close(&self) {
        self.closed.set(true);
        // Dropping the senders wakes every waiter with an error.
        self.pending.borrow_mut().clear();
    }
}

/// A session method for the driver, its params already checked.
pub(crate) enum Call {
    /// `session/new`, or `session/load` of `resume`.
    Open {
        id: Value,
        cwd: PathBuf,
        /// The client's MCP servers, as `--mcp-config` JSON text.
        mcp_config: Option<String>,
        resume: Option<String>,
    },
    Prompt {
        id: Value,
        session: String,
        /// The prompt as the model's content blocks.
        content: Vec<Value>,
    },
    SetMode {
        id: Value,
        session: String,
        mode: Mode,
    },
    /// `session/set_config_option` of the model (the one option tern
    /// offers): from the next prompt on.
    SetModel {
        id: Value,
        session: String,
        model: String,
    },
    Cancel {
        session: String,
    },
    /// Standard input ended.
    End,
}

/// Reads standard input until it ends, answering what it can and passing
/// session methods on.
pub(crate) async fn read_input(peer: Rc<Peer>, calls: smol::channel::Sender<Call>) {
    let mut input = super::InputLines::new();
    while let Some(bytes) = input.next().await {
        for call in frame(&peer, bytes) {
            let _ = calls.send(call).await;
        }
    }
    peer.close();
    let _ = calls.send(Call::End).await;
}

/// One input line: answered, resolved, or turned into calls.
fn frame(peer: &Peer, bytes: &[u8]) -> Vec<Call> {
    let Ok(line) = std::str::from_utf8(bytes) else {
        peer.respond(
            &Value::Null,
            Err(RpcError::new(RpcError::PARSE, "the message is not UTF-8")),
        );
        return Vec::new();
    };
    let line = line.trim();
    if line.is_empty() {
        return Vec::new();
    }
    let msg = match json::parse(line) {
        Ok(v) => v,
        Err(e) => {
            peer.respond(
                &Value::Null,
                Err(RpcError::new(
                    RpcError::PARSE,
                    format!("the message is not JSON: {e}"),
                )),
            );
            return Vec::new();
        }
    };
    let id = msg.get("id").cloned();
    let invalid = |why: &str| {
        peer.respond(
            id.as_ref().unwrap_or(&Value::Null),
            Err(RpcError::new(RpcError::INVALID_REQUEST, why)),
        );
        Vec::new()
    };
    if msg.as_object().is_none() {
        // ACP sends no batches.
        return invalid("a message must be one JSON-RPC object");
    }
    if msg.str_field("jsonrpc") != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    if let Some(i) = &id
        && !matches!(i, Value::String(_) | Value::Number(_) | Value::Null)
    {
        return invalid("id must be a string or a number");
    }
    let Some(method) = msg.get("method") else {
        if msg.get("result").is_some() || msg.get("error").is_some() {
            peer.resolve(&msg);
            return Vec::new();
        }
        return invalid("a request needs a method");
    };
    let Some(method) = method.as_str() else {
        return invalid("method must be a string");
    };
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Null) {
        return invalid("params must be an object");
    }
    let Some(id) = id else {
        // Notifications are never answered; unknown ones are ignored.
        if method == "session/cancel"
            && let Some(session) = params.str_field("sessionId")
        {
            return vec![Call::Cancel {
                session: session.to_string(),
            }];
        }
        return Vec::new();
    };
    match request(peer, &id, method, &params) {
        Ok(Some(call)) => vec![call],
        Ok(None) => Vec::new(),
        Err(e) => {
            peer.respond(&id, Err(e));
            Vec::new()
        }
    }
}

/// A request: answered here (`Ok(None)`), or a call for the driver.
fn request(
    peer: &Peer,
    id: &Value,
    method: &str,
    params: &Value,
) -> Result<Option<Call>, RpcError> {
    let text = |key: &str| -> Result<String, RpcError> {
        params
            .str_field(key)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| RpcError::params(format!("{method} needs {key} (a string)")))
    };
    match method {
        "initialize" => {
            let version = params
                .get("protocolVersion")
                .and_then(Value::as_i64)
                .ok_or_else(|| RpcError::params("initialize needs protocolVersion (a number)"))?;
            let fs = params.get("clientCapabilities").and_then(|c| c.get("fs"));
            let flag = |k: &str| fs.and_then(|f| f.get(k)).and_then(Value::as_bool) == Some(true);
            *peer.caps.borrow_mut() = ClientCaps {
                read_text_file: flag("readTextFile"),
                write_text_file: flag("writeTextFile"),
            };
            peer.respond(id, Ok(initialize_result(version)));
            Ok(None)
        }
        // tern signs in from its own configuration; nothing to do here.
        "authenticate" => {
            peer.respond(id, Ok(obj! {}));
            Ok(None)
        }
        "session/new" | "session/load" => {
            let cwd = PathBuf::from(text("cwd")?);
            if !cwd.is_absolute() {
                return Err(RpcError::params("cwd must be an absolute path"));
            }
            let mcp_config = mcp_config(params.get("mcpServers"))?;
            let resume = if method == "session/load" {
                Some(text("sessionId")?)
            } else {
                None
            };
            Ok(Some(Call::Open {
                id: id.clone(),
                cwd,
                mcp_config,
                resume,
            }))
        }
        "session/prompt" => {
            let session = text("sessionId")?;
            let blocks = params
                .get("prompt")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    RpcError::params("session/prompt needs prompt (a list of content blocks)")
                })?;
            let content = blocks
                .iter()
                .map(prompt_block)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(Call::Prompt {
                id: id.clone(),
                session,
                content,
            }))
        }
        "session/set_mode" => {
            let session = text("sessionId")?;
            let wanted = text("modeId")?;
            let mode = MODES
                .iter()
                .map(|m| m.0)
                .find(|m| m.as_str() == wanted)
                .ok_or_else(|| RpcError::params(format!("unknown mode {wanted:?}")))?;
            Ok(Some(Call::SetMode {
                id: id.clone(),
                session,
                mode,
            }))
        }
        "session/set_config_option" => {
            let session = text("sessionId")?;
            let option = text("configId")?;
            if option != "model" {
                return Err(RpcError::params(format!(
                    "unknown configuration option {option:?} (tern offers \"model\")"
                )));
            }
            Ok(Some(Call::SetModel {
                id: id.clone(),
                session,
                model: text("value")?,
            }))
        }
        other => Err(RpcError::new(
            RpcError::NO_METHOD,
            format!("tern does not offer the method {other:?}"),
        )),
    }
}

fn initialize_result(_asked: i64) -> Value {
    // tern speaks version 1; a client asking for another is told so and
    // decides whether to go on.
    obj! {
        "protocolVersion" => PROTOCOL_VERSION,
        "agentCapabilities" => obj! {
            "loadSession" => true,
            "promptCapabilities" => obj! {
                "image" => true,
                "audio" => false,
                "embeddedContext" => true,
            },
            "mcpCapabilities" => obj! {
                "http" => cfg!(feature = "mcp"),
                "sse" => false,
            },
        },
        "agentInfo" => obj! {
            "name" => "tern",
            "title" => "tern",
            "version" => env!("CARGO_PKG_VERSION"),
        },
        "authMethods" => Vec::new(),
    }
}

/// The client's `mcpServers` as `--mcp-config` text (Claude Code's
/// `{"mcpServers": {name: entry}}`), so they are connected exactly as
/// servers named on the command line are.
fn mcp_config(servers: Option<&Value>) -> Result<Option<String>, RpcError> {
    let list = match servers {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(RpcError::params("mcpServers must be a list")),
    };
    if list.is_empty() {
        return Ok(None);
    }
    #[cfg(not(feature = "mcp"))]
    return Err(RpcError::params(
        "mcpServers: this tern was built without the mcp feature",
    ));
    #[cfg(feature = "mcp")]
    {
        let pairs = |key: &str, s: &Value| -> Result<json::Map, RpcError> {
            let mut m = json::Map::new();
            for p in s.get(key).and_then(Value::as_array).into_iter().flatten() {
                let (Some(n), Some(v)) = (p.str_field("name"), p.str_field("value")) else {
                    return Err(RpcError::params(format!(
                        "mcpServers: each of {key} needs name and value"
                    )));
                };
                m.insert(n, v);
            }
            Ok(m)
        };
        let mut out = json::Map::new();
        for s in list {
            let name = s
                .str_field("name")
                .filter(|n| !n.is_empty())
                .ok_or_else(|| RpcError::params("mcpServers: each server needs a name"))?;
            let entry = match s.str_field("type") {
                None | Some("stdio") => {
                    let command = s.str_field("command").ok_or_else(|| {
                        RpcError::params(format!("mcpServers: {name} needs a command"))
                    })?;
                    let args: Vec<Value> = s
                        .get("args")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter(|x| x.as_str().is_some()).cloned().collect())
                        .unwrap_or_default();
                    obj! {
                        "command" => command,
                        "args" => args,
                        "env" => Value::Object(pairs("env", s)?),
                    }
                }
                Some("http") => obj! {
                    "type" => "http",
                    "url" => s.str_field("url").ok_or_else(|| RpcError::params(format!("mcpServers: {name} needs a url")))?,
                    "headers" => Value::Object(pairs("headers", s)?),
                },
                Some(other) => {
                    return Err(RpcError::params(format!(
                        "mcpServers: {name}: tern does not connect {other} servers"
                    )));
                }
            };
            out.insert(name, entry);
        }
        Ok(Some(obj! { "mcpServers" => Value::Object(out) }.to_json()))
    }
}

/// One ACP content block as a model content block.
fn prompt_block(b: &Value) -> Result<Value, RpcError> {
    let text = |t: String| obj! { "type" => "text", "text" => t };
    match b.str_field("type") {
        Some("text") => Ok(text(
            b.str_field("text")
                .ok_or_else(|| RpcError::params("a text block needs text"))?
                .to_string(),
        )),
        Some("image") => {
            let (Some(data), Some(mime)) = (b.str_field("data"), b.str_field("mimeType")) else {
                return Err(RpcError::params("an image block needs data and mimeType"));
            };
            Ok(obj! {
                "type" => "image",
                "source" => obj! { "type" => "base64", "media_type" => mime, "data" => data },
            })
        }
        Some("resource_link") => {
            let uri = b
                .str_field("uri")
                .ok_or_else(|| RpcError::params("a resource_link block needs uri"))?;
            Ok(text(format!("@{}", file_path(uri))))
        }
        Some("resource") => {
            let r = b
                .get("resource")
                .ok_or_else(|| RpcError::params("a resource block needs resource"))?;
            let uri = r.str_field("uri").unwrap_or_default();
            match r.str_field("text") {
                Some(t) => Ok(text(format!(
                    "<context ref=\"{}\">\n{t}\n</context>",
                    file_path(uri)
                ))),
                None => Ok(text(format!("@{}", file_path(uri)))),
            }
        }
        Some(other) => Err(RpcError::params(format!(
            "tern does not take {other} blocks in a prompt"
        ))),
        None => Err(RpcError::params("a content block needs a type")),
    }
}

/// A `file://` URI as its path; other URIs as they are.
fn file_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

/// `session/new`'s and `session/load`'s `modes`.
pub(crate) fn modes(current: Mode, bypass_allowed: bool) -> Value {
    let available: Vec<Value> = MODES
        .iter()
        .filter(|(m, ..)| bypass_allowed || *m != Mode::BypassPermissions)
        .map(|(m, name, about)| obj! { "id" => m.as_str(), "name" => *name, "description" => *about })
        .collect();
    obj! { "currentModeId" => current.as_str(), "availableModes" => available }
}

/// The session's configuration options: the model, as a list of the
/// configured ones (the one in use, then the fallbacks).
pub(crate) fn config_options(current: &str, others: &[String]) -> Value {
    let mut models: Vec<&str> = vec![current];
    for m in others {
        if !models.contains(&m.as_str()) {
            models.push(m);
        }
    }
    let options: Vec<Value> = models
        .iter()
        .map(|m| obj! { "value" => *m, "name" => *m })
        .collect();
    Value::Array(vec![obj! {
        "id" => "model",
        "name" => "Model",
        "category" => "model",
        "type" => "select",
        "currentValue" => current,
        "options" => options,
    }])
}

/// Permission questions go to the client as `session/request_permission`
/// with the answers a person at the terminal has; the answer is handed
/// back to the pipeline, whose policy alone decides what it allows.
pub(crate) struct AcpApprover {
    pub peer: Rc<Peer>,
    pub session: String,
    pub abort: Abort,
    pub cwd: PathBuf,
}

/// An answer offered: its id, label, ACP kind and what it means.
struct Choice {
    id: &'static str,
    name: String,
    kind: &'static str,
    approval: Approval,
}

fn choices(topic: Topic, suggestion: Option<&str>) -> Vec<Choice> {
    let reject = Choice {
        id: "reject",
        name: "Reject".into(),
        kind: "reject_once",
        approval: Approval::Deny(None),
    };
    if topic == Topic::Plan {
        return vec![
            Choice {
                id: "plan_accept_edits",
                name: "Yes, and accept edits".into(),
                kind: "allow_always",
                approval: Approval::WithUpdates(None, vec![Update::Mode(Mode::AcceptEdits)]),
            },
            Choice {
                id: "plan_default",
                name: "Yes, and approve each edit".into(),
                kind: "allow_once",
                approval: Approval::WithUpdates(None, vec![Update::Mode(Mode::Default)]),
            },
            Choice {
                name: "No, keep planning".into(),
                ..reject
            },
        ];
    }
    let mut out = vec![Choice {
        id: "allow_once",
        name: "Allow once".into(),
        kind: "allow_once",
        approval: Approval::Once,
    }];
    if let Some(rule) = suggestion {
        out.push(Choice {
            id: "allow_session",
            name: format!("Allow {rule} for this session"),
            kind: "allow_always",
            approval: Approval::ForSession,
        });
        out.push(Choice {
            id: "allow_always",
            name: format!("Always allow {rule} (saved in .tern/settings.local.json)"),
            kind: "allow_always",
            approval: Approval::Always,
        });
    }
    out.push(reject);
    out
}

impl Approver for AcpApprover {
    fn approve<'a>(&'a self, asking: Asking<'a>) -> LocalFuture<'a, Approval> {
        Box::pin(async move {
            if asking.topic == Topic::Answers {
                return Approval::Deny(Some(
                    "the editor cannot show these questions; ask them in your reply instead".into(),
                ));
            }
            let offered = choices(asking.topic, asking.suggestion);
            let options: Vec<Value> = offered
                .iter()
                .map(|c| obj! { "optionId" => c.id, "name" => c.name.as_str(), "kind" => c.kind })
                .collect();
            let mut call = updates::describe(asking.tool, asking.input, &self.cwd);
            if let Some(m) = call.as_object_mut() {
                m.insert("toolCallId", asking.call_id);
                m.insert("status", "pending");
            }
            let params = obj! {
                "sessionId" => self.session.as_str(),
                "toolCall" => call,
                "options" => options,
            };
            match self
                .peer
                .request("session/request_permission", params)
                .await
            {
                Ok(answer) => {
                    let outcome = answer.get("outcome");
                    let picked = outcome
                        .filter(|o| o.str_field("outcome") == Some("selected"))
                        .and_then(|o| o.str_field("optionId"));
                    match picked.and_then(|p| offered.into_iter().find(|c| c.id == p)) {
                        Some(c) => c.approval,
                        // Cancelled: the turn is being stopped.
                        None if outcome.and_then(|o| o.str_field("outcome"))
                            == Some("cancelled") =>
                        {
                            self.abort.trigger(crate::abort::Reason::Requested);
                            Approval::Deny(Some("the user cancelled the turn".into()))
                        }
                        None => Approval::Deny(Some(
                            "the editor answered with an option tern did not offer".into(),
                        )),
                    }
                }
                Err(e) => Approval::Deny(Some(format!(
                    "the editor could not ask for permission: {}",
                    e.message
                ))),
            }
        })
    }
}

/// Reads through the client's `fs/read_text_file`, so unsaved buffers
/// are what Read sees; writes open buffers through `fs/write_text_file`
/// when the client offers it.
pub(crate) struct AcpEditor {
    pub peer: Rc<Peer>,
    pub session: String,
    pub writes: bool,
}

impl Editor for AcpEditor {
    fn read_text(&self, path: &Path) -> LocalFuture<'_, Result<String, String>> {
        let path = path.display().to_string();
        Box::pin(async move {
            let params = obj! { "sessionId" => self.session.as_str(), "path" => path };
            let answer = self
                .peer
                .request("fs/read_text_file", params)
                .await
                .map_err(|e| e.message)?;
            answer
                .str_field("content")
                .map(str::to_string)
                .ok_or_else(|| "the editor's answer has no content".to_string())
        })
    }

    fn takes_writes(&self) -> bool {
        self.writes
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: String,
    ) -> LocalFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let params = obj! {
                "sessionId" => self.session.as_str(),
                "path" => path.display().to_string(),
                "content" => text,
            };
            self.peer
                .request("fs/write_text_file", params)
                .await
                .map(|_| ())
                .map_err(|e| e.message)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_blocks() {
        let b = json::parse(
            r#"{"type":"resource","resource":{"uri":"file:///a/b.rs","text":"fn x(){}"}}"#,
        )
        .unwrap();
        let t = prompt_block(&b).unwrap();
        assert!(t.str_field("text").unwrap().contains("/a/b.rs"));
        assert!(prompt_block(&json::parse(r#"{"type":"audio"}"#).unwrap()).is_err());
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn mcp_servers_become_a_config() {
        let v = json::parse(
            r#"[{"name":"calc","command":"/bin/calc","args":["-x"],"env":[{"name":"A","value":"1"}]},
                {"type":"http","name":"web","url":"http://127.0.0.1:9/mcp","headers":[]}]"#,
        )
        .unwrap();
        let text = mcp_config(Some(&v)).unwrap().unwrap();
        let c = json::parse(&text).unwrap();
        let calc = c.get("mcpServers").unwrap().get("calc").unwrap();
        assert_eq!(calc.str_field("command"), Some("/bin/calc"));
        assert_eq!(calc.get("env").unwrap().str_field("A"), Some("1"));
        assert!(
            mcp_config(Some(
                &json::parse(r#"[{"type":"sse","name":"s","url":"x"}]"#).unwrap()
            ))
            .is_err()
        );
    }

    #[test]
    fn plan_choices_set_the_mode() {
        let c = choices(Topic::Plan, None);
        assert_eq!(c.len(), 3);
        let p = choices(Topic::Permission, Some("Bash(ls:*)"));
        assert_eq!(
            p.iter().map(|c| c.id).collect::<Vec<_>>(),
            ["allow_once", "allow_session", "allow_always", "reject"]
        );
    }
}
