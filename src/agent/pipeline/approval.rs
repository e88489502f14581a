//! The approval half of a call's path: a question the policy raised,
//! answered by PermissionRequest hooks or by whoever can answer (a
//! terminal, an SDK), and what the answer changes in the session (rules
//! granted or saved, the mode, directories). It hands the pipeline an
//! `Answer`; checking a changed input, deciding it afresh and running the
//! tool stay there.

use std::cell::OnceCell;

use super::{Checked, Pipeline};
use crate::json::{Map, Value};
use crate::obj;
use crate::policy::{Behavior, Origin, Permit, Question, Rule, Source};
use crate::report::{Level, Report};
use crate::tools::{Kind, LocalFuture, Topic};

/// A person's answer to a permission question.
#[derive(Debug, Clone, PartialEq)]
pub enum Approval {
    Once,
    /// Yes, with the input changed by whoever approved (an SDK callback).
    OnceWith(Value),
    /// Yes, and don't ask again about calls the suggested rule covers.
    ForSession,
    /// Yes, and save the suggested rule in `.tern/settings.local.json`.
    Always,
    /// No, optionally with a reason for the model.
    Deny(Option<String>),
    /// No, and this text is what the model sees, as given (an SDK
    /// callback's own message).
    Refuse(String),
    /// Yes from a program (an SDK's `can_use_tool`), maybe with the input
    /// changed, and with permission changes it asks to keep
    /// (`updatedPermissions`).
    WithUpdates(Option<Value>, Vec<Update>),
}

/// A permission change an approver asks for along with its yes.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// Rules to add; `save` keeps allow rules in `.tern/settings.local.json`.
    Rules {
        behavior: Behavior,
        rules: Vec<String>,
        save: bool,
    },
    /// The permission mode from now on.
    Mode(crate::policy::Mode),
    /// More working directories.
    Directories(Vec<std::path::PathBuf>),
}

/// One question about a call, as whoever answers it sees it.
pub struct Asking<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    /// What is asked, in words.
    pub question: &'a str,
    /// The rule "for this session" and "always" would add; without one
    /// only once/deny make sense.
    pub suggestion: Option<&'a str>,
    pub call_id: &'a str,
    /// What it is about: how to show it and what to offer.
    pub topic: Topic,
}

/// Answers permission questions when someone can (a terminal, an SDK).
pub trait Approver {
    fn approve<'a>(&'a self, asking: Asking<'a>) -> LocalFuture<'a, Approval>;
}

/// What came of the decision, or of its question, for the pipeline to
/// apply to the call.
pub(super) enum Answer {
    /// Yes to the call as it stands.
    Yes(Permit),
    /// Yes to a changed input, which the pipeline checks and decides
    /// afresh.
    YesTo(Value),
    /// No; the text is what the model is told.
    No(String),
}

impl Pipeline {
    /// Asks about one call: PermissionRequest hooks first (they may answer
    /// in a person's place, headless setups too), then the approver.
    pub(super) async fn ask(
        &self,
        call: &Checked,
        facts: &crate::policy::Call<'_>,
        question: Question,
    ) -> Answer {
        // The rule a yes would add: worked out once, when first wanted.
        let suggestion = OnceCell::new();
        let suggest = || {
            suggestion
                .get_or_init(|| self.policy.suggest_rule(facts))
                .as_deref()
        };
        let mut hooked = None;
        if self.hooks.wants("PermissionRequest", &call.name) {
            hooked = self.permission_request(call, suggest()).await;
        }
        let approval = match (hooked, &self.approver) {
            (Some(approval), _) => approval,
            (None, Some(approver)) => {
                self.notify(&format!("tern needs your permission to use {}", call.name))
                    .await;
                self.ask_person(&**approver, call, &question, suggest())
                    .await
            }
            (None, None) => return Answer::No(nobody_can_answer(call, &question)),
        };
        let suggestion = suggestion.get().and_then(Option::as_deref);
        self.take(approval, question, suggestion, &call.name)
    }

    /// PermissionRequest hooks' answer, in an approver's terms, when one
    /// gave one: exit 2 or a deny refuses (a deny may also stop the turn),
    /// an allow says yes, maybe to a changed input.
    async fn permission_request(
        &self,
        call: &Checked,
        suggestion: Option<&str>,
    ) -> Option<Approval> {
        let mut fields = call.hook_fields();
        fields.insert("permission_suggestions", suggestions(suggestion));
        let v = self
            .hooks
            .run("PermissionRequest", &call.name, fields)
            .await;
        self.report(&v.notices);
        let refused = v.block.clone().map(|why| (why, false)).or_else(|| {
            v.request.as_ref().filter(|r| !r.allow).map(|r| {
                let why = r.message.clone();
                (
                    why.unwrap_or_else(|| "denied by a PermissionRequest hook".into()),
                    r.interrupt,
                )
            })
        });
        if let Some((why, interrupt)) = refused {
            if interrupt {
                self.ctx.abort.trigger(crate::abort::Reason::Requested);
            }
            let why = format!("Permission denied by a PermissionRequest hook: {why}");
            return Some(Approval::Refuse(why));
        }
        let request = v.request.filter(|r| r.allow)?;
        Some(match request.updated_input {
            Some(changed) => Approval::OnceWith(changed),
            None => Approval::Once,
        })
    }

