//! Footprint benchmark: prints figures, asserts nothing about time.
//!
//! - `tern -v`: wall, CPU and peak RSS
//! - one `-p` turn against the local Messages API stand-in: wall, CPU, RSS
//! - a 200-turn tool session: peak RSS
//! - a 300-turn session that fills a 200k window and compacts: peak RSS
//! - SSE parsing + message assembly throughput in MB/s
//! - `bash -c true` through the sandbox (the Bash tool's path) against plain
//! - Grep against ripgrep on the same generated tree (when `rg` is installed)
//! - a `-p` run with OpenTelemetry export off, to a collector that is up,
//!   one that is down and one that never answers (`TERN_BENCH_ONLY=otel`)
//! - the one-turn run side by side with Claude Code, as ratios (when its
//!   binary is installed: `benches/setup.sh`, or CLAUDE_BIN)
//!
//! Run: `cargo bench --bench footprint` (measures the bench-profile binary),
//! or set TERN_BIN to measure another build, e.g. the static musl release;
//! `TERN_BENCH_ONLY=sandbox` runs the sandbox part alone.

#[path = "../tests/it/support/standin.rs"]
mod standin;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tern::harness::Assembler;
use tern::harness::{ChatTranslator, Flow, SseParser, recover_text_calls};

struct Sample {
    wall: Duration,
    cpu: Duration,
    max_rss_kb: libc::c_long,
}

/// Runs the command (in an empty environment but for what it sets): wall
/// and CPU from wait4's rusage, peak RSS as GNU time reports it.
///
/// Not wait4's own `ru_maxrss`: the kernel carries the peak of the memory
/// a process had before exec into it, and a child forked from this
/// benchmark starts as a copy of it (the stand-in, its logs, generated
/// trees), so its figure was this process's size as much as tern's.
/// `/usr/bin/time`, a small program of its own, forks tern and reads
/// tern's figure (`benches/setup.sh` installs it); without it the inflated
/// figure is printed and marked with a `*`.
// The child is reaped by wait4 (to get its rusage), not by Child::wait.
///
/// `measure` runs through time (its fork and exec add about half a
/// millisecond: right for long runs); `measure_direct` runs the command
/// itself for the wall and CPU time of short ones, its RSS marked inflated.
fn measure(cmd: &mut Command) -> Sample {
    run_measured(cmd, std::path::Path::new("/usr/bin/time").exists())
}

fn measure_direct(cmd: &mut Command) -> Sample {
    run_measured(cmd, false)
}

// The child is reaped by wait4 (to get its rusage), not by Child::wait.
#[allow(clippy::zombie_processes)]
fn run_measured(cmd: &mut Command, gnu_time: bool) -> Sample {
    let rss_file = std::env::temp_dir().join(format!("tern-bench-rss-{}", std::process::id()));
    if gnu_time {
        // The program becomes time's argument (the environment and the
        // directory set on the command are time's, and so tern's).
        let program = cmd.get_program().to_os_string();
        let args: Vec<std::ffi::OsString> = cmd.get_args().map(|a| a.to_os_string()).collect();
        let mut wrapped = Command::new("/usr/bin/time");
        wrapped
            .arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&rss_file)
            .arg(program)
            .args(args);
        // Swap in the new program and arguments with the same directory
        // and the variables the command sets, and only those: every
        // measured command starts from an empty environment.
        std::mem::swap(cmd, &mut wrapped);
        cmd.env_clear();
        for (k, v) in wrapped.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(dir) = wrapped.get_current_dir() {
            cmd.current_dir(dir);
        }
    }
    let began = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4 failed");
    let wall = began.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "benchmarked command failed"
    );
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    let max_rss_kb = if gnu_time {
        std::fs::read_to_string(&rss_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .expect("GNU time wrote no figure")
    } else {
        -usage.ru_maxrss
    };
    Sample {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kb,
    }
}

/// Median wall, median CPU, peak RSS.
fn report(name: &str, samples: &mut [Sample]) -> (Duration, Duration, libc::c_long) {
    samples.sort_by_key(|s| s.wall);
    let median = samples[samples.len() / 2].wall;
    let mut cpus: Vec<Duration> = samples.iter().map(|s| s.cpu).collect();
    cpus.sort();
    let cpu = cpus[cpus.len() / 2];
    // A negative figure is wait4's own, inflated (see `measure`).
    let inflated = samples.iter().any(|s| s.max_rss_kb < 0);
    let rss = samples
        .iter()
        .map(|s| s.max_rss_kb.abs())
        .max()
        .unwrap_or(0);
    println!(
        "{name:<30} wall {:>9.2} ms   cpu {:>9.2} ms   peak RSS {:>7} KiB{}   (median of {})",
        median.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3,
        rss,
        if inflated { "*" } else { "" },
        samples.len()
    );
    (median, cpu, rss)
}

