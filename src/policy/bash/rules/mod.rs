//! Bash rules against the commands that actually run.
//!
//! A planned command is matched in every form it takes on the way to the
//! program that runs: as written, with the program's directory dropped
//! (`/bin/rm` is `rm`), after each wrapper is taken off (`timeout`,
//! `nice`, `env`, `exec -a NAME`, `xargs`, `sudo`, `find -exec`, and the
//! strings run by `sh -c`, `eval`, `watch`, `su -c`, `env -S`, which are
//! analysed in turn), and for multi-command tools (git, npm, cargo,
//! docker, kubectl …) with the global options before the subcommand taken
//! off ([`tools`]). A deny or ask rule that matches any form applies; an
//! allow rule approves a command only in its form after the wrappers that
//! change nothing about what runs.
//!
//! Text computed at run time is a hole: a deny rule that could match
//! through a hole asks instead of denying; an allow rule never matches
//! through one except where the rule itself has `*`.

use super::plan::Arg;

mod tools;

/// One form of a command for rule matching.
#[derive(Debug, Clone)]
pub(crate) struct Form {
    pub argv: Vec<Arg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    No,
    /// Only if a value computed at run time has a certain text.
    Possible,
    Yes,
}

/// A text with holes.
enum Piece {
    Ch(char),
    Hole,
}

fn pieces(argv: &[Arg]) -> Vec<Piece> {
    let mut out = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.push(Piece::Ch(' '));
        }
        match a {
            Arg::Lit(s) => out.extend(s.chars().map(Piece::Ch)),
            Arg::Opaque { prefix } | Arg::Many { prefix } => {
                out.extend(prefix.chars().map(Piece::Ch));
                out.push(Piece::Hole);
            }
            Arg::Fd => out.extend("/dev/fd/".chars().map(Piece::Ch).chain([Piece::Hole])),
            Arg::Under(d) => {
                out.extend(d.display().to_string().chars().map(Piece::Ch));
                out.push(Piece::Hole);
            }
        }
    }
    out
}

/// Claude Code's spec forms: `prefix:*` (the prefix, then a space or the
/// end), `prefix *` likewise, a glob with `*`, or an exact command.
fn pattern(spec: &str) -> (Vec<Option<char>>, bool) {
    // None is `*`; the bool says the pattern may end at a word boundary.
    let (body, prefix) = if let Some(p) = spec.strip_suffix(":*") {
        (p, true)
    } else if let Some(p) = spec.strip_suffix(" *").filter(|p| !p.contains('*')) {
        (p, true)
    } else {
        (spec, false)
    };
    (
        body.chars()
            .map(|c| if c == '*' { None } else { Some(c) })
            .collect(),
        prefix,
    )
}

/// Does `spec` match this argv: surely, only through a hole, or not?
pub(crate) fn matches(spec: &str, argv: &[Arg]) -> Match {
    // Most commands are all literal and most specs have no `*` but a
    // `:*`/` *` ending: then plain string comparison gives the same answer
    // as the matcher below, without its table.
    if argv.iter().all(|a| matches!(a, Arg::Lit(_))) {
        let (body, prefix) = spec
            .strip_suffix(":*")
            .or_else(|| spec.strip_suffix(" *"))
            .map_or((spec, false), |b| (b, true));
        if !body.contains('*') {
            let program = body.split(' ').next().unwrap_or("");
            if argv
                .first()
                .and_then(Arg::lit)
                .is_some_and(|p| !p.starts_with(program))
            {
                return Match::No;
            }
            let text = argv
                .iter()
                .filter_map(Arg::lit)
                .collect::<Vec<_>>()
                .join(" ");
            let hit = text == body
                || (prefix
                    && text
                        .strip_prefix(body)
                        .is_some_and(|rest| rest.starts_with(' ')));
            return if hit { Match::Yes } else { Match::No };
        }
    }
    if !starts_agree(spec, argv) {
        return Match::No;
    }
    by_table(spec, argv)
}

