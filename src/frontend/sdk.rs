//! The Agent SDK's control protocol: NDJSON on stdin and stdout.
//!
//! Input lines are user messages (queued as prompts), control requests
//! from the SDK (`initialize`, `interrupt`, `set_permission_mode`,
//! `set_model`, …) answered at once, control responses to tern's own
//! requests (`can_use_tool`, `hook_callback`), and `keep_alive` (ignored).
//! Output lines are the stream-json messages plus tern's control requests
//! and responses; each is written whole, so lines never interleave.

use std::cell::{Cell, RefCell};

use std::collections::HashMap;
use std::io::Write;
use std::rc::Rc;

use smol::io::AsyncBufReadExt;

use crate::abort::{Abort, Reason};
use crate::agent::hooks::{Callback, Callbacks};
use crate::agent::pipeline::{Approval, Approver, Pipeline, Update};
use crate::agent::subagent::AgentDef;
use crate::json::{self, Map, Value};
use crate::obj;
use crate::policy::Mode;
use crate::tools::LocalFuture;

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

/// `--permission-prompt-tool stdio`: questions go to the SDK's
/// `can_use_tool` callback.
pub struct SdkApprover {
    pub control: Rc<Control>,
    pub abort: Abort,
}

impl Approver for SdkApprover {
    fn approve<'a>(
        &'a self,
        tool: &'a str,
        input: &'a Value,
        question: &'a str,
        suggestion: Option<&'a str>,
        call_id: &'a str,
    ) -> LocalFuture<'a, Approval> {
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("tool_name", tool);
            fields.insert("input", input.clone());
            fields.insert("tool_use_id", call_id);
            fields.insert(
                "permission_suggestions",
                suggestion.map_or(Vec::new(), |rule| vec![suggested_update(rule)]),
            );
            fields.insert("decision_reason", question);
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
                    Approval::Deny(answer.str_field("message").map(str::to_string))
                }
                Err(e) => Approval::Deny(Some(format!("the permission callback failed: {e}"))),
            }
        })
    }
}

/// The rule tern would add, as the SDK's `PermissionUpdate`.
fn suggested_update(rule: &str) -> Value {
    let parsed = crate::policy::Rule::parse(rule, crate::policy::Behavior::Allow, None);
    let mut entry = Map::new();
    entry.insert("toolName", parsed.tool.as_str());
    if let Some(spec) = &parsed.spec {
        entry.insert("ruleContent", spec.as_str());
    }
    obj! {
        "type" => "addRules",
        "rules" => vec![Value::Object(entry)],
        "behavior" => "allow",
        "destination" => "session",
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
    /// A user message's content.
    Prompt(Value),
    /// `set_model`: from the next prompt on (kept in order with prompts).
    Model(String),
    /// Standard input ended.
    End,
}

/// Session state the controller may change.
pub struct Session {
    pub control: Rc<Control>,
    pub abort: Abort,
    pub pipeline: Rc<Pipeline>,
}

/// Reads standard input until it ends, answering control messages and
/// passing prompts on.
pub async fn read_input(session: Session, prompts: smol::channel::Sender<Input>) {
    let stdin = smol::Unblock::new(std::io::stdin());
    let mut lines = smol::io::BufReader::new(stdin).lines();
    use smol::stream::StreamExt;
    while let Some(line) = lines.next().await {
        let Ok(line) = line else { break };
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
                let _ = prompts.send(Input::Prompt(content)).await;
            }
            Some("control_request") => {
                if let Some(model) = answer(&session, &msg) {
                    let _ = prompts.send(Input::Model(model)).await;
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

fn respond(id: &str, result: Result<Value, String>) {
    let response = match result {
        Ok(v) => obj! { "subtype" => "success", "request_id" => id, "response" => v },
        Err(e) => obj! { "subtype" => "error", "request_id" => id, "error" => e },
    };
    write_line(&obj! { "type" => "control_response", "response" => response });
}

/// Answers a control request; returns a model to switch to (`set_model`).
fn answer(session: &Session, msg: &Value) -> Option<String> {
    let id = msg.str_field("request_id").unwrap_or_default().to_string();
    let request = msg.get("request").cloned().unwrap_or_default();
    let subtype = request.str_field("subtype").unwrap_or_default();
    let mut new_model = None;
    let result = match subtype {
        "initialize" => initialize(session, &request),
        "interrupt" => {
            session.abort.trigger(Reason::Requested);
            Ok(obj! {})
        }
        "set_permission_mode" => match request.str_field("mode").and_then(Mode::parse) {
            Some(mode) => {
                session.pipeline.policy.set_mode(mode);
                Ok(obj! {})
            }
            None => Err(format!(
                "unknown permission mode {:?}",
                request.str_field("mode").unwrap_or_default()
            )),
        },
        "set_model" => match request.str_field("model") {
            Some(m) if !m.is_empty() => {
                new_model = Some(m.to_string());
                Ok(obj! {})
            }
            _ => Err("set_model needs a model name".into()),
        },
        "mcp_status" => Ok(obj! { "mcpServers" => Vec::new() }),
        other => Err(format!(
            "tern does not support the control request '{other}'"
        )),
    };
    respond(&id, result);
    new_model
}

fn initialize(session: &Session, request: &Value) -> Result<Value, String> {
    let mut callbacks = Vec::new();
    if let Some(hooks) = request.get("hooks").and_then(Value::as_object) {
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
        session.pipeline.hooks.register(
            callbacks,
            Rc::new(HookBridge {
                control: Rc::clone(&session.control),
            }),
        );
    }
    if let (Some(agents), Some(host)) = (
        request.get("agents").and_then(Value::as_object),
        &session.pipeline.subagents,
    ) {
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
    Ok(obj! {
        "commands" => Vec::new(),
        "output_style" => "default",
        "available_output_styles" => vec![Value::from("default")],
        "hooks_applied" => true,
    })
}
