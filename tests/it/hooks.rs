//! Hooks with real scripts through the real binary: block with exit 2,
//! rewrite input (re-validated), add context the model sees in the next
//! request, and send the model back to work from a Stop hook.

use crate::support;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn settings(dir: &std::path::Path, hooks_json: &str) {
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        format!(r#"{{"hooks": {hooks_json}}}"#),
    )
    .unwrap();
}

fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.with_extension(format!("{name}.sh"));
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn pre_tool_use_exit_2_blocks_and_the_model_sees_stderr() {
    let dir = scratch("hook-block");
    std::fs::write(dir.join("keep.txt"), "x").unwrap();
    let guard = script(
        &dir,
        "guard",
        "cat > /dev/null\necho 'deleting is not allowed here' >&2\nexit 2",
    );
    settings(
        &dir,
        &format!(
            r#"{{"PreToolUse":[{{"matcher":"Bash","hooks":[{{"type":"command","command":"{guard}"}}]}}]}}"#
        ),
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_rm", "Bash", r#"{"command": "rm keep.txt"}"#)]),
        standin::text_reply("ok"),
    ]);
    let out = run(trusted(&api.url, &dir).args([
        "-p",
        "clean up",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert_ok(&out);
    assert!(dir.join("keep.txt").exists(), "the blocked command ran");
    let r = &tool_results(&api.requests()[1])[0];
    assert_eq!(r.get("is_error").and_then(Value::as_bool), Some(true));
    assert!(
        r.str_field("content")
            .unwrap()
            .contains("deleting is not allowed here"),
        "{r:?}"
    );
}

#[test]
fn pre_tool_use_rewrites_are_validated_again() {
    let dir = scratch("hook-rewrite");
    let rewrite = script(
        &dir,
        "rewrite",
        r#"input=$(cat)
case "$input" in
  *'"touch first"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"touch second"}}}' ;;
  *'"touch bad"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":42}}}' ;;
esac"#,
    );
    settings(
        &dir,
        &format!(
            r#"{{"PreToolUse":[{{"matcher":"Bash","hooks":[{{"type":"command","command":"{rewrite}"}}]}}]}}"#
        ),
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_1", "Bash", r#"{"command": "touch first"}"#),
            ("toolu_2", "Bash", r#"{"command": "touch bad"}"#),
        ]),
        standin::text_reply("ok"),
    ]);
    let out =
        run(trusted(&api.url, &dir).args(["-p", "x", "--permission-mode", "bypassPermissions"]));
    assert_ok(&out);
    assert!(
        dir.join("second").exists() && !dir.join("first").exists(),
        "the rewrite was not applied"
    );
    assert!(!dir.join("bad").exists());
    let results = tool_results(&api.requests()[1]);
    assert!(results[0].get("is_error").is_none());
    let refused = results[1].str_field("content").unwrap();
    assert!(
        refused.contains("rewrote the input into something invalid")
            && refused.contains("command must be string"),
        "{refused}"
    );
}

