//! What the processes tern starts see: provider credentials stay with
//! tern (Bash, sandboxed Bash, hooks), unless the user's own settings pass
//! them through; a repository's settings cannot; stdin is /dev/null, so
//! `rg TODO` searches the directory. Each shown both ways through the
//! binary.

mod support;

use std::path::Path;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;
use tern::obj;

const PROBE: &str = "echo \"A=${ANTHROPIC_API_KEY:-gone} T=${ANTHROPIC_AUTH_TOKEN:-gone} \
O=${OPENAI_API_KEY:-gone} C=${MY_PROVIDER_KEY:-gone} G=${GITHUB_TOKEN:-gone}\"";

/// One Bash call in bypass mode; its output.
fn bash(dir: &Path, command: &str, args: &[&str]) -> String {
    let input = obj! { "command" => command }.to_json();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_b", "Bash", &input)]),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, dir)
        .env("ANTHROPIC_AUTH_TOKEN", "tok-secret")
        .env("OPENAI_API_KEY", "sk-openai-secret")
        .env("MY_PROVIDER_KEY", "sk-custom-secret")
        .env("GITHUB_TOKEN", "ghp-secret")
        .args(["-p", "x", "--permission-mode", "bypassPermissions"])
        .args(args));
    assert_ok(&out);
    tool_results(&api.requests()[1])[0]
        .str_field("content")
        .unwrap_or_default()
        .to_string()
}

#[test]
fn bash_commands_do_not_see_provider_credentials() {
    let dir = scratch("env-bash");
    // The user's own settings pass everything through: the test sees a leak.
    let pass = r#"{"apiKeyEnv":"MY_PROVIDER_KEY","passEnv":["ANTHROPIC_API_KEY","ANTHROPIC_AUTH_TOKEN","OPENAI_API_KEY","MY_PROVIDER_KEY"]}"#;
    let open = bash(&dir, PROBE, &["--settings", pass]);
    assert!(
        open.contains("A=sk-test T=tok-secret O=sk-openai-secret C=sk-custom-secret G=ghp-secret"),
        "{open}"
    );
    // By default they are gone; scrubEnv adds names (GITHUB_TOKEN here).
    let scrub = r#"{"apiKeyEnv":"MY_PROVIDER_KEY","scrubEnv":["GITHUB_*"]}"#;
    let guarded = bash(&dir, PROBE, &["--settings", scrub]);
    assert!(
        guarded.contains("A=gone T=gone O=gone C=gone G=gone"),
        "{guarded}"
    );
    let plain = bash(&dir, PROBE, &[]);
    assert!(plain.contains("A=gone T=gone O=gone"), "{plain}");
    assert!(
        plain.contains("G=ghp-secret"),
        "not a credential unless listed"
    );
}

#[test]
fn a_repository_cannot_pass_credentials_to_itself() {
    for file in [".tern/settings.json", ".claude/settings.local.json"] {
        let dir = scratch("env-repo");
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"passEnv":["ANTHROPIC_API_KEY"]}"#).unwrap();
        let out = bash(&dir, PROBE, &[]);
        assert!(out.contains("A=gone"), "{file}: {out}");
    }
}

#[test]
fn sandboxed_commands_do_not_see_provider_credentials() {
    if runner().is_some() {
        return skip_emulated("sandboxed env test", "qemu-user has no landlock");
    }
    if tern::harness::sandbox_probe().landlock.is_err() {
        return skip("sandboxed env test", "landlock is not available");
    }
    let dir = scratch("env-sandbox");
    let on = r#"{"sandbox":{"enabled":true}}"#;
    let open = bash(
        &dir,
        PROBE,
        &[
            "--settings",
            r#"{"sandbox":{"enabled":true},"passEnv":["ANTHROPIC_API_KEY"]}"#,
        ],
    );
    assert!(open.contains("A=sk-test"), "{open}");
    let guarded = bash(&dir, PROBE, &["--settings", on]);
    assert!(guarded.contains("A=gone T=gone O=gone"), "{guarded}");
}

#[test]
fn hooks_do_not_see_provider_credentials() {
    let dir = scratch("env-hook");
    let hook = |pass: bool| {
        let mut settings = obj! {
            "hooks" => obj! { "PreToolUse" => vec![obj! {
                "matcher" => "Bash",
                "hooks" => vec![obj! { "type" => "command", "command" => "echo \"A=${ANTHROPIC_API_KEY:-gone}\" >> hook-env.txt" }],
            }] },
        };
        if pass && let Value::Object(m) = &mut settings {
            m.insert("passEnv", vec![Value::from("ANTHROPIC_API_KEY")]);
        }
        settings.to_json()
    };
    bash(&dir, "true", &["--settings", &hook(true)]);
    bash(&dir, "true", &["--settings", &hook(false)]);
    let seen = std::fs::read_to_string(dir.join("hook-env.txt")).unwrap();
    assert_eq!(seen, "A=sk-test\nA=gone\n");
}

#[test]
fn stdin_is_dev_null_so_rg_searches_the_directory() {
    if std::process::Command::new("rg")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("rg stdin test", "needs ripgrep (ci/setup.sh installs it)");
    }
    let dir = scratch("env-rg");
    std::fs::write(dir.join("todo.txt"), "TODO: write the tests\n").unwrap();
    // On a pipe, rg searches the pipe (here empty) and finds nothing.
    let piped = bash(&dir, "true | rg TODO", &[]);
    assert!(!piped.contains("todo.txt"), "{piped}");
    let out = bash(&dir, "rg TODO", &[]);
    assert!(out.contains("todo.txt:TODO: write the tests"), "{out}");
}
