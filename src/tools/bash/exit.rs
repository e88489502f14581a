//! What a command's exit status means to the model: exit 1 of a search
//! or a comparison is an answer, not a failure.

/// What a non-zero exit means when it is an answer rather than an error:
/// exit 1 of grep and rg ("no match"), diff and cmp ("differ"), test and
/// `[` ("false"). Only when that program decides the exit status: the
/// line is one pipeline (no `;`, `&&`, `||`, `&`, newline, subshell or
/// substitution outside quotes) and the program is its last command.
pub(super) fn exit_meaning(command: &str, code: i32) -> Option<&'static str> {
    if code != 1 {
        return None;
    }
    let last = last_pipeline_command(command)?;
    let program = first_word(&last)?;
    let name = program.rsplit('/').next().unwrap_or(&program);
    Some(match name {
        "grep" | "egrep" | "fgrep" | "rg" | "git-grep" => "no match",
        "diff" | "cmp" => "the inputs differ",
        "test" | "[" | "[[" => "the condition is false",
        _ => return None,
    })
}

/// The text of the last command of a single pipeline, or None when the
/// line is anything more (lists, background jobs, subshells, expansions
/// that run commands) — then the exit status is nobody's in particular.
fn last_pipeline_command(command: &str) -> Option<String> {
    let mut parts = vec![String::new()];
    let mut chars = command.trim().chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        let cur = parts.last_mut()?;
        if single {
            single = c != '\'';
            cur.push(c);
            continue;
        }
        match c {
            '\\' => {
                cur.push(c);
                cur.push(chars.next()?);
            }
            '\'' if !double => {
                single = true;
                cur.push(c);
            }
            '"' => {
                double = !double;
                cur.push(c);
            }
            '`' => return None,
            '$' if chars.peek() == Some(&'(') => return None,
            _ if double => cur.push(c),
            ';' | '&' | '\n' | '(' | ')' | '{' | '}' => return None,
            '|' if chars.peek() == Some(&'|') => return None,
            '|' => {
                // `|&` pipes stderr too; still a pipeline.
                if chars.peek() == Some(&'&') {
                    chars.next();
                }
                parts.push(String::new());
            }
            _ => cur.push(c),
        }
    }
    if single || double {
        return None;
    }
    parts.pop().filter(|p| !p.trim().is_empty())
}

/// The first word after any `NAME=value` assignments, quotes removed.
fn first_word(command: &str) -> Option<String> {
    command
        .split_whitespace()
        .find(|w| !(w.contains('=') && !w.starts_with('=') && !w.starts_with(['"', '\''])))
        .map(|w| w.replace(['"', '\''], ""))
}
