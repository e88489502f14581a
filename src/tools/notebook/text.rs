//! Changing a notebook's text one cell at a time, so that every byte
//! outside that cell stays as it was: the cells list is located in the
//! text, the one cell is written in the style of the file (Jupyter's
//! `json.dumps(indent=1, ensure_ascii=False)`, or whatever indent the
//! file uses) and spliced in. A whole rewrite would reflow the file and
//! make a one-cell change a diff of thousands of lines.

use crate::json::{Number, Value};

/// Where the cells list is in the text, and how the file is laid out.
#[derive(Debug)]
pub(super) struct Layout {
    /// Byte offsets of the `[` and `]` of the cells list.
    open: usize,
    close: usize,
    /// The span of each cell's object.
    cells: Vec<(usize, usize)>,
    style: Style,
}

/// How the file writes JSON.
#[derive(Debug, Clone)]
struct Style {
    /// One level of indentation; None for a file on one line.
    unit: Option<String>,
    /// Between items of a one-line file: `", "` (Python) or `","`.
    item_sep: &'static str,
    /// Between a key and its value: `": "` or `":"`.
    key_sep: &'static str,
    /// Non-ASCII written as `\u` escapes.
    ascii: bool,
}

impl Layout {
    /// Finds the cells list of a notebook whose text already parsed as
    /// JSON. Duplicate `cells` keys: the last one, as the parser takes.
    pub(super) fn of(text: &str) -> Result<Layout, String> {
        let b = text.as_bytes();
        let damaged = || "the notebook's text could not be followed".to_string();
        let mut at = skip_ws(b, 0);
        if b.get(at) != Some(&b'{') {
            return Err(damaged());
        }
        at += 1;
        let mut found = None;
        loop {
            at = skip_ws(b, at);
            match b.get(at) {
                Some(b'}') => break,
                Some(b',') => {
                    at += 1;
                    continue;
                }
                Some(b'"') => {}
                _ => return Err(damaged()),
            }
            let key_end = skip_string(b, at).ok_or_else(damaged)?;
            let key = crate::json::parse(&text[at..key_end]).map_err(|_| damaged())?;
            at = skip_ws(b, key_end);
            if b.get(at) != Some(&b':') {
                return Err(damaged());
            }
            at = skip_ws(b, at + 1);
            if key.as_str() == Some("cells") && b.get(at) == Some(&b'[') {
                let (cells, close) = elements(b, at).ok_or_else(damaged)?;
                found = Some((at, close, cells));
                at = close + 1;
            } else {
                at = skip_value(b, at).ok_or_else(damaged)?;
            }
        }
        let (open, close, cells) = found.ok_or_else(damaged)?;
        Ok(Layout {
            open,
            close,
            cells,
            style: Style::of(text),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.cells.len()
    }

    /// The text with cell `index` replaced by `cell`.
    pub(super) fn replace(&self, text: &str, index: usize, cell: &Value) -> String {
        let (start, end) = self.cells[index];
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..start]);
        out.push_str(&self.style.write(cell, 2));
        out.push_str(&text[end..]);
        out
    }

    /// The text with `cell` inserted so that it becomes cell `index`.
    pub(super) fn insert(&self, text: &str, index: usize, cell: &Value) -> String {
        let written = self.style.write(cell, 2);
        let st = &self.style;
        let mut out = String::with_capacity(text.len() + written.len() + 8);
        if self.cells.is_empty() {
            out.push_str(&text[..self.open]);
            out.push_str(&format!(
                "[{}{written}{}]",
                st.first_break(2),
                st.first_break(1)
            ));
            out.push_str(&text[self.close + 1..]);
        } else if index >= self.cells.len() {
            let end = self.cells[self.cells.len() - 1].1;
            out.push_str(&text[..end]);
            out.push_str(&format!("{}{written}", st.item_break(2)));
            out.push_str(&text[end..]);
        } else {
            let start = self.cells[index].0;
            out.push_str(&text[..start]);
            out.push_str(&format!("{written}{}", st.item_break(2)));
            out.push_str(&text[start..]);
        }
        out
    }

