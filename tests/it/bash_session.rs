//! The Bash tool as Claude Code's behaves where a model would notice
//! (issue 35): the shell's working directory carries over from one call
//! to the next (and over a resume), and is put back at the project root,
//! with a line saying so, when a command leaves the working directories;
//! the policy judges a line in the directory it will run in; stdout and
//! stderr come back in the order they were written; a command past its
//! timeout goes on in the background with an id and an output file; and
//! output over 30,000 characters is saved to a file, with a short head
//! and the path returned. Each test runs the binary against the stand-in
//! model and reads the tool results the next request carries.

use crate::support;

use std::path::{Path, PathBuf};

use support::standin::{self, StandIn};
use support::*;

/// Runs one session of `calls`, one model turn each, then a closing
/// answer; returns tern's output and each call's result text.
fn session(
    dir: &Path,
    calls: &[(&str, &str)],
    args: &[&str],
) -> (std::process::Output, Vec<String>) {
    let mut replies: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| {
            let id = format!("toolu_{i}");
            standin::tools_reply(&[(id.as_str(), tool, input)])
        })
        .collect();
    replies.push(standin::text_reply("done"));
    let api = StandIn::start(replies);
    let out = run(tern(&api.url, dir).args(["-p", "go"]).args(args));
    let results = api
        .requests()
        .iter()
        .skip(1)
        .map(|r| {
            tool_results(r)
                .first()
                .and_then(|v| v.str_field("content").map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    (out, results)
}

fn bash(command: &str) -> String {
    tern::json::Value::from(command).to_json()
}

fn call(command: &str) -> String {
    format!(r#"{{"command": {}}}"#, bash(command))
}

fn real(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap()
}

const BYPASS: &[&str] = &["--permission-mode", "bypassPermissions"];

#[test]
fn cd_carries_over_to_the_next_call() {
    let dir = scratch("cwd-carry");
    let root = real(&dir);
    let calls = [
        call("mkdir -p src/deep && cd src"),
        call("pwd"),
        // A failing command and an `exit` still move the shell.
        call("cd deep && exit 3"),
        call("pwd; echo $PWD"),
        call("cd .. && cd .. && cd - >/dev/null"),
        call("pwd"),
        call("pushd deep >/dev/null"),
        call("pwd"),
        call("(cd ..); pwd"),
    ];
    let calls: Vec<(&str, &str)> = calls.iter().map(|c| ("Bash", c.as_str())).collect();
    let (out, r) = session(&dir, &calls, BYPASS);
    assert_ok(&out);
    let src = root.join("src").display().to_string();
    let deep = root.join("src/deep").display().to_string();
    assert_eq!(r[0], "(no output)", "a cd says nothing: {r:?}");
    assert_eq!(r[1].trim(), src, "{r:?}");
    assert!(r[2].contains("Exit code 3"), "{r:?}");
    assert_eq!(r[3].trim(), format!("{deep}\n{deep}"), "{r:?}");
    assert_eq!(r[5].trim(), src, "{r:?}");
    assert_eq!(r[7].trim(), deep, "{r:?}");
    assert_eq!(r[8].trim(), deep, "a subshell's cd stays there: {r:?}");
}

#[test]
fn leaving_the_project_resets_the_cwd_and_says_so() {
    let dir = scratch("cwd-reset");
    let root = real(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink("/", dir.join("sub/out")).unwrap();
    let calls = [
        call("cd sub"),
        call("cd /"),
        call("pwd"),
        // A link inside the project that leads outside is outside.
        call("cd sub/out"),
        call("pwd"),
        // A directory that goes away under the shell.
        call("mkdir -p gone && cd gone"),
        call("rmdir ../gone"),
        call("pwd"),
    ];
    let calls: Vec<(&str, &str)> = calls.iter().map(|c| ("Bash", c.as_str())).collect();
    let (out, r) = session(&dir, &calls, BYPASS);
    assert_ok(&out);
    let note = format!("Shell cwd was reset to {}", root.display());
    assert!(!r[0].contains("reset"), "{r:?}");
    assert!(r[1].contains(&note), "{r:?}");
    assert_eq!(r[2].trim(), root.display().to_string(), "{r:?}");
    assert!(r[3].contains(&note), "{r:?}");
    assert_eq!(r[4].trim(), root.display().to_string(), "{r:?}");
    assert!(r[6].contains(&note), "{r:?}");
    assert_eq!(r[7].trim(), root.display().to_string(), "{r:?}");
}

#[test]
fn the_cwd_survives_a_resume() {
    let dir = scratch("cwd-resume");
    let root = real(&dir);
    let first = [call("mkdir -p sub/inner && cd sub/inner")];
    let calls: Vec<(&str, &str)> = first.iter().map(|c| ("Bash", c.as_str())).collect();
    let (out, _) = session(&dir, &calls, BYPASS);
    assert_ok(&out);
    let inner = root.join("sub/inner").display().to_string();
    for how in [&["-c"][..], &["--continue"][..]] {
        let second = [call("pwd")];
        let calls: Vec<(&str, &str)> = second.iter().map(|c| ("Bash", c.as_str())).collect();
        let mut args = how.to_vec();
        args.extend_from_slice(BYPASS);
        let (out, r) = session(&dir, &calls, &args);
        assert_ok(&out);
        assert_eq!(r[0].trim(), inner, "{how:?}: {r:?}");
    }
}

#[test]
fn the_policy_judges_a_line_where_it_runs() {
    let dir = scratch("cwd-policy");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::write(project.join("inside.txt"), "inside-text\n").unwrap();
    std::fs::write(dir.join("outside.txt"), "outside-secret\n").unwrap();
    let calls = [
        // Read-only, so allowed without a question in the default mode.
        call("cd sub"),
        // From sub, `..` is the project: read-only inside, allowed.
        call("cat ../inside.txt"),
        // From sub, `../..` leaves it: asked, so refused here.
        call("cat ../../outside.txt"),
        call("pwd"),
    ];
    let calls: Vec<(&str, &str)> = calls.iter().map(|c| ("Bash", c.as_str())).collect();
    let (out, r) = session(&project, &calls, &[]);
    assert_ok(&out);
    assert_eq!(r[1].trim(), "inside-text", "{r:?}");
    assert!(
        r[2].contains("Permission denied") && !r[2].contains("outside-secret"),
        "{r:?}"
    );
    assert_eq!(
        r[3].trim(),
        real(&project).join("sub").display().to_string(),
        "{r:?}"
    );
}

#[test]
fn stdout_and_stderr_come_back_in_the_order_written() {
    let dir = scratch("interleave");
    let line = "for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; done";
    let calls = [call(line), call(&format!("{line}; exit 2"))];
    let calls: Vec<(&str, &str)> = calls.iter().map(|c| ("Bash", c.as_str())).collect();
    let (out, r) = session(&dir, &calls, BYPASS);
    assert_ok(&out);
    let want: String = (1..=8).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!(r[0], want, "{r:?}");
    assert!(r[1].starts_with(&want), "{r:?}");
    assert!(r[1].ends_with("Exit code 2"), "{r:?}");
}

#[test]
fn a_command_past_its_timeout_goes_on_in_the_background() {
    let dir = scratch("timeout-bg");
    let calls = [
        r#"{"command": "echo started; sleep 3; echo done", "timeout": 1000}"#.to_string(),
        call("sleep 4; cat tern-*/bash_1.log"),
    ];
    let mut calls: Vec<(&str, &str)> = calls.iter().map(|c| ("Bash", c.as_str())).collect();
    calls.push(("BashOutput", r#"{"bash_id": "bash_1"}"#));
    let (out, r) = session(&dir, &calls, BYPASS);
    assert_ok(&out);
    assert!(
        r[0].contains("Command running in background with ID: bash_1")
            && r[0].contains("Output is being written to: ")
            && r[0].contains("started"),
        "{r:?}"
    );
    let at = r[0].find("Output is being written to: ").unwrap() + 28;
    let path = r[0][at..].split_whitespace().next().unwrap();
    assert!(path.ends_with("bash_1.log"), "{path}");
    // The whole output went on into the file.
    assert_eq!(r[1], "started\ndone\n", "{r:?}");
    assert!(
        r[2].contains("exited with code 0") && r[2].contains("done"),
        "{r:?}"
    );
}

#[test]
fn big_output_is_saved_whole_with_a_short_head_returned() {
    let dir = scratch("big-out");
    let line = "for i in $(seq 1 4000); do echo out$i; echo err$i >&2; done";
    let calls = [
        call(line),
        // The file the result names, read back by the model.
        call("cat \"$(ls -d tern-*)\"/bash-*.out | md5sum"),
        call(&format!("{{ {line}; }} 2>&1 | md5sum")),
    ];
    let calls: Vec<(&str, &str)> = calls.iter().map(|c| ("Bash", c.as_str())).collect();
    let (out, r) = session(&dir, &calls, BYPASS);
    assert_ok(&out);
    let big = &r[0];
    assert!(
        big.starts_with("<persisted-output>\nOutput too large (") && big.len() < 3_000,
        "{} chars: {}",
        big.len(),
        &big[..big.len().min(400)]
    );
    let at = big.find("Full output saved to: ").unwrap() + 22;
    let path = &big[at..at + big[at..].find('\n').unwrap()];
    assert!(path.contains("/tern-"), "{path}");
    let preview = big.split("Preview (first 2KB):\n").nth(1).unwrap();
    assert!(preview.starts_with("out1\nerr1\nout2\nerr2\n"), "{preview}");
    assert!(big.trim_end().ends_with("</persisted-output>"), "{big}");
    // The file holds everything, in the order written.
    assert_eq!(r[1], r[2], "{r:?}");
}
