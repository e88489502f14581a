//! The path every tool call takes, as named stages in order:
//!
//! 1. `prepare`: registry lookup → input parse → schema → the tool's own
//!    validation;
//! 2. `pre_hooks`: PreToolUse hooks may block, deny, rewrite the input
//!    (checked again) or weigh in on the decision;
//! 3. `permit`: the policy decides; a question goes to the approval half
//!    (`approval.rs`: PermissionRequest hooks, then a person), and a yes
//!    to a changed input is checked and decided afresh in one place,
//!    `changed_input`;
//! 4. `call_tool`: the tool's `call` with the permit policy minted;
//! 5. `post_hooks`: PostToolUse(Failure) hooks add to the result.
//!
//! Every failure becomes an `is_error` result the model can act on (a
//! stage's `Err`); nothing here panics or ends the session. This is the
//! only place a tool is called.

mod approval;

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use approval::Answer;
pub use approval::{Approval, Approver, Asking, Update};

use super::hooks::Hooks;
use crate::json::{Map, Value};
use crate::model::stream::ToolUse;
use crate::obj;
use crate::policy::{Decision, Permit, Policy};
use crate::report::{Level, Mailbox, Report};
use crate::tools::{
    Kind, LocalFuture, Registry, Tool, ToolContext, ToolOutput, check_input, facts,
};

/// A stage's outcome: `Err` ends the call before (or instead of) its run,
/// with the `is_error` result the model sees.
type Step<T> = Result<T, ToolOutput>;

/// One call on its way through, after its checks: `input` is what the
/// tool will see, replaced whole when a hook or an approver changes it.
struct Checked {
    tool: Rc<dyn Tool>,
    id: String,
    name: String,
    input: Value,
    /// The shell's directory, for the tools that work in it (Bash, Glob,
    /// Grep): read once, before the decision, and carried by the permit
    /// to the run.
    cwd: Option<PathBuf>,
}

