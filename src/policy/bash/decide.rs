//! The Bash branch of [`Policy::decide`].
//!
//! Order: Bash deny rules against every form of every command (a match
//! that needs a value computed at run time asks, even in bypass mode);
//! Read deny rules against every path the commands read; Bash and Read ask
//! rules; leaving the sandbox; bypass; writes to protected paths ask; plan
//! mode refuses what is not read-only; then each command must be approved
//! on its own — by an allow rule (in its form after harmless wrappers,
//! with harmless variables only), or by being read-only with every path it
//! reads, and every program it runs from, where it should be. A line whose
//! commands were all approved as read-only runs with the hardened
//! environment ([`super::env::hardened`]).

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::Analysis;
use super::rules::{self, Match};
use crate::json::Value;
use crate::policy::Behavior;
use crate::policy::{Call, Mode, Policy, Rule, Verdict};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BashVerdict {
    /// `hardened`: run with the hardened environment.
    Allow {
        hardened: bool,
    },
    /// Allowed, to run as `command`: the line with each glob replaced by
    /// what it was decided on ([`super::pin`]).
    AllowPinned {
        hardened: bool,
        command: String,
    },
    Ask(String),
    Deny(String),
}

impl Analysis {
    /// The strongest match of a Bash spec against the commands of a line.
    pub(crate) fn rule_match(&self, spec: &str) -> Match {
        let mut best = Match::No;
        match &self.planned {
            Ok(p) => {
                for c in &p.commands {
                    for f in c.forms() {
                        match rules::matches(spec, f) {
                            Match::Yes => return Match::Yes,
                            Match::Possible => best = Match::Possible,
                            Match::No => {}
                        }
                    }
                    // A program computed at run time could be anything.
                    if c.step.argv.first().is_some_and(|a| a.lit().is_none()) {
                        best = Match::Possible;
                    }
                }
            }
            Err(_) => {
                // No plan: any word that is the rule's program could run it.
                let program = spec
                    .split([' ', ':'])
                    .next()
                    .unwrap_or("")
                    .rsplit('/')
                    .next()
                    .unwrap_or("");
                if self
                    .words
                    .iter()
                    .any(|w| w.rsplit('/').next() == Some(program))
                {
                    best = Match::Possible;
                }
            }
        }
        best
    }

    /// Every path the line's commands read (where known).
    fn reads(&self) -> impl Iterator<Item = &super::check::Read> {
        self.planned.iter().flat_map(|p| {
            p.commands
                .iter()
                .filter_map(|c| c.verdict.as_ref().ok())
                .chain(p.redirects.iter().filter_map(|r| r.as_ref().ok()))
                .flat_map(|e| e.reads.iter())
        })
    }
}

impl Policy {
    /// Decides the line `cmd` of a Bash call.
    pub(crate) fn decide_bash(&self, call: &Call, cmd: &str) -> BashVerdict {
        let a = self.bash_analysis(call, cmd);
        let verdict = self.decide_analysed(call.input, a);
        self.hold_globs(call.input, cmd, a, verdict)
    }

