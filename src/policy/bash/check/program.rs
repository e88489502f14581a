//! Which file a command runs, so that it is judged by what the kernel
//! will execute rather than by the name it was written with: a project
//! link `tools/echo → /bin/sh` is sh, not echo.
//!
//! The name is resolved as bash resolves it: a builtin first, but only
//! where the shell itself runs the command (plain position, `command`,
//! `builtin`, `time`; functions cannot be defined in a line tern
//! allows); under a program that execs its operand (`nice`, `timeout`,
//! `env`, `exec`, `xargs`, `find -exec` …) a builtin's name is looked up
//! on `PATH` like any other. A bare name is looked up on the `PATH` of
//! the command's environment, a name with `/` from the command's
//! directory; either is followed through every link to the file, and
//! that file's own name picks the spec. Multi-call binaries (busybox,
//! toybox, a single-binary coreutils) dispatch on `argv[0]`, so for them
//! the written name is what runs. A file that is a script runs programs
//! of its own: only scripts listed here, with the programs they start by
//! name, are judged; each of those is looked up on `PATH` like a bare
//! command name.

use std::path::{Path, PathBuf};

use super::super::path;
use super::{BUILTINS, Checker, R, is_executable};

/// Binaries that pick what to do from the name they were started by.
const MULTI_CALL: &[&str] = &["busybox", "toybox", "coreutils"];

/// Real file names that are another name's program (Debian's
/// alternatives and packaging).
const ALIASES: &[(&str, &str)] = &[("which.debianutils", "which")];

/// Programs that are scripts on some systems (or start others by name
/// wherever they are), with the programs they start by name. A script
/// not listed asks: what it runs is not known.
const STARTS: &[(&str, &[&str])] = &[
    // grep 3.8+: `exec grep -E "$@"`.
    ("egrep", &["grep"]),
    ("fgrep", &["grep"]),
    // debianutils: POSIX sh builtins only.
    ("which", &[]),
];

/// What a command name turned out to run.
pub(super) struct Judged {
    /// The name whose spec judges it.
    pub name: String,
    /// The file, when its name is not the one written (for messages).
    pub real: Option<PathBuf>,
}

/// What the first bytes of an executable file say it is.
#[derive(Clone, Debug)]
enum Kind {
    Binary,
    /// `#!` with the interpreter and its one argument.
    Script(PathBuf, Option<String>),
    /// Neither: bash runs it as a shell script of its own.
    Shell,
}

