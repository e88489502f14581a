//! The awk reader against the awks on this machine (mawk, gawk, busybox
//! awk, whichever are installed): what it refuses does its harm in at
//! least one of them, and what it accepts — fixed programs and a few
//! thousand assembled from fragments — runs nothing and writes nothing
//! in any of them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::program;

/// The awks installed here, as argv prefixes.
fn awks() -> Vec<Vec<&'static str>> {
    let have = |p: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {p}"))
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut out = Vec::new();
    for a in ["mawk", "gawk", "original-awk"] {
        if have(a) {
            out.push(vec![a]);
        }
    }
    if have("busybox") {
        out.push(vec!["busybox", "awk"]);
    }
    out
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-awk-{tag}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(d).unwrap()
}

/// Runs `prog` with `awk` in `dir` on one line of input; true when it
/// left anything in `dir` but its input.
fn harms(awk: &[&str], prog: &str, dir: &Path) -> bool {
    std::fs::write(dir.join("in.txt"), "a b 8 4\n").unwrap();
    let mut c = Command::new(awk[0]);
    c.args(&awk[1..])
        .arg(prog)
        .arg("in.txt")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let Ok(mut child) = c.spawn() else {
        return false;
    };
    // A program may loop; a second is plenty for one line.
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(2) {
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
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

/// Each refused program names the reason, and does its harm (creates
/// `M`) in at least one awk here when the awk can parse it.
#[test]
fn refused_programs_and_their_harm() {
    let cases: &[(&str, &str)] = &[
        // Regression (issue 33): `/` after return starts a regex, so the
        // `#` in it is no comment and system() runs.
        (
            r#"function f() { return /#/ } BEGIN { f(); system("touch M") }"#,
            "system",
        ),
        (r#"BEGIN { x = 1 } /#/ { system("touch M") }"#, "system"),
        (r#"BEGIN { if (1) /#/; system("touch M") }"#, "system"),
        (r#"BEGIN { x = 1 in /#/; system("touch M") }"#, "system"),
        // A name joined to a number is still a name.
        (r#"BEGIN { x = 1system("touch M") }"#, "system"),
        (r#"BEGIN { print "x" > "M" }"#, "writes"),
        (r#"BEGIN { printf("x") > "M" }"#, "writes"),
        (r#"BEGIN { print "x" >> "M" }"#, "writes"),
        (r#"BEGIN { if (1) print 1 > "M" }"#, "writes"),
        // A newline after a comma (or `||`) continues the print.
        ("BEGIN { print 1,\n2 > \"M\" }", "writes"),
        ("BEGIN { print 1 ||\n0 > \"M\" }", "writes"),
        ("BEGIN { print 1 \\\n> \"M\" }", "writes"),
        (r#"BEGIN { print "touch M" | "sh" }"#, "pipe"),
        (r#"BEGIN { "touch M" | getline }"#, "pipe"),
        (
            r#"BEGIN { while ((getline l < "in.txt") > 0) print l }"#,
            "getline",
        ),
        (
            r#"BEGIN { ARGV[1] = "in.txt"; ARGC = 2 } { print }"#,
            "ARGV",
        ),
        (r#"BEGIN { f = "system"; @f("touch M") }"#, "@"),
        (r#"@load "filefuncs""#, "@"),
        (r#"BEGIN { PROCINFO["sorted_in"] = "x" }"#, "PROCINFO"),
        (r#"BEGIN { SYMTAB["x"] = 1 }"#, "SYMTAB"),
        (r#"BEGIN { frob(1) }"#, "does not define"),
        // awks disagree on these: ask.
        (r#"{ x = 8; y = x++ /2/ 1 }"#, "differently"),
        (r#"{ y = length /2/ 1 }"#, "differently"),
        (r#"{ print /[/]/ }"#, "differently"),
        (r#"{ print /[\]]/ }"#, "differently"),
        (r#"BEGIN { x = "a"#, "closing quote"),
        ("BEGIN { x = /a\n/ }", "across lines"),
        (r#"BEGIN { x = 'a' }"#, "not analysed"),
        (r#"BEGIN { awk::system("touch M") }"#, "namespace"),
        (
            r#"function f(x) { return x } BEGIN { y = f; f(1) }"#,
            "as a variable",
        ),
    ];
    let dir = scratch("refused");
    let awks = awks();
    let mut failures = Vec::new();
    for (prog, why) in cases {
        match program(prog) {
            Ok(()) => failures.push(format!("{prog:?} passed")),
            Err(e) if !e.contains(why) => failures.push(format!("{prog:?}: {e} (want {why})")),
            Err(_) => {}
        }
    }
    // Both ways: the techniques themselves work in real awks.
    for prog in [
        r#"function f() { return /#/ } BEGIN { f(); system("touch M") }"#,
        r#"BEGIN { x = 1system("touch M") }"#,
        "BEGIN { print 1,\n2 > \"M\" }",
        r#"BEGIN { if (1) print 1 > "M" }"#,
    ] {
        if !awks.is_empty() && !awks.iter().any(|a| harms(a, prog, &dir)) {
            failures.push(format!("{prog:?} did no harm in any of {awks:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ordinary_programs_pass() {
    for prog in [
        "{print $1}",
        "NR>=10 && NR<=20",
        "{sum += $1} END {print sum}",
        "/fn / {print NR\": \"$0}",
        "length > 80",
        "{ print length($0) }",
        "END {print NR}",
        "{count[$1]++} END {for (k in count) print k, count[k]}",
        "/^\\[dependencies\\]/,/^$/",
        "BEGIN {FS=\",\"} {print $2}",
        "{print NF}",
        "NR==5",
        "{ x = $3 / $4; print x }",
        "{ a[1] = 8; print a[1] / 2 }",
        "{ print (8) / 2 }",
        "function f(a) { return a * 2 } { print f($3) }",
        "function g() { return /b/ } { print g() }",
        "{ if ($1 ~ /a/) print \"yes\"; else print \"no\" }",
        "{ printf \"%s %d\\n\", $1, $3 }",
        "{ print ($3 > $4 ? \"bigger\" : \"smaller\") }",
        "{ n = split($0, p, / /); print n }",
        "{ gsub(/a/, \"b\"); print }",
        "{ gsub(/^[ \\t]+|[ \\t]+$/, \"\"); print }",
        "BEGIN { x = 1e3; y = .5; z = 2.; print x / y / z }",
        "# a comment with system() and getline in it\n{ print }",
        "{ print $1 }\n# a comment\nEND { print \"done\" }",
        "{ print \"a # not a comment\", \"/\" }",
        "{ print 1, 2\n}",
        "{ s = substr($0, 2); print toupper(s) }",
        "{ $2 = \"\"; print }",
        "{ print $NF / 2 }",
        "!seen[$0]++",
    ] {
        if let Err(e) = program(prog) {
            panic!("{prog:?}: {e}");
        }
    }
}

/// Fragments of awk, some harmless, some that run or write, some that
/// awks read in more than one way; programs assembled from them that the
/// reader accepts must run nothing and write nothing in every awk here.
#[test]
fn accepted_programs_do_no_harm_in_any_awk() {
    let awks = awks();
    if awks.is_empty() {
        // Under CI a missing requirement fails (ci/setup.sh installs them).
        assert!(std::env::var_os("CI").is_none(), "no awk installed");
        return;
    }
    const FRAGS: &[&str] = &[
        " ",
        "/[ \\t]/",
        "/[\\]]/",
        "/[\\/]/",
        "/[\\",
        "\n",
        ";",
        "{",
        "}",
        "(",
        ")",
        "x",
        "y",
        "=",
        "1",
        "8",
        "$1",
        "$3",
        "/",
        "/a/",
        "/#/",
        "#",
        "\"#\"",
        "\"/\"",
        "print",
        "printf",
        ">",
        ">>",
        ",",
        "return",
        "if",
        "else",
        "in",
        "length",
        "x++",
        "--",
        "!",
        "&&",
        "||",
        "?",
        ":",
        "a[1]",
        "]",
        "[",
        "\\\n",
        "system(\"touch M\")",
        "\"touch M\"",
        "|",
        "getline",
        "function f(v) { return v }",
        "f(1)",
        "BEGIN",
        "END",
        "\"M\"",
        "print > \"M\"",
        "/[/]/",
        "1e3",
        "0x1",
    ];
    let dir = scratch("fuzz");
    let mut rng = fastrand::Rng::with_seed(33);
    let mut tried = 0;
    let mut failures = Vec::new();
    while tried < 400 {
        let n = rng.usize(2..14);
        let prog: String = (0..n).map(|_| FRAGS[rng.usize(..FRAGS.len())]).collect();
        if program(&prog).is_err() {
            continue;
        }
        tried += 1;
        for a in &awks {
            if harms(a, &prog, &dir) {
                failures.push(format!("{a:?} {prog:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "accepted, and harmful:\n{}",
        failures.join("\n")
    );
}

/// Random bytes and fragments never make the reader panic.
#[test]
fn never_panics() {
    let mut rng = fastrand::Rng::with_seed(7);
    let alphabet = b"{}()[]/\\\"#\n ;,$=+-*<>|!?:~@abcxyz019.eE_getlineprintsystem";
    for _ in 0..20_000 {
        let n = rng.usize(0..40);
        let bytes: Vec<u8> = (0..n)
            .map(|_| alphabet[rng.usize(..alphabet.len())])
            .collect();
        let _ = program(&String::from_utf8_lossy(&bytes));
    }
    let _ = program("\u{e9}/\u{e9}[\u{e9}/");
}