/// Do the spec's literal start (up to its first `*`) and the command's
/// (up to its first hole) agree as far as both go? When they do not, no
/// match is possible, strict or through a hole: the table can only step
/// over equal characters until one of them reaches a `*` or a hole.
fn starts_agree(spec: &str, argv: &[Arg]) -> bool {
    let body = spec
        .strip_suffix(":*")
        .or_else(|| spec.strip_suffix(" *").filter(|p| !p.contains('*')))
        .unwrap_or(spec);
    let mut want = body.chars().take_while(|&c| c != '*');
    for (i, a) in argv.iter().enumerate() {
        let (text, hole) = match a {
            Arg::Lit(s) => (s.as_str(), false),
            Arg::Opaque { prefix } | Arg::Many { prefix } => (prefix.as_str(), true),
            Arg::Fd => ("/dev/fd/", true),
            // Its text is a path that may not be UTF-8: not compared.
            Arg::Under(_) => return true,
        };
        let sep = if i > 0 { " " } else { "" };
        for c in sep.chars().chain(text.chars()) {
            match want.next() {
                Some(w) if w == c => {}
                Some(_) => return false,
                None => return true,
            }
        }
        if hole {
            return true;
        }
    }
    true
}

fn by_table(spec: &str, argv: &[Arg]) -> Match {
    let text = pieces(argv);
    let (pat, prefix) = pattern(spec);
    let mut best = Match::No;
    for strict in [true, false] {
        if run(&pat, &text, prefix, strict) {
            best = if strict { Match::Yes } else { Match::Possible };
            break;
        }
    }
    best
}

/// Pattern-vs-text with holes. `strict`: a hole matches nothing but the
/// pattern's `*`; otherwise a hole may stand for any text.
fn run(pat: &[Option<char>], text: &[Piece], prefix: bool, strict: bool) -> bool {
    let (n, m) = (pat.len(), text.len());
    // dp[i][j]: pat[..i] matches text[..j]
    let mut dp = vec![vec![false; m + 1]; n + 1];
    dp[0][0] = true;
    for i in 0..=n {
        for j in 0..=m {
            if !dp[i][j] {
                continue;
            }
            let hole = matches!(text.get(j), Some(Piece::Hole));
            if !strict && hole {
                // An empty hole, or one that stands for pat[i] (and maybe more).
                dp[i][j + 1] = true;
                if i < n {
                    dp[i + 1][j] = true;
                    dp[i + 1][j + 1] = true;
                }
            }
            match (pat.get(i), text.get(j)) {
                (Some(None), t) => {
                    dp[i + 1][j] = true;
                    if t.is_some() {
                        dp[i][j + 1] = true;
                    }
                }
                (Some(Some(c)), Some(Piece::Ch(t))) if c == t => dp[i + 1][j + 1] = true,
                _ => {}
            }
        }
    }
    if dp[n][m] {
        return true;
    }
    // `prefix:*`: what follows starts a new word.
    prefix
        && (0..m).any(|j| {
            dp[n][j]
                && match &text[j] {
                    Piece::Ch(' ') => true,
                    Piece::Hole => !strict,
                    Piece::Ch(_) => false,
                }
        })
}

/// Every form of a command, for deny and ask rules; the last form of the
/// transparent prefix is the one allow rules see.
pub(crate) fn forms(argv: &[Arg], depth: usize, out: &mut Vec<Form>) {
    if depth > 8 || argv.is_empty() {
        return;
    }
    out.push(Form {
        argv: argv.to_vec(),
    });
    other_forms(argv, depth, out);
}

