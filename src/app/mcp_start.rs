//! Starting the MCP servers of a session (feature `mcp`).

use std::rc::Rc;
use std::time::Duration;

use smol::LocalExecutor;

use super::build::Notes;
use crate::config::Runtime;
use crate::mcp::{self, Hub, Status};

/// How long `start` waits for the servers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until every one has settled (MCP_TIMEOUT at most): listings.
    All,
    /// TERN_MCP_FIRST_WAIT_MS at most: a session's first turn.
    First,
    /// Not at all: an SDK session, whose own servers answer only once
    /// its control channel is read; the first prompt waits instead.
    None,
}

pub async fn start(
    ex: &'static LocalExecutor<'static>,
    rt: &Runtime,
    wait: Wait,
    carrier: Option<Rc<dyn mcp::sdk::Carrier>>,
    offer: mcp::serve::Offer,
    notes: &mut Notes,
) -> Option<Rc<Hub>> {
    let (configs, warnings) = configs(rt);
    for w in warnings {
        notes.warning(format!("warning: MCP: {w}"));
    }
    // An SDK may add servers later (initialize), so its session always
    // has a hub.
    if configs.is_empty() && !rt.stream_input {
        return None;
    }
    let times = rt.mcp_timeouts;
    let mut remote = remote_setup(rt);
    // A session may have to sign in again for more scope (a step-up);
    // a listing (`tern mcp list`, doctor) only reports.
    if wait != Wait::All {
        remote.browser = mcp::oauth::Browser::from_env(&|k| rt.env.get(k));
    }
    let wait = match wait {
        Wait::All => times.start,
        Wait::First => times.first_wait,
        Wait::None => Duration::ZERO,
    };
    let approved = |name: &str| rt.mcp_approval.allows(name);
    let hub = Hub::start(
        ex,
        configs,
        &approved,
        &rt.child_env,
        &rt.cwd,
        times.start,
        times.tool,
        wait,
        carrier,
        remote,
        offer,
    )
    .await;
    for s in hub.servers() {
        match s.status() {
            Status::Failed(reason) => {
                notes.warning(format!("MCP server {} failed: {reason}", s.name))
            }
            Status::NeedsApproval => notes.warning(format!(
                "MCP server {} not started: {}",
                s.name,
                mcp::APPROVAL_HINT
            )),
            Status::NeedsAuth(why) => notes.warning(format!(
                "MCP server {} needs a sign-in: {why}; run: tern mcp login {}",
                s.name, s.name
            )),
            _ => {}
        }
    }
    Some(hub)
}

/// What a session offers its servers: elicitation where someone answers
/// forms (a person, an SDK host, or the user's standing choice
/// TERN_MCP_ELICITATION=accept-defaults), sampling where someone or an
/// `McpSampling` allow rule can allow it.
pub fn offer(rt: &Runtime, forms: bool, grants: bool) -> mcp::serve::Offer {
    let rule_allows = rt.rules.iter().any(|r| {
        r.tool == mcp::serve::SAMPLING_RULE && r.behavior == crate::policy::Behavior::Allow
    });
    mcp::serve::Offer {
        elicitation: forms || rt.mcp_accept_defaults,
        sampling: grants || rule_allows,
    }
}

/// What a connected server offers and what tern offered it.
pub fn offers_line(s: &mcp::Server) -> String {
    let theirs = s.offers().join(", ");
    let theirs = if theirs.is_empty() {
        "nothing"
    } else {
        &theirs
    };
    format!("offers {theirs}; tern offers {}", s.granted().words())
}

/// Every configured server, and what was wrong with the sources.
pub fn configs(rt: &Runtime) -> (Vec<mcp::config::ServerConfig>, Vec<String>) {
    mcp::config::load(
        &rt.mcp_settings,
        &rt.mcp_configs,
        rt.strict_mcp,
        &|k| rt.env.get(k),
        &|k| rt.child_env.removes(k),
    )
}

/// TLS roots and the sign-in store for remote servers.
pub fn remote_setup(rt: &Runtime) -> mcp::RemoteSetup {
    mcp::RemoteSetup {
        extra_ca_pem: rt.client.extra_ca_pem.clone(),
        auth: Some(mcp::oauth::Store::new(&rt.state_root())),
        ..mcp::RemoteSetup::default()
    }
}
