//! jq: the command line as jq reads it, then the filter.
//!
//! jq runs no programs and writes no files; what it reads beyond its
//! inputs is named on the command line (`--rawfile`, `--slurpfile`, read
//! as paths here; `-f`, `-L`, `--run-tests` ask) or by the filter's
//! module directives (`import`, `include`) and `modulemeta`, which ask.
//! `input_filename`, `$__loc__`, `$ENV`, `input`/`inputs` (the named
//! inputs) and everything else only compute.
//!
//! The filter is not tokenized: a word among those is refused wherever it
//! stands, strings and comments included. jq versions disagree on where
//! a comment ends (1.7 continues one after a backslash), and a list of
//! words matched everywhere cannot be hidden by any such difference; no
//! jq construct reaches a module without writing one of them.

use super::{R, lit};
use crate::policy::bash::check::Checker;
use crate::policy::bash::plan::Arg;

/// Words in a filter that load files the command line does not name.
const LOADS: &[&str] = &["import", "include", "modulemeta", "get_search_list"];

/// `jq [options] filter [file…]`: options anywhere (jq reads every
/// argument that starts with `-` as one until `--`); the first other
/// argument is the filter, the rest are input files — or, after `--args`
/// or `--jsonargs`, strings that are not read.
pub(crate) fn jq(c: &mut Checker, args: &[Arg]) -> R<()> {
    let mut i = 0;
    let mut filter: Option<String> = None;
    let mut files = Vec::new();
    let mut strings = false;
    let mut done = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if done || !a.may_be_flag() || a.lit() == Some("-") {
            if filter.is_none() {
                filter = Some(lit("jq", a)?.to_string());
            } else if !strings {
                files.push(a.clone());
            }
            continue;
        }
        let s = lit("jq", a)?;
        let mut value = |n: usize| -> R<&[Arg]> {
            let v = args
                .get(i..i + n)
                .ok_or_else(|| format!("jq {s} needs {n} values"))?;
            i += n;
            Ok(v)
        };
        match s {
            "--" => done = true,
            "--arg" | "--argjson" => {
                value(2)?;
            }
            "--slurpfile" | "--rawfile" => {
                let v = value(2)?;
                c.read(&v[1], false, "jq")?;
            }
            "--indent" => {
                value(1)?;
            }
            "--args" | "--jsonargs" => strings = true,
            "--null-input"
            | "--raw-output"
            | "--join-output"
            | "--ascii-output"
            | "--compact-output"
            | "--color-output"
            | "--monochrome-output"
            | "--sort-keys"
            | "--slurp"
            | "--exit-status"
            | "--tab"
            | "--seq"
            | "--stream"
            | "--raw-input"
            | "--unbuffered"
            | "--help"
            | "--version"
            | "--raw-output0"
            | "--stream-errors"
            | "--binary"
            | "--nul-output"
            | "--build-configuration" => {}
            "-f" | "--from-file" => return Err("jq -f reads its program from a file".into()),
            s if s.starts_with("-L") || s.starts_with("--library-path") => {
                return Err("jq -L loads modules from a directory".into());
            }
            s if s.starts_with("--") => return Err(format!("jq {s} is not analysed")),
            s => {
                for ch in s.chars().skip(1) {
                    if !"nrjacCMSseRhVb0".contains(ch) {
                        return Err(format!("jq -{ch} is not analysed"));
                    }
                }
            }
        }
    }
    filter_loads(&filter.ok_or("jq without a filter")?)?;
    for a in &files {
        c.read(a, false, "jq")?;
    }
    Ok(())
}

/// A filter that names a module directive or a module reader, anywhere.
pub(crate) fn filter_loads(f: &str) -> R<()> {
    for word in f.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')) {
        if LOADS.contains(&word) {
            return Err(format!(
                "jq {word} loads files the command line does not name"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The paths a jq command line reads, or why it asks.
    fn reads(cmd: &str) -> Result<Vec<String>, String> {
        let dir = std::env::temp_dir();
        let a = crate::policy::bash::analyse(cmd, &dir);
        let p = a.planned?;
        let eff = p.commands[0].verdict.clone()?;
        Ok(eff.reads.iter().map(|r| r.shown.clone()).collect())
    }

    /// Random command lines never make the reader panic.
    #[test]
    fn never_panics() {
        const WORDS: &[&str] = &[
            "-n",
            "-r",
            "-nr",
            "-f",
            "-L",
            "-Lx",
            "--args",
            "--jsonargs",
            "--",
            "--arg",
            "--argjson",
            "--rawfile",
            "--slurpfile",
            "--indent",
            "x",
            ".",
            "'$x'",
            "a.json",
            "-",
            "$y",
            "'import \"a\" as a; .'",
            "--tab",
            "-e",
        ];
        let dir = std::env::temp_dir();
        let mut rng = fastrand::Rng::with_seed(13);
        for _ in 0..3000 {
            let n = rng.usize(0..8);
            let words: Vec<&str> = (0..n).map(|_| WORDS[rng.usize(..WORDS.len())]).collect();
            let _ = crate::policy::bash::analyse(&format!("jq {}", words.join(" ")), &dir);
        }
    }

    /// Regression (issue 33): options after `--args` are still options,
    /// and `--rawfile`'s file is read.
    #[test]
    fn options_after_args_are_read() {
        assert_eq!(
            reads("jq -n --args '$x' --rawfile x /etc/passwd"),
            Ok(vec!["/etc/passwd".to_string()])
        );
        assert_eq!(
            reads("jq -n '$x' --args a b --slurpfile x /etc/passwd"),
            Ok(vec!["/etc/passwd".to_string()])
        );
        // After `--args` the other operands are strings; after `--` every
        // argument is an operand.
        assert_eq!(reads("jq -n '$ARGS' --args a.json b.json"), Ok(vec![]));
        assert_eq!(reads("jq . -- -r.json"), Ok(vec!["-r.json".to_string()]));
        assert!(reads("jq -n --args . -L /tmp").is_err());
        assert!(reads("jq -nf prog.jq").is_err());
        assert!(reads("jq -n 'include \"x\"; 1'").is_err());
        assert!(reads("jq -n '1 # a comment \\\n | modulemeta'").is_err());
        assert!(reads("jq -n '$__loc__, input_filename'").is_ok());
    }
}