/// Every form but `argv` itself (a planned command's own argv is matched
/// as it stands, without a copy).
pub(crate) fn other_forms(argv: &[Arg], depth: usize, out: &mut Vec<Form>) {
    if depth > 8 || argv.is_empty() {
        return;
    }
    // `git -C . commit` is `git commit`.
    let mut subs = Vec::new();
    tools::subcommand_forms(argv, &mut subs);
    out.extend(subs.into_iter().map(|argv| Form { argv }));
    if let Some(Arg::Lit(p)) = argv.first()
        && p.contains('/')
    {
        let mut short = argv.to_vec();
        short[0] = Arg::Lit(p.rsplit('/').next().unwrap_or(p).to_string());
        out.push(Form { argv: short });
    }
    let Some(name) = argv
        .first()
        .and_then(Arg::lit)
        .map(|p| p.rsplit('/').next().unwrap_or(p))
    else {
        return;
    };
    let a = &argv[1..];
    let lit = |i: usize| a.get(i).and_then(Arg::lit);
    let skip_opts = |mut i: usize, with_value: &[&str]| {
        while let Some(s) = lit(i) {
            if s == "--" {
                return i + 1;
            }
            if !s.starts_with('-') || s == "-" {
                break;
            }
            i += if with_value.contains(&s) { 2 } else { 1 };
        }
        i
    };
    let inner: Option<usize> = match name {
        "nohup" | "builtin" | "command" => Some(skip_opts(0, &[])),
        "time" => Some(skip_opts(0, &[])),
        "nice" => Some(skip_opts(0, &["-n", "--adjustment"])),
        "stdbuf" => Some(skip_opts(0, &["-i", "-o", "-e"])),
        "setsid" => Some(skip_opts(0, &[])),
        "ionice" => Some(skip_opts(0, &["-c", "-n", "-p", "-P", "-u"])),
        "chrt" => {
            let i = skip_opts(0, &[]);
            Some(i + 1)
        }
        "taskset" => {
            let i = skip_opts(0, &[]);
            Some(if lit(i.saturating_sub(1)) == Some("-c") {
                i
            } else {
                i + 1
            })
        }
        "timeout" => Some(skip_opts(0, &["-s", "-k", "--signal", "--kill-after"]) + 1),
        "exec" => Some(skip_opts(0, &["-a"])),
        "sudo" | "doas" => Some(skip_opts(
            0,
            &[
                "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group",
            ],
        )),
        "flock" => {
            let i = skip_opts(0, &["-w", "-E", "--timeout", "--conflict-exit-code"]);
            Some(i + 1)
        }
        "strace" | "ltrace" => Some(skip_opts(0, &["-o", "-e", "-p", "-s", "-u", "-E", "-a"])),
        "xargs" => Some(skip_opts(
            0,
            &[
                "-d",
                "-E",
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-a",
                "--delimiter",
                "--arg-file",
            ],
        )),
        "chroot" => Some(skip_opts(0, &["--userspec", "--groups"]) + 1),
        "env" => {
            let mut i = 0;
            while let Some(s) = lit(i) {
                if s == "-S" || s == "--split-string" {
                    if let Some(t) = lit(i + 1) {
                        nested(t, depth, out);
                    }
                    i += 2;
                } else if let Some(t) = s.strip_prefix("--split-string=") {
                    nested(t, depth, out);
                    i += 1;
                } else if matches!(s, "-u" | "-C" | "--unset" | "--chdir") {
                    i += 2;
                } else if s.starts_with('-') || s.contains('=') {
                    i += 1;
                } else {
                    break;
                }
            }
            Some(i)
        }
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "busybox" | "su" => {
            // The string after -c (possibly bundled: -lc, -ec).
            let mut i = 0;
            while let Some(s) = lit(i) {
                if s.starts_with('-') && s.contains('c') && !s.starts_with("--") {
                    if let Some(t) = lit(i + 1) {
                        nested(t, depth, out);
                    } else if a.get(i + 1).is_some() {
                        out.push(Form {
                            argv: vec![Arg::Opaque {
                                prefix: String::new(),
                            }],
                        });
                    }
                    break;
                }
                i += 1;
            }
            if name == "busybox" { Some(0) } else { None }
        }
        "eval" | "watch" => {
            let start = if name == "watch" {
                skip_opts(0, &["-n", "-d", "--interval"])
            } else {
                0
            };
            let joined: Option<Vec<&str>> =
                a.get(start..).unwrap_or(&[]).iter().map(Arg::lit).collect();
            match joined {
                Some(words) => nested(&words.join(" "), depth, out),
                None => out.push(Form {
                    argv: vec![Arg::Opaque {
                        prefix: String::new(),
                    }],
                }),
            }
            None
        }
        "find" => {
            let mut i = 0;
            while i < a.len() {
                if matches!(lit(i), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
                    let end = (i + 1..a.len())
                        .find(|&k| matches!(lit(k), Some(";" | "+")))
                        .unwrap_or(a.len());
                    forms(&a[i + 1..end], depth + 1, out);
                    i = end;
                }
                i += 1;
            }
            None
        }
        _ => None,
    };
    if let Some(i) = inner
        && i < a.len()
    {
        forms(&a[i..], depth + 1, out);
    }
    // exec -a NAME: the program is still the one after NAME; NAME is only
    // what it is called.
}

