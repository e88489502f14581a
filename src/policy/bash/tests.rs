//! Differential tests of the reduction: the plan's argv against what real
//! bash executes. Every program a line runs is shimmed by a script on PATH
//! that records its name, argv and working directory and then runs the
//! real program; `echo`, `printf`, `test`, `[`, `true` and `false` are
//! taken out of bash (`enable -n`) so they are recorded too. Each planned
//! command must have been run with exactly its argv, in its directory, and
//! nothing else may have run.

use super::*;
use std::collections::BTreeSet;
use std::process::Command;

const UNBUILT: &[&str] = &["echo", "printf", "test", "[", "true", "false"];

struct Lab {
    dir: PathBuf,
    shims: PathBuf,
    log: PathBuf,
    env_file: PathBuf,
    real_path: String,
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-diff-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(d).unwrap()
}

impl Lab {
    fn new() -> Option<Lab> {
        if Command::new("bash").arg("-c").arg("true").status().is_err() {
            return None;
        }
        let root = temp("lab");
        let dir = root.join("proj");
        for (p, t) in [
            ("a.txt", "alpha\n"),
            ("b.txt", "beta\n"),
            ("c.rs", "fn c() {}\n"),
            (".hidden", "h\n"),
            ("dir1/x.rs", "x\n"),
            ("dir1/y.txt", "y\n"),
            ("dir2/z.rs", "z\n"),
            ("sp ace.txt", "s\n"),
            ("names.txt", "b\na\n"),
        ] {
            let f = dir.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        std::fs::create_dir_all(dir.join("empty")).unwrap();
        let shims = root.join("shims");
        std::fs::create_dir_all(&shims).unwrap();
        let env_file = root.join("env.sh");
        std::fs::write(&env_file, format!("enable -n {}\n", UNBUILT.join(" "))).unwrap();
        Some(Lab {
            dir,
            log: root.join("log"),
            shims,
            env_file,
            real_path: std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        })
    }

    fn shim(&self, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = self.shims.join(name);
        if p.exists() || name.contains('/') {
            return;
        }
        // One log file per process (pipeline stages run at once); the real
        // program is run by its path so what it runs in turn is shimmed too.
        let script = "#!/usr/bin/env -S -u BASH_ENV bash\n\
             [ -n \"$TERN_DIFF_IN\" ] && exit 99\n\
             n=\"${0##*/}\"\n\
             { printf '%s\\0' \"$n\" \"$(pwd -P)\" \"$@\"; printf '\\1'; } >> \"$TERN_DIFF_LOG.$$\"\n\
             real=$(PATH=\"$TERN_DIFF_PATH\" type -P \"$n\")\n\
             exec \"$real\" \"$@\"\n"
            .to_string();
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// (program, directory, argv) of every command bash ran.
    fn run(&self, cmd: &str) -> BTreeSet<(String, String, Vec<String>)> {
        let name = self.log.file_name().unwrap().to_string_lossy().to_string();
        let logs = || {
            std::fs::read_dir(self.log.parent().unwrap())
                .unwrap()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("{name}."))
                })
                .map(|e| e.path())
                .collect::<Vec<_>>()
        };
        for f in logs() {
            let _ = std::fs::remove_file(f);
        }
        Command::new("bash")
            .arg("-c")
            .arg(cmd)
            .current_dir(&self.dir)
            .env(
                "PATH",
                format!("{}:{}", self.shims.display(), self.real_path),
            )
            .env("TERN_DIFF_PATH", &self.real_path)
            .env("TERN_DIFF_LOG", &self.log)
            .env("BASH_ENV", &self.env_file)
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        let mut raw = Vec::new();
        for f in logs() {
            raw.extend(std::fs::read(f).unwrap_or_default());
        }
        raw.split(|b| *b == 1)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let mut f: Vec<String> = r
                    .split(|b| *b == 0)
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect();
                f.pop();
                let prog = f.remove(0);
                let dir = f.remove(0);
                (prog, dir, f)
            })
            .collect()
    }
}

