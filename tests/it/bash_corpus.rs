//! The labelled Bash corpus (tests/fixtures/bash_corpus.tsv) through the
//! real permission policy, in a real git repository laid out like a small
//! project. `read` commands are what an agent runs to look around; the
//! share auto-allowed is printed (goal ≥ 75 %) and held to a floor so it
//! cannot silently fall. `dangerous` ones must never be auto-allowed, in
//! default, plan and dontAsk modes; `denied` ones must be denied by the
//! deny rules even in bypass mode; `allowed` ones must pass the allow rules.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use tern::harness::Behavior;
use tern::harness::Registry;
use tern::harness::{Decision, Mode, Policy, Rule};

const ALLOW: &[&str] = &[
    "Bash(cargo build:*)",
    "Bash(cargo test:*)",
    "Bash(cargo fmt:*)",
    "Bash(cargo clippy:*)",
    "Bash(npm test:*)",
    "Bash(npm run build:*)",
    "Bash(make test)",
    "Bash(git add:*)",
    "Bash(git commit:*)",
    "Bash(mkdir:*)",
    "Bash(touch:*)",
];
const DENY: &[&str] = &[
    "Bash(rm:*)",
    "Bash(curl:*)",
    "Bash(git push:*)",
    "Read(./.env)",
];

fn unescape(s: &str) -> String {
    s.replace("<NL>", "\n").replace("<TAB>", "\t")
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.email=a@b.c",
            "-c",
            "user.name=alice",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(ok, "git {args:?} failed in {}", dir.display());
}

/// A small Rust/JS/Python project with history: three commits, a branch
/// `feature`, a tag `v0.1.0`.
pub fn project(name: &str) -> PathBuf {
    let dir = std::fs::canonicalize(support::scratch(name)).unwrap();
    let files: &[(&str, &str)] = &[
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nserde = \"1\"\n",
        ),
        (
            "Cargo.lock",
            "[[package]]\nname = \"serde\"\nversion = \"1.0.0\"\n",
        ),
        ("README.md", "# Demo\n\nRun it on port 8080.\n"),
        ("LICENSE", "MIT\n"),
        (".gitignore", "target/\n.env\n"),
        (".env", "API_KEY=secret\n"),
        ("src/main.rs", "fn main() {\n    demo::run();\n}\n"),
        (
            "src/lib.rs",
            "pub mod parser;\npub mod config;\n\npub fn run() {\n    // TODO: flags\n    let x: Result<u8, ()> = Ok(1);\n    x.unwrap();\n}\n",
        ),
        (
            "src/parser.rs",
            "pub struct Parser;\n\npub fn parse(s: &str) -> usize {\n    s.len()\n}\n",
        ),
        (
            "src/config/mod.rs",
            "pub struct Config {\n    pub port: u16,\n}\n",
        ),
        (
            "tests/integration.rs",
            "use demo::parser;\n\n#[test]\nfn parses() {\n    assert_eq!(parser::parse(\"ab\"), 2);\n}\n",
        ),
        ("docs/guide.md", "# Guide\n\nSee the README.\n"),
        (
            "package.json",
            "{\"name\": \"demo-web\", \"version\": \"1.2.3\", \"scripts\": {\"test\": \"vitest\", \"build\": \"vite build\"}, \"dependencies\": {\"react\": \"18\"}, \"devDependencies\": {\"vite\": \"5\"}}\n",
        ),
        ("data.json", "{\"items\": [{\"id\": 1}, {\"id\": 2}]}\n"),
        ("config.ini", "# settings\nport=8080\nhost=localhost\n"),
        (
            "logs/app.log",
            "INFO start\nWARN slow\nERROR boom\nINFO stop\n",
        ),
        ("build.log", "Compiling demo\nFinished\n"),
        ("names.txt", "bob\nalice\nbob\ncarol\n"),
        ("numbers.txt", "3\n1\n2\n"),
        ("data.csv", "a,1\nb,2\nc,3\n"),
        ("old.txt", "one\ntwo\n"),
        ("new.txt", "one\nthree\n"),
        ("a.bin", "\u{1}\u{2}abc"),
        ("b.bin", "\u{1}\u{3}abc"),
        ("scripts/build.sh", "#!/bin/sh\necho building\n"),
        ("Makefile", "test:\n\techo test\n"),
        ("notes/todo.txt", "write docs\n"),
        ("web/index.html", "<html></html>\n"),
        ("web/app.js", "function main() {}\n"),
        ("web/style.css", "body {}\n"),
        ("python/app.py", "def main():\n    pass\n"),
        ("go/main.go", "package main\n\nfunc main() {}\n"),
    ];
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "Start"]);
    git(&dir, &["tag", "v0.1.0"]);
    std::fs::write(dir.join("README.md"), "# Demo\n\nRun it on port 9090.\n").unwrap();
    git(&dir, &["commit", "-qam", "Fix the port"]);
    git(&dir, &["branch", "feature"]);
    std::fs::write(
        dir.join("docs/guide.md"),
        "# Guide\n\nSee the README twice.\n",
    )
    .unwrap();
    git(&dir, &["commit", "-qam", "Docs"]);
    git(
        &dir,
        &[
            "remote",
            "add",
            "origin",
            "https://example.invalid/demo.git",
        ],
    );
    dir
}

