//! The Agent SDK's control protocol: NDJSON on stdin and stdout.
//!
//! Input lines are user messages (queued as prompts), control requests
//! from the SDK (`initialize`, `interrupt`, `set_permission_mode`,
//! `set_model`, …) answered at once, control responses to tern's own
//! requests (`can_use_tool`, `hook_callback`), and `keep_alive` (ignored).
//! Output lines are the stream-json messages plus tern's control requests
//! and responses; each is written whole, so lines never interleave.
//! In-process SDK MCP servers are reached through `mcp_message` requests
//! on the same channel. The control requests themselves are answered in
//! `requests`.

mod requests;

use std::cell::{Cell, RefCell};

use std::collections::HashMap;
use std::io::Write;
use std::rc::Rc;

use crate::abort::{Abort, Reason};
use crate::agent::hooks::Callbacks;
use crate::agent::pipeline::{Approval, Approver, Asking, Pipeline, Update};
use crate::json::{self, Map, Value};
use crate::obj;
use crate::tools::LocalFuture;
pub use requests::{ContextView, context_view};

/// Writes one NDJSON line to stdout.
pub fn write_line(v: &Value) {
    let mut text = v.to_json();
    text.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

type Reply = Result<Value, String>;

/// tern's requests to the controller, waiting for their responses.
#[derive(Default)]
pub struct Control {
    pending: RefCell<HashMap<String, smol::channel::Sender<Reply>>>,
    counter: Cell<u64>,
    closed: Cell<bool>,
}

impl Control {
    pub async fn request(&self, subtype: &str, mut fields: Map) -> Reply {
        if self.closed.get() {
            return Err("the controlling program has closed its input".into());
        }
        let n = self.counter.get() + 1;
        self.counter.set(n);
        let id = format!("tern_req_{n}");
        fields.insert("subtype", subtype);
        let (tx, rx) = smol::channel::bounded(1);
        self.pending.borrow_mut().insert(id.clone(), tx);
        write_line(&obj! {
            "type" => "control_request",
            "request_id" => id.as_str(),
            "request" => Value::Object(fields),
        });
        rx.recv()
            .await
            .unwrap_or_else(|_| Err("the controlling program went away without answering".into()))
    }

    fn resolve(&self, response: &Value) {
        let Some(id) = response.str_field("request_id") else {
            return;
        };
        let Some(tx) = self.pending.borrow_mut().remove(id) else {
            return;
        };
        let reply = if response.str_field("subtype") == Some("error") {
            Err(response.str_field("error").unwrap_or("error").to_string())
        } else {
            Ok(response.get("response").cloned().unwrap_or_else(|| obj! {}))
        };
        let _ = tx.try_send(reply);
    }

    fn close(&self) {
        self.closed.set(true);
        // Dropping the senders wakes every waiter with an error.
        self.pending.borrow_mut().clear();
    }
}

/// The SDK's in-process MCP servers: each JSON-RPC message is an
/// `mcp_message` request, the server's answer its `mcp_response`.
#[cfg(feature = "mcp")]
impl crate::mcp::sdk::Carrier for Control {
    fn carry<'a>(
        &'a self,
        server: &'a str,
        message: Value,
    ) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("server_name", server);
            fields.insert("message", message);
            let answer = self.request("mcp_message", fields).await?;
            answer.get("mcp_response").cloned().ok_or_else(|| {
                format!("the SDK answered mcp_message for {server} without an mcp_response")
            })
        })
    }
}

/// `--permission-prompt-tool stdio`: questions go to the SDK's
/// `can_use_tool` callback.
pub struct SdkApprover {
    pub control: Rc<Control>,
    pub abort: Abort,
    /// The session's working directory, for `blocked_path`.
    pub cwd: std::path::PathBuf,
}

/// A rule text (`Bash(npm test:*)`) as Claude Code's permission update.
fn suggestion_update(rule: &str) -> Value {
    let parsed = crate::policy::Rule::parse(rule, crate::config::settings::Behavior::Allow, None);
    let mut r = obj! { "toolName" => parsed.tool.as_str() };
    if let (Some(spec), Some(m)) = (&parsed.spec, r.as_object_mut()) {
        m.insert("ruleContent", spec.as_str());
    }
    obj! {
        "type" => "addRules",
        "rules" => vec![r],
        "behavior" => "allow",
        "destination" => "session",
    }
}

