//! The plan: every simple command a line can run, in order, with the argv
//! bash would pass it, worked out without running anything.
//!
//! Values are known only where they are certain: literal text, variables
//! assigned earlier from known values, arithmetic on those, `~` forms, and
//! globs (matched against the directory now, as bash will). A command
//! substitution's commands go into the plan; its output is opaque unless
//! it is a literal here-document or `pwd`. Opaque values keep the literal
//! text before them so a spec can tell whether they could be a flag.
//!
//! State (variables, the directory) is followed through the line; where a
//! change may or may not have happened (a subshell, a branch, after `||`,
//! a loop) the changed value becomes unknown rather than guessed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::path;
use super::syntax::{Arith, Block, Part, RedirOp, Simple, Stmt, Test, TestTok, Word};

mod glob;

use glob::Ch;

/// Most simple commands a plan may hold (loops over globs multiply).
const MAX_STEPS: usize = 2000;

/// An argument as the program will receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    Lit(String),
    /// One argument whose text is not known; it starts with `prefix`.
    Opaque {
        prefix: String,
    },
    /// Any number of arguments (an unquoted opaque expansion).
    Many {
        prefix: String,
    },
    /// `<( … )`: a pipe's path under /dev/fd.
    Fd,
    /// A regular file (not a link) somewhere under this directory: what
    /// `find DIR -type f -exec … {}` passes.
    Under(PathBuf),
}

impl Arg {
    pub(crate) fn lit(&self) -> Option<&str> {
        match self {
            Arg::Lit(s) => Some(s),
            _ => None,
        }
    }

    /// Text for rules and messages; unknown parts are shown as `…`.
    pub(crate) fn show(&self) -> String {
        match self {
            Arg::Lit(s) => s.clone(),
            Arg::Opaque { prefix } | Arg::Many { prefix } => format!("{prefix}…"),
            Arg::Fd => "/dev/fd/…".into(),
            Arg::Under(d) => format!("{}/…", d.display()),
        }
    }

