//! The inline screen: lines committed to the terminal's scrollback (they
//! never change again), and below them a live region redrawn in place.
//! A redraw rewrites only the rows that changed, inside a synchronized
//! update (terminals that do not know it ignore it), so a keystroke costs
//! one row, not the screen.

use std::io::Write;

use super::markdown::{clusters, width as display_width};

pub(crate) struct Screen {
    out: Box<dyn Write>,
    /// The live region as last drawn.
    drawn: Vec<String>,
    /// The row of the live region the cursor was left on.
    cursor_row: usize,
    pub(crate) cols: usize,
    pub(crate) rows: usize,
}

impl Screen {
    pub(crate) fn new(out: Box<dyn Write>, cols: usize, rows: usize) -> Screen {
        Screen {
            out,
            drawn: Vec::new(),
            cursor_row: 0,
            cols: cols.max(1),
            rows: rows.max(1),
        }
    }

    /// To column 0 of the live region's first row.
    fn to_top(&self, buf: &mut String) {
        if self.cursor_row > 0 {
            buf.push_str(&format!("\x1b[{}A", self.cursor_row));
        }
        buf.push('\r');
    }

    /// Prints `lines` above the live region, into the scrollback for good,
    /// then draws `live` below them.
    pub(crate) fn commit(&mut self, lines: &[String], live: Vec<String>, cursor: (usize, usize)) {
        if lines.is_empty() {
            return self.draw(live, cursor);
        }
        let mut buf = String::from("\x1b[?2026h");
        self.to_top(&mut buf);
        // Row by row, never "erase below": tmux (scroll-on-clear) would
        // copy the old region into the scrollback when it is at the top.
        for l in lines {
            buf.push_str("\x1b[2K");
            buf.push_str(l);
            buf.push_str("\x1b[0m\r\n");
        }
        let stale = self.drawn.len().saturating_sub(lines.len());
        self.drawn.clear();
        self.cursor_row = 0;
        self.frame(&mut buf, live, cursor, stale);
        buf.push_str("\x1b[?2026l");
        self.write(&buf);
    }

    /// Redraws the live region as `live`, the cursor at `cursor` (row,
    /// column) in it.
    pub(crate) fn draw(&mut self, live: Vec<String>, cursor: (usize, usize)) {
        let mut buf = String::from("\x1b[?2026h");
        self.to_top(&mut buf);
        let stale = self.drawn.len();
        self.frame(&mut buf, live, cursor, stale);
        buf.push_str("\x1b[?2026l");
        self.write(&buf);
    }

    /// The terminal changed size: what was drawn may have been reflowed,
    /// so the region is drawn afresh.
    pub(crate) fn resize(&mut self, cols: usize, rows: usize) {
        self.cols = cols.max(1);
        self.rows = rows.max(1);
        let mut buf = String::new();
        self.to_top(&mut buf);
        let old = self.drawn.len().min(self.rows);
        for i in 0..old {
            buf.push_str("\x1b[2K");
            if i + 1 < old {
                buf.push_str("\x1b[1B");
            }
        }
        if old > 1 {
            buf.push_str(&format!("\x1b[{}A", old - 1));
        }
        buf.push('\r');
        self.write(&buf);
        self.drawn.clear();
        self.cursor_row = 0;
    }

    /// Leaves the region as it is and puts the cursor below it (on exit).
    pub(crate) fn leave(&mut self) {
        let below = self.drawn.len().saturating_sub(self.cursor_row);
        let mut buf = String::new();
        if below > 1 {
            buf.push_str(&format!("\x1b[{}B", below - 1));
        }
        buf.push_str("\r\n");
        self.write(&buf);
        self.drawn.clear();
        self.cursor_row = 0;
    }

    /// Writes the region from its top row; rows below it up to `stale`
    /// (what was there before) are cleared.
    fn frame(&mut self, buf: &mut String, live: Vec<String>, cursor: (usize, usize), stale: usize) {
        // The region never outgrows the terminal (rows above its top
        // cannot be reached again); its end, where the composer is, stays.
        let cap = self.rows.saturating_sub(1).max(1);
        let skip = live.len().saturating_sub(cap);
        let live: Vec<String> = live
            .into_iter()
            .skip(skip)
            .map(|l| fit(&one_row(&l), self.cols))
            .collect();
        let cursor = (cursor.0.saturating_sub(skip), cursor.1);
        let last = live.len().saturating_sub(1);
        for (i, line) in live.iter().enumerate() {
            if self.drawn.get(i) != Some(line) {
                buf.push_str("\x1b[2K");
                buf.push_str(line);
                buf.push_str("\x1b[0m");
            }
            if i < last {
                buf.push_str("\r\n");
            }
        }
        // Rows the old region had and this one has not: blanked.
        let extra = stale.min(cap).saturating_sub(live.len());
        for _ in 0..extra {
            buf.push_str("\r\n\x1b[2K");
        }
        let row = cursor.0.min(last);
        let up = last - row + extra;
        if up > 0 {
            buf.push_str(&format!("\x1b[{up}A"));
        }
        buf.push('\r');
        let col = cursor.1.min(self.cols.saturating_sub(1));
        if col > 0 {
            buf.push_str(&format!("\x1b[{col}C"));
        }
        self.drawn = live;
        self.cursor_row = row;
    }

