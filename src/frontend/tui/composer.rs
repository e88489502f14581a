//! The composer: a multi-line editor for the next message. Enter sends;
//! backslash+Enter, Ctrl-J and Shift+Enter (where the terminal reports it)
//! start a new line; a large paste is folded into a placeholder and put
//! back whole when sent; Up/Down walk the history at the first and last
//! line; Ctrl-R searches it; Tab completes a slash command or an `@file`.

use std::path::PathBuf;

use unicode_width::UnicodeWidthChar;

use super::keys::Key;

/// Pastes longer than this (lines or characters) are folded.
const FOLD_LINES: usize = 5;
const FOLD_CHARS: usize = 800;
/// Completions shown at once.
const SHOWN: usize = 6;
/// Files looked at for `@` completion (a huge tree is not walked whole).
const MAX_FILES: usize = 20_000;

#[derive(Default)]
pub(crate) struct Composer {
    text: Vec<char>,
    cursor: usize,
    pub(crate) history: Vec<String>,
    /// While walking the history: the entry shown, and what was typed.
    recall: Option<(usize, Vec<char>)>,
    /// Folded pastes: placeholder and text.
    pastes: Vec<(String, String)>,
    /// Ctrl-R: the query and how many matches back.
    search: Option<(String, usize)>,
    /// Slash commands and their descriptions, for completion.
    pub(crate) commands: Vec<(String, String)>,
    /// Where `@` paths are found, and the files once listed.
    pub(crate) root: Option<PathBuf>,
    files: Option<Vec<String>>,
}

impl Composer {
    pub(crate) fn new(commands: Vec<(String, String)>, root: Option<PathBuf>) -> Composer {
        Composer {
            commands,
            root,
            ..Composer::default()
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty() && self.search.is_none()
    }

    /// The text as shown (folded pastes as their placeholders).
    #[cfg(feature = "voice")]
    pub(crate) fn text(&self) -> String {
        self.text.iter().collect()
    }

    /// Replaces the text (a voice transcript), the cursor at its end.
    #[cfg(feature = "voice")]
    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.chars().collect();
        self.cursor = self.text.len();
        self.recall = None;
        self.search = None;
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.recall = None;
        self.search = None;
        self.pastes.clear();
    }

    fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += 1;
    }

    fn insert_str(&mut self, s: &str) {
        for c in s.chars() {
            self.insert(c);
        }
    }

    /// A bracketed paste: inserted as typed text (never a key: a newline
    /// in it does not send), folded when large.
    pub(crate) fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > FOLD_LINES || text.chars().count() > FOLD_CHARS {
            let placeholder = format!("[Pasted text #{} +{lines} lines]", self.pastes.len() + 1);
            self.insert_str(&placeholder);
            self.pastes.push((placeholder, text));
        } else {
            self.insert_str(&text);
        }
    }

    /// The message as it will be sent: placeholders put back.
    fn message(&self) -> String {
        let mut s: String = self.text.iter().collect();
        for (placeholder, text) in &self.pastes {
            s = s.replacen(placeholder.as_str(), text, 1);
        }
        s
    }

    /// One key; `Some` with the message when Enter sends it.
    pub(crate) fn key(&mut self, key: &Key) -> Option<String> {
        if self.search.is_some() {
            self.search_key(key);
            return None;
        }
        match key {
            Key::Enter => {
                if self.cursor > 0 && self.text[self.cursor - 1] == '\\' {
                    self.text[self.cursor - 1] = '\n';
                    return None;
                }
                if self.text.iter().all(|c| c.is_whitespace()) {
                    return None;
                }
                let message = self.message();
                let typed: String = self.text.iter().collect();
                if self.history.last() != Some(&typed) {
                    self.history.push(typed);
                }
                self.clear();
                return Some(message);
            }
            Key::Newline => self.insert('\n'),
            Key::Char(c) => self.insert(*c),
            Key::Tab => self.complete(),
            Key::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.text.remove(self.cursor);
            }
            Key::Delete if self.cursor < self.text.len() => {
                self.text.remove(self.cursor);
            }
            Key::Left => self.cursor = self.cursor.saturating_sub(1),
            Key::Right => self.cursor = (self.cursor + 1).min(self.text.len()),
            Key::Home | Key::Ctrl('a') => self.cursor = self.line_start(),
            Key::End | Key::Ctrl('e') => self.cursor = self.line_end(),
            Key::Ctrl('u') => {
                let start = self.line_start();
                self.text.drain(start..self.cursor);
                self.cursor = start;
            }
            Key::Ctrl('k') => {
                let end = self.line_end();
                self.text.drain(self.cursor..end);
            }
            Key::Ctrl('w') => {
                let mut start = self.cursor;
                while start > 0 && self.text[start - 1].is_whitespace() {
                    start -= 1;
                }
                while start > 0 && !self.text[start - 1].is_whitespace() {
                    start -= 1;
                }
                self.text.drain(start..self.cursor);
                self.cursor = start;
            }
            Key::Ctrl('r') => self.search = Some((String::new(), 0)),
            Key::Up => {
                if self.line_start() > 0 {
                    self.vertical(-1);
                } else {
                    self.recall_step(-1);
                }
            }
            Key::Down => {
                if self.line_end() < self.text.len() {
                    self.vertical(1);
                } else {
                    self.recall_step(1);
                }
            }
            _ => {}
        }
        None
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor]
            .iter()
            .rposition(|&c| c == '\n')
            .map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Up or down one logical line, keeping the column where it can.
    fn vertical(&mut self, dir: i32) {
        let col = self.cursor - self.line_start();
        if dir < 0 {
            let this_start = self.line_start();
            self.cursor = this_start - 1;
            let start = self.line_start();
            self.cursor = (start + col).min(this_start - 1);
        } else {
            let next_start = self.line_end() + 1;
            self.cursor = next_start;
            let end = self.line_end();
            self.cursor = (next_start + col).min(end);
        }
    }

    fn recall_step(&mut self, dir: i32) {
        let len = self.history.len();
        let at = match (&self.recall, dir) {
            (None, d) if d < 0 && len > 0 => len - 1,
            (None, _) => return,
            (Some((i, _)), d) if d < 0 => i.saturating_sub(1),
            (Some((i, _)), _) => i + 1,
        };
        if self.recall.is_none() {
            self.recall = Some((at, self.text.clone()));
        }
        if at >= len {
            // Past the newest: back to what was being typed.
            if let Some((_, typed)) = self.recall.take() {
                self.text = typed;
            }
        } else {
            if let Some(r) = self.recall.as_mut() {
                r.0 = at;
            }
            self.text = self.history[at].chars().collect();
        }
        self.cursor = self.text.len();
    }

    fn search_match(&self) -> Option<&String> {
        let (query, back) = self.search.as_ref()?;
        self.history
            .iter()
            .rev()
            .filter(|h| h.contains(query.as_str()))
            .nth(*back)
    }

    fn search_key(&mut self, key: &Key) {
        let Some((query, back)) = self.search.as_mut() else {
            return;
        };
        match key {
            Key::Char(c) => {
                query.push(*c);
                *back = 0;
            }
            Key::Backspace => {
                query.pop();
                *back = 0;
            }
            Key::Ctrl('r') => *back += 1,
            Key::Enter | Key::Tab | Key::Right | Key::End => {
                if let Some(found) = self.search_match().cloned() {
                    self.text = found.chars().collect();
                    self.cursor = self.text.len();
                }
                self.search = None;
            }
            Key::Esc | Key::Ctrl('g') => self.search = None,
            _ => {}
        }
    }

    /// Leaves a Ctrl-R search (Esc); false when there was none.
    pub(crate) fn cancel_search(&mut self) -> bool {
        self.search.take().is_some()
    }

    /// The word being typed, if it can be completed: a slash command at
    /// the very start, or an `@path`.
    fn completing(&self) -> Option<(usize, String)> {
        let start = self.text[..self.cursor]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let word: String = self.text[start..self.cursor].iter().collect();
        let slash = start == 0 && word.starts_with('/');
        (slash || word.starts_with('@')).then_some((start, word))
    }

    /// What the word being typed could become, with a description.
    pub(crate) fn candidates(&mut self) -> Vec<(String, String)> {
        let Some((_, word)) = self.completing() else {
            return Vec::new();
        };
        if let Some(prefix) = word.strip_prefix('@') {
            let files = self.files();
            let lower = prefix.to_lowercase();
            let mut found: Vec<(String, String)> = files
                .iter()
                .filter(|f| f.starts_with(prefix))
                .chain(
                    files
                        .iter()
                        .filter(|f| !f.starts_with(prefix) && f.to_lowercase().contains(&lower)),
                )
                .take(SHOWN)
                .map(|f| (format!("@{f}"), String::new()))
                .collect();
            found.dedup();
            return found;
        }
        self.commands
            .iter()
            .filter(|(name, _)| name.starts_with(&word))
            .take(SHOWN)
            .cloned()
            .collect()
    }

    fn files(&mut self) -> &Vec<String> {
        let root = self.root.clone();
        self.files.get_or_insert_with(|| {
            let Some(root) = root else {
                return Vec::new();
            };
            ignore::WalkBuilder::new(&root)
                .build()
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .filter_map(|e| {
                    e.path()
                        .strip_prefix(&root)
                        .ok()
                        .map(|p| p.display().to_string())
                })
                .take(MAX_FILES)
                .collect()
        })
    }

    fn complete(&mut self) {
        let Some((start, _)) = self.completing() else {
            return;
        };
        let Some((first, _)) = self.candidates().into_iter().next() else {
            return;
        };
        self.text.drain(start..self.cursor);
        self.cursor = start;
        self.insert_str(&first);
        self.insert(' ');
    }

    /// The composer's lines (a prompt on the first), wrapped at `width`
    /// by display width, and where the cursor is in them.
    pub(crate) fn render(&mut self, width: usize, color: bool) -> (Vec<String>, (usize, usize)) {
        let width = width.max(4);
        if let Some((query, _)) = &self.search {
            let found = self.search_match().cloned().unwrap_or_default();
            let line = format!("(search history) `{query}': {}", one_line(&found));
            let fitted = super::markdown::wrap(&line, width);
            let col = super::markdown::width(fitted.last().map_or("", String::as_str));
            let rows = fitted.len();
            return (fitted, (rows - 1, col.min(width - 1)));
        }
        let mut lines = Vec::new();
        let mut row = String::from("> ");
        let mut col = 2;
        let mut cursor = (0, 2);
        for (i, &c) in self.text.iter().enumerate() {
            if i == self.cursor {
                cursor = (lines.len(), col);
            }
            if c == '\n' {
                lines.push(std::mem::replace(&mut row, "  ".to_string()));
                col = 2;
                continue;
            }
            let shown = shown_char(c);
            let w: usize = shown.chars().map(|c| c.width().unwrap_or(0)).sum();
            if col + w > width {
                lines.push(std::mem::replace(&mut row, "  ".to_string()));
                col = 2;
                if i == self.cursor {
                    cursor = (lines.len(), col);
                }
            }
            row.push_str(&shown);
            col += w;
        }
        if self.cursor == self.text.len() {
            if col >= width {
                lines.push(std::mem::replace(&mut row, "  ".to_string()));
                col = 2;
            }
            cursor = (lines.len(), col);
        }
        lines.push(row);
        let candidates = self.candidates();
        for (name, about) in candidates {
            let text = if about.is_empty() {
                format!("    {name}")
            } else {
                format!("    {name}  {about}")
            };
            let fitted = super::markdown::wrap(&text, width)
                .into_iter()
                .next()
                .unwrap_or_default();
            lines.push(if color {
                format!("\x1b[2m{fitted}\x1b[0m")
            } else {
                fitted
            });
        }
        (lines, cursor)
    }
}