/// The planned commands bash will run through a shim: (program, dir, argv
/// with unknown parts as None-prefixed patterns).
fn planned(lab: &Lab, cmd: &str) -> Result<Vec<(String, String, Vec<Arg>)>, String> {
    let a = analyse(cmd, &lab.dir);
    let p = a.planned.map_err(|e| format!("no plan: {e}"))?;
    let mut out = Vec::new();
    for c in p.commands {
        let Some(prog) = c.step.argv.first().and_then(Arg::lit) else {
            return Err("program computed at run time".into());
        };
        if prog.contains('/') {
            continue;
        }
        if c.step
            .argv
            .iter()
            .any(|a| matches!(a, Arg::Many { .. } | Arg::Under(_)))
        {
            return Err("an argument that expands to any number of words".into());
        }
        let dir = c.step.cwd.clone().ok_or("a directory not known")?;
        for argv in runs(&c.step.argv) {
            let Some(prog) = argv.first().and_then(Arg::lit) else {
                return Err("program computed at run time".into());
            };
            if check::is_builtin(prog) && !UNBUILT.contains(&prog) {
                continue;
            }
            lab.shim(prog);
            out.push((
                prog.to_string(),
                dir.display().to_string(),
                argv[1..].to_vec(),
            ));
        }
    }
    Ok(out)
}

/// The programs one argv execs: a wrapper and what it runs (`command`,
/// `builtin` and `time` are bash's own, so only what they run).
fn runs(argv: &[Arg]) -> Vec<Vec<Arg>> {
    let mut out = Vec::new();
    let mut w = argv;
    loop {
        let name = w.first().and_then(Arg::lit).unwrap_or("");
        let skip = |from: usize, valued: &[&str]| {
            let mut i = from;
            while let Some(s) = w.get(i).and_then(Arg::lit) {
                if s == "--" {
                    return i + 1;
                }
                if !s.starts_with('-') {
                    break;
                }
                i += if valued.contains(&s) { 2 } else { 1 };
            }
            i
        };
        let next = match name {
            "command" | "builtin" | "time" => skip(1, &[]),
            "nohup" => {
                out.push(w.to_vec());
                1
            }
            "nice" => {
                out.push(w.to_vec());
                skip(1, &["-n"])
            }
            "timeout" => {
                out.push(w.to_vec());
                skip(1, &["-s", "-k"]) + 1
            }
            "env" => {
                out.push(w.to_vec());
                let mut i = 1;
                while w.get(i).and_then(Arg::lit).is_some_and(|s| s.contains('=')) {
                    i += 1;
                }
                i
            }
            _ => {
                out.push(w.to_vec());
                return out;
            }
        };
        if next >= w.len() {
            return out;
        }
        w = &w[next..];
    }
}

fn agrees(plan: &[Arg], ran: &[String]) -> bool {
    plan.len() == ran.len()
        && plan.iter().zip(ran).all(|(p, r)| match p {
            Arg::Lit(s) => s == r,
            Arg::Opaque { prefix } => r.starts_with(prefix.as_str()),
            Arg::Fd => r.starts_with("/dev/fd/"),
            Arg::Many { .. } | Arg::Under(_) => false,
        })
}

/// Ok, or a description of how the plan and bash differ.
fn differential(lab: &Lab, cmd: &str) -> Result<bool, String> {
    let plan = match planned(lab, cmd) {
        Ok(p) => p,
        Err(_) => return Ok(false),
    };
    let ran = lab.run(cmd);
    // What bash ran must all be in the plan, with the same argv, in the
    // same directory: that is the property permissions rest on.
    for (prog, dir, argv) in &ran {
        if !plan
            .iter()
            .any(|(p, d, a)| p == prog && d == dir && agrees(a, argv))
        {
            return Err(format!(
                "{cmd:?}: bash ran {prog} {argv:?} in {dir}, which the plan lacks; plan: {plan:?}"
            ));
        }
    }
    // Without branches, everything planned must also have run.
    let branches = ["&&", "||", "if ", "case ", "while "];
    if !branches.iter().any(|b| cmd.contains(b)) {
        for (prog, dir, argv) in &plan {
            if !ran
                .iter()
                .any(|(p, d, r)| p == prog && d == dir && agrees(argv, r))
            {
                return Err(format!(
                    "{cmd:?}: planned {prog} {argv:?} in {dir}, bash ran {ran:?}"
                ));
            }
        }
    }
    Ok(true)
}

