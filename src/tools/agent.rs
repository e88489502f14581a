//! Agent: hands a self-contained task to a sub-agent (see
//! `agent::subagent`), in the foreground or the background.

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::agent::pipeline::Permit;
use crate::json::{Value, parse};

pub struct AgentTool;

impl Tool for AgentTool {
    fn name(&self) -> &'static str {
        "Agent"
    }
    fn description(&self) -> &'static str {
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
    fn is_concurrency_safe(&self, _: &Value) -> bool {
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
                Some(host) => host.call(&input, ctx, permit.call_id()).await,
                None => ToolOutput::error("Sub-agents are not available in this session"),
            }
        })
    }
}
