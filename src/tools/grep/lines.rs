//! The lines of one file's bytes that match, counted or printed with
//! their context.
//!
//! When no match may span lines (the usual case) the file is walked
//! match by match: each match's line is found around it, the search goes
//! on from the next line, and line numbers come from counting the line
//! ends passed (a vectorised count) — no table of every line's start, and
//! the text after the last printed line is only searched, never indexed.
//! A multiline search keeps the table: a match may cover many lines.

use regex::bytes::Regex;

use super::{MAX_LINE, cut};

/// How content is printed.
pub(super) struct Shape {
    pub before: usize,
    pub after: usize,
    pub numbers: bool,
    pub multiline: bool,
}

/// An empty match after the last line end lies on no line (`^`, `$` and
/// `^$` there are not one more line).
fn past_the_end(data: &[u8], at: usize) -> bool {
    at == data.len() && data.last().is_none_or(|&b| b == b'\n')
}

/// The start of the line holding `at`.
fn line_start(data: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &data[..at]).map_or(0, |i| i + 1)
}

/// Where the line starting at `start` ends, and where the next begins
/// (`data.len()` after the last).
fn line_end(data: &[u8], start: usize) -> (usize, usize) {
    match memchr::memchr(b'\n', &data[start..]) {
        Some(i) => (start + i, start + i + 1),
        None => (data.len(), data.len()),
    }
}

/// Lines with a match, when no match spans lines: each match found
/// counts its line, and the search goes on from the next line.
pub(super) fn count(regex: &Regex, data: &[u8]) -> usize {
    let mut lines = 0;
    let mut at = 0;
    while at <= data.len() {
        let Some(m) = regex.find_at(data, at) else {
            break;
        };
        if past_the_end(data, m.start()) {
            break;
        }
        lines += 1;
        at = match memchr::memchr(b'\n', &data[m.start()..]) {
            Some(i) => m.start() + i + 1,
            None => break,
        };
    }
    lines
}

/// Line indexes (0-based) that contain a match, or that a multiline
/// match covers.
pub(super) fn matching(regex: &Regex, data: &[u8], multiline: bool) -> Vec<usize> {
    let starts = line_starts(data);
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset) - 1;
    let mut hits: Vec<usize> = Vec::new();
    for m in regex.find_iter(data) {
        if past_the_end(data, m.start()) {
            break;
        }
        let first = line_of(m.start());
        let last = if multiline && m.end() > m.start() {
            line_of(m.end() - 1)
        } else {
            first
        };
        for l in first..=last {
            if hits.last() != Some(&l) {
                hits.push(l);
            }
        }
    }
    hits
}

fn line_starts(data: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        memchr::memchr_iter(b'\n', data)
            .map(|i| i + 1)
            .filter(|&s| s < data.len()),
    );
    starts
}

/// The matching lines and their context as `name:N:text` (`-` for
/// context lines), `--` between groups that are not adjacent.
pub(super) fn content(
    regex: &Regex,
    shape: &Shape,
    name: &str,
    data: &[u8],
    out: &mut Vec<String>,
) {
    let mut print = Print {
        shape,
        name,
        data,
        out,
        counted: (0, 0),
        printed_to: None,
    };
    if shape.multiline {
        print.by_table(&matching(regex, data, true));
        return;
    }
    // After-context still owed by the last match's line.
    let mut owed = 0;
    let mut at = 0;
    loop {
        let hit = match regex.find_at(data, at) {
            Some(m) if !past_the_end(data, m.start()) => Some(line_start(data, m.start())),
            _ => None,
        };
        // The last match's after-context, up to this match's line.
        while owed > 0
            && let Some(next) = print.printed_to
            && next < data.len()
            && hit.is_none_or(|h| next < h)
        {
            print.line(next, '-');
            owed -= 1;
        }
        let Some(start) = hit else {
            return;
        };
        let mut first = start;
        let floor = print.printed_to.unwrap_or(0);
        for _ in 0..shape.before {
            if first <= floor {
                break;
            }
            first = line_start(data, first - 1);
        }
        print.gap_before(first);
        while first < start {
            first = print.line(first, '-');
        }
        at = print.line(start, ':');
        owed = shape.after;
        // A match on the last line, which has no line end: nothing follows.
        if at == data.len() && data.last() != Some(&b'\n') {
            return;
        }
    }
}