const LINES: &[&str] = &[
    "ls",
    "ls -la a.txt b.txt",
    "cat 'sp ace.txt'",
    "cat sp\\ ace.txt",
    "cat \"sp ace.txt\" a.txt",
    "echo a'b'\"c\"d",
    "echo $'a\\tb' $'x\\ny'",
    "echo \"a\\$b\" \"c\\\\d\" \"e\\\"f\" 'g\\h'",
    "echo *.txt",
    "echo *",
    "echo .*",
    "echo dir*/*.rs",
    "echo dir1/*",
    "echo */",
    "echo [ab].txt",
    "echo [!a]*.txt",
    "echo ?.txt",
    "echo nomatch*.zzz",
    "echo '*.txt' \"*.txt\" \\*.txt",
    "echo x{a,b}y {1..3} {a..c} {01..03} {3..1}",
    "echo {a,b}{1,2}",
    "echo {}",
    "echo a{b}c",
    "echo ~ ~/x ~+ ~+/a",
    "x=hello; echo $x \"$x\" ${x}",
    "x='a b  c'; echo $x; echo \"$x\"",
    "x=' lead'; echo pre$x post",
    "x='*.txt'; echo $x \"$x\"",
    "x=; echo a $x b \"$x\" c",
    "x=1; y=$x; echo $y",
    "echo $((1+2)) $((7/2)) $((2**10)) $((1<2)) $(( -3 ))",
    "n=5; echo $((n*2)) $((n>3?1:0))",
    "echo \"$(printf '%s' hi)\"",
    "echo \"$(cat <<'EOF'\nline one\nline two\n\nEOF\n)\"",
    "echo \"$(pwd)\"",
    "cat <<< 'here string'",
    "cat <<EOF\nplain $HOME\nEOF",
    "for f in a b c; do echo \"$f\"; done",
    "for f in *.txt; do wc -l \"$f\"; done",
    "for f in dir1/* dir2/*; do echo $f; done",
    "for i in 1 2; do for j in x y; do echo $i$j; done; done",
    "case a.txt in *.txt) echo text;; *) echo other;; esac",
    "if [ -f a.txt ]; then echo yes; else echo no; fi",
    "[ -d dir1 ] && echo dir",
    "test -n x && echo n",
    "[ a = a ] || echo never",
    "true && echo t; false || echo f",
    "cd dir1 && ls && cat y.txt",
    "cd dir1; cd ..; ls a.txt",
    "(cd dir2 && ls); ls",
    "{ echo a; echo b; } | sort",
    "ls | head -1 | cat",
    "grep -n alpha a.txt b.txt",
    "grep -rn x dir1",
    "head -n 1 a.txt; tail -n1 b.txt",
    "sort names.txt | uniq -c",
    "wc -l < a.txt",
    "find . -name '*.rs' -type f",
    "diff a.txt b.txt",
    "diff <(sort names.txt) names.txt",
    "echo one; echo two\necho three",
    "echo a # a comment",
    "echo a \\\n b",
    "ls -- -x 2>/dev/null",
    "printf '%s\\n' a b",
    "echo -n a; echo -e 'b\\n'",
    "x=dir1; ls \"$x\"/*.rs",
    "echo \"$PWD\" $PWD/x",
    "cd dir1 && echo ~+ \"$PWD\" $OLDPWD",
    "while read -r l; do echo \"$l\"; done < names.txt",
    "LC_ALL=C sort names.txt",
    "timeout 5 cat a.txt",
    "nice -n 1 cat a.txt",
    "env LC_ALL=C cat a.txt",
    "command cat a.txt",
    "echo a; (echo b; echo c) | cat",
    "f=a.txt; [ -f \"$f\" ] && cat \"$f\"",
    "echo \"x$(echo y)z\"",
    "echo ''",
    "echo '' \"\" x",
    "echo {,a}b",
    "echo a{,}b",
];

