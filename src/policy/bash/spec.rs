//! The option grammar of read-only programs, and the parser that holds an
//! argv against it.
//!
//! A program's options are written as one string, each option a token:
//!
//! | token | means |
//! |---|---|
//! | `-a` / `--all` | a flag |
//! | `-n=` / `--lines=` | takes a value (`-n 5`, `-n5`, `--lines 5`, `--lines=5`) |
//! | `--color?=` | optional value, only as `--color=when` |
//! | `--contains=d` | a value, or none when it is the last argument |
//! | `…=r` | the value is a path the program reads |
//! | `…=n` | the value is a number |
//! | `!--output=` | known, but it writes or runs something: asks |
//! | `!L-R` | known, asks: it follows symbolic links (out of the project) |
//! | `!P--files0-from=` | known, asks: it reads the names of files to open from a file |
//! | `!W-f` | known, asks: it keeps running (follows a file, repeats) |
//! | `!S--set=` | known, asks: it changes the system (clock, host name) |
//! | `-NUM` | `-5`-style numeric options |
//!
//! Short flags bundle (`-la`, `-n5`); `--` ends options; with
//! [`PERMUTE`] options may follow operands (GNU getopt). Long options may
//! be abbreviated only when [`Prog::longs`] lists every long option the
//! program has, and the abbreviation picks exactly one of them.
//!
//! An option not in the string asks. An argument whose text is computed at
//! run time asks wherever it could be read as an option. A refused option's
//! reason is the one its letter gives, so the question asked is true.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::plan::Arg;

/// GNU getopt: options may come after operands.
pub(crate) const PERMUTE: u8 = 1;
/// `-5` means `-n 5` (head, tail, grep context).
pub(crate) const NUMERIC: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Val {
    Text,
    Read,
    Num,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    Nothing,
    Value(Val),
    /// Joined only (`--color=always`, `-M50%`).
    Optional(Val),
    /// A value, joined or the next argument, or none at the end of the
    /// line (git's `--contains [commit]`).
    ValueOrLast(Val),
}

/// Why a known option asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    WritesOrRuns,
    FollowsLinks,
    ReadsPathList,
    KeepsRunning,
    ChangesSystem,
}

impl Refusal {
    fn from_letter(c: char) -> Option<Refusal> {
        Some(match c {
            'L' => Refusal::FollowsLinks,
            'P' => Refusal::ReadsPathList,
            'W' => Refusal::KeepsRunning,
            'S' => Refusal::ChangesSystem,
            _ => return None,
        })
    }

    pub(crate) fn reason(self) -> &'static str {
        match self {
            Refusal::WritesOrRuns => "can write files or run programs",
            Refusal::FollowsLinks => {
                "follows symbolic links, which may lead out of the project to files no rule was asked about"
            }
            Refusal::ReadsPathList => {
                "reads the names of the files to open from a file, which the command line does not show"
            }
            Refusal::KeepsRunning => {
                "keeps running (following a file or repeating) instead of ending"
            }
            Refusal::ChangesSystem => "changes the system's settings",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Opt {
    /// As written in the spec: `-n`, `--lines`.
    pub name: &'static str,
    pub takes: Takes,
    /// Why it asks, for an option that is known but not harmless.
    pub refused: Option<Refusal>,
}

/// How operands are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    /// No operands at all.
    None,
    /// Paths read; none means stdin.
    Paths,
    /// Paths read; none means the working directory.
    PathsOrCwd,
    /// Strings that are not opened.
    Text,
    /// The first operand is a pattern unless an option gave one; then paths
    /// (none: stdin, or the directory when reading recursively).
    PatternThenPaths,
}

pub(crate) struct Prog {
    pub names: &'static [&'static str],
    pub opts: &'static str,
    pub operands: Operands,
    pub style: u8,
    /// Every long option the program has, or "" (then no abbreviations).
    pub longs: &'static str,
    /// Options (as spelled in `opts`) that make directory operands read
    /// recursively; `*` means always.
    pub recursive: &'static [&'static str],
    /// Most operands (e.g. `uniq IN OUT` writes OUT).
    pub max: Option<usize>,
    /// Options that supply the pattern of a [`Operands::PatternThenPaths`].
    pub pattern_opts: &'static [&'static str],
}