    /// Could this argument begin with `-` (be read as an option)?
    pub(crate) fn may_be_flag(&self) -> bool {
        match self {
            Arg::Lit(s) => s.starts_with('-'),
            Arg::Opaque { prefix } | Arg::Many { prefix } => {
                prefix.is_empty() || prefix.starts_with('-')
            }
            Arg::Fd | Arg::Under(_) => false,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Redir {
    pub op: RedirOp,
    pub target: Arg,
    pub cwd: Option<Rc<Path>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TestArg {
    Op(String),
    Val(Arg),
}

#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub argv: Vec<Arg>,
    /// `NAME=value` before the command.
    pub env: Vec<(String, Arg)>,
    /// The physical directory it runs in (None: not known).
    pub cwd: Option<Rc<Path>>,
    /// For `[[ … ]]`: its operators and operands.
    pub test: Option<Vec<TestArg>>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub redirects: Vec<Redir>,
    /// Every word that was glob-expanded, each time it was.
    pub globs: Vec<Glob>,
}

/// A word bash will glob-expand, and what the plan expanded it to.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    /// Where the word stands in the command text.
    pub span: Option<(usize, usize)>,
    /// It is inside a command or process substitution.
    pub substituted: bool,
    /// The arguments it became, in order.
    pub fields: Vec<Arg>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Lit(String),
    Opaque,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dir {
    pub physical: Rc<Path>,
    pub logical: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    vars: BTreeMap<String, Val>,
    // Shared: states are cloned at every branch and pipeline stage.
    cwd: Option<Rc<Dir>>,
    oldpwd: Option<Rc<Dir>>,
}

/// What the planner needs to know about the world.
pub(crate) struct Facts<'e> {
    pub cwd: Dir,
    pub home: Option<PathBuf>,
    /// The environment the command starts with.
    pub env: &'e crate::policy::CommandEnv,
}

type R<T> = Result<T, String>;

pub(crate) fn plan(block: &Block, facts: &Facts<'_>) -> R<Plan> {
    let mut p = Planner {
        facts,
        out: Plan::default(),
        globbed: false,
        substituted: 0,
    };
    let mut st = State {
        vars: BTreeMap::new(),
        cwd: Some(Rc::new(facts.cwd.clone())),
        oldpwd: None,
    };
    p.block(block, &mut st)?;
    Ok(p.out)
}

/// Variables bash itself reads; assigning one changes how later commands
/// are found, expanded or run.
const SHELL_VARS: &[&str] = &[
    "IFS",
    "PATH",
    "HOME",
    "CDPATH",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "PS4",
    "PROMPT_COMMAND",
    "PWD",
    "OLDPWD",
    "OPTIND",
    "OPTARG",
    "FUNCNEST",
    "POSIXLY_CORRECT",
    "EXECIGNORE",
    "TMOUT",
    "HISTFILE",
    "BASH_XTRACEFD",
    "BASH_COMPAT",
];

/// A bare `name=value` is only a shell variable when bash does not read
/// the name and no program inherits it (it is not in the environment the
/// command starts with).
fn plain_variable(name: &str, env: &crate::policy::CommandEnv) -> bool {
    !SHELL_VARS.contains(&name)
        && !name.starts_with("BASH")
        && !name.starts_with("LD_")
        && name.chars().any(|c| c.is_ascii_lowercase())
        && env.get(name).is_none()
}

fn merge(a: &State, b: &State) -> State {
    let mut vars = BTreeMap::new();
    for k in a.vars.keys().chain(b.vars.keys()) {
        let v = match (a.vars.get(k), b.vars.get(k)) {
            (Some(x), Some(y)) if x == y => x.clone(),
            _ => Val::Opaque,
        };
        vars.insert(k.clone(), v);
    }
    State {
        vars,
        cwd: if a.cwd == b.cwd { a.cwd.clone() } else { None },
        oldpwd: if a.oldpwd == b.oldpwd {
            a.oldpwd.clone()
        } else {
            None
        },
    }
}

fn merge_all(states: &[State]) -> Option<State> {
    let (first, rest) = states.split_first()?;
    Some(rest.iter().fold(first.clone(), |acc, s| merge(&acc, s)))
}

struct Planner<'f> {
    facts: &'f Facts<'f>,
    out: Plan,
    /// The word being expanded was globbed.
    globbed: bool,
    /// How many substitutions the planner is inside.
    substituted: usize,
}

impl Planner<'_> {
    fn block(&mut self, b: &Block, st: &mut State) -> R<()> {
        for s in b {
            self.stmt(s, st)?;
        }
        Ok(())
    }

    /// A subshell: what it changes stays in it.
    fn subshell(&mut self, b: &Block, st: &mut State) -> R<()> {
        let mut sub = st.clone();
        self.block(b, &mut sub)
    }