    /// The text without cell `index`.
    pub(super) fn delete(&self, text: &str, index: usize) -> String {
        let n = self.cells.len();
        let (cut_from, cut_to) = if n == 1 {
            return format!("{}[]{}", &text[..self.open], &text[self.close + 1..]);
        } else if index + 1 < n {
            // The cell, its comma and the space before the next one.
            (self.cells[index].0, self.cells[index + 1].0)
        } else {
            // The last cell: from the end of the one before.
            (self.cells[index - 1].1, self.cells[index].1)
        };
        format!("{}{}", &text[..cut_from], &text[cut_to..])
    }

    /// The text of cell `index` exactly as in the file.
    #[cfg(test)]
    pub(super) fn raw<'t>(&self, text: &'t str, index: usize) -> &'t str {
        let (start, end) = self.cells[index];
        &text[start..end]
    }
}

impl Style {
    fn of(text: &str) -> Style {
        let b = text.as_bytes();
        let open = skip_ws(b, 0);
        let after = &text[(open + 1).min(text.len())..];
        let unit = after
            .strip_prefix('\n')
            .or(after.strip_prefix("\r\n"))
            .map(|rest| {
                rest.chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect::<String>()
            });
        let ascii = text.is_ascii() && has_non_ascii_escape(text);
        // A one-line file: its separators, judged by its first key.
        let key_end = (b.get(open + 1) == Some(&b'"'))
            .then(|| skip_string(b, open + 1))
            .flatten();
        let tight = key_end
            .and_then(|e| text.get(e..))
            .is_some_and(|rest| rest.starts_with(':') && !rest.starts_with(": "));
        Style {
            unit: unit.filter(|u| !u.is_empty()),
            item_sep: if tight { "," } else { ", " },
            key_sep: if tight { ":" } else { ": " },
            ascii,
        }
    }

    /// Between `[` or `{` and the first item at `depth`, or between the
    /// last item and the bracket closing at `depth`.
    fn first_break(&self, depth: usize) -> String {
        match &self.unit {
            Some(u) => format!("\n{}", u.repeat(depth)),
            None => String::new(),
        }
    }

    /// Between two items at `depth`.
    fn item_break(&self, depth: usize) -> String {
        match &self.unit {
            Some(u) => format!(",\n{}", u.repeat(depth)),
            None => self.item_sep.to_string(),
        }
    }

    /// `v` written as the file writes values at `depth` levels in.
    fn write(&self, v: &Value, depth: usize) -> String {
        let mut out = String::new();
        // An explicit stack: (value, depth, position among its siblings).
        enum Step<'a> {
            Value(&'a Value, usize),
            Key(&'a str),
            Text(String),
        }
        let mut stack = vec![Step::Value(v, depth)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Text(t) => out.push_str(&t),
                Step::Key(k) => {
                    self.string(k, &mut out);
                    out.push_str(if self.unit.is_some() {
                        ": "
                    } else {
                        self.key_sep
                    });
                }
                Step::Value(v, d) => match v {
                    Value::Null => out.push_str("null"),
                    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                    Value::Number(Number::Int(i)) => out.push_str(&i.to_string()),
                    Value::Number(Number::Float(f)) => out.push_str(&py_float(*f)),
                    Value::String(s) => self.string(s, &mut out),
                    Value::Array(a) if a.is_empty() => out.push_str("[]"),
                    Value::Object(m) if m.iter().next().is_none() => out.push_str("{}"),
                    Value::Array(a) => {
                        out.push('[');
                        stack.push(Step::Text(format!("{}]", self.first_break(d))));
                        for (i, item) in a.iter().enumerate().rev() {
                            stack.push(Step::Value(item, d + 1));
                            stack.push(Step::Text(self.before(i, d + 1)));
                        }
                    }
                    Value::Object(m) => {
                        out.push('{');
                        stack.push(Step::Text(format!("{}}}", self.first_break(d))));
                        let entries: Vec<(&str, &Value)> = m.iter().collect();
                        for (i, (k, item)) in entries.into_iter().enumerate().rev() {
                            stack.push(Step::Value(item, d + 1));
                            stack.push(Step::Key(k));
                            stack.push(Step::Text(self.before(i, d + 1)));
                        }
                    }
                },
            }
        }
        out
    }

