//! Permission questions as dialogs: what is asked about goes to the
//! scrollback whole (the diff, every line of the command), the options
//! below it, and the answer is the option highlighted when Enter came.

use std::rc::Rc;

use super::Tui;
use super::dialog::{Dialog, Picked};
use crate::abort::{Abort, Reason};
use crate::agent::pipeline::{Approval, Approver, Asking, Update};
use crate::frontend::approve::parse_choice;
use crate::frontend::preview::{preview, visible};
use crate::json::Value;
use crate::policy::Mode;
use crate::tools::{LocalFuture, Topic};

pub struct TuiApprover {
    tui: Rc<Tui>,
    /// "No" without a word stops the turn, so the person can say what to
    /// do instead.
    abort: Abort,
    lock: smol::lock::Mutex<()>,
}

impl TuiApprover {
    pub fn new(tui: Rc<Tui>, abort: Abort) -> TuiApprover {
        TuiApprover {
            tui,
            abort,
            lock: smol::lock::Mutex::new(()),
        }
    }

    fn no(&self, comment: Option<String>) -> Approval {
        if comment.is_none() {
            self.abort.trigger(Reason::Requested);
        }
        Approval::Deny(comment)
    }

    async fn call(&self, asking: &Asking<'_>) -> Approval {
        let Asking {
            tool,
            input,
            question,
            suggestion,
            ..
        } = *asking;
        let color = self.tui.color;
        let mut shown = vec![self.tui.paint("1", &format!("{}.", visible(question)))];
        shown.extend(
            preview(tool, input, &self.tui.cwd)
                .iter()
                .map(|l| l.render(color)),
        );
        let edits = asking.topic == Topic::Edit;
        let mut options = vec!["Yes".to_string()];
        let second = if edits {
            options.push("Yes, and don't ask again this session (accept edits)".into());
            Some(Approval::WithUpdates(
                None,
                vec![Update::Mode(Mode::AcceptEdits)],
            ))
        } else if let Some(rule) = suggestion {
            options.push(format!(
                "Yes, and don't ask again this session for {}",
                visible(rule)
            ));
            Some(Approval::ForSession)
        } else {
            None
        };
        // A server's request to use the model: "No" refuses the server,
        // and the session's own turn goes on (Esc still stops it).
        #[cfg(feature = "mcp")]
        let sampling = tool == crate::mcp::serve::SAMPLING_RULE;
        #[cfg(not(feature = "mcp"))]
        let sampling = false;
        options.push(if sampling {
            "No, refuse the server's request".into()
        } else {
            "No, and tell tern what to do differently".into()
        });
        let no_at = options.len() - 1;
        let comment_at = (!sampling).then_some(no_at);
        let dialog = Dialog::new(format!("Allow {}?", visible(tool)), options, comment_at);
        match self.tui.ask(shown, dialog).await {
            Picked::Option { index: 0, .. } => Approval::Once,
            Picked::Option { index, .. } if sampling && index == no_at => Approval::Deny(None),
            Picked::Option { index, comment } if index == no_at => self.no(comment),
            Picked::Option { .. } => {
                if edits {
                    self.tui
                        .set_status(|s| s.mode = Mode::AcceptEdits.as_str().to_string());
                }
                second.unwrap_or(Approval::Deny(None))
            }
            Picked::Dismissed => self.no(None),
        }
    }

    /// AskUserQuestion: one dialog per question; the last option takes
    /// the person's own answer (or, for several choices, their numbers).
    async fn questions(&self, input: &Value) -> Approval {
        let Ok(questions) = crate::tools::questions(input) else {
            return Approval::Deny(None);
        };
        let mut answers = crate::json::Map::new();
        for q in &questions {
            let mut options: Vec<String> = q
                .options
                .iter()
                .map(|(label, about)| {
                    if about.is_empty() {
                        visible(label)
                    } else {
                        format!("{} — {}", visible(label), visible(about))
                    }
                })
                .collect();
            options.push(if q.multi {
                "Type the numbers (1,3) or your own answer".into()
            } else {
                "Type your own answer".into()
            });
            let own = options.len() - 1;
            let title = if q.header.is_empty() {
                visible(q.question)
            } else {
                format!("[{}] {}", visible(q.header), visible(q.question))
            };
            let answer = match self
                .tui
                .ask(Vec::new(), Dialog::new(title, options, Some(own)))
                .await
            {
                Picked::Option {
                    index,
                    comment: Some(typed),
                } if index == own => match parse_choice(&typed, &q.options, q.multi) {
                    Ok(Some(a)) => a,
                    _ => typed,
                },
                Picked::Option { index, .. } if index < q.options.len() => {
                    q.options[index].0.to_string()
                }
                _ => return Approval::Deny(Some("The user chose not to answer.".into())),
            };
            answers.insert(q.question, Value::from(answer));
        }
        let mut changed = input.clone();
        if let Value::Object(m) = &mut changed {
            m.insert("answers", Value::Object(answers));
        }
        Approval::OnceWith(changed)
    }

    /// ExitPlanMode: the plan to the scrollback, then whether to start.
    async fn plan(&self, input: &Value) -> Approval {
        let mut shown = vec![self.tui.paint("1", "The plan:")];
        shown.extend(
            input
                .str_field("plan")
                .unwrap_or("")
                .lines()
                .map(|l| format!("  {}", visible(l))),
        );
        let options = vec![
            "Yes, and accept edits without asking".to_string(),
            "Yes, and ask before each edit".to_string(),
            "No, keep planning (say what to change)".to_string(),
        ];
        let dialog = Dialog::new("Leave plan mode and start?".into(), options, Some(2));
        let mode = match self.tui.ask(shown, dialog).await {
            Picked::Option { index: 0, .. } => Mode::AcceptEdits,
            Picked::Option { index: 1, .. } => Mode::Default,
            Picked::Option { comment, .. } => return Approval::Deny(comment),
            Picked::Dismissed => return Approval::Deny(None),
        };
        self.tui.set_status(|s| s.mode = mode.as_str().to_string());
        Approval::WithUpdates(None, vec![Update::Mode(mode)])
    }
}

#[cfg(feature = "mcp")]
impl TuiApprover {
    /// An MCP server's form, between the other dialogs (never over one).
    pub(crate) async fn form(
        &self,
        server: &str,
        form: &crate::mcp::elicit::Form,
    ) -> crate::mcp::elicit::Elicited {
        let _one = self.lock.lock().await;
        super::form::fill(&self.tui, server, form).await
    }
}

impl Approver for TuiApprover {
    fn approve<'a>(&'a self, asking: Asking<'a>) -> LocalFuture<'a, Approval> {
        Box::pin(async move {
            // One dialog at a time: concurrent calls wait their turn.
            let _one = self.lock.lock().await;
            match asking.topic {
                Topic::Answers => self.questions(asking.input).await,
                Topic::Plan => self.plan(asking.input).await,
                Topic::Permission | Topic::Edit => self.call(&asking).await,
            }
        })
    }
}
