//! What a Bash command does, as far as permissions care: whether every
//! part of it only reads, and which paths it reads.
//!
//! A command is read-only when it parses, uses no command substitution,
//! background jobs or constructs this reader does not follow, and each of
//! its simple commands is a known reader whose options cannot write
//! (`find` without `-exec`/`-delete`, `git` read subcommands, …), with
//! redirections only to descriptors or `/dev/null`. Anything else is not
//! read-only, and the reason says which part.

use std::path::{Path, PathBuf};

use super::shell::{self, SimpleCommand, Word};

/// A path a read-only command reads, resolved against the directory the
/// command runs in (after any `cd` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPath(pub PathBuf);

/// Commands that never write, whose non-option arguments are all paths.
const PATH_READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "ls",
    "stat",
    "file",
    "du",
    "tree",
    "diff",
    "cmp",
    "sort",
    "uniq",
    "cut",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "less",
    "more",
    "strings",
    "column",
    "tac",
    "rev",
];
/// Commands that never write and take no paths (or only harmless ones).
const PLAIN_READERS: &[&str] = &[
    "echo", "printf", "pwd", "whoami", "id", "date", "uname", "hostname", "which", "type", "true",
    "false", "test", "[", "env", "printenv", "seq", "sleep", "nproc", "uptime", "groups", "tty",
    "locale", "cal", "expr",
];
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "describe",
    "shortlog",
    "grep",
    "cat-file",
    "reflog",
    "whatchanged",
    "merge-base",
    "name-rev",
    "count-objects",
];
const CARGO_READERS: &[&str] = &["tree", "metadata", "version", "search", "--version", "-V"];
/// `find` actions that write, run commands or delete.
const FIND_WRITERS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Ok with the paths read, or why the command is not read-only.
pub fn read_only(command: &str, cwd: &Path) -> Result<Vec<ReadPath>, String> {
    let script = shell::parse(command).map_err(|e| format!("the command does not parse ({e})"))?;
    if script.complex {
        return Err(
            "it uses shell constructs (case, functions, arithmetic) that are not analysed".into(),
        );
    }
    if script.has_substitution {
        return Err("it uses command substitution".into());
    }
    if script.has_background {
        return Err("it starts a background job".into());
    }
    if script.expanding_heredoc {
        return Err("it has a here-document that expands variables or commands".into());
    }
    if script.commands.is_empty() {
        return Err("it is empty".into());
    }
    let mut dir = cwd.to_path_buf();
    let mut paths = Vec::new();
    for cmd in &script.commands {
        classify(cmd, &mut dir, &mut paths)?;
    }
    Ok(paths)
}

/// One simple command on its own: Ok with the paths it reads (resolved
/// from `dir`, which a `cd` updates), or why it is not read-only.
pub fn read_only_part(cmd: &SimpleCommand, dir: &mut PathBuf) -> Result<Vec<ReadPath>, String> {
    let mut paths = Vec::new();
    classify(cmd, dir, &mut paths)?;
    Ok(paths)
}

