//! Globs held to what was decided.
//!
//! A glob is decided on what it matches now, and bash expands it again
//! when the command runs — seconds later for a background command or a
//! slow one (`sleep 5; rg foo *`), after a Write may have planted a file
//! named `--pre=sh`. So the command that runs is not the text the model
//! wrote but that text with each glob word replaced by the names it was
//! decided on, each quoted for bash: bash has nothing left to expand, and
//! runs the argv that was checked.
//!
//! Only a glob that stands in the command text itself, and matched the
//! same names every time the plan expanded it, can be replaced; one
//! inside a command or process substitution, or one in a loop whose
//! names change from pass to pass (`for d in a b; do ls $d/*; done`),
//! cannot, and a decision that depended on it asks instead.

use super::Analysis;
use super::decide::BashVerdict;
use super::plan::{Arg, Glob};
use crate::json::Value;
use crate::policy::{Behavior, Mode, Policy};

/// The longest command tern will hand bash after rewriting (Linux takes
/// at most 128 KiB for one argument, the `-c` string).
const MAX_PINNED: usize = 100 * 1024;

impl Analysis {
    /// `command` with every glob replaced by what it was decided on: None
    /// when nothing in it globs (or it has no plan, so nothing was
    /// expanded); Err when a glob cannot be replaced with certainty.
    pub(crate) fn pinned(&self, command: &str) -> Result<Option<String>, String> {
        let Ok(p) = &self.planned else {
            return Ok(None);
        };
        pin(command, &p.globs)
    }
}

impl Policy {
    /// An allowed line runs with its globs replaced by what they were
    /// decided on. When that cannot be done, the line asks — unless
    /// nothing was decided on what they matched (bypass mode or a blanket
    /// `Bash` allow rule, with no Bash or Read rule that denies or asks).
    pub(super) fn hold_globs(
        &self,
        input: &Value,
        cmd: &str,
        a: &Analysis,
        verdict: BashVerdict,
    ) -> BashVerdict {
        let BashVerdict::Allow { hardened } = verdict else {
            return verdict;
        };
        match a.pinned(cmd) {
            Ok(None) => verdict,
            Ok(Some(command)) => BashVerdict::AllowPinned { hardened, command },
            Err(_) if !hardened && !self.globs_decided() => verdict,
            Err(why) => self.ask_bash(format!(
                "{} needs approval: {why}",
                super::super::what("Bash", input)
            )),
        }
    }

    /// Did an allowed line's verdict depend on what its globs matched?
    fn globs_decided(&self) -> bool {
        let rules = self.all_rules();
        let blanket = rules
            .iter()
            .any(|r| r.behavior == Behavior::Allow && r.covers_tool("Bash") && r.spec.is_none());
        let narrowing = rules.iter().any(|r| {
            matches!(r.behavior, Behavior::Deny | Behavior::Ask)
                && (r.covers_tool("Bash") || r.tool == "Read")
        });
        !(self.mode() == Mode::BypassPermissions || blanket) || narrowing
    }
}

pub(crate) fn pin(command: &str, globs: &[Glob]) -> Result<Option<String>, String> {
    if globs.is_empty() {
        return Ok(None);
    }
    // One replacement per word, whatever number of times it was expanded.
    let mut words: Vec<((usize, usize), &[Arg])> = Vec::with_capacity(globs.len());
    for g in globs {
        if g.substituted {
            return Err(
                "a glob inside a command substitution, which tern cannot hold to what it matched"
                    .into(),
            );
        }
        let span = g
            .span
            .filter(|&(a, b)| a < b && command.get(a..b).is_some())
            .ok_or("a glob tern cannot find in the command text")?;
        if let Some(a) = g.fields.iter().find(|a| a.lit().is_none()) {
            return Err(format!(
                "a glob in a word with a part computed at run time ({})",
                a.show()
            ));
        }
        match words.iter().find(|(s, _)| *s == span) {
            Some((_, seen)) if *seen != g.fields.as_slice() => {
                return Err("a glob that matches different names on each pass of a loop".into());
            }
            Some(_) => {}
            None => words.push((span, &g.fields)),
        }
    }
    words.sort_by_key(|(s, _)| s.0);
    let mut out = String::with_capacity(command.len() + 64);
    let mut at = 0;
    for ((start, end), fields) in words {
        if start < at {
            return Err("glob words that overlap in the command text".into());
        }
        out.push_str(&command[at..start]);
        for (k, f) in fields.iter().enumerate() {
            if k > 0 {
                out.push(' ');
            }
            quote(f.lit().unwrap_or(""), &mut out);
        }
        at = end;
    }
    out.push_str(&command[at..]);
    if out.len() > MAX_PINNED {
        return Err("a glob that matches too many names to hold to".into());
    }
    Ok(Some(out))
}

/// `s` as one bash word that expands to nothing but itself: single
/// quotes, each `'` as `'\''`.
fn quote(s: &str, out: &mut String) {
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
}

#[cfg(test)]
mod tests;
