//! A question with numbered options, where what is highlighted is what
//! Enter grants. The seed's fixed boundaries: the highlight, the focus
//! and the answer always name the same option; leaving the comment field
//! (Shift+Tab or Esc) never approves; Enter answers once; keys are taken
//! in the order they arrived, so Down then Enter grants the option below,
//! however fast they come.

use std::time::Instant;

use super::keys::Key;
use super::markdown::wrap;

/// What the person chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Picked {
    /// Option `index` (from 0), with what was typed in its comment field.
    Option {
        index: usize,
        comment: Option<String>,
    },
    /// Esc, outside the comment field: no, and stop.
    Dismissed,
}

pub(crate) struct Dialog {
    /// The question, whole (already made visible: no raw controls).
    pub(crate) title: String,
    pub(crate) options: Vec<String>,
    /// The option whose comment field typing goes to (the "no, and tell
    /// tern…" one), if any.
    comment_on: Option<usize>,
    highlight: usize,
    /// What is typed in the comment field; kept when focus leaves it.
    comment: String,
    /// Whether keys go to the comment field.
    typing: bool,
    /// When it was first drawn; keys that arrived before are not for it.
    pub(crate) opened: Instant,
}

impl Dialog {
    pub(crate) fn new(title: String, options: Vec<String>, comment_on: Option<usize>) -> Dialog {
        Dialog {
            title,
            options,
            comment_on,
            highlight: 0,
            comment: String::new(),
            typing: false,
            opened: Instant::now(),
        }
    }

    /// The option Enter would grant now.
    #[cfg(test)]
    pub(crate) fn highlighted(&self) -> usize {
        self.highlight
    }

    fn pick(&self, index: usize) -> Picked {
        let comment = (self.comment_on == Some(index) && !self.comment.trim().is_empty())
            .then(|| self.comment.trim().to_string());
        Picked::Option { index, comment }
    }

    /// One key; `Some` when it answers the question.
    pub(crate) fn key(&mut self, key: &Key) -> Option<Picked> {
        if self.typing {
            match key {
                Key::Char(c) => self.comment.push(*c),
                Key::Backspace => {
                    self.comment.pop();
                }
                Key::Ctrl('u') => self.comment.clear(),
                // Enter in the field answers with the field's option
                // (which has the focus); nothing else.
                Key::Enter => return Some(self.pick(self.highlight)),
                // Leaving the field: back to the options, nothing granted.
                Key::Esc | Key::BackTab | Key::Tab => self.typing = false,
                Key::Up => {
                    self.typing = false;
                    self.highlight = self.highlight.saturating_sub(1);
                }
                _ => {}
            }
            return None;
        }
        let last = self.options.len().saturating_sub(1);
        match key {
            Key::Up | Key::Ctrl('p') | Key::Char('k') => {
                self.highlight = self.highlight.saturating_sub(1)
            }
            Key::Down | Key::Ctrl('n') | Key::Char('j') => {
                self.highlight = (self.highlight + 1).min(last)
            }
            Key::Enter => return Some(self.pick(self.highlight)),
            Key::Char(c) if c.is_ascii_digit() => {
                let n = c.to_digit(10).unwrap_or(0) as usize;
                if (1..=self.options.len()).contains(&n) {
                    self.highlight = n - 1;
                    return Some(self.pick(n - 1));
                }
            }
            Key::Esc => return Some(Picked::Dismissed),
            // Into the comment field: Tab, or typing while its option is
            // highlighted.
            Key::Tab if self.comment_on == Some(self.highlight) => self.typing = true,
            Key::Char(c) if self.comment_on == Some(self.highlight) => {
                self.typing = true;
                self.comment.push(*c);
            }
            // Shift+Tab cycles the mode outside a dialog; here it does
            // nothing (it must not grant by changing the mode).
            _ => {}
        }
        None
    }

    /// The dialog's lines for the live region, and the cursor's place in
    /// them when the comment field has the focus.
    pub(crate) fn render(
        &self,
        width: usize,
        color: bool,
    ) -> (Vec<String>, Option<(usize, usize)>) {
        let paint = |code: &str, s: &str| {
            if color {
                format!("\x1b[{code}m{s}\x1b[0m")
            } else {
                s.to_string()
            }
        };
        let mut out = Vec::new();
        for l in wrap(&self.title, width.saturating_sub(2).max(1)) {
            out.push(paint("1", &format!("  {l}")));
        }
        let mut cursor = None;
        for (i, label) in self.options.iter().enumerate() {
            let mark = if i == self.highlight { "❯" } else { " " };
            for (j, l) in wrap(label, width.saturating_sub(7).max(1))
                .into_iter()
                .enumerate()
            {
                let l = if j == 0 {
                    format!("  {mark} {}. {l}", i + 1)
                } else {
                    format!("       {l}")
                };
                out.push(if i == self.highlight {
                    paint("36", &l)
                } else {
                    l
                });
            }
            if self.comment_on == Some(i) && (self.typing || !self.comment.is_empty()) {
                let shown: String = self.comment.chars().collect();
                let line = format!("       > {shown}");
                let fitted = fit_tail(&line, width);
                if self.typing {
                    cursor = Some((out.len(), super::markdown::width(&fitted)));
                }
                out.push(fitted);
            }
        }
        let hint = if self.typing {
            "  Enter sends · Esc or Shift+Tab leaves the field (nothing is approved)"
        } else {
            "  Enter confirms the highlighted option · ↑↓ move · digits choose · Esc says no"
        };
        out.push(paint("2", &fit_head(hint, width)));
        (out, cursor)
    }
}

