//! The sed reader against GNU sed (and busybox's, when installed): what
//! it refuses does its harm, and what it accepts — fixed scripts and a
//! few thousand assembled from fragments — writes and runs nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::script;

fn seds() -> Vec<Vec<&'static str>> {
    let have = |p: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {p}"))
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut out = Vec::new();
    if have("sed") {
        out.push(vec!["sed"]);
    }
    if have("busybox") {
        out.push(vec!["busybox", "sed"]);
    }
    out
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-sed-{tag}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(d).unwrap()
}

/// Runs `sed -n -e SCRIPT in.txt` in `dir`; true when it left anything
/// in `dir` but its input.
fn harms(sed: &[&str], s: &str, dir: &Path) -> bool {
    std::fs::write(dir.join("in.txt"), "a b\nc d\n").unwrap();
    let _ = Command::new(sed[0])
        .args(&sed[1..])
        .args(["-n", "-e", s, "in.txt"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "in.txt")
        .collect();
    for n in &left {
        let _ = std::fs::remove_file(dir.join(n));
    }
    !left.is_empty()
}

#[test]
fn refused_scripts_and_their_harm() {
    let cases: &[(&str, &str)] = &[
        // Regression (issue 33): a label ends at a blank, and GNU sed
        // reads what follows as the next command.
        ("b x w M", "more than sed ends it with"),
        (":x w M", "more than sed ends it with"),
        ("t x;w M", "writes"),
        ("1{b x};w M", "writes"),
        ("w M", "writes"),
        ("s/a/b/w M", "writes"),
        ("s/a/b/gw M", "writes"),
        ("s/a/b/ w M", "more than sed ends it with"),
        ("s/a/touch M/e", "runs"),
        ("1e touch M", "runs"),
        ("r M", "reads a file"),
        ("p w M", "more than sed ends it with"),
        ("y/a/b/w M", "more than sed ends it with"),
        ("s/[/]/x/", "bracket"),
        ("s/[\\]/x/", "bracket"),
        ("s§a§b§", "unusual delimiter"),
        ("1{p", "{ without }"),
        ("}", "} without {"),
        ("s/a/b", "closing delimiter"),
        ("/a\\\n/p", "newline inside"),
        ("1!!p", "not analysed"),
    ];
    let mut failures = Vec::new();
    for (s, why) in cases {
        match script(s) {
            Ok(()) => failures.push(format!("{s:?} passed")),
            Err(e) if !e.contains(why) => failures.push(format!("{s:?}: {e} (want {why})")),
            Err(_) => {}
        }
    }
    let dir = scratch("refused");
    for s in ["b x w M", ":x w M", "s/a/b/w M"] {
        for sed in seds().iter().filter(|s| s[0] == "sed") {
            if !harms(sed, s, &dir) {
                failures.push(format!("{s:?} did no harm in {sed:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ordinary_scripts_pass() {
    for s in [
        "1,20p",
        "/fn main/,/^}/p",
        "s/foo/bar/g",
        "$p",
        "s/^/> /",
        "s/[0-9]+/N/g",
        "/^$/d",
        "s/^version = \"\\(.*\\)\"/\\1/p",
        "/^\\[dependencies\\]/,/^\\[/p",
        "1,3p;5,6p",
        "2,$p",
        "s/,/ /g",
        "s/\\.rs$//",
        "s/[[:space:]]*$//",
        "s/^[ \\t]*//",
        ":a;N;$!ba;s/\\n/ /g",
        "/x/{p;q}",
        "0,/a/s//b/",
        "1~2p",
        "/a/,+2p",
        "$!N;P;D",
        "1!G;h;$!d",
        "/a/I p",
        "\\,a,p",
        "a\\\nadded",
        "1i header",
        "y/abc/xyz/",
        "s/a/b/2g",
        "/start/,/end/{/start/n;/end/!p}",
        "# comment\np",
        "l 40",
        "q5",
        "=",
    ] {
        if let Err(e) = script(s) {
            panic!("{s:?}: {e}");
        }
    }
}

#[test]
fn accepted_scripts_do_no_harm() {
    let seds = seds();
    if seds.is_empty() {
        assert!(std::env::var_os("CI").is_none(), "no sed installed");
        return;
    }
    const FRAGS: &[&str] = &[
        " ",
        "s/[ \\t]/x/",
        "/[\\]]/p",
        "s/[\\n]//",
        "s/[\\/]//",
        "\n",
        ";",
        "{",
        "}",
        "p",
        "d",
        "n",
        "N",
        "b",
        "bx",
        "b x",
        ":x",
        "t",
        "tx",
        "w M",
        "r M",
        "e touch M",
        "M",
        "s/a/b/",
        "s/a/b/w M",
        "s/a/b/e",
        "/a/",
        "1",
        "$",
        ",",
        "!",
        "#",
        "a\\",
        "a text",
        "y/a/b/",
        "s|a|b|",
        "s/[/]/x/",
        "\\",
        "g",
        "q",
        "x",
        "2~1",
        "+1",
        "i\\",
        "c x",
        "=",
        "l",
        "/[a]/",
        "F",
        "z",
    ];
    let dir = scratch("fuzz");
    let mut rng = fastrand::Rng::with_seed(33);
    let mut tried = 0;
    let mut failures = Vec::new();
    while tried < 400 {
        let n = rng.usize(1..10);
        let s: String = (0..n).map(|_| FRAGS[rng.usize(..FRAGS.len())]).collect();
        if script(&s).is_err() {
            continue;
        }
        tried += 1;
        for sed in &seds {
            if harms(sed, &s, &dir) {
                failures.push(format!("{sed:?} {s:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "accepted, and harmful:\n{}",
        failures.join("\n")
    );
}

#[test]
fn never_panics() {
    let mut rng = fastrand::Rng::with_seed(7);
    let alphabet = b"{}[]/\\#\n ;,$!:+~=abcdegimnpqrstwxyzIM019|";
    for _ in 0..20_000 {
        let n = rng.usize(0..30);
        let bytes: Vec<u8> = (0..n)
            .map(|_| alphabet[rng.usize(..alphabet.len())])
            .collect();
        let _ = script(&String::from_utf8_lossy(&bytes));
    }
    let _ = script("s\u{e9}a\u{e9}b\u{e9}");
    let _ = script("/[[:a");
}
