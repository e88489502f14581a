//! Builtins that are read-only only in some forms: `printf` (not `-v`),
//! `ps`, `read` (into plain names), `set` (options that only show).

use super::super::plan::Arg;
use super::R;

/// `printf [--] FORMAT [ARGS]`: `-v` assigns (and evaluates a subscript);
/// a format computed at run time could be `-v…`.
pub(super) fn printf(args: &[Arg]) -> R<()> {
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
pub(super) fn ps(args: &[Arg]) -> R<()> {
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
pub(super) fn read_builtin(args: &[Arg]) -> R<()> {
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
        if !super::super::syntax::is_name(a) {
            return Err(format!("read into {a:?}"));
        }
    }
    Ok(())
}

/// `set` with the options scripts use for safety; the rest (`-f`, `-k`,
/// `-a`, `-o posix`, `--` …) change how later words expand or run.
pub(super) fn set(args: &[Arg]) -> R<()> {
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
