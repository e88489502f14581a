//! Pathname expansion against the directory as it is now: a field's
//! unquoted `*`, `?` and `[…]` matched component by component, as bash
//! does with its default options. It needs the pattern and the directory,
//! none of the planner's state, so it stands apart: the planner hands it
//! a field's characters and gets the names back.

use std::path::{Path, PathBuf};

/// Most names one glob may produce.
const MAX_MATCHES: usize = 4096;

/// One character of a word being expanded; `glob` marks an unquoted
/// pattern character.
#[derive(Clone, Copy)]
pub(super) struct Ch {
    pub(super) c: char,
    pub(super) glob: bool,
}

/// The names `chars` matches from `cwd` (or from `/`), sorted; the word
/// itself when nothing matches.
pub(super) fn expand(chars: &[Ch], cwd: Option<&Path>) -> Result<Vec<String>, String> {
    let literal: String = chars.iter().map(|c| c.c).collect();
    let cwd = cwd
        .ok_or("a glob in a directory that is not known")?
        .to_path_buf();
    let comps: Vec<&[Ch]> = chars.split(|c| c.c == '/').collect();
    let absolute = chars.first().is_some_and(|c| c.c == '/');
    // (the name as bash prints it, where it is, and whether it is a
    // directory when its listing entry said so)
    let mut cands: Vec<(String, PathBuf, Option<bool>)> = vec![if absolute {
        ("/".to_string(), PathBuf::from("/"), None)
    } else {
        (String::new(), cwd, None)
    }];
    // Whether a candidate is a directory (following links, as bash does).
    let is_dir = |c: &(String, PathBuf, Option<bool>)| c.2.unwrap_or_else(|| c.1.is_dir());
    let join = |shown: &str, name: &str| {
        if shown.is_empty() || shown.ends_with('/') {
            format!("{shown}{name}")
        } else {
            format!("{shown}/{name}")
        }
    };
    let last = comps.len() - 1;
    for (i, comp) in comps.iter().enumerate() {
        if comp.is_empty() {
            if i == 0 {
                continue;
            }
            // `a//b` or a trailing `/` (directories only).
            for c in &mut cands {
                c.0.push('/');
            }
            if i == last {
                cands.retain(is_dir);
            }
            continue;
        }
        if !comp.iter().any(|c| c.glob) {
            let text: String = comp.iter().map(|c| c.c).collect();
            for c in &mut cands {
                c.0 = join(&c.0, &text);
                c.1.push(&text);
                c.2 = None;
            }
            continue;
        }
        let pat = Pattern::compile(comp)?;
        let dots = comp.first().is_some_and(|c| c.c == '.');
        let mut next = Vec::new();
        for (shown, dir, _) in &cands {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten() {
                let os_name = e.file_name();
                let Some(name) = os_name.to_str() else {
                    return Err("a glob that matches a name that is not UTF-8".into());
                };
                if name.starts_with('.') && !dots {
                    continue;
                }
                if !pat.matches(name) {
                    continue;
                }
                let full = dir.join(name);
                // The entry's type, as lstat would give it (std looks
                // when the listing does not say); a link's is found by
                // following it.
                let dir_now = match e.file_type() {
                    Ok(t) => {
                        crate::policy::memo::seen_in_listing(&full, t.is_symlink());
                        (!t.is_symlink()).then_some(t.is_dir())
                    }
                    Err(_) => None,
                };
                let c = (join(shown, name), full, dir_now);
                if i != last && !is_dir(&c) {
                    continue;
                }
                next.push(c);
                if next.len() > MAX_MATCHES {
                    return Err("a glob that matches too many names".into());
                }
            }
        }
        cands = next;
    }
    if cands.is_empty() {
        return Ok(vec![literal]);
    }
    let mut names: Vec<String> = cands.into_iter().map(|c| c.0).collect();
    names.sort();
    Ok(names)
}

/// One component of a glob: `*`, `?`, `[…]`, and literal characters.
enum Tok {
    Lit(char),
    Any,
    Star,
    Class(bool, Vec<(char, char)>),
}

struct Pattern(Vec<Tok>);

impl Pattern {
    fn compile(chars: &[Ch]) -> Result<Pattern, String> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match (c.c, c.glob) {
                ('*', true) => out.push(Tok::Star),
                ('?', true) => out.push(Tok::Any),
                ('[', true) => {
                    let mut j = i + 1;
                    let neg = j < chars.len() && matches!(chars[j].c, '!' | '^');
                    if neg {
                        j += 1;
                    }
                    let body_start = j;
                    // A `]` first in the class is a member.
                    if j < chars.len() && chars[j].c == ']' {
                        j += 1;
                    }
                    while j < chars.len() && chars[j].c != ']' {
                        j += 1;
                    }
                    if j >= chars.len() {
                        out.push(Tok::Lit('['));
                        i += 1;
                        continue;
                    }
                    let body = &chars[body_start..j];
                    if body
                        .windows(2)
                        .any(|w| w[0].c == '[' && matches!(w[1].c, ':' | '.' | '='))
                    {
                        return Err("a glob with a [:class:]".into());
                    }
                    let mut ranges = Vec::new();
                    let mut k = 0;
                    while k < body.len() {
                        if k + 2 < body.len() && body[k + 1].c == '-' {
                            ranges.push((body[k].c, body[k + 2].c));
                            k += 3;
                        } else {
                            ranges.push((body[k].c, body[k].c));
                            k += 1;
                        }
                    }
                    out.push(Tok::Class(neg, ranges));
                    i = j;
                }
                (ch, _) => out.push(Tok::Lit(ch)),
            }
            i += 1;
        }
        Ok(Pattern(out))
    }

    fn matches(&self, name: &str) -> bool {
        // Positions are byte offsets of whole characters in `name`.
        let at = |i: usize| name.get(i..).and_then(|t| t.chars().next());
        let p = &self.0;
        let (mut pi, mut si) = (0, 0);
        let mut back: Option<(usize, usize)> = None;
        while let Some(c) = at(si) {
            let ok = match p.get(pi) {
                Some(Tok::Star) => {
                    back = Some((pi, si));
                    pi += 1;
                    continue;
                }
                Some(Tok::Any) => true,
                Some(Tok::Lit(x)) => *x == c,
                Some(Tok::Class(neg, r)) => {
                    let hit = r.iter().any(|(a, b)| *a <= c && c <= *b);
                    hit != *neg
                }
                None => false,
            };
            if ok {
                pi += 1;
                si += c.len_utf8();
            } else if let Some((bp, bs)) = back {
                let next = bs + at(bs).map_or(1, char::len_utf8);
                pi = bp + 1;
                si = next;
                back = Some((bp, next));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|t| matches!(t, Tok::Star))
    }
}