pub(crate) struct Compiled {
    pub prog: &'static Prog,
    shorts: HashMap<char, usize>,
    longs: HashMap<&'static str, usize>,
    known_longs: Vec<&'static str>,
    pub opts: Vec<Opt>,
    numeric: bool,
}

impl Compiled {
    fn new(prog: &'static Prog) -> Compiled {
        let mut c = Compiled {
            prog,
            shorts: HashMap::new(),
            longs: HashMap::new(),
            known_longs: prog.longs.split_whitespace().collect(),
            opts: Vec::new(),
            numeric: prog.style & NUMERIC != 0,
        };
        for tok in prog.opts.split_whitespace() {
            if tok == "-NUM" {
                c.numeric = true;
                continue;
            }
            let (refused, tok) = match tok.strip_prefix('!') {
                Some(t) => match t.chars().next().and_then(Refusal::from_letter) {
                    Some(why) => (Some(why), &t[1..]),
                    None => (Some(Refusal::WritesOrRuns), t),
                },
                None => (None, tok),
            };
            let (name, takes) = match tok.split_once('=') {
                None => (tok, Takes::Nothing),
                Some((n, k)) => {
                    let v = match k {
                        "r" => Val::Read,
                        "n" => Val::Num,
                        _ => Val::Text,
                    };
                    match n.strip_suffix('?') {
                        Some(n) => (n, Takes::Optional(v)),
                        None if k == "d" => (n, Takes::ValueOrLast(v)),
                        None => (n, Takes::Value(v)),
                    }
                }
            };
            let idx = c.opts.len();
            c.opts.push(Opt {
                name,
                takes,
                refused,
            });
            // The first definition of a name wins (git shortlog's own `-n`
            // before the revision options' `-n`).
            if let Some(l) = name.strip_prefix("--") {
                c.longs.entry(l).or_insert(idx);
            } else if let Some(s) = name.strip_prefix('-').and_then(|s| s.chars().next()) {
                c.shorts.entry(s).or_insert(idx);
            }
        }
        c
    }

    /// Every option is known (a complete long list), none is refused or
    /// reads a file, and operands are strings.
    fn anything_goes(&self) -> bool {
        self.prog.operands == Operands::Text
            && !self.known_longs.is_empty()
            && self.opts.iter().all(|o| {
                o.refused.is_none()
                    && !matches!(
                        o.takes,
                        Takes::Value(Val::Read)
                            | Takes::Optional(Val::Read)
                            | Takes::ValueOrLast(Val::Read)
                    )
            })
    }

    fn long(&self, given: &str) -> Result<usize, String> {
        if let Some(&i) = self.longs.get(given) {
            return Ok(i);
        }
        let mut known: Vec<&str> = self
            .known_longs
            .iter()
            .map(|l| l.trim_start_matches('-'))
            .collect();
        if known.is_empty() {
            return Err(format!(
                "--{given} is not an option tern knows to be harmless"
            ));
        }
        known.extend(self.longs.keys().copied());
        known.sort_unstable();
        known.dedup();
        let hits: Vec<&str> = known.into_iter().filter(|k| k.starts_with(given)).collect();
        match hits.as_slice() {
            [one] => self.longs.get(one).copied().ok_or_else(|| {
                format!("--{given} (--{one}) is not an option tern knows to be harmless")
            }),
            [] => Err(format!(
                "--{given} is not an option tern knows to be harmless"
            )),
            _ => Err(format!("--{given} is an ambiguous abbreviation")),
        }
    }
}

type Table = HashMap<&'static str, Compiled>;

fn build(progs: &'static [Prog]) -> Table {
    let mut m = HashMap::new();
    for p in progs {
        for n in p.names {
            m.insert(*n, Compiled::new(p));
        }
    }
    m
}

/// The compiled spec of a program by name.
pub(crate) fn lookup(name: &str) -> Option<&'static Compiled> {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE
        .get_or_init(|| build(super::programs::PROGRAMS))
        .get(name)
}

/// The compiled spec of a git subcommand.
pub(crate) fn git_lookup(name: &str) -> Option<&'static Compiled> {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE
        .get_or_init(|| build(super::git::SUBCOMMANDS))
        .get(name)
}

/// An argv held against a spec.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// (option as spelled in the spec, its value)
    pub opts: Vec<(&'static str, Option<Arg>)>,
    pub operands: Vec<Arg>,
    /// How many operands came before a `--` that ended the options.
    pub dashdash: Option<usize>,
}

