//! Is each command of a plan read-only, and what does it read?
//!
//! Builtins and wrappers are handled here (`echo`, `printf`, `test`/`[`,
//! `[[ ]]`, `cd`, `set`, `command`, `exec`, `env`, `timeout`, `nice`,
//! `nohup`, `time`, `stdbuf`, `xargs`); `find`, `git`, `sed`, `awk` and
//! `jq` have their own readers; every other program is looked up in the
//! spec table. A wrapper is unwrapped to the program it runs, which must
//! itself be read-only. Anything not recognised is not read-only, and the
//! error says which part.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::env;
use super::path;
use super::plan::{Arg, Redir, Step, TestArg};
use super::spec::{self, Operands, Val};
use super::syntax::RedirOp;

/// A path a read-only command opens (or lists, or stats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Read {
    pub path: PathBuf,
    /// The whole tree below a directory is read (grep -r, rg).
    pub recursive: bool,
    /// As written, for messages.
    pub shown: String,
}

/// What a read-only plan touches.
#[derive(Debug, Clone, Default)]
pub(crate) struct Effects {
    pub reads: Vec<Read>,
    /// Programs named by a path, resolved.
    pub execs: Vec<PathBuf>,
    /// Programs named bare (looked up on PATH from `.1`).
    pub bare: Vec<(String, Rc<Path>)>,
    /// Directories in which git runs (their repository is checked).
    pub git: Vec<PathBuf>,
}

type R<T> = Result<T, String>;

/// Shell builtins: found before PATH is searched.
const BUILTINS: &[&str] = &[
    "echo", "printf", "test", "[", "[[", "pwd", "cd", "true", "false", ":", "type", "command",
    "builtin", "exec", "set", "time", "break", "continue", "exit", "return", "read", "hash",
];

const WRAPPER_DEPTH: usize = 8;

/// Is this name a bash builtin tern knows (found before PATH)?
#[cfg(test)]
pub(crate) fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