    fn write(&mut self, buf: &str) {
        let _ = self
            .out
            .write_all(buf.as_bytes())
            .and_then(|()| self.out.flush());
    }
}

/// A live row is one row: a newline or carriage return in it (an error
/// message, a model's text) would move the cursor and break the count.
fn one_row(line: &str) -> std::borrow::Cow<'_, str> {
    if line.contains(['\n', '\r']) {
        std::borrow::Cow::Owned(line.replace(['\n', '\r'], " "))
    } else {
        std::borrow::Cow::Borrowed(line)
    }
}

/// `line` cut to `cols` display columns, its escape sequences kept (a
/// wrapped row would throw the region's row count off). Widths are the
/// widest any terminal draws (`markdown::width`).
pub(crate) fn fit(line: &str, cols: usize) -> String {
    if display_width(line) <= cols {
        return line.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('\x1b') {
            // Copy a CSI sequence whole.
            let len = match after.strip_prefix('[') {
                Some(csi) => {
                    let fin = csi
                        .char_indices()
                        .find(|&(_, d)| ('\x40'..='\x7e').contains(&d))
                        .map_or(csi.len(), |(at, d)| at + d.len_utf8());
                    2 + fin
                }
                None => 1,
            };
            let (esc, after) = rest.split_at(len.min(rest.len()));
            out.push_str(esc);
            rest = after;
            continue;
        }
        let text_end = rest.find('\x1b').unwrap_or(rest.len());
        let (text, after) = rest.split_at(text_end);
        for (one, w) in clusters(text) {
            if used + w > cols {
                out.push_str("\x1b[0m");
                return out;
            }
            used += w;
            out.push_str(one);
        }
        rest = after;
    }
    out.push_str("\x1b[0m");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[derive(Clone, Default)]
    struct Sink(Rc<RefCell<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Sink {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.borrow_mut())).unwrap()
        }
    }

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_redraw_writes_only_the_rows_that_changed() {
        let sink = Sink::default();
        let mut s = Screen::new(Box::new(sink.clone()), 80, 24);
        s.draw(lines(&["cards", "> hel", "status"]), (1, 5));
        let first = sink.take();
        assert!(first.contains("cards") && first.contains("> hel") && first.contains("status"));
        s.draw(lines(&["cards", "> hell", "status"]), (1, 6));
        let second = sink.take();
        assert!(second.contains("> hell"), "{second:?}");
        assert!(
            !second.contains("cards"),
            "an unchanged row was written: {second:?}"
        );
        // Up from the composer row to the top, then back to it.
        assert!(second.starts_with("\x1b[?2026h\x1b[1A\r"), "{second:?}");
        assert!(second.contains("\x1b[1A\r\x1b[6C"), "{second:?}");
    }

    #[test]
    fn committed_lines_go_above_and_the_region_follows_whole() {
        let sink = Sink::default();
        let mut s = Screen::new(Box::new(sink.clone()), 80, 24);
        s.draw(lines(&["> ", "status"]), (0, 2));
        sink.take();
        s.commit(&lines(&["● Bash ls"]), lines(&["> ", "status"]), (0, 2));
        let out = sink.take();
        let at = out.find("● Bash ls").unwrap();
        assert!(
            !out.contains("\x1b[J"),
            "never erase-below (tmux copies it to the scrollback)"
        );
        assert!(
            out[..at].contains("\x1b[2K"),
            "the old region's row is cleared first"
        );
        assert!(out[at..].contains("> ") && out[at..].contains("status"));
    }

    #[test]
    fn the_region_fits_the_terminal() {
        let sink = Sink::default();
        let mut s = Screen::new(Box::new(sink.clone()), 10, 4);
        let many: Vec<String> = (0..10)
            .map(|i| format!("row {i} is much too long"))
            .collect();
        s.draw(many, (9, 3));
        let out = sink.take();
        assert!(!out.contains("row 6") && out.contains("row 7") && out.contains("row 9"));
        assert_eq!(s.drawn.len(), 3);
        assert!(
            s.drawn.iter().all(|l| display_width(l) <= 10),
            "{:?}",
            s.drawn
        );
        assert_eq!(fit("\x1b[36mabcdef\x1b[0m", 3), "\x1b[36mabc\x1b[0m");
    }
}
