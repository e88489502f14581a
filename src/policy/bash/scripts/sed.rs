//! sed: GNU sed's command line, then the script, parsed command by
//! command as GNU sed compiles it.
//!
//! Every command must end where sed ends it (blanks, then `;`, a newline,
//! `}`, `#` or the end): GNU sed stops a `b`/`t`/`:` label at a blank and
//! reads what follows as the next command, so `b x w FILE` writes FILE.
//! `r`, `R`, `w`, `W`, `e`, and `s///e`, `s///w` ask; so do a delimiter
//! or a backslash inside a bracket expression (seds differ on them), a
//! delimiter that is not one ASCII character, and anything else the
//! parser does not know.

use super::{R, lit};
use crate::policy::bash::check::Checker;
use crate::policy::bash::plan::Arg;

/// `sed [options] script [file…]` or `sed -e script … [file…]`; options
/// may come anywhere before `--` (GNU getopt).
pub(crate) fn sed(c: &mut Checker, args: &[Arg]) -> R<()> {
    let mut scripts = Vec::new();
    let mut nonopts = Vec::new();
    let mut i = 0;
    let mut done = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if done || !a.may_be_flag() {
            nonopts.push(a.clone());
            continue;
        }
        let s = lit("sed", a)?;
        let mut next = || {
            let v = args.get(i).ok_or_else(|| format!("sed {s} needs a value"));
            i += 1;
            v
        };
        match s {
            "--" => done = true,
            "-" => nonopts.push(a.clone()),
            "--quiet" | "--silent" | "--regexp-extended" | "--separate" | "--unbuffered"
            | "--null-data" | "--posix" | "--debug" | "--sandbox" | "--binary" => {}
            "--expression" => scripts.push(lit("sed", next()?)?.to_string()),
            "--line-length" => {
                next()?;
            }
            s if s.starts_with("--expression=") => scripts.push(s["--expression=".len()..].into()),
            s if s.starts_with("--line-length=") => {}
            s if s.starts_with("--in-place") => return Err("sed --in-place edits files".into()),
            s if s.starts_with("--file") => {
                return Err("sed --file reads its script from a file".into());
            }
            s if s.starts_with("--") => return Err(format!("sed {s} is not analysed")),
            s => {
                for (j, ch) in s.char_indices().skip(1) {
                    match ch {
                        'n' | 'E' | 'r' | 's' | 'u' | 'z' | 'b' => {}
                        'e' | 'l' => {
                            let rest = &s[j + 1..];
                            let v = if rest.is_empty() {
                                lit("sed", next()?)?.to_string()
                            } else {
                                rest.to_string()
                            };
                            if ch == 'e' {
                                scripts.push(v);
                            }
                            break;
                        }
                        'i' => return Err("sed -i edits files in place".into()),
                        'f' => return Err("sed -f reads its script from a file".into()),
                        other => return Err(format!("sed -{other} is not analysed")),
                    }
                }
            }
        }
    }
    let files = if scripts.is_empty() {
        let Some((first, rest)) = nonopts.split_first() else {
            return Err("sed without a script".into());
        };
        scripts.push(lit("sed", first)?.to_string());
        rest.to_vec()
    } else {
        nonopts
    };
    // GNU sed joins the -e scripts with newlines (an `a\` at the end of
    // one takes its text from the next).
    script(&scripts.join("\n"))?;
    for f in &files {
        c.read(f, false, "sed")?;
    }
    Ok(())
}

/// Checks a sed script; Err says what asks.
pub(crate) fn script(s: &str) -> R<()> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    loop {
        while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b';')) {
            i += 1;
        }
        let Some(&first) = b.get(i) else { break };
        if first == b'#' {
            skip_line(b, &mut i);
            continue;
        }
        if address(b, &mut i)? {
            blanks(b, &mut i);
            if b.get(i) == Some(&b',') {
                i += 1;
                blanks(b, &mut i);
                if matches!(b.get(i), Some(b'+' | b'~')) {
                    i += 1;
                    if !digits(b, &mut i) {
                        return Err("a sed address range without its end".into());
                    }
                } else if !address(b, &mut i)? {
                    return Err("a sed address range without its end".into());
                }
            }
            blanks(b, &mut i);
        }
        if b.get(i) == Some(&b'!') {
            i += 1;
            blanks(b, &mut i);
        }
        let Some(&cmd) = b.get(i) else {
            return Err("a sed address without a command".into());
        };
        i += 1;
        match cmd {
            b'{' => {
                depth += 1;
                continue;
            }
            b'}' => {
                depth = depth.checked_sub(1).ok_or("a sed } without {")?;
            }
            b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p' | b'P' | b'x'
            | b'z' | b'F' => {}
            b'l' | b'L' | b'q' | b'Q' => {
                blanks(b, &mut i);
                digits(b, &mut i);
            }
            b':' | b'b' | b't' | b'T' | b'v' => {
                blanks(b, &mut i);
                if cmd == b':' && matches!(b.get(i), None | Some(b'\n' | b';')) {
                    return Err("a sed : without its label".into());
                }
                while b
                    .get(i)
                    .is_some_and(|c| !matches!(c, b' ' | b'\t' | b'\n' | b';' | b'}'))
                {
                    i += 1;
                }
            }
            b'a' | b'i' | b'c' => {
                // Text to the end of the line; `\` newline goes on.
                while let Some(&c) = b.get(i) {
                    match c {
                        b'\n' => break,
                        b'\\' => i += 2,
                        _ => i += 1,
                    }
                }
                continue;
            }
            b's' => {
                let d = delimiter(b, &mut i, "s")?;
                part(b, &mut i, d, true)?;
                part(b, &mut i, d, false)?;
                while let Some(&f) = b.get(i) {
                    match f {
                        b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => i += 1,
                        b'e' => return Err("sed s///e runs the pattern space as a command".into()),
                        b'w' | b'W' => return Err("sed s///w writes a file".into()),
                        _ => break,
                    }
                }
            }
            b'y' => {
                let d = delimiter(b, &mut i, "y")?;
                part(b, &mut i, d, false)?;
                part(b, &mut i, d, false)?;
            }
            b'r' | b'R' => return Err("sed r reads a file the script names".into()),
            b'w' | b'W' => return Err("sed w writes a file".into()),
            b'e' => return Err("sed e runs a command".into()),
            other => {
                return Err(format!(
                    "the sed command {} is not analysed",
                    char::from(other).escape_default()
                ));
            }
        }
        end_of_command(b, &mut i)?;
    }
    if depth != 0 {
        return Err("a sed { without }".into());
    }
    Ok(())
}

