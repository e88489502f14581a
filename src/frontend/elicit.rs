//! Who answers an MCP server's questions in this session: its form
//! (elicitation) goes to the TUI, the line-mode terminal, or the SDK host
//! (the `elicitation` control request of Claude Code's protocol); with
//! nobody there, the user's standing choice accepts the server's own
//! defaults. Whether a server may use the model (sampling) is asked the
//! way a tool call is, through the session's approver, as the pseudo-tool
//! `McpSampling` with the rule `McpSampling(<server>)` for "this session".

use std::rc::Rc;

use super::line::LineApprover;
use super::sdk::Control;
use crate::agent::pipeline::{Approval, Approver, Asking};
use crate::json::{Map, Value};
use crate::mcp::elicit::{Elicited, Form};
use crate::mcp::serve::{Grant, SAMPLING_RULE};
use crate::report::{Level, notice};
use crate::tools::{LocalFuture, Topic};

pub(crate) enum Forms {
    #[cfg(feature = "tui")]
    Tui(Rc<super::tui::TuiApprover>),
    Line(Rc<LineApprover>),
    Sdk(Rc<Control>),
    /// TERN_MCP_ELICITATION=accept-defaults with nobody to ask.
    Defaults,
}

pub(crate) struct Asker {
    pub forms: Option<Forms>,
    pub approver: Option<Rc<dyn Approver>>,
}

impl crate::mcp::serve::Asker for Asker {
    fn elicit<'a>(&'a self, server: &'a str, form: &'a Form) -> LocalFuture<'a, Elicited> {
        Box::pin(async move {
            match &self.forms {
                #[cfg(feature = "tui")]
                Some(Forms::Tui(t)) => t.form(server, form).await,
                Some(Forms::Line(l)) => l.form(server, form).await,
                Some(Forms::Sdk(c)) => relay(c, server, form).await,
                Some(Forms::Defaults) => {
                    notice(
                        Level::Info,
                        format!(
                            "MCP server {server} asked for input; accepted with its own defaults (TERN_MCP_ELICITATION=accept-defaults)"
                        ),
                    );
                    Elicited::Accept(Map::new())
                }
                None => {
                    notice(
                        Level::Warning,
                        format!(
                            "MCP server {server} asked for input; nobody can answer here, so it was declined"
                        ),
                    );
                    Elicited::Decline
                }
            }
        })
    }

    fn allow_sampling<'a>(
        &'a self,
        server: &'a str,
        question: &'a str,
        request: &'a Value,
    ) -> LocalFuture<'a, Grant> {
        Box::pin(async move {
            let Some(approver) = &self.approver else {
                return Grant::No;
            };
            let rule = format!("{SAMPLING_RULE}({server})");
            // What the person sees: the server's request as it came, so
            // they know what the model would be asked.
            let call_id = format!("mcp-sampling-{}", crate::session::new_uuid());
            let asking = Asking {
                tool: SAMPLING_RULE,
                input: request,
                question,
                suggestion: Some(&rule),
                call_id: &call_id,
                topic: Topic::Permission,
            };
            match approver.approve(asking).await {
                Approval::Once | Approval::OnceWith(_) | Approval::WithUpdates(..) => Grant::Once,
                Approval::ForSession | Approval::Always => Grant::Session,
                Approval::Deny(_) | Approval::Refuse(_) => Grant::No,
            }
        })
    }
}

/// The form as the SDK's `elicitation` control request; the host's
/// `{action, content}` is the answer. A host that has no handler for it
/// (the Python SDK answers with an error) declines.
async fn relay(control: &Control, server: &str, form: &Form) -> Elicited {
    let mut fields = Map::new();
    fields.insert("mcp_server_name", server);
    fields.insert("message", form.message.as_str());
    fields.insert("mode", "form");
    fields.insert("requested_schema", form.schema.clone());
    fields.insert(
        "property_order",
        form.fields
            .iter()
            .map(|f| Value::from(f.name.as_str()))
            .collect::<Vec<_>>(),
    );
    match control.request("elicitation", fields).await {
        Ok(answer) => match answer.str_field("action") {
            Some("accept") => Elicited::Accept(
                answer
                    .get("content")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            ),
            Some("cancel") => Elicited::Cancel,
            _ => Elicited::Decline,
        },
        Err(e) => {
            notice(
                Level::Warning,
                format!(
                    "MCP server {server} asked for input; the SDK host did not answer ({e}), so it was declined"
                ),
            );
            Elicited::Decline
        }
    }
}
