//! Leaf text decoded again with bash's quoting rules: tree-sitter says
//! where a word is, this says what bash makes of its characters
//! (backslashes, quotes, `$`, a leading tilde), and refuses a character
//! bash would read otherwise than it looks (an invisible one, or a `$` or
//! quote the tree left inside a word). It reads text alone, never the
//! tree, which is why it is a module of its own: the tree walker hands it
//! a leaf's text and gets the word's parts back.

use super::{Ctx, Part, R};

/// Characters that look like blanks or nothing at all: they make a command
/// read differently from how it runs.
fn deceptive(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{a0}' | '\u{1680}' | '\u{180e}' | '\u{2000}'..='\u{200f}'
            | '\u{2028}'..='\u{202f}' | '\u{205f}'..='\u{206f}' | '\u{3000}' | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}')
}

/// A run of plain text (no character in it needs a second look).
fn push_lit_str(out: &mut Vec<Part>, s: &str, quoted: bool) {
    if s.is_empty() {
        return;
    }
    if let Some(Part::Lit { text, quoted: q }) = out.last_mut()
        && *q == quoted
    {
        text.push_str(s);
        return;
    }
    out.push(Part::Lit {
        text: s.to_string(),
        quoted,
    });
}

/// How many leading bytes of `s` are printable ASCII other than those
/// in `special`: characters that are literal text wherever they stand.
fn plain_run(s: &str, special: &[u8]) -> usize {
    s.bytes()
        .position(|b| !(b' '..=b'~').contains(&b) || special.contains(&b))
        .unwrap_or(s.len())
}

pub(super) fn push_lit(out: &mut Vec<Part>, c: char, quoted: bool) {
    if let Some(Part::Lit { text, quoted: q }) = out.last_mut()
        && *q == quoted
    {
        text.push(c);
        return;
    }
    out.push(Part::Lit {
        text: c.to_string(),
        quoted,
    });
}

/// `$` stays literal in bash only when no expansion can start with it.
fn dollar_is_literal(next: Option<char>, at_end: bool) -> bool {
    match next {
        None => at_end,
        Some(c) => " \t\n/.,:;=+%^]}~|&<>".contains(c),
    }
}

/// An unquoted word token: backslash escapes, glob and brace characters
/// kept as unquoted text, a leading tilde.
pub(super) fn decode_unquoted(t: &str, first: bool, ctx: Ctx, out: &mut Vec<Part>) -> R<()> {
    let mut rest = t;
    // The character before the one being read (for `=~` and `:~`).
    let mut prev: Option<char> = None;
    if first && ctx != Ctx::Quoted && t.starts_with('~') {
        let end = t.find('/').unwrap_or(t.len());
        let prefix = &t[1..end];
        if ctx == Ctx::Pattern {
            return Err("a ~ in a pattern".into());
        }
        if !prefix.is_empty()
            && prefix != "+"
            && prefix != "-"
            && !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(format!("the tilde form ~{prefix}"));
        }
        out.push(Part::Tilde(prefix.to_string()));
        rest = &t[end..];
        prev = t[..end].chars().next_back();
    }
    // Outside quotes every printable character but these is plain (`~`
    // too, unless after `=` or `:`, so it takes the slow way).
    const SPECIAL: &[u8] = b"\\$`'\"()|;&<> ~";
    loop {
        let n = plain_run(rest, SPECIAL);
        if n > 0 {
            push_lit_str(out, &rest[..n], false);
            prev = rest[..n].chars().next_back();
            rest = &rest[n..];
        }
        let mut it = rest.chars();
        let Some(c) = it.next() else {
            break;
        };
        let mut last = c;
        match c {
            '\\' => match it.next() {
                Some('\n') => last = '\n',
                Some(n) => {
                    if deceptive(n) {
                        return Err(format!("an invisible character U+{:04X}", n as u32));
                    }
                    push_lit(out, n, true);
                    last = n;
                }
                None => return Err("a word ending in a backslash".into()),
            },
            '$' if dollar_is_literal(it.clone().next(), true) => push_lit(out, c, false),
            '$' | '`' | '\'' | '"' => {
                return Err(format!("a `{c}` the parser left inside a word"));
            }
            '(' | ')' | ';' | '&' | '|' | '<' | '>' | ' ' | '\t' | '\n' => {
                return Err(format!(
                    "a `{}` the parser left inside a word",
                    c.escape_default()
                ));
            }
            '~' if matches!(prev, Some('=' | ':')) => {
                return Err("a ~ after = or : (bash may expand it)".into());
            }
            c if deceptive(c) => {
                return Err(format!("an invisible character U+{:04X}", c as u32));
            }
            _ => push_lit(out, c, false),
        }
        rest = it.as_str();
        prev = Some(last);
    }
    Ok(())
}