impl Checked {
    /// What policy decides from (and suggests a rule from).
    fn facts(&self) -> crate::policy::Call<'_> {
        let mut call = facts(&*self.tool, &self.id, &self.input);
        call.cwd = self.cwd.clone();
        call
    }

    /// The fields every hook about this call receives.
    fn hook_fields(&self) -> Map {
        let mut m = Map::new();
        m.insert("tool_name", self.name.as_str());
        m.insert("tool_input", self.input.clone());
        m.insert("tool_use_id", self.id.as_str());
        m
    }
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
            (Some(tool), Ok(input)) => tool.is_concurrency_safe(input, &self.ctx),
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
        match self.stages(call, inner).await {
            Ok(output) | Err(output) => output,
        }
    }

    /// The stages of the module's doc, in order; between them, Bash's
    /// directory is settled before the decision and after the run.
    async fn stages(&self, call: ToolUse, inner: bool) -> Step<ToolOutput> {
        let mut call = self.prepare(call)?;
        let hook_says = self.pre_hooks(&mut call).await?;
        // Bash runs, and is judged, in the shell's directory: one value
        // read here, carried by the permit to the run. Glob and Grep
        // search from it too, as Claude Code's do after a `cd`.
        let bash = call.tool.name() == "Bash";
        let here = bash || matches!(call.tool.name(), "Glob" | "Grep");
        let cwd_note = if here { self.settle_shell_cwd() } else { None };
        call.cwd = here.then(|| self.ctx.shell_cwd.get());
        let (call, permit) = self.permit(call, hook_says.as_deref()).await?;
        let mut output = self.call_tool(&call, &permit, inner).await;
        if bash {
            // Where the command left the shell may be somewhere it may not
            // stay (Claude Code's words when it puts it back).
            note_shell_cwd(&mut output, cwd_note.or_else(|| self.settle_shell_cwd()));
        }
        if let Some(limit) = self.ctx.result_limit {
            fit_result(&mut output.content, limit);
        }
        Ok(self.post_hooks(&call, output).await)
    }

    /// Looks the tool up and checks the input the model sent.
    fn prepare(&self, call: ToolUse) -> Step<Checked> {
        if self.ctx.abort.is_triggered() {
            return Err(ToolOutput::error(
                "Interrupted by the user before it started",
            ));
        }
        let Some(tool) = self.registry.get(&call.name) else {
            return Err(ToolOutput::error(format!(
                "No such tool: {:?}. Available tools: {}",
                call.name,
                self.registry.names().join(", ")
            )));
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
                return Err(ToolOutput::error(format!(
                    "Invalid input for {}: {e}. Send the call again with a valid JSON object.",
                    call.name
                )));
            }
        };
        let input = check(&*tool, &call.name, input, &self.ctx).map_err(ToolOutput::error)?;
        Ok(Checked {
            tool,
            id: call.id,
            name: call.name,
            input,
            cwd: None,
        })
    }

    /// PreToolUse hooks: they may block or deny the call, rewrite its
    /// input (checked again), or say "allow" or "ask" for the decision to
    /// weigh (returned).
    async fn pre_hooks(&self, call: &mut Checked) -> Step<Option<String>> {
        if !self.hooks.wants("PreToolUse", &call.name) {
            return Ok(None);
        }
        let v = self
            .hooks
            .run("PreToolUse", &call.name, call.hook_fields())
            .await;
        self.report(&v.notices);
        if let Some(reason) = v.block {
            return Err(ToolOutput::error(format!(
                "Blocked by a PreToolUse hook: {reason}"
            )));
        }
        if let Some(rewritten) = v.updated_input {
            call.input = check(&*call.tool, &call.name, rewritten, &self.ctx).map_err(|e| {
                ToolOutput::error(format!(
                    "A PreToolUse hook rewrote the input into something invalid ({e}); the call was not run"
                ))
            })?;
        }
        match v.permission {
            Some((decision, reason)) if decision == "deny" => {
                Err(self.refuse(call, format!("Denied by a PreToolUse hook: {reason}")))
            }
            Some((decision, _)) => Ok(Some(decision)),
            None => Ok(None),
        }
    }

    /// The permit to run the call: the policy's decision and, when it
    /// asks, the approval half's answer. The call comes back with the
    /// input the yes was for.
    async fn permit(&self, call: Checked, hook_says: Option<&str>) -> Step<(Checked, Permit)> {
        // One set of facts for the decision and the rule a yes would add.
        let facts = call.facts();
        let answer = match self.decide(&facts, hook_says) {
            Decision::Allow(permit) => Answer::Yes(permit),
            Decision::Deny(reason) => Answer::No(reason.to_string()),
            Decision::Ask(question) => self.ask(&call, &facts, question).await,
        };
        drop(facts);
        match answer {
            Answer::Yes(permit) => Ok((call, permit)),
            Answer::YesTo(changed) => self.changed_input(call, changed),
            Answer::No(why) => Err(self.refuse(&call, why)),
        }
    }

    /// The policy's decision, weighed with a PreToolUse hook's say: a hook
    /// may approve what would ask, never what a rule denies.
    fn decide(&self, facts: &crate::policy::Call, hook_says: Option<&str>) -> Decision {
        match (self.policy.decide(facts), hook_says) {
            (Decision::Ask(question), Some("allow")) => Decision::Allow(question.approve()),
            (Decision::Allow(permit), Some("ask")) => Decision::Ask(permit.into_question(format!(
                "A PreToolUse hook asks for approval of {}",
                facts.tool
            ))),
            (d, _) => d,
        }
    }

    /// A yes to a changed input, from a PermissionRequest hook or an
    /// approver: valid, and what it now opens resolved and decided afresh
    /// (a rule that denies it still wins; what would ask is the yes).
    fn changed_input(&self, mut call: Checked, changed: Value) -> Step<(Checked, Permit)> {
        call.input = check(&*call.tool, &call.name, changed, &self.ctx).map_err(|e| {
            ToolOutput::error(format!(
                "The approver changed the input into something invalid ({e}); the call was not run"
            ))
        })?;
        let decision = self.policy.decide(&call.facts());
        let permit = match decision {
            Decision::Allow(p) => p,
            Decision::Ask(q) => q.approve(),
            Decision::Deny(reason) => return Err(self.refuse(&call, reason.to_string())),
        };
        Ok((call, permit))
    }

    /// A refusal: counted among the session's denials, and said to the
    /// model.
    fn refuse(&self, call: &Checked, why: String) -> ToolOutput {
        self.record_denial(&call.name, &call.id, &call.input);
        ToolOutput::error(why)
    }

    /// Runs the permitted call; an edit's file is checkpointed first, and
    /// a REPL's inner call runs under the watchdog.
    async fn call_tool(&self, call: &Checked, permit: &Permit, inner: bool) -> ToolOutput {
        let tool = &*call.tool;
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
            .then(|| tool.native_timeout(&call.input))
            .flatten()
            .and_then(watchdog_for);
        let running = tool.call(call.input.clone(), &self.ctx, permit);
        let Some((native, limit)) = watchdog else {
            return running.await;
        };
        // Dropping the call's future stops it (a command's processes are
        // killed with it).
        smol::future::or(running, async {
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

    /// PostToolUse (or, for an error, PostToolUseFailure) hooks: what they
    /// block or add is appended to the result.
    async fn post_hooks(&self, call: &Checked, mut output: ToolOutput) -> ToolOutput {
        let event = if output.is_error {
            "PostToolUseFailure"
        } else {
            "PostToolUse"
        };
        if !self.hooks.wants(event, &call.name) {
            return output;
        }
        let mut fields = call.hook_fields();
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
        output
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

/// Coerces (a "2" where the schema says integer) and checks an input: what
/// the model, a hook or an approver sent, as the tool will see it.
fn check(
    tool: &dyn Tool,
    name: &str,
    mut input: Value,
    ctx: &ToolContext,
) -> Result<Value, String> {
    check_input(&tool.input_schema(), &mut input)
        .map_err(|e| format!("Invalid input for {name}: {e}"))?;
    tool.validate(&input, ctx)?;
    Ok(input)
}

/// Adds the note that the shell's directory was put back to a Bash result.
fn note_shell_cwd(output: &mut ToolOutput, note: Option<String>) {
    let Some(note) = note else { return };
    if output.content == "(no output)" {
        output.content.clear();
    }
    if !output.content.is_empty() && !output.content.ends_with('\n') {
        output.content.push('\n');
    }
    output.content.push_str(&note);
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

#[cfg(test)]
mod tests;
