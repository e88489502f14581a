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

/// What a person typed for one AskUserQuestion question: option numbers
/// (`2`, or `1,3` when several may be chosen) give those labels; anything
/// else is their own answer; `n` alone declines. `Err` asks again.
pub fn parse_choice(
    line: &str,
    options: &[(&str, &str)],
    multi: bool,
) -> Result<Option<String>, &'static str> {
    let line = line.trim();
    if line.is_empty() {
        return Err("type a number, your own answer, or n to decline");
    }
    if line.eq_ignore_ascii_case("n") {
        return Ok(None);
    }
    let picks: Option<Vec<usize>> = line
        .split([',', ' '])
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<usize>().ok())
        .collect();
    match picks {
        Some(picks) if !picks.is_empty() => {
            if !multi && picks.len() > 1 {
                return Err("pick one number");
            }
            let mut labels: Vec<&str> = Vec::new();
            for n in picks {
                let Some((label, _)) = n.checked_sub(1).and_then(|i| options.get(i)) else {
                    return Err("no option has that number");
                };
                if !labels.contains(label) {
                    labels.push(label);
                }
            }
            Ok(Some(labels.join(", ")))
        }
        // Not numbers: the person's own answer.
        _ => Ok(Some(line.to_string())),
    }
}

/// A person's answer to ExitPlanMode: `1` yes with edits accepted, `2` yes
/// approving each edit, `n [feedback]` keep planning.
pub fn parse_plan_answer(line: &str) -> Option<Approval> {
    use crate::agent::pipeline::Update;
    use crate::policy::Mode;
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "1" => Some(Approval::WithUpdates(
            None,
            vec![Update::Mode(Mode::AcceptEdits)],
        )),
        "2" | "y" | "yes" => Some(Approval::WithUpdates(
            None,
            vec![Update::Mode(Mode::Default)],
        )),
        "n" | "no" => Some(Approval::Deny(
            Some(rest.trim().to_string()).filter(|r| !r.is_empty()),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices() {
        let opts = [("Rust", "fast"), ("Go", "simple"), ("Zig", "new")];
        assert_eq!(parse_choice("2", &opts, false), Ok(Some("Go".into())));
        assert_eq!(
            parse_choice("1,3", &opts, true),
            Ok(Some("Rust, Zig".into()))
        );
        assert_eq!(
            parse_choice("1 3 1", &opts, true),
            Ok(Some("Rust, Zig".into()))
        );
        assert!(parse_choice("1,3", &opts, false).is_err());
        assert!(parse_choice("4", &opts, false).is_err());
        assert!(parse_choice("0", &opts, false).is_err());
        assert!(parse_choice("  ", &opts, false).is_err());
        assert_eq!(parse_choice("n", &opts, false), Ok(None));
        assert_eq!(
            parse_choice("whatever is on the box", &opts, false),
            Ok(Some("whatever is on the box".into()))
        );
    }

    #[test]
    fn plan_answers() {
        use crate::agent::pipeline::Update;
        use crate::policy::Mode;
        assert_eq!(
            parse_plan_answer("1"),
            Some(Approval::WithUpdates(
                None,
                vec![Update::Mode(Mode::AcceptEdits)]
            ))
        );
        assert_eq!(
            parse_plan_answer("2"),
            Some(Approval::WithUpdates(
                None,
                vec![Update::Mode(Mode::Default)]
            ))
        );
        assert_eq!(
            parse_plan_answer("n add tests first"),
            Some(Approval::Deny(Some("add tests first".into())))
        );
        assert_eq!(parse_plan_answer(""), None);
    }

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