fn one_turn(bin: &str, url: &str, dir: &std::path::Path) -> Command {
    let mut c = Command::new(bin);
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "sk-bench")
        // Keep Claude Code from reaching for the network beyond the stand-in.
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(Stdio::null())
        .args(["-p", "where is the port set?"]);
    c
}

/// A stand-in for a long session: the script, one write per event, no
/// bodies kept, and compaction requests answered (counted) on the side.
fn session_standin(
    replies: Vec<standin::Reply>,
    summary: &'static str,
) -> (
    standin::StandIn,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let api = standin::StandIn::start(replies);
    api.set_split(standin::Split::PerEvent);
    api.set_body_limit(0);
    let compactions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&compactions);
    api.set_responder(Box::new(move |req| {
        req.body.contains("[tern: compaction request]").then(|| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            standin::text_reply(summary)
        })
    }));
    (api, compactions)
}

/// `tern -p PROMPT` in `dir` against the stand-in, everything allowed.
/// HOME is beside the work directory: the session's own transcript must
/// not be among the files its Grep searches.
fn session_command(
    bin: &str,
    dir: &std::path::Path,
    url: &str,
    prompt: &str,
    max_turns: usize,
) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.with_extension("home"))
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "sk-bench")
        .stdin(Stdio::null())
        .args([
            "-p",
            prompt,
            "--max-turns",
            &max_turns.to_string(),
            "--permission-mode",
            "bypassPermissions",
        ]);
    cmd
}

/// One `-p` turn, 30 times (the first asks the stand-in for its context
/// window; the others find the answer kept in the state folder).
fn turn_figures(bin: &str, url: &str, dir: &std::path::Path) -> (Duration, Duration, libc::c_long) {
    // Wall and CPU from tern run directly; its peak RSS through time.
    let mut turn: Vec<Sample> = (0..30)
        .map(|_| measure_direct(&mut one_turn(bin, url, dir)))
        .collect();
    let rss = (0..5)
        .map(|_| measure(&mut one_turn(bin, url, dir)).max_rss_kb)
        .max()
        .unwrap_or(0);
    for t in &mut turn {
        t.max_rss_kb = rss;
    }
    let figures = report("one-turn -p (stand-in)", &mut turn);
    println!(
        "{:<30} goal: wall ≤ 2 ms, peak RSS ≤ 4 MiB ({:.2} ms, {:.2} MiB)",
        "",
        figures.0.as_secs_f64() * 1e3,
        figures.2 as f64 / 1024.0
    );
    figures
}

