//! Styled cells and line layout: styles, display width, visible
//! characters, line breaking and painting to SGR strings.

use std::iter::repeat_n;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Style bits; painted as SGR only when colour is on.
pub(super) type Style = u8;
pub(super) const BOLD: Style = 1;
pub(super) const DIM: Style = 2;
pub(super) const ITALIC: Style = 4;
pub(super) const UNDER: Style = 8;
pub(super) const CODE: Style = 16;
pub(super) const STRIKE: Style = 32;
pub(super) const URL: Style = UNDER | DIM;
const SGR: [(Style, &str); 6] = [
    (BOLD, "1"),
    (DIM, "2"),
    (ITALIC, "3"),
    (UNDER, "4"),
    (STRIKE, "9"),
    (CODE, "36"),
];

/// Styled characters: lines are cut from these, so styles survive wrapping.
pub(super) type Cells = Vec<(char, Style)>;

/// Display width of `s` in terminal columns, skipping ANSI CSI escape
/// sequences (ESC [ ... final byte) that this module itself emits; each
/// cluster counted as the widest terminal draws it (`cluster_width`).
pub(crate) fn width(s: &str) -> usize {
    let b = s.as_bytes();
    let (mut total, mut seg, mut i) = (0, 0, 0);
    while i < b.len() {
        if b[i] != 0x1b {
            i += 1;
            continue;
        }
        total += s.get(seg..i).map_or(0, text_width);
        i += 1;
        if b.get(i) == Some(&b'[') {
            i += 1;
            while i < b.len() && !(0x40..=0x7e).contains(&b[i]) {
                i += 1;
            }
            i = (i + 1).min(b.len());
        }
        seg = i;
    }
    total + s.get(seg..).map_or(0, text_width)
}

/// Width of text without escapes, cluster by cluster.
fn text_width(s: &str) -> usize {
    clusters(s).map(|(_, w)| w).sum()
}

/// The clusters of `s` (a character and those that join it) with their
/// widths, in order.
pub(crate) fn clusters(s: &str) -> impl Iterator<Item = (&str, usize)> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let mut chars = rest.char_indices();
        chars.next()?;
        let end = chars
            .find(|&(_, c)| !joins(c))
            .map_or(rest.len(), |(at, _)| at);
        let (one, after) = rest.split_at(end);
        rest = after;
        Some((one, cluster_width(one)))
    })
}

/// A cluster's width as the widest terminal draws it. Terminals disagree
/// on sequences (tmux 3.3 draws 👍🏽 in 4 columns and ☀️ in 1; newer ones
/// in 2 and 2): a row the interface thinks narrower than the terminal
/// does wraps there and pushes the live region over the status line, so
/// a cluster counts as the larger of the sequence rule and its
/// characters' sum. Too wide only costs a column at the end of a row.
fn cluster_width(cluster: &str) -> usize {
    let each: usize = cluster.chars().map(|c| c.width().unwrap_or(0)).sum();
    each.max(cluster.width())
}

/// Wraps plain text to `width` columns by display width: breaks at spaces
/// (or after wide characters) where possible, else splits a word between
/// characters. Width 0 is treated as 1; every line fits. Control
/// characters are shown as visible escapes and a '\n' starts a new line.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split('\n') {
        let mut cells = Cells::new();
        for c in part.chars() {
            push_visible(&mut cells, c, 0);
        }
        wrap_into(&mut out, &[], &[], &cells, width, false);
    }
    out
}

/// Characters that could move the cursor, change terminal state or reorder
/// text, so they are never written raw.
fn is_hidden(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0a'..='\x1f' | '\x7f'..='\u{9f}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}' | '\u{61c}' | '\u{feff}')
}

pub(super) fn push_visible(out: &mut Cells, c: char, st: Style) {
    if c == '\t' {
        out.extend(repeat_n((' ', st), 4));
    } else if is_hidden(c) {
        out.extend(format!("\\u{{{:x}}}", c as u32).chars().map(|ch| (ch, st)));
    } else {
        out.push((c, st));
    }
}

pub(super) fn push_str(out: &mut Cells, s: &str, st: Style) {
    for c in s.chars() {
        push_visible(out, c, st);
    }
}

/// Characters that belong to the cluster before them (combining marks,
/// variation selectors, skin tones): a line never breaks before one.
fn joins(c: char) -> bool {
    c != ' ' && (c.width() == Some(0) || ('\u{1f3fb}'..='\u{1f3ff}').contains(&c))
}

