//! The interface without a terminal, for its benchmark.

use std::time::Instant;

use super::composer::Composer;
use super::keys::{Input, Key};
use super::screen::Screen;
use super::{Status, Tui};
use crate::agent::Event;

/// The interface without a terminal, drawing into a sink: what the
/// benchmark drives (a keystroke, a streamed token) on a long session.
pub struct Rig {
    tui: Tui,
    /// Kept so the key channel stays open.
    _keys: smol::channel::Sender<Input>,
}

impl Rig {
    pub fn new(cols: u16, rows: u16) -> Rig {
        let (tx, keys) = smol::channel::unbounded();
        let status = Status {
            model: "claude-sonnet-4-5".into(),
            mode: "default".into(),
            context: Some((12_000, 200_000)),
            cost: 0.0123,
            sandbox: true,
            shells: 0,
        };
        let screen = Screen::new(Box::new(std::io::sink()), cols.into(), rows.into());
        let composer = Composer::new(Vec::new(), None);
        let tui = Tui::new(screen, composer, status, true, std::env::temp_dir(), keys);
        Rig { tui, _keys: tx }
    }

    /// A session of `lines` lines of streamed Markdown, already shown.
    pub fn fill(&self, lines: usize) {
        for i in 0..lines {
            self.token(&format!(
                "Line {i} of the answer, with **bold** and `code`.\n"
            ));
        }
        self.tui.flush_text();
    }

    /// One key typed into the composer, and the redraw it causes.
    pub fn key(&self, c: char) {
        let action = self.tui.input(Input::Key(Key::Char(c), Instant::now()));
        debug_assert!(action.is_none());
        self.tui.redraw();
    }

    /// One streamed text delta, shown.
    pub fn token(&self, text: &str) {
        self.tui.event(&Event::TextDelta(text));
    }
}
