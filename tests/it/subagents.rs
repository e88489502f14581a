//! Sub-agents through the real binary: the child's conversation is its
//! own, depth is limited, background agents acknowledge before they
//! finish, and a child's permissions can only be narrower.

use crate::support;

use std::time::Duration;

use support::standin::{self, Reply, StandIn, Step};
use support::*;
use tern::json::Value;

fn agent_call(id: &str, input: &str) -> Reply {
    standin::tools_reply(&[(id, "Agent", input)])
}

fn user_texts(req: &standin::Request) -> String {
    body(req).get("messages").unwrap().to_json()
}

#[test]
fn a_child_sees_only_its_own_task_and_answers_the_parent() {
    let dir = scratch("child-isolation");
    let api = StandIn::start(vec![
        agent_call(
            "toolu_agent",
            r#"{"description": "count files", "prompt": "CHILD-TASK: count the files"}"#,
        ),
        standin::text_reply("There are 3 files."),
        standin::text_reply("The child says 3."),
    ]);
    let out =
        run(tern(&api.url, &dir).args(["-p", "PARENT-SECRET plan", "--output-format", "json"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 3);
    let child = user_texts(&reqs[1]);
    assert!(child.contains("CHILD-TASK"), "{child}");
    assert!(
        !child.contains("PARENT-SECRET"),
        "the child saw the parent's conversation"
    );
    assert!(
        reqs[1].body.contains("You are a sub-agent"),
        "the general-purpose prompt"
    );
    let result = tool_results(&reqs[2])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    assert!(
        result.contains("There are 3 files.") && result.contains("completed"),
        "{result}"
    );
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("The child says 3.")
    );
    // The child's transcript sits under the session's folder.
    let projects = home_of(&dir).join(".local/share/tern/projects");
    let found = std::fs::read_dir(&projects)
        .unwrap()
        .flatten()
        .flat_map(|p| std::fs::read_dir(p.path()).unwrap().flatten())
        .filter(|e| e.path().is_dir())
        .flat_map(|s| {
            std::fs::read_dir(s.path().join("subagents"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .count();
    assert_eq!(found, 1);
}

/// A child's requests are the session's: its cost and its model are in
/// the parent's result, and count against the budget.
#[test]
fn a_child_s_spending_is_in_the_session_s_cost() {
    let dir = scratch("child-cost");
    let replies = || {
        vec![
            agent_call(
                "toolu_agent",
                r#"{"description": "look", "prompt": "look around", "model": "claude-haiku-4-5"}"#,
            ),
            standin::text_reply("Looked."),
            standin::text_reply("Done."),
        ]
    };
    let api = StandIn::start(replies());
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(
        body(&api.requests()[1]).str_field("model"),
        Some("claude-haiku-4-5")
    );
    // Sonnet: 100 in + 40 out, then 100 in + 12 out; Haiku: 100 in + 12 out.
    let (sonnet, haiku) = (0.0009 + 0.00048, 0.00016);
    let result = last_result(&out);
    let cost = result
        .get("total_cost_usd")
        .and_then(Value::as_f64)
        .unwrap();
    assert!((cost - (sonnet + haiku)).abs() < 1e-9, "{cost}");
    let used = result.get("modelUsage").unwrap();
    let of = |m: &str, k: &str| used.get(m).and_then(|u| u.get(k)).and_then(Value::as_f64);
    assert!(
        (of("claude-haiku-4-5", "costUSD").unwrap() - haiku).abs() < 1e-9,
        "{used}"
    );
    assert_eq!(of("claude-haiku-4-5", "outputTokens"), Some(12.0), "{used}");
    assert!(
        (of("claude-sonnet-4-5", "costUSD").unwrap() - sonnet).abs() < 1e-9,
        "{used}"
    );

    // A budget the parent's first turn leaves room in but the child uses
    // up stops the session before its next turn.
    let api = StandIn::start(replies());
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--model",
        "claude-sonnet-4-5",
        "--max-budget-usd",
        "0.001",
        "--output-format",
        "json",
    ]));
    let result = last_result(&out);
    assert_eq!(
        result.str_field("subtype"),
        Some("error_max_budget_usd"),
        "{result}"
    );
    assert_eq!(
        api.requests().len(),
        2,
        "the parent asked again past its budget"
    );
}

#[test]
fn the_depth_limit_is_explicit() {
    let dir = scratch("child-depth");
    let api = StandIn::start(vec![
        agent_call(
            "toolu_a1",
            r#"{"description": "level one", "prompt": "go deeper"}"#,
        ),
        agent_call(
            "toolu_a2",
            r#"{"description": "level two", "prompt": "deeper still"}"#,
        ),
        standin::text_reply("could not go deeper"),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir)
        .env("TERN_MAX_AGENT_DEPTH", "1")
        .args(["-p", "x"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 4);
    let refused = tool_results(&reqs[2])[0].clone();
    assert_eq!(refused.get("is_error").and_then(Value::as_bool), Some(true));
    let text = refused.str_field("content").unwrap();
    assert!(
        text.contains("Sub-agent depth limit reached") && text.contains("limit is 1"),
        "{text}"
    );
}

#[test]
fn a_background_agent_acknowledges_first_and_reports_later() {
    let dir = scratch("child-background");
    let api = StandIn::start(vec![
        agent_call(
            "toolu_bg",
            r#"{"description": "slow job", "prompt": "BG-TASK: take your time", "run_in_background": true}"#,
        ),
        standin::text_reply("Started it; waiting."),
        standin::text_reply("The background job said: slow result."),
    ]);
    // The child's requests are recognised by its task and answered slowly.
    api.set_responder(Box::new(|req| {
        let first_user = tern::json::parse(&req.body).ok().and_then(|b| {
            b.get("messages")
                .and_then(|m| m.as_array().and_then(|a| a.first().cloned()))
        });
        first_user
            .is_some_and(|m| m.to_json().contains("BG-TASK"))
            .then(|| {
                let Reply::Stream(mut steps) = standin::text_reply("slow result") else {
                    unreachable!()
                };
                steps.insert(0, Step::Sleep(Duration::from_millis(300)));
                Reply::Stream(steps)
            })
    }));
    let out = run(tern(&api.url, &dir).args(["-p", "start the job", "--output-format", "json"]));
    assert_ok(&out);
    let reqs = api.requests();
    let parent: Vec<&standin::Request> = reqs
        .iter()
        .filter(|r| {
            !user_texts(r).starts_with(
                "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"BG-TASK",
            )
        })
        .collect();
    assert_eq!(parent.len(), 3, "parent requests");
    let ack = tool_results(parent[1])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    assert!(ack.contains("in the background (id agent-"), "{ack}");
    assert!(
        !user_texts(parent[1]).contains("slow result"),
        "the result came before the acknowledgement"
    );
    let last = user_texts(parent[2]);
    assert!(
        last.contains("<task-notification>") && last.contains("slow result"),
        "{last}"
    );
    assert!(last.contains("<status>completed</status>"));
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("The background job said: slow result.")
    );
}

#[test]
fn a_child_can_only_be_narrower() {
    let dir = scratch("child-narrow");
    std::fs::create_dir_all(dir.join(".tern/agents")).unwrap();
    std::fs::write(
        dir.join(".tern/agents/looker.md"),
        "---\nname: looker\ndescription: looks only\ntools: Bash, Read\npermissionMode: plan\n---\nOnly look.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".tern/agents/grabby.md"),
        "---\nname: grabby\ndescription: wants everything\npermissionMode: bypassPermissions\n---\n",
    )
    .unwrap();
    let touch = |name: &str| format!(r#"{{"command": "touch {name}"}}"#);
    // The parent may do anything; the plan-mode child may not write.
    let api = StandIn::start(vec![
        agent_call(
            "toolu_l",
            r#"{"description": "look", "prompt": "look", "subagent_type": "looker"}"#,
        ),
        standin::tools_reply(&[("toolu_t", "Bash", &touch("by-looker"))]),
        standin::text_reply("not allowed"),
        standin::text_reply("ok"),
    ]);
    let out = run(tern(&api.url, &dir).args(["-p", "x", "--permission-mode", "bypassPermissions"]));
    assert_ok(&out);
    assert!(
        !dir.join("by-looker").exists(),
        "a plan-mode child wrote a file"
    );
    let reqs = api.requests();
    let tools: Vec<String> = body(&reqs[1])
        .get("tools")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.str_field("name").map(str::to_string))
        .collect();
    assert_eq!(tools, ["Bash", "Read"]);
    assert!(reqs[1].body.contains("Only look."));

    // A child asking for more than its parent has does not get it.
    let api = StandIn::start(vec![
        agent_call(
            "toolu_g",
            r#"{"description": "grab", "prompt": "grab", "subagent_type": "grabby"}"#,
        ),
        standin::tools_reply(&[("toolu_t2", "Bash", &touch("by-grabby"))]),
        standin::text_reply("denied"),
        standin::text_reply("ok"),
    ]);
    let out = run(tern(&api.url, &dir).args(["-p", "x"]));
    assert_ok(&out);
    assert!(
        !dir.join("by-grabby").exists(),
        "the child widened its permissions"
    );
    let denied = tool_results(&api.requests()[2])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    assert!(denied.contains("Permission denied"), "{denied}");
}

#[test]
fn subagent_stop_hooks_run() {
    let dir = scratch("child-hook");
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        r#"{"hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command": "cat > subagent-stop.json"}]}]}}"#,
    )
    .unwrap();
    let api = StandIn::start(vec![
        agent_call("toolu_h", r#"{"description": "d", "prompt": "p"}"#),
        standin::text_reply("child done"),
        standin::text_reply("parent done"),
    ]);
    assert_ok(&run(trusted(&api.url, &dir).args(["-p", "x"])));
    let payload =
        tern::json::parse(&std::fs::read_to_string(dir.join("subagent-stop.json")).unwrap())
            .unwrap();
    assert_eq!(payload.str_field("hook_event_name"), Some("SubagentStop"));
    assert_eq!(payload.str_field("agent_type"), Some("general-purpose"));
}
