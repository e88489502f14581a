//! What the agent is doing, as a person watching a terminal sees it: one
//! line when a tool call starts (its name and key argument) and one when
//! it ends (✓ or ✗, how long, the first line of its result). Colour only
//! on a terminal and only without `NO_COLOR`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::json::Value;

pub(crate) struct Activity {
    color: bool,
    started: HashMap<String, Instant>,
    /// Each running call's name and the last progress shown for it.
    running: HashMap<String, (String, String)>,
}

impl Activity {
    pub(crate) fn new(color: bool) -> Activity {
        Activity {
            color,
            started: HashMap::new(),
            running: HashMap::new(),
        }
    }

    /// Colour when stdout is a terminal and `NO_COLOR` is not set.
    pub(crate) fn for_stdout() -> Activity {
        use std::io::IsTerminal;
        let color = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var("TERM").map_or(true, |t| t != "dumb");
        Activity::new(color)
    }

    pub(crate) fn start(&mut self, id: &str, name: &str, input: &Value) -> String {
        self.started.insert(id.to_string(), Instant::now());
        self.running
            .insert(id.to_string(), (name.to_string(), String::new()));
        let arg = key_argument(name, input);
        let name = super::preview::visible(name);
        let sep = if arg.is_empty() { "" } else { " " };
        format!("{} {name}{sep}{arg}", self.paint("36", "●"))
    }

    /// The call starts running now (it waited for an answer until now).
    pub(crate) fn restart(&mut self, id: &str) {
        if let Some(at) = self.started.get_mut(id) {
            *at = Instant::now();
        }
    }

    /// How long the call has been running (zero if its start was missed).
    pub(crate) fn elapsed(&self, id: &str) -> Duration {
        self.started
            .get(id)
            .map_or(Duration::ZERO, Instant::elapsed)
    }

    pub(crate) fn finish(&mut self, id: &str, name: &str, is_error: bool, summary: &str) -> String {
        let took = self.elapsed(id);
        self.started.remove(id);
        self.running.remove(id);
        let mark = if is_error {
            self.paint("31", "✗")
        } else {
            self.paint("32", "✓")
        };
        let sep = if summary.is_empty() { "" } else { "  " };
        // Model- and tool-written text: escapes are shown, not obeyed.
        let (name, summary) = (
            super::preview::visible(name),
            super::preview::visible(summary),
        );
        format!(
            "  {mark} {name} {}{sep}{summary}",
            self.paint("2", &format!("({:.1}s)", took.as_secs_f64()))
        )
    }

    /// A running call's progress (an MCP server's notifications, a
    /// command's latest line), when it says something new: one line
    /// under the call's own.
    pub(crate) fn progress(&mut self, id: &str, text: &str) -> Option<String> {
        let (name, last) = self.running.get_mut(id)?;
        let text = super::preview::visible(text.trim());
        if text.is_empty() || *last == text {
            return None;
        }
        last.clone_from(&text);
        let name = super::preview::visible(name);
        Some(format!("  {} {name}  {text}", self.paint("2", "…")))
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The argument that says what a call does: Bash's command, a file
/// tool's path, a search's pattern; one line, at most 100 characters.
pub(crate) fn key_argument(name: &str, input: &Value) -> String {
    let field = match name {
        "Bash" => "command",
        "Read" | "Write" | "Edit" => "file_path",
        "NotebookEdit" => "notebook_path",
        "Glob" | "Grep" => "pattern",
        "WebFetch" => "url",
        "WebSearch" => "query",
        "Agent" | "Task" => "description",
        _ => "",
    };
    let text = input.str_field(field).map(str::to_string).or_else(|| {
        // Any other tool: its first string argument.
        input
            .as_object()?
            .iter()
            .find_map(|(_, v)| v.as_str().map(str::to_string))
    });
    let Some(text) = text else {
        return String::new();
    };
    let one_line = super::preview::visible(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    let mut out: String = one_line.chars().take(100).collect();
    if one_line.chars().count() > 100 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    #[test]
    fn lines_name_the_call_and_its_end() {
        let mut a = Activity::new(false);
        let start = a.start("t1", "Bash", &obj! { "command" => "ls  -la\nsrc" });
        assert_eq!(start, "● Bash ls -la src");
        let end = a.finish("t1", "Bash", false, "a.txt");
        assert!(
            end.starts_with("  ✓ Bash (0.") && end.ends_with("a.txt"),
            "{end}"
        );
        assert!(a.finish("t2", "Edit", true, "no").contains("✗ Edit"));
        assert_eq!(
            key_argument("mcp__x__y", &obj! { "n" => 1i64, "q" => "find" }),
            "find"
        );
        assert_eq!(key_argument("TodoWrite", &obj! {}), "");
        // The wait for an answer is not the call's time.
        a.start("t3", "Write", &obj! { "file_path" => "a" });
        std::thread::sleep(Duration::from_millis(300));
        a.restart("t3");
        assert!(a.elapsed("t3") < Duration::from_millis(250));
        a.restart("unknown");
        let colored = Activity::new(true).start("t", "Read", &obj! { "file_path" => "a" });
        assert!(colored.contains("\x1b[36m"));
    }

    #[test]
    fn progress_is_shown_when_it_says_something_new() {
        let mut a = Activity::new(false);
        a.start("t1", "mcp__s__count", &obj! {});
        assert_eq!(
            a.progress("t1", "1/3 · step 1").as_deref(),
            Some("  … mcp__s__count  1/3 · step 1")
        );
        assert_eq!(a.progress("t1", "1/3 · step 1"), None);
        assert!(
            a.progress("t1", "2/3\x1b[2J")
                .is_some_and(|l| !l.contains('\x1b'))
        );
        // A call that ended (or was never seen) shows nothing more.
        a.finish("t1", "mcp__s__count", false, "");
        assert_eq!(a.progress("t1", "3/3"), None);
    }
}
