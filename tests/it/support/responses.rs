//! The stand-in's scripted answers in OpenAI's Responses API streaming
//! format (`POST …/responses`), which Codex speaks: the same steps as
//! `response.*` events. Text becomes a `message` item, a tool call a
//! `function_call` item (the script's tool id is its `call_id`); each item
//! is announced, streamed and finished, and `response.completed` carries
//! all of them with the usage.

use super::Step;
use tern::json::{self, Value};
use tern::obj;

fn event(name: &str, data: Value) -> Step {
    Step::Raw(format!("event: {name}\ndata: {}\n\n", data.to_json()).into_bytes())
}

/// One output item as it is being built.
struct Item {
    index: usize,
    value: Value,
    /// The text or the arguments so far.
    text: String,
    call: bool,
}

impl Item {
    fn done(&self) -> Value {
        let mut v = self.value.clone();
        if let Some(m) = v.as_object_mut() {
            m.insert("status", "completed");
            if self.call {
                m.insert("arguments", self.text.as_str());
            } else {
                m.insert(
                    "content",
                    vec![obj! { "type" => "output_text", "text" => self.text.as_str(), "annotations" => Vec::<Value>::new() }],
                );
            }
        }
        v
    }
}

pub(super) fn to_responses(steps: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut finished: Vec<Value> = Vec::new();
    let mut output_tokens = 0;
    let response = |status: &str, output: Vec<Value>| {
        obj! { "id" => "resp_standin", "object" => "response", "status" => status, "model" => "standin", "output" => output }
    };
    for step in steps {
        let Step::Event(name, data) = step else {
            out.push(step);
            continue;
        };
        let v = json::parse(&data).unwrap_or(Value::Null);
        let block = v.get("index").and_then(Value::as_i64).unwrap_or(0) as usize;
        match name.as_str() {
            "message_start" => out.push(event(
                "response.created",
                obj! { "type" => "response.created", "response" => response("in_progress", Vec::new()) },
            )),
            "content_block_start" => {
                let b = v.get("content_block").cloned().unwrap_or(Value::Null);
                let n = items.len() + finished.len();
                let (value, call) = match b.str_field("type") {
                    Some("tool_use") => (
                        obj! {
                            "type" => "function_call", "id" => format!("fc_{n}"), "status" => "in_progress",
                            "call_id" => b.str_field("id").unwrap_or_default(),
                            "name" => b.str_field("name").unwrap_or_default(), "arguments" => "",
                        },
                        true,
                    ),
                    Some("text") => (
                        obj! {
                            "type" => "message", "id" => format!("msg_{n}"), "status" => "in_progress",
                            "role" => "assistant", "content" => Vec::<Value>::new(),
                        },
                        false,
                    ),
                    _ => continue,
                };
                out.push(event(
                    "response.output_item.added",
                    obj! { "type" => "response.output_item.added", "output_index" => n as i64, "item" => value.clone() },
                ));
                items.push(Item {
                    index: block,
                    value,
                    text: String::new(),
                    call,
                });
            }
            "content_block_delta" => {
                let Some(at) = items.iter().position(|i| i.index == block) else {
                    continue;
                };
                let n = (finished.len() + at) as i64;
                let item = &mut items[at];
                let id = item.value.str_field("id").unwrap_or_default().to_string();
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                if let Some(text) = delta.str_field("text") {
                    item.text.push_str(text);
                    out.push(event(
                        "response.output_text.delta",
                        obj! { "type" => "response.output_text.delta", "item_id" => id, "output_index" => n, "content_index" => 0i64, "delta" => text },
                    ));
                } else if let Some(part) = delta.str_field("partial_json") {
                    item.text.push_str(part);
                    out.push(event(
                        "response.function_call_arguments.delta",
                        obj! { "type" => "response.function_call_arguments.delta", "item_id" => id, "output_index" => n, "delta" => part },
                    ));
                }
            }
            "content_block_stop" => {
                let Some(at) = items.iter().position(|i| i.index == block) else {
                    continue;
                };
                let item = items.remove(at);
                let done = item.done();
                out.push(event(
                    "response.output_item.done",
                    obj! { "type" => "response.output_item.done", "output_index" => finished.len() as i64, "item" => done.clone() },
                ));
                finished.push(done);
            }
            "message_delta" => {
                output_tokens = v
                    .get("usage")
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
            }
            "message_stop" => {
                let mut r = response("completed", std::mem::take(&mut finished));
                if let Some(m) = r.as_object_mut() {
                    m.insert(
                        "usage",
                        obj! {
                            "input_tokens" => 100i64, "input_tokens_details" => obj! { "cached_tokens" => 0i64 },
                            "output_tokens" => output_tokens, "output_tokens_details" => obj! { "reasoning_tokens" => 0i64 },
                            "total_tokens" => 100 + output_tokens,
                        },
                    );
                }
                out.push(event(
                    "response.completed",
                    obj! { "type" => "response.completed", "response" => r },
                ));
            }
            "error" => {
                let err = v.get("error").cloned().unwrap_or(Value::Null);
                let mut r = response("failed", Vec::new());
                if let Some(m) = r.as_object_mut() {
                    m.insert(
                        "error",
                        obj! { "code" => err.str_field("type").unwrap_or("server_error"), "message" => err.str_field("message").unwrap_or_default() },
                    );
                }
                out.push(event(
                    "response.failed",
                    obj! { "type" => "response.failed", "response" => r },
                ));
            }
            _ => {} // ping, thinking: no counterpart here
        }
    }
    out
}