impl Checker<'_> {
    /// Resolves `program` (as written, `argv[0]`) to the name it is
    /// judged by, recording the file it runs (`execs`, checked to be one
    /// the model cannot have written), bare names for the PATH check, and
    /// the programs a known script starts by name. `shell`: bash itself
    /// runs it, so a builtin's name is the builtin.
    pub(super) fn judge(&mut self, program: &str, shell: bool) -> R<Judged> {
        let written = program.rsplit('/').next().unwrap_or(program);
        let bare = !program.contains('/');
        if shell && bare && BUILTINS.contains(&written) {
            return Ok(Judged {
                name: written.to_string(),
                real: None,
            });
        }
        let dir = self.dir()?.to_path_buf();
        let file = if bare {
            self.eff
                .bare
                .push((program.to_string(), dir.as_path().into()));
            self.locate(program, &dir)?
        } else {
            let p = path::resolve(&dir, program).ok_or_else(|| {
                format!(
                    "{program} cannot be resolved (a loop of links, .. after a missing directory, or /proc's per-process links)"
                )
            })?;
            self.eff.execs.push(p.clone());
            is_executable(&p).then_some(p)
        };
        // Nothing runs ("command not found", "Permission denied"): the
        // written name stands, its spec is the strictest reading.
        let Some(real) = file else {
            return Ok(Judged {
                name: written.to_string(),
                real: None,
            });
        };
        if bare {
            self.eff.execs.push(real.clone());
        }
        let real_name = real
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{program} runs {}, a name tern cannot read", real.display()))?;
        let name = if MULTI_CALL.contains(&real_name) {
            written
        } else {
            alias(real_name)
        };
        let known = STARTS.iter().find(|(n, _)| *n == name);
        if let Some((_, helpers)) = known {
            for h in *helpers {
                self.eff.bare.push(((*h).to_string(), dir.as_path().into()));
            }
        }
        match kind(&real) {
            Kind::Binary => {}
            Kind::Script(interpreter, arg) => {
                if known.is_none() {
                    return Err(format!(
                        "{program} runs {}, a script: what it starts is not known",
                        real.display()
                    ));
                }
                // `#!/usr/bin/env NAME` looks NAME up on PATH.
                if interpreter.file_name().is_some_and(|n| n == "env") {
                    match arg {
                        Some(a) if !a.starts_with('-') => {
                            self.eff.bare.push((a, dir.as_path().into()));
                        }
                        _ => {
                            return Err(format!(
                                "{program} runs {}, a script whose interpreter is not known",
                                real.display()
                            ));
                        }
                    }
                }
                self.eff.execs.push(interpreter);
            }
            Kind::Shell => {
                return Err(format!(
                    "{program} runs {}, which bash would run as a shell script",
                    real.display()
                ));
            }
        }
        Ok(Judged {
            name: name.to_string(),
            real: (name != written).then_some(real),
        })
    }

    /// The file bash runs for a bare name: the first executable regular
    /// file named so in a `PATH` entry (an empty entry is the directory
    /// itself), resolved through its links. None: nothing is found.
    fn locate(&self, name: &str, dir: &Path) -> R<Option<PathBuf>> {
        let path_var = self.env.path_str();
        let relative = path_var.split(':').any(|e| !e.starts_with('/'));
        let key = if relative {
            format!("{}\0{name}\0{path_var}", dir.display())
        } else {
            format!("{name}\0{path_var}")
        };
        crate::policy::memo::remember("program-file", &key, || {
            for entry in path_var.split(':') {
                let entry = if entry.is_empty() { "." } else { entry };
                let full = format!("{entry}/{name}");
                let real = path::resolve(dir, &full).ok_or_else(|| {
                    format!("{full}, where PATH could find {name}, cannot be resolved")
                })?;
                if is_executable(&real) {
                    return Ok(Some(real));
                }
            }
            Ok(None)
        })
    }
}

/// The spec name of a program's real file name.
fn alias(real: &str) -> &str {
    if let Some((_, n)) = ALIASES.iter().find(|(r, _)| *r == real) {
        return n;
    }
    // binutils installs `strings` as `<target triplet>-strings`.
    if let Some(prefix) = real.strip_suffix("-strings")
        && prefix.contains("-linux-")
    {
        return "strings";
    }
    real
}

/// Reads the start of an executable file, once per decision.
fn kind(real: &Path) -> Kind {
    crate::policy::memo::remember_path("program-kind", real, || {
        use std::io::Read;
        let mut head = [0u8; 256];
        let n = std::fs::File::open(real)
            .and_then(|mut f| f.read(&mut head))
            .unwrap_or(0);
        let head = &head[..n];
        if head.starts_with(b"\x7fELF") {
            return Kind::Binary;
        }
        let Some(rest) = head.strip_prefix(b"#!") else {
            return Kind::Shell;
        };
        // The kernel splits the line at the first blank: the interpreter
        // and at most one argument.
        let line = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
        let Ok(line) = std::str::from_utf8(line) else {
            return Kind::Shell;
        };
        let line = line.trim_matches([' ', '\t', '\r']);
        let (interp, arg) = match line.split_once([' ', '\t']) {
            Some((i, a)) => (i, Some(a.trim_matches([' ', '\t']).to_string())),
            None => (line, None),
        };
        if interp.starts_with('/') {
            Kind::Script(PathBuf::from(interp), arg.filter(|a| !a.is_empty()))
        } else {
            Kind::Shell
        }
    })
}
