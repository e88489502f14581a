//! The table's promises, checked against the programs themselves: what
//! it refuses does write (run for real in a scratch directory), and what
//! it allows parses.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::policy::bash::analyse;

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-programs-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("in.txt"), "b\na\nb\n").unwrap();
    std::fs::canonicalize(d).unwrap()
}

fn verdict(cmd: &str, dir: &Path) -> Result<(), String> {
    let a = analyse(cmd, dir);
    match a.why_not() {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// A refusal says what the option really does: `grep -R` and `rg -L`
/// follow links (they were once said to write files or run programs).
#[test]
fn link_following_options_ask_for_that_reason() {
    let d = scratch();
    for (cmd, opt) in [
        ("grep -R pattern .", "grep -R"),
        (
            "grep --dereference-recursive pattern .",
            "grep --dereference-recursive",
        ),
        ("rg -L pattern", "rg -L"),
        ("rg --follow pattern src", "rg --follow"),
        ("du -L .", "du -L"),
    ] {
        let e = verdict(cmd, &d).expect_err(cmd);
        assert!(
            e.contains(&format!(
                "{opt} follows symbolic links, which may lead out of the project"
            )),
            "{cmd:?}: {e}"
        );
        assert!(!e.contains("can write"), "{cmd:?}: {e}");
    }
    // What does write or run keeps its reason.
    let e = verdict("rg --pre ./x a", &d).expect_err("rg --pre");
    assert!(
        e.contains("rg --pre can write files or run programs"),
        "{e}"
    );
}

/// Options and operand forms the table refuses because they write: each
/// really creates `out` when run.
#[test]
fn refused_forms_really_write() {
    let have = |p: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {p}"))
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let cases = [
        ("sort -o out in.txt", "sort"),
        ("sort --output=out in.txt", "sort"),
        ("sort --outp=out in.txt", "sort"),
        ("uniq in.txt out", "uniq"),
        ("xxd in.txt out", "xxd"),
        ("tree -o out", "tree"),
        ("sed -n 'w out' in.txt", "sed"),
        ("sed 's/a/b/w out' in.txt", "sed"),
        ("awk '{ print > \"out\" }' in.txt", "awk"),
        ("find . -name in.txt -fprint out", "find"),
        ("git init -q . && git log --output=out", "git"),
    ];
    for (cmd, prog) in cases {
        if !have(prog) {
            continue;
        }
        let d = scratch();
        let _ = Command::new("bash")
            .arg("-c")
            .arg(cmd)
            .current_dir(&d)
            .output();
        assert!(
            d.join("out").exists(),
            "{cmd:?} did not write (the case proves nothing)"
        );
        let check = cmd.rsplit("&& ").next().unwrap_or(cmd);
        assert!(verdict(check, &d).is_err(), "{check:?} was read-only");
    }
}

#[test]
fn readers_pass_with_their_options() {
    let d = scratch();
    for cmd in [
        "ls -la --color=never in.txt",
        "ls -1rt",
        "cat -n in.txt",
        "head -n5 in.txt",
        "head -5 in.txt",
        "tail -n +2 in.txt",
        "grep -rn --include=*.txt -e a .",
        "grep -C2 a in.txt",
        "grep -3 a in.txt",
        "sort -t, -k2,2n in.txt",
        "sort --rev in.txt",
        "uniq -c in.txt",
        "wc -lw in.txt",
        "cut -d: -f1 in.txt",
        "tr -d a",
        "stat -c %s in.txt",
        "du -sh .",
        "diff -u in.txt in.txt",
        "diff -r --no-dereference . .",
        "diff -r . .",
        "ls -LR",
        "ls -R",
        "ls -L in.txt",
        "strings in.txt",
        "cmp in.txt in.txt",
        "basename -s .txt /x/in.txt",
        "date +%s",
        "date -d yesterday +%F",
        "seq 1 3",
        "sed -n '1,2p;$p' in.txt",
        "sed -E 's/(a)/\\1/g' in.txt",
        "sed '/^b/d' in.txt",
        "awk -F, 'NR > 1 { print $1 }' in.txt",
        "awk '{ n += $1 } END { print n }' in.txt",
        "jq -r .x in.txt",
        "jq --arg k v '.[$k]' in.txt",
        "rg -n --hidden a",
        "find . -type f -name '*.txt' -exec grep -l a {} +",
        "xargs -0 echo",
    ] {
        verdict(cmd, &d).unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    }
}

#[test]
fn refused_with_a_reason() {
    let d = scratch();
    for (cmd, why) in [
        ("sort -o x in.txt", "can write"),
        ("sort --compress-program=sh in.txt", "can write"),
        ("sort -T /tmp in.txt", "can write"),
        ("sort --files0-from=list", "names of the files to open"),
        ("sort --s in.txt", "ambiguous"),
        ("tail -f in.txt", "keeps running"),
        ("wc --files0-from=list", "names of the files to open"),
        ("grep -R a .", "follows symbolic links"),
        ("rg --pre ./x a", "can write"),
        ("rg -z a", "can write"),
        ("rg -L a", "follows symbolic links"),
        ("du -L .", "follows symbolic links"),
        ("tree -R -L 1 -H .", "can write"),
        ("file -z in.txt", "can write"),
        ("file --uncompress-noreport in.txt", "can write"),
        ("strings @in.txt", "more arguments"),
        ("strings -- @in.txt", "more arguments"),
        ("strings -e @in.txt in.txt", "more arguments"),
        ("tree -l", "follows symbolic links"),
        ("file -C -m magic", "can write"),
        ("diff -l a b", "can write"),
        ("sha256sum -c sums", "names of the files to open"),
        ("uniq in.txt out", "more than 1"),
        ("cat --frobnicate in.txt", "harmless"),
        ("hostname newname", "changes something"),
        ("date 010100002020", "sets the clock"),
        ("date -s tomorrow", "changes the system"),
        ("sed -i s/a/b/ in.txt", "in place"),
        ("sed 'e id' in.txt", "runs a command"),
        ("sed 's/a/b/e' in.txt", "runs"),
        ("sed 'r /etc/passwd' in.txt", "reads a file"),
        ("sed -f s.sed in.txt", "from a file"),
        ("sed 's/[/]/x/w out' in.txt", "delimiter"),
        ("awk 'BEGIN { system(\"id\") }'", "system"),
        ("awk '{ print | \"sh\" }' in.txt", "pipe"),
        ("awk 'BEGIN { getline x < \"/etc/passwd\" }'", "getline"),
        ("awk 'BEGIN { ARGV[1] = \"/etc/passwd\" } 1' in.txt", "ARGV"),
        ("awk -f prog.awk in.txt", "from a file"),
        ("jq -n 'import \"x\" as x; 1'", "import"),
        ("jq -f prog.jq in.txt", "from a file"),
        ("find . -delete", "deletes"),
        ("find -L . -name x", "links"),
        ("find . -name x -exec cat {} +", "-type f"),
        ("find . -type f -exec rm {} +", "rm is not"),
        ("xargs rm", "rm is not"),
        ("xargs cat", "computed at run time"),
        ("printf -v x %s y", "printf -v"),
        ("printf \"$(cat f)\"", "format"),
        ("test -v x", "subscript"),
        ("[ -v x ]", "subscript"),
        ("set -f", "set -f"),
        ("set -o posix", "set -o posix"),
        ("read -a x", "read -a"),
        ("exec -a ls rm x", "exec -a"),
        ("env -S 'rm x'", "env -S"),
        ("env -C / ls", "env -C"),
        ("env LD_PRELOAD=x ls", "LD_PRELOAD"),
        ("LESSOPEN='|id' cat in.txt", "LESSOPEN"),
        ("command -p rm x", "rm is not"),
        ("timeout 5 rm x", "rm is not"),
        ("nice -n 1 rm x", "rm is not"),
        ("ps e", "environments"),
        ("hash -p /tmp/x ls", "hash -p"),
    ] {
        match verdict(cmd, &d) {
            Ok(()) => panic!("{cmd:?} passed as read-only"),
            Err(e) => assert!(e.contains(why), "{cmd:?}: {e} (wanted {why:?})"),
        }
    }
}