    fn stmt(&mut self, s: &Stmt, st: &mut State) -> R<()> {
        if self.out.steps.len() > MAX_STEPS {
            return Err("it would run too many commands to analyse".into());
        }
        match s {
            Stmt::Simple(c) => self.simple(c, st),
            Stmt::Test(t) => self.test(t, st),
            // Every stage runs in a subshell (bash -c has no lastpipe).
            Stmt::Pipeline(stages) => {
                for stage in stages {
                    let mut sub = st.clone();
                    self.stmt(stage, &mut sub)?;
                }
                Ok(())
            }
            Stmt::AndOr(first, rest) => {
                let before = st.clone();
                self.stmt(first, st)?;
                let mut seen = vec![before, st.clone()];
                let mut prev_before = seen[0].clone();
                for (and, s) in rest {
                    let after_prev = st.clone();
                    // After `||` the one before may have stopped part way.
                    let mut cur = if *and {
                        after_prev.clone()
                    } else {
                        merge(&prev_before, &after_prev)
                    };
                    prev_before = cur.clone();
                    self.stmt(s, &mut cur)?;
                    seen.push(cur.clone());
                    *st = cur;
                }
                *st = merge_all(&seen).unwrap_or_else(|| st.clone());
                Ok(())
            }
            Stmt::Not(inner) => self.stmt(inner, st),
            Stmt::Subshell(b) => self.subshell(b, st),
            Stmt::Group(b) => self.block(b, st),
            Stmt::If { arms, otherwise } => {
                let mut cur = st.clone();
                let mut outs = Vec::new();
                for (cond, body) in arms {
                    self.block(cond, &mut cur)?;
                    let mut b = cur.clone();
                    self.block(body, &mut b)?;
                    outs.push(b);
                }
                match otherwise {
                    Some(e) => {
                        let mut b = cur.clone();
                        self.block(e, &mut b)?;
                        outs.push(b);
                    }
                    None => outs.push(cur),
                }
                outs.push(st.clone());
                *st = merge_all(&outs).unwrap_or_else(|| st.clone());
                Ok(())
            }
            Stmt::For { var, values, body } => {
                if !plain_variable(var, self.facts.env) {
                    return Err(format!("a for loop over the variable {var}"));
                }
                let mut items = Vec::new();
                for w in values {
                    self.fields_into(w, st, &mut items)?;
                }
                let start = st.clone();
                let mut outs = vec![start.clone()];
                let mut cur = start.clone();
                for item in items {
                    let v = match item {
                        Arg::Lit(s) => Val::Lit(s),
                        Arg::Opaque { .. } => Val::Opaque,
                        Arg::Many { .. } | Arg::Fd | Arg::Under(_) => {
                            return Err("a for loop over words computed at run time".into());
                        }
                    };
                    let mut it = cur.clone();
                    it.vars.insert(var.clone(), v);
                    self.block(body, &mut it)?;
                    outs.push(it.clone());
                    // `continue` or `break` may cut a pass short.
                    cur = merge(&cur, &it);
                }
                *st = merge_all(&outs).unwrap_or(start);
                Ok(())
            }
            Stmt::Case { subject, arms } => {
                self.value(subject, st)?;
                let start = st.clone();
                let mut outs = vec![start.clone()];
                for (pats, body) in arms {
                    let mut b = start.clone();
                    for p in pats {
                        self.value(p, &mut b)?;
                    }
                    self.block(body, &mut b)?;
                    outs.push(b);
                }
                *st = merge_all(&outs).unwrap_or(start);
                Ok(())
            }
            Stmt::While { cond, body } => {
                let reads = matches!(cond.as_slice(), [Stmt::Simple(c)]
                    if c.words.first().and_then(Word::literal).as_deref() == Some("read"));
                if !reads {
                    return Err("a while loop whose condition is not `read`".into());
                }
                // Any number of passes: plan one with the state as it comes
                // in and one with what the body may have changed made opaque.
                let start = st.clone();
                let mut cur = start.clone();
                for _ in 0..2 {
                    self.block(cond, &mut cur)?;
                    let mut b = cur.clone();
                    self.block(body, &mut b)?;
                    cur = merge(&cur, &b);
                }
                *st = merge(&start, &cur);
                Ok(())
            }
            Stmt::Redirected(inner, redirects) => {
                for r in redirects {
                    self.redirect(r, st)?;
                }
                self.stmt(inner, st)
            }
        }
    }

    fn redirect(&mut self, r: &super::syntax::Redirect, st: &mut State) -> R<()> {
        let target = match r.op {
            RedirOp::HereDoc | RedirOp::HereString => {
                self.value(&r.target, st)?;
                Arg::Lit(String::new())
            }
            _ => {
                let mut fs = self.fields(&r.target, st)?;
                match (fs.pop(), fs.is_empty()) {
                    (Some(a), true) => a,
                    _ => return Err("a redirection to several or no words".into()),
                }
            }
        };
        if let Arg::Many { .. } = target {
            return Err("a redirection to a path computed at run time".into());
        }
        self.out.redirects.push(Redir {
            op: r.op,
            target,
            cwd: st.cwd.as_ref().map(|d| d.physical.clone()),
        });
        Ok(())
    }

