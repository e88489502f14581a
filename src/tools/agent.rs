//! Agent: hands a self-contained task to a sub-agent (see
//! `agent::subagent`), in the foreground or the background.

use std::borrow::Cow;
use std::rc::Rc;

use super::input::{Fields, Schema};
use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::policy::Permit;

pub struct AgentTool;

/// An Agent call's input, as the sub-agent host gets it.
pub struct AgentCall<'a> {
    pub description: Option<&'a str>,
    pub prompt: &'a str,
    /// Which defined agent; general-purpose when absent.
    pub subagent_type: Option<&'a str>,
    /// A model for this agent only ("inherit" and "" mean none).
    pub model: Option<&'a str>,
    pub run_in_background: bool,
}

impl<'a> AgentCall<'a> {
    fn decode(input: &'a Value) -> Result<AgentCall<'a>, String> {
        let f = Fields::of(input)?;
        Ok(AgentCall {
            description: f.opt_text("description")?,
            prompt: f.text("prompt")?,
            subagent_type: f.opt_text("subagent_type")?,
            model: f
                .opt_text("model")?
                .filter(|m| !m.is_empty() && *m != "inherit"),
            run_in_background: f.flag("run_in_background")?,
        })
    }
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        "Agent"
    }
    fn description(&self) -> &str {
        "Start a sub-agent for a self-contained task: it works with its own context and tools \
         and returns only its final answer, which keeps your context small. Write `prompt` as a \
         complete brief (the agent sees nothing of this conversation). `subagent_type` picks a \
         defined agent (default general-purpose). With `run_in_background` the call returns at \
         once and the result arrives later as a <task-notification> message."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["description","prompt"],"properties":{
            "description":{"type":"string","description":"A short (3-5 word) label for the task"},
            "prompt":{"type":"string","description":"The complete task for the agent"},
            "subagent_type":{"type":"string","description":"Which agent to use"},
            "model":{"type":"string","description":"A model for this agent only"},
            "run_in_background":{"type":"boolean"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // The child's own tool calls go through its own permission checks.
        true
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        true
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        AgentCall::decode(input).map(drop)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let call = match AgentCall::decode(&input) {
                Ok(c) => c,
                Err(e) => return ToolOutput::error(e),
            };
            match &ctx.subagents {
                Some(host) => Rc::clone(host).run(call, ctx, permit.call_id()).await,
                None => ToolOutput::error("Sub-agents are not available in this session"),
            }
        })
    }
}

/// SendMessage: a note for a running background agent, read at the start
/// of its next step.
pub struct SendMessage;

impl Tool for SendMessage {
    fn name(&self) -> &str {
        "SendMessage"
    }
    fn description(&self) -> &str {
        "Send a message to a running background agent (by its id, e.g. agent-1a2b3c4d). It \
         reads the message at the start of its next step: use it to redirect or add to its task."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["to","message"],"properties":{
            "to":{"type":"string","description":"The agent id"},
            "message":{"type":"string"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        message_args(input).map(drop)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (to, message) =
                match Fields::of(&input).and_then(|f| Ok((f.text("to")?, f.text("message")?))) {
                    Ok(found) => found,
                    Err(e) => return ToolOutput::error(e),
                };
            match ctx.subagents.as_ref().map(|h| h.send(to, message)) {
                Some(Ok(())) => {
                    ToolOutput::ok(format!("Delivered to {to}; it reads it on its next step."))
                }
                Some(Err(e)) => ToolOutput::error(e),
                None => ToolOutput::error("Sub-agents are not available in this session"),
            }
        })
    }
}

/// TaskStop: interrupts a running background agent.
pub struct TaskStop;

impl Tool for TaskStop {
    fn name(&self) -> &str {
        "TaskStop"
    }
    fn description(&self) -> &str {
        "Stop a running background agent by its id. Its notification then arrives with status \
         interrupted."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["task_id"],"properties":{
            "task_id":{"type":"string","description":"The agent id"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        stop_args(input).map(drop)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let id = match stop_args(&input) {
                Ok(id) => id,
                Err(e) => return ToolOutput::error(e),
            };
            match ctx.subagents.as_ref().map(|h| h.stop(id)) {
                Some(Ok(())) => ToolOutput::ok(format!("Stopping {id}.")),
                Some(Err(e)) => ToolOutput::error(e),
                None => ToolOutput::error("Sub-agents are not available in this session"),
            }
        })
    }
}

/// A SendMessage call's input: to whom, and what.
fn message_args(input: &Value) -> Result<(&str, &str), String> {
    let f = Fields::of(input)?;
    Ok((f.text("to")?, f.text("message")?))
}

/// A TaskStop call's input: the agent's id.
fn stop_args(input: &Value) -> Result<&str, String> {
    Fields::of(input)?.text("task_id")
}