    /// The call's analysis of `cmd`, made once: where the line will run
    /// (the call's `cwd`, the shell's; else the session's working
    /// directory), in the environment the session's commands start with.
    pub(crate) fn bash_analysis<'c>(&self, call: &'c Call, cmd: &str) -> &'c Analysis {
        call.bash.get_or_init(|| {
            Rc::new(match call.cwd.as_deref() {
                Some(dir) => super::analyse_in(cmd, dir, None, &self.env),
                None => super::analyse_in(
                    cmd,
                    &self.cwd,
                    self.working_dirs.first().map(PathBuf::as_path),
                    &self.env,
                ),
            })
        })
    }

    fn decide_analysed(&self, input: &Value, a: &Analysis) -> BashVerdict {
        let rules = self.all_rules();
        let bash_rules = |b: Behavior| {
            rules
                .iter()
                .filter(move |r| r.behavior == b && r.covers_tool("Bash"))
        };
        let read_rules = |b: Behavior| {
            rules
                .iter()
                .filter(move |r| r.behavior == b && r.tool == "Read" && r.spec.is_some())
        };
        // Only for messages: made when one is.
        let what = || super::super::what("Bash", input);

        let mut possible: Option<&Rule> = None;
        for r in bash_rules(Behavior::Deny) {
            let m = r.spec.as_deref().map_or(Match::Yes, |s| a.rule_match(s));
            match m {
                Match::Yes => {
                    return BashVerdict::Deny(format!(
                        "Permission to use Bash was denied by {}",
                        r.describe()
                    ));
                }
                Match::Possible => possible = possible.or(Some(r)),
                Match::No => {}
            }
        }
        for read in a.reads() {
            for r in read_rules(Behavior::Deny) {
                match self.read_rule_hits(r, &read.path, read.recursive) {
                    Match::Yes => {
                        return BashVerdict::Deny(format!(
                            "{} would read {}, and {} denies reading it",
                            what(),
                            read.shown,
                            r.describe()
                        ));
                    }
                    // A tree read whole inside the sandbox cannot reach
                    // what its denyRead hides.
                    Match::Possible if self.sandbox_hides(r, input) => {}
                    Match::Possible => possible = possible.or(Some(r)),
                    Match::No => {}
                }
            }
        }
        for r in bash_rules(Behavior::Ask) {
            let m = r.spec.as_deref().map_or(Match::Yes, |s| a.rule_match(s));
            if m != Match::No {
                return self.ask_bash(format!("{} requires approval ({})", what(), r.describe()));
            }
        }
        for read in a.reads() {
            for r in read_rules(Behavior::Ask) {
                if self.read_rule_hits(r, &read.path, read.recursive) != Match::No {
                    return self.ask_bash(format!(
                        "{} would read {} ({})",
                        what(),
                        read.shown,
                        r.describe()
                    ));
                }
            }
        }
        if let Some(r) = possible {
            return self.ask_bash(format!(
                "{} needs approval: part of it is computed at run time, and {} could apply",
                what(),
                r.describe()
            ));
        }
        if let Some(sandbox) = &self.sandbox
            && input
                .get("dangerouslyDisableSandbox")
                .and_then(Value::as_bool)
                == Some(true)
        {
            if !sandbox.allow_unsandboxed {
                return BashVerdict::Deny(
                    "Running outside the sandbox is turned off (sandbox.allowUnsandboxedCommands is false)".into(),
                );
            }
            return self.ask_bash(format!("{} asks to run outside the sandbox", what()));
        }
        if self.mode() == Mode::BypassPermissions {
            return BashVerdict::Allow { hardened: false };
        }
        if let Ok(p) = &a.planned
            && let Some((w, reason)) = p
                .writes
                .iter()
                .find_map(|w| self.protection(w).map(|r| (w, r)))
        {
            let why = format!("{} would write {} ({reason})", what(), w.display());
            return if self.mode() == Mode::Plan {
                BashVerdict::Deny(why)
            } else {
                self.ask_bash(why)
            };
        }
        if let Ok(p) = &a.planned
            && let Some(w) = p.unsure_writes.first()
        {
            let why = format!(
                "{} would write {w}, a path tern cannot resolve with certainty (a loop of links, or /proc's per-process links), so whether it is protected is not known",
                what()
            );
            return if self.mode() == Mode::Plan {
                BashVerdict::Deny(why)
            } else {
                self.ask_bash(why)
            };
        }
        if self.mode() == Mode::Plan && !a.read_only() {
            return BashVerdict::Deny(format!(
                "Bash would change things ({}), and plan mode only allows reading. Finish the plan first.",
                a.why_not().unwrap_or_default()
            ));
        }
        let allows: Vec<&Rule> = bash_rules(Behavior::Allow).collect();
        if allows.iter().any(|r| r.spec.is_none()) {
            return BashVerdict::Allow { hardened: false };
        }
        match self.approve(a, &allows, &rules) {
            Ok(hardened) => BashVerdict::Allow { hardened },
            // The sandbox bounds what it can do; rules still ran.
            Err(_)
                if self.sandbox_auto_allow
                    && self
                        .sandbox
                        .as_ref()
                        .is_some_and(|s| super::sandbox_applies(s, input)) =>
            {
                BashVerdict::Allow { hardened: false }
            }
            Err(reason) => self.ask_bash(format!("{} needs approval: {reason}", what())),
        }
    }

    /// Each command approved by an allow rule or as read-only where it
    /// should be. Ok(true) when every one was read-only.
    fn approve(&self, a: &Analysis, allows: &[&Rule], rules: &[Rule]) -> Result<bool, String> {
        let p = a.planned.as_ref().map_err(Clone::clone)?;
        for r in &p.redirects {
            let eff = r.as_ref().map_err(Clone::clone)?;
            self.reads_ok(eff, rules)?;
        }
        let mut all_read_only = true;
        for c in &p.commands {
            // Read-only first: it needs no rule, and keeps the line hardened.
            let read_only = match &c.verdict {
                Ok(eff) => self.reads_ok(eff, rules),
                Err(e) => Err(e.clone()),
            };
            let Err(why) = read_only else {
                continue;
            };
            let effective = rules::effective(&c.step.argv);
            let by_rule = c
                .step
                .env
                .iter()
                .all(|(n, v)| super::env::check_assignment(n, v).is_ok())
                && allows.iter().any(|r| {
                    r.spec
                        .as_deref()
                        .is_some_and(|s| rules::matches(s, effective) == Match::Yes)
                });
            if !by_rule {
                return Err(why);
            }
            all_read_only = false;
        }
        Ok(all_read_only)
    }

    /// The paths a read-only command reads are inside the working
    /// directories (or a Read allow rule names them); the programs it runs
    /// are not ones the model could have written; git's repository is one
    /// git can be trusted in.
    fn reads_ok(&self, eff: &super::check::Effects, rules: &[Rule]) -> Result<(), String> {
        // Paths here are resolved already.
        let inside = |p: &Path| self.inside_resolved(p);
        // The repository a working directory lies in is the session's
        // own, wherever its top is (tern started in a subfolder).
        let own_repository =
            |r: &super::check::Read| r.repo && self.roots().iter().any(|w| w.starts_with(&r.path));
        for r in &eff.reads {
            if !inside(&r.path) && !own_repository(r) && !self.read_allowed(&r.path, rules) {
                return Err(format!(
                    "it reads {}, outside the working directories",
                    shown(&r.shown, &r.path)
                ));
            }
        }
        for e in &eff.execs {
            let tmp = ["/tmp", "/var/tmp", "/dev/shm"]
                .iter()
                .any(|t| e.starts_with(t));
            if inside(e) || tmp {
                return Err(format!(
                    "it runs {}, a program in a directory the model can write",
                    e.display()
                ));
            }
        }
        for (name, dir) in &eff.bare {
            if let Some(e) = self.path_hazard(name, dir) {
                return Err(format!(
                    "{name} would run {}, a program in a directory the model can write",
                    e.display()
                ));
            }
        }
        for g in &eff.git {
            // `inside` is the same throughout the decision.
            let programs = super::super::memo::remember_path("repo-check", g, || {
                super::git::repo_check(g, &inside)
            })?;
            // Programs the repository's config makes git run (git-lfs's
            // filter), found on PATH like any other.
            for name in programs {
                if let Some(e) = self.path_hazard(name, g) {
                    return Err(format!(
                        "git's config runs {name}, which would be {}, a program in a directory the model can write",
                        e.display()
                    ));
                }
            }
        }
        Ok(())
    }

    /// The program a bare name runs, when PATH would find it in a
    /// directory the model can write (a working directory, a temporary
    /// one, or a relative entry) before any other.
    fn path_hazard(&self, name: &str, dir: &Path) -> Option<PathBuf> {
        // The PATH the command will have (the settings' `env` may set it).
        let path = self.env.path_str();
        let writable = |d: &Path| {
            self.inside_resolved(d)
                || ["/tmp", "/var/tmp", "/dev/shm"]
                    .iter()
                    .any(|t| d.starts_with(t))
        };
        // Which PATH entries are such directories. Per entry, None: an
        // absolute one outside what the model can write.
        let work_out = || -> (Vec<Option<PathBuf>>, bool) {
            // Could the answer change? Only through a path looked at in a
            // directory the model can write (a link it re-points).
            let mut volatile = false;
            let entries = path
                .split(':')
                .map(|d| {
                    if !d.starts_with('/') {
                        return Some(PathBuf::from(d));
                    }
                    let resolved = crate::policy::path::resolve_traced(Path::new(d), &mut |p| {
                        volatile |= p.parent().is_some_and(writable);
                    });
                    match resolved {
                        Ok(real) => writable(&real).then_some(real),
                        // A path that cannot be resolved is not known to be safe.
                        Err(_) => Some(PathBuf::from(d)),
                    }
                })
                .collect();
            (entries, volatile)
        };
        type Kept = Option<(String, Vec<PathBuf>, Vec<Option<PathBuf>>)>;
        // Kept across decisions (keyed by PATH and the working
        // directories) unless it could change; then once per decision.
        // Thread-local: a policy is shared, not mutable, and one session's
        // decisions run on its thread.
        thread_local! {
            static KEPT: std::cell::RefCell<Kept> = const { std::cell::RefCell::new(None) };
        }
        // Once per decision either way (every bare program name asks).
        let entries: std::rc::Rc<Vec<Option<PathBuf>>> =
            super::super::memo::remember("path-entries", path, || {
                let roots = self.roots();
                let kept = KEPT.with(|k| {
                    k.borrow()
                        .as_ref()
                        .filter(|(p, r, _)| p == path && *r == roots)
                        .map(|(_, _, e)| e.clone())
                });
                if let Some(e) = kept {
                    return std::rc::Rc::new(e);
                }
                let (entries, volatile) = work_out();
                if !volatile {
                    KEPT.with(|k| {
                        *k.borrow_mut() = Some((path.to_string(), roots, entries.clone()));
                    });
                }
                std::rc::Rc::new(entries)
            });
        if entries.iter().all(Option::is_none) {
            return None;
        }
        for (d, hazard) in path.split(':').zip(entries.iter()) {
            match hazard {
                Some(h) => {
                    let full = if h.is_absolute() {
                        h.join(name)
                    } else {
                        dir.join(h).join(name)
                    };
                    let Some(real) =
                        super::path::resolve(Path::new("/"), &full.display().to_string())
                    else {
                        return Some(full);
                    };
                    if super::check::is_executable(&real) {
                        // Found here: this is what runs.
                        return (h.is_absolute() || writable(&real)).then_some(real);
                    }
                }
                None => {
                    if super::check::is_executable(&Path::new(d).join(name)) {
                        return None;
                    }
                }
            }
        }
        None
    }

    fn read_allowed(&self, p: &Path, rules: &[Rule]) -> bool {
        rules.iter().any(|r| {
            r.behavior == Behavior::Allow
                && r.tool == "Read"
                && r.spec.as_deref().is_some_and(|s| self.path_rule(r, s, p))
        })
    }

    /// Does a Read rule cover this path? For a tree read recursively, a
    /// rule naming something inside it could apply: Possible.
    fn read_rule_hits(&self, r: &Rule, p: &Path, recursive: bool) -> Match {
        let Some(spec) = r.spec.as_deref() else {
            return Match::Yes;
        };
        if self.path_rule(r, spec, p) {
            return Match::Yes;
        }
        if recursive && self.rule_is_under(r, spec, p) {
            return Match::Possible;
        }
        Match::No
    }

    /// Does the sandbox this command runs in hide everything `r` names
    /// (a path in its `denyRead`, which a sandboxed command cannot open
    /// whether mounts or landlock enforce it)?
    fn sandbox_hides(&self, r: &Rule, input: &Value) -> bool {
        let (Some(sandbox), Some(spec)) = (&self.sandbox, r.spec.as_deref()) else {
            return false;
        };
        let pattern = self.pattern(r, spec);
        let Some(named) = pattern.plain() else {
            return false;
        };
        super::sandbox_applies(sandbox, input)
            && sandbox
                .deny_read
                .iter()
                .any(|d| named.starts_with(crate::policy::canonical(d)))
    }

    fn path_rule(&self, r: &Rule, spec: &str, p: &Path) -> bool {
        self.pattern(r, spec).matches(p)
    }

    /// Could a rule's pattern name something below `dir`?
    fn rule_is_under(&self, r: &Rule, spec: &str, dir: &Path) -> bool {
        self.pattern(r, spec).could_be_under(dir)
    }

    pub(super) fn ask_bash(&self, q: String) -> BashVerdict {
        match self.ask(q) {
            Verdict::Deny(d) => BashVerdict::Deny(d),
            Verdict::Ask(q) => BashVerdict::Ask(q),
            Verdict::Allow | Verdict::AllowHardened | Verdict::AllowCommand { .. } => {
                BashVerdict::Allow { hardened: false }
            }
        }
    }
}

fn shown(written: &str, resolved: &Path) -> String {
    let r = resolved.display().to_string();
    if r == written {
        r
    } else {
        format!("{written} ({r})")
    }
}