    fn simple(&mut self, c: &Simple, st: &mut State) -> R<()> {
        let mut argv = Vec::new();
        for w in &c.words {
            self.fields_into(w, st, &mut argv)?;
        }
        let mut env = Vec::new();
        for a in &c.assigns {
            let v = self.value(&a.value, st)?;
            env.push((a.name.clone(), v));
        }
        for r in &c.redirects {
            self.redirect(r, st)?;
        }
        if argv.is_empty() {
            if c.words.is_empty() {
                for (name, v) in env {
                    if !plain_variable(&name, self.facts.env) {
                        return Err(format!(
                            "it sets {name}, which the shell or the programs it starts read"
                        ));
                    }
                    let v = match v {
                        Arg::Lit(s) => Val::Lit(s),
                        _ => Val::Opaque,
                    };
                    st.vars.insert(name, v);
                }
                return Ok(());
            }
            // Words that expanded to nothing: bash runs nothing.
            return Ok(());
        }
        if argv[0].lit() == Some("read") {
            // `read NAME…` sets each NAME to a line of input: not known.
            for a in argv[1..].iter().filter_map(Arg::lit) {
                if super::syntax::is_name(a) {
                    if !plain_variable(a, self.facts.env) {
                        return Err(format!("read into {a}, which the shell or programs read"));
                    }
                    st.vars.insert(a.to_string(), Val::Opaque);
                }
            }
        }
        // `cd`, also as `builtin cd` or `command cd`, moves the shell; a
        // `cd` behind any other wrapper runs elsewhere (or not at all).
        match (argv[0].lit(), argv.get(1).and_then(Arg::lit)) {
            (Some("cd"), _) => self.cd(&argv, st)?,
            (Some("builtin" | "command"), Some("cd")) => self.cd(&argv[1..], st)?,
            _ if super::rules::effective(&argv).first().and_then(Arg::lit) == Some("cd") => {
                return Err("cd behind a wrapper, which bash may run elsewhere".into());
            }
            _ => {}
        }
        self.out.steps.push(Step {
            argv,
            env,
            cwd: st.cwd.as_ref().map(|d| d.physical.clone()),
            test: None,
        });
        Ok(())
    }

    fn cd(&mut self, argv: &[Arg], st: &mut State) -> R<()> {
        let mut physical = false;
        let mut rest = &argv[1..];
        while let Some(Arg::Lit(a)) = rest.first() {
            match a.as_str() {
                "-P" => physical = true,
                "-L" => physical = false,
                "--" => {
                    rest = &rest[1..];
                    break;
                }
                a if a.starts_with('-') && a != "-" => {
                    return Err(format!("cd {a} is not analysed"));
                }
                _ => break,
            }
            rest = &rest[1..];
        }
        let target = match rest {
            [] => self
                .facts
                .home
                .as_ref()
                .map(|h| h.display().to_string())
                .ok_or("cd to an unknown home directory")?,
            [Arg::Lit(t)] if t == "-" => st
                .oldpwd
                .as_ref()
                .map(|d| d.logical.display().to_string())
                .ok_or("cd - to a directory not known")?,
            [Arg::Lit(t)] => t.clone(),
            [_] => return Err("cd to a directory computed at run time".into()),
            _ => return Err("cd with more than one directory".into()),
        };
        if target.is_empty() {
            return Err("cd to an empty path".into());
        }
        let cur = st.cwd.clone().ok_or("cd from a directory not known")?;
        let (phys, logical) = if physical {
            let p = path::resolve(&cur.physical, &target).ok_or("cd through a link loop")?;
            (Rc::from(p.as_path()), p)
        } else {
            let joined = if target.starts_with('/') {
                PathBuf::from(&target)
            } else {
                cur.logical.join(&target)
            };
            let l = lexical(&joined);
            let p = path::resolve(Path::new("/"), &l.display().to_string())
                .ok_or("cd through a link loop")?;
            (Rc::from(p), l)
        };
        if !is_searchable_dir(&phys) {
            return Err(format!(
                "cd to {target}, which is not a directory it can enter"
            ));
        }
        st.oldpwd = st.cwd.take();
        st.cwd = Some(Rc::new(Dir {
            physical: phys,
            logical,
        }));
        Ok(())
    }

