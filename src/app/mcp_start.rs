//! Starting the MCP servers of a session (feature `mcp`).

use std::rc::Rc;
use std::time::Duration;

use smol::LocalExecutor;

use crate::config::Runtime;
use crate::mcp::{self, Hub, Status};

/// MCP_TIMEOUT (ms): how long a server may take to start.
fn timeout(env: &dyn Fn(&str) -> Option<String>) -> Duration {
    Duration::from_millis(
        env("MCP_TIMEOUT")
            .and_then(|v| v.parse().ok())
            .unwrap_or(30_000),
    )
}

/// MCP_TOOL_TIMEOUT (ms): how long one tool call may take.
fn tool_timeout(env: &dyn Fn(&str) -> Option<String>) -> Duration {
    Duration::from_millis(
        env("MCP_TOOL_TIMEOUT")
            .and_then(|v| v.parse().ok())
            .unwrap_or(600_000),
    )
}

/// How long the first turn waits for servers still starting
/// (TERN_MCP_FIRST_WAIT_MS); slower ones join later.
fn first_wait(env: &dyn Fn(&str) -> Option<String>, limit: Duration) -> Duration {
    Duration::from_millis(
        env("TERN_MCP_FIRST_WAIT_MS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(5_000),
    )
    // Past MCP_TIMEOUT every server has settled; a little margin lets
    // the last timeout land before the first turn looks.
    .min(limit + Duration::from_millis(500))
}

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

/// The first turn's wait (see [`Wait::First`]).
pub fn first_turn_wait(env: &dyn Fn(&str) -> Option<String>) -> Duration {
    first_wait(env, timeout(env))
}

pub async fn start(
    ex: &'static LocalExecutor<'static>,
    rt: &Runtime,
    env: &dyn Fn(&str) -> Option<String>,
    wait: Wait,
    carrier: Option<Rc<dyn mcp::sdk::Carrier>>,
) -> Option<Rc<Hub>> {
    let (configs, warnings) = mcp::config::load(
        &rt.cwd,
        &rt.mcp_settings,
        &rt.mcp_configs,
        rt.strict_mcp,
        env,
        &|k| rt.child_env.removes(k),
    );
    for w in warnings {
        eprintln!("tern: warning: MCP: {w}");
    }
    // An SDK may add servers later (initialize), so its session always
    // has a hub.
    if configs.is_empty() && !rt.stream_input {
        return None;
    }
    let limit = timeout(env);
    let wait = match wait {
        Wait::All => limit,
        Wait::First => first_wait(env, limit),
        Wait::None => Duration::ZERO,
    };
    let approved = |name: &str| rt.mcp_approval.allows(name);
    let hub = Hub::start(
        ex,
        configs,
        &approved,
        &rt.child_env,
        &rt.cwd,
        limit,
        tool_timeout(env),
        wait,
        carrier,
    )
    .await;
    for s in hub.servers() {
        match s.status() {
            Status::Failed(reason) => eprintln!("tern: MCP server {} failed: {reason}", s.name),
            Status::NeedsApproval => eprintln!(
                "tern: MCP server {} not started: {}",
                s.name,
                mcp::APPROVAL_HINT
            ),
            _ => {}
        }
    }
    Some(hub)
}

/// `tern mcp list`.
pub async fn list(ex: &'static LocalExecutor<'static>, rt: &Runtime) -> i32 {
    let env = |k: &str| std::env::var(k).ok();
    let Some(hub) = start(ex, rt, &env, Wait::All, None).await else {
        println!("no MCP servers configured (.mcp.json, mcpServers in settings, or --mcp-config)");
        return 0;
    };
    let mut failed = false;
    for s in hub.servers() {
        match s.status() {
            Status::Connected => println!("{:<20} connected   {} tools", s.name, s.tool_count()),
            Status::Pending => println!("{:<20} pending", s.name),
            Status::Disabled => println!("{:<20} disabled", s.name),
            Status::NeedsApproval => {
                println!("{:<20} needs-approval  {}", s.name, mcp::APPROVAL_HINT)
            }
            Status::Failed(reason) => {
                failed = true;
                println!("{:<20} failed      {reason}", s.name);
            }
        }
    }
    hub.shutdown().await;
    i32::from(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the tool timeout was read in milliseconds and kept in
    /// whole seconds, so anything under a second became no time at all.
    #[test]
    fn tool_timeouts_keep_their_milliseconds() {
        let env = |k: &str| (k == "MCP_TOOL_TIMEOUT").then(|| "1500".to_string());
        assert_eq!(tool_timeout(&env), Duration::from_millis(1500));
        let half = |k: &str| (k == "MCP_TOOL_TIMEOUT").then(|| "500".to_string());
        assert_eq!(tool_timeout(&half), Duration::from_millis(500));
        assert_eq!(tool_timeout(&|_| None), Duration::from_secs(600));
    }
}