fn classify(
    cmd: &SimpleCommand,
    dir: &mut PathBuf,
    paths: &mut Vec<ReadPath>,
) -> Result<(), String> {
    if !cmd.assignments.is_empty() && cmd.words.is_empty() {
        return Err("it sets shell variables".into());
    }
    for r in &cmd.redirects {
        let to_fd = r.op.ends_with('&')
            && r.target
                .text
                .chars()
                .all(|c| c.is_ascii_digit() || c == '-');
        let to_null = r.target.text == "/dev/null" && !r.target.expands;
        match r.op.trim_start_matches(|c: char| c.is_ascii_digit()) {
            "<" if !r.target.expands => paths.push(ReadPath(resolve(dir, &r.target.text))),
            "<<<" | "<<" | "<<-" => {}
            _ if to_fd || to_null => {}
            _ => return Err(format!("it redirects output to {}", r.target.text)),
        }
    }
    let words = cmd.effective_words();
    let Some(program) = words.first() else {
        return Ok(());
    };
    if program.expands {
        return Err(format!(
            "its command name {} is computed at run time",
            program.text
        ));
    }
    let args = &words[1..];
    let name = program.text.rsplit('/').next().unwrap_or("");
    let plain_args = || positional(args, &[]);
    match name {
        "cd" => {
            let target = args.first().map_or("~", |a| a.text.as_str());
            if args.first().is_some_and(|a| a.expands) {
                return Err("it changes to a directory computed at run time".into());
            }
            *dir = resolve(dir, target);
            paths.push(ReadPath(dir.clone()));
        }
        n if PLAIN_READERS.contains(&n) => {}
        n if PATH_READERS.contains(&n) => {
            if n == "sort"
                && args
                    .iter()
                    .any(|a| a.text.starts_with("-o") || a.text == "--output")
            {
                return Err("sort -o writes a file".into());
            }
            for a in plain_args() {
                add_path(dir, a, paths)?;
            }
        }
        "grep" | "egrep" | "fgrep" | "rg" => {
            let explicit_pattern = args.iter().any(|a| {
                a.text == "-e"
                    || a.text == "-f"
                    || a.text.starts_with("--regexp")
                    || a.text.starts_with("--file")
            });
            let valued = [
                "-e",
                "-f",
                "-m",
                "-A",
                "-B",
                "-C",
                "-g",
                "-t",
                "-T",
                "--glob",
                "--type",
                "--max-count",
            ];
            let mut rest = positional(args, &valued);
            if !explicit_pattern {
                rest.next();
            }
            for a in rest {
                add_path(dir, a, paths)?;
            }
            if name == "rg" && args.iter().any(|a| a.text.starts_with("--pre")) {
                return Err("rg --pre runs a command".into());
            }
        }
        "find" => {
            if let Some(w) = args
                .iter()
                .find(|a| FIND_WRITERS.contains(&a.text.as_str()))
            {
                return Err(format!("find {} can write or run commands", w.text));
            }
            for a in args.iter().take_while(|a| !a.text.starts_with('-')) {
                add_path(dir, a, paths)?;
            }
        }
        "git" => {
            let sub = args.iter().find(|a| !a.text.starts_with('-'));
            if args
                .iter()
                .any(|a| a.text == "-c" || a.text.starts_with("--exec-path") || a.text == "-C")
            {
                return Err("git with -c, -C or --exec-path is not analysed".into());
            }
            match sub {
                Some(s) if GIT_READERS.contains(&s.text.as_str()) => {
                    if args
                        .iter()
                        .any(|a| a.text.starts_with("--output") || a.text == "--ext-diff")
                    {
                        return Err(
                            "git with --output or --ext-diff can write or run commands".into()
                        );
                    }
                }
                Some(s)
                    if s.text == "branch"
                        || s.text == "tag"
                        || s.text == "remote"
                        || s.text == "stash" =>
                {
                    // Listing forms only.
                    let listing = args.len() == 1
                        || args[1..].iter().all(|a| {
                            matches!(
                                a.text.as_str(),
                                "-a" | "-r" | "-v" | "-vv" | "--list" | "-l" | "list" | "show"
                            )
                        });
                    if !listing {
                        return Err(format!(
                            "git {} with arguments can change the repository",
                            s.text
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "git {} can change the repository",
                        sub.map_or("", |s| s.text.as_str())
                    ));
                }
            }
        }
        "cargo" => match args.first() {
            Some(a) if CARGO_READERS.contains(&a.text.as_str()) => {}
            _ => {
                return Err(
                    "cargo commands other than tree/metadata/version build or change things".into(),
                );
            }
        },
        "sed" => {
            // Only `sed -n 'Np'`-style printing, with no w/e commands.
            let script = plain_args().next();
            let safe_script = script.is_some_and(|s| {
                !s.expands
                    && s.text
                        .chars()
                        .all(|c| c.is_ascii_digit() || ",;p$ ".contains(c))
            });
            if !args.iter().any(|a| a.text == "-n")
                || !safe_script
                || args.iter().any(|a| a.text.starts_with("-i"))
            {
                return Err("sed is only read-only as `sed -n 'N,Mp' FILE`".into());
            }
            for a in plain_args().skip(1) {
                add_path(dir, a, paths)?;
            }
        }
        _ => return Err(format!("{name} is not a known read-only command")),
    }
    Ok(())
}

/// Arguments that are not options or the values of options in `valued`.
fn positional<'w>(args: &'w [Word], valued: &'w [&str]) -> impl Iterator<Item = &'w Word> + 'w {
    let mut skip_next = false;
    let mut after_dashdash = false;
    args.iter().filter(move |a| {
        if skip_next {
            skip_next = false;
            return false;
        }
        if after_dashdash {
            return true;
        }
        if a.text == "--" {
            after_dashdash = true;
            return false;
        }
        if a.text.starts_with('-') && a.text != "-" {
            skip_next = valued.contains(&a.text.as_str());
            return false;
        }
        true
    })
}

