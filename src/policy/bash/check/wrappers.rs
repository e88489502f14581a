//! Wrappers that run another program (`command`, `nice`, `timeout`,
//! `stdbuf`, `env`, `xargs`): each is unwrapped to the program it runs,
//! which is then checked as if it stood alone.

use super::super::env;
use super::super::plan::Arg;
use super::test_expr::is_signed_number;
use super::{Checker, R};

impl Checker<'_> {
    pub(super) fn command(&mut self, args: &[Arg], depth: usize) -> R<()> {
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

    pub(super) fn nice(&mut self, args: &[Arg], depth: usize) -> R<()> {
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
        self.exec(args.get(i..).unwrap_or(&[]), depth + 1)
    }

    pub(super) fn timeout(&mut self, args: &[Arg], depth: usize) -> R<()> {
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
            Some(Arg::Lit(_)) => self.exec(args.get(i + 1..).unwrap_or(&[]), depth + 1),
            _ => Err("timeout without a literal duration".into()),
        }
    }

    pub(super) fn stdbuf(&mut self, args: &[Arg], depth: usize) -> R<()> {
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
        self.exec(args.get(i..).unwrap_or(&[]), depth + 1)
    }

    /// `env [NAME=value]… [command]`: only plain assignments of harmless
    /// variables; any option asks (`-S`, `-C`, `-u`, `-i`).
    pub(super) fn env(&mut self, args: &[Arg], depth: usize) -> R<()> {
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
                        && super::super::syntax::is_name(s.split('=').next().unwrap_or("")) =>
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
        self.exec(&args[i..], depth + 1)
    }

    /// `xargs [options] command args…`: the command gets more arguments
    /// from stdin, which cannot be known.
    pub(super) fn xargs(&mut self, args: &[Arg], depth: usize) -> R<()> {
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
            // With no command xargs runs `echo`, found on PATH.
            inner.push(Arg::Lit("echo".into()));
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
        self.exec(&inner, depth + 1)
    }
}