/// The first columns of a plain line that fit in `width`.
fn fit_head(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    s.chars()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= width
        })
        .collect()
}

/// The last `width` columns of a plain line (a long comment shows its
/// end, where the typing is).
fn fit_tail(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    let mut kept: Vec<char> = Vec::new();
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w >= width.max(1) {
            break;
        }
        used += w;
        kept.push(c);
    }
    kept.into_iter().rev().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialog() -> Dialog {
        Dialog::new(
            "Edit a.txt".into(),
            vec![
                "Yes".into(),
                "Yes, and don't ask again this session".into(),
                "No, and tell tern what to do differently".into(),
            ],
            Some(2),
        )
    }

    fn keys(d: &mut Dialog, ks: &[Key]) -> Option<Picked> {
        for k in ks {
            if let Some(p) = d.key(k) {
                return Some(p);
            }
        }
        None
    }

    #[test]
    fn enter_grants_what_is_highlighted_after_every_earlier_key() {
        let mut d = dialog();
        assert_eq!(
            keys(&mut d, &[Key::Down, Key::Enter]),
            Some(Picked::Option {
                index: 1,
                comment: None
            })
        );
        let mut d = dialog();
        assert_eq!(
            keys(
                &mut d,
                &[Key::Down, Key::Down, Key::Down, Key::Up, Key::Enter]
            ),
            Some(Picked::Option {
                index: 1,
                comment: None
            })
        );
        let mut d = dialog();
        assert_eq!(
            keys(&mut d, &[Key::Enter]),
            Some(Picked::Option {
                index: 0,
                comment: None
            })
        );
    }

    #[test]
    fn digits_choose_directly_and_out_of_range_ones_do_nothing() {
        let mut d = dialog();
        assert_eq!(keys(&mut d, &[Key::Char('9'), Key::Char('0')]), None);
        assert_eq!(
            keys(&mut d, &[Key::Char('2')]),
            Some(Picked::Option {
                index: 1,
                comment: None
            })
        );
    }

    #[test]
    fn leaving_the_comment_field_never_approves() {
        for leave in [Key::BackTab, Key::Esc, Key::Tab] {
            let mut d = dialog();
            // To option 3 and type: the field has the focus.
            assert_eq!(
                keys(
                    &mut d,
                    &[Key::Down, Key::Down, Key::Char('u'), Key::Char('s')]
                ),
                None
            );
            assert_eq!(d.key(&leave), None, "{leave:?} answered");
            // Still on option 3, and the draft is kept.
            assert_eq!(d.highlighted(), 2);
            assert_eq!(
                d.key(&Key::Enter),
                Some(Picked::Option {
                    index: 2,
                    comment: Some("us".into())
                })
            );
        }
        // Shift+Tab outside the field changes nothing either.
        let mut d = dialog();
        assert_eq!(keys(&mut d, &[Key::BackTab, Key::BackTab]), None);
        assert_eq!(d.highlighted(), 0);
    }

    #[test]
    fn the_comment_takes_digits_and_enter_sends_it_as_a_no() {
        let mut d = dialog();
        let ks: Vec<Key> = [Key::Down, Key::Down, Key::Tab]
            .into_iter()
            .chain("use port 9090".chars().map(Key::Char))
            .collect();
        assert_eq!(keys(&mut d, &ks), None);
        assert_eq!(
            d.key(&Key::Enter),
            Some(Picked::Option {
                index: 2,
                comment: Some("use port 9090".into())
            })
        );
        // Typing on an option without a field does nothing.
        let mut d = dialog();
        assert_eq!(keys(&mut d, &[Key::Char('x'), Key::Char('y')]), None);
        assert_eq!(d.key(&Key::Esc), Some(Picked::Dismissed));
    }

    #[test]
    fn the_highlight_is_drawn_where_enter_would_grant() {
        let mut d = dialog();
        d.key(&Key::Down);
        let (lines, cursor) = d.render(80, false);
        let marked: Vec<&String> = lines.iter().filter(|l| l.contains('❯')).collect();
        assert_eq!(marked.len(), 1);
        assert!(
            marked[0].contains("2. Yes, and don't ask again"),
            "{lines:?}"
        );
        assert_eq!(cursor, None);
        for w in [10, 20, 40] {
            let (lines, _) = d.render(w, false);
            assert!(
                lines.iter().all(|l| super::super::markdown::width(l) <= w),
                "{lines:?}"
            );
        }
    }
}