fn add_path(dir: &Path, w: &Word, paths: &mut Vec<ReadPath>) -> Result<(), String> {
    if w.text == "-" {
        return Ok(());
    }
    if w.expands {
        // A glob stays inside its directory; other expansions can be anything.
        let only_glob = !w.text.contains('$') && !w.text.contains('`');
        if !only_glob {
            return Err(format!("the path {} is computed at run time", w.text));
        }
        let parent = glob_base(&w.text);
        paths.push(ReadPath(resolve(dir, &parent)));
        return Ok(());
    }
    paths.push(ReadPath(resolve(dir, &w.text)));
    Ok(())
}

/// The directory part of a glob before its first wildcard.
fn glob_base(pattern: &str) -> String {
    let cut = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    match pattern[..cut].rfind('/') {
        Some(slash) if slash > 0 => pattern[..slash].to_string(),
        Some(_) => "/".to_string(),
        None => ".".to_string(),
    }
}

/// `~`, absolute and relative paths, lexically normalised (`..` handled).
pub fn resolve(dir: &Path, p: &str) -> PathBuf {
    let joined = if p == "~" || p.starts_with("~/") {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        home.join(p.trim_start_matches('~').trim_start_matches('/'))
    } else if p.starts_with('/') {
        PathBuf::from(p)
    } else {
        dir.join(p)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(x) => out.push(x),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ro(cmd: &str) -> Result<Vec<String>, String> {
        read_only(cmd, Path::new("/proj"))
            .map(|p| p.into_iter().map(|r| r.0.display().to_string()).collect())
    }

    #[test]
    fn readers_and_their_paths() {
        assert_eq!(
            ro("cat src/main.rs README.md").unwrap(),
            ["/proj/src/main.rs", "/proj/README.md"]
        );
        assert_eq!(ro("grep -rn 'fn main' src").unwrap(), ["/proj/src"]);
        assert_eq!(ro("grep -e x -e y a b").unwrap(), ["/proj/a", "/proj/b"]);
        assert_eq!(
            ro("cd sub && ls -la ../other").unwrap(),
            ["/proj/sub", "/proj/other"]
        );
        assert_eq!(ro("find . -name '*.rs' -type f").unwrap(), ["/proj"]);
        assert_eq!(ro("ls *.rs 2>/dev/null | wc -l").unwrap(), ["/proj"]);
        assert_eq!(
            ro("git log --oneline -5 && git status").unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            ro("sed -n '1,20p' src/lib.rs").unwrap(),
            ["/proj/src/lib.rs"]
        );
        assert_eq!(ro("cat /etc/passwd").unwrap(), ["/etc/passwd"]);
    }

    #[test]
    fn writers_and_unknowns_say_why() {
        let why = |c: &str| ro(c).unwrap_err();
        assert!(why("rm -rf build").contains("rm is not a known read-only command"));
        assert!(why("echo hi > out.txt").contains("redirects output to out.txt"));
        assert!(why("cat $(ls)").contains("command substitution"));
        assert!(why("find . -name x -delete").contains("-delete"));
        assert!(why("git push").contains("git push"));
        assert!(why("git -c core.pager=sh log").contains("-c"));
        assert!(why("sed -i s/a/b/ f").contains("sed"));
        assert!(why("sleep 100 &").contains("background"));
        assert!(why("$CMD foo").contains("computed"));
        assert!(why("cat \"$F\"").contains("computed"));
        assert!(why("echo 'unterminated").contains("does not parse"));
        assert!(why("sort -o out in").contains("sort -o"));
        assert!(why("git branch -D main").contains("git branch"));
    }
}
