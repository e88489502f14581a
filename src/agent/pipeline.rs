//! The path every tool call takes, in order: registry lookup → input parse
//! → schema → the tool's own validation → PreToolUse hooks (which may
//! block, decide, or rewrite the input) → the rewritten input validated
//! again → permission decision → (ask) → call → PostToolUse hooks. Every
//! failure becomes an `is_error` result the model can act on; nothing here
//! panics or ends the session. This is the only place a tool is called.

use std::cell::RefCell;
use std::rc::Rc;

use super::hooks::Hooks;
use crate::json::{Map, Value};
use crate::model::stream::ToolUse;
use crate::obj;
use crate::policy::{Behavior, Decision, Origin, Permit, Policy, Rule, Source};
use crate::report::{Level, Mailbox, Report};
use crate::tools::{Kind, LocalFuture, Registry, ToolContext, ToolOutput, check_input, facts};

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

/// Answers permission questions when someone can (a terminal, an SDK).
pub trait Approver {
    /// `suggestion` is the rule that "for this session" and "always" would
    /// add; without one only once/deny make sense.
    fn approve<'a>(
        &'a self,
        tool: &'a str,
        input: &'a Value,
        question: &'a str,
        suggestion: Option<&'a str>,
        call_id: &'a str,
    ) -> LocalFuture<'a, Approval>;
}

pub struct Pipeline {
    registry: Registry,
    policy: Policy,
    ctx: ToolContext,
    approver: Option<Rc<dyn Approver>>,
    hooks: Rc<Hooks>,
    /// Prior file contents are kept here before Edit/Write (for rewind).
    checkpoints: Option<RefCell<crate::session::checkpoint::Checkpoints>>,
    /// The sub-agents this session's Agent tool starts (also reachable,
    /// as a trait object, from the tool context).
    subagents: Option<Rc<super::subagent::Host>>,
    /// Tool starts and ends, questions and notices, for the loop to pass on.
    reports: Rc<Mailbox<Report>>,
    denials: RefCell<Vec<Value>>,
    /// The model has been told the rules of plan mode since it began.
    plan_noted: std::cell::Cell<bool>,
    /// Where "always" answers are saved (without it, in the working
    /// directory's local settings only).
    local_rules: Option<crate::config::settings::LocalRules>,
}

