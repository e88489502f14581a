//! Brace expansion, as bash does it before any other expansion:
//! `a{b,c}d` → `abd acd`, nested groups, and sequences `{1..5}`,
//! `{01..10..3}`, `{a..e}`. Only unquoted braces and commas count; a brace
//! pair that is neither a list nor a sequence is literal text.

use super::syntax::{Part, Word};

/// Most words one brace expression may make.
const MAX: usize = 1024;

#[derive(Clone, Debug)]
enum Tok {
    Ch(char, bool),
    Atom(Part),
}

fn toks(w: &Word) -> Vec<Tok> {
    let mut out = Vec::new();
    for p in &w.parts {
        match p {
            Part::Lit { text, quoted } => out.extend(text.chars().map(|c| Tok::Ch(c, *quoted))),
            other => out.push(Tok::Atom(other.clone())),
        }
    }
    out
}

fn word(ts: &[Tok]) -> Word {
    let mut parts: Vec<Part> = Vec::new();
    for t in ts {
        match t {
            Tok::Ch(c, q) => match parts.last_mut() {
                Some(Part::Lit { text, quoted }) if quoted == q => text.push(*c),
                _ => parts.push(Part::Lit {
                    text: c.to_string(),
                    quoted: *q,
                }),
            },
            Tok::Atom(p) => parts.push(p.clone()),
        }
    }
    Word { parts, span: None }
}

fn is(t: &Tok, c: char) -> bool {
    matches!(t, Tok::Ch(x, false) if *x == c)
}

/// Could `w` hold a brace expression (an unquoted `{`)? When not, it
/// expands to itself.
pub(crate) fn may_expand(w: &Word) -> bool {
    w.parts
        .iter()
        .any(|p| matches!(p, Part::Lit { text, quoted: false } if text.contains('{')))
}

/// The words `w` expands to (itself when it has no brace expression).
pub(crate) fn expand(w: &Word) -> Result<Vec<Word>, String> {
    if !may_expand(w) {
        return Ok(vec![w.clone()]);
    }
    let ts = toks(w);
    let mut out = Vec::new();
    for r in run(&ts, 0)? {
        out.push(word(&r));
    }
    Ok(out)
}

fn run(ts: &[Tok], depth: usize) -> Result<Vec<Vec<Tok>>, String> {
    if depth > 16 {
        return Err("brace expansion nested too deeply".into());
    }
    let mut i = 0;
    while i < ts.len() {
        if !is(&ts[i], '{') || (i > 0 && is(&ts[i - 1], '$')) {
            i += 1;
            continue;
        }
        let Some(j) = close(ts, i) else {
            i += 1;
            continue;
        };
        let inner = &ts[i + 1..j];
        let alts: Vec<Vec<Tok>> = match split(inner) {
            a if a.len() >= 2 => a,
            _ => match sequence(inner)? {
                Some(seq) => seq,
                None => {
                    i += 1;
                    continue;
                }
            },
        };
        let pre = &ts[..i];
        let post = run(&ts[j + 1..], depth + 1)?;
        let mut out = Vec::new();
        for alt in alts {
            for a in run(&alt, depth + 1)? {
                for p in &post {
                    let mut v = pre.to_vec();
                    v.extend(a.iter().cloned());
                    v.extend(p.iter().cloned());
                    out.push(v);
                    if out.len() > MAX {
                        return Err("brace expansion makes too many words".into());
                    }
                }
            }
        }
        return Ok(out);
    }
    Ok(vec![ts.to_vec()])
}

