//! What the processes tern starts see: provider credentials stay with
//! tern (Bash, sandboxed Bash, hooks), unless the user's own settings pass
//! them through; a repository's settings cannot; stdin is /dev/null, so
//! `rg TODO` searches the directory. Each shown both ways through the
//! binary.
//!
//! Nor can a child read them where a process's environment stays after it
//! unsets a variable: `/proc/<pid>/environ` shows the block the process
//! started with. A Bash command, a hook and an MCP server each walk up
//! their parents reading that file, as root and as `nobody`.

use crate::support;

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

/// Walks from the shell up its parents; for each, one line `PID COMM
/// leak|clean|unreadable` (does its `/proc/PID/environ` hold `secret`?).
fn walk_up(secret: &str) -> String {
    format!(
        "p=$$; while [ \"$p\" -gt 1 ]; do \
           c=$(cat /proc/$p/comm 2>/dev/null); \
           if e=$(tr '\\000' '\\n' < /proc/$p/environ 2>/dev/null); then \
             case \"$e\" in *{secret}*) s=leak;; *) s=clean;; esac; \
           else s=unreadable; fi; \
           echo \"$p $c $s\"; \
           p=$(awk '/^PPid:/{{print $2}}' /proc/$p/status); \
         done"
    )
}

/// tern's line of a walk: (pid, leak|clean|unreadable); the walk must
/// have passed through it.
fn tern_in(walk: &str) -> (u32, String) {
    let line = walk
        .lines()
        .find(|l| l.split(' ').nth(1) == Some("tern"))
        .unwrap_or_else(|| panic!("the walk never reached tern:\n{walk}"));
    let mut f = line.split(' ');
    let pid = f.next().and_then(|p| p.parse().ok()).unwrap();
    (pid, f.nth(1).unwrap_or_default().to_string())
}