impl Approver for SdkApprover {
    fn approve<'a>(&'a self, asking: Asking<'a>) -> LocalFuture<'a, Approval> {
        // The SDK's callback is told the tool by name, as Claude Code tells it.
        let Asking {
            tool,
            input,
            question,
            suggestion,
            call_id,
            ..
        } = asking;
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("tool_name", tool);
            fields.insert("input", input.clone());
            fields.insert("tool_use_id", call_id);
            fields.insert(
                "permission_suggestions",
                suggestion
                    .map(suggestion_update)
                    .into_iter()
                    .collect::<Vec<_>>(),
            );
            fields.insert("decision_reason", question);
            fields.insert("display_name", display_name(tool));
            fields.insert("title", format!("tern wants to use {}", display_name(tool)));
            if let Some(d) = input.str_field("description") {
                fields.insert("description", d);
            }
            // The path outside the working directories that made it ask.
            let path = input.str_field("file_path").or(input.str_field("path"));
            if let Some(p) = path
                && question.contains("outside the working directories")
            {
                let p = std::path::Path::new(p);
                let full = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    self.cwd.join(p)
                };
                fields.insert("blocked_path", full.display().to_string());
            }
            match self.control.request("can_use_tool", fields).await {
                Ok(answer) if answer.str_field("behavior") == Some("allow") => {
                    let changed = answer
                        .get("updatedInput")
                        .filter(|c| *c != input && c.as_object().is_some())
                        .cloned();
                    let updates = answer
                        .get("updatedPermissions")
                        .and_then(Value::as_array)
                        .map(|list| list.iter().filter_map(permission_update).collect())
                        .unwrap_or_default();
                    match (changed, updates) {
                        (None, u) if Vec::is_empty(&u) => Approval::Once,
                        (Some(c), u) if u.is_empty() => Approval::OnceWith(c),
                        (c, u) => Approval::WithUpdates(c, u),
                    }
                }
                Ok(answer) => {
                    if answer.get("interrupt").and_then(Value::as_bool) == Some(true) {
                        self.abort.trigger(Reason::Requested);
                    }
                    // The callback's message reaches the model as written.
                    match answer.str_field("message").filter(|m| !m.trim().is_empty()) {
                        Some(m) => Approval::Refuse(m.to_string()),
                        None => Approval::Deny(None),
                    }
                }
                Err(e) => Approval::Deny(Some(format!("the permission callback failed: {e}"))),
            }
        })
    }
}

/// How a tool is named to a person: `mcp__calc__add` is "add (calc)".
fn display_name(tool: &str) -> String {
    match tool.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
        Some((server, name)) => format!("{name} ({server})"),
        None => tool.to_string(),
    }
}

/// One entry of `updatedPermissions` (the SDK's `PermissionUpdate`):
/// `addRules` (and `replaceRules`, which can only add here), `setMode`,
/// `addDirectories`. Rules for `localSettings` are saved; every other
/// destination lasts for the session. Unknown entries are skipped.
fn permission_update(v: &Value) -> Option<Update> {
    use crate::policy::{Behavior, Mode};
    match v.str_field("type")? {
        "addRules" | "replaceRules" => {
            let behavior = match v.str_field("behavior").unwrap_or("allow") {
                "allow" => Behavior::Allow,
                "ask" => Behavior::Ask,
                "deny" => Behavior::Deny,
                _ => return None,
            };
            let rules = v
                .get("rules")?
                .as_array()?
                .iter()
                .filter_map(|r| {
                    let tool = r.str_field("toolName")?;
                    Some(match r.str_field("ruleContent") {
                        Some(spec) if !spec.is_empty() => format!("{tool}({spec})"),
                        _ => tool.to_string(),
                    })
                })
                .collect();
            Some(Update::Rules {
                behavior,
                rules,
                save: v.str_field("destination") == Some("localSettings"),
            })
        }
        "setMode" => Some(Update::Mode(Mode::parse(v.str_field("mode")?)?)),
        "addDirectories" => Some(Update::Directories(
            v.get("directories")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(std::path::PathBuf::from)
                .collect(),
        )),
        _ => None,
    }
}

/// Hook callbacks registered by `initialize`, answered by the SDK.
pub struct HookBridge {
    pub control: Rc<Control>,
}

impl Callbacks for HookBridge {
    fn call<'a>(
        &'a self,
        callback_id: &'a str,
        input: Value,
        tool_use_id: Option<&'a str>,
    ) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("callback_id", callback_id);
            fields.insert("input", input);
            fields.insert("tool_use_id", tool_use_id);
            self.control.request("hook_callback", fields).await
        })
    }
}

