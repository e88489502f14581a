//! Parse + plan + check of arbitrary command lines never panics, a line
//! that is not read-only always says why, and the whole permission
//! decision (rules, paths, repository checks) never panics either.
//! Run: `fuzz/seed.sh && cargo +nightly fuzz run bash_plan` (from the
//! repository root; docs/bash.md says more).
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use tern::harness::Behavior;
use tern::harness::{Mode, Policy, Rule};
use tern::harness::Registry;

/// A small project to decide in: files for globs to match, a link out of
/// it and one inside, a dotfile a deny rule names.
fn project() -> PathBuf {
    let dir = std::env::temp_dir().join("tern-fuzz-bash-plan");
    for (p, text) in [
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "\n"),
        ("docs/guide.md", "# Guide\n"),
        ("README.md", "# Demo\n"),
        (".env", "K=v\n"),
    ] {
        let f = dir.join(p);
        if let Some(parent) = f.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(f, text);
    }
    // Already there when another run made them.
    let _ = std::os::unix::fs::symlink("/etc", dir.join("etc"));
    let _ = std::os::unix::fs::symlink("src", dir.join("s"));
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

struct World {
    dir: PathBuf,
    policy: Policy,
    registry: Registry,
}

thread_local! {
    static WORLD: World = {
        let dir = project();
        let rules = vec![
            Rule::parse("Bash(rm:*)", Behavior::Deny, None),
            Rule::parse("Bash(git push:*)", Behavior::Ask, None),
            Rule::parse("Bash(cargo test:*)", Behavior::Allow, None),
            Rule::parse("Read(./.env)", Behavior::Deny, None),
        ];
        World {
            policy: Policy::new(Mode::Default, rules, &dir, &[]),
            registry: Registry::builtin(),
            dir,
        }
    };
}

fn check(text: &str, dir: &Path, policy: &Policy, registry: &Registry) {
    let a = tern::harness::analyse_bash(text, dir);
    assert_eq!(a.read_only(), a.why_not().is_none());
    let _ = a.first_command();
    let _ = tern::harness::bash_line_commands(text);
    if let Some(bash) = registry.get("Bash") {
        let input = tern::obj! { "command" => text };
        let _ = policy.decide(&tern::harness::facts(&*bash, "toolu_1", &input));
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    WORLD.with(|w| check(text, &w.dir, &w.policy, &w.registry));
});
