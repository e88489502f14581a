//! Is each command of a plan read-only, and what does it read?
//!
//! Builtins and wrappers are handled here (`echo`, `printf`, `test`/`[`,
//! `[[ ]]`, `cd`, `set`, `command`, `exec`, `env`, `timeout`, `nice`,
//! `nohup`, `time`, `stdbuf`, `xargs`); `find`, `git`, `sed`, `awk` and
//! `jq` have their own readers; every other program is looked up in the
//! spec table. A wrapper is unwrapped to the program it runs, which must
//! itself be read-only. A program is judged by the file it runs
//! ([`program`]): builtins only where bash runs the command itself,
//! `PATH` and links followed to the real file otherwise. Anything not
//! recognised is not read-only, and the error says which part.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::env;
use super::path;
use super::plan::{Arg, Redir, Step};
use super::spec::{self, Operands, Val};
use super::syntax::RedirOp;

mod builtins;
mod links;
mod program;
mod test_expr;
mod wrappers;

use builtins::{printf, ps, read_builtin, set};

/// A path a read-only command opens (or lists, or stats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Read {
    pub path: PathBuf,
    /// The whole tree below a directory is read (grep -r, rg).
    pub recursive: bool,
    /// As written, for messages.
    pub shown: String,
    /// git reading its repository as a whole (its top, or every file):
    /// the session's own repository may lie above the working directory
    /// (tern started in a subfolder), and reading it is then no read of
    /// another project.
    pub repo: bool,
}

/// What a read-only plan touches.
#[derive(Debug, Clone, Default)]
pub(crate) struct Effects {
    pub reads: Vec<Read>,
    /// The files programs run from, resolved: named by a path, found on
    /// PATH, a script's interpreter.
    pub execs: Vec<PathBuf>,
    /// Programs named bare, and those a known script starts by name
    /// (looked up on PATH from `.1`).
    pub bare: Vec<(String, Rc<Path>)>,
    /// Directories in which git runs (their repository is checked).
    pub git: Vec<PathBuf>,
}

type R<T> = Result<T, String>;

/// Shell builtins: found before PATH is searched, where bash runs the
/// command itself (not under `nice`, `env`, `exec` …).
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
    /// The environment the command starts with.
    env: &'a crate::policy::CommandEnv,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(eff: &'a mut Effects, env: &'a crate::policy::CommandEnv) -> Checker<'a> {
        Checker {
            eff,
            cwd: None,
            env,
        }
    }

    /// The value of `name` in the command's environment.
    pub(crate) fn env_var(&self, name: &str) -> Option<&std::ffi::OsStr> {
        self.env.get(name)
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
        let harmless_out = |a: &Arg| a.lit().is_some_and(harmless_output);
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
        let r = self.exec(argv, depth);
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
                    repo: false,
                    path: p,
                    recursive,
                    shown: s.clone(),
                });
                Ok(())
            }
            Arg::Fd => Ok(()),
            Arg::Under(d) => {
                self.eff.reads.push(Read {
                    repo: false,
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

    /// A command bash runs itself: a builtin's name is the builtin.
    fn argv(&mut self, argv: &[Arg], depth: usize) -> R<()> {
        self.command_at(argv, depth, true)
    }

    /// A command a program starts with exec (`nice`, `env`, `xargs` …):
    /// every name is looked up on PATH.
    fn exec(&mut self, argv: &[Arg], depth: usize) -> R<()> {
        self.command_at(argv, depth, false)
    }

    fn command_at(&mut self, argv: &[Arg], depth: usize, shell: bool) -> R<()> {
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
        let judged = self.judge(program, shell)?;
        let r = self.run_as(&judged.name, &argv[1..], depth);
        match judged.real {
            Some(real) => r.map_err(|e| format!("{program} runs {}: {e}", real.display())),
            None => r,
        }
    }

    /// `args` given to the program `name` (its real name, or the builtin).
    fn run_as(&mut self, name: &str, args: &[Arg], depth: usize) -> R<()> {
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
                Some("--") => self.exec(&args[1..], depth + 1),
                _ => self.exec(args, depth + 1),
            },
            "time" => {
                let rest = match args.first().and_then(Arg::lit) {
                    Some("-p") => &args[1..],
                    _ => args,
                };
                self.argv(rest, depth + 1)
            }
            "nohup" => self.exec(args, depth + 1),
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
        let follows = extra(name, &parsed)?;
        // Options read from the environment's files: an rg config can add
        // `--pre` (a program per file) or `-L`.
        for (prog, var, off) in OPTION_FILES {
            if name == *prog && self.env_var(var).is_some() && !parsed.has(off) {
                return Err(format!(
                    "{name} takes options from {var} (set in the environment), which tern does not read"
                ));
            }
        }
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
        let first = self.eff.reads.len();
        self.operands(name, c, &parsed, recursive)?;
        if follows {
            let roots: Vec<PathBuf> = self.eff.reads[first..]
                .iter()
                .map(|r| r.path.clone())
                .collect();
            for r in roots {
                self.through_links(&r, name)?;
            }
        }
        Ok(())
    }

    /// Records what the operands of `name` read.
    fn operands(
        &mut self,
        name: &str,
        c: &spec::Compiled,
        parsed: &spec::Parsed,
        recursive: bool,
    ) -> R<()> {
        let prog = c.prog;
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
}

/// Output targets that write nothing anyone reads back: the command's own
/// stdout and stderr, and /dev/null.
pub(crate) fn harmless_output(t: &str) -> bool {
    matches!(
        t,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2"
    )
}

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Variables that make a program read more options (the program, the
/// variable, the option that turns it off or "" for none).
const OPTION_FILES: &[(&str, &str, &str)] = &[
    ("rg", "RIPGREP_CONFIG_PATH", "--no-config"),
    ("grep", "GREP_OPTIONS", ""),
    ("egrep", "GREP_OPTIONS", ""),
    ("fgrep", "GREP_OPTIONS", ""),
];

/// Program-specific rules the option table cannot say. Ok(true): it
/// follows the links it meets in the trees it reads.
fn extra(name: &str, p: &spec::Parsed) -> R<bool> {
    match name {
        // -L makes -R descend into every link to a directory it meets.
        "ls" | "dir" | "vdir" => {
            Ok(p.has_any(&["-R", "--recursive"]) && p.has_any(&["-L", "--dereference"]))
        }
        // GNU diff follows the links it meets while recursing.
        "diff" => Ok(p.has_any(&["-r", "--recursive"]) && !p.has("--no-dereference")),
        // binutils reads an argument `@FILE` as more arguments from FILE
        // (after `--` and as an option's value too).
        "strings" => {
            let at = |a: &Arg| match a {
                Arg::Lit(s) => s.starts_with('@'),
                Arg::Opaque { prefix } | Arg::Many { prefix } => {
                    prefix.is_empty() || prefix.starts_with('@')
                }
                Arg::Fd | Arg::Under(_) => false,
            };
            match p
                .operands
                .iter()
                .chain(p.opts.iter().filter_map(|(_, v)| v.as_ref()))
                .find(|a| at(a))
            {
                Some(a) => Err(format!(
                    "strings reads {} as a file of more arguments",
                    a.show()
                )),
                None => Ok(false),
            }
        }
        // `date MMDDhhmm` sets the clock; only `+FORMAT` is read-only.
        "date" => match p.operands.first() {
            Some(Arg::Lit(f)) if f.starts_with('+') => Ok(false),
            None => Ok(false),
            Some(o) => Err(format!("date {} sets the clock", o.show())),
        },
        _ => Ok(false),
    }
}