/// What the main loop gets from standard input.
pub enum Input {
    /// A user message's content, and the `uuid` the application gave it
    /// (kept as the message's identity, so `rewind_files` can name it).
    Prompt {
        content: Value,
        uuid: Option<String>,
    },
    /// `set_model`: from the next prompt on (kept in order with prompts).
    Model(String),
    /// `set_max_thinking_tokens`: a budget, or none (null).
    Thinking(crate::model::thinking::Mode),
    /// `initialize`'s systemPrompt / appendSystemPrompt: the system prompt
    /// from the next prompt on.
    System {
        custom: Option<String>,
        append: Option<String>,
    },
    /// Standard input ended.
    End,
}

/// Session state the controller may read and change.
pub struct Session {
    /// Runs answers that must wait (a reconnecting server's handshake
    /// travels over this very channel, so it cannot be awaited inline).
    #[cfg(feature = "mcp")]
    pub ex: &'static smol::LocalExecutor<'static>,
    pub control: Rc<Control>,
    pub abort: Abort,
    pub pipeline: Rc<Pipeline>,
    #[cfg(feature = "mcp")]
    pub hub: Option<Rc<crate::mcp::Hub>>,
    pub cwd: std::path::PathBuf,
    /// `--json-schema` / `initialize.jsonSchema`.
    pub structured: Rc<crate::tools::structured::Structured>,
    /// What `get_context_usage` reports, refreshed by the session.
    pub context: Rc<RefCell<ContextView>>,
    /// Options and fields accepted but not acted on, for `system/init`.
    pub ignored: Rc<RefCell<Vec<Value>>>,
    /// The transcript, for `rewind_files`.
    pub transcript: Option<std::path::PathBuf>,
    /// `initialize.allowedControlRequests`: when set, the only requests
    /// answered.
    pub allowed_requests: RefCell<Option<Vec<String>>>,
    /// What `${VAR}` in `initialize.mcpServers` expands from (the
    /// configuration's snapshot of tern's environment).
    #[cfg(feature = "mcp")]
    pub env: crate::config::Env,
}

/// Reads standard input until it ends, answering control messages and
/// passing prompts on.
pub async fn read_input(session: Session, prompts: smol::channel::Sender<Input>) {
    let mut input = super::InputLines::new();
    while let Some(bytes) = input.next().await {
        // One bad line is that line's problem, not the session's.
        let Ok(line) = std::str::from_utf8(bytes) else {
            not_utf8(bytes);
            continue;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let msg = match json::parse(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("tern: ignoring an input line that is not JSON ({e})");
                continue;
            }
        };
        match msg.str_field("type") {
            Some("user") => {
                let content = msg
                    .get("message")
                    .and_then(|m| m.get("content"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let content = match content {
                    Value::String(s) => Value::Array(vec![obj! { "type" => "text", "text" => s }]),
                    Value::Array(a) => Value::Array(a),
                    _ => {
                        eprintln!("tern: ignoring a user message without content");
                        continue;
                    }
                };
                let uuid = msg
                    .str_field("uuid")
                    .filter(|u| crate::session::is_uuid(u))
                    .map(str::to_string);
                let _ = prompts.send(Input::Prompt { content, uuid }).await;
            }
            Some("control_request") => {
                for input in requests::answer(&session, &msg) {
                    let _ = prompts.send(input).await;
                }
            }
            Some("control_response") => {
                if let Some(r) = msg.get("response") {
                    session.control.resolve(r);
                }
            }
            Some("keep_alive") | Some("update_environment_variables") => {}
            other => eprintln!(
                "tern: ignoring an input line of type {}",
                other.unwrap_or("(none)")
            ),
        }
    }
    session.control.close();
    let _ = prompts.send(Input::End).await;
}

/// An input line that is not UTF-8: said on stderr, and a control
/// request in it (as far as it can be read) is answered with an error, so
/// the program waiting for it is not left hanging.
fn not_utf8(bytes: &[u8]) {
    let at = std::str::from_utf8(bytes)
        .err()
        .map_or(0, |e| e.valid_up_to());
    eprintln!("tern: ignoring an input line that is not valid UTF-8 (at byte {at})");
    let lossy = String::from_utf8_lossy(bytes);
    if let Ok(msg) = json::parse(lossy.trim())
        && msg.str_field("type") == Some("control_request")
        && let Some(id) = msg.str_field("request_id")
    {
        respond(
            id,
            Err(format!(
                "the request is not valid UTF-8 (at byte {at}); nothing was done"
            )),
        );
    }
}

fn respond(id: &str, result: Result<Value, String>) {
    let response = match result {
        Ok(v) => obj! { "subtype" => "success", "request_id" => id, "response" => v },
        Err(e) => obj! { "subtype" => "error", "request_id" => id, "error" => e },
    };
    write_line(&obj! { "type" => "control_response", "response" => response });
}
