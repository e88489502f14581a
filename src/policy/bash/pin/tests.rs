//! Pinned lines against real bash: run in the directory they were decided
//! in, a line and its pinned form give bash the same argv; after files
//! are planted, the pinned form still gives the decided argv while the
//! line as written picks the new files up. Commands print their argv with
//! `printf '<%s>'`, so what bash passed is what it prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::policy::bash::analyse;

fn lab() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-pin-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    for f in [
        "a.txt",
        "b.txt",
        "c.rs",
        ".hidden",
        "dir1/x.rs",
        "dir1/y.txt",
        "dir2/z.rs",
        "sp ace.txt",
        "it's.txt",
        "q\"uote.txt",
        "d$ollar.txt",
        "back\\slash.txt",
        "new\nline.txt",
        "star*.txt",
        "-rf",
    ] {
        let p = d.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x\n").unwrap();
    }
    std::fs::canonicalize(d).unwrap()
}

fn bash(dir: &Path, cmd: &str) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pinned(dir: &Path, cmd: &str) -> Result<Option<String>, String> {
    analyse(cmd, dir).pinned(cmd)
}

const LINES: &[&str] = &[
    "printf '<%s>' *.txt",
    "printf '<%s>' *",
    "printf '<%s>' .*",
    "printf '<%s>' dir*/*.rs x{a,b}* {a,c}.*",
    "printf '<%s>' [ab].txt [!a]*.txt ?.rs",
    "printf '<%s>' nomatch* 'q*' \"*\" \\*",
    "printf '<%s>' */",
    "printf '<%s>' \"$HOME\"/nomatch*",
    "x='*.rs'; printf '<%s>' $x \"$x\"",
    "x='a b *.rs'; printf '<%s>' pre$x",
    "for f in *.txt; do printf '<%s>' \"$f\"; done",
    "cd dir1 && printf '<%s>' * ../*.rs",
    "printf '<%s>' *.rs; printf '<%s>' *.rs",
    "printf '<%s>' *.rs | cat; printf '<%s>' a*",
    "if [ -n x ]; then printf '<%s>' *.rs; fi",
    "printf '<%s>\\n' *.txt | sort",
    "cat <c.r? && printf '<%s>' c.r?",
    "echo *.rs>/dev/null; printf '<%s>' ~/nomatch* ~+/c.*",
];

/// The pinned form gives bash the argv the line gives it now, and keeps
/// giving it once new files exist.
#[test]
fn pinned_lines_run_the_decided_argv() {
    let dir = lab();
    let mut failures = Vec::new();
    let mut pinned_lines = Vec::new();
    for line in LINES {
        match pinned(&dir, line) {
            Ok(Some(p)) => {
                let (want, got) = (bash(&dir, line), bash(&dir, &p));
                if want != got {
                    failures.push(format!("{line:?} -> {p:?}: {want:?} vs {got:?}"));
                }
                pinned_lines.push((*line, p, want));
            }
            other => failures.push(format!("{line:?} was not pinned: {other:?}")),
        }
    }
    // The plant: names that would now match, one of them an option.
    for f in ["--pre=sh", "aa.txt", "zz.rs", "dir1/w.rs", "dir3/v.rs"] {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "y\n").unwrap();
    }
    let mut changed = 0;
    for (line, p, decided) in &pinned_lines {
        let now = bash(&dir, p);
        if &now != decided {
            failures.push(format!(
                "{line:?} pinned as {p:?} ran {now:?}, decided {decided:?}"
            ));
        }
        changed += usize::from(&bash(&dir, line) != decided);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Most lines as written do pick the plant up (or the test plants nothing).
    assert!(
        changed * 2 > pinned_lines.len(),
        "{changed} of {}",
        pinned_lines.len()
    );
}

/// The pinned text plans to the same commands as the line.
#[test]
fn pinned_lines_plan_alike() {
    let dir = lab();
    for line in LINES {
        let Ok(Some(p)) = pinned(&dir, line) else {
            continue;
        };
        let argvs = |cmd: &str| -> Vec<Vec<String>> {
            let a = analyse(cmd, &dir);
            let plan = a.planned.unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
            plan.commands
                .iter()
                .map(|c| c.step.argv.iter().map(|a| a.show()).collect())
                .collect()
        };
        assert_eq!(argvs(line), argvs(&p), "{line:?} -> {p:?}");
        assert!(
            pinned(&dir, &p).is_ok_and(|again| again.is_none()),
            "{p:?} globs"
        );
    }
}

/// Where a glob cannot be replaced with certainty, pinning says so; where
/// nothing globs, the line runs as written.
#[test]
fn what_cannot_be_pinned() {
    let dir = lab();
    for line in [
        // Each pass of the loop matches other names.
        "for d in dir1 dir2; do printf '<%s>' $d/*; done",
        // Inside a substitution.
        "printf '<%s>' $(printf '%s ' *.rs)",
        "cat <(ls *.rs)",
        "printf '<%s>' \"$(echo *.rs)\"",
    ] {
        assert!(pinned(&dir, line).is_err(), "{line:?}");
    }
    for line in [
        "printf '<%s>' a.txt 'b*'",
        "x=*; printf '<%s>' \"$x\"",
        "[[ a.txt == *.txt ]] && echo y",
        "case a in *) echo y;; esac",
        "cat <<EOF\n*\nEOF",
        "cat <<< *",
    ] {
        assert_eq!(pinned(&dir, line), Ok(None), "{line:?}");
    }
}

/// Random lines of glob words, quotes and separators: wherever they pin,
/// bash gives the pinned form the same argv.
#[test]
fn random_lines_pin_exactly() {
    let dir = lab();
    const WORDS: &[&str] = &[
        "*", "*.txt", "?.rs", "[ab]*", "dir?/*", "'*'", "\"a\"*", "x{a,b}*", ".*", "*/", "$x",
        "\"$x\"", "a.txt", "no*match", "~/no*", "d*/x.*", "\\*", "'sp '*",
    ];
    let mut rng = fastrand::Rng::with_seed(5);
    let mut failures = Vec::new();
    let mut pinned_count = 0;
    for _ in 0..120 {
        let mut line = String::from("x='*.rs c*'; printf '<%s>'");
        for _ in 0..rng.usize(1..5) {
            line.push(' ');
            line.push_str(WORDS[rng.usize(..WORDS.len())]);
        }
        if rng.bool() {
            line.push_str("; printf '<%s>' ");
            line.push_str(WORDS[rng.usize(..WORDS.len())]);
        }
        if let Ok(Some(p)) = pinned(&dir, &line) {
            pinned_count += 1;
            if bash(&dir, &line) != bash(&dir, &p) {
                failures.push(format!("{line:?} -> {p:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(pinned_count > 60, "only {pinned_count} lines pinned");
}
