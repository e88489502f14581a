//! Streaming Markdown rendering for the inline interface, parsed as
//! CommonMark (with tables, strikethrough and task lists) by pulldown-cmark.
//!
//! Source arrives in deltas and the scrollback takes each line once, so
//! only what can no longer change is handed out (`take_done`): the source
//! is cut into chunks at places where everything before is final — the
//! start of a top-level block or of a top-level list item, at column 0,
//! once its line is complete (CommonMark decides a line's block from the
//! lines before it, so later text cannot reach back past such a start).
//! Each chunk is parsed and drawn once; only the unfinished tail (usually
//! one block) is parsed again, for `pending`. A top-level fenced code
//! block is not held at all: its lines are verbatim, so each is drawn as
//! it completes. A table is held up to `MAX_TABLE_ROWS` rows and any other
//! stretch without a cut up to `MAX_HELD_LINES` lines, so a long message
//! never makes each delta re-parse much.
//!
//! Drawing does not depend on where the cuts fall (blank lines are drawn
//! where the source has them, list numbers as written, link definitions
//! carried forward), so a streamed message ends as the whole one renders.
//! Known difference: a reference link used before its definition is
//! resolved only if both are in the same chunk.

mod cells;
mod render;
mod table;
#[cfg(test)]
mod tests;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

pub(crate) use cells::{clusters, width, wrap};
use render::{Carry, Defs, code_line, options, render_chunk};

/// Column widths depend on every row, so a table is held back; this caps
/// how long.
const MAX_TABLE_ROWS: usize = 200;

/// Lines held without a place to cut before the first of them is drawn
/// anyway (a paragraph, quote or list item that long is cut there).
const MAX_HELD_LINES: usize = 200;

/// Bytes of held source parsed first when looking for a cut.
const SCAN_WINDOW: usize = 8 * 1024;

/// An open top-level fenced code block.
#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
    /// Spaces before the opening fence, removed from each content line.
    indent: usize,
}

impl Fence {
    /// The opening line at the start of `line`, if it is one.
    fn open(line: &str) -> Option<Fence> {
        let indent = line.bytes().take_while(|&b| b == b' ').count();
        let ch = *line
            .as_bytes()
            .get(indent)
            .filter(|&&b| b == b'`' || b == b'~')?;
        let len = line[indent..].bytes().take_while(|&b| b == ch).count();
        (len >= 3).then_some(Fence { ch, len, indent })
    }

    /// Whether `line` closes the block: up to 3 spaces, at least as many
    /// fence characters, then only spaces.
    fn closes(&self, line: &str) -> bool {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let ind = line.bytes().take_while(|&b| b == b' ').count();
        let rest = &line[ind..];
        let n = rest.bytes().take_while(|&b| b == self.ch).count();
        ind < 4 && n >= self.len && rest[n..].bytes().all(|b| b == b' ' || b == b'\t')
    }

    /// A content line with the opening fence's indentation removed.
    fn strip<'a>(&self, line: &'a str) -> &'a str {
        let ind = line.bytes().take_while(|&b| b == b' ').count();
        &line[ind.min(self.indent)..]
    }
}

/// Where the source may be cut, found by parsing the held lines.
enum Cut {
    /// Everything before is final.
    At(usize),
    /// A top-level fenced code block opens on the line starting here.
    Fence(usize),
    /// A table reached `MAX_TABLE_ROWS` rows; its header and delimiter
    /// lines are `head`, parsed again in front of its next rows.
    Table { at: usize, head: (usize, usize) },
}

/// A streaming Markdown renderer for one message at a time.
#[derive(Clone)]
pub(crate) struct Markdown {
    color: bool,
    /// Source not yet drawn for good.
    buf: String,
    /// Bytes of `buf` known to hold no '\n' not yet looked at.
    scanned: usize,
    fence: Option<Fence>,
    carry: Carry,
    defs: Defs,
    /// A table cut at the cap: its header and delimiter lines.
    table_head: Option<String>,
}

impl Markdown {
    /// `color`: emit ANSI SGR styles; false = plain text only (NO_COLOR),
    /// still with structure (bullets, indentation, table borders).
    pub(crate) fn new(color: bool) -> Markdown {
        Markdown {
            color,
            buf: String::new(),
            scanned: 0,
            fence: None,
            carry: Carry::default(),
            defs: Defs::new(),
            table_head: None,
        }
    }

    /// Adds streamed text; split anywhere.
    pub(crate) fn push(&mut self, delta: &str) {
        self.buf.push_str(delta);
    }

    /// The rendered lines that are now final, removed from the renderer.
    pub(crate) fn take_done(&mut self, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        // Only a new complete line can make anything final.
        let fresh = self
            .buf
            .get(self.scanned..)
            .is_some_and(|t| t.contains('\n'));
        if fresh {
            self.advance(width, &mut out);
        }
        self.scanned = self.buf.len();
        out
    }

    /// The rendered unfinished tail, not removed: what `finish` would give now.
    pub(crate) fn pending(&self, width: usize) -> Vec<String> {
        self.clone().finish(width)
    }

    /// The message ended: everything left, rendered and removed; the
    /// renderer is then empty and reusable.
    pub(crate) fn finish(&mut self, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        if !self.buf.is_empty() && !self.buf.ends_with('\n') {
            self.buf.push('\n');
        }
        self.advance(width, &mut out);
        if self.fence.is_none() && !self.buf.is_empty() {
            let head = self.table_head.take().unwrap_or_default();
            let src = format!("{head}{}", self.buf);
            let carry = &mut self.carry;
            render_chunk(
                &src,
                !head.is_empty(),
                &self.defs,
                carry,
                width,
                self.color,
                &mut out,
            );
        }
        *self = Markdown::new(self.color);
        out
    }

