//! Streaming Markdown rendering for the inline interface. Source arrives in
//! deltas; complete lines whose rendering can no longer change are handed
//! out once (for the scrollback), the rest is rendered on demand for the
//! live region. Rendering is line by line, so only the unfinished tail (the
//! partial line, a table being built) is ever looked at again.

mod cells;
mod inline;
mod table;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use unicode_width::UnicodeWidthChar;

use cells::{
    BOLD, CODE, Cells, DIM, UNDER, cells_width, cluster, paint, push_str, spaces, take_line,
    wrap_into,
};
pub(crate) use cells::{clusters, width, wrap};
use inline::inline;
use table::{Table, delimiter, is_row, split_row};

/// Column widths depend on every row, so a table is held back; this caps
/// how long.
const MAX_TABLE_ROWS: usize = 200;

#[derive(Clone, Copy)]
struct Fence {
    ch: char,
    len: usize,
    indent: usize,
}

/// A list nesting level: source indent, output indent, output text column.
#[derive(Clone, Copy)]
struct Level {
    src: usize,
    out: usize,
    text: usize,
}

#[derive(Clone, Default)]
enum Held {
    #[default]
    None,
    /// A line with pipes that is a table header if a delimiter row follows.
    Header(String),
    Table(Table),
}

/// Block state carried from line to line.
#[derive(Clone, Default)]
struct Core {
    fence: Option<Fence>,
    lists: Vec<Level>,
    /// Something has been emitted (leading blank lines are dropped).
    started: bool,
    /// A blank line is owed before the next output (trailing ones are dropped).
    blank: bool,
    held: Held,
}

impl Core {
    fn emit(&mut self, out: &mut Vec<String>, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        if std::mem::take(&mut self.blank) {
            out.push(String::new());
        }
        self.started = true;
        out.extend(lines);
    }

    /// Processes one complete source line (without its '\n').
    fn feed(&mut self, raw: &str, w: usize, color: bool, out: &mut Vec<String>) {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let line: Cow<str> = if raw.contains('\t') {
            Cow::Owned(raw.replace('\t', "    "))
        } else {
            Cow::Borrowed(raw)
        };
        let rest = line.trim_start_matches(' ');
        if let Some(f) = self.fence {
            let n = rest.chars().take_while(|&c| c == f.ch).count();
            if n >= f.len && rest[n..].trim().is_empty() {
                self.fence = None;
            } else {
                let lines = code_lines(&line, f, w, color);
                self.emit(out, lines);
            }
            return;
        }
        match std::mem::take(&mut self.held) {
            Held::Header(h) => {
                if let Some(al) = delimiter(rest).filter(|al| al.len() == split_row(&h).len()) {
                    let mut t = Table::new(al);
                    t.header = Some(t.cells(&h, BOLD));
                    self.held = Held::Table(t);
                    return;
                }
                self.block(&h, w, color, out, false);
            }
            Held::Table(mut t) => {
                if is_row(rest) {
                    let row = t.cells(rest, 0);
                    t.rows.push(row);
                    if t.rows.len() >= MAX_TABLE_ROWS {
                        let lines = t.render(w, color, None);
                        self.emit(out, lines);
                        t = Table::new(t.aligns);
                    }
                    self.held = Held::Table(t);
                    return;
                }
                let lines = t.render(w, color, None);
                self.emit(out, lines);
            }
            Held::None => {}
        }
        self.block(&line, w, color, out, true);
    }

