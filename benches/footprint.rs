//! Footprint benchmark: prints figures, asserts nothing about time.
//!
//! - `tern -v`: wall time and peak RSS
//! - one `-p` turn against the local Messages API stand-in: wall and peak RSS
//! - SSE parsing + message assembly throughput in MB/s
//!
//! Run: `cargo bench --bench footprint` (measures the bench-profile binary),
//! or set TERN_BIN to measure another build, e.g. the static musl release.

#[path = "../tests/support/standin.rs"]
mod standin;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tern::model::sse::{Flow, SseParser};
use tern::model::stream::Assembler;

struct Sample {
    wall: Duration,
    max_rss_kb: i64,
}

/// Runs the command and reads its peak RSS from wait4's rusage.
// The child is reaped by wait4 (to get its rusage), not by Child::wait.
#[allow(clippy::zombie_processes)]
fn measure(cmd: &mut Command) -> Sample {
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
    Sample {
        wall,
        max_rss_kb: usage.ru_maxrss,
    }
}

fn report(name: &str, samples: &mut [Sample]) {
    samples.sort_by_key(|s| s.wall);
    let median = samples[samples.len() / 2].wall;
    let min = samples[0].wall;
    let rss = samples.iter().map(|s| s.max_rss_kb).max().unwrap_or(0);
    println!(
        "{name:<28} median {:>8.2} ms   min {:>8.2} ms   peak RSS {:>6} KiB   (n={})",
        median.as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3,
        rss,
        samples.len()
    );
}

fn sse_throughput() {
    // A long answer streamed as many small text deltas, like a real reply.
    let mut stream = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"fn main() { println!(\\\"hello, wörld\\\"); } \"}}\n\n";
    while stream.len() < 32 * 1024 * 1024 {
        stream.push_str(delta);
    }
    stream.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    let bytes = stream.as_bytes();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let began = Instant::now();
        let mut parser = SseParser::default();
        let mut asm = Assembler::new();
        let mut events = 0usize;
        for chunk in bytes.chunks(16 * 1024) {
            parser
                .feed(chunk, &mut |e| {
                    events += 1;
                    asm.feed(e.event, e.data).expect("valid stream");
                    Flow::Continue
                })
                .expect("parse");
        }
        assert!(asm.is_done() && events > 1000);
        best = best.min(began.elapsed().as_secs_f64());
    }
    println!(
        "{:<28} {:>8.1} MB/s   ({} MB of text_delta events, parse + assemble)",
        "SSE parse",
        bytes.len() as f64 / 1e6 / best,
        bytes.len() / 1_000_000
    );
}

fn main() {
    // `cargo bench` passes --bench; ignore arguments.
    let bin = std::env::var("TERN_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_tern").to_string());
    let bin = std::fs::canonicalize(&bin)
        .unwrap_or_else(|e| panic!("{bin}: {e}"))
        .display()
        .to_string();
    let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
    println!("binary: {bin} ({size} bytes)");

    let mut v: Vec<Sample> = (0..50)
        .map(|_| measure(Command::new(&bin).arg("-v")))
        .collect();
    report("tern -v", &mut v);

    let dir = std::env::temp_dir().join(format!("tern-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let runs = 30;
    let api = standin::StandIn::start(
        (0..runs)
            .map(|_| standin::text_reply("The port is set in config/server.ts:12."))
            .collect(),
    );
    api.set_split(standin::Split::PerEvent);
    let mut turn: Vec<Sample> = (0..runs)
        .map(|_| {
            measure(
                Command::new(&bin)
                    .current_dir(&dir)
                    .env("ANTHROPIC_BASE_URL", &api.url)
                    .env("ANTHROPIC_API_KEY", "sk-bench")
                    .stdin(Stdio::null())
                    .args(["-p", "where is the port set?"]),
            )
        })
        .collect();
    report("one-turn -p (stand-in)", &mut turn);
    let _ = std::fs::remove_dir_all(&dir);

    sse_throughput();
}