#[test]
fn context_from_hooks_reaches_the_next_request() {
    let dir = scratch("hook-context");
    let on_prompt = script(
        &dir,
        "prompt",
        "cat > /dev/null\necho 'The deploy freeze is on until Friday.'",
    );
    let after = script(
        &dir,
        "after",
        r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint found 2 warnings"}}'"#,
    );
    settings(
        &dir,
        &format!(
            r#"{{"UserPromptSubmit":[{{"hooks":[{{"type":"command","command":"{on_prompt}"}}]}}],
                "PostToolUse":[{{"matcher":"Glob","hooks":[{{"type":"command","command":"{after}"}}]}}]}}"#
        ),
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_g", "Glob", r#"{"pattern": "*"}"#)]),
        standin::text_reply("ok"),
    ]);
    let out = run(trusted(&api.url, &dir).args(["-p", "what now?"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert!(
        reqs[0]
            .body
            .contains("The deploy freeze is on until Friday.")
    );
    let r = &tool_results(&reqs[1])[0];
    assert!(
        r.str_field("content")
            .unwrap()
            .contains("lint found 2 warnings"),
        "{r:?}"
    );
}

#[test]
fn stop_hook_sends_the_model_back_once() {
    let dir = scratch("hook-stop");
    let marker = dir.with_extension("stopped-once");
    let stop = script(
        &dir,
        "stop",
        &format!(
            "cat > /dev/null\nif [ ! -e {m} ]; then touch {m}; echo 'Run the tests before finishing.' >&2; exit 2; fi",
            m = marker.display()
        ),
    );
    settings(
        &dir,
        &format!(r#"{{"Stop":[{{"hooks":[{{"type":"command","command":"{stop}"}}]}}]}}"#),
    );
    let api = StandIn::start(vec![
        standin::text_reply("done early"),
        standin::text_reply("tests pass, done"),
    ]);
    let out = run(trusted(&api.url, &dir).args(["-p", "fix it", "--output-format", "json"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].body.contains("Run the tests before finishing."));
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("tests pass, done")
    );
}

#[test]
fn hooks_receive_session_facts_and_project_dir() {
    let dir = scratch("hook-input");
    let dump = dir.with_extension("hook-input.txt");
    let spy = script(
        &dir,
        "spy",
        &format!(
            "cat > {d}; echo \"DIR=$TERN_PROJECT_DIR CLAUDE=$CLAUDE_PROJECT_DIR\" >> {d}",
            d = dump.display()
        ),
    );
    settings(
        &dir,
        &format!(
            r#"{{"PreToolUse":[{{"matcher":"Read|Glob","hooks":[{{"type":"command","command":"{spy}"}}]}}]}}"#
        ),
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Glob", r#"{"pattern": "*.md"}"#)]),
        standin::text_reply("ok"),
    ]);
    let out = run(trusted(&api.url, &dir).args(["-p", "x", "--output-format", "json"]));
    assert_ok(&out);
    let text = std::fs::read_to_string(&dump).unwrap();
    let (json_line, env_line) = text.split_once("DIR=").unwrap();
    let input = tern::json::parse(json_line.trim()).unwrap();
    assert_eq!(input.str_field("hook_event_name"), Some("PreToolUse"));
    assert_eq!(input.str_field("tool_name"), Some("Glob"));
    assert_eq!(input.str_field("tool_use_id"), Some("toolu_r"));
    assert_eq!(
        input.get("tool_input").unwrap().str_field("pattern"),
        Some("*.md")
    );
    assert_eq!(
        input.str_field("session_id"),
        last_result(&out).str_field("session_id")
    );
    assert!(
        input
            .str_field("transcript_path")
            .unwrap()
            .ends_with(".jsonl")
    );
    assert_eq!(input.str_field("permission_mode"), Some("default"));
    let cwd = dir.display().to_string();
    assert_eq!(env_line.trim(), format!("{cwd} CLAUDE={cwd}"));
}

/// PermissionRequest hooks answer where a person would be asked — here
/// in `-p`, where nobody could: an allow runs the call, a deny refuses it
/// with the hook's message, and the hook sees the rule a yes would add.
/// Without the hook both calls are refused.
#[test]
fn permission_request_hooks_answer_in_a_persons_place() {
    for hooked in [false, true] {
        let dir = scratch("hook-permission-request");
        let decide = script(
            &dir,
            "decide",
            r#"input=$(cat); echo "$input" >> requests.jsonl
case "$input" in
  *'touch ok.txt'*) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}';;
  *) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not that one"}}}';;
esac"#,
        );
        if hooked {
            settings(
                &dir,
                &format!(
                    r#"{{"PermissionRequest":[{{"matcher":"Bash","hooks":[{{"type":"command","command":"{decide}"}}]}}]}}"#
                ),
            );
        }
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_1", "Bash", r#"{"command": "touch ok.txt"}"#)]),
            standin::tools_reply(&[("toolu_2", "Bash", r#"{"command": "touch no.txt"}"#)]),
            standin::text_reply("done"),
        ]);
        let out = run(trusted(&api.url, &dir).args(["-p", "touch two"]));
        assert_ok(&out);
        assert_eq!(dir.join("ok.txt").exists(), hooked);
        assert!(!dir.join("no.txt").exists());
        let reqs = api.requests();
        let second = tool_results(&reqs[2])[0]
            .str_field("content")
            .unwrap()
            .to_string();
        if hooked {
            assert!(second.contains("not that one"), "{second}");
            let seen = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
            let first = tern::json::parse(seen.lines().next().unwrap()).unwrap();
            assert_eq!(
                first.str_field("hook_event_name"),
                Some("PermissionRequest")
            );
            assert_eq!(first.str_field("tool_name"), Some("Bash"));
            let suggestions = first.get("permission_suggestions").unwrap().to_json();
            assert!(suggestions.contains("addRules"), "{suggestions}");
        } else {
            assert!(second.contains("Nobody can approve"), "{second}");
        }
    }
}

/// SubagentStart hooks run as a child starts, with its id and type, and
/// what they add reaches the child's first request (not the parent's).
#[test]
fn subagent_start_hooks_give_the_child_context() {
    let dir = scratch("hook-subagent-start");
    let hook = script(
        &dir,
        "start",
        r#"cat > subagent-start.json; echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"CHILD-CONTEXT from the hook"}}'"#,
    );
    settings(
        &dir,
        &format!(
            r#"{{"SubagentStart":[{{"matcher":"general-purpose","hooks":[{{"type":"command","command":"{hook}"}}]}}]}}"#
        ),
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_a", "Agent", r#"{"description": "d", "prompt": "p"}"#)]),
        standin::text_reply("child done"),
        standin::text_reply("parent done"),
    ]);
    assert_ok(&run(trusted(&api.url, &dir).args(["-p", "x"])));
    let reqs = api.requests();
    assert!(reqs[1].body.contains("CHILD-CONTEXT from the hook"));
    assert!(!reqs[0].body.contains("CHILD-CONTEXT") && !reqs[2].body.contains("CHILD-CONTEXT"));
    let payload =
        tern::json::parse(&std::fs::read_to_string(dir.join("subagent-start.json")).unwrap())
            .unwrap();
    assert_eq!(payload.str_field("hook_event_name"), Some("SubagentStart"));
    assert_eq!(payload.str_field("agent_type"), Some("general-purpose"));
    assert!(
        payload
            .str_field("agent_id")
            .is_some_and(|id| id.starts_with("agent-"))
    );
}
