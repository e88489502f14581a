//! The source tree keeps three rules that a compiler does not check:
//!
//! - the planes' imports form the DAG written in `src/lib.rs`: a module
//!   uses only modules on earlier lines of its layer list;
//! - nothing outside the frontends and the binary's entry points writes to
//!   stdout or stderr;
//! - tern's environment is read in one place, the configuration, which
//!   hands the parts values (`config::Runtime`);
//! - the library's public face is `harness` and `json`: every plane is
//!   `pub(crate)`, so its `pub` items are crate-visible unless the harness
//!   names them;
//! - the tool call's path (`agent/pipeline.rs`) is stages of at most a
//!   screen, and its approval half neither checks, decides nor runs.
//!
//! All read the real sources. Test code (`#[cfg(test)] mod …` and the
//! `tests.rs` files it names) may reach anywhere and is left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, as (path relative to src, text without
/// test modules and comments). Files that are test modules are dropped.
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut test_files = Vec::new();
    let mut out = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (code, tests) = production_part(&text);
        for name in tests {
            // `mod tests;` in a/b.rs or a/b/mod.rs names a/b/tests.rs.
            let stem = path.with_extension("");
            let dir = if path.file_name().is_some_and(|n| n == "mod.rs") {
                path.parent().unwrap().to_path_buf()
            } else {
                stem
            };
            test_files.push(dir.join(format!("{name}.rs")));
        }
        out.push((path.clone(), code));
    }
    out.retain(|(p, _)| !test_files.contains(p));
    out.into_iter()
        .map(|(p, c)| {
            let rel = p
                .strip_prefix(src())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, c)
        })
        .collect()
}

/// The text without `#[cfg(test)]` items (inline test modules among
/// them) and comments, plus the names of `#[cfg(test)] mod x;` files.
fn production_part(text: &str) -> (String, Vec<String>) {
    let mut code = String::new();
    let mut tests = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.peek().map(|l| l.trim()).unwrap_or("");
            let item = next
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(rest) = item.strip_prefix("mod ")
                && let Some(name) = rest.strip_suffix(';')
            {
                tests.push(name.to_string());
                lines.next();
                continue;
            }
            // A test module or another test-only item: skip it through its
            // closing brace. (A test module need not close its file: one
            // once hid the `mod tests;` after it.)
            let mut depth = 0i32;
            let mut opened = false;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                opened |= l.contains('{');
                // `#[cfg(test)] use …;` ends at its semicolon.
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        let without_comment = match line.find("//") {
            // Not inside a string literal such as "http://…".
            Some(i) if line[..i].matches('"').count() % 2 == 0 => &line[..i],
            _ => line,
        };
        code.push_str(without_comment);
        code.push('\n');
    }
    (code, tests)
}

/// The top-level module a source file belongs to.
fn plane_of(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first)
}

/// The layer list from `src/lib.rs`: the lines of the fenced block after
/// the "Layers" heading, lowest first.
fn layers() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut in_block = false;
    let mut seen_heading = false;
    let mut out = Vec::new();
    for line in lib.lines() {
        let doc = line.trim_start_matches("//!").trim();
        if doc.starts_with("Layers") {
            seen_heading = true;
        } else if seen_heading && doc.starts_with("```") {
            if in_block {
                break;
            }
            in_block = true;
        } else if in_block && !doc.is_empty() {
            out.push(doc.split_whitespace().next().unwrap().to_string());
        }
    }
    out
}

#[test]
fn imports_follow_the_layers_written_in_lib_rs() {
    let order = layers();
    assert!(
        order.len() > 8,
        "no layer list found in src/lib.rs: {order:?}"
    );
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let sources = sources();
    let mut planes: Vec<&str> = sources
        .iter()
        .map(|(rel, _)| plane_of(rel))
        .filter(|p| *p != "lib" && *p != "main")
        .collect();
    planes.sort();
    planes.dedup();
    for p in &planes {
        assert!(rank.contains_key(p), "src/lib.rs's layer list lacks `{p}`");
    }
    let mut upward = Vec::new();
    for (rel, code) in &sources {
        let from = plane_of(rel);
        let Some(&from_rank) = rank.get(from) else {
            continue;
        };
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let to: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                !rest.starts_with('{'),
                "{rel}: write `use crate::plane::…` one plane per line, so this test can read it"
            );
            if to == from {
                continue;
            }
            if let Some(&to_rank) = rank.get(to.as_str())
                && to_rank >= from_rank
            {
                upward.push(format!("{rel}: {from} uses {to}"));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports against the layers in src/lib.rs:\n{}",
        upward.join("\n")
    );
}