/// End and display width of the cluster starting at `i` (`cluster_width`).
pub(super) fn cluster(cells: &[(char, Style)], i: usize) -> (usize, usize) {
    let mut j = i + 1;
    while j < cells.len() && joins(cells[j].0) {
        j += 1;
    }
    let w = if j == i + 1 {
        cells[i].0.width().unwrap_or(0)
    } else {
        cluster_width(&cells[i..j].iter().map(|c| c.0).collect::<String>())
    };
    (j, w)
}

pub(super) fn cells_width(cells: &[(char, Style)]) -> usize {
    let (mut i, mut w) = (0, 0);
    while i < cells.len() {
        let (j, cw) = cluster(cells, i);
        w += cw;
        i = j;
    }
    w
}

/// Greedy line breaking: ranges of `cells`, each at most `width` columns
/// (except a lone cluster wider than `width`, which `take_line` replaces).
pub(super) fn break_lines(cells: &[(char, Style)], width: usize) -> Vec<(usize, usize)> {
    let w = width.max(1);
    let mut out = Vec::new();
    let (mut start, mut col, mut i) = (0, 0, 0);
    // Last break opportunity: (end of this line, start of the next).
    let mut brk: Option<(usize, usize)> = None;
    while i < cells.len() {
        let (j, cw) = cluster(cells, i);
        let space = j == i + 1 && cells[i].0 == ' ';
        if space && i == start && !out.is_empty() {
            start = j;
            i = j;
            continue;
        }
        if col + cw > w && i > start {
            let (end, next) = match brk {
                _ if space => (i, j),
                Some((e, n)) if trim_end(cells, start, e) > start => (e, n),
                _ => (i, i),
            };
            out.push((start, trim_end(cells, start, end)));
            start = next;
            brk = None;
            col = cells_width(&cells[next.min(i)..i]);
            i = i.max(next);
            continue;
        }
        if col + cw > w {
            out.push((i, j));
            start = j;
            col = 0;
            brk = None;
            i = j;
            continue;
        }
        col += cw;
        if space {
            brk = Some((i, j));
        } else if cw >= 2 {
            brk = Some((j, j));
        }
        i = j;
    }
    if start < cells.len() || out.is_empty() {
        out.push((start, cells.len()));
    }
    out
}

fn trim_end(cells: &[(char, Style)], start: usize, mut end: usize) -> usize {
    while end > start && cells[end - 1].0 == ' ' {
        end -= 1;
    }
    end
}

/// The cells of one broken line; a cluster that cannot fit at all becomes '?'.
pub(super) fn take_line(cells: &[(char, Style)], (s, e): (usize, usize), w: usize) -> Cells {
    if s < e && cluster(cells, s).0 == e && cells_width(&cells[s..e]) > w.max(1) {
        return vec![('?', cells[s].1)];
    }
    cells[s..e].to_vec()
}

pub(super) fn paint(cells: &[(char, Style)], color: bool) -> String {
    let mut s = String::with_capacity(cells.len() + 8);
    let mut cur: Style = 0;
    for &(c, st) in cells {
        let st = if color { st } else { 0 };
        if st != cur {
            if cur != 0 {
                s.push_str("\x1b[0m");
            }
            if st != 0 {
                s.push_str("\x1b[");
                let codes: Vec<&str> = SGR.iter().filter(|b| st & b.0 != 0).map(|b| b.1).collect();
                s.push_str(&codes.join(";"));
                s.push('m');
            }
            cur = st;
        }
        s.push(c);
    }
    if cur != 0 {
        s.push_str("\x1b[0m");
    }
    s
}

/// Wraps `text` behind a first-line and a continuation prefix; the prefixes
/// are dropped when they leave no room at all.
pub(super) fn wrap_into(
    out: &mut Vec<String>,
    first: &[(char, Style)],
    rest: &[(char, Style)],
    text: &[(char, Style)],
    width: usize,
    color: bool,
) {
    let width = width.max(1);
    let pw = cells_width(first).max(cells_width(rest));
    let (first, rest, avail) = if pw < width {
        (first, rest, width - pw)
    } else {
        (&[][..], &[][..], width)
    };
    for (k, r) in break_lines(text, avail).into_iter().enumerate() {
        let mut line = if k == 0 {
            first.to_vec()
        } else {
            rest.to_vec()
        };
        line.extend(take_line(text, r, avail));
        // A bare prefix (empty item, blank quote line) keeps no trailing space.
        let end = if r.0 == r.1 {
            trim_end(&line, 0, line.len())
        } else {
            line.len()
        };
        out.push(paint(&line[..end], color));
    }
}

pub(super) fn spaces(n: usize) -> Cells {
    vec![(' ', 0); n]
}