    /// The approver's answer, reported as asked and answered. A yes to a
    /// question asked in plan mode leaves it, for the mode the answer
    /// chose or else the tool's own (ExitPlanMode's).
    async fn ask_person(
        &self,
        approver: &dyn Approver,
        call: &Checked,
        question: &Question,
        suggestion: Option<&str>,
    ) -> Approval {
        self.reports.push(Report::PermissionAsked {
            id: call.id.clone(),
            name: call.name.clone(),
            question: question.text().to_string(),
        });
        let answer = approver
            .approve(Asking {
                tool: &call.name,
                input: &call.input,
                question: question.text(),
                suggestion,
                call_id: &call.id,
                topic: call.tool.topic(),
            })
            .await;
        let allowed = !matches!(answer, Approval::Deny(_) | Approval::Refuse(_));
        self.reports.push(Report::PermissionAnswered {
            id: call.id.clone(),
            name: call.name.clone(),
            allowed,
            saved: saves_a_rule(&answer, suggestion),
        });
        let chose_mode = matches!(&answer, Approval::WithUpdates(_, u) if u.iter().any(|u| matches!(u, Update::Mode(_))));
        if allowed
            && !chose_mode
            && self.policy.mode() == crate::policy::Mode::Plan
            && let Some(mode) = call.tool.mode_after()
        {
            self.policy.set_mode(mode);
        }
        answer
    }

    /// What an answer means for the call, with the session changes a yes
    /// brings. `suggestion` is the rule "for this session" and "always"
    /// add.
    fn take(
        &self,
        approval: Approval,
        question: Question,
        suggestion: Option<&str>,
        name: &str,
    ) -> Answer {
        match (approval, suggestion) {
            (Approval::Once, _) | (Approval::ForSession | Approval::Always, None) => {
                Answer::Yes(question.approve())
            }
            (Approval::OnceWith(changed), _) => Answer::YesTo(changed),
            (Approval::WithUpdates(changed, updates), _) => {
                self.apply(&updates);
                match changed {
                    Some(changed) => Answer::YesTo(changed),
                    None => Answer::Yes(question.approve()),
                }
            }
            (Approval::ForSession, Some(rule)) => {
                self.grant(rule, false);
                Answer::Yes(question.approve())
            }
            (Approval::Always, Some(rule)) => {
                self.grant(rule, true);
                Answer::Yes(question.approve())
            }
            (Approval::Refuse(message), _) => Answer::No(message),
            (Approval::Deny(reason), _) => {
                let why = reason.map_or(String::new(), |r| format!(" The user said: {r}"));
                Answer::No(format!("Permission denied: the user declined {name}.{why}"))
            }
        }
    }

    /// Permission changes that came with a yes.
    fn apply(&self, updates: &[Update]) {
        for u in updates {
            match u {
                Update::Rules {
                    behavior,
                    rules,
                    save,
                } => {
                    for rule in rules {
                        if *behavior == Behavior::Allow {
                            self.grant(rule, *save);
                        } else {
                            self.policy.grant(Rule::parse(
                                rule,
                                *behavior,
                                Some(self.granted_origin(false)),
                            ));
                        }
                    }
                }
                Update::Mode(mode) => self.policy.set_mode(*mode),
                Update::Directories(dirs) => {
                    for d in dirs {
                        self.policy.add_dir(d);
                    }
                }
            }
        }
    }

    fn granted_origin(&self, save: bool) -> Origin {
        Origin {
            source: Source::Cli,
            file: if save {
                ".tern/settings.local.json".into()
            } else {
                "approved in this session".into()
            },
            base: self.policy.cwd.clone(),
        }
    }

    fn grant(&self, rule: &str, save: bool) {
        self.policy.grant(Rule::parse(
            rule,
            Behavior::Allow,
            Some(self.granted_origin(save)),
        ));
        if save {
            let saved = match &self.local_rules {
                Some(rules) => rules.save(rule),
                None => crate::config::settings::add_local_allow(&self.policy.cwd, rule),
            };
            let notice = match saved {
                Ok(path) => {
                    Report::notice(Level::Info, format!("saved {rule} to {}", path.display()))
                }
                Err(e) => Report::notice(Level::Warning, format!("could not save {rule}: {e}")),
            };
            self.reports.push(notice);
        }
    }

    async fn notify(&self, message: &str) {
        self.notification("permission_prompt", message).await;
    }
}

/// Whether a yes saves a rule that outlives the session: "always" with a
/// rule to save, or an SDK's allow rules kept in a settings file.
fn saves_a_rule(answer: &Approval, suggestion: Option<&str>) -> bool {
    match answer {
        Approval::Always => suggestion.is_some(),
        Approval::WithUpdates(_, updates) => updates.iter().any(|u| {
            matches!(
                u,
                Update::Rules {
                    save: true,
                    behavior: Behavior::Allow,
                    ..
                }
            )
        }),
        _ => false,
    }
}

/// The refusal when nobody can answer (print mode without a rule for the
/// call, a sub-agent nobody watches).
fn nobody_can_answer(call: &Checked, question: &Question) -> String {
    if call.tool.kind() == Kind::Ask {
        return format!(
            "Nobody can answer {} in this session. Carry on with your best judgment and say what you assumed, or end your turn with your question or plan as the answer.",
            call.name
        );
    }
    format!(
        "Permission denied. {}. Nobody can approve it in this mode; allow it with --allowedTools, a settings rule or a --permission-mode.",
        question.text()
    )
}

/// The rule a yes could add, as Claude Code's `permission_suggestions`.
fn suggestions(rule: Option<&str>) -> Value {
    let Some(rule) = rule else {
        return Value::Array(Vec::new());
    };
    let (tool, content) = match rule.split_once('(') {
        Some((t, rest)) => (t, rest.strip_suffix(')').map(str::to_string)),
        None => (rule, None),
    };
    let mut r = Map::new();
    r.insert("toolName", tool);
    if let Some(c) = content {
        r.insert("ruleContent", c);
    }
    Value::Array(vec![obj! {
        "type" => "addRules",
        "rules" => vec![Value::Object(r)],
        "behavior" => "allow",
        "destination" => "session",
    }])
}