/// The parser above must see an upward import when there is one.
#[test]
fn the_import_reader_sees_an_upward_use() {
    let (code, tests) = production_part(
        "use crate::agent::Event; // comment crate::app\n\
         #[cfg(test)]\nmod tests;\n\
         fn f() {}\n\
         #[cfg(test)]\nmod more {\n use crate::app::run;\n}\n",
    );
    assert!(code.contains("crate::agent"));
    assert!(!code.contains("crate::app"), "{code}");
    assert_eq!(tests, ["tests"]);
}

/// Where writing to the terminal is allowed, and why.
const PRINTERS: &[(&str, &str)] = &[
    (
        "frontend/",
        "the frontends are the only consumers of events",
    ),
    ("main.rs", "the binary's entry"),
    ("lib.rs", "run_main: usage errors, --version, --help"),
    (
        "app.rs",
        "the session's entry: a failure, and what was said before it, when no frontend exists",
    ),
    // The rest of app/ builds and drives a session, whose warnings reach
    // every frontend (stream-json and SDK users too) only through the
    // printer: app::build collects them and the frontend shows them first.
    // These files are frontends of their own: subcommands print their
    // results, and line mode's loop answers its slash commands.
    ("app/doctor.rs", "`tern doctor` prints its report"),
    (
        "app/mcp_login.rs",
        "`tern mcp login/logout` talk to the person",
    ),
    (
        "app/subcommands.rs",
        "`tern mcp list`, `sessions`, `trust`, `config permissions` print their results",
    ),
    (
        "app/lines.rs",
        "line mode's loop: slash commands answer at the terminal",
    ),
    (
        "sandbox/launch.rs",
        "the sandbox launcher is its own process; its stderr is the command's",
    ),
    (
        "tools/repl/vm.rs",
        "the REPL VM is its own process; its stdout is the wire to the session",
    ),
];

#[test]
fn only_the_harness_and_the_wire_format_are_public() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let public: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    assert_eq!(public, ["harness", "json"], "src/lib.rs's public modules");
    // Private modules are exported only through the harness, which
    // re-exports and defines nothing of its own.
    let harness = std::fs::read_to_string(src().join("harness.rs")).unwrap();
    let code: String = harness
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join(" ");
    for item in code.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        // A feature gate on a re-export is still only a re-export.
        let item = match item.strip_prefix("#[cfg(feature = ") {
            Some(rest) => rest.split_once(")]").map_or(item, |(_, i)| i.trim()),
            None => item,
        };
        assert!(
            item.starts_with("pub use crate::"),
            "harness.rs defines something of its own: {item}"
        );
    }
}

#[test]
fn only_frontends_print() {
    let found = prints_outside_frontends(&sources());
    assert!(
        found.is_empty(),
        "writes to the terminal outside the frontends (report through crate::report instead):\n{}",
        found.join("\n")
    );
}

/// The session's build may not print (issue 36): a planted `eprintln!`
/// in app/build.rs, or in a file split from it, is found.
#[test]
fn the_print_check_sees_a_print_in_the_build() {
    let mut files = sources();
    assert!(files.iter().any(|(rel, _)| rel == "app/build.rs"));
    assert!(prints_outside_frontends(&files).is_empty());
    for (rel, code) in &mut files {
        if rel == "app/build.rs" || rel.starts_with("app/build/") || rel == "app/window.rs" {
            code.push_str("fn planted() {\n    eprintln!(\"tern: warning: x\");\n}\n");
        }
    }
    let found = prints_outside_frontends(&files);
    assert!(
        found.iter().any(|f| f.starts_with("src/app/build.rs:")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.starts_with("src/app/build/")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.starts_with("src/app/window.rs:")),
        "{found:?}"
    );
}

