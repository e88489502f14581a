//! pulldown-cmark's events for one chunk of source, drawn as styled,
//! wrapped lines: containers (quotes, list items) become line prefixes,
//! leaf blocks are wrapped inside them, inline markup becomes cell styles.

use std::collections::HashMap;

use pulldown_cmark::{
    Alignment, BrokenLink, CowStr, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
};

use super::cells::{
    BOLD, CODE, Cells, DIM, ITALIC, STRIKE, Style, UNDER, URL, cells_width, cluster, paint,
    push_str, spaces, take_line, wrap_into,
};
use super::table::{Align, Table};

/// Link reference definitions seen in earlier chunks: normalised label to
/// destination, so a later chunk resolves `[text][label]` as the whole
/// message would (CommonMark keeps the first definition of a label).
pub(super) type Defs = HashMap<String, String>;

/// Prefixes drawn for at most this many nested containers: hostile input
/// (`>>>>…` thousands deep) must not cost a line per level.
const MAX_PREFIX_DEPTH: usize = 16;

pub(super) fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// A label as CommonMark matches it: case-folded, inner whitespace collapsed.
fn norm(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// State carried from one chunk to the next.
#[derive(Clone, Default)]
pub(super) struct Carry {
    /// Something has been drawn (leading blank lines are dropped).
    pub(super) started: bool,
    /// The source had a blank line since the last block: one is drawn
    /// before the next block (trailing ones are dropped).
    pub(super) owed: bool,
}

/// Whether a whole line between offsets `a` and `b` of `src` is blank
/// (spaces, or only the `>` of enclosing quotes).
pub(super) fn has_blank(src: &str, a: usize, b: usize) -> bool {
    let b = b.min(src.len());
    let Some(seg) = src.get(a.min(b)..b) else {
        return false;
    };
    // The partial line `a` sits in belongs to the block before; the line
    // `b` sits in to the block after.
    let after_nl = a == 0 || src.as_bytes().get(a - 1) == Some(&b'\n');
    let mut lines: Vec<&str> = seg.split('\n').collect();
    lines.pop();
    let skip = usize::from(!after_nl);
    lines
        .iter()
        .skip(skip)
        .any(|l| l.bytes().all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'>')))
}

/// A container: a block quote (a bar) or a list item (its marker on the
/// first line, spaces under it on the rest).
struct Cont {
    quote: bool,
    marker: Cells,
    /// The item's marker has not been drawn yet.
    fresh: bool,
}

struct Link {
    seg: usize,
    at: usize,
    url: String,
    auto: bool,
}

struct Row {
    cells: Vec<Cells>,
    head: bool,
}

pub(super) struct Render<'s> {
    src: &'s str,
    w: usize,
    color: bool,
    out: &'s mut Vec<String>,
    carry: &'s mut Carry,
    conts: Vec<Cont>,
    /// Per open list: the next number of an ordered list.
    lists: Vec<Option<u64>>,
    styles: Vec<Style>,
    /// The open text block's lines (split at source line breaks).
    segs: Vec<Cells>,
    text_open: bool,
    text_end: usize,
    links: Vec<Link>,
    code: Option<String>,
    html: Option<String>,
    table: Option<Table>,
    row: Option<Row>,
    /// End offset of the last leaf block, for blank-line detection.
    last_end: usize,
    /// The first table's header is a continuation's repeated header.
    skip_head: bool,
}

/// Renders `src` (whole lines) into `out`; returns the link reference
/// definitions it made, for later chunks.
pub(super) fn render_chunk(
    src: &str,
    skip_head: bool,
    defs: &Defs,
    carry: &mut Carry,
    w: usize,
    color: bool,
    out: &mut Vec<String>,
) -> Vec<(String, String)> {
    let resolve = |l: BrokenLink<'_>| {
        defs.get(&norm(&l.reference))
            .map(|d| (CowStr::from(d.clone()), CowStr::from("")))
    };
    let parser = Parser::new_with_broken_link_callback(src, options(), Some(resolve));
    let made: Vec<(String, String)> = parser
        .reference_definitions()
        .iter()
        .map(|(k, d)| (norm(k), d.dest.to_string()))
        .collect();
    let mut r = Render {
        src,
        w: w.max(1),
        color,
        out,
        carry,
        conts: Vec::new(),
        lists: Vec::new(),
        styles: Vec::new(),
        segs: Vec::new(),
        text_open: false,
        text_end: 0,
        links: Vec::new(),
        code: None,
        html: None,
        table: None,
        row: None,
        last_end: 0,
        skip_head,
    };
    let before = r.carry.owed;
    let mut any = false;
    for (ev, range) in parser.into_offset_iter() {
        any = true;
        r.event(ev, range);
    }
    r.close_text();
    let tail = has_blank(src, r.last_end, src.len());
    r.carry.owed = if any { tail } else { before || tail };
    made
}

