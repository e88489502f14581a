//! Tools a script registered (`registerTool`): offered to the model as
//! `eval_registered__NAME` while the context that registered them lives.
//! Every model call of one asks (it is not read-only), and its handler
//! runs in the VM, its own inner calls checked like any other.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use super::{DEFAULT_BUDGET_MS, in_vm};
use crate::json::Value;
use crate::obj;
use crate::policy::Permit;
use crate::tools::{Kind, LocalFuture, Tool, ToolContext, ToolOutput, ToolSource};

/// The wire names of registered tools start so.
pub(super) const PREFIX: &str = "eval_registered__";
/// What one context may register: each is sent with every request.
const MAX_TOOLS: usize = 64;
const MAX_DESCRIPTION: usize = 4096;

/// The registered tools, as a catalog the registry offers.
pub(crate) struct RegisteredTools(pub(crate) Rc<RefCell<Vec<Rc<Registered>>>>);

impl ToolSource for RegisteredTools {
    fn tools(&self) -> Vec<Rc<dyn Tool>> {
        self.0
            .borrow()
            .iter()
            .map(|t| Rc::clone(t) as Rc<dyn Tool>)
            .collect()
    }
}

pub(crate) struct Registered {
    /// The name in the VM.
    pub(super) vm_name: String,
    /// `eval_registered__NAME`.
    wire: String,
    description: String,
    schema: Value,
}

impl Tool for Registered {
    fn name(&self) -> &str {
        &self.wire
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        Cow::Borrowed(&self.schema)
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        false
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        false
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let request =
                obj! { "op" => "invoke", "name" => self.vm_name.as_str(), "input" => input };
            in_vm(ctx, request, DEFAULT_BUDGET_MS, None).await
        })
    }
}

/// Whether `name` and `schema` make a tool the model's API will take.
/// The VM checks the same before `registerTool` returns; the session
/// checks again, as the VM runs the model's code.
pub(crate) fn problem(name: &str, schema: &Value) -> Option<String> {
    let name_ok = (1..=111).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Some("a name is 1 to 111 letters, digits, '_' or '-'".into());
    }
    crate::tools::schema::well_formed(schema)
        .err()
        .map(|e| format!("the schema is not one a tool can have: {e}"))
}

/// A call's `registerTool`/`unregisterTool` changes, in order; what was
/// refused is said in the returned notes.
pub(super) fn apply(list: &RefCell<Vec<Rc<Registered>>>, done: &Value) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(changes) = done.get("changes").and_then(Value::as_array) else {
        return notes;
    };
    let mut list = list.borrow_mut();
    for c in changes {
        let Some(name) = c.str_field("name") else {
            continue;
        };
        list.retain(|t| t.vm_name != name);
        if c.str_field("op") != Some("register") {
            continue;
        }
        let schema = c.get("schema").cloned().unwrap_or(Value::Null);
        let refused = problem(name, &schema).or_else(|| {
            (list.len() >= MAX_TOOLS)
                .then(|| format!("a context may register at most {MAX_TOOLS} tools"))
        });
        if let Some(why) = refused {
            notes.push(format!("[the tool {name} was not registered: {why}]"));
            continue;
        }
        let mut description = c.str_field("description").unwrap_or_default().to_string();
        if description.chars().count() > MAX_DESCRIPTION {
            description = description.chars().take(MAX_DESCRIPTION).collect();
        }
        list.push(Rc::new(Registered {
            vm_name: name.to_string(),
            wire: format!("{PREFIX}{name}"),
            description,
            schema,
        }));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn a_schema_the_api_would_refuse_is_not_registered() {
        let list = RefCell::new(Vec::new());
        let done = parse(
            r#"{"changes":[
            {"op":"register","name":"good","schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}},
            {"op":"register","name":"bad_type","schema":{"type":"object","properties":{"a":{"type":"text"}}}},
            {"op":"register","name":"bad_required","schema":{"type":"object","required":"a"}},
            {"op":"register","name":"not_object","schema":{"type":"array"}},
            {"op":"register","name":"has_ref","schema":{"type":"object","properties":{"a":{"$ref":"https://x/y"}}}},
            {"op":"register","name":"bad name!","schema":{"type":"object"}}
            ]}"#,
        )
        .unwrap();
        let notes = apply(&list, &done);
        let names: Vec<String> = list.borrow().iter().map(|t| t.vm_name.clone()).collect();
        assert_eq!(names, ["good"]);
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert!(notes[0].contains("bad_type") && notes[0].contains("text"));
    }
}
