//! What the loop reports as it goes ([`Event`]), and how a session's
//! transcript records it ([`record`]): the agent plane's one surface to
//! frontends and to the state plane.

use std::time::Duration;

use crate::json::Value;
use crate::model::ApiError;
use crate::model::stream::Usage;
use crate::obj;
use crate::report;
use crate::session::transcript::Transcript;

use super::{Ending, subagent};

/// What the loop reports as it goes.
pub enum Event<'a> {
    /// A user message: the one that starts a run, or one the loop adds
    /// (a continuation, a hook's reason, background results). `id` is
    /// the message's one identity: the transcript records it, stream-json
    /// prints it, `tern rewind --to` takes it.
    Prompt { id: &'a str, message: &'a Value },
    /// Visible text as the model writes it.
    TextDelta(&'a str),
    /// A thinking block, complete (its text as the API returned it: empty
    /// when the display was `omitted`). Shown folded, never as the answer.
    Thinking(&'a str),
    /// A complete assistant message (API shape).
    Assistant { id: &'a str, message: &'a Value },
    /// The user message carrying a turn's tool results; each result is a
    /// message of its own downstream, named by `ids[i]` for `content[i]`.
    ToolResults {
        ids: &'a [String],
        message: &'a Value,
    },
    /// The model is unavailable; the turn goes on with the next fallback.
    FallbackModel {
        from: &'a str,
        to: &'a str,
        error: &'a ApiError,
    },
    /// One raw stream event's JSON, as the Messages API sent it (or as a
    /// chat completion chunk was translated).
    Stream(&'a str),
    /// What the server counted for one request (its `usage`).
    RequestUsage(&'a Usage),
    /// Old tool results were cleared from what is sent.
    MicroCompacted { saved_tokens: u64 },
    /// The history was replaced by `summary` (the transcript records a
    /// boundary and the summary).
    Compacted {
        trigger: &'a str,
        pre_tokens: u64,
        boundary_id: &'a str,
        summary_id: &'a str,
        summary: &'a Value,
    },
    /// Inner calls a REPL block made, as a virtual tool_use/tool_result
    /// pair: the transcript keeps them, the model is not sent them.
    #[cfg_attr(not(feature = "repl"), allow(dead_code))]
    Virtual {
        ids: [&'a str; 2],
        calls: &'a Value,
        results: &'a Value,
    },
    /// A failed attempt is about to be retried.
    Retrying {
        attempt: u32,
        max_retries: u32,
        delay: Duration,
        error: &'a ApiError,
    },
    /// What a sub-agent started by this agent did (its messages, its
    /// start and end), passed up as it happens.
    Relayed(&'a subagent::Relayed),
    /// A tool's start or end, a permission question, a notice.
    Report(&'a report::Report),
    /// The run is over; the outcome follows. Printers take the outcome
    /// from `finish`; the ending is here for consumers that watch only
    /// the stream (the sub-agent relay, a live view).
    TurnEnded(#[allow(dead_code)] &'a Ending),
}

/// Writes an event's messages to a transcript under the event's ids.
pub fn record(t: &mut Transcript, ev: &Event<'_>) {
    match ev {
        Event::Prompt { id, message } => t.append("user", message, id),
        Event::Assistant { id, message } => t.append("assistant", message, id),
        Event::ToolResults { ids, message } => {
            let blocks = message.get("content").and_then(Value::as_array);
            for (block, id) in blocks.into_iter().flatten().zip(ids.iter()) {
                let single = obj! { "role" => "user", "content" => vec![block.clone()] };
                t.append("user", &single, id);
            }
        }
        Event::Virtual {
            ids,
            calls,
            results,
        } => {
            t.append_virtual("assistant", calls, ids[0]);
            t.append_virtual("user", results, ids[1]);
        }
        Event::Compacted {
            trigger,
            pre_tokens,
            boundary_id,
            summary_id,
            summary,
        } => {
            t.append_boundary(trigger, *pre_tokens, boundary_id);
            t.append("user", summary, summary_id);
        }
        Event::TextDelta(_)
        | Event::Thinking(_)
        | Event::Relayed(_)
        | Event::Report(_)
        | Event::TurnEnded(_)
        | Event::Retrying { .. }
        | Event::FallbackModel { .. }
        | Event::MicroCompacted { .. }
        | Event::RequestUsage(_)
        | Event::Stream(_) => {}
    }
}
