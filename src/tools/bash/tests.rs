use super::*;
use crate::obj;
use crate::tools::testing::{context, run as run_tool};

#[test]
fn runs_and_reports_exit_codes() {
    let (ctx, _) = context();
    let out = run_tool(&Bash, &ctx, obj! { "command" => "echo out; echo err >&2" });
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("out") && out.content.contains("err"));
    let out = run_tool(&Bash, &ctx, obj! { "command" => "exit 3" });
    assert!(
        out.is_error && out.content.ends_with("Exit code 3"),
        "{}",
        out.content
    );
}

#[test]
fn stdin_is_dev_null() {
    let (ctx, _) = context();
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "readlink /proc/self/fd/0; test -c /dev/stdin && echo char-device" },
    );
    assert_eq!(out.content, "/dev/null\nchar-device\n", "{}", out.content);
}

#[test]
fn exit_one_of_grep_diff_test_is_an_answer_not_an_error() {
    let (ctx, dir) = context();
    std::fs::write(dir.join("a"), "x\n").unwrap();
    std::fs::write(dir.join("b"), "y\n").unwrap();
    for (cmd, meaning) in [
        ("grep nothing-like-this a", "no match"),
        ("cat a | grep -c 'zz|qq'", "no match"),
        ("LC_ALL=C grep -q zzz a", "no match"),
        ("diff a b", "differ"),
        ("cmp -s a b", "differ"),
        ("test -f nope", "false"),
        ("[ -d a ]", "false"),
    ] {
        let out = run_tool(&Bash, &ctx, obj! { "command" => cmd });
        assert!(!out.is_error, "{cmd}: {}", out.content);
        assert!(
            out.content.contains("Exit code 1") && out.content.contains(meaning),
            "{cmd}: {}",
            out.content
        );
    }
    // A real failure, or an exit status that is not grep's to give.
    for cmd in [
        "grep x no-such-file",
        "false; grep x a",
        "grep zzz a || false",
        "grep zzz a && true",
        "echo \"$(false)\" | grep zzz",
        "(grep zzz a)",
        "grep zzz a &",
        "sh -c 'exit 1' \"| grep\"",
    ] {
        let out = run_tool(&Bash, &ctx, obj! { "command" => cmd });
        let quiet = !out.content.contains("no match") && !out.content.contains("false)");
        assert!(quiet, "{cmd}: {}", out.content);
    }
    let out = run_tool(&Bash, &ctx, obj! { "command" => "grep x no-such-file" });
    assert!(out.is_error && out.content.ends_with("Exit code 2"));
}

#[test]
fn provider_credentials_stay_with_tern() {
    let (mut ctx, _) = context();
    // SAFETY (test): this test binary sets a variable no other test reads.
    unsafe { std::env::set_var("TERN_TEST_SECRET_KEY", "hunter2") };
    ctx.child_env = crate::config::ChildEnv::new(vec![], "TERN_TEST_SECRET_KEY", &[], &[]);
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "echo \"[${TERN_TEST_SECRET_KEY:-gone}]\"" },
    );
    assert_eq!(out.content, "[gone]\n");
    ctx.child_env = crate::config::ChildEnv::new(
        vec![],
        "TERN_TEST_SECRET_KEY",
        &[],
        &["TERN_TEST_SECRET_KEY".to_string()],
    );
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "echo \"[${TERN_TEST_SECRET_KEY:-gone}]\"" },
    );
    assert_eq!(out.content, "[hunter2]\n", "passEnv lets it through");
}

#[test]
fn stdin_is_at_end_of_file() {
    let (ctx, _) = context();
    // `cat` would wait forever on an open stdin.
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "cat; echo after", "timeout" => 5000i64 },
    );
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.content, "after\n");
}

#[test]
fn timeout_kills_the_whole_group() {
    let (ctx, dir) = context();
    let pidfile = dir.join("pid");
    let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let out = run_tool(&Bash, &ctx, obj! { "command" => cmd, "timeout" => 300i64 });
    assert!(
        out.is_error && out.content.contains("timed out after 300 ms"),
        "{}",
        out.content
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The background sleep was in the group and must be gone. SIGKILL
    // lands asynchronously, so allow the kernel a moment on a busy box.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| !stat.contains(") Z"))
            .unwrap_or(false)
    };
    let began = std::time::Instant::now();
    while alive() && began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive = alive();
    assert!(!alive, "background child {pid} survived the timeout");
}

