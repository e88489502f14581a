//! Inline markup within one line: emphasis, code spans and links.

use std::iter::repeat_n;

use super::cells::{BOLD, CODE, Cells, ITALIC, STRIKE, Style, URL, push_str, push_visible};

/// Inline nesting limit, so hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 16;

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    Ch(char),
    /// Code span content, as a range of source chars.
    Code(usize, usize),
    /// Emphasis run: char, length, can open, can close.
    Delim(char, usize, bool, bool),
    /// `[` or `![` (an image shows like a link).
    Open,
    Close,
    LPar,
    RPar,
}

/// A token with its source span.
type Span = (Tok, usize, usize);

struct Ctx<'a> {
    src: &'a [char],
    toks: &'a [Span],
    /// The matching `]` or `)` of each `[` or `(`, else usize::MAX.
    pair: &'a [usize],
}

/// Parses one line's inline markup into styled cells.
pub(super) fn inline(text: &str, base: Style) -> Cells {
    let src: Vec<char> = text.chars().collect();
    let toks = tokenize(&src);
    let mut pair = vec![usize::MAX; toks.len()];
    let (mut br, mut par) = (Vec::new(), Vec::new());
    for (k, t) in toks.iter().enumerate() {
        match t.0 {
            Tok::Open => br.push(k),
            Tok::LPar => par.push(k),
            Tok::Close => br.pop().into_iter().for_each(|o| pair[o] = k),
            Tok::RPar => par.pop().into_iter().for_each(|o| pair[o] = k),
            _ => {}
        }
    }
    let mut out = Cells::with_capacity(src.len());
    let cx = Ctx {
        src: &src,
        toks: &toks,
        pair: &pair,
    };
    emit(&cx, 0, toks.len(), base, 0, &mut out);
    out
}

fn run_len(src: &[char], i: usize) -> usize {
    src[i..].iter().take_while(|&&c| c == src[i]).count()
}

fn tokenize(src: &[char]) -> Vec<Span> {
    let n = src.len();
    let mut toks = Vec::with_capacity(n);
    // Backtick run lengths already known to have no closing run.
    let mut unclosed: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < n {
        let c = src[i];
        let (tok, end) = match c {
            '\\' if src.get(i + 1).is_some_and(char::is_ascii_punctuation) => {
                (Tok::Ch(src[i + 1]), i + 2)
            }
            '`' => {
                let k = run_len(src, i);
                let mut j = i + k;
                let mut found = None;
                while !unclosed.contains(&k) && j < n {
                    let m = if src[j] == '`' { run_len(src, j) } else { 1 };
                    if src[j] == '`' && m == k {
                        found = Some(j);
                        break;
                    }
                    j += m;
                }
                match found {
                    Some(j) => (Tok::Code(i + k, j), j + k),
                    None => {
                        unclosed.push(k);
                        toks.extend((i..i + k).map(|p| (Tok::Ch('`'), p, p + 1)));
                        i += k;
                        continue;
                    }
                }
            }
            '*' | '_' | '~' => {
                let k = run_len(src, i);
                let prev = if i == 0 { ' ' } else { src[i - 1] };
                let next = src.get(i + k).copied().unwrap_or(' ');
                let (mut open, mut close) = (!next.is_whitespace(), !prev.is_whitespace());
                if c == '_' {
                    // Intraword underscores (snake_case) are not emphasis.
                    open &= !prev.is_alphanumeric();
                    close &= !next.is_alphanumeric();
                }
                (Tok::Delim(c, k, open, close), i + k)
            }
            '!' if src.get(i + 1) == Some(&'[') => (Tok::Open, i + 2),
            '[' => (Tok::Open, i + 1),
            ']' => (Tok::Close, i + 1),
            '(' => (Tok::LPar, i + 1),
            ')' => (Tok::RPar, i + 1),
            _ => (Tok::Ch(c), i + 1),
        };
        toks.push((tok, i, end));
        i = end;
    }
    toks
}

fn emit(cx: &Ctx, mut a: usize, b: usize, st: Style, depth: usize, out: &mut Cells) {
    // Opener kinds ('*', '_', '~' by run length) known to have no closer
    // in this range: later openers of that kind cannot have one either.
    let mut failed = [[false; 3]; 3];
    while a < b {
        let (tok, s, e) = cx.toks[a];
        match tok {
            Tok::Ch(c) => push_visible(out, c, st),
            Tok::Code(cs, ce) => {
                let inner = &cx.src[cs..ce];
                let pad = inner.len() >= 2 && inner[0] == ' ' && inner[inner.len() - 1] == ' ';
                let inner = if pad && inner.iter().any(|&c| c != ' ') {
                    &inner[1..inner.len() - 1]
                } else {
                    inner
                };
                inner.iter().for_each(|&c| push_visible(out, c, st | CODE));
            }
            Tok::Delim(c, k, open, _) => {
                let add = match (c, k) {
                    ('~', 2) => STRIKE,
                    ('~', _) => 0,
                    (_, 1) => ITALIC,
                    (_, 2) => BOLD,
                    (_, 3) => BOLD | ITALIC,
                    _ => 0,
                };
                let (ci, li) = (
                    usize::from(c != '*') + usize::from(c == '~'),
                    k.clamp(1, 3) - 1,
                );
                if open && add != 0 && depth < MAX_DEPTH && !failed[ci][li] {
                    let closer = (a + 1..b).find(
                        |&u| matches!(cx.toks[u].0, Tok::Delim(d, m, _, true) if d == c && m == k),
                    );
                    if let Some(u) = closer {
                        emit(cx, a + 1, u, st | add, depth + 1, out);
                        a = u + 1;
                        continue;
                    }
                    failed[ci][li] = true;
                }
                out.extend(repeat_n((c, st), k));
            }
            Tok::Open if depth < MAX_DEPTH && link_end(cx, a, b).is_some() => {
                let (r, p) = (cx.pair[a], cx.pair[cx.pair[a] + 1]);
                let raw: String = cx.src[cx.toks[r + 1].2..cx.toks[p].1].iter().collect();
                let url = raw.split_whitespace().next().unwrap_or("");
                let url = url
                    .strip_prefix('<')
                    .and_then(|u| u.strip_suffix('>'))
                    .unwrap_or(url);
                let start = out.len();
                emit(cx, a + 1, r, st, depth + 1, out);
                if out.len() == start || out[start..].iter().map(|c| c.0).eq(url.chars()) {
                    out.truncate(start);
                    push_str(out, url, st | URL);
                } else if !url.is_empty() {
                    push_str(out, " (", st);
                    push_str(out, url, st | URL);
                    push_str(out, ")", st);
                }
                a = p + 1;
                continue;
            }
            _ => cx.src[s..e].iter().for_each(|&c| push_visible(out, c, st)),
        }
        a += 1;
    }
}

/// The `)` ending a `[text](url)` that opens at token `a`, within `..b`.
fn link_end(cx: &Ctx, a: usize, b: usize) -> Option<usize> {
    let r = cx.pair[a];
    let lpar = r
        .checked_add(1)
        .filter(|&l| l < b && cx.toks[l].0 == Tok::LPar)?;
    Some(cx.pair[lpar]).filter(|&p| p < b)
}
