//! Bash permission decision time: the whole of `Policy::decide` for a
//! Bash call (tree-sitter parse, plan, spec checks, path resolution, rule
//! matching) over the corpus in tests/fixtures/bash_corpus.tsv, in a real
//! git repository. Prints p50, p90, p99 and max per command; the goal is
//! p99 ≤ 100 µs. Each command is decided once cold (first parse) and many
//! times warm; both are reported, the goal applies to all samples.
//!
//! Run: `cargo bench --bench bash_decision` (`TERN_BENCH_FILTER=text`
//! keeps only the commands containing `text`; `TERN_BENCH_TOP=n` lists the
//! n slowest; `TERN_BENCH_CLOCK=cpu` measures thread CPU time).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tern::harness::Behavior;
use tern::harness::Registry;
use tern::harness::{Mode, Policy, Rule};

fn project() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tern-bench-bash-{}", std::process::id()));
    let files = [
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        ("README.md", "# Demo\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "pub fn f() {}\n"),
        ("src/parser.rs", "\n"),
        ("src/config/mod.rs", "\n"),
        ("tests/integration.rs", "\n"),
        ("docs/guide.md", "\n"),
        ("package.json", "{}\n"),
        ("data.json", "{}\n"),
        ("names.txt", "a\n"),
        ("logs/app.log", "x\n"),
        (".env", "K=v\n"),
    ];
    for (p, t) in files {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&dir)
        .output();
    std::fs::canonicalize(dir).unwrap()
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, mut v: Vec<Duration>) -> Duration {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name:<28} n={:<6} p50 {:>7.1} µs  p90 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs",
        v.len(),
        us(pct(&v, 0.5)),
        us(pct(&v, 0.9)),
        us(pct(&v, 0.99)),
        us(*v.last().unwrap())
    );
    pct(&v, 0.99)
}

fn main() {
    let text = include_str!("../tests/fixtures/bash_corpus.tsv");
    let commands: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('\t'))
        .map(|(_, c)| c.replace("<NL>", "\n").replace("<TAB>", "\t"))
        // TERN_BENCH_FILTER=text: only the commands containing it (to
        // profile one kind).
        .filter(|c| std::env::var("TERN_BENCH_FILTER").map_or(true, |f| c.contains(&f)))
        .collect();
    let cwd = project();
    let rules = vec![
        Rule::parse("Bash(cargo test:*)", Behavior::Allow, None),
        Rule::parse("Bash(rm:*)", Behavior::Deny, None),
        Rule::parse("Read(./.env)", Behavior::Deny, None),
    ];
    let policy = Policy::new(Mode::Default, rules, &cwd, &[]);
    let registry = Registry::builtin();
    let bash = registry.get("Bash").expect("Bash tool");
    // TERN_BENCH_CLOCK=cpu: this thread's CPU time instead of wall time
    // (for comparing changes on a loaded machine; the goal is wall time
    // on a quiet one).
    let cpu = std::env::var("TERN_BENCH_CLOCK").is_ok_and(|c| c == "cpu");
    let start = Instant::now();
    let now = || {
        if cpu {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid timespec to fill.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        } else {
            start.elapsed()
        }
    };
    let decide = |c: &str| {
        let input = tern::obj! { "command" => c };
        let t = now();
        // What the pipeline does per call: the facts (the tool's own
        // read-only analysis among them), then the decision.
        let d = policy.decide(&tern::harness::facts(&*bash, "toolu_1", &input));
        let e = now() - t;
        std::hint::black_box(d);
        e
    };
    let cold: Vec<Duration> = commands.iter().map(|c| decide(c)).collect();
    let rounds: usize = std::env::var("TERN_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30)
        .max(1);
    let mut warm = Vec::with_capacity(commands.len() * rounds);
    for _ in 0..rounds {
        for c in &commands {
            warm.push(decide(c));
        }
    }
    println!(
        "Bash decision time ({}) over {} corpus commands in {}",
        if cpu { "thread CPU time" } else { "wall time" },
        commands.len(),
        Path::new(&cwd).display()
    );
    // The commands that cost most (median of their warm samples), to say
    // where the time goes.
    let n = commands.len();
    let mut per: Vec<(Duration, &str)> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut v: Vec<Duration> = (0..rounds).map(|r| warm[r * n + i]).collect();
            v.sort();
            (v[v.len() / 2], c.as_str())
        })
        .collect();
    per.sort_by_key(|p| std::cmp::Reverse(p.0));
    // TERN_BENCH_TOP=n: how many to list.
    let top = std::env::var("TERN_BENCH_TOP")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(8);
    println!("slowest (warm median):");
    for (d, c) in per.iter().take(top) {
        println!("  {:8.1} µs  {c}", d.as_secs_f64() * 1e6);
    }
    report("cold (first parse)", cold.clone());
    report("warm", warm.clone());
    let mut all = cold;
    all.extend(warm);
    let p99 = report("all", all);
    println!(
        "p99 {:.1} µs: {} the 100 µs goal",
        p99.as_secs_f64() * 1e6,
        if p99 <= Duration::from_micros(100) {
            "within"
        } else {
            "OVER"
        }
    );
    let _ = std::fs::remove_dir_all(&cwd);
}
