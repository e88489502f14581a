//! The one place an agent is put together, for the session and for each
//! sub-agent alike: the pipeline every call passes through (its policy,
//! tools, context, approver, hooks, where "always" answers are saved and
//! the sub-agents its Agent tool starts), then the loop around it.
//!
//! What differs between the session and a child is what the callers
//! hand in: the policy each builds from its [`PolicySpec`] (a child's is
//! its parent's, narrowed), the tools, the context, and the two things
//! only the session's own agent keeps — file checkpoints, and the
//! mailbox that carries what parts without a pipeline have to say.
//! `tests/it/architecture.rs` holds every other module to not making a
//! pipeline or an agent of its own.
//!
//! [`PolicySpec`]: crate::policy::PolicySpec

use std::rc::Rc;

use super::pipeline::Pipeline;
use super::subagent::Host;
use super::{Agent, Settings};
use crate::abort::Abort;
use crate::json::Value;
use crate::policy::Policy;
use crate::report::{Mailbox, Report};
use crate::session::checkpoint::Checkpoints;
use crate::tools::{Registry, ToolContext};

/// What one agent is made of besides its host.
pub(crate) struct Parts {
    pub policy: Policy,
    pub registry: Registry,
    pub ctx: ToolContext,
    pub settings: Settings,
    /// The conversation so far (a resumed session's, or nothing).
    pub history: Vec<Value>,
    pub abort: Abort,
}

/// What only the session's own agent has.
#[derive(Default)]
pub(crate) struct SessionOnly {
    /// Files' prior contents, kept before Edit and Write.
    pub checkpoints: Option<Checkpoints>,
    /// Where MCP, the transcript writer and sub-agents report, for the
    /// session's loop to pass on.
    pub reports: Option<Rc<Mailbox<Report>>>,
}

/// The agent `parts` describe, whose Agent tool starts children from
/// `host` and whose questions go to the host's approver.
pub(crate) fn assemble(host: Rc<Host>, parts: Parts, own: SessionOnly) -> Agent<'static> {
    let spec = &host.spec;
    let mut ctx = parts.ctx;
    ctx.subagents = Some(Rc::clone(&host) as Rc<dyn crate::tools::Subagents>);
    let mut pipeline = Pipeline::new(
        parts.registry,
        parts.policy,
        ctx,
        spec.approver.clone(),
        Rc::clone(&spec.hooks),
    );
    if let Some(rules) = &spec.local_rules {
        pipeline.set_local_rules(rules.clone());
    }
    if let Some(reports) = own.reports {
        pipeline.set_reports(reports);
    }
    if let Some(checkpoints) = own.checkpoints {
        pipeline.set_checkpoints(checkpoints);
    }
    let (ex, client) = (spec.ex, spec.client.clone());
    pipeline.set_subagents(host);
    Agent::new(
        ex,
        client,
        parts.settings,
        pipeline.share(),
        parts.abort,
        parts.history,
    )
}
