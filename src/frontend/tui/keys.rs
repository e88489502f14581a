//! Keys as the interface's state machines see them: crossterm's events
//! reduced to what tern acts on, each stamped with when it arrived (a
//! dialog ignores keys typed before it was on screen).

use std::time::Instant;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    Char(char),
    Enter,
    /// Shift+Enter, Alt+Enter or Ctrl-J: a new line in the composer.
    Newline,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    Tab,
    /// Shift+Tab.
    BackTab,
    Esc,
    /// Ctrl with a letter (lower case), other than those above.
    Ctrl(char),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    Key(Key, Instant),
    /// Bracketed paste: the text as pasted (no key of it is acted on).
    Paste(String, Instant),
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
}

/// One crossterm event as an [`Input`], if tern acts on it.
pub(crate) fn from_crossterm(ev: crossterm::event::Event) -> Option<Input> {
    use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
    let now = Instant::now();
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => {
            let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
            let shift_or_alt = k
                .modifiers
                .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT);
            let key = match k.code {
                KeyCode::Enter if shift_or_alt => Key::Newline,
                KeyCode::Enter => Key::Enter,
                KeyCode::Char('j') if ctrl => Key::Newline,
                KeyCode::Char(c) if ctrl => Key::Ctrl(c.to_ascii_lowercase()),
                KeyCode::Char(c) => Key::Char(c),
                KeyCode::Backspace => Key::Backspace,
                KeyCode::Delete => Key::Delete,
                KeyCode::Left => Key::Left,
                KeyCode::Right => Key::Right,
                KeyCode::Up => Key::Up,
                KeyCode::Down => Key::Down,
                KeyCode::Home => Key::Home,
                KeyCode::End => Key::End,
                KeyCode::Tab if k.modifiers.contains(KeyModifiers::SHIFT) => Key::BackTab,
                KeyCode::Tab => Key::Tab,
                KeyCode::BackTab => Key::BackTab,
                KeyCode::Esc => Key::Esc,
                _ => return None,
            };
            Some(Input::Key(key, now))
        }
        Event::Paste(text) => Some(Input::Paste(text, now)),
        Event::Resize(w, h) => Some(Input::Resize(w, h)),
        _ => None,
    }
}

/// Reads the terminal's events on a thread of its own (crossterm's
/// reader blocks) and hands them to the executor in order.
pub(crate) fn start_reader() -> smol::channel::Receiver<Input> {
    let (tx, rx) = smol::channel::unbounded();
    std::thread::spawn(move || {
        while let Ok(ev) = crossterm::event::read() {
            if let Some(input) = from_crossterm(ev)
                && tx.send_blocking(input).is_err()
            {
                break;
            }
        }
    });
    rx
}
