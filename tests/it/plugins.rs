//! Plugins through the binary: a Claude Code-format folder with one of
//! each part (a command, an agent, a skill, hooks and an MCP server)
//! works in `-p`, `tern plugin list` and `tern doctor` say what loaded;
//! a plugin the repository names, or that lies inside the checkout, is
//! held to the project's trust (the attack: a pull request's plugin whose
//! hook and server would run in CI), and a broken folder is refused with
//! the reason.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

/// A plugin named `name` in `root`: `/NAME:hello`, agent `NAME:reviewer`,
/// skill `NAME:style`, a SessionStart hook that writes `session.log` and a
/// PreToolUse hook that writes `pre.log` (both through a script under
/// `${CLAUDE_PLUGIN_ROOT}`), and MCP server `tools` (the scripted
/// server's witness mode, copied in and started from the plugin's root).
pub(crate) fn write_plugin(root: &Path, name: &str) {
    let w = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        ".claude-plugin/plugin.json",
        &format!(r#"{{"name": "{name}", "version": "1.2.0", "description": "one of each"}}"#),
    );
    w(
        "commands/hello.md",
        "---\ndescription: Greet someone\n---\nGreet $ARGUMENTS warmly, from the plugin.\n",
    );
    w(
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews a change\n---\nYou are the plugin's reviewer.\n",
    );
    w(
        "skills/style/SKILL.md",
        "---\nname: style\ndescription: The house style\n---\nTabs, never spaces.\n",
    );
    w(
        "scripts/mark.sh",
        "#!/bin/sh\ncat >> \"$(dirname \"$0\")/../$1\"\necho >> \"$(dirname \"$0\")/../$1\"\n",
    );
    std::fs::set_permissions(
        root.join("scripts/mark.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    w(
        "hooks/hooks.json",
        r#"{"hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/scripts/mark.sh\" session.log"}]}],
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/scripts/mark.sh\" pre.log"}]}]
        }}"#,
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_server.py");
    std::fs::copy(script, root.join("server.py")).unwrap();
    w(
        ".mcp.json",
        r#"{"mcpServers": {"tools": {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/server.py", "witness"]}}}"#,
    );
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect()
}

#[test]
fn every_part_of_a_plugin_works_in_print_mode_and_is_listed() {
    let dir = scratch("plugin-parts");
    // Outside the checkout: the user's own plugin.
    let plugin = dir.with_extension("plugins").join("myplug");
    write_plugin(&plugin, "myplug");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_s", "Skill", r#"{"skill": "myplug:style"}"#)]),
        standin::tools_reply(&[(
            "toolu_a",
            "Agent",
            r#"{"description": "review", "prompt": "review the change", "subagent_type": "myplug:reviewer"}"#,
        )]),
        standin::text_reply("The change looks right."),
        standin::tools_reply(&[("toolu_m", "mcp__plugin_myplug_tools__peek", "{}")]),
        standin::text_reply("Done."),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "/myplug:hello world",
        "--plugin-dir",
        plugin.to_str().unwrap(),
        "--allowedTools",
        "mcp__plugin_myplug_tools__peek",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = lines(&out);
    let init = &all[0];
    let plugins = init.get("plugins").and_then(Value::as_array).unwrap();
    assert_eq!(plugins.len(), 1, "{init}");
    assert_eq!(plugins[0].str_field("name"), Some("myplug"));
    assert!(strings(init, "slash_commands").contains(&"myplug:hello".to_string()));
    assert!(strings(init, "agents").contains(&"myplug:reviewer".to_string()));
    assert!(strings(init, "skills").contains(&"myplug:style".to_string()));
    assert!(
        strings(init, "tools").contains(&"mcp__plugin_myplug_tools__peek".to_string()),
        "{init}\n{stderr}"
    );

    let reqs = api.requests();
    assert_eq!(reqs.len(), 5, "{stderr}");
    // The command: its text, with the arguments, is the prompt.
    assert!(
        reqs[0]
            .body
            .contains("Greet world warmly, from the plugin."),
        "{}",
        reqs[0].body
    );
    assert!(!reqs[0].body.contains("/myplug:hello"));
    // The skill loaded by its namespaced name.
    let skill = tool_results(&reqs[1])[0].to_json();
    assert!(skill.contains("Tabs, never spaces."), "{skill}");
    // The agent ran with the plugin's definition.
    let sub = body(&reqs[2]).get("system").unwrap().to_json();
    assert!(sub.contains("You are the plugin's reviewer."), "{sub}");
    // The MCP server started from the plugin's copy, and its tool ran.
    assert!(dir.join("started.json").exists(), "{stderr}");
    assert!(dir.join("peeked").exists(), "{stderr}");
    // The hooks ran: SessionStart once, PreToolUse for each call.
    let session = std::fs::read_to_string(plugin.join("session.log")).unwrap();
    assert!(
        session.contains("\"hook_event_name\":\"SessionStart\""),
        "{session}"
    );
    let pre = std::fs::read_to_string(plugin.join("pre.log")).unwrap();
    for tool in ["Skill", "Agent", "mcp__plugin_myplug_tools__peek"] {
        assert!(
            pre.contains(&format!("\"tool_name\":\"{tool}\"")),
            "{tool}: {pre}"
        );
    }
    assert_eq!(last_result(&out).str_field("subtype"), Some("success"));

    // `tern plugin list` and `tern doctor` say what loaded.
    let listed = run(tern(&api.url, &dir).args([
        "plugin",
        "list",
        "--plugin-dir",
        plugin.to_str().unwrap(),
    ]));
    assert_ok(&listed);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("myplug: loaded 1.2.0"), "{text}");
    assert!(text.contains("commands /myplug:hello"), "{text}");
    assert!(text.contains("agents myplug:reviewer"), "{text}");
    assert!(text.contains("skills myplug:style"), "{text}");
    assert!(text.contains("hooks 2; MCP servers 1"), "{text}");
    assert!(text.contains("; yours)"), "{text}");
    let doctor = run(tern(&api.url, &dir).args([
        "doctor",
        "--output-format",
        "json",
        "--plugin-dir",
        plugin.to_str().unwrap(),
    ]));
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        report.contains("\"section\":\"plugins\"") && report.contains("myplug:hello"),
        "{report}"
    );
}

