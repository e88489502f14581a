//! TodoWrite: the model's own task list for the session.

use std::borrow::Cow;

use super::input::Schema;
use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::policy::Permit;

pub struct TodoWrite;

impl Tool for TodoWrite {
    fn name(&self) -> &str {
        "TodoWrite"
    }
    fn description(&self) -> &str {
        "Replace the session's task list. Use it for work with several steps: list the \
         steps, keep exactly one `in_progress` while working, and mark each `completed` \
         as soon as it is done. Each item has `content` (imperative, e.g. \"Run the \
         tests\"), `activeForm` (e.g. \"Running the tests\") and `status`."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["todos"],"properties":{
            "todos":{"type":"array","items":{"type":"object","required":["content","status","activeForm"],"properties":{
              "content":{"type":"string"},
              "status":{"type":"string","enum":["pending","in_progress","completed"]},
              "activeForm":{"type":"string"}}}}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // It changes only tern's own state, never the outside world.
        true
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        false
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let todos = input
                .get("todos")
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            let items = todos.as_array().map(Vec::len).unwrap_or(0);
            let open = todos
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|t| t.str_field("status") != Some("completed"))
                        .count()
                })
                .unwrap_or(0);
            *ctx.todos.borrow_mut() = todos;
            ToolOutput::ok(format!(
                "Task list updated: {items} items, {open} not completed. Keep it current as you work."
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use crate::tools::testing::{context, run};

    #[test]
    fn stores_the_list_and_rejects_bad_status() {
        let (ctx, _) = context();
        let input = parse(r#"{"todos":[{"content":"Run tests","status":"in_progress","activeForm":"Running tests"},
            {"content":"Fix bug","status":"completed","activeForm":"Fixing bug"}]}"#).unwrap();
        let out = run(&TodoWrite, &ctx, input);
        assert_eq!(
            out.content,
            "Task list updated: 2 items, 1 not completed. Keep it current as you work."
        );
        assert_eq!(ctx.todos.borrow().as_array().unwrap().len(), 2);
        let bad = parse(r#"{"todos":[{"content":"x","status":"done","activeForm":"x"}]}"#).unwrap();
        let out = run(&TodoWrite, &ctx, bad);
        assert!(
            out.is_error && out.content.contains("status"),
            "{}",
            out.content
        );
    }
}
