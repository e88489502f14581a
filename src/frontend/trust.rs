//! What a person is told about a directory's own settings: the question
//! at an interactive start (line mode and the terminal interface, before
//! either takes the terminal), and the notice a `-p` run writes on stderr.
//!
//! The question is asked once per change: a yes is recorded with the
//! digest of each item, a no too, and the next start asks again only
//! when something new or changed would be added.

use std::io::{BufRead, Write};

use crate::config::trust::{Standing, Trust};

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Use the settings as they are now, and remember that.
    Trust,
    /// Run without them, and do not ask again until they change.
    Decline,
    /// Do not start.
    Quit,
}

/// The question, on the terminal; Quit when standard input ends.
pub(crate) fn ask(trust: &Trust) -> Answer {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(question(trust).as_bytes());
    let _ = err.flush();
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        let _ = err.write_all(b"Choose 1, 2 or 3: ");
        let _ = err.flush();
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return Answer::Quit,
            Ok(_) => {}
        }
        match line.trim() {
            "1" | "y" | "yes" => return Answer::Trust,
            "2" | "n" | "no" => return Answer::Decline,
            "3" | "q" | "quit" => return Answer::Quit,
            _ => {}
        }
    }
}

/// The question's text: what the project would add, each item with its
/// file, what changed since a yes, and the choices.
fn question(trust: &Trust) -> String {
    let mut out = String::new();
    let head = match trust.standing() {
        Standing::Changed => format!(
            "\nThe settings of {} changed since you trusted them.\nNew or changed, and not used until you say so:\n",
            trust.dir.display()
        ),
        _ => format!(
            "\n{} is not a trusted directory. Its own settings would add:\n",
            trust.dir.display()
        ),
    };
    out.push_str(&head);
    for i in trust.ignored() {
        let mark = if i.changed { "  (new or changed)" } else { "" };
        out.push_str(&format!("  - {}{mark}\n      from {}\n", i.what, i.file));
    }
    for u in &trust.user_only {
        out.push_str(&format!(
            "  Never used from a project, trusted or not: {} ({})\n",
            u.what, u.file
        ));
    }
    out.push_str(
        "\nA repository's settings can run commands on your machine (hooks, MCP servers)\n\
         and let commands run without asking. Trust them only if you trust where they came from.\n\
         \n  1. Yes, use them (remembered until they change)\n  \
         2. No, start without them (asked again if they change)\n  3. Quit\n",
    );
    out
}

/// The lines a non-interactive run writes on stderr: what was left out
/// and what only the user may set. Nothing when nothing was.
pub(crate) fn notice(trust: &Trust) {
    for line in trust.notice() {
        eprintln!("tern: {line}");
    }
}
