//! What happens outside the loop's own steps, reported as it happens:
//! tool calls starting and finishing, permission questions, notices from
//! hooks, MCP servers and settings. The pipeline, tools and background
//! tasks push [`Report`]s into a [`Mailbox`]; the loop drains it into its
//! event sink whenever it wakes, and wakes when something arrives, so a
//! frontend sees a tool start while the tool still runs.
//!
//! Parts with no pipeline at hand (an MCP connection, the transcript
//! writer) say things through [`notice`]: one mailbox for the thread (tern
//! runs one executor on one thread), drained by the session's top-level
//! loop. Nothing below the frontends prints.

use std::cell::RefCell;

use crate::json::Value;

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Worth a line when someone watches (verbose, line mode).
    Info,
    /// Always worth a line: something did not happen as configured.
    Warning,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// A tool call entered the pipeline.
    ToolStarted {
        id: String,
        name: String,
        input: Value,
    },
    /// Something a running tool wants seen (e.g. Bash's latest line).
    ToolProgress {
        id: String,
        text: String,
    },
    /// A tool call left the pipeline; `summary` is its result's first line.
    ToolFinished {
        id: String,
        name: String,
        is_error: bool,
        summary: String,
    },
    /// A call needs a person's (or a program's) yes.
    PermissionAsked {
        id: String,
        name: String,
        question: String,
    },
    PermissionAnswered {
        id: String,
        name: String,
        allowed: bool,
        /// A yes that was saved ("always"): it outlives the session.
        saved: bool,
    },
    Notice {
        level: Level,
        text: String,
    },
}

impl Report {
    pub fn notice(level: Level, text: impl Into<String>) -> Report {
        Report::Notice {
            level,
            text: text.into(),
        }
    }
}

// Thread-local because the parts that report this way (MCP, the transcript
// writer, sub-agents) have no pipeline to report through; the session's
// loop, on the same thread, drains it.
thread_local! {
    static NOTICES: std::rc::Rc<Mailbox<Report>> = std::rc::Rc::default();
}

/// Tells whoever watches the session (see the module's doc).
pub fn notice(level: Level, text: impl Into<String>) {
    NOTICES.with(|n| n.push(Report::notice(level, text)));
}

/// The thread's notice mailbox, for the loop that drains it.
pub fn notices() -> std::rc::Rc<Mailbox<Report>> {
    NOTICES.with(std::rc::Rc::clone)
}

/// A queue with a wake-up for whoever drains it (one drainer: the loop).
pub struct Mailbox<T> {
    queue: RefCell<Vec<T>>,
    tx: smol::channel::Sender<()>,
    rx: smol::channel::Receiver<()>,
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        let (tx, rx) = smol::channel::unbounded();
        Mailbox {
            queue: RefCell::new(Vec::new()),
            tx,
            rx,
        }
    }
}

impl<T> Mailbox<T> {
    pub fn push(&self, item: T) {
        self.queue.borrow_mut().push(item);
        let _ = self.tx.try_send(());
    }

    pub fn take(&self) -> Vec<T> {
        while self.rx.try_recv().is_ok() {}
        std::mem::take(&mut *self.queue.borrow_mut())
    }

    pub fn is_empty(&self) -> bool {
        self.queue.borrow().is_empty()
    }

    /// Returns once something is queued.
    pub async fn wait(&self) {
        if !self.queue.borrow().is_empty() {
            return;
        }
        let _ = self.rx.recv().await;
    }
}

/// A tool's result in one short line for its card: what a file read
/// came to (its content is the model's, and would print a line of the
/// file on the card's own line), else the result's first line, cut.
pub fn card_summary(tool: &str, is_error: bool, content: &str) -> String {
    if tool == "Read" && !is_error {
        // Numbered lines are `   N\t…`; a note or an image has none.
        let numbered = content
            .lines()
            .filter(|l| {
                l.split_once('\t').is_some_and(|(n, _)| {
                    !n.trim().is_empty() && n.trim().bytes().all(|b| b.is_ascii_digit())
                })
            })
            .count();
        if numbered > 0 {
            let s = if numbered == 1 { "" } else { "s" };
            return format!("Read {numbered} line{s}");
        }
    }
    summary(content)
}

/// The first line of a text with something in it, cut for one line.
pub fn summary(content: &str) -> String {
    let line = content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(summary("\n  \nfirst\nsecond"), "first");
        assert_eq!(summary(&"x".repeat(200)).chars().count(), 121);
        assert_eq!(summary(""), "");
    }

    /// A Read card says how much was read; the file's text is the model's.
    #[test]
    fn a_read_is_summed_up_not_quoted() {
        let read = "     1\tfn main() {\n     2\t    secret();\n     3\t}\n";
        assert_eq!(card_summary("Read", false, read), "Read 3 lines");
        assert_eq!(card_summary("Read", false, "     1\tone\n"), "Read 1 line");
        assert_eq!(
            card_summary("Read", true, "File does not exist."),
            "File does not exist."
        );
        let empty = "<system-reminder>the file is empty</system-reminder>";
        assert_eq!(card_summary("Read", false, empty), empty);
    }

    #[test]
    fn a_mailbox_wakes_its_reader() {
        let m: std::rc::Rc<Mailbox<u32>> = Default::default();
        let reader = std::rc::Rc::clone(&m);
        smol::block_on(async {
            let ex = smol::LocalExecutor::new();
            ex.run(async {
                let waiter = ex.spawn(async move {
                    reader.wait().await;
                    reader.take()
                });
                smol::Timer::after(std::time::Duration::from_millis(5)).await;
                m.push(7);
                assert_eq!(waiter.await, vec![7]);
            })
            .await;
        });
        assert!(m.is_empty());
    }
}