    /// What goes before item `i` of a list or object at `depth`.
    fn before(&self, i: usize, depth: usize) -> String {
        if i == 0 {
            self.first_break(depth)
        } else {
            self.item_break(depth)
        }
    }

    /// A string as Python's json module writes it.
    fn string(&self, s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c if self.ascii && !c.is_ascii() => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

/// Whether the text escapes a non-ASCII character (`\u0080` and up).
fn has_non_ascii_escape(text: &str) -> bool {
    let b = text.as_bytes();
    let mut at = 0;
    while let Some(i) = memchr::memmem::find(&b[at..], b"\\u") {
        let start = at + i;
        // An escaped backslash before it would make this `\\u`: count them.
        let slashes = b[..start].iter().rev().take_while(|&&c| c == b'\\').count();
        if slashes % 2 == 0
            && let Some(hex) = text.get(start + 2..start + 6)
            && let Ok(n) = u32::from_str_radix(hex, 16)
            && n >= 0x80
        {
            return true;
        }
        at = start + 2;
    }
    false
}

/// A float as Python's `repr` writes it: shortest digits, `1.0` for
/// whole numbers, exponents below 1e-4 and from 1e16 (`1e-05`, `1e+16`).
fn py_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    if !(-4..16).contains(&exp) {
        let e_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{e_sign}{:02}", exp.abs());
    }
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let point = exp + 1;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        let point = point as usize;
        if point >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{body}")
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && matches!(b[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// From the opening quote at `at` to just after the closing one.
fn skip_string(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// From the first byte of a value at `at` to just after it (no recursion:
/// a depth count of brackets outside strings).
fn skip_value(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at)? {
        b'"' => skip_string(b, at),
        b'[' | b'{' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            Some(i)
        }
    }
}

/// The spans of the elements of the array opening at `open`, and where
/// it closes.
fn elements(b: &[u8], open: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let mut spans = Vec::new();
    let mut at = open + 1;
    loop {
        at = skip_ws(b, at);
        match b.get(at)? {
            b']' => return Some((spans, at)),
            b',' => at += 1,
            _ => {
                let end = skip_value(b, at)?;
                spans.push((at, end));
                at = end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
            (1234.5, "1234.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (0.1, "0.1"),
            (-2.5e20, "-2.5e+20"),
        ] {
            assert_eq!(py_float(f), want, "{f}");
        }
    }

    #[test]
    fn jupyter_style_round_trips_byte_for_byte() {
        let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"metadata\": {\n    \"scale\": 1.0,\n    \"tags\": []\n   },\n   \"outputs\": [],\n   \"source\": [\n    \"print(\\\"é\\\\n\\\")\\n\",\n    \"x = 1\"\n   ]\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
        let layout = Layout::of(text).unwrap();
        assert_eq!(layout.len(), 1);
        let cell = parse(layout.raw(text, 0)).unwrap();
        assert_eq!(layout.style.write(&cell, 2), layout.raw(text, 0));
        assert_eq!(layout.replace(text, 0, &cell), text);
    }

    #[test]
    fn one_line_and_ascii_files_keep_their_style() {
        let text = r#"{"cells": [{"a": "caf\u00e9"}]}"#;
        let layout = Layout::of(text).unwrap();
        assert!(layout.style.ascii && layout.style.unit.is_none());
        let v = parse(r#"{"s":"é😀\u0001\b","t":[1,2]}"#).unwrap();
        assert_eq!(
            layout.style.write(&v, 2),
            r#"{"s": "\u00e9\ud83d\ude00\u0001\b", "t": [1, 2]}"#
        );
        let tight = r#"{"cells":[{"a":1},{"b":2}],"nbformat":4}"#;
        let layout = Layout::of(tight).unwrap();
        let added = layout.insert(tight, 1, &parse(r#"{"c":[3,4]}"#).unwrap());
        assert_eq!(
            added,
            r#"{"cells":[{"a":1},{"c":[3,4]},{"b":2}],"nbformat":4}"#
        );
        assert_eq!(
            layout.delete(tight, 0),
            r#"{"cells":[{"b":2}],"nbformat":4}"#
        );
        assert_eq!(
            layout.delete(tight, 1),
            r#"{"cells":[{"a":1}],"nbformat":4}"#
        );
    }
}