#[test]
fn a_repositorys_plugin_is_held_to_the_projects_trust() {
    let dir = scratch("plugin-untrusted");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    // The attack: the checkout names its own plugin in its settings, and
    // a CI workflow passes another one inside the checkout on the
    // command line. Both would run a hook and start a server.
    write_plugin(&dir.join("tools/named"), "named");
    write_plugin(&dir.join("tools/passed"), "passed");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(
        dir.join(".claude/settings.json"),
        r#"{"plugins": ["./tools/named"]}"#,
    )
    .unwrap();
    let args = [
        "-p",
        "/named:hello there",
        "--plugin-dir",
        "tools/passed",
        "--output-format",
        "stream-json",
        "--verbose",
    ];
    let api = StandIn::start(vec![standin::text_reply("ok")]);
    let out = run(tern(&api.url, &dir).args(args));
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for p in ["named", "passed"] {
        let root = dir.join("tools").join(p);
        assert!(
            !root.join("session.log").exists(),
            "{p}'s hook ran untrusted"
        );
    }
    assert!(
        !dir.join("started.json").exists(),
        "a server started untrusted"
    );
    let init = &lines(&out)[0];
    // Documents run nothing: the commands are there, as a project's are.
    assert!(strings(init, "slash_commands").contains(&"named:hello".to_string()));
    assert!(strings(init, "slash_commands").contains(&"passed:hello".to_string()));
    assert!(api.requests()[0].body.contains("Greet there warmly"));
    let ignored = init.get("trust").unwrap().to_json();
    assert!(
        ignored.contains("hook SessionStart") && ignored.contains("MCP server plugin:named:tools"),
        "{ignored}"
    );
    assert!(stderr.contains("plugin:passed:tools"), "{stderr}");
    let listed = run(tern(&api.url, &dir).args(["plugin", "list", "--plugin-dir", "tools/passed"]));
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("held to the project's trust"), "{text}");
    assert!(text.contains("not used: hook SessionStart"), "{text}");

    // Trusted, the same plugins' hooks run: the gate was what stopped them.
    let api = StandIn::start(vec![standin::text_reply("ok")]);
    let out = run(trusted(&api.url, &dir).args(args));
    assert_ok(&out);
    for p in ["named", "passed"] {
        assert!(
            dir.join("tools").join(p).join("session.log").exists(),
            "{p}'s hook did not run when trusted"
        );
    }
}

#[test]
fn a_broken_folder_is_refused_with_the_reason_and_parts_stay_inside() {
    let dir = scratch("plugin-refused");
    let outside = dir.with_extension("outside");
    std::fs::create_dir_all(outside.join("empty")).unwrap();
    std::fs::write(outside.join("secret.md"), "token = hunter2\n").unwrap();
    // A manifest whose parts point out of the plugin, and a command that
    // is a link to a file outside it.
    let plugin = outside.join("leaky");
    write_plugin(&plugin, "leaky");
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "leaky", "commands": ["../secret.md"], "agents": "/etc"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), plugin.join("commands/leak.md")).unwrap();
    let bad_name = outside.join("badname");
    std::fs::create_dir_all(bad_name.join(".claude-plugin")).unwrap();
    std::fs::write(
        bad_name.join(".claude-plugin/plugin.json"),
        r#"{"name": "../x"}"#,
    )
    .unwrap();
    let api = StandIn::start(vec![]);
    let listed = run(tern(&api.url, &dir).args([
        "plugin",
        "list",
        "--plugin-dir",
        outside.join("empty").to_str().unwrap(),
        "--plugin-dir",
        outside.join("missing").to_str().unwrap(),
        "--plugin-dir",
        bad_name.to_str().unwrap(),
        "--plugin-dir",
        plugin.to_str().unwrap(),
        "--plugin-dir",
        plugin.to_str().unwrap(),
    ]));
    assert_eq!(listed.status.code(), Some(1), "refusals fail the listing");
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("no .claude-plugin/plugin.json"), "{text}");
    assert!(text.contains("cannot read the folder"), "{text}");
    assert!(text.contains("is not 1-64 letters"), "{text}");
    assert!(text.contains("already loaded"), "{text}");
    assert!(
        text.contains("commands \"../secret.md\" left out"),
        "{text}"
    );
    assert!(text.contains("agents \"/etc\" left out"), "{text}");
    assert!(text.contains("commands /leaky:hello;"), "{text}");
    assert!(!text.contains("leaky:leak"), "{text}");
    assert!(!text.contains("hunter2"));
}