/// `turns` model turns, each asking for one tool, then an answer; the
/// stand-in answers compaction requests, so the conversation stays within
/// its window however long the session runs. Peak RSS, and the time a
/// turn takes (from one request to the next: the tool, the transcript,
/// the next request built and sent) near the start and near the end.
fn long_session(bin: &str, dir: &std::path::Path, turns: usize) {
    let source: String = (0..100)
        .map(|i| format!("let value_{i} = compute({i}); // line {i}\n"))
        .collect();
    std::fs::write(dir.join("lib.rs"), source).expect("bench file");
    let mut replies = Vec::new();
    for turn in 0..turns - 1 {
        let id = format!("toolu_{turn}");
        let pick = std::env::var("TERN_BENCH_MIX")
            .ok()
            .and_then(|m| m.parse::<usize>().ok());
        let call = match pick.unwrap_or(turn % 4) {
            0 => ("Read", r#"{"file_path": "lib.rs"}"#.to_string()),
            1 => (
                "Grep",
                r#"{"pattern": "compute\\(4", "output_mode": "content"}"#.to_string(),
            ),
            2 => ("Glob", r#"{"pattern": "*.rs"}"#.to_string()),
            _ => ("Bash", format!(r#"{{"command": "echo turn {turn}"}}"#)),
        };
        replies.push(standin::tools_reply(&[(&id, call.0, &call.1)]));
    }
    replies.push(standin::text_reply("All turns done."));
    let (api, compactions) = session_standin(
        replies,
        "<analysis>a</analysis><summary>1. Primary request: work on</summary>",
    );
    let mut cmd = session_command(bin, dir, &api.url, "work for a long time", turns + 100);
    let mut s = [measure(&mut cmd)];
    let (_, _, rss) = report(&format!("{turns}-turn tool session"), &mut s);
    let reqs = api.requests();
    let compactions = compactions.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        reqs.len() - compactions,
        turns,
        "the session did not run all turns"
    );
    // Gaps between successive model requests, compaction requests left out.
    let at: Vec<Duration> = reqs
        .iter()
        .filter(|r| !r.body.contains("[tern: compaction request]"))
        .map(|r| r.at)
        .collect();
    let mut gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let window = 50.min(gaps.len() / 2);
    let median = |g: &mut [Duration]| {
        g.sort();
        g[g.len() / 2]
    };
    let n = gaps.len();
    let early = median(&mut gaps[..window].to_vec());
    let middle = median(&mut gaps[n / 2 - window / 2..n / 2 + window / 2].to_vec());
    let late = median(&mut gaps[n - window..]);
    // The conversation grows by the same amount each turn and every
    // request carries all of it, so a turn may cost more in a straight
    // line; super-linear growth would show as the second half growing
    // faster than the first.
    println!(
        "{:<30} a turn: {:.2} ms near the start, {:.2} ms at turn {}, {:.2} ms near turn {turns} (medians of {window}); {compactions} compactions; peak RSS {:.1} MiB (goal ≤ 12 MiB)",
        "",
        early.as_secs_f64() * 1e3,
        middle.as_secs_f64() * 1e3,
        turns / 2,
        late.as_secs_f64() * 1e3,
        rss as f64 / 1024.0
    );
}

/// 300 model turns that fill a 200k-token window several times over
/// (a 24 KB file read every other turn, long answers between), so the
/// session clears old results and compacts as it goes.
fn compacting_session(bin: &str, dir: &std::path::Path) {
    let source: String = (0..600)
        .map(|i| format!("fn step_{i}() -> u32 {{ {i} }} // padding\n"))
        .collect();
    std::fs::write(dir.join("big.rs"), source).expect("bench file");
    let mut replies = Vec::new();
    for turn in 0..299 {
        let id = format!("toolu_c{turn}");
        if turn % 2 == 0 {
            replies.push(standin::tools_reply(&[(
                &id,
                "Read",
                r#"{"file_path": "big.rs"}"#,
            )]));
        } else {
            let mut steps = vec![standin::message_start("msg_long")];
            steps.extend(standin::text_block(0, &"analysis of the file ".repeat(300)));
            steps.extend(standin::tool_block(
                1,
                &id,
                "Glob",
                r#"{"pattern": "*.rs"}"#,
                turn,
            ));
            steps.extend(standin::message_end("tool_use", 900));
            replies.push(standin::Reply::Stream(steps));
        }
    }
    replies.push(standin::text_reply("Done after 300 turns."));
    let (api, compactions) = session_standin(
        replies,
        "<analysis>a</analysis><summary>1. Primary request: keep reading big.rs</summary>",
    );
    let mut cmd = session_command(bin, dir, &api.url, "read it all", 400);
    let mut s = [measure(&mut cmd)];
    let (_, _, rss) = report("300-turn compacting session", &mut s);
    let reqs = api.requests();
    let compactions = compactions.load(std::sync::atomic::Ordering::Relaxed);
    let largest = reqs.iter().map(|r| r.body_len).max().unwrap_or(0);
    println!(
        "{:<30} {compactions} compactions, largest request {} KB, peak RSS {:.1} MiB (goal ≤ 16 MiB)",
        "",
        largest / 1024,
        rss as f64 / 1024.0
    );
    assert_eq!(
        reqs.len() - compactions,
        300,
        "the session did not run all turns"
    );
}

/// A deterministic source-like tree: `files` files of about `kb` KiB.
fn generate_tree(root: &std::path::Path, files: usize, kb: usize) {
    if root.join(".complete").exists() {
        return;
    }
    let words = [
        "alpha", "beta", "gamma", "delta", "config", "server", "port", "handler", "value", "result",
    ];
    let mut rng: u64 = 42;
    for f in 0..files {
        let dir = root.join(format!("mod{:03}", f % 200));
        std::fs::create_dir_all(&dir).expect("tree dir");
        let mut text = String::with_capacity(kb * 1024);
        let mut line = 0;
        while text.len() < kb * 1024 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let a = words[(rng >> 33) as usize % words.len()];
            let b = words[(rng >> 40) as usize % words.len()];
            let needle = if (rng >> 20).is_multiple_of(997) {
                " NEEDLE_7f3a"
            } else {
                ""
            };
            text.push_str(&format!(
                "    let {a}_{line} = {b}({line}, \"{a}{b}\");{needle}\n"
            ));
            line += 1;
        }
        std::fs::write(dir.join(format!("file{f}.rs")), text).expect("tree file");
    }
    std::fs::write(root.join(".complete"), "").expect("tree marker");
}

fn grep_vs_ripgrep() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tree");
    generate_tree(&root, 4000, 24);
    let rg_available = Command::new("rg").arg("--version").output().is_ok();
    // Through the real pipeline (bypass mode): the only way to run a tool.
    let ctx = tern::harness::ToolContext::new(
        root.clone(),
        std::env::temp_dir(),
        tern::harness::Abort::new(),
    );
    let policy =
        tern::harness::Policy::new(tern::harness::Mode::BypassPermissions, vec![], &root, &[]);
    let pipeline = tern::harness::Pipeline::new(
        tern::harness::Registry::builtin(),
        policy,
        ctx,
        None,
        std::rc::Rc::new(tern::harness::Hooks::none()),
    );
    // (what, Grep's input, rg's arguments): the same question both ways,
    // the whole answer (no 250-entry page) as rg gives it.
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "files_with_matches",
            r#"{"pattern": "NEEDLE_7f3a", "head_limit": 0}"#,
            &["-l", "NEEDLE_7f3a"],
        ),
        (
            "count",
            r#"{"pattern": "port_1[0-9]+ =", "output_mode": "count", "head_limit": 0}"#,
            &["-c", "port_1[0-9]+ ="],
        ),
        (
            "content -C 2",
            r#"{"pattern": "NEEDLE_7f3a", "output_mode": "content", "-C": 2, "head_limit": 0}"#,
            &["-n", "-C", "2", "NEEDLE_7f3a"],
        ),
        (
            "-i files",
            r#"{"pattern": "needle_7F3A", "-i": true, "head_limit": 0}"#,
            &["-l", "-i", "needle_7F3A"],
        ),
        (
            "literal prefix count",
            r#"{"pattern": "let handler_[0-9]+ = con[a-z]+", "output_mode": "count", "head_limit": 0}"#,
            &["-c", "let handler_[0-9]+ = con[a-z]+"],
        ),
    ];
    // TERN_BENCH_GREP=content: only the cases whose name holds it.
    let only = std::env::var("TERN_BENCH_GREP").unwrap_or_default();
    for (mode, input, rg_args) in cases {
        if !mode.contains(only.as_str()) {
            continue;
        }
        let input = tern::json::parse(input).expect("input");
        let mut best = Duration::MAX;
        let mut lines = 0;
        for _ in 0..5 {
            let began = Instant::now();
            let call = tern::harness::ToolUse {
                id: "toolu_bench".into(),
                name: "Grep".into(),
                input: Ok(input.clone()),
            };
            let out = smol::block_on(pipeline.run(call));
            best = best.min(began.elapsed());
            lines = out.content.lines().count();
        }
        print!(
            "{:<30} tern {:>8.1} ms ({lines} lines)",
            format!("Grep {mode}"),
            best.as_secs_f64() * 1e3
        );
        if rg_available {
            let mut rg_best = Duration::MAX;
            let mut rg_lines = 0;
            for _ in 0..5 {
                let began = Instant::now();
                let out = Command::new("rg")
                    .args(["--hidden", "--no-require-git"])
                    .args(rg_args)
                    .arg(".")
                    .current_dir(&root)
                    .output()
                    .expect("rg");
                rg_best = rg_best.min(began.elapsed());
                rg_lines = out
                    .stdout
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .count();
            }
            println!(
                "   rg {:>8.1} ms ({rg_lines} lines)   tern/rg {:.2}x",
                rg_best.as_secs_f64() * 1e3,
                best.as_secs_f64() / rg_best.as_secs_f64()
            );
        } else {
            println!("   (rg not installed: no comparison)");
        }
    }
}

