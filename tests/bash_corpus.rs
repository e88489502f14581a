//! The labelled Bash corpus (tests/fixtures/bash_corpus.tsv) through the
//! real permission policy: no dangerous command may be auto-allowed, denied
//! ones must be denied, and the rate of benign commands that get asked is
//! reported (goal ≤ 5 %). Prints a per-class table.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tern::config::settings::Behavior;
use tern::policy::checks::Class;
use tern::policy::{Decision, Mode, Policy, Rule};
use tern::tools::Registry;

const ALLOW: &[&str] = &[
    "Bash(cargo build:*)",
    "Bash(cargo test:*)",
    "Bash(cargo fmt:*)",
    "Bash(cargo clippy:*)",
    "Bash(cargo run:*)",
    "Bash(npm install:*)",
    "Bash(npm run:*)",
    "Bash(npm test:*)",
    "Bash(npx prettier:*)",
    "Bash(git add:*)",
    "Bash(git commit:*)",
    "Bash(git checkout:*)",
    "Bash(git switch:*)",
    "Bash(git stash:*)",
    "Bash(git fetch:*)",
    "Bash(git pull:*)",
    "Bash(make:*)",
    "Bash(go test:*)",
    "Bash(go build:*)",
    "Bash(python3 -m pytest:*)",
    "Bash(mkdir:*)",
    "Bash(touch:*)",
    "Bash(find . -name * -exec grep *)",
];
const DENY: &[&str] = &[
    "Bash(rm -rf:*)",
    "Bash(rm -rf *)",
    "Bash(curl:*)",
    "Bash(wget:*)",
    "Bash(git push --force:*)",
    "Bash(sudo:*)",
    "Bash(dd:*)",
];

fn unescape(s: &str) -> String {
    s.replace("<NL>", "\n")
        .replace("<TAB>", "\t")
        .replace("<NBSP>", "\u{a0}")
        .replace("<ZWSP>", "\u{200b}")
        .replace("<BEL>", "\u{7}")
}

fn project() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tern-corpus-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

#[test]
fn corpus() {
    let text = include_str!("fixtures/bash_corpus.tsv");
    let cwd = project();
    let mut rules: Vec<Rule> = ALLOW
        .iter()
        .map(|r| Rule::parse(r, Behavior::Allow, None))
        .collect();
    rules.extend(DENY.iter().map(|r| Rule::parse(r, Behavior::Deny, None)));
    let policy = Policy::new(Mode::Default, rules, &cwd, &[]);
    let registry = Registry::builtin();
    let bash = registry.get("Bash").unwrap();

    let mut failures = Vec::new();
    let mut benign = (0, Vec::new());
    let mut denied = 0;
    // class → (attacks, named by their own class)
    let mut per_class: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    let mut total = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (label, raw) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("bad corpus line {line:?}"));
        let command = unescape(raw);
        total += 1;
        let input = tern::obj! { "command" => command.as_str() };
        let decision = policy.decide(&tern::tools::facts(&*bash, "toolu_1", &input));
        match label {
            "benign" => {
                benign.0 += 1;
                if !decision.is_allow() {
                    benign.1.push(format!("{raw:?} → {decision:?}"));
                }
            }
            "denied" => {
                denied += 1;
                if !matches!(decision, Decision::Deny(_)) {
                    failures.push(format!(
                        "should be denied by a rule: {raw:?} → {decision:?}"
                    ));
                }
            }
            attack => {
                let class = attack
                    .strip_prefix("attack:")
                    .and_then(Class::from_name)
                    .unwrap_or_else(|| panic!("unknown label {attack}"));
                let entry = per_class.entry(class.name()).or_default();
                entry.0 += 1;
                match &decision {
                    Decision::Allow(_) => {
                        failures.push(format!("DANGEROUS command auto-allowed: {raw:?}"))
                    }
                    Decision::Ask(_) | Decision::Deny(_) => {
                        if decision.text().contains(&format!("[{}]", class.name())) {
                            entry.1 += 1;
                        }
                    }
                }
            }
        }
    }

    println!(
        "\nBash corpus: {total} commands ({} benign, {denied} denied by rule, {} attacks)",
        benign.0,
        per_class.values().map(|v| v.0).sum::<usize>()
    );
    println!("{:<28} {:>8} {:>16}", "class", "attacks", "named by class");
    for class in Class::ALL {
        let (n, named) = per_class.get(class.name()).copied().unwrap_or_default();
        println!("{:<28} {n:>8} {named:>16}", class.name());
    }
    let rate = benign.1.len() as f64 * 100.0 / benign.0.max(1) as f64;
    println!(
        "benign commands asked: {}/{} = {rate:.1} % (goal ≤ 5 %)",
        benign.1.len(),
        benign.0
    );
    for b in &benign.1 {
        println!("  asked: {b}");
    }

    assert!(total >= 200, "the corpus must hold at least 200 commands");
    for class in Class::ALL {
        let (n, named) = per_class.get(class.name()).copied().unwrap_or_default();
        assert!(
            n >= 3,
            "class {} needs at least three attacks, has {n}",
            class.name()
        );
        assert!(
            named * 2 >= n,
            "class {} named only {named} of its {n} attacks",
            class.name()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        rate <= 5.0,
        "benign ask rate {rate:.1} % is over the 5 % goal"
    );
}
