//! The summary request: the instructions the model gets when the history
//! is replaced by a summary, and reading its answer.

/// Marks a summary request, so stand-ins and logs can recognise one.
pub const MARKER: &str = "[tern: compaction request]";

pub const SYSTEM: &str = "You write precise, complete summaries of coding sessions so that the \
work can continue from the summary alone. You never call tools.";

/// The request appended to the history. Nine sections, thought through in
/// `<analysis>` first, then written in `<summary>`.
pub fn instructions(custom: Option<&str>) -> String {
    let mut text = format!(
        "{MARKER}\nThe conversation above is about to be replaced by your summary, because \
the context window is nearly full. Whoever continues will see only what you write now, \
so keep every detail that the remaining work depends on.

First, inside <analysis> tags, go through the conversation in order and note for each part \
what the user asked, what was done, which files and code were involved, and what went \
wrong. Then write the summary inside <summary> tags with these nine sections:

1. Primary request and intent: everything the user asked for, in their terms.
2. Key technical concepts: languages, frameworks, tools and ideas in play.
3. Files and code: each file read, changed or created, why it matters, and the exact \
code snippets that later steps need.
4. Errors and fixes: each error met, how it was fixed, and any correction the user gave.
5. Problem solving: what was figured out and what is still being investigated.
6. All user messages: every message the user wrote (not tool results), in order.
7. Pending tasks: what was asked and is not yet done.
8. Current work: exactly what was in progress just before this request, with file names \
and code.
9. Next step: the next action, only if it follows directly from the user's latest request; \
quote the request so the task does not drift.

Answer with text only."
    );
    if let Some(c) = custom.filter(|c| !c.trim().is_empty()) {
        text.push_str("\n\nAdditional instructions from the user:\n");
        text.push_str(c.trim());
    }
    text
}

/// The summary from the model's answer: the `<summary>` body when there
/// is one, else the answer without its `<analysis>`. `None` if nothing
/// useful is left.
pub fn extract(answer: &str) -> Option<String> {
    let between = |open: &str, close: &str| -> Option<&str> {
        let start = answer.find(open)? + open.len();
        let end = answer[start..]
            .find(close)
            .map_or(answer.len(), |e| start + e);
        Some(&answer[start..end])
    };
    let text = match between("<summary>", "</summary>") {
        Some(s) => s.to_string(),
        None => match (answer.find("<analysis>"), answer.find("</analysis>")) {
            (Some(a), Some(b)) if b > a => format!("{}{}", &answer[..a], &answer[b + 11..]),
            _ => answer.to_string(),
        },
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_taken_from_its_tags() {
        let a = "<analysis>thinking</analysis>\n<summary>\n1. Primary request: fix it\n</summary>";
        assert_eq!(extract(a).as_deref(), Some("1. Primary request: fix it"));
        assert_eq!(
            extract("<analysis>x</analysis> plain").as_deref(),
            Some("plain")
        );
        assert_eq!(extract("<summary>cut off").as_deref(), Some("cut off"));
        assert_eq!(extract("<analysis>only thinking</analysis>  "), None);
        assert!(instructions(Some("focus on tests")).ends_with("focus on tests"));
        assert!(instructions(None).contains("9. Next step"));
    }
}