pub(crate) struct Checker<'a> {
    pub eff: &'a mut Effects,
    cwd: Option<Rc<Path>>,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(eff: &'a mut Effects) -> Checker<'a> {
        Checker { eff, cwd: None }
    }

    /// One planned command.
    pub(crate) fn step(&mut self, s: &Step) -> R<()> {
        self.cwd = s.cwd.clone();
        let reading = s.argv.first().and_then(Arg::lit) == Some("read");
        for (name, v) in &s.env {
            // `IFS= read -r line`: IFS only changes how read splits.
            if reading && name == "IFS" && v.lit().is_some() {
                continue;
            }
            env::check_assignment(name, v)?;
        }
        if let Some(test) = &s.test {
            return self.double_test(test);
        }
        self.argv(&s.argv, 0)
    }

    pub(crate) fn redirect(&mut self, r: &Redir) -> R<()> {
        self.cwd = r.cwd.clone();
        let harmless_out = |a: &Arg| {
            matches!(
                a.lit(),
                Some("/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2")
            )
        };
        match r.op {
            RedirOp::HereDoc | RedirOp::HereString => Ok(()),
            RedirOp::In => self.read(&r.target, false, "<"),
            RedirOp::Dup => match r.target.lit() {
                Some(t) if t == "-" || t.chars().all(|c| c.is_ascii_digit()) => Ok(()),
                _ if harmless_out(&r.target) => Ok(()),
                _ => Err(format!("it redirects output to {}", r.target.show())),
            },
            RedirOp::Out | RedirOp::Append | RedirOp::OutErr | RedirOp::ReadWrite => {
                if harmless_out(&r.target) {
                    Ok(())
                } else {
                    Err(format!("it writes to {}", r.target.show()))
                }
            }
        }
    }

    pub(crate) fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// A command another one runs (find -exec); `elsewhere`: in a
    /// directory that is not known (find -execdir).
    pub(crate) fn exec_inner(&mut self, argv: &[Arg], depth: usize, elsewhere: bool) -> R<()> {
        let saved = self.cwd.clone();
        if elsewhere {
            self.cwd = None;
        }
        let r = self.argv(argv, depth);
        self.cwd = saved;
        r
    }

    fn dir(&self) -> R<&Path> {
        self.cwd
            .as_deref()
            .ok_or_else(|| "it runs in a directory that is not known in advance".to_string())
    }

    /// Records a path the command reads.
    pub(crate) fn read(&mut self, a: &Arg, recursive: bool, who: &str) -> R<()> {
        match a {
            Arg::Lit(s) if s == "-" => Ok(()),
            Arg::Lit(s) if s.is_empty() => Ok(()),
            Arg::Lit(s) => {
                let p = path::resolve(self.dir()?, s)
                    .ok_or_else(|| format!("the path {s} cannot be resolved (a loop of links, or .. after a missing directory)"))?;
                self.eff.reads.push(Read {
                    path: p,
                    recursive,
                    shown: s.clone(),
                });
                Ok(())
            }
            Arg::Fd => Ok(()),
            Arg::Under(d) => {
                self.eff.reads.push(Read {
                    path: d.clone(),
                    recursive: true,
                    shown: a.show(),
                });
                Ok(())
            }
            Arg::Opaque { .. } | Arg::Many { .. } => Err(format!(
                "{who} reads a path computed at run time ({})",
                a.show()
            )),
        }
    }

    fn argv(&mut self, argv: &[Arg], depth: usize) -> R<()> {
        if depth > WRAPPER_DEPTH {
            return Err("wrappers nest too deeply".into());
        }
        let Some(first) = argv.first() else {
            return Ok(());
        };
        let Some(program) = first.lit() else {
            return Err(format!(
                "its command name is computed at run time ({})",
                first.show()
            ));
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        let args = &argv[1..];
        self.executable(program, name)?;
        match name {
            "echo" => Ok(()),
            "printf" => printf(args),
            "test" | "[" => {
                let inner = if name == "[" {
                    match args.split_last() {
                        Some((last, rest)) if last.lit() == Some("]") => rest,
                        _ => return Err("[ without its closing ]".into()),
                    }
                } else {
                    args
                };
                self.test(inner)
            }
            "cd" => Ok(()),
            "read" => read_builtin(args),
            "hash" => match args.first().and_then(Arg::lit) {
                None => Ok(()),
                Some("-r" | "-l" | "-t" | "-d") if args.len() <= 2 => Ok(()),
                Some(a) if !a.starts_with('-') && args.iter().all(|x| x.lit().is_some()) => Ok(()),
                _ => Err("hash -p points a command name at another program".into()),
            },
            "set" => set(args),
            "command" => self.command(args, depth),
            "builtin" => match args.first().and_then(Arg::lit) {
                Some(b) if BUILTINS.contains(&b) => self.argv(args, depth + 1),
                _ => Err("builtin with a name that is not analysed".into()),
            },
            "exec" => match args.first().and_then(Arg::lit) {
                None if args.is_empty() => Ok(()),
                Some(a) if a.starts_with('-') && a != "--" => Err(format!(
                    "exec {a} changes what the program sees (its name or environment)"
                )),
                Some("--") => self.argv(&args[1..], depth + 1),
                _ => self.argv(args, depth + 1),
            },
            "time" => {
                let rest = match args.first().and_then(Arg::lit) {
                    Some("-p") => &args[1..],
                    _ => args,
                };
                self.argv(rest, depth + 1)
            }
            "nohup" => self.argv(args, depth + 1),
            "nice" => self.nice(args, depth),
            "timeout" => self.timeout(args, depth),
            "stdbuf" => self.stdbuf(args, depth),
            "env" => self.env(args, depth),
            "xargs" => self.xargs(args, depth),
            "find" => super::find::check(self, args, depth),
            "git" => super::git::check(self, args),
            "sed" => super::scripts::sed(self, args),
            "awk" | "mawk" | "gawk" | "nawk" | "original-awk" => super::scripts::awk(self, args),
            "jq" => super::scripts::jq(self, args),
            "ps" => ps(args),
            _ => self.table(name, args),
        }
    }

    /// The executable a program name runs: it must not be one the model
    /// could have written (the policy checks PATH for bare names and the
    /// resolved path for the rest) — so `ls` cannot be `./ls` through a
    /// PATH entry.
    fn executable(&mut self, program: &str, name: &str) -> R<()> {
        if !program.contains('/') {
            if !BUILTINS.contains(&name) {
                let dir = self.cwd.clone().ok_or_else(|| {
                    "it runs in a directory that is not known in advance".to_string()
                })?;
                self.eff.bare.push((program.to_string(), dir));
            }
            return Ok(());
        }
        let p = path::resolve(self.dir()?, program).ok_or_else(|| {
            format!(
                "{program} cannot be resolved (a loop of links, or .. after a missing directory)"
            )
        })?;
        self.eff.execs.push(p);
        Ok(())
    }

    fn table(&mut self, name: &str, args: &[Arg]) -> R<()> {
        let c =
            spec::lookup(name).ok_or_else(|| format!("{name} is not a known read-only command"))?;
        let parsed = spec::parse(name, c, args)?;
        for (opt, v) in &parsed.opts {
            let kind = c.opts.iter().find(|o| o.name == *opt).map(|o| o.takes);
            if let (
                Some(
                    spec::Takes::Value(Val::Read)
                    | spec::Takes::Optional(Val::Read)
                    | spec::Takes::ValueOrLast(Val::Read),
                ),
                Some(v),
            ) = (kind, v)
            {
                self.read(v, false, name)?;
            }
        }
        extra(name, &parsed)?;
        let prog = c.prog;
        let mut recursive = prog.recursive.contains(&"*")
            || prog
                .recursive
                .iter()
                .any(|r| parsed.has(r) && !matches!(*r, "-d" | "--directories"));
        if name.ends_with("grep")
            && parsed
                .values("-d")
                .chain(parsed.values("--directories"))
                .any(|v| v.lit() == Some("recurse"))
        {
            recursive = true;
        }
        let ops = &parsed.operands;
        if let Some(m) = ops
            .iter()
            .find(|a| matches!(a, Arg::Many { .. }))
            .filter(|_| prog.operands != Operands::Text)
        {
            return Err(format!(
                "{name} gets arguments computed at run time ({})",
                m.show()
            ));
        }
        match prog.operands {
            Operands::None if !ops.is_empty() => {
                Err(format!("{name} with an operand changes something"))
            }
            Operands::None | Operands::Text => Ok(()),
            Operands::Paths | Operands::PathsOrCwd => {
                if ops.is_empty() && prog.operands == Operands::PathsOrCwd {
                    return self.read(&Arg::Lit(".".into()), recursive, name);
                }
                for a in ops {
                    self.read(a, recursive, name)?;
                }
                Ok(())
            }
            Operands::PatternThenPaths => {
                let given = parsed.has_any(prog.pattern_opts);
                let paths = if given {
                    &ops[..]
                } else {
                    ops.get(1..).unwrap_or(&[])
                };
                if paths.is_empty() && recursive {
                    return self.read(&Arg::Lit(".".into()), recursive, name);
                }
                for a in paths {
                    self.read(a, recursive, name)?;
                }
                Ok(())
            }
        }
    }

    fn command(&mut self, args: &[Arg], depth: usize) -> R<()> {
        let mut rest = args;
        let mut describe = false;
        while let Some(a) = rest.first().and_then(Arg::lit) {
            match a {
                "-v" | "-V" => describe = true,
                "-p" => {}
                "--" => {
                    rest = &rest[1..];
                    break;
                }
                a if a.starts_with('-') => return Err(format!("command {a} is not analysed")),
                _ => break,
            }
            rest = &rest[1..];
        }
        if describe || rest.is_empty() {
            return Ok(());
        }
        self.argv(rest, depth + 1)
    }

    fn nice(&mut self, args: &[Arg], depth: usize) -> R<()> {
        let mut i = 0;
        match args.first().and_then(Arg::lit) {
            Some("-n" | "--adjustment") => i = 2,
            Some(a) if a.starts_with("--adjustment=") => i = 1,
            Some(a) if a.starts_with("-n") && is_signed_number(&a[2..]) => i = 1,
            Some(a) if a.starts_with('-') && is_signed_number(&a[1..]) => i = 1,
            Some(a) if a.starts_with('-') && a != "--" => {
                return Err(format!("nice {a} is not analysed"));
            }
            _ => {}
        }
        if args.get(i).and_then(Arg::lit) == Some("--") {
            i += 1;
        }
        self.argv(args.get(i..).unwrap_or(&[]), depth + 1)
    }

    fn timeout(&mut self, args: &[Arg], depth: usize) -> R<()> {
        let mut i = 0;
        while let Some(a) = args.get(i).and_then(Arg::lit) {
            match a {
                "--preserve-status" | "--foreground" | "-v" | "--verbose" => i += 1,
                "-s" | "-k" | "--signal" | "--kill-after" => i += 2,
                a if a.starts_with("--signal=") || a.starts_with("--kill-after=") => i += 1,
                a if (a.starts_with("-s") || a.starts_with("-k")) && a.len() > 2 => i += 1,
                "--" => {
                    i += 1;
                    break;
                }
                a if a.starts_with('-') => return Err(format!("timeout {a} is not analysed")),
                _ => break,
            }
        }
        match args.get(i) {
            Some(Arg::Lit(_)) => self.argv(args.get(i + 1..).unwrap_or(&[]), depth + 1),
            _ => Err("timeout without a literal duration".into()),
        }
    }

    fn stdbuf(&mut self, args: &[Arg], depth: usize) -> R<()> {
        let mut i = 0;
        while let Some(a) = args.get(i).and_then(Arg::lit) {
            match a {
                "-i" | "-o" | "-e" | "--input" | "--output" | "--error" => i += 2,
                a if a.starts_with('-') && a.len() > 2 && !a.starts_with("--") => i += 1,
                a if a.starts_with("--input=")
                    || a.starts_with("--output=")
                    || a.starts_with("--error=") =>
                {
                    i += 1
                }
                _ => break,
            }
        }
        self.argv(args.get(i..).unwrap_or(&[]), depth + 1)
    }

    /// `env [NAME=value]… [command]`: only plain assignments of harmless
    /// variables; any option asks (`-S`, `-C`, `-u`, `-i`).
    fn env(&mut self, args: &[Arg], depth: usize) -> R<()> {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            match a {
                Arg::Lit(s) if s.starts_with('-') => {
                    return Err(format!(
                        "env {s} is not analysed (only plain NAME=value is)"
                    ));
                }
                Arg::Lit(s)
                    if s.contains('=')
                        && super::syntax::is_name(s.split('=').next().unwrap_or("")) =>
                {
                    let (n, v) = s.split_once('=').unwrap_or((s, ""));
                    env::check_assignment(n, &Arg::Lit(v.to_string()))?;
                    i += 1;
                }
                Arg::Lit(_) => break,
                other => {
                    return Err(format!(
                        "env gets an argument computed at run time ({})",
                        other.show()
                    ));
                }
            }
        }
        self.argv(&args[i..], depth + 1)
    }

    /// `xargs [options] command args…`: the command gets more arguments
    /// from stdin, which cannot be known.
    fn xargs(&mut self, args: &[Arg], depth: usize) -> R<()> {
        let mut i = 0;
        let mut replace: Option<String> = None;
        while let Some(a) = args.get(i).and_then(Arg::lit) {
            let takes = |short: &str, long: &str| a == short || a == long;
            if takes("-0", "--null")
                || takes("-r", "--no-run-if-empty")
                || takes("-t", "--verbose")
                || takes("-x", "--exit")
            {
                i += 1;
            } else if ["-d", "-E", "-L", "-n", "-P", "-s"].contains(&a) {
                i += 2;
            } else if a == "-I" {
                replace = args.get(i + 1).and_then(Arg::lit).map(str::to_string);
                i += 2;
            } else if a == "-a" || a == "--arg-file" {
                let f = args.get(i + 1).cloned().unwrap_or(Arg::Lit(String::new()));
                self.read(&f, false, "xargs")?;
                i += 2;
            } else if a.starts_with("--delimiter=")
                || a.starts_with("--max-lines=")
                || a.starts_with("--max-args=")
                || a.starts_with("--max-procs=")
                || a.starts_with("--max-chars=")
                || a.starts_with("--eof=")
                || (a.len() > 2 && ["-d", "-E", "-L", "-n", "-P", "-s"].contains(&&a[..2]))
            {
                i += 1;
            } else if let Some(f) = a.strip_prefix("--arg-file=") {
                self.read(&Arg::Lit(f.to_string()), false, "xargs")?;
                i += 1;
            } else if a.starts_with("-I") && a.len() > 2 {
                replace = Some(a[2..].to_string());
                i += 1;
            } else if a == "--" {
                i += 1;
                break;
            } else if a.starts_with('-') {
                return Err(format!("xargs {a} is not analysed"));
            } else {
                break;
            }
        }
        let mut inner: Vec<Arg> = args.get(i..).unwrap_or(&[]).to_vec();
        if inner.is_empty() {
            return Ok(());
        }
        match &replace {
            Some(r) => {
                for a in inner.iter_mut().skip(1) {
                    if let Arg::Lit(s) = a
                        && let Some(at) = s.find(r.as_str())
                    {
                        *a = Arg::Opaque {
                            prefix: s[..at].to_string(),
                        };
                    }
                }
            }
            None => inner.push(Arg::Many {
                prefix: String::new(),
            }),
        }
        self.argv(&inner, depth + 1)
    }

    /// `test`/`[` decide at run time how to group their arguments, by
    /// count (POSIX); with up to four the grouping is fixed, so unknown
    /// operands are fine where they cannot be operators. More than four
    /// need every argument literal.
    fn test(&mut self, a: &[Arg]) -> R<()> {
        if a.iter().any(|x| matches!(x, Arg::Many { .. })) {
            return Err("test gets arguments computed at run time".into());
        }
        let is = |x: &Arg, s: &str| x.lit() == Some(s);
        match a.len() {
            0 | 1 => Ok(()),
            2 if is(&a[0], "!") => Ok(()),
            2 => self.test_unary(&a[0], &a[1]),
            3 if a[1].lit().is_some_and(is_test_binary) => self.test_binary(&a[0], &a[1], &a[2]),
            3 if is(&a[0], "!") => self.test(&a[1..]),
            3 if is(&a[0], "(") && is(&a[2], ")") => Ok(()),
            4 if is(&a[0], "!") => self.test(&a[1..]),
            4 if is(&a[0], "(") && is(&a[3], ")") => self.test(&a[1..3]),
            n if n <= 4 => {
                Err("a test whose grouping depends on values computed at run time".into())
            }
            _ => {
                if a.iter().any(|x| x.lit().is_none()) {
                    return Err("a long test with values computed at run time".into());
                }
                // Every literal that is a unary file operator reads its operand.
                for (i, x) in a.iter().enumerate() {
                    let s = x.lit().unwrap_or("");
                    if matches!(s, "-v" | "-R") {
                        return Err(format!("test {s} evaluates a variable subscript"));
                    }
                    if is_file_test(s)
                        && let Some(next) = a.get(i + 1)
                    {
                        self.read(next, false, "test")?;
                    }
                    if matches!(s, "-nt" | "-ot" | "-ef") {
                        if let Some(prev) = i.checked_sub(1).and_then(|j| a.get(j)) {
                            self.read(prev, false, "test")?;
                        }
                        if let Some(next) = a.get(i + 1) {
                            self.read(next, false, "test")?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn test_unary(&mut self, op: &Arg, x: &Arg) -> R<()> {
        let Some(op) = op.lit() else {
            return Err("a test whose operator is computed at run time".into());
        };
        match op {
            "-n" | "-z" | "-o" | "-t" => Ok(()),
            "-v" | "-R" => Err(format!("test {op} evaluates a variable subscript")),
            o if is_file_test(o) => self.read(x, false, "test"),
            // Two words that are not an operator: bash reports an error.
            o if !o.starts_with('-') => Ok(()),
            o => Err(format!("test {o} is not analysed")),
        }
    }

    fn test_binary(&mut self, a: &Arg, op: &Arg, b: &Arg) -> R<()> {
        match op.lit().unwrap_or("") {
            "-nt" | "-ot" | "-ef" => {
                self.read(a, false, "test")?;
                self.read(b, false, "test")
            }
            _ => Ok(()),
        }
    }

    /// `[[ … ]]`: operators are syntax, so values never become operators;
    /// but `-v` evaluates a subscript and arithmetic comparisons evaluate
    /// their operands as expressions.
    fn double_test(&mut self, toks: &[TestArg]) -> R<()> {
        for (i, t) in toks.iter().enumerate() {
            let TestArg::Op(op) = t else { continue };
            match op.as_str() {
                "-v" | "-R" => return Err(format!("[[ {op} ]] evaluates a variable subscript")),
                "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                    for j in [i.wrapping_sub(1), i + 1] {
                        match toks.get(j) {
                            Some(TestArg::Val(Arg::Lit(s))) if is_signed_number(s.trim()) => {}
                            _ => {
                                return Err(format!(
                                    "[[ {op} ]] evaluates an operand that is not a literal number"
                                ));
                            }
                        }
                    }
                }
                "-nt" | "-ot" | "-ef" => {
                    for j in [i.wrapping_sub(1), i + 1] {
                        if let Some(TestArg::Val(v)) = toks.get(j) {
                            self.read(v, false, "[[")?;
                        }
                    }
                }
                o if is_file_test(o) => {
                    if let Some(TestArg::Val(v)) = toks.get(i + 1) {
                        self.read(v, false, "[[")?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_signed_number(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    !t.is_empty() && t.chars().all(|c| c.is_ascii_digit())
}

fn is_file_test(op: &str) -> bool {
    matches!(
        op,
        "-a" | "-b"
            | "-c"
            | "-d"
            | "-e"
            | "-f"
            | "-g"
            | "-h"
            | "-k"
            | "-p"
            | "-r"
            | "-s"
            | "-u"
            | "-w"
            | "-x"
            | "-G"
            | "-L"
            | "-N"
            | "-O"
            | "-S"
    )
}

fn is_test_binary(op: &str) -> bool {
    matches!(
        op,
        "=" | "=="
            | "!="
            | "<"
            | ">"
            | "-eq"
            | "-ne"
            | "-lt"
            | "-le"
            | "-gt"
            | "-ge"
            | "-nt"
            | "-ot"
            | "-ef"
            | "-a"
            | "-o"
    )
}

/// `printf [--] FORMAT [ARGS]`: `-v` assigns (and evaluates a subscript);
/// a format computed at run time could be `-v…`.
fn printf(args: &[Arg]) -> R<()> {
    let rest = match args.first() {
        Some(Arg::Lit(a)) if a == "--" => &args[1..],
        Some(Arg::Lit(a)) if a.starts_with('-') => {
            return Err(format!("printf {a} is not analysed"));
        }
        _ => args,
    };
    match rest.first() {
        None => Ok(()),
        Some(f) if f.may_be_flag() && f.lit().is_none() => {
            Err("printf with a format computed at run time".into())
        }
        Some(Arg::Many { .. }) => Err("printf with a format computed at run time".into()),
        Some(_) => Ok(()),
    }
}

/// `ps`: UNIX options (`-ef`, `-o pid,cmd`) and BSD letters (`aux`), but
/// not BSD `e`, which prints every process's environment.
fn ps(args: &[Arg]) -> R<()> {
    let mut i = 0;
    while i < args.len() {
        let Some(a) = args[i].lit() else {
            return Err("ps with an argument computed at run time".into());
        };
        i += 1;
        if let Some(f) = a.strip_prefix("--") {
            match f.split('=').next().unwrap_or("") {
                "sort" | "format" | "pid" | "ppid" | "user" | "group" | "cols" | "columns"
                | "width" | "lines" | "rows" => {
                    if !f.contains('=') {
                        i += 1;
                    }
                }
                "forest" | "headers" | "no-headers" | "cumulative" | "help" | "version" => {}
                other => return Err(format!("ps --{other} is not analysed")),
            }
        } else if let Some(f) = a.strip_prefix('-') {
            for (k, c) in f.char_indices() {
                match c {
                    'A' | 'a' | 'd' | 'e' | 'f' | 'F' | 'H' | 'j' | 'l' | 'L' | 'M' | 'N' | 'T'
                    | 'w' | 'x' | 'y' | 'c' | 'P' => {}
                    'o' | 'O' | 'p' | 'u' | 'U' | 'g' | 'G' | 'C' | 't' | 's' | 'q' => {
                        if k + 1 == f.len() {
                            i += 1;
                        }
                        break;
                    }
                    other => return Err(format!("ps -{other} is not analysed")),
                }
            }
        } else if a.chars().all(|c| "auxwfjlsvrTmcnhSH".contains(c)) {
        } else {
            return Err(format!(
                "ps {a} is not analysed (BSD `e` prints environments)"
            ));
        }
    }
    Ok(())
}

/// `read [-r] [-s] [-d D] [-n N] [-t T] [-p P] [-u FD] NAME…`; `-a` (and
/// any name bash reads itself) is refused.
fn read_builtin(args: &[Arg]) -> R<()> {
    let mut i = 0;
    while i < args.len() {
        let Some(a) = args[i].lit() else {
            return Err("read with an argument computed at run time".into());
        };
        i += 1;
        if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            for (k, c) in flags.char_indices() {
                match c {
                    'r' | 's' | 'e' => {}
                    'd' | 'n' | 'N' | 't' | 'p' | 'u' | 'i' => {
                        if k + 1 == flags.len() {
                            i += 1;
                        }
                        break;
                    }
                    other => return Err(format!("read -{other} is not analysed")),
                }
            }
            continue;
        }
        if !super::syntax::is_name(a) {
            return Err(format!("read into {a:?}"));
        }
    }
    Ok(())
}

/// `set` with the options scripts use for safety; the rest (`-f`, `-k`,
/// `-a`, `-o posix`, `--` …) change how later words expand or run.
fn set(args: &[Arg]) -> R<()> {
    let mut i = 0;
    while i < args.len() {
        let Some(a) = args[i].lit() else {
            return Err("set with values computed at run time".into());
        };
        let body = a
            .strip_prefix('-')
            .or_else(|| a.strip_prefix('+'))
            .filter(|b| !b.is_empty())
            .ok_or_else(|| format!("set {a} is not analysed"))?;
        for c in body.chars() {
            match c {
                'e' | 'u' | 'x' | 'v' | 'C' => {}
                'o' => {
                    i += 1;
                    match args.get(i).and_then(Arg::lit) {
                        Some(
                            "pipefail" | "errexit" | "nounset" | "xtrace" | "verbose" | "noclobber",
                        ) => {}
                        other => {
                            return Err(format!("set -o {} is not analysed", other.unwrap_or("")));
                        }
                    }
                }
                other => return Err(format!("set -{other} is not analysed")),
            }
        }
        i += 1;
    }
    Ok(())
}

/// Program-specific rules the option table cannot say.
fn extra(name: &str, p: &spec::Parsed) -> R<()> {
    match name {
        // `date MMDDhhmm` sets the clock; only `+FORMAT` is read-only.
        "date" => match p.operands.first() {
            Some(Arg::Lit(f)) if f.starts_with('+') => Ok(()),
            None => Ok(()),
            Some(o) => Err(format!("date {} sets the clock", o.show())),
        },
        _ => Ok(()),
    }
}