    fn block(&mut self, line: &str, w: usize, color: bool, out: &mut Vec<String>, table_ok: bool) {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = line[indent..].trim_end();
        if rest.is_empty() {
            self.blank = self.started;
            return;
        }
        let mut lines = Vec::new();
        let shallow = indent < 4;
        if let Some(ch) = rest.chars().next().filter(|&c| c == '`' || c == '~') {
            let len = rest.chars().take_while(|&c| c == ch).count();
            if len >= 3 && !(ch == '`' && rest[len..].contains('`')) {
                self.fence = Some(Fence { ch, len, indent });
                return;
            }
        }
        if shallow && let Some((level, text)) = heading(rest) {
            self.lists.clear();
            let st = if level <= 2 { BOLD | UNDER } else { BOLD };
            wrap_into(&mut lines, &[], &[], &inline(text, st), w, color);
        } else if shallow && is_rule(rest) {
            self.lists.clear();
            lines.push(paint(&vec![('─', DIM); w.clamp(1, 40)], color));
        } else if shallow && rest.starts_with('>') {
            self.lists.clear();
            quote(rest, w, color, &mut lines);
        } else if let Some((marker, text)) = list_item(rest) {
            while self.lists.last().is_some_and(|l| l.src > indent) {
                self.lists.pop();
            }
            let at = match self.lists.last().copied() {
                Some(l) if l.src == indent => {
                    self.lists.pop();
                    l.out
                }
                Some(l) => l.text,
                None => 0,
            };
            let mut first = spaces(at);
            push_str(&mut first, &marker, 0);
            first.push((' ', 0));
            let text_col = cells_width(&first);
            self.lists.push(Level {
                src: indent,
                out: at,
                text: text_col,
            });
            wrap_into(
                &mut lines,
                &first,
                &spaces(text_col),
                &inline(text, 0),
                w,
                color,
            );
        } else if table_ok && rest.contains('|') {
            self.held = Held::Header(line.to_string());
            return;
        } else {
            let pad = match self.lists.last() {
                Some(l) if indent > 0 => l.text,
                _ => {
                    self.lists.clear();
                    0
                }
            };
            wrap_into(
                &mut lines,
                &spaces(pad),
                &spaces(pad),
                &inline(rest, 0),
                w,
                color,
            );
        }
        self.emit(out, lines);
    }

    fn flush(&mut self, w: usize, color: bool, out: &mut Vec<String>) {
        match std::mem::take(&mut self.held) {
            Held::Header(h) => self.block(&h, w, color, out, false),
            Held::Table(t) => {
                let lines = t.render(w, color, None);
                self.emit(out, lines);
            }
            Held::None => {}
        }
    }
}

/// Code is shown verbatim: indented, hard-split at the width, never parsed.
fn code_lines(line: &str, f: Fence, w: usize, color: bool) -> Vec<String> {
    let lead = line.len() - line.trim_start_matches(' ').len();
    let body = &line[lead.min(f.indent)..];
    if body.trim().is_empty() {
        return vec![String::new()];
    }
    let mut cells = Cells::new();
    push_str(&mut cells, body, CODE);
    let w = w.max(1);
    let pad = 2 + f.indent.min(8);
    let (pad, avail) = if pad < w { (pad, w - pad) } else { (0, w) };
    let mut out = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        let (mut j, mut col) = (i, 0);
        while j < cells.len() {
            let (e, cw) = cluster(&cells, j);
            if col + cw > avail && j > i {
                break;
            }
            col += cw;
            j = e;
        }
        let mut l = spaces(pad);
        l.extend(take_line(&cells, (i, j), avail));
        out.push(paint(&l, color));
        i = j;
    }
    out
}

fn heading(rest: &str) -> Option<(usize, &str)> {
    let n = rest.bytes().take_while(|&b| b == b'#').count();
    let text = rest.get(n..)?;
    if n == 0 || n > 6 || !(text.is_empty() || text.starts_with(' ')) {
        return None;
    }
    let (text, bare) = (text.trim(), text.trim().trim_end_matches('#'));
    let closed = bare.is_empty() || bare.ends_with(' ');
    Some((n, if closed { bare.trim_end() } else { text }))
}

fn is_rule(rest: &str) -> bool {
    let v: Vec<char> = rest.chars().filter(|&c| c != ' ').collect();
    v.len() >= 3 && matches!(v[0], '-' | '*' | '_') && v.iter().all(|&c| c == v[0])
}

/// The marker to show and the item text, if `rest` starts a list item.
fn list_item(rest: &str) -> Option<(String, &str)> {
    let b = rest.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let (mut marker, after) = if matches!(b.first(), Some(b'-' | b'*' | b'+')) {
        (String::from("•"), &rest[1..])
    } else if (1..=9).contains(&digits) && matches!(b.get(digits), Some(b'.' | b')')) {
        (rest[..=digits].to_string(), &rest[digits + 1..])
    } else {
        return None;
    };
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    let mut text = after.trim_start();
    let task = match text.get(..3) {
        Some("[ ]") => Some('☐'),
        Some("[x]" | "[X]") => Some('☑'),
        _ => None,
    };
    if let Some(bx) = task
        && (text.len() == 3 || text[3..].starts_with(' '))
    {
        marker = if digits > 0 {
            format!("{marker} {bx}")
        } else {
            bx.to_string()
        };
        text = text[3..].trim_start();
    }
    Some((marker, text))
}