#[test]
fn plans_agree_with_bash() {
    let Some(lab) = Lab::new() else {
        // bash is part of every host this suite runs on; a unit test cannot
        // reach tests/it/support's skip helper.
        panic!("bash is needed for the differential test");
    };
    let mut compared = 0;
    let mut failures = Vec::new();
    for line in LINES {
        match differential(&lab, line) {
            Ok(true) => compared += 1,
            Ok(false) => failures.push(format!(
                "{line:?}: no plan ({:?})",
                analyse(line, &lab.dir).why_not()
            )),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(compared, LINES.len());
}

/// Random lines from a grammar of the constructs the planner expands,
/// run the same way: whatever gets a plan must agree with bash.
#[test]
fn random_lines_agree_with_bash() {
    let Some(lab) = Lab::new() else {
        panic!("bash is needed for the differential test");
    };
    let mut rng = fastrand::Rng::with_seed(14);
    let atoms = [
        "a",
        "x y",
        "*.txt",
        "dir1/*",
        "'q w'",
        "\"d q\"",
        "$v",
        "\"$v\"",
        "~",
        "~+",
        "{1,2}",
        "{a..c}",
        "$((1+2))",
        "$(echo s)",
        "\"$(echo s t)\"",
        "[ab].txt",
        "''",
        "\\*",
        "a\\ b",
        "$'t\\tu'",
        "=",
        "-n",
        "--",
        "dir2",
        ".*",
        "x{,y}",
        "\"$w\"",
    ];
    let programs = ["echo", "printf '%s|'", "ls -d", "test -n", "cat", "wc -c"];
    let mut compared = 0;
    for _ in 0..300 {
        let mut line = String::new();
        if rng.bool() {
            line.push_str(&format!(
                "v='{}'; ",
                ["p q", "*.rs", "z", ""][rng.usize(0..4)]
            ));
        }
        if rng.u8(0..4) == 0 {
            line.push_str("w=dir1; ");
        }
        let n = rng.usize(1..3);
        for k in 0..n {
            if k > 0 {
                line.push_str([" ; ", " && ", " | ", " || "][rng.usize(0..4)]);
            }
            let p = programs[rng.usize(0..programs.len())];
            line.push_str(p);
            for _ in 0..rng.usize(0..4) {
                line.push(' ');
                line.push_str(atoms[rng.usize(0..atoms.len())]);
            }
            if rng.u8(0..5) == 0 {
                line.push_str(" 2>/dev/null");
            }
        }
        if rng.u8(0..6) == 0 {
            line = format!("for i in a *.txt; do {line}; done");
        }
        match differential(&lab, &line) {
            Ok(true) => compared += 1,
            Ok(false) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(compared > 150, "only {compared} random lines got a plan");
}

#[test]
fn parse_and_plan_never_panic_on_random_input() {
    // The in-suite cousin of fuzz/fuzz_targets/bash_plan.rs: mutate lines
    // byte by byte and feed them through everything.
    let mut rng = fastrand::Rng::with_seed(1414);
    let seeds: Vec<&str> = LINES.to_vec();
    let alphabet = b" \t\n\\'\"$`(){}[]<>|&;*?~=#!-+,.:/@%^0123456789abcxyz";
    let dir = std::env::temp_dir();
    for _ in 0..4000 {
        let mut s = seeds[rng.usize(0..seeds.len())].as_bytes().to_vec();
        for _ in 0..rng.usize(1..6) {
            let at = rng.usize(0..=s.len());
            match rng.u8(0..3) {
                0 if !s.is_empty() && at < s.len() => {
                    s.remove(at);
                }
                _ => s.insert(at, alphabet[rng.usize(0..alphabet.len())]),
            }
        }
        let text = String::from_utf8_lossy(&s);
        let a = analyse(&text, &dir);
        let _ = (a.read_only(), a.why_not());
    }
}