/// A character as the composer shows it: controls made visible (a pasted
/// escape sequence must not act on the terminal).
fn shown_char(c: char) -> String {
    match c {
        '\t' => "    ".to_string(),
        c if c.is_control() => format!("\\u{{{:x}}}", c as u32),
        c => c.to_string(),
    }
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(c: &mut Composer, s: &str) {
        for ch in s.chars() {
            c.key(&Key::Char(ch));
        }
    }

    #[test]
    fn backslash_enter_and_ctrl_j_continue_and_enter_sends() {
        let mut c = Composer::default();
        typed(&mut c, "one\\");
        assert_eq!(c.key(&Key::Enter), None);
        typed(&mut c, "two");
        c.key(&Key::Newline);
        typed(&mut c, "three");
        assert_eq!(c.key(&Key::Enter), Some("one\ntwo\nthree".into()));
        assert!(c.is_empty());
        // Nothing to send.
        typed(&mut c, "  ");
        assert_eq!(c.key(&Key::Enter), None);
    }

    #[test]
    fn a_large_paste_is_folded_and_sent_whole_and_never_sends_itself() {
        let mut c = Composer::default();
        let big: String = (0..40).map(|i| format!("line {i}\n")).collect();
        c.paste(&big);
        let (lines, _) = c.render(80, false);
        assert_eq!(lines, vec!["> [Pasted text #1 +40 lines]".to_string()]);
        typed(&mut c, " fix it");
        assert_eq!(c.key(&Key::Enter), Some(format!("{big} fix it")));
        // A small paste with a newline is text, not a send.
        c.paste("a\r\nb");
        assert_eq!(c.key(&Key::Enter), Some("a\nb".into()));
    }

    #[test]
    fn history_and_search() {
        let mut c = Composer::default();
        for m in ["build it", "test it", "ship it"] {
            typed(&mut c, m);
            c.key(&Key::Enter);
        }
        typed(&mut c, "draft");
        c.key(&Key::Up);
        c.key(&Key::Up);
        assert_eq!(c.key(&Key::Enter), Some("test it".into()));
        c.key(&Key::Up);
        c.key(&Key::Down);
        c.key(&Key::Down);
        assert!(
            c.is_empty(),
            "back past the newest entry: what was typed (nothing)"
        );
        c.key(&Key::Ctrl('r'));
        typed(&mut c, "bu");
        c.key(&Key::Enter);
        assert_eq!(c.key(&Key::Enter), Some("build it".into()));
    }

    #[test]
    fn up_and_down_move_between_lines_before_the_history() {
        let mut c = Composer::default();
        c.history.push("old".into());
        typed(&mut c, "abc");
        c.key(&Key::Newline);
        typed(&mut c, "de");
        c.key(&Key::Up);
        typed(&mut c, "X");
        assert_eq!(c.key(&Key::Enter), Some("abXc\nde".into()));
    }

    #[test]
    fn slash_commands_complete_with_tab() {
        let mut c = Composer::new(
            vec![
                ("/clear".into(), "start a fresh conversation".into()),
                ("/compact".into(), "summarise".into()),
                ("/cost".into(), "tokens".into()),
            ],
            None,
        );
        typed(&mut c, "/co");
        let shown: Vec<String> = c.candidates().into_iter().map(|(n, _)| n).collect();
        assert_eq!(shown, vec!["/compact", "/cost"]);
        let (lines, _) = c.render(80, false);
        assert!(lines[1].contains("/compact  summarise"), "{lines:?}");
        c.key(&Key::Tab);
        assert_eq!(c.key(&Key::Enter), Some("/compact ".into()));
    }

    #[test]
    fn the_cursor_is_where_the_next_character_goes_by_display_width() {
        let mut c = Composer::default();
        typed(&mut c, "日本");
        let (lines, cursor) = c.render(80, false);
        assert_eq!(lines[0], "> 日本");
        assert_eq!(cursor, (0, 6));
        c.key(&Key::Left);
        assert_eq!(c.render(80, false).1, (0, 4));
        // Wrapped: every row fits.
        let mut c = Composer::default();
        typed(&mut c, &"界".repeat(30));
        let (lines, cursor) = c.render(11, false);
        assert!(
            lines.iter().all(|l| super::super::markdown::width(l) <= 11),
            "{lines:?}"
        );
        assert!(cursor.1 <= 11);
        // Controls are shown, not sent to the terminal.
        let mut c = Composer::default();
        c.paste("\x1b[2J");
        assert!(!c.render(80, false).0[0].contains('\x1b'));
    }
}
