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
    ///
    /// Kept across decisions, and used again while the path it was found
    /// at still leads to the same existing file (a link re-pointed on the
    /// way is seen). A file since planted in an earlier entry is not
    /// looked for here: an entry the model can write is checked every
    /// decision by the PATH check (`decide::path_hazard`), and the
    /// others are the system's.
    fn locate(&self, name: &str, dir: &Path) -> R<Option<PathBuf>> {
        let path_var = self.env.path_str();
        let relative = path_var.split(':').any(|e| !e.starts_with('/'));
        let key = if relative {
            format!("{}\0{name}\0{path_var}", dir.display())
        } else {
            format!("{name}\0{path_var}")
        };
        crate::policy::memo::remember("program-file", &key, || {
            let kept = FOUND.with(|f| f.borrow().get(&key).cloned());
            match kept {
                Some(None) => return Ok(None),
                Some(Some((candidate, real)))
                    if path::resolve_found(dir, &candidate) == Some((real.clone(), true)) =>
                {
                    return Ok(Some(real));
                }
                _ => {}
            }
            let found = search(path_var, name, dir)?;
            FOUND.with(|f| {
                let mut f = f.borrow_mut();
                if f.len() >= KEPT {
                    f.clear();
                }
                f.insert(key.clone(), found.clone());
            });
            Ok(found.map(|(_, real)| real))
        })
    }
}

/// Entries kept across decisions, per table.
const KEPT: usize = 512;

/// What PATH found for a name: the path as found and the file.
type Found = Option<(String, PathBuf)>;

// Thread-local because every bare program name searches PATH and reads
// the file it finds; kept across decisions (each use re-checks where a
// name leads, see `locate` and `kind`), where threading a table through
// the checks would touch every one of them.
thread_local! {
    static FOUND: std::cell::RefCell<std::collections::HashMap<String, Found>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
    static KINDS: std::cell::RefCell<std::collections::HashMap<PathBuf, Kind>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Bash's search of `path_var` for `name`.
fn search(path_var: &str, name: &str, dir: &Path) -> R<Found> {
    for entry in path_var.split(':') {
        let entry = if entry.is_empty() { "." } else { entry };
        let full = format!("{entry}/{name}");
        let real = path::resolve(dir, &full)
            .ok_or_else(|| format!("{full}, where PATH could find {name}, cannot be resolved"))?;
        if is_executable(&real) {
            return Ok(Some((full, real)));
        }
    }
    Ok(None)
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

/// Reads the start of an executable file, kept across decisions by its
/// path: a file the model could change (in the working directories or a
/// temporary one) asks whatever it holds, the others are the system's.
fn kind(real: &Path) -> Kind {
    if let Some(k) = KINDS.with(|k| k.borrow().get(real).cloned()) {
        return k;
    }
    let k = read_kind(real);
    KINDS.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= KEPT {
            m.clear();
        }
        m.insert(real.to_path_buf(), k.clone());
    });
    k
}

fn read_kind(real: &Path) -> Kind {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::CommandEnv;
    use crate::policy::bash::check::Effects;

    /// Names the checker handles itself rather than through the table.
    const OWN: &[&str] = &[
        "echo",
        "printf",
        "test",
        "[",
        "cd",
        "read",
        "hash",
        "set",
        "command",
        "builtin",
        "exec",
        "time",
        "nohup",
        "nice",
        "timeout",
        "stdbuf",
        "env",
        "xargs",
        "find",
        "git",
        "sed",
        "awk",
        "mawk",
        "gawk",
        "nawk",
        "original-awk",
        "jq",
        "ps",
    ];

    /// Every program tern allows that is installed here resolves to a
    /// file whose name still has a spec (Debian's alternatives, `which
    /// → which.debianutils`, `strings → x86_64-linux-gnu-strings`, `awk
    /// → mawk`), and no installed script is left unknown.
    #[test]
    fn every_allowed_program_installed_here_keeps_its_spec() {
        let env = CommandEnv::inherited();
        let names = super::super::super::programs::PROGRAMS
            .iter()
            .flat_map(|p| p.names.iter().copied())
            .chain(OWN.iter().copied());
        let mut eff = Effects::default();
        let mut c = Checker::new(&mut eff, &env);
        c.cwd = Some(Path::new("/").into());
        let mut seen = 0;
        for name in names {
            let found = c.locate(name, Path::new("/")).unwrap();
            if found.is_none() {
                continue;
            }
            seen += 1;
            let judged = c
                .judge(name, false)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                super::super::super::spec::lookup(&judged.name).is_some()
                    || OWN.contains(&judged.name.as_str()),
                "{name} runs {:?}, judged as {}, which has no spec",
                judged.real,
                judged.name
            );
        }
        assert!(seen > 20, "only {seen} of the programs are installed");
    }

    /// What PATH found is kept across decisions only while the path it
    /// was found at leads to the same file: a link re-pointed on the way
    /// (here one the PATH entry's file goes through) is seen.
    #[test]
    fn a_kept_lookup_sees_a_link_repointed() {
        let (Some(cat), Some(sh)) = (
            search("/usr/bin:/bin", "cat", Path::new("/")).unwrap(),
            search("/usr/bin:/bin", "sh", Path::new("/")).unwrap(),
        ) else {
            return;
        };
        let d = std::env::temp_dir().join(format!(
            "tern-kept-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::os::unix::fs::symlink(&cat.1, d.join("l")).unwrap();
        std::os::unix::fs::symlink(d.join("l"), d.join("bin/tool")).unwrap();
        let env = CommandEnv::new(vec![("PATH".into(), d.join("bin").into())]);
        let mut eff = Effects::default();
        let c = Checker::new(&mut eff, &env);
        assert_eq!(c.locate("tool", &d).unwrap(), Some(cat.1.clone()));
        std::fs::remove_file(d.join("l")).unwrap();
        std::os::unix::fs::symlink(&sh.1, d.join("l")).unwrap();
        assert_eq!(c.locate("tool", &d).unwrap(), Some(sh.1));
        std::fs::remove_file(d.join("bin/tool")).unwrap();
        assert_eq!(c.locate("tool", &d).unwrap(), None);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn real_names_map_to_their_spec() {
        assert_eq!(alias("which.debianutils"), "which");
        assert_eq!(alias("x86_64-linux-gnu-strings"), "strings");
        assert_eq!(alias("aarch64-linux-gnu-strings"), "strings");
        assert_eq!(alias("evil-strings"), "evil-strings");
        assert_eq!(alias("mawk"), "mawk");
    }
}