#[test]
fn large_output_is_saved_whole_with_its_start_shown() {
    let (ctx, _) = context();
    let out = run_tool(&Bash, &ctx, obj! { "command" => "seq 1 20000" });
    assert!(!out.is_error);
    // Claude Code's note: the size, the file, the first 2,000 characters.
    assert!(
        out.content
            .starts_with("<persisted-output>\nOutput too large (106.3KB). Full output saved to: "),
        "{}",
        out.content
    );
    let path = out
        .content
        .split("saved to: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap();
    let full = std::fs::read_to_string(path).unwrap();
    assert_eq!(full.lines().count(), 20000);
    let preview = out.content.split("Preview (first 2KB):\n").nth(1).unwrap();
    let shown = preview.strip_suffix("\n...\n</persisted-output>").unwrap();
    assert_eq!(shown, &full[..2000]);
    // Exactly at the limit it is still inline.
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => format!("head -c {INLINE_LIMIT} /dev/zero | tr '\\0' x") },
    );
    assert_eq!(out.content.len(), INLINE_LIMIT);
}

#[test]
fn output_is_in_the_order_written_and_cd_is_kept() {
    let (ctx, dir) = context();
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "for i in 1 2 3; do echo o$i; echo e$i >&2; done; cd sub" },
    );
    assert_eq!(out.content, "o1\ne1\no2\ne2\no3\ne3\n");
    let sub = crate::policy::canonical(&dir.join("sub"));
    assert_eq!(ctx.shell_cwd.get(), sub);
    // Killed by its timeout (no background shells here): not followed.
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "cd deeper; sleep 5", "timeout" => 300i64 },
    );
    assert!(out.content.contains("timed out"), "{}", out.content);
    assert_eq!(ctx.shell_cwd.get(), sub);
}

#[test]
fn past_its_timeout_a_command_goes_on_in_the_background() {
    let (ctx, _, ex) = background_context();
    drive(ex, async {
        let out = call(
            &Bash,
            &ctx,
            obj! { "command" => "echo before; sleep 1; echo after", "timeout" => 300i64 },
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .starts_with("before\nThe command ran past its 300 ms timeout")
                && out
                    .content
                    .contains("Command running in background with ID: bash_1."),
            "{}",
            out.content
        );
        let log = out
            .content
            .split("written to: ")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap()
            .to_string();
        let text = read_until(&ctx, "bash_1", |t| t.contains("exited with code 0")).await;
        // Only what was not shown yet is new; the log has it all.
        assert!(text.contains("after") && !text.contains("before"), "{text}");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "before\nafter\n");
    });
}

// ---- background shells and progress ----

use crate::tools::testing::call;
use std::rc::Rc;

/// A context whose background shells run on an executor of their own;
/// `drive` runs a future on it.
fn background_context() -> (
    ToolContext,
    std::path::PathBuf,
    &'static smol::LocalExecutor<'static>,
) {
    let ex: &'static smol::LocalExecutor<'static> = Box::leak(Box::new(smol::LocalExecutor::new()));
    let (mut ctx, dir) = context();
    ctx.shells = Rc::new(Shells::new(ex));
    (ctx, dir, ex)
}

fn drive<T>(
    ex: &'static smol::LocalExecutor<'static>,
    f: impl std::future::Future<Output = T>,
) -> T {
    smol::block_on(ex.run(f))
}

/// Polls BashOutput until its text satisfies `done` (at most 20 s).
async fn read_until(ctx: &ToolContext, id: &str, done: impl Fn(&str) -> bool) -> String {
    let mut seen = String::new();
    let began = std::time::Instant::now();
    while began.elapsed() < Duration::from_secs(20) {
        let out = call(&BashOutput, ctx, obj! { "bash_id" => id }).await;
        assert!(!out.is_error, "{}", out.content);
        seen.push_str(&out.content);
        seen.push('\n');
        if done(&seen) {
            return seen;
        }
        smol::Timer::after(Duration::from_millis(30)).await;
    }
    panic!("BashOutput never showed what was expected: {seen}");
}

fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| stat.contains(") Z"))
}

fn wait_gone(pid: i32) -> bool {
    let began = std::time::Instant::now();
    while !gone(pid) && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    gone(pid)
}

#[test]
fn a_background_shell_answers_at_once_and_its_output_is_read_as_it_comes() {
    let (ctx, dir, ex) = background_context();
    drive(ex, async {
        let out = call(
            &Bash,
            &ctx,
            obj! {
                "command" => "echo one; until [ -e go ]; do sleep 0.02; done; echo two",
                "run_in_background" => true,
            },
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("bash_1"), "{}", out.content);
        let first = read_until(&ctx, "bash_1", |s| s.contains("one")).await;
        assert!(first.contains("status: running"), "{first}");
        std::fs::write(dir.join("go"), "").unwrap();
        let rest = read_until(&ctx, "bash_1", |s| s.contains("exited with code 0")).await;
        assert!(rest.contains("two"), "{rest}");
        // What was read once is not shown again.
        assert!(!rest.contains("one"), "{rest}");
        let again = call(&BashOutput, &ctx, obj! { "bash_id" => "bash_1" }).await;
        assert!(
            again.content.contains("(no new output)"),
            "{}",
            again.content
        );
    });
}