    fn test(&mut self, t: &Test, st: &mut State) -> R<()> {
        let cwd = st.cwd.as_ref().map(|d| d.physical.clone());
        if !t.double {
            let mut argv = vec![Arg::Lit("[".into())];
            for tok in &t.tokens {
                if let TestTok::Word(w) = tok {
                    self.fields_into(w, st, &mut argv)?;
                }
            }
            argv.push(Arg::Lit("]".into()));
            self.out.steps.push(Step {
                argv,
                env: Vec::new(),
                cwd,
                test: None,
            });
            return Ok(());
        }
        let mut toks = Vec::new();
        let mut argv = vec![Arg::Lit("[[".into())];
        for tok in &t.tokens {
            match tok {
                TestTok::Op(o) => {
                    argv.push(Arg::Lit(o.clone()));
                    toks.push(TestArg::Op(o.clone()));
                }
                TestTok::Word(w) => {
                    let v = self.value(w, st)?;
                    argv.push(v.clone());
                    toks.push(TestArg::Val(v));
                }
            }
        }
        argv.push(Arg::Lit("]]".into()));
        self.out.steps.push(Step {
            argv,
            env: Vec::new(),
            cwd,
            test: Some(toks),
        });
        Ok(())
    }
}

/// One field of a word being expanded (splitting may make several).
#[derive(Default)]
struct Field {
    text: String,
    /// Byte offsets in `text` of the unquoted pattern characters, in order.
    glob_at: Vec<usize>,
    opaque: Option<String>,
    fd: bool,
}

impl Field {
    fn push_str(&mut self, s: &str, glob: bool) {
        if self.opaque.is_some() {
            return;
        }
        if glob && s.bytes().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            let at = self.text.len();
            self.glob_at.extend(
                s.char_indices()
                    .filter(|(_, c)| matches!(c, '*' | '?' | '['))
                    .map(|(i, _)| at + i),
            );
        }
        self.text.push_str(s);
    }
    fn make_opaque(&mut self) {
        if self.opaque.is_none() {
            self.opaque = Some(self.text.clone());
        }
    }
    /// Its characters, each marked when it is a pattern character.
    fn chars(&self) -> Vec<Ch> {
        let mut globs = self.glob_at.iter().peekable();
        self.text
            .char_indices()
            .map(|(i, c)| Ch {
                c,
                glob: globs.next_if(|&&g| g == i).is_some(),
            })
            .collect()
    }
}