fn secret() -> String {
    format!(
        "sk-proc-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Root and, when the tests run as root and setpriv is there, nobody.
fn users() -> Vec<bool> {
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok();
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 && setpriv {
        vec![false, true]
    } else {
        vec![false]
    }
}

/// `tern` as `tern()` sets it up, run as nobody when `nobody` (the
/// directory and its home handed over first).
fn tern_as(nobody: bool, url: &str, dir: &Path) -> std::process::Command {
    let base = tern(url, dir);
    if !nobody {
        return base;
    }
    for d in [dir.to_path_buf(), home_of(dir)] {
        let mut stack = vec![d];
        while let Some(p) = stack.pop() {
            std::os::unix::fs::lchown(&p, Some(65534), Some(65534)).unwrap();
            if p.is_dir() && !p.is_symlink() {
                stack.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
            }
        }
    }
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(base.get_program())
        .args(base.get_args())
        .current_dir(dir)
        .env_clear()
        .envs(base.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(std::process::Stdio::null());
    c
}

fn emulated(test: &str) -> bool {
    let yes = runner().is_some();
    if yes {
        skip_emulated(
            test,
            "qemu-user's /proc/<pid>/environ is the emulator's own block, which the guest cannot reach",
        );
    }
    yes
}

/// The attack, against a process that only unset the variable: the
/// block still holds it, for any reader of the same user.
#[test]
fn unsetting_a_variable_leaves_it_in_proc_environ() {
    if emulated("unsetting_a_variable_leaves_it_in_proc_environ") {
        return;
    }
    let key = secret();
    let mut child = std::process::Command::new("sh")
        // `read` is built in: the shell itself waits (an exec would
        // start a new block).
        .args(["-c", "unset ANTHROPIC_API_KEY; echo ready; read x"])
        .env("ANTHROPIC_API_KEY", &key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = [0u8; 6];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut ready).unwrap();
    let block = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
    drop(child.stdin.take());
    let _ = child.wait();
    let text = String::from_utf8_lossy(&block);
    assert!(
        text.contains(&format!("ANTHROPIC_API_KEY={key}")),
        "the attack should work against a process that did not erase"
    );
}

#[test]
fn a_bash_command_cannot_read_the_key_from_terns_proc_environ() {
    if emulated("a_bash_command_cannot_read_the_key_from_terns_proc_environ") {
        return;
    }
    for nobody in users() {
        for pass in [false, true] {
            let key = secret();
            let dir = std::fs::canonicalize(scratch("env-proc-bash")).unwrap();
            let input = obj! { "command" => walk_up(&key) }.to_json();
            let api = StandIn::start(vec![
                standin::tools_reply(&[("toolu_w", "Bash", &input)]),
                standin::text_reply("done"),
            ]);
            let mut cmd = tern_as(nobody, &api.url, &dir);
            cmd.env("ANTHROPIC_API_KEY", &key)
                .env("GITHUB_TOKEN", format!("{key}-gh"))
                .args(["-p", "x", "--permission-mode", "bypassPermissions"])
                .args(["--settings"]);
            // GITHUB_TOKEN's value holds the key's: scrubEnv must take it too.
            cmd.arg(if pass {
                r#"{"scrubEnv":["GITHUB_*"],"passEnv":["ANTHROPIC_API_KEY"]}"#
            } else {
                r#"{"scrubEnv":["GITHUB_*"]}"#
            });
            let out = run(&mut cmd);
            assert_ok(&out);
            let walk = tool_results(&api.requests()[1])[0]
                .str_field("content")
                .unwrap_or_default()
                .to_string();
            let (pid, state) = tern_in(&walk);
            let who = if nobody { "nobody" } else { "root" };
            // Root reads any block, so a clean one is the erasure's doing;
            // for nobody tern's block is not even readable (undumpable).
            let want = if nobody { "unreadable" } else { "clean" };
            assert_eq!(state, want, "{who}, passEnv {pass}, tern {pid}:\n{walk}");
            let command = walk.lines().next().unwrap_or_default();
            if pass {
                // The command itself gets it, by design.
                assert!(command.ends_with(" leak"), "{who}: {walk}");
            } else {
                assert!(
                    !walk.contains(" leak"),
                    "{who}: a process up the chain shows the key:\n{walk}"
                );
            }
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("could not be erased"), "{stderr}");
        }
    }
}

#[test]
fn hooks_and_mcp_servers_cannot_read_the_key_from_terns_proc_environ() {
    if emulated("hooks_and_mcp_servers_cannot_read_the_key_from_terns_proc_environ") {
        return;
    }
    for nobody in users() {
        let key = secret();
        let dir = std::fs::canonicalize(scratch("env-proc-hook")).unwrap();
        // The hook is the user's own (user settings); the MCP server is
        // the user's too (--mcp-config). Each writes its walk and exits.
        let hook = format!("({}) > hook-walk.txt", walk_up(&key));
        let settings = obj! {
            "hooks" => obj! { "PreToolUse" => vec![obj! {
                "matcher" => "Bash",
                "hooks" => vec![obj! { "type" => "command", "command" => hook }],
            }] },
        };
        let home = home_of(&dir);
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), settings.to_json()).unwrap();
        let mcp = obj! { "mcpServers" => obj! { "walker" => obj! {
            "command" => "sh",
            "args" => vec![Value::from("-c"), Value::from(format!("({}) > mcp-walk.txt", walk_up(&key)))],
        } } }
        .to_json();
        let input = obj! { "command" => "true" }.to_json();
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_h", "Bash", &input)]),
            standin::text_reply("done"),
        ]);
        let mut cmd = tern_as(nobody, &api.url, &dir);
        cmd.env("ANTHROPIC_API_KEY", &key)
            .env("MCP_TIMEOUT", "3000")
            .args(["-p", "x", "--permission-mode", "bypassPermissions"]);
        let mut files = vec!["hook-walk.txt"];
        if cfg!(feature = "mcp") {
            cmd.args(["--mcp-config", &mcp]);
            files.push("mcp-walk.txt");
        }
        let out = run(&mut cmd);
        assert_ok(&out);
        let who = if nobody { "nobody" } else { "root" };
        let want = if nobody { "unreadable" } else { "clean" };
        for file in files {
            let walk = std::fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| panic!("{who}: {file}: {e}"));
            let (pid, state) = tern_in(&walk);
            assert_eq!(state, want, "{who}, {file}, tern {pid}:\n{walk}");
            assert!(!walk.contains(" leak"), "{who}, {file}:\n{walk}");
        }
    }
}

