//! Pipe tables: parsing rows and delimiters, fitting columns, drawing the grid.

use std::cell::RefCell;
use std::iter::repeat_n;

use super::cells::{
    Cells, DIM, Style, break_lines, cells_width, paint, push_str, spaces, take_line, wrap_into,
};
use super::inline::inline;

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Align {
    Left,
    Center,
    Right,
}

/// The painted body rows for one layout (width, colour, column widths), so
/// a growing table is not re-rendered row by row on every call.
type RowCache = ((usize, bool, Vec<usize>), usize, Vec<String>);

#[derive(Clone)]
pub(super) struct Table {
    pub(super) aligns: Vec<Align>,
    pub(super) header: Option<Vec<Cells>>,
    pub(super) rows: Vec<Vec<Cells>>,
    /// Natural width of each column so far.
    nat: Vec<usize>,
    cache: RefCell<RowCache>,
}

impl Table {
    pub(super) fn new(aligns: Vec<Align>) -> Table {
        let nat = vec![0; aligns.len()];
        Table {
            nat,
            aligns,
            header: None,
            rows: Vec::new(),
            cache: RefCell::default(),
        }
    }

    pub(super) fn parse_row(&self, line: &str, st: Style) -> Vec<Cells> {
        let mut v: Vec<Cells> = split_row(line).into_iter().map(|c| inline(c, st)).collect();
        v.resize(self.aligns.len(), Cells::new());
        v
    }

    /// Parses a row and widens the columns for it.
    pub(super) fn cells(&mut self, line: &str, st: Style) -> Vec<Cells> {
        let v = self.parse_row(line, st);
        for (n, c) in self.nat.iter_mut().zip(&v) {
            *n = (*n).max(cells_width(c));
        }
        v
    }

    /// Renders the table, plus `extra` (a row still being streamed) if any.
    pub(super) fn render(&self, w: usize, color: bool, extra: Option<&[Cells]>) -> Vec<String> {
        let (w, n) = (w.max(1), self.aligns.len());
        let mut nat = self.nat.clone();
        for (n, c) in nat.iter_mut().zip(extra.unwrap_or_default()) {
            *n = (*n).max(cells_width(c));
        }
        let all = || {
            self.header
                .iter()
                .chain(&self.rows)
                .map(Vec::as_slice)
                .chain(extra)
        };
        let mut out = Vec::new();
        let over = 3 * n + 1;
        if w < over + n {
            // No room for the grid: each row becomes wrapped text.
            for row in all() {
                let mut line = Cells::new();
                for (k, c) in row.iter().enumerate() {
                    if k > 0 {
                        push_str(&mut line, " │ ", DIM);
                    }
                    line.extend_from_slice(c);
                }
                wrap_into(&mut out, &[], &[], &line, w, color);
            }
            return out;
        }
        if all().next().is_none() {
            return out;
        }
        let cols = fit(&nat, w - over);
        let border = |l: char, m: char, r: char| {
            let mut c = vec![(l, DIM)];
            for (k, &cw) in cols.iter().enumerate() {
                if k > 0 {
                    c.push((m, DIM));
                }
                c.extend(repeat_n(('─', DIM), cw + 2));
            }
            c.push((r, DIM));
            paint(&c, color)
        };
        out.push(border('┌', '┬', '┐'));
        if let Some(h) = &self.header {
            self.row(h, &cols, color, &mut out);
            out.push(border('├', '┼', '┤'));
        }
        let mut cache = self.cache.borrow_mut();
        let key = (w, color, cols.clone());
        if cache.0 != key {
            *cache = (key, 0, Vec::new());
        }
        let (_, done, lines) = &mut *cache;
        for r in &self.rows[(*done).min(self.rows.len())..] {
            self.row(r, &cols, color, lines);
        }
        *done = self.rows.len();
        out.extend(lines.iter().cloned());
        if let Some(r) = extra {
            self.row(r, &cols, color, &mut out);
        }
        out.push(border('└', '┴', '┘'));
        out
    }

    fn row(&self, cells: &[Cells], cols: &[usize], color: bool, out: &mut Vec<String>) {
        let parts: Vec<Vec<Cells>> = cells
            .iter()
            .zip(cols)
            .map(|(c, &cw)| {
                break_lines(c, cw)
                    .into_iter()
                    .map(|r| take_line(c, r, cw))
                    .collect()
            })
            .collect();
        let height = parts.iter().map(Vec::len).max().unwrap_or(1);
        let empty = Cells::new();
        for k in 0..height {
            let mut line: Cells = vec![('│', DIM)];
            for (j, p) in parts.iter().enumerate() {
                let text = p.get(k).unwrap_or(&empty);
                let gap = cols[j].saturating_sub(cells_width(text));
                let (l, r) = match self.aligns[j] {
                    Align::Left => (0, gap),
                    Align::Right => (gap, 0),
                    Align::Center => (gap / 2, gap - gap / 2),
                };
                line.extend(spaces(l + 1));
                line.extend_from_slice(text);
                line.extend(spaces(r + 1));
                line.push(('│', DIM));
            }
            out.push(paint(&line, color));
        }
    }
}

/// Whether a line continues a table.
pub(super) fn is_row(rest: &str) -> bool {
    rest.contains('|') && !rest.starts_with(['>', '#', '`', '~'])
}

/// Column widths within `avail` (at least one column each): the widest
/// columns are cut down to a common level first.
fn fit(nat: &[usize], avail: usize) -> Vec<usize> {
    let nat: Vec<usize> = nat.iter().map(|&x| x.max(1)).collect();
    let total = |l: usize| nat.iter().map(|&x| x.min(l)).sum::<usize>();
    if total(usize::MAX) <= avail {
        return nat;
    }
    let (mut lo, mut hi) = (1, nat.iter().copied().max().unwrap_or(1));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if total(mid) <= avail {
            lo = mid
        } else {
            hi = mid - 1
        }
    }
    let mut spare = avail.saturating_sub(total(lo));
    let mut cols: Vec<usize> = nat.iter().map(|&x| x.min(lo)).collect();
    for (c, &x) in cols.iter_mut().zip(&nat) {
        if spare > 0 && x > *c {
            *c += 1;
            spare -= 1;
        }
    }
    cols
}

pub(super) fn split_row(line: &str) -> Vec<&str> {
    let s = line.trim();
    let s = s.strip_prefix('|').unwrap_or(s);
    let s = match s.strip_suffix('|') {
        Some(t) if !t.ends_with('\\') => t,
        _ => s,
    };
    let mut cells = Vec::new();
    let mut start = 0;
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'|' && (i == 0 || b[i - 1] != b'\\') {
            cells.push(s[start..i].trim());
            start = i + 1;
        }
    }
    cells.push(s[start..].trim());
    cells
}

/// Column alignments if `rest` is a table delimiter row (`|---|:--:|`).
pub(super) fn delimiter(rest: &str) -> Option<Vec<Align>> {
    if !rest.contains('|') || !rest.contains('-') {
        return None;
    }
    let cell = |c: &str| {
        let mid = c.strip_prefix(':').unwrap_or(c);
        let mid = mid.strip_suffix(':').unwrap_or(mid);
        (!mid.is_empty() && mid.bytes().all(|b| b == b'-')).then_some(
            match (c.starts_with(':'), c.ends_with(':')) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            },
        )
    };
    split_row(rest).into_iter().map(cell).collect()
}
