//! The answers a person gives to a permission question (line mode asks;
//! see `frontend::line::LineApprover`).
//!
//! Answers: `y` once, `s` for the rest of the session, `a` always (saved
//! as a rule in `.tern/settings.local.json`), `n` no — or `n` followed by
//! a reason, which the model is told.

use crate::agent::pipeline::Approval;

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
