//! The path every tool call takes, in order: registry lookup → input parse
//! → schema → the tool's own validation → permission decision → (ask) →
//! call. Every failure becomes an `is_error` result the model can act on;
//! nothing here panics or ends the session.

use std::cell::RefCell;
use std::rc::Rc;

use crate::json::Value;
use crate::model::stream::ToolUse;
use crate::obj;
use crate::policy::{Decision, Policy};
use crate::tools::{LocalFuture, Registry, ToolContext, ToolOutput, check_schema};

/// Answers permission questions when someone can (a terminal, an SDK).
pub trait Approver {
    fn approve<'a>(
        &'a self,
        tool: &'a str,
        input: &'a Value,
        question: &'a str,
    ) -> LocalFuture<'a, bool>;
}

pub struct Pipeline {
    pub registry: Registry,
    pub policy: Policy,
    pub ctx: ToolContext,
    pub approver: Option<Rc<dyn Approver>>,
    denials: RefCell<Vec<Value>>,
}

impl Pipeline {
    pub fn new(
        registry: Registry,
        policy: Policy,
        ctx: ToolContext,
        approver: Option<Rc<dyn Approver>>,
    ) -> Self {
        Pipeline {
            registry,
            policy,
            ctx,
            approver,
            denials: RefCell::new(Vec::new()),
        }
    }

    /// Calls that were refused, in the `permission_denials` shape.
    pub fn denials(&self) -> Vec<Value> {
        self.denials.borrow().clone()
    }

    pub fn is_concurrency_safe(&self, call: &ToolUse) -> bool {
        match (self.registry.get(&call.name), &call.input) {
            (Some(tool), Ok(input)) => tool.is_concurrency_safe(input),
            // It will fail before doing anything.
            _ => true,
        }
    }

    pub async fn run(&self, call: ToolUse) -> ToolOutput {
        if self.ctx.abort.is_triggered() {
            return ToolOutput::error("Interrupted by the user before it started");
        }
        let Some(tool) = self.registry.get(&call.name) else {
            return ToolOutput::error(format!(
                "No such tool: {:?}. Available tools: {}",
                call.name,
                self.registry.names().join(", ")
            ));
        };
        let input = match call.input {
            Ok(v) => v,
            Err(e) => {
                return ToolOutput::error(format!(
                    "Invalid input for {}: {e}. Send the call again with a valid JSON object.",
                    call.name
                ));
            }
        };
        let schema = self.registry.schema(&call.name).unwrap_or(&Value::Null);
        if let Err(e) = check_schema(schema, &input) {
            return ToolOutput::error(format!("Invalid input for {}: {e}", call.name));
        }
        if let Err(e) = tool.validate(&input, &self.ctx) {
            return ToolOutput::error(e);
        }
        match self.policy.decide(&*tool, &input) {
            Decision::Allow => {}
            Decision::Deny(reason) => {
                self.record_denial(&call.name, &call.id, &input);
                return ToolOutput::error(reason);
            }
            Decision::Ask(question) => {
                let approved = match &self.approver {
                    Some(a) => a.approve(&call.name, &input, &question).await,
                    None => false,
                };
                if !approved {
                    self.record_denial(&call.name, &call.id, &input);
                    let why = if self.approver.is_some() {
                        "The user declined.".to_string()
                    } else {
                        "Nobody can approve it in this mode; allow it with --allowedTools, a settings rule or a --permission-mode.".to_string()
                    };
                    return ToolOutput::error(format!("Permission denied. {question}. {why}"));
                }
            }
        }
        tool.call(input, &self.ctx).await
    }

    fn record_denial(&self, name: &str, id: &str, input: &Value) {
        self.denials.borrow_mut().push(obj! {
            "tool_name" => name,
            "tool_use_id" => id,
            "tool_input" => input.clone(),
        });
    }
}