/// Literal text between expansions in double quotes.
pub(super) fn decode_dq(s: &str, at_end: bool, out: &mut Vec<Part>) -> R<()> {
    let mut rest = s;
    loop {
        let n = plain_run(rest, b"\\$`\"");
        push_lit_str(out, &rest[..n], true);
        rest = &rest[n..];
        let mut it = rest.chars();
        let Some(c) = it.next() else {
            break;
        };
        match c {
            '\\' => match it.clone().next() {
                Some('\n') => {
                    it.next();
                }
                Some(n @ ('$' | '`' | '"' | '\\')) => {
                    push_lit(out, n, true);
                    it.next();
                }
                _ => push_lit(out, '\\', true),
            },
            '$' if dollar_is_literal(it.clone().next(), at_end) => push_lit(out, c, true),
            '$' | '`' | '"' => {
                return Err(format!("a `{c}` inside double quotes the parser misread"));
            }
            c if deceptive(c) => return Err(format!("an invisible character U+{:04X}", c as u32)),
            _ => push_lit(out, c, true),
        }
        rest = it.as_str();
    }
    Ok(())
}

/// Literal text of an expanding here-document.
pub(super) fn decode_doc(s: &str, at_end: bool, out: &mut Vec<Part>) -> R<()> {
    let mut rest = s;
    loop {
        let n = plain_run(rest, b"\\$`");
        push_lit_str(out, &rest[..n], true);
        rest = &rest[n..];
        let mut it = rest.chars();
        let Some(c) = it.next() else {
            break;
        };
        match c {
            '\\' => match it.clone().next() {
                Some('\n') => {
                    it.next();
                }
                Some(n @ ('$' | '`' | '\\')) => {
                    push_lit(out, n, true);
                    it.next();
                }
                _ => push_lit(out, '\\', true),
            },
            '$' if dollar_is_literal(it.clone().next(), at_end) => push_lit(out, c, true),
            '$' | '`' => return Err(format!("a `{c}` in a here-document the parser misread")),
            _ => push_lit(out, c, true),
        }
        rest = it.as_str();
    }
    Ok(())
}

/// `$'…'` with the plain escapes; others (`\x41`, `\0`, `\u…`, `\c`) are
/// refused rather than decoded.
pub(super) fn decode_ansi(s: &str) -> R<String> {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            if deceptive(c) && c != '\n' {
                return Err(format!("an invisible character U+{:04X}", c as u32));
            }
            out.push(c);
            continue;
        }
        out.push(match it.next() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some('\\') => '\\',
            Some('\'') => '\'',
            Some('"') => '"',
            Some(o) => return Err(format!("the $'…' escape \\{o} is not analysed")),
            None => return Err("a $'…' string ending in a backslash".into()),
        });
    }
    Ok(out)
}

pub(super) fn parse_number(t: &str) -> R<i64> {
    let bad = || format!("the number {t} is not analysed");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).map_err(|_| bad());
    }
    if t.len() > 1 && t.starts_with('0') {
        return i64::from_str_radix(&t[1..], 8).map_err(|_| bad());
    }
    t.parse::<i64>().map_err(|_| bad())
}