struct Print<'a> {
    shape: &'a Shape,
    name: &'a str,
    data: &'a [u8],
    out: &'a mut Vec<String>,
    /// (offset, line index): line numbers are counted on from here.
    counted: (usize, usize),
    /// Where the line after the last printed one starts.
    printed_to: Option<usize>,
}

impl Print<'_> {
    /// The line index of the line starting at `start` (never before the
    /// last one asked).
    fn number(&mut self, start: usize) -> usize {
        let (from, n) = self.counted;
        let n = n + memchr::memchr_iter(b'\n', &self.data[from..start]).count();
        self.counted = (start, n);
        n
    }

    /// `--` when the next line printed does not follow the last one.
    fn gap_before(&mut self, start: usize) {
        if let Some(p) = self.printed_to
            && start > p
            && (self.shape.before > 0 || self.shape.after > 0)
        {
            self.out.push("--".into());
        }
    }

    /// Prints the line starting at `start`; returns where the next starts.
    fn line(&mut self, start: usize, sep: char) -> usize {
        let (end, next) = line_end(self.data, start);
        let n = self.number(start) + 1;
        let text = shown(&self.data[start..end]);
        let name = self.name;
        self.out.push(if self.shape.numbers {
            format!("{name}{sep}{n}{sep}{text}")
        } else {
            format!("{name}{sep}{text}")
        });
        self.printed_to = Some(next);
        next
    }

    /// Prints from a table of line starts: matching lines and the lines
    /// around them.
    fn by_table(&mut self, hits: &[usize]) {
        let starts = line_starts(self.data);
        let count = starts.len();
        let mut printed: Option<usize> = None; // last line index printed
        for (k, &hit) in hits.iter().enumerate() {
            let from = hit.saturating_sub(self.shape.before);
            let from = printed.map_or(from, |p| from.max(p + 1));
            let to = (hit + self.shape.after).min(count - 1);
            if let Some(p) = printed
                && from > p + 1
                && (self.shape.before > 0 || self.shape.after > 0)
            {
                self.out.push("--".into());
            }
            for (i, &start) in starts.iter().enumerate().take(to + 1).skip(from) {
                let sep = if hits[k..].binary_search(&i).is_ok() {
                    ':'
                } else {
                    '-'
                };
                self.line(start, sep);
                printed = Some(i);
            }
        }
    }
}

/// A line's text as shown: its CR dropped, cut at `MAX_LINE`.
fn shown(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    let cut_to = cut(&text, MAX_LINE);
    if cut_to.len() < text.len() {
        format!("{cut_to}…")
    } else {
        cut_to.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table walk, which was the only one: the match-by-match walk
    /// must print exactly what it prints.
    fn by_table(regex: &Regex, shape: &Shape, data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        let mut print = Print {
            shape,
            name: "f",
            data,
            out: &mut out,
            counted: (0, 0),
            printed_to: None,
        };
        print.by_table(&matching(regex, data, false));
        out
    }

    #[test]
    fn the_match_by_match_walk_prints_what_the_table_walk_prints() {
        let patterns = [
            "b", "^", "$", "^$", "a.", "^b", "c$", "\\r$", "x|a", "[ab]{2}",
        ];
        let mut rng: u64 = 7;
        let mut checked = 0;
        for round in 0..600 {
            let mut data = Vec::new();
            let len = round % 40;
            for _ in 0..len {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                data.push(b"abc\n\n\r"[(rng >> 33) as usize % 6]);
            }
            for p in patterns {
                let regex = regex::bytes::RegexBuilder::new(p)
                    .multi_line(true)
                    .build()
                    .unwrap();
                for (before, after) in [(0, 0), (1, 0), (0, 1), (2, 2), (1, 3)] {
                    let shape = Shape {
                        before,
                        after,
                        numbers: true,
                        multiline: false,
                    };
                    let mut walked = Vec::new();
                    content(&regex, &shape, "f", &data, &mut walked);
                    assert_eq!(
                        walked,
                        by_table(&regex, &shape, &data),
                        "{p:?} -B {before} -A {after} on {:?}",
                        String::from_utf8_lossy(&data)
                    );
                    assert_eq!(
                        walked.iter().filter(|l| l.starts_with("f:")).count(),
                        count(&regex, &data),
                        "{p:?} on {:?}",
                        String::from_utf8_lossy(&data)
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 600 * 10 * 5);
    }
}