/// Words expanded as bash would: fields, variables, tildes, substitutions
/// (whose commands the planner walks) and arithmetic.
impl Planner<'_> {
    /// A word expanded without splitting or globbing (assignment values,
    /// `[[ ]]` operands, here-documents): one value.
    fn value(&mut self, w: &Word, st: &mut State) -> R<Arg> {
        let mut f = Field::default();
        for p in &w.parts {
            match p {
                Part::Lit { text, .. } => f.push_str(text, false),
                Part::Tilde(prefix) => {
                    let t = self.tilde(prefix, st)?;
                    f.push_str(&t, false);
                }
                Part::Param { name, .. } => match self.lookup(name, st)? {
                    Val::Lit(s) => f.push_str(&s, false),
                    Val::Opaque => f.make_opaque(),
                },
                Part::Sub { body, .. } => match self.substitute(body, st)? {
                    Val::Lit(s) => f.push_str(&s, false),
                    Val::Opaque => f.make_opaque(),
                },
                Part::ProcIn(_) => return Err("a process substitution in a value".into()),
                Part::Arith { expr, .. } => {
                    let n = self.arith(expr, st, 0)?;
                    f.push_str(&n.to_string(), false);
                }
            }
        }
        Ok(match f.opaque {
            Some(prefix) => Arg::Opaque { prefix },
            None => Arg::Lit(f.text),
        })
    }

    /// A command word: expansions, then field splitting of unquoted
    /// expansions, then globbing.
    fn fields(&mut self, w: &Word, st: &mut State) -> R<Vec<Arg>> {
        let mut out = Vec::new();
        self.fields_into(w, st, &mut out)?;
        Ok(out)
    }

    /// The same, added to `out` (on error, what is in `out` is no answer).
    /// A word that globbed is noted with what it became.
    fn fields_into(&mut self, w: &Word, st: &mut State, out: &mut Vec<Arg>) -> R<()> {
        let start = out.len();
        let outer = std::mem::replace(&mut self.globbed, false);
        let r = self.word_fields(w, st, out);
        if std::mem::replace(&mut self.globbed, outer) && r.is_ok() {
            self.out.globs.push(Glob {
                span: w.span,
                substituted: self.substituted > 0,
                fields: out[start..].to_vec(),
            });
        }
        r
    }

    fn word_fields(&mut self, w: &Word, st: &mut State, out: &mut Vec<Arg>) -> R<()> {
        if !crate::policy::bash::brace::may_expand(w) {
            return self.fields_of(w, st, out);
        }
        let words = crate::policy::bash::brace::expand(w)?;
        for w in &words {
            self.fields_of(w, st, out)?;
        }
        Ok(())
    }

    fn fields_of(&mut self, w: &Word, st: &mut State, out: &mut Vec<Arg>) -> R<()> {
        // Fields ended by splitting; the one being built is `cur`.
        let mut done: Vec<Field> = Vec::new();
        let mut cur = Field::default();
        let mut started = false;
        for p in &w.parts {
            let (val, quoted) = match p {
                Part::Lit { text, quoted } => {
                    cur.push_str(text, !quoted);
                    // An empty unquoted word (from `{,a}`) is no argument.
                    started |= *quoted || !text.is_empty();
                    continue;
                }
                Part::Tilde(prefix) => {
                    let t = self.tilde(prefix, st)?;
                    cur.push_str(&t, false);
                    started = true;
                    continue;
                }
                Part::ProcIn(body) => {
                    self.substituted += 1;
                    let r = self.subshell(body, st);
                    self.substituted -= 1;
                    r?;
                    cur.fd = true;
                    started = true;
                    continue;
                }
                Part::Param { name, quoted } => (self.lookup(name, st)?, *quoted),
                Part::Sub { body, quoted } => (self.substitute(body, st)?, *quoted),
                Part::Arith { expr, quoted } => {
                    (Val::Lit(self.arith(expr, st, 0)?.to_string()), *quoted)
                }
            };
            match (val, quoted) {
                (Val::Lit(s), true) => {
                    cur.push_str(&s, false);
                    started = true;
                }
                (Val::Lit(s), false) => {
                    // Split at blanks; what is between them may glob.
                    for (k, piece) in s.split([' ', '\t', '\n']).enumerate() {
                        if k > 0 && started {
                            done.push(std::mem::take(&mut cur));
                            started = false;
                        }
                        if !piece.is_empty() {
                            cur.push_str(piece, true);
                            started = true;
                        }
                    }
                }
                (Val::Opaque, true) => {
                    cur.make_opaque();
                    started = true;
                }
                (Val::Opaque, false) => {
                    let prefix = done.first().unwrap_or(&cur).text.clone();
                    out.push(Arg::Many { prefix });
                    return Ok(());
                }
            }
        }
        if started {
            done.push(cur);
        }
        for f in done {
            if f.fd {
                if f.text.is_empty() && f.opaque.is_none() {
                    out.push(Arg::Fd);
                    continue;
                }
                return Err("a process substitution joined to other text".into());
            }
            if let Some(prefix) = f.opaque {
                out.push(Arg::Opaque { prefix });
            } else if !f.glob_at.is_empty() {
                let cwd = st.cwd.as_ref().map(|d| &*d.physical);
                out.extend(glob::expand(&f.chars(), cwd)?.into_iter().map(Arg::Lit));
                self.globbed = true;
            } else {
                out.push(Arg::Lit(f.text));
            }
        }
        Ok(())
    }

    fn lookup(&self, name: &str, st: &State) -> R<Val> {
        if let Some(v) = st.vars.get(name) {
            return Ok(v.clone());
        }
        Ok(match name {
            "HOME" => self
                .facts
                .home
                .as_ref()
                .map_or(Val::Opaque, |h| Val::Lit(h.display().to_string())),
            "PWD" => st
                .cwd
                .as_ref()
                .map_or(Val::Opaque, |d| Val::Lit(d.logical.display().to_string())),
            "OLDPWD" => st
                .oldpwd
                .as_ref()
                .map_or(Val::Opaque, |d| Val::Lit(d.logical.display().to_string())),
            "#" => Val::Lit("0".into()),
            "@" | "*" => return Err(format!("${name} is not analysed")),
            n if n.chars().all(|c| c.is_ascii_digit()) => {
                return Err(format!("the positional parameter ${n}"));
            }
            _ => Val::Opaque,
        })
    }

    fn tilde(&self, prefix: &str, st: &State) -> R<String> {
        let p = match prefix {
            "" => self.facts.home.clone(),
            "+" => st.cwd.as_ref().map(|d| d.logical.clone()),
            "-" => st.oldpwd.as_ref().map(|d| d.logical.clone()),
            user => path::user_home(Some(user)),
        };
        p.map(|p| p.display().to_string())
            .ok_or_else(|| format!("~{prefix} names a directory that is not known"))
    }

    /// Runs the substitution's commands into the plan; its output is a
    /// known value only for a literal here-document through `cat`, or `pwd`.
    fn substitute(&mut self, body: &Block, st: &State) -> R<Val> {
        let mut sub = st.clone();
        let before = self.out.redirects.len();
        self.substituted += 1;
        let r = self.block(body, &mut sub);
        self.substituted -= 1;
        r?;
        if let [Stmt::Simple(c)] = body.as_slice()
            && c.assigns.is_empty()
        {
            // Only a lone `cat` or `pwd` is looked at.
            let words: Vec<Option<String>> = match c.words.as_slice() {
                [w] => vec![w.literal()],
                _ => Vec::new(),
            };
            let doc = match c.redirects.as_slice() {
                [r] if matches!(r.op, RedirOp::HereDoc | RedirOp::HereString) && r.fd.is_none() => {
                    r.target.literal().map(|t| {
                        if r.op == RedirOp::HereString {
                            format!("{t}\n")
                        } else {
                            t
                        }
                    })
                }
                _ => None,
            };
            let _ = before;
            match (words.as_slice(), doc) {
                ([Some(cat)], Some(text)) if cat == "cat" => {
                    return Ok(Val::Lit(text.trim_end_matches('\n').to_string()));
                }
                ([Some(pwd)], None) if pwd == "pwd" && c.redirects.is_empty() => {
                    if let Some(d) = &st.cwd {
                        return Ok(Val::Lit(d.logical.display().to_string()));
                    }
                }
                _ => {}
            }
        }
        Ok(Val::Opaque)
    }

    fn arith(&self, e: &Arith, st: &State, depth: usize) -> R<i64> {
        if depth > 64 {
            return Err("arithmetic nested too deeply".into());
        }
        let v = |x: &Arith| self.arith(x, st, depth + 1);
        Ok(match e {
            Arith::Num(n) => *n,
            Arith::Var(name) => match st.vars.get(name) {
                Some(Val::Lit(s)) => s
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("arithmetic on ${name}, whose value is not a number"))?,
                _ => return Err(format!("arithmetic on ${name}, whose value is not known")),
            },
            Arith::Unary(op, x) => {
                let x = v(x)?;
                match op.as_str() {
                    "-" => x.wrapping_neg(),
                    "+" => x,
                    "!" => i64::from(x == 0),
                    "~" => !x,
                    _ => return Err(format!("the arithmetic operator {op}")),
                }
            }
            Arith::Ternary(c, a, b) => {
                if v(c)? != 0 {
                    v(a)?
                } else {
                    v(b)?
                }
            }
            Arith::Binary(l, op, r) => {
                let (a, b) = (v(l)?, v(r)?);
                let zero = || "arithmetic that divides by zero".to_string();
                match op.as_str() {
                    "+" => a.wrapping_add(b),
                    "-" => a.wrapping_sub(b),
                    "*" => a.wrapping_mul(b),
                    "/" => a.checked_div(b).ok_or_else(zero)?,
                    "%" => a.checked_rem(b).ok_or_else(zero)?,
                    "**" => {
                        let e = u32::try_from(b).map_err(|_| "a negative exponent".to_string())?;
                        a.wrapping_pow(e)
                    }
                    "<<" => a.wrapping_shl(b as u32),
                    ">>" => a.wrapping_shr(b as u32),
                    "<" => i64::from(a < b),
                    ">" => i64::from(a > b),
                    "<=" => i64::from(a <= b),
                    ">=" => i64::from(a >= b),
                    "==" => i64::from(a == b),
                    "!=" => i64::from(a != b),
                    "&" => a & b,
                    "|" => a | b,
                    "^" => a ^ b,
                    "&&" => i64::from(a != 0 && b != 0),
                    "||" => i64::from(a != 0 || b != 0),
                    _ => return Err(format!("the arithmetic operator {op}")),
                }
            }
        })
    }
}