impl Parsed {
    pub(crate) fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|(n, _)| *n == name)
    }
    pub(crate) fn has_any(&self, names: &[&str]) -> bool {
        names.iter().any(|n| self.has(n))
    }
    pub(crate) fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Arg> + 'a {
        self.opts
            .iter()
            .filter(move |(n, _)| *n == name)
            .filter_map(|(_, v)| v.as_ref())
    }
}

/// Parses `args` (without the program name) by `spec`.
pub(crate) fn parse(prog: &str, c: &Compiled, args: &[Arg]) -> Result<Parsed, String> {
    let permute = c.prog.style & PERMUTE != 0;
    let mut out = Parsed::default();
    let mut done = false;
    let mut i = 0;
    let refused = |o: &Opt| {
        o.refused
            .map(|why| format!("{prog} {} {}", o.name, why.reason()))
    };
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if done {
            out.operands.push(a.clone());
            continue;
        }
        let s = match a {
            Arg::Lit(s) => s.as_str(),
            Arg::Opaque { prefix } if prefix.starts_with("--") && prefix.contains('=') => {
                // `--author="$(…)"`: a known option with a value computed at
                // run time.
                let name = &prefix[2..prefix.find('=').unwrap_or(prefix.len())];
                let idx = c.long(name).map_err(|e| format!("{prog}: {e}"))?;
                let o = &c.opts[idx];
                if let Some(e) = refused(o) {
                    return Err(e);
                }
                if o.takes == Takes::Nothing {
                    return Err(format!("{prog} {} takes no value", o.name));
                }
                check_value(prog, o, Some(a))?;
                out.opts.push((o.name, Some(a.clone())));
                continue;
            }
            // A program whose options are all known and harmless and whose
            // operands are only strings may get anything.
            other if other.may_be_flag() && c.anything_goes() => {
                out.operands.push(other.clone());
                continue;
            }
            other if other.may_be_flag() => {
                return Err(format!(
                    "{prog} gets an argument computed at run time ({}) that could be an option",
                    other.show()
                ));
            }
            other => {
                out.operands.push(other.clone());
                if !permute {
                    done = true;
                }
                continue;
            }
        };
        if s == "--" {
            done = true;
            out.dashdash = Some(out.operands.len());
            continue;
        }
        if let Some(long) = s.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let idx = c.long(name).map_err(|e| format!("{prog}: {e}"))?;
            let o = &c.opts[idx];
            if let Some(e) = refused(o) {
                return Err(e);
            }
            let v = match (o.takes, value) {
                (Takes::Nothing, Some(_)) => {
                    return Err(format!("{prog} {} takes no value", o.name));
                }
                (Takes::Nothing, None) | (Takes::Optional(_), None) => None,
                (Takes::ValueOrLast(_), None) if i >= args.len() => None,
                (Takes::Value(_) | Takes::Optional(_) | Takes::ValueOrLast(_), Some(v)) => {
                    Some(Arg::Lit(v.to_string()))
                }
                (Takes::Value(_) | Takes::ValueOrLast(_), None) => {
                    let v = args
                        .get(i)
                        .cloned()
                        .ok_or_else(|| format!("{prog} {} needs a value", o.name))?;
                    i += 1;
                    Some(v)
                }
            };
            check_value(prog, o, v.as_ref())?;
            out.opts.push((o.name, v));
            continue;
        }
        if s.len() > 1 && s.starts_with('-') {
            let body = &s[1..];
            if c.numeric && body.chars().all(|ch| ch.is_ascii_digit()) {
                out.opts.push(("-NUM", Some(Arg::Lit(body.to_string()))));
                continue;
            }
            for (j, ch) in body.char_indices() {
                let idx = *c.shorts.get(&ch).ok_or_else(|| {
                    format!("{prog} -{ch} is not an option tern knows to be harmless")
                })?;
                let o = &c.opts[idx];
                if let Some(e) = refused(o) {
                    return Err(e);
                }
                let rest = &body[j + ch.len_utf8()..];
                match o.takes {
                    Takes::Nothing => out.opts.push((o.name, None)),
                    Takes::Value(_) | Takes::Optional(_) | Takes::ValueOrLast(_) => {
                        let v = if !rest.is_empty() {
                            Some(Arg::Lit(rest.to_string()))
                        } else if matches!(o.takes, Takes::ValueOrLast(_)) && i >= args.len() {
                            None
                        } else if matches!(o.takes, Takes::Value(_) | Takes::ValueOrLast(_)) {
                            let v = args
                                .get(i)
                                .cloned()
                                .ok_or_else(|| format!("{prog} {} needs a value", o.name))?;
                            i += 1;
                            Some(v)
                        } else {
                            None
                        };
                        check_value(prog, o, v.as_ref())?;
                        out.opts.push((o.name, v));
                        break;
                    }
                }
            }
            continue;
        }
        out.operands.push(a.clone());
        if !permute {
            done = true;
        }
    }
    if let Some(max) = c.prog.max
        && out.operands.len() > max
    {
        return Err(format!(
            "{prog} with more than {max} operand{} can write a file",
            if max == 1 { "" } else { "s" }
        ));
    }
    Ok(out)
}