impl Pipeline {
    pub fn new(
        registry: Registry,
        policy: Policy,
        ctx: ToolContext,
        approver: Option<Rc<dyn Approver>>,
        hooks: Rc<Hooks>,
    ) -> Self {
        let mut pipeline = Pipeline {
            registry,
            policy,
            ctx,
            approver,
            hooks,
            checkpoints: None,
            subagents: None,
            reports: Rc::default(),
            denials: RefCell::new(Vec::new()),
            plan_noted: std::cell::Cell::new(false),
            local_rules: None,
        };
        pipeline.set_reports(Rc::default());
        pipeline
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The session state the tools share.
    pub fn ctx(&self) -> &ToolContext {
        &self.ctx
    }

    pub fn hooks(&self) -> &Rc<Hooks> {
        &self.hooks
    }

    /// The sub-agents this session's Agent tool starts, when it has any.
    pub fn subagents(&self) -> Option<&Rc<super::subagent::Host>> {
        self.subagents.as_ref()
    }

    pub fn set_subagents(&mut self, host: Rc<super::subagent::Host>) {
        self.subagents = Some(host);
    }

    /// Prior file contents are kept here before Edit and Write.
    pub(crate) fn set_local_rules(&mut self, rules: crate::config::settings::LocalRules) {
        self.local_rules = Some(rules);
    }

    pub fn set_checkpoints(&mut self, checkpoints: crate::session::checkpoint::Checkpoints) {
        self.checkpoints = Some(RefCell::new(checkpoints));
    }

    pub fn reports(&self) -> &Rc<Mailbox<Report>> {
        &self.reports
    }

    /// Whether the model is to be told plan mode's rules now: true once
    /// each time plan mode begins, as seen by successive calls.
    pub fn plan_mode_begins(&self) -> bool {
        let planning = self.policy.mode() == crate::policy::Mode::Plan;
        let begins = planning && !self.plan_noted.get();
        self.plan_noted.set(planning);
        begins
    }

    /// The pipeline, shared, with its tools able to call tools through it
    /// (REPL's inner calls).
    pub fn share(self) -> Rc<Pipeline> {
        let rc = Rc::new(self);
        let weak: std::rc::Weak<dyn crate::tools::InnerCalls> =
            Rc::downgrade(&rc) as std::rc::Weak<Pipeline>;
        *rc.ctx.inner.borrow_mut() = Some(weak);
        rc
    }

    /// Where the pipeline and its running tools report.
    pub fn set_reports(&mut self, reports: Rc<Mailbox<Report>>) {
        self.ctx.reports = Some(Rc::clone(&reports));
        self.reports = reports;
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

    /// Runs one call through every step, reporting its start and end.
    pub async fn run(&self, call: ToolUse) -> ToolOutput {
        self.run_as(call, false).await
    }

    /// `inner`: a call a REPL script made, which a watchdog guards.
    async fn run_as(&self, call: ToolUse, inner: bool) -> ToolOutput {
        let (id, name) = (call.id.clone(), call.name.clone());
        self.reports.push(Report::ToolStarted {
            id: id.clone(),
            name: name.clone(),
            input: call.input.clone().unwrap_or(Value::Null),
        });
        let output = self.steps(call, inner).await;
        self.reports.push(Report::ToolFinished {
            summary: crate::report::card_summary(&name, output.is_error, &output.content),
            id,
            name,
            is_error: output.is_error,
        });
        output
    }

    async fn steps(&self, call: ToolUse, inner: bool) -> ToolOutput {
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
            // What only whoever answers may fill in, the model may not.
            Ok(Value::Object(mut fields)) if !tool.approver_fields().is_empty() => {
                for f in tool.approver_fields() {
                    fields.remove(f);
                }
                Value::Object(fields)
            }
            Ok(v) => v,
            Err(e) => {
                return ToolOutput::error(format!(
                    "Invalid input for {}: {e}. Send the call again with a valid JSON object.",
                    call.name
                ));
            }
        };
        // Coerces (a "2" where the schema says integer) and checks: what
        // the model, a hook or an approver sent, as the tool will see it.
        let check = |mut input: Value| -> Result<Value, String> {
            check_input(&tool.input_schema(), &mut input)
                .map_err(|e| format!("Invalid input for {}: {e}", call.name))?;
            tool.validate(&input, &self.ctx)?;
            Ok(input)
        };
        let mut input = match check(input) {
            Ok(input) => input,
            Err(e) => return ToolOutput::error(e),
        };
        let mut hook_says: Option<String> = None;
        if self.hooks.wants("PreToolUse", &call.name) {
            let v = self
                .hooks
                .run(
                    "PreToolUse",
                    &call.name,
                    tool_fields(&call.name, &call.id, &input),
                )
                .await;
            self.report(&v.notices);
            if let Some(reason) = v.block {
                return ToolOutput::error(format!("Blocked by a PreToolUse hook: {reason}"));
            }
            if let Some(rewritten) = v.updated_input {
                input = match check(rewritten) {
                    Ok(input) => input,
                    Err(e) => {
                        return ToolOutput::error(format!(
                            "A PreToolUse hook rewrote the input into something invalid ({e}); the call was not run"
                        ));
                    }
                };
            }
            if let Some((decision, reason)) = v.permission {
                if decision == "deny" {
                    self.record_denial(&call.name, &call.id, &input);
                    return ToolOutput::error(format!("Denied by a PreToolUse hook: {reason}"));
                }
                hook_says = Some(decision);
            }
        }

        // Bash runs, and is judged, in the shell's directory: one value
        // read here, carried by the permit to the run. Glob and Grep
        // search from it too, as Claude Code's do after a `cd`.
        let bash = tool.name() == "Bash";
        let here = bash || matches!(tool.name(), "Glob" | "Grep");
        let mut cwd_note = if here { self.settle_shell_cwd() } else { None };
        let cwd = here.then(|| self.ctx.shell_cwd.get());
        let decision = match (
            self.policy
                .decide(&facts_in(&*tool, &call.id, &input, &cwd)),
            hook_says.as_deref(),
        ) {
            // A hook may approve what would ask, never what a rule denies.
            (Decision::Ask(question), Some("allow")) => Decision::Allow(question.approve()),
            (Decision::Allow(permit), Some("ask")) => Decision::Ask(permit.into_question(format!(
                "A PreToolUse hook asks for approval of {}",
                call.name
            ))),
            (d, _) => d,
        };
        let permit: Permit = match decision {
            Decision::Allow(permit) => permit,
            Decision::Deny(reason) => {
                self.record_denial(&call.name, &call.id, &input);
                return ToolOutput::error(reason.to_string());
            }
            Decision::Ask(question) => {
                // PermissionRequest hooks may answer in a person's place
                // (headless setups too); exit 2 or a deny refuses.
                let mut hooked = None;
                if self.hooks.wants("PermissionRequest", &call.name) {
                    let mut fields = tool_fields(&call.name, &call.id, &input);
                    let suggestion = self
                        .policy
                        .suggest_rule(&facts_in(&*tool, &call.id, &input, &cwd));
                    fields.insert("permission_suggestions", suggestions(suggestion.as_deref()));
                    let v = self
                        .hooks
                        .run("PermissionRequest", &call.name, fields)
                        .await;
                    self.report(&v.notices);
                    let refused = v.block.clone().map(|why| (why, false)).or_else(|| {
                        v.request.as_ref().filter(|r| !r.allow).map(|r| {
                            (
                                r.message
                                    .clone()
                                    .unwrap_or_else(|| "denied by a PermissionRequest hook".into()),
                                r.interrupt,
                            )
                        })
                    });
                    if let Some((why, interrupt)) = refused {
                        self.record_denial(&call.name, &call.id, &input);
                        if interrupt {
                            self.ctx.abort.trigger(crate::abort::Reason::Requested);
                        }
                        return ToolOutput::error(format!(
                            "Permission denied by a PermissionRequest hook: {why}"
                        ));
                    }
                    if let Some(r) = v.request.filter(|r| r.allow) {
                        hooked = Some(r.updated_input);
                    }
                }
                if let Some(changed) = hooked {
                    match changed {
                        None => question.approve(),
                        Some(changed) => {
                            match self.changed_input(
                                &*tool,
                                (&call.id, &call.name),
                                &check,
                                changed,
                                &cwd,
                            ) {
                                Ok((changed, p)) => {
                                    input = changed;
                                    p
                                }
                                Err(out) => return out,
                            }
                        }
                    }
                } else {
                    let Some(approver) = &self.approver else {
                        self.record_denial(&call.name, &call.id, &input);
                        if tool.kind() == Kind::Ask {
                            return ToolOutput::error(format!(
                                "Nobody can answer {} in this session. Carry on with your best judgment and say what you assumed, or end your turn with your question or plan as the answer.",
                                call.name
                            ));
                        }
                        return ToolOutput::error(format!(
                            "Permission denied. {}. Nobody can approve it in this mode; allow it with --allowedTools, a settings rule or a --permission-mode.",
                            question.text()
                        ));
                    };
                    self.notify(&format!("tern needs your permission to use {}", call.name))
                        .await;
                    let suggestion = self
                        .policy
                        .suggest_rule(&facts_in(&*tool, &call.id, &input, &cwd));
                    self.reports.push(Report::PermissionAsked {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        question: question.text().to_string(),
                    });
                    let answer = approver
                        .approve(
                            &call.name,
                            &input,
                            question.text(),
                            suggestion.as_deref(),
                            &call.id,
                        )
                        .await;
                    let allowed = !matches!(answer, Approval::Deny(_) | Approval::Refuse(_));
                    self.reports.push(Report::PermissionAnswered {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        allowed,
                    });
                    // A yes to leaving plan mode leaves it, for the mode the
                    // answer chose or else the tool's own.
                    let chose_mode = matches!(&answer, Approval::WithUpdates(_, u) if u.iter().any(|u| matches!(u, Update::Mode(_))));
                    if allowed
                        && !chose_mode
                        && self.policy.mode() == crate::policy::Mode::Plan
                        && let Some(mode) = tool.mode_after()
                    {
                        self.policy.set_mode(mode);
                    }
                    match (answer, suggestion) {
                        (Approval::Once, _) => question.approve(),
                        (Approval::OnceWith(changed), _) => {
                            match self.changed_input(
                                &*tool,
                                (&call.id, &call.name),
                                &check,
                                changed,
                                &cwd,
                            ) {
                                Ok((changed, p)) => {
                                    input = changed;
                                    p
                                }
                                Err(out) => return out,
                            }
                        }
                        (Approval::Refuse(message), _) => {
                            self.record_denial(&call.name, &call.id, &input);
                            return ToolOutput::error(message);
                        }
                        (Approval::WithUpdates(changed, updates), _) => {
                            self.apply(&updates);
                            match changed {
                                None => question.approve(),
                                Some(changed) => {
                                    match self.changed_input(
                                        &*tool,
                                        (&call.id, &call.name),
                                        &check,
                                        changed,
                                        &cwd,
                                    ) {
                                        Ok((changed, p)) => {
                                            input = changed;
                                            p
                                        }
                                        Err(out) => return out,
                                    }
                                }
                            }
                        }
                        (Approval::ForSession, Some(rule)) => {
                            self.grant(&rule, false);
                            question.approve()
                        }
                        (Approval::Always, Some(rule)) => {
                            self.grant(&rule, true);
                            question.approve()
                        }
                        (Approval::ForSession | Approval::Always, None) => question.approve(),
                        (Approval::Deny(reason), _) => {
                            self.record_denial(&call.name, &call.id, &input);
                            let why =
                                reason.map_or(String::new(), |r| format!(" The user said: {r}"));
                            return ToolOutput::error(format!(
                                "Permission denied: the user declined {}.{why}",
                                call.name
                            ));
                        }
                    }
                }
            }
        };

        if tool.kind() == Kind::Edit
            && let (Some(cp), Some(path)) = (&self.checkpoints, permit.path(0))
            && let Err(e) = cp.borrow_mut().before_write(path, &call.id)
        {
            // Without the old bytes a rewind could not restore this file:
            // say so now rather than at rewind time.
            self.reports.push(Report::notice(
                Level::Warning,
                format!(
                    "could not keep a checkpoint of {} ({e}); rewind will not restore it",
                    path.display()
                ),
            ));
        }
        let watchdog = inner
            .then(|| tool.native_timeout(&input))
            .flatten()
            .and_then(watchdog_for);
        let mut output = match watchdog {
            None => tool.call(input.clone(), &self.ctx, &permit).await,
            // Dropping the call's future stops it (a command's processes
            // are killed with it).
            Some((native, limit)) => {
                smol::future::or(tool.call(input.clone(), &self.ctx, &permit), async {
                    smol::Timer::after(limit).await;
                    ToolOutput::error(format!(
                        "{} was stopped by the REPL's watchdog after {} ms (its own timeout is {} ms): \
                         it hung past it. Effects it had before stay",
                        call.name,
                        limit.as_millis(),
                        native.as_millis()
                    ))
                })
                .await
            }
        };
        if bash {
            // Where the command left the shell may be somewhere it may not
            // stay (Claude Code's words when it puts it back).
            cwd_note = cwd_note.or_else(|| self.settle_shell_cwd());
            if let Some(note) = cwd_note {
                if output.content == "(no output)" {
                    output.content.clear();
                }
                if !output.content.is_empty() && !output.content.ends_with('\n') {
                    output.content.push('\n');
                }
                output.content.push_str(&note);
            }
        }
        if let Some(limit) = self.ctx.result_limit {
            fit_result(&mut output.content, limit);
        }
        let event = if output.is_error {
            "PostToolUseFailure"
        } else {
            "PostToolUse"
        };
        if self.hooks.wants(event, &call.name) {
            let mut fields = tool_fields(&call.name, &call.id, &input);
            if output.is_error {
                fields.insert("error", output.content.as_str());
            } else {
                fields.insert("tool_response", output.content.as_str());
            }
            let v = self.hooks.run(event, &call.name, fields).await;
            self.report(&v.notices);
            if let Some(reason) = v.block {
                output
                    .content
                    .push_str(&format!("\n\n[{event} hook] {reason}"));
            }
            for c in v.context {
                output
                    .content
                    .push_str(&format!("\n\n[{event} hook context] {c}"));
            }
        }
        output
    }

    /// An approver's yes to a changed input: valid, and what it now opens
    /// resolved and checked afresh (a rule that denies it still wins).
    fn changed_input(
        &self,
        tool: &dyn crate::tools::Tool,
        (id, name): (&str, &str),
        check: &dyn Fn(Value) -> Result<Value, String>,
        changed: Value,
        cwd: &Option<std::path::PathBuf>,
    ) -> Result<(Value, Permit), ToolOutput> {
        let changed = check(changed).map_err(|e| {
            ToolOutput::error(format!(
                "The approver changed the input into something invalid ({e}); the call was not run"
            ))
        })?;
        let permit = match self.policy.decide(&facts_in(tool, id, &changed, cwd)) {
            Decision::Allow(p) => p,
            Decision::Ask(q) => q.approve(),
            Decision::Deny(reason) => {
                self.record_denial(name, id, &changed);
                return Err(ToolOutput::error(reason.to_string()));
            }
        };
        Ok((changed, permit))
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

    /// Runs the Notification hooks of one type (their matcher is the type).
    pub(crate) async fn notification(&self, kind: &str, message: &str) {
        if self.hooks.wants("Notification", kind) {
            let mut fields = Map::new();
            fields.insert("message", message);
            fields.insert("notification_type", kind);
            let v = self.hooks.run("Notification", kind, fields).await;
            self.report(&v.notices);
        }
    }

    /// What hooks had to say.
    pub fn report(&self, notices: &[super::hooks::Notice]) {
        for n in notices {
            self.reports
                .push(Report::notice(Level::Warning, format!("hook: {n}")));
        }
    }

    /// Puts Bash's directory back at the project root when it is no
    /// longer a directory inside the working directories (a `cd` out,
    /// a link out, a directory removed), and says so as Claude Code does.
    fn settle_shell_cwd(&self) -> Option<String> {
        let dir = self.ctx.shell_cwd.get();
        if dir == self.ctx.cwd || (dir.is_dir() && self.policy.inside(&dir)) {
            return None;
        }
        self.ctx.shell_cwd.set(&self.ctx.cwd);
        Some(format!("Shell cwd was reset to {}", self.ctx.cwd.display()))
    }

    fn record_denial(&self, name: &str, id: &str, input: &Value) {
        self.denials.borrow_mut().push(obj! {
            "tool_name" => name,
            "tool_use_id" => id,
            "tool_input" => input.clone(),
        });
    }
}

/// A call's facts, with the directory a Bash line runs in.
fn facts_in<'a>(
    tool: &'a dyn crate::tools::Tool,
    id: &'a str,
    input: &'a Value,
    cwd: &Option<std::path::PathBuf>,
) -> crate::policy::Call<'a> {
    let mut call = facts(tool, id, input);
    call.cwd = cwd.clone();
    call
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

fn tool_fields(name: &str, id: &str, input: &Value) -> Map {
    let mut m = Map::new();
    m.insert("tool_name", name);
    m.insert("tool_input", input.clone());
    m.insert("tool_use_id", id);
    m
}

/// Cuts a result to `limit` characters, keeping its start and end, with a
/// note the model can act on.
fn fit_result(content: &mut String, limit: usize) {
    let total = content.chars().count();
    if total <= limit {
        return;
    }
    let head: String = content.chars().take(limit * 3 / 4).collect();
    let tail: String = content.chars().skip(total - limit / 4).collect();
    *content = format!(
        "{head}\n[… {} of {total} characters cut to fit the model's context window; ask for less, e.g. a line range or a narrower search …]\n{tail}",
        total - head.chars().count() - tail.chars().count()
    );
}

/// The REPL's watchdog over an inner call whose tool has a native
/// timeout: ceil(native × 1.5) + 5 s, in milliseconds, unless that is not
/// under the REPL's own 600 s wall clock. Returns (native, watchdog).
pub(super) fn watchdog_for(
    native: std::time::Duration,
) -> Option<(std::time::Duration, std::time::Duration)> {
    let ms = (native.as_millis() as u64).saturating_mul(3).div_ceil(2) + 5_000;
    (ms < 600_000).then(|| (native, std::time::Duration::from_millis(ms)))
}

impl crate::tools::InnerCalls for Pipeline {
    fn run_inner(&self, name: String, input: Value) -> LocalFuture<'_, (String, ToolOutput)> {
        Box::pin(async move {
            let id = format!("toolu_inner_{:016x}", fastrand::u64(..));
            if name == "REPL" {
                return (id, ToolOutput::error("the REPL cannot call itself"));
            }
            if name.starts_with("eval_registered__") {
                return (
                    id,
                    ToolOutput::error(
                        "a registered tool is a function of the REPL: call its handler directly",
                    ),
                );
            }
            let out = self
                .run_as(
                    ToolUse {
                        id: id.clone(),
                        name,
                        input: Ok(input),
                    },
                    true,
                )
                .await;
            (id, out)
        })
    }

    fn inner_names(&self) -> Vec<String> {
        let mut names = self.registry.names();
        names.retain(|n| n != "REPL");
        names
    }
}