/// Whether `cd` can enter `p`: a directory with search permission.
fn is_searchable_dir(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if !p.is_dir() {
        return false;
    }
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// `..` removed with the component before it, as `cd` (without -P) does.
pub(crate) fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
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

/// Every simple command in a block with its words where they are literal
/// (the rest opaque), without following variables or directories: for
/// rule matching of strings that `sh -c`, `eval` or `watch` run.
pub(crate) fn literal_commands(b: &Block, out: &mut Vec<Vec<Arg>>) {
    each_command(b, &mut |argv, _| out.push(argv));
}

/// The same walk, handing each command's argv to `f` with whether it
/// sets variables (`FOO=1 cmd`).
pub(crate) fn each_command(b: &Block, out: &mut dyn FnMut(Vec<Arg>, bool)) {
    fn word(w: &Word, out: &mut dyn FnMut(Vec<Arg>, bool)) -> Arg {
        let mut prefix = String::new();
        for p in &w.parts {
            match p {
                Part::Lit { text, .. } => prefix.push_str(text),
                Part::Sub { body, .. } | Part::ProcIn(body) => {
                    each_command(body, out);
                    return Arg::Opaque { prefix };
                }
                _ => return Arg::Opaque { prefix },
            }
        }
        Arg::Lit(prefix)
    }
    fn stmt(s: &Stmt, out: &mut dyn FnMut(Vec<Arg>, bool)) {
        match s {
            Stmt::Simple(c) => {
                let argv: Vec<Arg> = c.words.iter().map(|w| word(w, out)).collect();
                for a in &c.assigns {
                    word(&a.value, out);
                }
                if !argv.is_empty() {
                    out(argv, !c.assigns.is_empty());
                }
            }
            Stmt::Test(_) => {}
            Stmt::Pipeline(v) => v.iter().for_each(|s| stmt(s, out)),
            Stmt::AndOr(first, rest) => {
                stmt(first, out);
                rest.iter().for_each(|(_, s)| stmt(s, out));
            }
            Stmt::Not(s) | Stmt::Redirected(s, _) => stmt(s, out),
            Stmt::Subshell(b) | Stmt::Group(b) => each_command(b, out),
            Stmt::If { arms, otherwise } => {
                for (c, b) in arms {
                    each_command(c, out);
                    each_command(b, out);
                }
                if let Some(e) = otherwise {
                    each_command(e, out);
                }
            }
            Stmt::For { body, .. } => each_command(body, out),
            Stmt::While { cond, body } => {
                each_command(cond, out);
                each_command(body, out);
            }
            Stmt::Case { arms, .. } => arms.iter().for_each(|(_, b)| each_command(b, out)),
        }
    }
    for s in b {
        stmt(s, out);
    }
}
