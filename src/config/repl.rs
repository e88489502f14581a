//! Whether the REPL tool is offered.

/// Is the REPL on? `CLAUDE_CODE_REPL` or `TERN_REPL` set to a false value
/// turns it off whatever else says; a true value, or the `repl.enabled`
/// setting, turns it on.
pub(crate) fn enabled(env: impl Fn(&str) -> Option<String>, setting: Option<bool>) -> bool {
    let read = |k: &str| {
        env(k).and_then(|v| match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Some(true),
            "0" | "false" | "no" | "off" => Some(false),
            _ => None,
        })
    };
    let said = [read("CLAUDE_CODE_REPL"), read("TERN_REPL"), setting];
    if said.contains(&Some(false)) {
        return false;
    }
    said.contains(&Some(true))
}

#[cfg(test)]
mod tests {
    use super::enabled;

    #[test]
    fn an_explicit_false_wins() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(!enabled(env(&[]), None));
        assert!(enabled(env(&[("CLAUDE_CODE_REPL", "true")]), None));
        assert!(enabled(env(&[("TERN_REPL", "1")]), None));
        assert!(enabled(env(&[]), Some(true)));
        assert!(!enabled(
            env(&[("TERN_REPL", "1"), ("CLAUDE_CODE_REPL", "false")]),
            None
        ));
        assert!(!enabled(env(&[("CLAUDE_CODE_REPL", "0")]), Some(true)));
        assert!(!enabled(env(&[("TERN_REPL", "yes")]), Some(false)));
    }
}