#[test]
fn an_end_is_told_to_the_model_once() {
    let (ctx, _, ex) = background_context();
    drive(ex, async {
        call(
            &Bash,
            &ctx,
            obj! { "command" => "echo bye; exit 3", "run_in_background" => true },
        )
        .await;
        let began = std::time::Instant::now();
        let news = loop {
            let news = ctx.shells.take_news();
            if !news.is_empty() || began.elapsed() > Duration::from_secs(20) {
                break news;
            }
            smol::Timer::after(Duration::from_millis(20)).await;
        };
        assert_eq!(news.len(), 1, "{news:?}");
        assert!(
            news[0].contains("bash_1") && news[0].contains("exited with code 3"),
            "{news:?}"
        );
        assert!(news[0].contains("not read yet"), "{news:?}");
        assert!(ctx.shells.take_news().is_empty());
        assert!(ctx.shells.listing()[0].contains("exited with code 3"));
    });
}

#[test]
fn kill_shell_and_the_sessions_end_stop_everything_a_shell_started() {
    let (ctx, dir, ex) = background_context();
    drive(ex, async {
        for n in 1..=2 {
            let cmd = format!("sleep 300 & echo $! > pid{n}; wait");
            call(
                &Bash,
                &ctx,
                obj! { "command" => cmd, "run_in_background" => true },
            )
            .await;
        }
        let pid = |n: u32| -> i32 {
            let path = dir.join(format!("pid{n}"));
            let began = std::time::Instant::now();
            loop {
                if let Some(p) = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                {
                    return p;
                }
                assert!(began.elapsed() < Duration::from_secs(20), "no pid file");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        let (one, two) = (pid(1), pid(2));
        assert!(!gone(one) && !gone(two));
        let out = call(&KillShell, &ctx, obj! { "shell_id" => "bash_1" }).await;
        assert!(
            !out.is_error && out.content.contains("stopped"),
            "{}",
            out.content
        );
        assert!(wait_gone(one), "KillShell left the shell's child {one}");
        assert!(!gone(two), "KillShell stopped another shell");
        let again = call(&KillShell, &ctx, obj! { "shell_id" => "bash_1" }).await;
        assert!(
            again.is_error && again.content.contains("not running"),
            "{}",
            again.content
        );
        // The model learnt of bash_1's end from KillShell itself.
        assert!(ctx.shells.take_news().is_empty());
        ctx.shells.shutdown().await;
        assert!(wait_gone(two), "the session's end left {two}");
    });
}

#[test]
fn an_interrupted_turn_leaves_background_shells_running() {
    let (ctx, dir, ex) = background_context();
    drive(ex, async {
        call(
            &Bash,
            &ctx,
            obj! { "command" => "echo $$ > pid; exec sleep 300", "run_in_background" => true },
        )
        .await;
        ctx.abort.trigger(crate::abort::Reason::Requested);
        let out = read_until(&ctx, "bash_1", |_| dir.join("pid").exists()).await;
        smol::Timer::after(Duration::from_millis(200)).await;
        let pid: i32 = std::fs::read_to_string(dir.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !gone(pid),
            "the interrupt stopped the background shell: {out}"
        );
        ctx.shells.shutdown().await;
        assert!(wait_gone(pid));
    });
}

#[test]
fn a_filter_shows_whole_matching_lines_only() {
    let (ctx, dir, ex) = background_context();
    drive(ex, async {
        call(
            &Bash,
            &ctx,
            obj! {
                "command" => "printf 'a1\\nb2\\na3\\na-partial'; until [ -e go ]; do sleep 0.02; done; echo ' end'",
                "run_in_background" => true,
            },
        )
        .await;
        // Give it time to print the lines (the filter only ever sees whole ones).
        let began = std::time::Instant::now();
        let mut first = String::new();
        while !first.contains("a3") && began.elapsed() < Duration::from_secs(20) {
            let out = call(
                &BashOutput,
                &ctx,
                obj! { "bash_id" => "bash_1", "filter" => "^a" },
            )
            .await;
            first.push_str(&out.content);
            smol::Timer::after(Duration::from_millis(30)).await;
        }
        assert!(first.contains("a1") && first.contains("a3"), "{first}");
        assert!(
            !first.contains("b2") && !first.contains("partial"),
            "{first}"
        );
        std::fs::write(dir.join("go"), "").unwrap();
        let mut rest = String::new();
        let began = std::time::Instant::now();
        while !rest.contains("exited") && began.elapsed() < Duration::from_secs(20) {
            let out = call(
                &BashOutput,
                &ctx,
                obj! { "bash_id" => "bash_1", "filter" => "^a" },
            )
            .await;
            rest.push_str(&out.content);
            smol::Timer::after(Duration::from_millis(30)).await;
        }
        assert!(rest.contains("a-partial end"), "{rest}");
        let bad = call(
            &BashOutput,
            &ctx,
            obj! { "bash_id" => "bash_1", "filter" => "(" },
        )
        .await;
        assert!(
            bad.is_error && bad.content.contains("regex"),
            "{}",
            bad.content
        );
    });
}

#[test]
fn a_flood_of_output_is_bounded_in_memory_and_kept_in_the_log() {
    let (ctx, _, ex) = background_context();
    drive(ex, async {
        let out = call(
            &Bash,
            &ctx,
            obj! { "command" => "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo last", "run_in_background" => true },
        )
        .await;
        let log = out
            .content
            .split("written to: ")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap()
            .to_string();
        // Read once it is over: all of it is new output then.
        let began = std::time::Instant::now();
        while !ctx.shells.listing()[0].contains("exited")
            && began.elapsed() < Duration::from_secs(20)
        {
            smol::Timer::after(Duration::from_millis(20)).await;
        }
        let text = call(&BashOutput, &ctx, obj! { "bash_id" => "bash_1" })
            .await
            .content;
        assert!(
            text.contains("earlier bytes were not kept"),
            "{}",
            &text[..200]
        );
        assert!(
            text.contains("bytes omitted") && text.trim_end().ends_with("last"),
            "{}",
            &text[text.len() - 200..]
        );
        assert!(text.len() < INLINE_LIMIT + 2000);
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 3_000_000 + 6);
    });
}

#[test]
fn without_an_executor_background_shells_are_refused_and_unknown_ids_named() {
    let (ctx, _) = context();
    let out = run_tool(
        &Bash,
        &ctx,
        obj! { "command" => "sleep 100", "run_in_background" => true },
    );
    assert!(
        out.is_error && out.content.contains("not available"),
        "{}",
        out.content
    );
    let out = run_tool(&BashOutput, &ctx, obj! { "bash_id" => "bash_9" });
    assert!(
        out.is_error && out.content.contains("No background shell bash_9"),
        "{}",
        out.content
    );
    let out = run_tool(&KillShell, &ctx, obj! { "shell_id" => "bash_9" });
    assert!(out.is_error, "{}", out.content);
}

#[test]
fn a_running_command_reports_its_latest_line() {
    let (mut ctx, dir) = context();
    let reports: Rc<crate::report::Mailbox<crate::report::Report>> = Rc::default();
    ctx.reports = Some(Rc::clone(&reports));
    let progress = |want: &'static str| {
        let reports = Rc::clone(&reports);
        async move {
            let began = std::time::Instant::now();
            while began.elapsed() < Duration::from_secs(20) {
                for r in reports.take() {
                    if let crate::report::Report::ToolProgress { id, text } = r {
                        assert_eq!(id, "toolu_test");
                        if text == want {
                            return true;
                        }
                    }
                }
                smol::Timer::after(Duration::from_millis(20)).await;
            }
            false
        }
    };
    let ctx = &ctx;
    let cmd = "echo first; until [ -e go ]; do sleep 0.02; done; printf 'second\\n\\n'; until [ -e go2 ]; do sleep 0.02; done";
    let watcher = async {
        assert!(progress("first").await, "no progress with the first line");
        std::fs::write(dir.join("go"), "").unwrap();
        assert!(progress("second").await, "no progress with the second line");
        std::fs::write(dir.join("go2"), "").unwrap();
    };
    let (out, ()) = smol::block_on(smol::future::zip(
        call(&Bash, ctx, obj! { "command" => cmd, "timeout" => 60000i64 }),
        watcher,
    ));
    assert!(!out.is_error, "{}", out.content);
}

#[test]
fn a_seventeenth_running_shell_is_refused_before_it_starts() {
    let (ctx, dir, ex) = background_context();
    drive(ex, async {
        for _ in 0..16 {
            let out = call(
                &Bash,
                &ctx,
                obj! { "command" => "exec sleep 300", "run_in_background" => true },
            )
            .await;
            assert!(!out.is_error, "{}", out.content);
        }
        let out = call(
            &Bash,
            &ctx,
            obj! { "command" => "touch started", "run_in_background" => true },
        )
        .await;
        assert!(
            out.is_error && out.content.contains("KillShell"),
            "{}",
            out.content
        );
        smol::Timer::after(Duration::from_millis(200)).await;
        assert!(!dir.join("started").exists(), "the refused shell ran");
        ctx.shells.shutdown().await;
        assert!(ctx.shells.listing().iter().all(|l| l.contains("stopped")));
    });
}