/// The `}` matching the `{` at `open`.
fn close(ts: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, t) in ts.iter().enumerate().skip(open) {
        if is(t, '{') {
            depth += 1;
        } else if is(t, '}') {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The comma-separated alternatives at the top level.
fn split(inner: &[Tok]) -> Vec<Vec<Tok>> {
    let mut out = vec![Vec::new()];
    let mut depth = 0;
    for t in inner {
        if is(t, '{') {
            depth += 1;
        } else if is(t, '}') {
            depth -= 1;
        } else if depth == 0 && is(t, ',') {
            out.push(Vec::new());
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.push(t.clone());
        }
    }
    out
}

/// `{1..5}`, `{5..1..2}`, `{01..10}`, `{a..e}`.
fn sequence(inner: &[Tok]) -> Result<Option<Vec<Vec<Tok>>>, String> {
    let mut text = String::new();
    for t in inner {
        match t {
            Tok::Ch(c, false) => text.push(*c),
            _ => return Ok(None),
        }
    }
    let parts: Vec<&str> = text.split("..").collect();
    let (a, b, step) = match parts.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(*s)),
        _ => return Ok(None),
    };
    let step: i64 = match step {
        Some(s) => match s.parse::<i64>() {
            Ok(n) => n.unsigned_abs().max(1) as i64,
            Err(_) => return Ok(None),
        },
        None => 1,
    };
    let lit = |s: String| s.chars().map(|c| Tok::Ch(c, false)).collect::<Vec<_>>();
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let pad = |s: &str| {
            let d = s.trim_start_matches('-');
            d.len() > 1 && d.starts_with('0')
        };
        let width = if pad(a) || pad(b) {
            a.len().max(b.len())
        } else {
            0
        };
        let count = (x - y).unsigned_abs() / step as u64 + 1;
        if count as usize > MAX {
            return Err("a brace sequence that makes too many words".into());
        }
        let mut out = Vec::new();
        let mut v = x;
        for _ in 0..count {
            let s = if width > 0 {
                if v < 0 {
                    format!("-{:0w$}", -v, w = width - 1)
                } else {
                    format!("{v:0width$}")
                }
            } else {
                v.to_string()
            };
            out.push(lit(s));
            v = if x <= y { v + step } else { v - step };
        }
        return Ok(Some(out));
    }
    let (mut ca, mut cb) = (a.chars(), b.chars());
    if let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cb.next(), cb.next())
        && x.is_ascii_alphabetic()
        && y.is_ascii_alphabetic()
    {
        let (x, y) = (x as i64, y as i64);
        let mut out = Vec::new();
        let mut v = x;
        while (x <= y && v <= y) || (x > y && v >= y) {
            let c = char::from_u32(v as u32).unwrap_or('?');
            out.push(lit(c.to_string()));
            v = if x <= y { v + step } else { v - step };
        }
        return Ok(Some(out));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Word {
        Word {
            parts: vec![Part::Lit {
                text: s.into(),
                quoted: false,
            }],
            span: None,
        }
    }

    fn ex(s: &str) -> Vec<String> {
        expand(&w(s))
            .unwrap()
            .iter()
            .map(|w| w.literal().unwrap())
            .collect()
    }

    #[test]
    fn lists_sequences_and_literals() {
        assert_eq!(ex("a{b,c}d"), ["abd", "acd"]);
        assert_eq!(ex("{a,b}{1,2}"), ["a1", "a2", "b1", "b2"]);
        assert_eq!(ex("x{a,{b,c}}"), ["xa", "xb", "xc"]);
        assert_eq!(ex("{,a}"), ["", "a"]);
        assert_eq!(ex("{1..3}"), ["1", "2", "3"]);
        assert_eq!(ex("{3..1}"), ["3", "2", "1"]);
        assert_eq!(ex("{01..03}"), ["01", "02", "03"]);
        assert_eq!(ex("{1..7..3}"), ["1", "4", "7"]);
        assert_eq!(ex("{a..c}"), ["a", "b", "c"]);
        assert_eq!(ex("{}"), ["{}"]);
        assert_eq!(ex("{a}"), ["{a}"]);
        assert_eq!(ex("@{u}"), ["@{u}"]);
        assert_eq!(ex("{a{b,c}}"), ["{ab}", "{ac}"]);
    }

    #[test]
    fn quoted_braces_and_commas_are_text() {
        let q = Word {
            parts: vec![
                Part::Lit {
                    text: "{a".into(),
                    quoted: false,
                },
                Part::Lit {
                    text: ",".into(),
                    quoted: true,
                },
                Part::Lit {
                    text: "b}".into(),
                    quoted: false,
                },
            ],
            span: None,
        };
        assert_eq!(expand(&q).unwrap().len(), 1);
        assert!(expand(&w("{1..100000}")).is_err());
    }
}