/// The sandbox's cost per command: `bash -c true` through the Bash tool's
/// own path (protected paths worked out and snapshotted, the launcher
/// spawned, its end-of-command report read, the check after it run)
/// against plain `bash -c true`, in pairs taken alternately so that load
/// on the machine falls on both alike. Reported: the latency until the
/// result is known (what the tool waits for), the launcher's whole life
/// (which also includes the kernel tearing down its namespaces after the
/// report), and the CPU both use; p10 and median of the pairs.
/// A collector on 127.0.0.1: `answer` says whether it replies (at once)
/// or holds every connection open without a word, as a stalled one does.
fn collector(answer: bool) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            if !answer {
                held.push(conn);
                continue;
            }
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        line.clear();
                    }
                    if line.is_empty() {
                        return;
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if reader.get_mut().write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// OpenTelemetry's cost to a run: the same one-turn `-p` run with the
/// export off, to a collector that answers, to a port nobody listens on,
/// and to one that never answers; then a run long enough for exports to
/// leave during it (a reply that pauses 3.5 s, exports every 100 ms),
/// off and against the silent collector; and a one-second turn with the
/// default intervals, off and against the silent collector.
fn otel_overhead(bin: &str, dir: &std::path::Path) {
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let up = collector(true);
    let silent = collector(false);
    let api = standin::StandIn::start(vec![]);
    api.set_fallback(standin::text_reply(
        "The port is set in config/server.ts:12.",
    ));
    // The exports' interval, and `TERN_OTEL_FLUSH_MS` when set.
    let with = |endpoint: Option<&str>, interval: &str, flush: Option<&str>, url: &str| {
        let mut c = one_turn(bin, url, dir);
        if let Some(e) = endpoint {
            c.env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
                .env("OTEL_METRICS_EXPORTER", "otlp")
                .env("OTEL_LOGS_EXPORTER", "otlp")
                .env("OTEL_TRACES_EXPORTER", "otlp")
                .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", e)
                .env("OTEL_METRIC_EXPORT_INTERVAL", interval)
                .env("OTEL_LOGS_EXPORT_INTERVAL", interval);
        }
        if let Some(ms) = flush {
            c.env("TERN_OTEL_FLUSH_MS", ms);
        }
        c
    };
    for (name, endpoint, flush, n) in [
        ("otel off", None, None, 20),
        ("otel, collector up", Some(up.as_str()), None, 20),
        ("otel, collector down", Some(down.as_str()), None, 20),
        ("otel, collector silent", Some(silent.as_str()), None, 5),
        (
            "otel, silent, FLUSH_MS=0",
            Some(silent.as_str()),
            Some("0"),
            20,
        ),
    ] {
        let mut runs: Vec<Sample> = (0..n)
            .map(|_| measure_direct(&mut with(endpoint, "60000", flush, &api.url)))
            .collect();
        report(name, &mut runs);
    }
    // A turn of a second with the default intervals: the first exports
    // leave 200 ms in, so the exit knows a silent collector and does not
    // wait on it.
    let second_api = standin::StandIn::start(vec![]);
    second_api.set_fallback(standin::slow_text(
        "The port",
        Duration::from_secs(1),
        " is set.",
    ));
    for (name, endpoint) in [
        ("1 s run, otel off", None),
        ("1 s run, collector silent", Some(silent.as_str())),
    ] {
        let mut runs: Vec<Sample> = (0..5)
            .map(|_| measure_direct(&mut with(endpoint, "60000", None, &second_api.url)))
            .collect();
        report(name, &mut runs);
    }
    let pause = Duration::from_millis(3500);
    let slow_api = standin::StandIn::start(vec![]);
    slow_api.set_fallback(standin::slow_text("The port", pause, " is set."));
    for (name, endpoint) in [
        ("3.5 s run, otel off", None),
        ("3.5 s run, collector silent", Some(silent.as_str())),
    ] {
        let mut runs: Vec<Sample> = (0..3)
            .map(|_| measure_direct(&mut with(endpoint, "100", None, &slow_api.url)))
            .collect();
        report(name, &mut runs);
    }
}

fn sandbox_overhead(bin: &str) {
    let status = tern::harness::sandbox_probe();
    if status.landlock.is_err() || !status.seccomp_kernel {
        println!("sandbox overhead: skipped (no landlock or seccomp here)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tern-bench-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&dir)
        .status();
    let dir = std::fs::canonicalize(&dir).expect("bench dir");
    let cpu_of_children = || {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
        let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    let plain = || {
        let cpu = cpu_of_children();
        let t = Instant::now();
        let st = Command::new("/bin/bash")
            .args(["-c", "true"])
            .current_dir(&dir)
            .status()
            .expect("bash");
        assert!(st.success());
        let ms = t.elapsed().as_secs_f64() * 1e3;
        (ms, ms, cpu_of_children() - cpu)
    };
    // The server's children are counted in its cutime/cstime once reaped.
    let server_children_cpu = |pid: u32| -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // After "pid (comm) ": state is field 3, cutime 16, cstime 17.
        let after: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let field = |n: usize| {
            after
                .get(n - 3)
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (field(16) + field(17)) / ticks * 1e3
    };
    let self_cpu = || {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    let server_pid = std::cell::Cell::new(0u32);
    let boxed = |mounts: bool| {
        let mut p = tern::harness::SandboxPolicy {
            fail_if_unavailable: true,
            working: vec![dir.clone()],
            ..tern::harness::SandboxPolicy::new(vec![dir.clone()])
        };
        p.namespaces = mounts;
        let t = Instant::now();
        let env: Vec<_> = std::env::vars_os().collect();
        let prepared = p
            .prepare_in("/bin/bash", "true", &dir, &env, &[])
            .expect("prepare");
        if std::env::var_os("TERN_BENCH_EXEC").is_some() {
            let (mut cmd, mut end, finish) = prepared
                .command(std::path::Path::new(bin))
                .expect("command");
            let mut child = cmd.current_dir(&dir).spawn().expect("launcher");
            end.spawned();
            let mut said = Vec::new();
            std::io::Read::read_to_end(&mut std::fs::File::from(end.read), &mut said)
                .expect("report");
            assert!(finish.run().is_empty());
            let latency = t.elapsed().as_secs_f64() * 1e3;
            let _ = child.wait();
            return (latency, t.elapsed().as_secs_f64() * 1e3, 0.0);
        }
        let (spawned, finish) = prepared
            .spawn(&dir, std::env::vars_os().collect(), None)
            .expect("spawn through the sandbox server");
        let mut said = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(spawned.end), &mut said)
            .expect("report");
        assert_eq!(
            tern::harness::parse_status(&said),
            Some(Some(0)),
            "the command failed"
        );
        assert!(finish.run().is_empty());
        let latency = t.elapsed().as_secs_f64() * 1e3;
        // The launcher is the server's child: its whole life ends when
        // its process is gone.
        if server_pid.get() == 0 {
            let stat =
                std::fs::read_to_string(format!("/proc/{}/stat", spawned.pid)).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1))
                .and_then(|p| p.parse().ok());
            server_pid.set(ppid.unwrap_or(0));
        }
        while std::path::Path::new(&format!("/proc/{}", spawned.pid)).exists() {
            std::thread::sleep(Duration::from_micros(50));
        }
        let life = t.elapsed().as_secs_f64() * 1e3;
        (latency, life, 0.0)
    };
    let pct = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[((v.len() - 1) as f64 * q) as usize]
    };
    tern::harness::remember_launcher_at(std::path::Path::new(bin));
    boxed(true); // starts the server
    const N: usize = 200;
    for mounts in [true, false] {
        let (mut lat, mut life) = (Vec::new(), Vec::new());
        let (mut plain_cpu, mut tern_side) = (0.0, 0.0);
        let k0 = server_children_cpu(server_pid.get());
        for _ in 0..N {
            let c0 = cpu_of_children();
            let a = plain();
            plain_cpu += cpu_of_children() - c0;
            let s0 = self_cpu();
            let b = boxed(mounts);
            tern_side += self_cpu() - s0;
            lat.push(b.0 - a.0);
            life.push(b.1 - a.1);
        }
        // Every launcher is reaped (and counted) by the server by now.
        std::thread::sleep(Duration::from_millis(50));
        let boxed_cpu = tern_side + server_children_cpu(server_pid.get()) - k0;
        println!(
            "{:<30} latency +{:.2} ms (median +{:.2})   launcher life +{:.2} ms (median +{:.2})   cpu +{:.2} ms per command, {:.2} of it in tern   ({N} pairs, p10; goal: latency ≤ 1 ms)",
            if mounts {
                "sandboxed bash -c true"
            } else {
                "  without namespaces"
            },
            pct(&mut lat, 0.1),
            pct(&mut lat, 0.5),
            pct(&mut life, 0.1),
            pct(&mut life, 0.5),
            (boxed_cpu - plain_cpu) / N as f64,
            tern_side / N as f64,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn claude_code_binary() -> Option<String> {
    if let Ok(b) = std::env::var("CLAUDE_BIN") {
        return Some(b);
    }
    let installed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    installed.exists().then(|| installed.display().to_string())
}

/// This thread's CPU time in seconds: on a shared machine, throughput per
/// CPU second says what the code costs; wall time also says how busy the
/// box was.
fn thread_cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// SSE parse + assemble on three recorded-style streams: a long text
/// answer, a tool call whose JSON arrives one byte per event (the worst
/// case: all framing), and a thinking block.
fn sse_throughput() {
    let mb: usize = std::env::var("TERN_BENCH_SSE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let json_str = |s: &str| tern::json::Value::from(s).to_json();
    let text: Vec<String> = ["fn main() { println!(\"hello, wörld\"); } ", "The port is set in ", "config/server.ts:12.\n"]
        .iter()
        .map(|t| format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}\n\n", json_str(t)))
        .collect();
    let input = r#"{"file_path": "/work/src/main.rs", "old_string": "let x = 1;\n", "new_string": "let x = 2;\n"}"#;
    let tool: Vec<String> = input
        .chars()
        .map(|c| format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{}}}}}\n\n", json_str(&c.to_string())))
        .collect();
    let thinking: Vec<String> = ["Let me look at the failing test first. ", "The assertion compares \"a\" with \"b\"; "]
        .iter()
        .map(|t| format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"thinking_delta\",\"thinking\":{}}}}}\n\n", json_str(t)))
        .collect();
    let start = |block: &str| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{block}}}\n\n"
        )
    };
    let end = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let workloads = [
        (
            "text deltas",
            start(r#"{"type":"text","text":""}"#),
            text,
            false,
        ),
        (
            "tool JSON, 1 byte/event",
            start(r#"{"type":"tool_use","id":"toolu_1","name":"Edit","input":{}}"#),
            tool,
            true,
        ),
        (
            "thinking deltas",
            start(r#"{"type":"thinking","thinking":""}"#),
            thinking,
            false,
        ),
    ];
    for (name, head, deltas, restart) in workloads {
        // A tool call is one block: repeat whole messages to fill the size.
        let mut stream = String::new();
        while stream.len() < mb * 1024 * 1024 {
            stream.push_str(&head);
            for _ in 0..if restart { 1 } else { 2000 } {
                for d in &deltas {
                    stream.push_str(d);
                }
            }
            stream.push_str(end);
        }
        let bytes = stream.as_bytes();
        let (best, best_cpu) = best_of_five(|| {
            let mut parser = SseParser::default();
            let mut asm = Assembler::new();
            let mut messages = 0usize;
            for chunk in bytes.chunks(16 * 1024) {
                parser
                    .feed(chunk, &mut |e| {
                        if e.event == "message_start" {
                            asm = Assembler::new();
                        }
                        asm.feed(e.event, e.data).expect("valid stream");
                        if asm.is_done() {
                            messages += 1;
                        }
                        Flow::Continue
                    })
                    .expect("parse");
            }
            assert!(messages > 0 && asm.is_done());
        });
        println!(
            "{:<28} {:>8.1} MB/s   ({:.1} MB/s of CPU time; {} MB, {name}, parse + assemble)",
            "SSE parse",
            bytes.len() as f64 / 1e6 / best,
            bytes.len() as f64 / 1e6 / best_cpu,
            bytes.len() / 1_000_000
        );
    }
}

/// The chat completions path (local servers): SSE parse, translation into
/// Messages API events (reasoning and `<think>` text into thinking blocks),
/// assembly, and the search of each finished answer for tool calls written
/// as text (on by default for local servers), per MB of what the server
/// sent.
fn chat_throughput() {
    let mb: usize = std::env::var("TERN_BENCH_SSE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let json_str = |s: &str| tern::json::Value::from(s).to_json();
    let chunk = |field: &str, text: &str| {
        format!(
            "data: {{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1765000000,\"model\":\"qwen3\",\"system_fingerprint\":\"b6000\",\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":{}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            json_str(text)
        )
    };
    let sentences = [
        "Let me look at the failing test first. ",
        "The assertion compares \"a\" with \"b\"; ",
        "so the fix is in config/server.ts:12.\n",
    ];
    let call = [
        "<tool_call>\n{\"name\": \"Read\", ",
        "\"arguments\": {\"file_path\": ",
        "\"src/main.rs\"}}\n</tool_call>",
    ];
    let end = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    // (name, first chunk, deltas, times the deltas repeat in one answer,
    // whether each answer is a call)
    let workloads: [(&str, String, Vec<String>, usize, bool); 4] = [
        (
            "text",
            String::new(),
            sentences.iter().map(|t| chunk("content", t)).collect(),
            2000,
            false,
        ),
        (
            "reasoning_content",
            String::new(),
            sentences
                .iter()
                .map(|t| chunk("reasoning_content", t))
                .collect(),
            2000,
            false,
        ),
        (
            "<think> in the text",
            chunk("content", "<think>"),
            sentences.iter().map(|t| chunk("content", t)).collect(),
            2000,
            false,
        ),
        (
            "<tool_call> answers",
            String::new(),
            call.iter().map(|t| chunk("content", t)).collect(),
            1,
            true,
        ),
    ];
    let schema = tern::json::parse(
        r#"{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}"#,
    )
    .expect("schema");
    let offered = |name: &str| (name == "Read").then_some(std::borrow::Cow::Borrowed(&schema));
    for (name, head, deltas, repeat, calls) in workloads {
        let mut stream = String::new();
        while stream.len() < mb * 1024 * 1024 {
            stream.push_str(&head);
            for _ in 0..repeat {
                for d in &deltas {
                    stream.push_str(d);
                }
            }
            stream.push_str(end);
        }
        let bytes = stream.as_bytes();
        let (best, best_cpu) = best_of_five(|| {
            let mut parser = SseParser::default();
            let mut translator = ChatTranslator::default();
            let mut asm = Assembler::new();
            let (mut messages, mut recovered) = (0usize, 0usize);
            for piece in bytes.chunks(16 * 1024) {
                parser
                    .feed(piece, &mut |e| {
                        for (event, data) in translator.translate(e.data) {
                            if event == "message_start" {
                                asm = Assembler::new();
                            }
                            asm.feed(event, &data).expect("valid stream");
                            if asm.is_done() {
                                messages += 1;
                                if recover_text_calls(&asm.text(), offered).is_some() {
                                    recovered += 1;
                                }
                                translator = ChatTranslator::default();
                            }
                        }
                        Flow::Continue
                    })
                    .expect("parse");
            }
            assert!(messages > 0 && asm.is_done());
            assert_eq!(recovered, if calls { messages } else { 0 });
        });
        println!(
            "{:<28} {:>8.1} MB/s   ({:.1} MB/s of CPU time; {} MB, {name}, parse + translate + assemble + recover)",
            "chat completions SSE",
            bytes.len() as f64 / 1e6 / best,
            bytes.len() as f64 / 1e6 / best_cpu,
            bytes.len() / 1_000_000
        );
    }
}

/// The fastest of five runs of `work`, in wall and thread CPU seconds.
fn best_of_five(mut work: impl FnMut()) -> (f64, f64) {
    let (mut best, mut best_cpu) = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        let began = Instant::now();
        let cpu = thread_cpu();
        work();
        best = best.min(began.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(thread_cpu() - cpu);
    }
    (best, best_cpu)
}

/// A wide object (a model's tool input can be anything): parse time must
/// grow linearly with the number of keys.
fn json_wide_objects() {
    for keys in [10_000usize, 100_000] {
        let mut text = String::from("{");
        for i in 0..keys {
            text.push_str(&format!("\"key_{i}\":{i},"));
        }
        text.push_str("\"end\":true}");
        let mut best = f64::MAX;
        for _ in 0..3 {
            let began = Instant::now();
            let v = tern::json::parse(&text).expect("valid JSON");
            assert!(v.get("end").is_some());
            best = best.min(began.elapsed().as_secs_f64());
        }
        println!(
            "{:<28} {:>8.1} ms   ({keys} keys, {} KB)",
            "JSON wide object",
            best * 1e3,
            text.len() / 1000
        );
    }
}

fn main() {
    let bin = || {
        let bin =
            std::env::var("TERN_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_tern").to_string());
        let bin = std::fs::canonicalize(&bin)
            .unwrap_or_else(|e| panic!("{bin}: {e}"))
            .display()
            .to_string();
        let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
        println!("binary: {bin} ({size} bytes)");
        bin
    };
    // `cargo bench` passes --bench; ignore arguments. TERN_BENCH_ONLY=sse,json
    // runs only those in-process sections (no binary needed); `sandbox`
    // the sandbox's cost per command alone.
    if let Ok(only) = std::env::var("TERN_BENCH_ONLY") {
        for part in only.split(',') {
            match part.trim() {
                "sse" => {
                    sse_throughput();
                    chat_throughput();
                }
                "json" => json_wide_objects(),
                "sandbox" => sandbox_overhead(&bin()),
                "grep" => grep_vs_ripgrep(),
                "otel" => {
                    let dir =
                        std::env::temp_dir().join(format!("tern-bench-{}", std::process::id()));
                    std::fs::create_dir_all(&dir).expect("bench dir");
                    otel_overhead(&bin(), &dir);
                    let _ = std::fs::remove_dir_all(&dir);
                }
                "turn" | "session" => {
                    let bin = bin();
                    let dir =
                        std::env::temp_dir().join(format!("tern-bench-{}", std::process::id()));
                    std::fs::create_dir_all(&dir).expect("bench dir");
                    if part.trim() == "turn" {
                        let api = standin::StandIn::start(vec![]);
                        api.set_fallback(standin::text_reply(
                            "The port is set in config/server.ts:12.",
                        ));
                        api.set_split(standin::Split::PerEvent);
                        turn_figures(&bin, &api.url, &dir);
                    } else {
                        let turns = std::env::var("TERN_BENCH_TURNS")
                            .ok()
                            .and_then(|t| t.parse().ok());
                        long_session(&bin, &dir, turns.unwrap_or(1000));
                    }
                    let _ = std::fs::remove_dir_all(&dir);
                }
                other => {
                    println!(
                        "unknown section {other:?} (sse, json, sandbox, grep, otel, turn, session)"
                    )
                }
            }
        }
        return;
    }
    let bin = bin();

    let mut v: Vec<Sample> = (0..50)
        .map(|_| measure_direct(Command::new(&bin).arg("-v")))
        .collect();
    let rss = measure(Command::new(&bin).arg("-v")).max_rss_kb;
    for s in &mut v {
        s.max_rss_kb = rss;
    }
    report("tern -v", &mut v);

    let dir = std::env::temp_dir().join(format!("tern-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let api = standin::StandIn::start(vec![]);
    api.set_fallback(standin::text_reply(
        "The port is set in config/server.ts:12.",
    ));
    api.set_split(standin::Split::PerEvent);
    let tern_turn = turn_figures(&bin, &api.url, &dir);

    long_session(&bin, &dir, 1000);
    compacting_session(&bin, &dir);
    sandbox_overhead(&bin);
    otel_overhead(&bin, &dir);
    sse_throughput();
    chat_throughput();
    json_wide_objects();
    grep_vs_ripgrep();

    match claude_code_binary() {
        None => {
            println!("Claude Code comparison: skipped (run benches/setup.sh or set CLAUDE_BIN)")
        }
        Some(cc) => {
            let mut runs: Vec<Sample> = (0..5)
                .map(|_| measure(&mut one_turn(&cc, &api.url, &dir)))
                .collect();
            let cc_turn = report("one-turn -p, Claude Code", &mut runs);
            println!(
                "Claude Code / tern, one turn: wall {:.0}x   cpu {:.0}x   peak RSS {:.0}x",
                cc_turn.0.as_secs_f64() / tern_turn.0.as_secs_f64(),
                cc_turn.1.as_secs_f64() / tern_turn.1.as_secs_f64().max(1e-6),
                cc_turn.2 as f64 / tern_turn.2 as f64
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