    /// Draws every complete line that can be drawn for good and removes
    /// it from `buf`.
    fn advance(&mut self, w: usize, out: &mut Vec<String>) {
        let mut start = 0;
        loop {
            if let Some(f) = self.fence {
                while let Some(nl) = self.buf[start..].find('\n') {
                    let line = &self.buf[start..start + nl];
                    start += nl + 1;
                    if f.closes(line) {
                        self.fence = None;
                        break;
                    }
                    code_line(out, &[], f.strip(line), w, self.color);
                    self.carry.started = true;
                }
                if self.fence.is_some() {
                    break;
                }
                continue;
            }
            let Some(end) = self.buf[start..].rfind('\n').map(|p| start + p + 1) else {
                break;
            };
            let head = self.table_head.clone().unwrap_or_default();
            // A cut found in the first lines is as good as one found in all
            // of them, so a long buffer (a whole message given at once) is
            // scanned a window at a time rather than once per cut.
            let mut window = SCAN_WINDOW;
            let (src, cut) = loop {
                let upto = self.buf.as_bytes()[start..end]
                    .get(window..)
                    .and_then(|t| memchr::memchr(b'\n', t))
                    .map_or(end, |p| start + window + p + 1);
                let src = format!("{head}{}", &self.buf[start..upto]);
                let cut = scan(&src, head.len());
                if cut.is_some() || upto == end {
                    break (src, cut);
                }
                window = window.saturating_mul(4);
            };
            let Some(cut) = cut else {
                break;
            };
            let (at, next_head) = match cut {
                Cut::At(at) => (at, None),
                Cut::Fence(at) => (at, None),
                Cut::Table { at, head: (a, b) } => (at, src.get(a..b).map(str::to_string)),
            };
            let made = render_chunk(
                &src[..at],
                !head.is_empty(),
                &self.defs,
                &mut self.carry,
                w,
                self.color,
                out,
            );
            for (k, v) in made {
                self.defs.entry(k).or_insert(v);
            }
            self.table_head = next_head;
            start += at - head.len();
            if let Cut::Fence(_) = cut {
                let line_end = self.buf[start..]
                    .find('\n')
                    .map_or(self.buf.len(), |p| start + p + 1);
                self.fence = Fence::open(&self.buf[start..line_end]);
                start = line_end;
                if self.carry.started && std::mem::take(&mut self.carry.owed) {
                    out.push(String::new());
                }
                self.carry.owed = false;
            }
        }
        self.buf.drain(..start);
    }
}

/// The place to cut `src` (whole lines; its first `head` bytes are a cut
/// table's repeated header): the first fenced code block or full table
/// met, else the last block start, else a forced cut after
/// `MAX_HELD_LINES` lines.
fn scan(src: &str, head: usize) -> Option<Cut> {
    let nl: Vec<usize> = memchr::memchr_iter(b'\n', src.as_bytes()).collect();
    let line_of = |off: usize| nl.partition_point(|&p| p < off);
    let line_start = |k: usize| if k == 0 { 0 } else { nl[k - 1] + 1 };
    let (mut anchor, mut last) = (line_of(head), None);
    // A candidate at line `k`: the stretch since the last one is capped.
    let forced = |anchor: usize, k: usize| {
        (k > anchor + MAX_HELD_LINES).then(|| Cut::At(line_start(anchor + MAX_HELD_LINES)))
    };
    let mut depth = 0usize;
    let mut list = false;
    // A top-level table: its line and its first body row's line, rows seen.
    let mut table: Option<(usize, Option<usize>, usize)> = None;
    for (ev, r) in Parser::new_ext(src, options()).into_offset_iter() {
        match ev {
            Event::Start(tag) => {
                let k = line_of(r.start);
                let at_line = line_start(k);
                let col0 = at_line == r.start && r.start > head;
                if depth == 0 {
                    list = matches!(tag, Tag::List(_));
                    if let Tag::CodeBlock(CodeBlockKind::Fenced(_)) = &tag
                        && src[at_line..r.start].bytes().all(|b| b == b' ')
                        && at_line >= head
                    {
                        return Some(forced(anchor, k).unwrap_or(Cut::Fence(at_line)));
                    }
                    if let Tag::Table(_) = &tag {
                        table = Some((at_line, None, 0));
                    }
                }
                let item = depth == 1 && list && matches!(tag, Tag::Item);
                if col0 && (depth == 0 || item) {
                    if let Some(c) = forced(anchor, k) {
                        return Some(c);
                    }
                    (anchor, last) = (k, Some(at_line));
                }
                if depth == 1
                    && let (Some(t), Tag::TableRow) = (table.as_mut(), &tag)
                {
                    t.1.get_or_insert(at_line);
                    // Rows are held by the table cap, not the line cap.
                    anchor = k;
                }
                depth += 1;
            }
            Event::End(tag) => {
                depth = depth.saturating_sub(1);
                if depth == 1
                    && tag == TagEnd::TableRow
                    && let Some((t0, Some(r0), rows)) = table.as_mut()
                {
                    *rows += 1;
                    if *rows >= MAX_TABLE_ROWS {
                        let after = r.end.min(src.len());
                        let at = if after > 0 && src.as_bytes()[after - 1] == b'\n' {
                            after
                        } else {
                            src[after..].find('\n').map_or(src.len(), |p| after + p + 1)
                        };
                        return Some(Cut::Table {
                            at,
                            head: (*t0, *r0),
                        });
                    }
                }
                if depth == 0 {
                    table = None;
                }
            }
            _ => {}
        }
    }
    forced(anchor, nl.len()).or(last.map(Cut::At))
}
