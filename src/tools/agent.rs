//! Agent: hands a self-contained task to a sub-agent (see
//! `agent::subagent`), in the foreground or the background.

use std::rc::Rc;

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::{Value, parse};
use crate::policy::Permit;

pub struct AgentTool;

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
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["description","prompt"],"properties":{
            "description":{"type":"string","description":"A short (3-5 word) label for the task"},
            "prompt":{"type":"string","description":"The complete task for the agent"},
            "subagent_type":{"type":"string","description":"Which agent to use"},
            "model":{"type":"string","description":"A model for this agent only"},
            "run_in_background":{"type":"boolean"}}}"#,
        )
        .unwrap_or_default()
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
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            match &ctx.subagents {
                Some(host) => Rc::clone(host).run(&input, ctx, permit.call_id()).await,
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
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["to","message"],"properties":{
            "to":{"type":"string","description":"The agent id"},
            "message":{"type":"string"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let to = input.str_field("to").unwrap_or_default();
            let message = input.str_field("message").unwrap_or_default();
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
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["task_id"],"properties":{
            "task_id":{"type":"string","description":"The agent id"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let id = input.str_field("task_id").unwrap_or_default();
            match ctx.subagents.as_ref().map(|h| h.stop(id)) {
                Some(Ok(())) => ToolOutput::ok(format!("Stopping {id}.")),
                Some(Err(e)) => ToolOutput::error(e),
                None => ToolOutput::error("Sub-agents are not available in this session"),
            }
        })
    }
}