fn rules(list: &[&str], b: Behavior) -> Vec<Rule> {
    list.iter().map(|r| Rule::parse(r, b, None)).collect()
}

#[test]
fn corpus() {
    if Command::new("git").arg("--version").output().is_err() {
        support::skip("corpus", "git is not installed");
        return;
    }
    let text = include_str!("../fixtures/bash_corpus.tsv");
    let cwd = project("corpus");
    let registry = Registry::builtin();
    let bash = registry.get("Bash").unwrap();
    let decide = |p: &Policy, c: &str| {
        let input = tern::obj! { "command" => c };
        p.decide(&tern::harness::facts(&*bash, "toolu_1", &input))
    };
    let plain = |m: Mode| Policy::new(m, Vec::new(), &cwd, &[]);
    let ruled = |m: Mode| {
        let mut r = rules(ALLOW, Behavior::Allow);
        r.extend(rules(DENY, Behavior::Deny));
        Policy::new(m, r, &cwd, &[])
    };
    let (default, plan, dont_ask) = (
        plain(Mode::Default),
        plain(Mode::Plan),
        plain(Mode::DontAsk),
    );
    let (with_rules, bypass) = (ruled(Mode::Default), ruled(Mode::BypassPermissions));

    let mut failures = Vec::new();
    let mut read = (0usize, Vec::new());
    let mut counts = [0usize; 4];
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (label, raw) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("bad corpus line {line:?}"));
        let cmd = unescape(raw);
        match label {
            "read" => {
                counts[0] += 1;
                read.0 += 1;
                let d = decide(&default, &cmd);
                if !d.is_allow() {
                    read.1.push(format!("{raw}\n      {d:?}"));
                }
            }
            "dangerous" => {
                counts[1] += 1;
                for (mode, p) in [
                    ("default", &default),
                    ("plan", &plan),
                    ("dontAsk", &dont_ask),
                ] {
                    if decide(p, &cmd).is_allow() {
                        failures.push(format!("DANGEROUS auto-allowed in {mode}: {raw}"));
                    }
                }
            }
            "denied" => {
                counts[2] += 1;
                for (mode, p) in [("default", &with_rules), ("bypass", &bypass)] {
                    let d = decide(p, &cmd);
                    if !matches!(d, Decision::Deny(_)) {
                        failures.push(format!("not denied in {mode}: {raw} → {d:?}"));
                    }
                }
            }
            "allowed" => {
                counts[3] += 1;
                let d = decide(&with_rules, &cmd);
                if !d.is_allow() {
                    failures.push(format!("not allowed by the rules: {raw} → {d:?}"));
                }
            }
            other => panic!("unknown label {other}"),
        }
    }
    let rate = (read.0 - read.1.len()) as f64 * 100.0 / read.0.max(1) as f64;
    println!(
        "\nBash corpus: {} read, {} dangerous, {} denied, {} allowed",
        counts[0], counts[1], counts[2], counts[3]
    );
    println!(
        "read commands auto-allowed: {}/{} = {rate:.1} % (goal ≥ 75 %)",
        read.0 - read.1.len(),
        read.0
    );
    for r in &read.1 {
        println!("  asked: {r}");
    }
    assert!(
        counts[0] >= 400,
        "the corpus needs at least 400 read commands"
    );
    assert!(
        counts[1] >= 100,
        "the corpus needs at least 100 dangerous commands"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        rate >= 75.0,
        "auto-allow rate {rate:.1} % is under the 75 % goal"
    );
}
