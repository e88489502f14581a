//! Pipe tables: fitting columns and drawing the grid (the rows come parsed
//! from pulldown-cmark).

use std::iter::repeat_n;

use super::cells::{
    Cells, DIM, break_lines, cells_width, paint, push_str, spaces, take_line, wrap_into,
};

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Align {
    Left,
    Center,
    Right,
}

#[derive(Clone)]
pub(super) struct Table {
    pub(super) aligns: Vec<Align>,
    pub(super) header: Option<Vec<Cells>>,
    pub(super) rows: Vec<Vec<Cells>>,
    /// Natural width of each column so far.
    nat: Vec<usize>,
}

impl Table {
    pub(super) fn new(aligns: Vec<Align>) -> Table {
        let nat = vec![0; aligns.len()];
        Table {
            nat,
            aligns,
            header: None,
            rows: Vec::new(),
        }
    }

    /// Adds a row (cells past the header's count dropped, missing ones
    /// empty) and widens the columns for it.
    pub(super) fn push_row(&mut self, mut row: Vec<Cells>, head: bool) {
        row.resize(self.aligns.len(), Cells::new());
        for (n, c) in self.nat.iter_mut().zip(&row) {
            *n = (*n).max(cells_width(c));
        }
        if head {
            self.header = Some(row);
        } else {
            self.rows.push(row);
        }
    }

    /// Renders the table: a grid, or wrapped rows when the grid cannot fit.
    pub(super) fn render(&self, w: usize, color: bool) -> Vec<String> {
        let (w, n) = (w.max(1), self.aligns.len());
        let all = || self.header.iter().chain(&self.rows).map(Vec::as_slice);
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
        let cols = fit(&self.nat, w - over);
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
        for r in &self.rows {
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