fn blanks(b: &[u8], i: &mut usize) {
    while matches!(b.get(*i), Some(b' ' | b'\t')) {
        *i += 1;
    }
}

fn digits(b: &[u8], i: &mut usize) -> bool {
    let start = *i;
    while b.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    *i > start
}

fn skip_line(b: &[u8], i: &mut usize) {
    while b.get(*i).is_some_and(|&c| c != b'\n') {
        *i += 1;
    }
}

/// After a command: blanks, then the end, a newline, `;`, or a `}` or
/// `#` that begins the next. Anything else would be read by sed as
/// another command (or refused by it): ask.
fn end_of_command(b: &[u8], i: &mut usize) -> R<()> {
    blanks(b, i);
    match b.get(*i) {
        None | Some(b'\n' | b';' | b'}' | b'#') => Ok(()),
        Some(_) => Err("a sed command followed by more than sed ends it with".into()),
    }
}

/// The delimiter of `s` or `y`: one ASCII character, not a backslash or
/// a newline.
fn delimiter(b: &[u8], i: &mut usize, cmd: &str) -> R<u8> {
    let d = *b
        .get(*i)
        .ok_or_else(|| format!("a sed {cmd} without its delimiter"))?;
    if d == b'\\' || d == b'\n' || !d.is_ascii() {
        return Err(format!("a sed {cmd} with an unusual delimiter"));
    }
    *i += 1;
    Ok(d)
}

/// An address: a line number (`first~step`), `$`, `/re/` or `\cREc`
/// with `I`/`M` flags. False when there is none.
fn address(b: &[u8], i: &mut usize) -> R<bool> {
    match b.get(*i) {
        Some(c) if c.is_ascii_digit() => {
            digits(b, i);
            if b.get(*i) == Some(&b'~') {
                *i += 1;
                digits(b, i);
            }
            Ok(true)
        }
        Some(b'$') => {
            *i += 1;
            Ok(true)
        }
        Some(b'/') => {
            *i += 1;
            part(b, i, b'/', true)?;
            while matches!(b.get(*i), Some(b'I' | b'M')) {
                *i += 1;
            }
            Ok(true)
        }
        Some(b'\\') => {
            *i += 1;
            let d = delimiter(b, i, "address")?;
            part(b, i, d, true)?;
            while matches!(b.get(*i), Some(b'I' | b'M')) {
                *i += 1;
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Up to and past the next unescaped delimiter. In a regex, GNU sed does
/// not end at a delimiter inside `[…]` and other seds do: such a bracket
/// (or one holding a backslash, read differently again) asks.
fn part(b: &[u8], i: &mut usize, d: u8, regex: bool) -> R<()> {
    while let Some(&c) = b.get(*i) {
        match c {
            b'\\' => {
                if regex && b.get(*i + 1) == Some(&b'\n') {
                    return Err("a newline inside a sed pattern".into());
                }
                *i += 2;
            }
            c if c == d => {
                *i += 1;
                return Ok(());
            }
            b'[' if regex => *i = bracket(b, *i, d)?,
            b'\n' => return Err("a newline inside a sed command".into()),
            _ => *i += 1,
        }
    }
    Err("a sed command without its closing delimiter".into())
}

/// A bracket expression from its `[`; returns the index after its `]`.
fn bracket(b: &[u8], mut j: usize, d: u8) -> R<usize> {
    j += 1;
    if b.get(j) == Some(&b'^') {
        j += 1;
    }
    if b.get(j) == Some(&b']') {
        j += 1;
    }
    while let Some(&x) = b.get(j) {
        // Whether `\` escapes inside brackets differs between seds: only
        // where that cannot move the bracket's end (`[ \t]`).
        if x == b'\\'
            && b.get(j + 1)
                .is_some_and(|&n| !matches!(n, b']' | b'[' | b'\n') && n != d)
        {
            j += 2;
            continue;
        }
        if x == d || x == b'\\' || x == b'\n' {
            return Err("a sed bracket expression holding the delimiter or a backslash".into());
        }
        if x == b'[' && matches!(b.get(j + 1), Some(b':' | b'.' | b'=')) {
            // `[:alpha:]`, `[.x.]`, `[=x=]`: up to the matching `:]`, which
            // the checks above then cover too.
            let close = b[j + 2..]
                .windows(2)
                .position(|w| w[1] == b']' && w[0] == b[j + 1])
                .ok_or("an unterminated sed character class")?;
            if b[j + 2..j + 2 + close]
                .iter()
                .any(|&y| y == d || y == b'\\' || y == b'\n')
            {
                return Err("a sed character class holding the delimiter".into());
            }
            j += close + 4;
            continue;
        }
        if x == b']' {
            return Ok(j + 1);
        }
        j += 1;
    }
    Err("a sed bracket expression without its ]".into())
}

#[cfg(test)]
mod tests;