/// An undumpable tern's /proc files are root's: what tern starts from its
/// own binary (through `/proc/self/fd/N`) must still start when tern runs
/// as an ordinary user — the sandbox's server and launcher, the REPL's VM.
#[test]
fn an_undumpable_tern_still_starts_its_own_helpers() {
    if emulated("an_undumpable_tern_still_starts_its_own_helpers") {
        return;
    }
    let sandbox = tern::harness::sandbox_probe().landlock.is_ok();
    for nobody in users() {
        let who = if nobody { "nobody" } else { "root" };
        let dir = std::fs::canonicalize(scratch("env-proc-helpers")).unwrap();
        let bash = obj! { "command" => "echo sandboxed-$((6*7))" }.to_json();
        let repl = obj! { "code" => "'vm-' + (6*7)" }.to_json();
        let mut replies = Vec::new();
        if sandbox {
            replies.push(standin::tools_reply(&[("toolu_s", "Bash", &bash)]));
        }
        if cfg!(feature = "repl") {
            replies.push(standin::tools_reply(&[("toolu_r", "REPL", &repl)]));
        }
        let expected = replies.len();
        if expected == 0 {
            return skip("undumpable helpers", "no landlock and no repl feature");
        }
        replies.push(standin::text_reply("done"));
        let api = StandIn::start(replies);
        let out = run(tern_as(nobody, &api.url, &dir)
            .env("TERN_REPL", "1")
            .args(["-p", "x", "--permission-mode", "bypassPermissions"])
            .args([
                "--settings",
                r#"{"sandbox":{"enabled":true,"failIfUnavailable":true}}"#,
            ]));
        assert_ok(&out);
        let results: Vec<String> = api.requests()[1..=expected]
            .iter()
            .map(|r| tool_results(r)[0].to_json())
            .collect();
        let all = results.join("\n");
        if sandbox {
            assert!(all.contains("sandboxed-42"), "{who}: {all}");
        }
        if cfg!(feature = "repl") {
            assert!(all.contains("vm-42"), "{who}: {all}");
        }
    }
}

/// `tern mcp list` and `tern doctor` start the configured servers too.
#[cfg(feature = "mcp")]
#[test]
fn subcommands_that_start_servers_erase_the_key_first() {
    if emulated("subcommands_that_start_servers_erase_the_key_first") {
        return;
    }
    for nobody in users() {
        for sub in [&["mcp", "list"][..], &["doctor"][..]] {
            let key = secret();
            let dir = std::fs::canonicalize(scratch("env-proc-sub")).unwrap();
            let mcp = obj! { "mcpServers" => obj! { "walker" => obj! {
                "command" => "sh",
                "args" => vec![Value::from("-c"), Value::from(format!("({}) > walk.txt", walk_up(&key)))],
            } } }
            .to_json();
            let out = run(tern_as(nobody, "http://127.0.0.1:9", &dir)
                .env("ANTHROPIC_API_KEY", &key)
                .env("MCP_TIMEOUT", "3000")
                .args(sub)
                .args(["--mcp-config", &mcp]));
            let who = if nobody { "nobody" } else { "root" };
            let walk = std::fs::read_to_string(dir.join("walk.txt")).unwrap_or_else(|e| {
                panic!(
                    "{who} {sub:?}: walk.txt: {e}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            let (pid, state) = tern_in(&walk);
            let want = if nobody { "unreadable" } else { "clean" };
            assert_eq!(state, want, "{who} {sub:?}, tern {pid}:\n{walk}");
            assert!(!walk.contains(" leak"), "{who} {sub:?}:\n{walk}");
        }
    }
}