fn check_value(prog: &str, o: &Opt, v: Option<&Arg>) -> Result<(), String> {
    let (Takes::Value(kind) | Takes::Optional(kind) | Takes::ValueOrLast(kind)) = o.takes else {
        return Ok(());
    };
    match (kind, v) {
        (_, None) => Ok(()),
        (_, Some(Arg::Many { .. })) => Err(format!(
            "{prog} {} gets a value computed at run time",
            o.name
        )),
        (Val::Num, Some(Arg::Lit(s))) => {
            let t = s.trim_start_matches(['+', '-']);
            if !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == ',')
            {
                Ok(())
            } else {
                Err(format!("{prog} {} {s:?} is not a number", o.name))
            }
        }
        (Val::Num | Val::Read, Some(a)) if a.lit().is_none() && !matches!(a, Arg::Fd) => Err(
            format!("{prog} {} gets a value computed at run time", o.name),
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(|w| Arg::Lit(w.into())).collect()
    }

    fn p(prog: &str, s: &str) -> Result<Parsed, String> {
        parse(prog, lookup(prog).unwrap(), &args(s))
    }

    #[test]
    fn bundles_values_and_permutation() {
        let r = p("head", "-n5 a -qv b").unwrap();
        assert_eq!(r.operands, args("a b"));
        assert!(r.has("-q") && r.has("-v"));
        assert_eq!(r.values("-n").next(), Some(&Arg::Lit("5".into())));
        let r = p("head", "-20 f").unwrap();
        assert!(r.has("-NUM"));
        let r = p("grep", "-rn --include=*.rs foo src").unwrap();
        assert_eq!(r.operands, args("foo src"));
        let r = p("ls", "-- -la").unwrap();
        assert_eq!(r.operands, args("-la"));
    }

    #[test]
    fn unknown_and_refused_options_say_so() {
        assert!(p("sort", "--output=x f").unwrap_err().contains("can write"));
        assert!(p("sort", "-o x f").unwrap_err().contains("can write"));
        assert!(
            p("sort", "--compress-program=sh f")
                .unwrap_err()
                .contains("can write")
        );
        assert!(p("cat", "--frobnicate f").unwrap_err().contains("harmless"));
        assert!(p("head", "-Z f").unwrap_err().contains("harmless"));
    }

    #[test]
    fn abbreviations_resolve_over_every_long_option() {
        // --out is --output (refused); --comp is --compress-program.
        assert!(p("sort", "--out=x f").unwrap_err().contains("can write"));
        assert!(p("sort", "--comp=sh f").unwrap_err().contains("can write"));
        // --rev is only --reverse.
        assert!(p("sort", "--rev f").unwrap().has("--reverse"));
        // --s is ambiguous (--sort, --stable, --unique? no: --sort, --stable).
        assert!(p("sort", "--s f").is_err());
    }

    #[test]
    fn opaque_arguments_that_could_be_options_ask() {
        let c = lookup("cat").unwrap();
        let a = vec![Arg::Opaque {
            prefix: String::new(),
        }];
        assert!(
            parse("cat", c, &a)
                .unwrap_err()
                .contains("could be an option")
        );
        let a = vec![
            Arg::Lit("--".into()),
            Arg::Opaque {
                prefix: String::new(),
            },
        ];
        assert_eq!(parse("cat", c, &a).unwrap().operands.len(), 1);
        let a = vec![Arg::Opaque {
            prefix: "src/".into(),
        }];
        assert_eq!(parse("cat", c, &a).unwrap().operands.len(), 1);
    }
}