fn nested(text: &str, depth: usize, out: &mut Vec<Form>) {
    match super::parse_cached(text) {
        Ok(block) => {
            let mut argvs = Vec::new();
            super::plan::literal_commands(&block, &mut argvs);
            for a in argvs {
                forms(&a, depth + 1, out);
            }
        }
        Err(_) => {
            // Unparsed: each word may be a program.
            let words: Vec<Arg> = text
                .split(|c: char| c.is_whitespace() || ";&|()<>`'\"".contains(c))
                .filter(|w| !w.is_empty())
                .map(|w| Arg::Lit(w.to_string()))
                .collect();
            for k in 0..words.len() {
                forms(&words[k..], depth + 1, out);
            }
        }
    }
}

/// The argv after wrappers that change nothing about what runs (for
/// allow rules): `timeout 5 cargo test` is `cargo test`.
pub(crate) fn effective(argv: &[Arg]) -> &[Arg] {
    let mut w = argv;
    for _ in 0..8 {
        let Some(name) = w.first().and_then(Arg::lit) else {
            return w;
        };
        let rest = &w[1..];
        let lit = |i: usize| rest.get(i).and_then(Arg::lit);
        let skip = |mut i: usize, valued: &[&str]| {
            while let Some(s) = lit(i) {
                if s == "--" {
                    return i + 1;
                }
                if !s.starts_with('-') || s == "-" {
                    break;
                }
                i += if valued.contains(&s) { 2 } else { 1 };
            }
            i
        };
        let i = match name {
            "nohup" | "time" => skip(0, &[]),
            "command" if !matches!(lit(0), Some("-v" | "-V")) => skip(0, &[]),
            "builtin" => 0,
            "exec" if lit(0).is_none_or(|s| !s.starts_with('-')) => 0,
            "nice" => skip(0, &["-n", "--adjustment"]),
            "stdbuf" => skip(0, &["-i", "-o", "-e"]),
            "timeout" => skip(0, &["-s", "-k", "--signal", "--kill-after"]) + 1,
            "env" => {
                let mut i = 0;
                while let Some(s) = lit(i) {
                    let harmless = s.split_once('=').is_some_and(|(n, v)| {
                        super::env::check_assignment(n, &Arg::Lit(v.to_string())).is_ok()
                    });
                    if harmless {
                        i += 1;
                    } else {
                        break;
                    }
                }
                // `env -x …` or a variable that matters: not transparent.
                if lit(i).is_some_and(|s| s.starts_with('-') || s.contains('=')) {
                    return w;
                }
                i
            }
            _ => return w,
        };
        if i >= rest.len() {
            return w;
        }
        w = &rest[i..];
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Arg> {
        s.split(' ')
            .map(|w| {
                if w == "?" {
                    Arg::Opaque {
                        prefix: String::new(),
                    }
                } else {
                    Arg::Lit(w.into())
                }
            })
            .collect()
    }

    #[test]
    fn spec_forms() {
        assert_eq!(matches("git log:*", &argv("git log --oneline")), Match::Yes);
        assert_eq!(matches("git log:*", &argv("git log")), Match::Yes);
        assert_eq!(matches("git log:*", &argv("git logx")), Match::No);
        assert_eq!(matches("git diff *", &argv("git diff HEAD")), Match::Yes);
        assert_eq!(
            matches("git * --dry-run", &argv("git push --dry-run")),
            Match::Yes
        );
        assert_eq!(matches("git * --dry-run", &argv("git push")), Match::No);
        assert_eq!(matches("make", &argv("make")), Match::Yes);
        assert_eq!(matches("make", &argv("make install")), Match::No);
    }

    #[test]
    fn holes_make_a_deny_possible_and_never_satisfy_an_allow() {
        assert_eq!(matches("rm -rf:*", &argv("rm ? /")), Match::Possible);
        assert_eq!(matches("rm:*", &argv("? -rf /")), Match::Possible);
        assert_eq!(
            matches("git commit:*", &argv("git commit -m ?")),
            Match::Yes
        );
        assert_eq!(matches("git status", &argv("git ?")), Match::Possible);
        assert_eq!(matches("curl:*", &argv("echo ?")), Match::No);
    }

    /// The string comparison for literal lines agrees with the matcher
    /// it stands in for, on every spec shape (a deny rule `r*:*` must
    /// still catch `rm x`).
    #[test]
    fn literal_shortcut_agrees_with_the_matcher() {
        let specs = [
            "rm:*",
            "rm",
            "rm *",
            "rm -rf:*",
            "r*:*",
            "r* *",
            "*",
            ":*",
            "* x",
            "rm :*",
            "git log:*",
            "git * --dry-run",
            "git status",
            "git status *",
            "g*t status",
            "git  status",
            "rm x*",
            "*rm",
            "rmdir:*",
        ];
        let lines = [
            "rm",
            "rm x",
            "rm -rf /",
            "rmdir x",
            "rm  x",
            "r",
            "git status",
            "git statusx",
            "git status -s",
            "git push --dry-run",
            "git  status",
            "x rm",
            "gat status",
            "rm x y",
            "",
        ];
        for spec in specs {
            for line in lines {
                let a = argv(line);
                assert_eq!(
                    matches(spec, &a),
                    by_table(spec, &a),
                    "{spec:?} vs {line:?}"
                );
            }
        }
        assert_eq!(matches("r*:*", &argv("rm x")), Match::Yes);
    }

    /// The same for lines with holes, where the shortcut is comparing the
    /// literal starts: it may only say No where the matcher does.
    #[test]
    fn start_shortcut_agrees_with_the_matcher() {
        let specs = [
            "rm:*",
            "rm",
            "rm *",
            "rm -rf:*",
            "r*:*",
            "*",
            ":*",
            "* x",
            "git log:*",
            "echo x",
            "echo ?",
            "g*t status",
            "ec*",
            "echo  x",
            "echo x:*",
        ];
        let lines = [
            "echo ?",
            "? x",
            "echo x ?",
            "e? x",
            "rm ?",
            "ech ? x",
            "? ?",
            "git ? status",
            "echo ?x",
            "echo",
            "?",
            "r ?",
        ];
        for spec in specs {
            for line in lines {
                let mut a = argv(line);
                // `e?` and `?x`: a hole after a literal start.
                for w in &mut a {
                    if let Arg::Lit(t) = w
                        && t.len() > 1
                        && t.contains('?')
                    {
                        let (p, _) = t.split_once('?').unwrap_or((t, ""));
                        *w = Arg::Opaque { prefix: p.into() };
                    }
                }
                assert_eq!(
                    matches(spec, &a),
                    by_table(spec, &a),
                    "{spec:?} vs {line:?}"
                );
            }
        }
        assert_eq!(matches("rm:*", &argv("echo ?")), Match::No);
        assert_eq!(matches("rm:*", &argv("r ?")), Match::No);
        assert_eq!(matches("rm:*", &argv("? x")), Match::Possible);
    }

    fn all(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        forms(&argv(s), 0, &mut out);
        out.iter()
            .map(|f| f.argv.iter().map(Arg::show).collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn wrappers_come_off() {
        assert!(all("/bin/rm -rf x").contains(&"rm -rf x".to_string()));
        assert!(all("exec -a ls rm x").contains(&"rm x".to_string()));
        assert!(all("timeout -s 9 5 rm x").contains(&"rm x".to_string()));
        assert!(all("xargs -0 rm -f").contains(&"rm -f".to_string()));
        assert!(all("sudo -u root rm x").contains(&"rm x".to_string()));
        assert!(all("find . -name x -exec rm {} ;").contains(&"rm {}".to_string()));
        assert!(all("env -i A=1 rm x").contains(&"rm x".to_string()));
        assert!(all("nice -n 5 nohup rm x").contains(&"rm x".to_string()));
    }

    #[test]
    fn transparent_wrappers_for_allow_rules() {
        let a = argv("timeout 120 cargo test");
        assert_eq!(effective(&a).len(), 2);
        let a = argv("env LC_ALL=C sort x");
        assert_eq!(effective(&a)[0].lit(), Some("sort"));
        let a = argv("env LD_PRELOAD=x sort");
        assert_eq!(effective(&a)[0].lit(), Some("env"));
        let a = argv("exec -a ls rm");
        assert_eq!(effective(&a)[0].lit(), Some("exec"));
    }
}