/// A block quote line: a dim bar per level, the content wrapped inside.
fn quote(rest: &str, w: usize, color: bool, out: &mut Vec<String>) {
    let (mut depth, mut s) = (0, rest);
    while let Some(t) = s.strip_prefix('>') {
        depth += 1;
        s = t.strip_prefix(' ').unwrap_or(t);
        if s.trim_start().starts_with('>') {
            s = s.trim_start();
        }
    }
    let mut bar = Cells::new();
    push_str(&mut bar, &"│ ".repeat(depth), DIM);
    let inner = s.trim_start();
    let (lead, text, st) = if let Some((n, h)) = heading(inner) {
        (String::new(), h, if n <= 2 { BOLD | UNDER } else { BOLD })
    } else if let Some((m, t)) = list_item(inner) {
        (format!("{}{m} ", " ".repeat(s.len() - inner.len())), t, 0)
    } else {
        (String::new(), inner, 0)
    };
    let mut first = bar.clone();
    push_str(&mut first, &lead, 0);
    let mut cont = bar;
    cont.extend(spaces(lead.chars().map(|c| c.width().unwrap_or(0)).sum()));
    wrap_into(out, &first, &cont, &inline(text, st), w, color);
}

/// A streaming Markdown renderer for one message at a time.
pub(crate) struct Markdown {
    color: bool,
    /// Source not yet consumed: at most the partial last line once
    /// `take_done` has run.
    buf: String,
    /// Bytes of `buf` known to hold no '\n'.
    scanned: usize,
    core: Core,
}

impl Markdown {
    /// `color`: emit ANSI SGR styles; false = plain text only (NO_COLOR),
    /// still with structure (bullets, indentation, table borders).
    pub(crate) fn new(color: bool) -> Markdown {
        Markdown {
            color,
            buf: String::new(),
            scanned: 0,
            core: Core::default(),
        }
    }

    /// Adds streamed text; split anywhere.
    pub(crate) fn push(&mut self, delta: &str) {
        self.buf.push_str(delta);
    }

    /// The rendered lines that are now final, removed from the renderer.
    pub(crate) fn take_done(&mut self, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        let Some(last) = self
            .buf
            .get(self.scanned..)
            .and_then(|t| t.rfind('\n'))
            .map(|p| p + self.scanned)
        else {
            self.scanned = self.buf.len();
            return out;
        };
        for line in self.buf[..last].split('\n') {
            self.core.feed(line, width, self.color, &mut out);
        }
        self.buf.drain(..=last);
        self.scanned = self.buf.len();
        out
    }

    /// The rendered unfinished tail, not removed: what `finish` would give now.
    pub(crate) fn pending(&self, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        if let Held::Table(t) = &self.core.held
            && self.scanned == self.buf.len()
        {
            // Only the partial line is left: render the held table in place
            // rather than cloning it with the rest of the state.
            if self.core.blank {
                out.push(String::new());
            }
            let rest = self.buf.trim_start_matches(' ');
            if rest.is_empty() || is_row(rest) {
                let extra = (!rest.is_empty()).then(|| t.parse_row(rest, 0));
                out.extend(t.render(width, self.color, extra.as_deref()));
                return out;
            }
            out.extend(t.render(width, self.color, None));
            let mut core = Core {
                lists: self.core.lists.clone(),
                started: true,
                ..Core::default()
            };
            Self::drain_into(&mut core, &self.buf, width, self.color, &mut out);
            return out;
        }
        let mut core = self.core.clone();
        Self::drain_into(&mut core, &self.buf, width, self.color, &mut out);
        out
    }

    /// The message ended: everything left, rendered and removed; the
    /// renderer is then empty and reusable.
    pub(crate) fn finish(&mut self, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        Self::drain_into(&mut self.core, &self.buf, width, self.color, &mut out);
        self.buf.clear();
        self.scanned = 0;
        self.core = Core::default();
        out
    }

    fn drain_into(core: &mut Core, buf: &str, w: usize, color: bool, out: &mut Vec<String>) {
        let mut lines = buf.split('\n').peekable();
        while let Some(line) = lines.next() {
            if lines.peek().is_some() || !line.is_empty() {
                core.feed(line, w, color, out);
            }
        }
        core.flush(w, color, out);
    }
}