impl Render<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(0)
    }

    fn event(&mut self, ev: Event<'_>, range: std::ops::Range<usize>) {
        match ev {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag, range),
            Event::Text(t) => {
                if let Some(c) = self.code.as_mut() {
                    c.push_str(&t);
                } else if let Some(h) = self.html.as_mut() {
                    h.push_str(&t);
                } else {
                    self.inline(&t, self.style(), &range);
                }
            }
            Event::Code(t) => self.inline(&t, self.style() | CODE, &range),
            Event::Html(t) | Event::InlineHtml(t) => {
                if let Some(h) = self.html.as_mut() {
                    h.push_str(&t);
                } else {
                    // Shown as written: a terminal draws no HTML.
                    let t = t.strip_suffix('\n').unwrap_or(&t).to_string();
                    for (k, part) in t.split('\n').enumerate() {
                        if k > 0 {
                            self.segs.push(Cells::new());
                        }
                        self.inline(part, self.style(), &range);
                    }
                }
            }
            Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) => {
                self.inline(&t, self.style(), &range)
            }
            Event::SoftBreak | Event::HardBreak => {
                // Source lines are kept (CommonMark lets a soft break be a
                // line ending): a model's line-per-item text stays as written.
                self.open_text(range.start);
                self.segs.push(Cells::new());
            }
            Event::Rule => {
                self.block_start(range.start);
                let (first, _) = self.prefixes();
                let pw = cells_width(&first);
                let (mut line, avail) = if pw < self.w {
                    (first, self.w - pw)
                } else {
                    (Cells::new(), self.w)
                };
                line.extend(std::iter::repeat_n(('─', DIM), avail.clamp(1, 40)));
                self.push_line(&line);
                self.last_end = range.end;
            }
            Event::TaskListMarker(done) => {
                if let Some(c) = self.conts.last_mut().filter(|c| !c.quote && c.fresh) {
                    let bx = if done { '☑' } else { '☐' };
                    if c.marker.first().is_some_and(|m| m.0 == '•') {
                        c.marker = vec![(bx, 0), (' ', 0)];
                    } else {
                        c.marker.extend([(bx, 0), (' ', 0)]);
                    }
                }
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: std::ops::Range<usize>) {
        let at = range.start;
        match tag {
            Tag::Paragraph => {
                self.close_text();
                self.block_start(at);
                self.open_text(at);
            }
            Tag::Heading { level, .. } => {
                self.close_text();
                self.block_start(at);
                let st = if level <= HeadingLevel::H2 {
                    BOLD | UNDER
                } else {
                    BOLD
                };
                self.open_text(at);
                self.styles.push(st);
            }
            Tag::BlockQuote(_) => {
                self.close_text();
                self.block_start(at);
                self.conts.push(Cont {
                    quote: true,
                    marker: Cells::new(),
                    fresh: false,
                });
            }
            Tag::CodeBlock(_) => {
                self.close_text();
                self.block_start(at);
                self.code = Some(String::new());
            }
            Tag::HtmlBlock => {
                self.close_text();
                self.block_start(at);
                self.html = Some(String::new());
            }
            Tag::List(first) => {
                self.close_text();
                self.block_start(at);
                self.lists.push(first);
            }
            Tag::Item => {
                self.close_text();
                self.block_start(at);
                let next = self.lists.last_mut().and_then(Option::as_mut);
                let marker = match next {
                    Some(n) => {
                        // The number as written, so a message cut into
                        // chunks numbers as the whole one does.
                        let src = self.src.get(at..).unwrap_or("");
                        let digits = src.bytes().take_while(u8::is_ascii_digit).count();
                        let shown = match src.as_bytes().get(digits) {
                            Some(b'.' | b')') if (1..=9).contains(&digits) => {
                                src[..=digits].to_string()
                            }
                            _ => format!("{n}."),
                        };
                        *n = n.saturating_add(1);
                        shown
                    }
                    None => "•".to_string(),
                };
                let mut cells = Cells::new();
                push_str(&mut cells, &marker, 0);
                cells.push((' ', 0));
                self.conts.push(Cont {
                    quote: false,
                    marker: cells,
                    fresh: true,
                });
            }
            Tag::Table(aligns) => {
                self.close_text();
                self.block_start(at);
                let aligns = aligns
                    .iter()
                    .map(|a| match a {
                        Alignment::Center => Align::Center,
                        Alignment::Right => Align::Right,
                        Alignment::Left | Alignment::None => Align::Left,
                    })
                    .collect();
                self.table = Some(Table::new(aligns));
            }
            Tag::TableHead | Tag::TableRow if self.row.is_none() => {
                self.row = Some(Row {
                    cells: Vec::new(),
                    head: matches!(tag, Tag::TableHead),
                });
            }
            Tag::TableCell => {
                self.segs = vec![Cells::new()];
                self.text_open = true;
                let head = self.row.as_ref().is_some_and(|r| r.head);
                self.styles.push(if head { BOLD } else { 0 });
            }
            Tag::Emphasis => self.styles.push(self.style() | ITALIC),
            Tag::Strong => self.styles.push(self.style() | BOLD),
            Tag::Strikethrough => self.styles.push(self.style() | STRIKE),
            Tag::Link {
                link_type,
                dest_url,
                ..
            }
            | Tag::Image {
                link_type,
                dest_url,
                ..
            } => {
                self.open_text(at);
                let seg = self.segs.len().saturating_sub(1);
                let at = self.segs.last().map_or(0, Vec::len);
                self.links.push(Link {
                    seg,
                    at,
                    url: dest_url.to_string(),
                    auto: matches!(link_type, LinkType::Autolink | LinkType::Email),
                });
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd, range: std::ops::Range<usize>) {
        match tag {
            TagEnd::Paragraph => self.close_text(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.close_text();
            }
            TagEnd::BlockQuote(_) => {
                self.close_text();
                self.conts.pop();
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                self.code_block(&code);
                self.last_end = range.end;
            }
            TagEnd::HtmlBlock => {
                let html = self.html.take().unwrap_or_default();
                let body = html.strip_suffix('\n').unwrap_or(&html);
                let (mut first, cont) = self.prefixes();
                for line in body.split('\n') {
                    let mut cells = Cells::new();
                    push_str(&mut cells, line.trim_end_matches('\r'), 0);
                    wrap_into(self.out, &first, &cont, &cells, self.w, self.color);
                    first.clone_from(&cont);
                }
                self.drawn();
                self.last_end = range.end;
            }
            TagEnd::List(_) => {
                self.close_text();
                self.lists.pop();
            }
            TagEnd::Item => {
                self.close_text();
                if self.conts.last().is_some_and(|c| c.fresh) {
                    // An empty item still shows its marker.
                    let (first, _) = self.prefixes();
                    self.push_line(&first);
                }
                self.conts.pop();
            }
            TagEnd::TableCell => {
                self.styles.pop();
                self.text_open = false;
                let mut cell = Cells::new();
                for (k, s) in std::mem::take(&mut self.segs).into_iter().enumerate() {
                    if k > 0 {
                        cell.push((' ', 0));
                    }
                    cell.extend(s);
                }
                if let Some(r) = self.row.as_mut() {
                    r.cells.push(cell);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let (Some(t), Some(r)) = (self.table.as_mut(), self.row.take())
                    && !(r.head && self.skip_head)
                {
                    t.push_row(r.cells, r.head);
                }
            }
            TagEnd::Table => {
                self.skip_head = false;
                if let Some(t) = self.table.take() {
                    self.table_lines(&t);
                }
                self.last_end = range.end;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => self.end_link(),
            _ => {}
        }
    }

    /// Inline text into the open text block (a tight list item's text
    /// comes without a paragraph around it).
    fn inline(&mut self, text: &str, st: Style, range: &std::ops::Range<usize>) {
        self.open_text(range.start);
        if let Some(seg) = self.segs.last_mut() {
            push_str(seg, text, st);
        }
        self.text_end = self.text_end.max(range.end);
    }

    fn open_text(&mut self, at: usize) {
        if !self.text_open {
            self.block_start(at);
            self.text_open = true;
            self.segs = vec![Cells::new()];
            self.text_end = at;
        }
    }

    fn end_link(&mut self) {
        let Some(l) = self.links.pop() else {
            return;
        };
        let st = self.style();
        let same = self.segs.len() == l.seg + 1;
        let Some(seg) = self.segs.last_mut() else {
            return;
        };
        let text: &[(char, Style)] = if same {
            seg.get(l.at..).unwrap_or_default()
        } else {
            &[]
        };
        let bare = same && (text.is_empty() || text.iter().map(|c| c.0).eq(l.url.chars()));
        if bare || (l.auto && same) {
            seg.truncate(l.at);
            let shown = if bare || !l.auto {
                l.url.as_str()
            } else {
                l.url.strip_prefix("mailto:").unwrap_or(&l.url)
            };
            push_str(seg, shown, st | URL);
        } else if !l.url.is_empty() {
            push_str(seg, " (", st);
            push_str(seg, &l.url, st | URL);
            push_str(seg, ")", st);
        }
    }

    /// Draws the open text block (paragraph, heading, tight item text).
    fn close_text(&mut self) {
        if !self.text_open || self.row.is_some() {
            return;
        }
        self.text_open = false;
        let segs = std::mem::take(&mut self.segs);
        let (mut first, cont) = self.prefixes();
        for seg in &segs {
            wrap_into(self.out, &first, &cont, seg, self.w, self.color);
            first.clone_from(&cont);
        }
        self.drawn();
        self.links.clear();
        self.last_end = self.text_end;
    }

    /// A blank line before a block that the source separated by one.
    fn block_start(&mut self, at: usize) {
        if self.carry.started && (self.carry.owed || has_blank(self.src, self.last_end, at)) {
            let (_, cont) = self.prefixes();
            let end = cont.iter().rposition(|c| c.0 != ' ').map_or(0, |p| p + 1);
            self.out.push(paint(&cont[..end], self.color));
        }
        self.carry.owed = false;
        self.last_end = self.last_end.max(at);
    }

    /// First-line and continuation prefixes of the containers.
    fn prefixes(&self) -> (Cells, Cells) {
        let (mut first, mut cont) = (Cells::new(), Cells::new());
        for c in self.conts.iter().take(MAX_PREFIX_DEPTH) {
            if c.quote {
                push_str(&mut first, "│ ", DIM);
                push_str(&mut cont, "│ ", DIM);
            } else {
                let n = cells_width(&c.marker);
                if c.fresh {
                    first.extend_from_slice(&c.marker);
                } else {
                    first.extend(spaces(n));
                }
                cont.extend(spaces(n));
            }
        }
        (first, cont)
    }

    /// Lines were drawn: item markers are used up.
    fn drawn(&mut self) {
        self.carry.started = true;
        for c in &mut self.conts {
            c.fresh = false;
        }
    }

    fn push_line(&mut self, cells: &[(char, Style)]) {
        let end = cells.iter().rposition(|c| c.0 != ' ').map_or(0, |p| p + 1);
        self.out.push(paint(&cells[..end], self.color));
        self.drawn();
    }

    fn code_block(&mut self, code: &str) {
        let (mut first, cont) = self.prefixes();
        let body = code.strip_suffix('\n').unwrap_or(code);
        if !code.is_empty() {
            for line in body.split('\n') {
                code_line(self.out, &first, line, self.w, self.color);
                first.clone_from(&cont);
            }
        }
        self.drawn();
    }

    fn table_lines(&mut self, t: &Table) {
        let (first, cont) = self.prefixes();
        let pw = cells_width(&first).max(cells_width(&cont));
        let (first, cont, avail) = if pw + 4 < self.w {
            (first, cont, self.w - pw)
        } else {
            (Cells::new(), Cells::new(), self.w)
        };
        let lines = t.render(avail, self.color);
        let (first, cont) = (paint(&first, self.color), paint(&cont, self.color));
        for (k, l) in lines.iter().enumerate() {
            let p = if k == 0 { &first } else { &cont };
            self.out.push(format!("{p}{l}"));
        }
        if !lines.is_empty() {
            self.drawn();
        }
    }
}

/// Code is shown verbatim: indented by 2, hard-split at the width, never
/// parsed; a blank code line keeps only the container prefix.
pub(super) fn code_line(
    out: &mut Vec<String>,
    prefix: &[(char, Style)],
    line: &str,
    w: usize,
    color: bool,
) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let w = w.max(1);
    let pw = cells_width(prefix);
    if line.trim().is_empty() {
        let end = prefix.iter().rposition(|c| c.0 != ' ').map_or(0, |p| p + 1);
        let keep = if pw < w { end } else { 0 };
        out.push(paint(&prefix[..keep], color));
        return;
    }
    let mut cells = Cells::new();
    push_str(&mut cells, line, CODE);
    let (mut lead, avail) = if pw + 2 < w {
        (prefix.to_vec(), w - pw - 2)
    } else if 2 < w {
        (Cells::new(), w - 2)
    } else {
        (Cells::new(), w)
    };
    if avail < w {
        lead.extend(spaces(2));
    }
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
        let mut l = lead.clone();
        l.extend(take_line(&cells, (i, j), avail));
        out.push(paint(&l, color));
        i = j;
    }
}
