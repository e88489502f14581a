//! `--json-schema`: the StructuredOutput tool. The model must end its
//! answer by calling it with an input that matches the caller's schema;
//! the pipeline checks the input against the schema like any tool input
//! (a mismatch goes back to the model as an error it can correct), and the
//! accepted value becomes the result's `structured_output`. The agent loop
//! bounds how often the model is sent back to try again.
//!
//! The schema may also arrive while the session runs (the TypeScript SDK
//! sends it in `initialize`), so the tool is offered through a changing
//! catalog ([`SessionTools`]) rather than the fixed built-ins.

use std::cell::RefCell;
use std::rc::Rc;

use super::{Kind, LocalFuture, Tool, ToolContext, ToolOutput, ToolSource};
use crate::json::Value;
use crate::policy::Permit;

pub const NAME: &str = "StructuredOutput";

/// The schema asked for and the value the model gave.
#[derive(Default)]
pub struct Structured {
    schema: RefCell<Option<Value>>,
    value: RefCell<Option<Value>>,
}

impl Structured {
    pub fn set_schema(&self, schema: Value) {
        *self.schema.borrow_mut() = Some(schema);
    }
    pub fn wanted(&self) -> bool {
        self.schema.borrow().is_some()
    }
    /// Forgets the previous prompt's answer.
    pub fn reset(&self) {
        *self.value.borrow_mut() = None;
    }
    pub fn value(&self) -> Option<Value> {
        self.value.borrow().clone()
    }
}

pub struct StructuredOutput {
    slot: Rc<Structured>,
}

impl Tool for StructuredOutput {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Return your final answer in the structured format the user asked for. You MUST call \
         this tool exactly once, at the end, with an input that matches its schema; the input \
         is the answer. If it is refused, read the error and call it again with a corrected input."
    }
    /// Owned: the schema can be set while the session runs (`--json-schema`
    /// through the SDK), so it is read from its cell at each use.
    fn input_schema(&self) -> std::borrow::Cow<'_, Value> {
        std::borrow::Cow::Owned(
            self.slot
                .schema
                .borrow()
                .clone()
                .unwrap_or_else(|| crate::obj! { "type" => "object" }),
        )
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // It only records a value inside tern.
        true
    }
    fn call<'a>(
        &'a self,
        input: Value,
        _: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            // The pipeline has checked `input` against the schema already.
            *self.slot.value.borrow_mut() = Some(input);
            ToolOutput::ok("Structured output accepted.")
        })
    }
}

/// The session's changing tools: the MCP servers' and, when a schema is
/// set, StructuredOutput.
pub struct SessionTools {
    pub structured: Rc<Structured>,
    pub mcp: Option<Rc<dyn ToolSource>>,
}

impl ToolSource for SessionTools {
    fn tools(&self) -> Vec<Rc<dyn Tool>> {
        let mut out = self.mcp.as_ref().map_or(Vec::new(), |m| m.tools());
        if self.structured.wanted() {
            out.push(Rc::new(StructuredOutput {
                slot: Rc::clone(&self.structured),
            }));
        }
        out
    }
    fn refresh(&self) -> LocalFuture<'_, ()> {
        Box::pin(async move {
            if let Some(m) = &self.mcp {
                m.refresh().await;
            }
        })
    }
    fn commands(&self) -> Vec<(String, String)> {
        self.mcp.as_ref().map_or(Vec::new(), |m| m.commands())
    }
    fn expand<'a>(&'a self, text: &'a str) -> LocalFuture<'a, Option<Result<Vec<Value>, String>>> {
        Box::pin(async move {
            match &self.mcp {
                Some(m) => m.expand(text).await,
                None => None,
            }
        })
    }
    fn attach<'a>(&'a self, text: &'a str) -> LocalFuture<'a, Vec<Value>> {
        Box::pin(async move {
            match &self.mcp {
                Some(m) => m.attach(text).await,
                None => Vec::new(),
            }
        })
    }
    fn news(&self) -> Vec<String> {
        self.mcp.as_ref().map_or(Vec::new(), |m| m.news())
    }
}
