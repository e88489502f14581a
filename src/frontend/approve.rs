//! Asking a person at the terminal. Used only when tern runs interactively
//! (not `-p`) with a terminal on stdin.
//!
//! Answers: `y` once, `s` for the rest of the session, `a` always (saved
//! as a rule in `.tern/settings.local.json`), `n` no — or `n` followed by
//! a reason, which the model is told.

use std::io::{BufRead, Write};

use crate::agent::pipeline::{Approval, Approver};
use crate::json::Value;
use crate::tools::LocalFuture;

#[derive(Default)]
pub struct TerminalApprover {
    /// One question at a time, even when calls overlap.
    lock: smol::lock::Mutex<()>,
}

/// Reads one answer line.
pub fn parse_answer(line: &str, has_rule: bool) -> Option<Approval> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Approval::Once),
        "s" | "session" if has_rule => Some(Approval::ForSession),
        "a" | "always" if has_rule => Some(Approval::Always),
        "n" | "no" | "" => Some(Approval::Deny(
            Some(rest.trim().to_string()).filter(|r| !r.is_empty()),
        )),
        _ => None,
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        _tool: &'a str,
        _input: &'a Value,
        question: &'a str,
        suggestion: Option<&'a str>,
        _call_id: &'a str,
    ) -> LocalFuture<'a, Approval> {
        Box::pin(async move {
            let _turn = self.lock.lock().await;
            let question = question.to_string();
            let suggestion = suggestion.map(str::to_string);
            smol::unblock(move || {
                let mut err = std::io::stderr();
                let options = match &suggestion {
                    Some(rule) => format!(
                        "  y = yes, once   s = yes, and allow {rule} for this session\n  a = yes, and always allow {rule} (saved in .tern/settings.local.json)\n  n = no   (n <reason> tells tern why)"
                    ),
                    None => "  y = yes, once   n = no   (n <reason> tells tern why)".to_string(),
                };
                let _ = write!(err, "\n{question}.\n{options}\nAllow? [y/s/a/N] ");
                let _ = err.flush();
                loop {
                    let mut line = String::new();
                    match std::io::stdin().lock().read_line(&mut line) {
                        Ok(0) | Err(_) => return Approval::Deny(None),
                        Ok(_) => {}
                    }
                    if let Some(a) = parse_answer(&line, suggestion.is_some()) {
                        return a;
                    }
                    let _ = write!(err, "Please answer y, s, a or n: ");
                    let _ = err.flush();
                }
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse_answer("y\n", true), Some(Approval::Once));
        assert_eq!(parse_answer("S", true), Some(Approval::ForSession));
        assert_eq!(parse_answer("always", true), Some(Approval::Always));
        assert_eq!(parse_answer("s", false), None, "no rule to grant");
        assert_eq!(parse_answer("\n", true), Some(Approval::Deny(None)));
        assert_eq!(
            parse_answer("n use the staging db instead", true),
            Some(Approval::Deny(Some("use the staging db instead".into())))
        );
        assert_eq!(parse_answer("maybe", true), None);
    }
}