/// Lines that write to stdout or stderr in files that are not printers.
fn prints_outside_frontends(files: &[(String, String)]) -> Vec<String> {
    let needles = [
        "println!",
        "print!",
        "eprintln!",
        "eprint!",
        "dbg!",
        "io::stdout(",
        "io::stderr(",
        "libc::STDOUT_FILENO",
        "libc::STDERR_FILENO",
    ];
    let mut found = Vec::new();
    for (rel, code) in files {
        if PRINTERS.iter().any(|(p, _)| rel.starts_with(p)) {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            for needle in needles {
                let hit = line.match_indices(needle).any(|(i, _)| {
                    // `print!` inside `eprint!` or `println!` is counted once.
                    let before = line[..i].chars().last();
                    !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                });
                if hit {
                    found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    found.dedup();
    found
}

/// The printing scan must see a print where there is one.
#[test]
fn the_print_reader_sees_a_print() {
    let (code, _) = production_part("fn f() {\n    eprintln!(\"x\");\n}\n");
    assert!(code.contains("eprintln!"));
    // A test-only `use` ends at its semicolon; what follows is still read
    // (it once swallowed the rest of the file, test-module list included).
    let (code, tests) = production_part(
        "#[cfg(test)]\nuse a::b;\nfn f() {\n    eprintln!(\"x\");\n}\n#[cfg(test)]\nmod tests;\n",
    );
    assert!(code.contains("eprintln!"), "{code}");
    assert_eq!(tests, ["tests"]);
    // An inline test module before a `mod tests;` hides neither it nor
    // the production code after it.
    let (code, tests) = production_part(
        "#[cfg(test)]\nmod inline {\n    fn t() { println!(); }\n}\nfn g() {\n    eprint!(\"y\");\n}\n#[cfg(test)]\nmod tests;\n",
    );
    assert!(
        code.contains("eprint!") && !code.contains("println!"),
        "{code}"
    );
    assert_eq!(tests, ["tests"]);
}

/// Where reading tern's own environment is allowed, and why.
const ENVIRONMENT_READERS: &[(&str, &str)] = &[
    (
        "config/env.rs",
        "the configuration's snapshot, and what children inherit",
    ),
    (
        "frontend/",
        "whether to colour output (NO_COLOR, TERM) is the printers' own question",
    ),
    (
        "policy/command_env.rs",
        "CommandEnv::inherited: the stand-in for callers with no session (a Policy without \
         the session's environment, bash::analyse for tests and benchmarks); sessions set theirs",
    ),
];

#[test]
fn the_environment_is_read_only_by_the_configuration() {
    let needles = [
        "env::var(",
        "env::var_os(",
        "env::vars(",
        "env::vars_os(",
        "env::temp_dir(",
        "env::home_dir(",
    ];
    let mut found = Vec::new();
    let mut readers_seen = 0;
    for (rel, code) in sources() {
        let allowed = ENVIRONMENT_READERS.iter().any(|(p, _)| rel.starts_with(p));
        for (n, line) in code.lines().enumerate() {
            if needles.iter().any(|needle| line.contains(needle)) {
                if allowed {
                    readers_seen += 1;
                } else {
                    found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    // The scan must see the reads that are allowed, or it sees nothing.
    assert!(readers_seen >= 3, "only {readers_seen} allowed reads seen");
    assert!(
        found.is_empty(),
        "the environment read outside the configuration (add a field to config::Runtime and \
         pass the value down):\n{}",
        found.join("\n")
    );
}

/// The environment scan must see a read where there is one, and not in
/// test code.
#[test]
fn the_environment_reader_sees_a_read() {
    let (code, _) = production_part(
        "fn f() -> Option<String> {\n    std::env::var(\"HOME\").ok()\n}\n\
         #[cfg(test)]\nmod tests {\n    fn g() { std::env::temp_dir(); }\n}\n",
    );
    assert!(code.contains("env::var("));
    assert!(!code.contains("temp_dir"), "{code}");
}

/// Every download goes through the package clients as the machine has
/// them configured, by package name: no tracked file names a registry's
/// host. (Cargo.lock is cargo's own record of where crates came from.)
#[test]
fn no_file_names_a_package_registry_host() {
    // Spelt in pieces, so this file does not name them either.
    let hosts: Vec<String> = [
        ["pypi", ".org"],
        ["pythonhosted", ".org"],
        ["npmjs", ".org"],
        ["npmjs", ".com"],
        ["crates", ".io"],
        ["yarnpkg", ".com"],
        ["deb.debian", ".org"],
        ["archive.ubuntu", ".com"],
        ["nodejs", ".org"],
    ]
    .iter()
    .map(|p| p.concat())
    .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![root.to_path_buf()];
    let mut found = Vec::new();
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if name == "target" || name == ".git" || name == "Cargo.lock" {
                continue;
            }
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() {
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                seen += 1;
                let lower = text.to_lowercase();
                for h in &hosts {
                    if lower.contains(h.as_str()) {
                        found.push(format!("{}: {h}", p.display()));
                    }
                }
            }
        }
    }
    assert!(seen > 100, "only {seen} files read");
    assert!(found.is_empty(), "registry hosts named: {found:#?}");
}

/// The longest function of a source's production text: (lines, name).
/// A function runs from its `fn` line to the `}` on its own indent; a
/// declaration without a body (a trait's) is not one.
fn longest_function(code: &str) -> (usize, String) {
    let lines: Vec<&str> = code.lines().collect();
    let mut longest = (0, String::new());
    for (i, line) in lines.iter().enumerate() {
        let item = line.trim_start();
        let indent = &line[..line.len() - item.len()];
        let mut item = item;
        for prefix in ["pub(crate) ", "pub(super) ", "pub ", "async "] {
            item = item.strip_prefix(prefix).unwrap_or(item);
        }
        let Some(rest) = item.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let signature_end = lines[i..]
            .iter()
            .position(|l| l.contains('{') || l.trim_end().ends_with(';'));
        if signature_end.is_none_or(|e| !lines[i + e].contains('{')) {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(len) = lines[i + 1..].iter().position(|l| l.trim_end() == close) {
            longest = longest.max((len + 2, name));
        }
    }
    longest
}

/// The tool call's path reads as named stages (issue 36): no function in
/// the pipeline or its approval half is longer than a screen.
#[test]
fn the_pipeline_is_stages_a_reader_can_hold() {
    const MOST: usize = 50;
    let files = sources();
    let mut seen = 0;
    for (rel, code) in &files {
        if rel == "agent/pipeline.rs" || rel.starts_with("agent/pipeline/") {
            seen += 1;
            let (lines, name) = longest_function(code);
            assert!(
                lines <= MOST,
                "src/{rel}: fn {name} is {lines} lines; split it into stages of at most {MOST}"
            );
        }
    }
    assert_eq!(seen, 2, "the pipeline and its approval half");
}

#[test]
fn the_function_measure_sees_a_long_function() {
    let code = "trait T {\n    fn declared(\n        &self,\n    ) -> u8;\n}\n\
                impl S {\n    pub(super) async fn short(&self) {\n        a();\n    }\n\n    \
                fn long(\n        &self,\n    ) -> u8 {\n        if x {\n            1\n        \
                } else {\n            2\n        }\n    }\n}\n";
    assert_eq!(longest_function(code), (9, "long".to_string()));
}

/// The approval half answers a question and changes the session's
/// permissions; it neither checks an input, decides, nor runs the tool:
/// those stay with the pipeline, so a changed input goes through one
/// place. It is a module of its own, not a page of the pipeline's.
#[test]
fn the_approval_half_does_not_run_the_tool() {
    let files = sources();
    let (_, code) = files
        .iter()
        .find(|(rel, _)| rel == "agent/pipeline/approval.rs")
        .expect("src/agent/pipeline/approval.rs");
    for reach in [
        ".call(",
        "check_input",
        ".validate(",
        ".decide(",
        "use super::*",
    ] {
        assert!(
            !code.contains(reach),
            "src/agent/pipeline/approval.rs has `{reach}`: the pipeline checks, decides and runs"
        );
    }
}

/// Where an agent or its pipeline is put together outside
/// `agent/assemble.rs`, as (file, line). (A policy cannot be patched
/// after it is built: its sandbox, protected paths and environment are
/// private to `policy` and come whole from a `PolicySpec`.)
fn second_assemblies(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, code) in files {
        for (n, line) in code.lines().enumerate() {
            let makes = |what: &str| line.contains(what) && !line.contains(&format!("fn {what}"));
            let outside = rel != "agent/assemble.rs";
            if outside && (makes("Pipeline::new(") || makes("Agent::new(")) {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// One assembler (issue 36): the session and every sub-agent are put
/// together by `agent::assemble`.
#[test]
fn an_agent_is_assembled_in_one_place() {
    let files = sources();
    assert!(files.iter().any(|(rel, _)| rel == "agent/assemble.rs"));
    let found = second_assemblies(&files);
    assert!(
        found.is_empty(),
        "an agent or pipeline assembled outside src/agent/assemble.rs (use agent::assemble):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_assembly_check_sees_a_second_assembly() {
    let mut files = sources();
    for (rel, code) in &mut files {
        if rel == "agent/subagent.rs" {
            code.push_str("fn planted() {\n    let p = Pipeline::new(r, p, c, a, h);\n}\n");
        }
        if rel == "app/build.rs" {
            code.push_str("fn planted() {\n    Agent::new(ex, c, s, p, a, Vec::new())\n}\n");
        }
    }
    let found = second_assemblies(&files);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("src/agent/subagent.rs:")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.starts_with("src/app/build.rs:")),
        "{found:?}"
    );
}

/// Where a production file pulls in all of its parent with `use super::*;`,
/// as (file, line): a continuation page, split from its parent for length
/// rather than along a seam. Files under a test module (`policy/tests/…`,
/// which `sources` keeps because only their parent is named `mod tests;`)
/// are test code and left out.
fn continuation_pages(files: &[(String, String)]) -> Vec<String> {
    // The file that declares `rel`'s module: a/b.rs or a/b/mod.rs for a/b/c.rs.
    let parent = |rel: &str| -> Option<String> {
        let path = Path::new(rel);
        let dir = if path.file_name().is_some_and(|n| n == "mod.rs") {
            path.parent()?.parent()?
        } else {
            path.parent()?
        };
        let name = dir.to_str().filter(|d| !d.is_empty())?;
        [format!("{name}.rs"), format!("{name}/mod.rs")]
            .into_iter()
            .find(|p| src().join(p).exists())
    };
    let kept = |rel: &str| files.iter().any(|(r, _)| r == rel);
    let under_tests = |rel: &str| {
        let mut at = rel.to_string();
        while let Some(up) = parent(&at) {
            if !kept(&up) {
                return true;
            }
            at = up;
        }
        false
    };
    let mut found = Vec::new();
    for (rel, code) in files {
        for (n, line) in code.lines().enumerate() {
            if line.contains("use super::*;") && !under_tests(rel) {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// Files are sized by concept (issue 36): a module is split along a seam
/// and imports what it uses by name; a long file that is one thing stays
/// one file.
#[test]
fn no_continuation_pages() {
    let found = continuation_pages(&sources());
    assert!(
        found.is_empty(),
        "`use super::*;` outside test code: merge the file into its parent, or make it a \
         module with its own interface and explicit imports:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_continuation_check_sees_a_planted_glob_import() {
    let mut files = sources();
    for (rel, code) in &mut files {
        if rel == "sandbox/notify/net.rs" {
            code.push_str("use super::*;\n");
        }
    }
    let found = continuation_pages(&files);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("src/sandbox/notify/net.rs:")),
        "{found:?}"
    );
    // The pages of `policy/tests.rs` are test code, though `sources` keeps them.
    assert!(
        files
            .iter()
            .any(|(rel, _)| rel == "policy/tests/web_fetch.rs")
    );
    assert!(
        !found.iter().any(|f| f.starts_with("src/policy/tests/")),
        "{found:?}"
    );
}

/// `thread_local!`s without a comment right above them (attributes
/// between are fine), as (file, line), in raw source text: state a
/// reader cannot see must say why it exists.
fn unexplained_thread_locals(raw: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in raw {
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            if !line.contains("thread_local!") {
                continue;
            }
            let above = lines[..n]
                .iter()
                .rev()
                .map(|l| l.trim())
                .find(|l| !l.starts_with("#["));
            if !above.is_some_and(|l| l.starts_with("//")) {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// The thread-local caches that remain say why they must exist (issue 36).
#[test]
fn every_thread_local_says_why_it_exists() {
    let raw: Vec<(String, String)> = sources()
        .into_iter()
        .map(|(rel, _)| {
            let text = std::fs::read_to_string(src().join(&rel)).unwrap();
            (rel, text)
        })
        .collect();
    assert!(raw.iter().any(|(_, t)| t.contains("thread_local!")));
    let found = unexplained_thread_locals(&raw);
    assert!(
        found.is_empty(),
        "a thread_local! with no comment above it saying why it must be one:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_thread_local_check_sees_one_unexplained() {
    let planted = |text: &str| vec![("x.rs".to_string(), text.to_string())];
    let bare = "fn f() {}\n\nthread_local! {\n    static A: u8 = 0;\n}\n";
    assert_eq!(unexplained_thread_locals(&planted(bare)).len(), 1);
    let far = "// Why, but above something else.\nfn f() {}\nthread_local! {\n}\n";
    assert_eq!(unexplained_thread_locals(&planted(far)).len(), 1);
    let explained =
        "// Thread-local because one parser per thread.\n#[allow(x)]\nthread_local! {\n}\n";
    assert!(unexplained_thread_locals(&planted(explained)).is_empty());
}

/// Where an approver (or anything else in the frontends) tells questions
/// apart by a tool's name, as (file, line): they go by `tools::Topic`, so
/// a tool of the same kind under another name (an MCP tool, a renamed
/// one) is asked about the same way.
fn approvals_by_tool_name(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, code) in files {
        if !rel.starts_with("frontend/") {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            let by_name = ["\"AskUserQuestion\"", "\"ExitPlanMode\""]
                .iter()
                .any(|t| line.contains(t))
                || line.contains("matches!(tool, \"Edit\"");
            if by_name {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// Approvers match on a typed question topic (issue 36 item 3).
#[test]
fn approvers_go_by_the_question_s_topic_not_the_tool_s_name() {
    let found = approvals_by_tool_name(&sources());
    assert!(
        found.is_empty(),
        "frontend code branching on a tool's name (use the question's Topic):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_topic_check_sees_a_name_match() {
    let mut files = sources();
    for (rel, code) in &mut files {
        if rel == "frontend/line.rs" {
            code.push_str("fn planted(tool: &str) -> bool {\n    tool == \"ExitPlanMode\"\n}\n");
        }
    }
    let found = approvals_by_tool_name(&files);
    assert!(
        found.iter().any(|f| f.starts_with("src/frontend/line.rs:")),
        "{found:?}"
    );
}

/// Where a tool reads a field of its input by hand, as (file, line): each
/// tool reads its input in one function, through `tools::input::Fields`,
/// so a field's name, type and default are written once and a wrong type
/// is an error naming the field rather than a silent default.
fn hand_read_inputs(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, code) in files {
        if !rel.starts_with("tools/") || rel == "tools/input.rs" {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            let by_hand = ["input.str_field(", "input.get(", "input.as_object("]
                .iter()
                .any(|t| line.contains(t));
            if by_hand {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn tools_read_their_input_through_one_typed_reader() {
    let found = hand_read_inputs(&sources());
    assert!(
        found.is_empty(),
        "a tool input read field by field: read it into the tool's own struct with \
         tools::input::Fields:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_input_check_sees_a_hand_read_field() {
    let mut files = sources();
    let before = hand_read_inputs(&files).len();
    for (rel, code) in &mut files {
        if rel == "tools/edit.rs" {
            code.push_str(
                "\nfn f(input: &Value) -> &str { input.str_field(\"x\").unwrap_or(\"\") }\n",
            );
        }
    }
    assert_eq!(hand_read_inputs(&files).len(), before + 1);
}
