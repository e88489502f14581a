//! awk: the command line, then the program, tokenized as awk's grammar
//! reads it.
//!
//! The one place where awk's tokens depend on the grammar is `/`: where
//! an operand is expected it starts a regular expression (`return /#/`),
//! elsewhere it divides. The tokenizer decides by the token before it, as
//! mawk does and as gawk's and busybox's grammars agree; where those
//! awks disagree (after `++`/`--`, after `length` without parentheses,
//! `/` inside a bracket expression) the program asks.
//!
//! What a program may do: compute, print to standard output, call the
//! built-in functions that only compute and the functions it defines.
//! What asks: `system`, `getline` in any form, pipes (`|`, `|&`), `print`
//! and `printf` redirected (`>`, `>>`), `ARGV`/`ARGC` (which files are
//! read), gawk's `PROCINFO`, `SYMTAB`, `FUNCTAB` (names reached at run
//! time), `@` (gawk's `@load`, `@include`, indirect calls), a call to a
//! function neither built in nor defined, and anything the tokenizer does
//! not recognise.

use super::{R, lit};
use crate::policy::bash::check::Checker;
use crate::policy::bash::plan::Arg;

/// Names a program may not use, anywhere, and why.
const REFUSED: &[(&str, &str)] = &[
    ("system", "awk system() runs a command"),
    (
        "getline",
        "awk getline reads files or the output of commands",
    ),
    ("ARGV", "awk ARGV can change which files are read"),
    ("ARGC", "awk ARGC can change which files are read"),
    ("PROCINFO", "gawk's PROCINFO can call a function by name"),
    (
        "SYMTAB",
        "gawk's SYMTAB reaches variables by name at run time",
    ),
    (
        "FUNCTAB",
        "gawk's FUNCTAB reaches functions by name at run time",
    ),
    (
        "bindtextdomain",
        "gawk's bindtextdomain reads message catalogues",
    ),
    ("dcgettext", "gawk's dcgettext reads message catalogues"),
    ("dcngettext", "gawk's dcngettext reads message catalogues"),
];

/// Built-in functions (POSIX, gawk, mawk, busybox) that only compute.
const FUNCTIONS: &str = "length substr index split sub gsub match sprintf sin cos atan2 exp \
     log sqrt int rand srand tolower toupper close fflush gensub strftime systime mktime \
     asort asorti patsplit strtonum and or xor lshift rshift compl isarray typeof mkbool";

const KEYWORDS: &str = "BEGIN END BEGINFILE ENDFILE function func if else while for do break \
     continue next nextfile exit return delete in getline print printf switch case default";

/// Keywords after which a statement may end (a newline there ends it).
const ENDING: &str = "next nextfile exit return break continue getline print printf";

/// Operators, longest first.
const PUNCT: &[&str] = &[
    "**=", "&&", "||", "==", "!=", "<=", ">=", ">>", "++", "--", "+=", "-=", "*=", "%=", "^=",
    "**", "!~", "::", "|&", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "%", "^", "!",
    ">", "<", "|", "?", ":", "~", "$", "=",
];

/// Most nested parentheses a program may have.
const MAX_PARENS: usize = 256;

fn listed(list: &str, w: &str) -> bool {
    list.split_ascii_whitespace().any(|x| x == w)
}

/// `awk [-F fs] [-v var=value]… 'program' [file | var=value]…`, or the
/// program in gawk's `-e`/`--source` (all of them, joined as gawk joins
/// them).
pub(crate) fn awk(c: &mut Checker, args: &[Arg]) -> R<()> {
    let mut i = 0;
    let mut sources: Vec<String> = Vec::new();
    while let Some(a) = args.get(i) {
        if !a.may_be_flag() {
            break;
        }
        let s = lit("awk", a)?;
        i += 1;
        let mut value = || -> R<&str> {
            let v = args
                .get(i)
                .ok_or_else(|| format!("awk {s} needs a value"))?;
            i += 1;
            lit("awk", v)
        };
        match s {
            "--" => break,
            "-F" => {
                value()?;
            }
            "-v" => assignment(value()?)?,
            "-e" | "--source" => sources.push(value()?.to_string()),
            s if s.starts_with("--source=") => sources.push(s["--source=".len()..].to_string()),
            s if s.starts_with("-F") => {}
            s if s.starts_with("-v") => assignment(&s[2..])?,
            s if s.starts_with("-f") || s.starts_with("-E") || s.starts_with("--file") => {
                return Err("awk -f reads its program from a file".into());
            }
            other => return Err(format!("awk {other} is not analysed")),
        }
    }
    let mut rest = &args[i..];
    if sources.is_empty() {
        let (p, after) = rest.split_first().ok_or("awk without a program")?;
        sources.push(lit("awk", p)?.to_string());
        rest = after;
    }
    program(&sources.join("\n"))?;
    for a in rest {
        // `name=value` operands are assignments, not files.
        if let Some(s) = a.lit()
            && let Some((n, _)) = s.split_once('=')
            && crate::policy::bash::syntax::is_name(n)
        {
            assignment(s)?;
            continue;
        }
        c.read(a, false, "awk")?;
    }
    Ok(())
}

/// `-v name=value` and `name=value` operands: harmless unless the name
/// is one the program could not use either.
fn assignment(s: &str) -> R<()> {
    let name = s.split_once('=').map_or(s, |(n, _)| n);
    match REFUSED.iter().find(|(n, _)| *n == name) {
        Some((_, why)) => Err((*why).to_string()),
        None => Ok(()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tok<'a> {
    Num,
    Str,
    Regex,
    Name(&'a str),
    Punct(&'static str),
    /// A newline that ends a statement.
    End,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Paren {
    /// After `if`, `while`, `for`, `switch`: a statement follows.
    Control,
    /// Grouping or a call: an operand ends with it.
    Other,
}

/// Checks an awk program; Err says what asks.
pub(crate) fn program(src: &str) -> R<()> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut prev: Option<Tok> = None;
    // The parenthesis that the last `)` closed (for the token after it).
    let mut closed = Paren::Other;
    let mut parens: Vec<Paren> = Vec::new();
    // Paren depth at which a print statement's expression list is.
    let mut print_at: Option<usize> = None;
    let mut defined: Vec<&str> = Vec::new();
    let mut called: Vec<&str> = Vec::new();
    let mut as_variable: Vec<&str> = Vec::new();
    // The keyword whose `(` comes next (if, while, for, switch).
    let mut control_next = false;
    let mut defining = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\n' => {
                i += 1;
                if ends_operand(prev) {
                    print_at = None;
                    prev = Some(Tok::End);
                }
                // Otherwise a continuation: awk reads on.
                continue;
            }
            _ => {}
        }
        let tok = if c == b'"' {
            i = string(b, i)?;
            Tok::Str
        } else if c == b'/' {
            if regex_here(prev, closed)? {
                i = regex(b, i)?;
                Tok::Regex
            } else if b.get(i + 1) == Some(&b'=') {
                i += 2;
                Tok::Punct("/=")
            } else {
                i += 1;
                Tok::Punct("/")
            }
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i = number(b, i);
            Tok::Num
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Tok::Name(&src[start..i])
        } else if c == b'@' {
            return Err("a gawk @ directive or indirect call".into());
        } else if let Some(p) = PUNCT.iter().find(|p| b[i..].starts_with(p.as_bytes())) {
            i += p.len();
            Tok::Punct(p)
        } else {
            return Err(format!(
                "the awk program has {:?}, which is not analysed",
                src[i..].chars().next().unwrap_or(' ')
            ));
        };
        let next_is_paren = b.get(i) == Some(&b'(');
        match tok {
            Tok::Name(n) => {
                if let Some((_, why)) = REFUSED.iter().find(|(r, _)| *r == n) {
                    return Err((*why).to_string());
                }
                if defining {
                    defined.push(n);
                    defining = false;
                } else if listed(KEYWORDS, n) {
                    match n {
                        "print" | "printf" => print_at = Some(parens.len()),
                        "function" | "func" => defining = true,
                        "if" | "while" | "for" | "switch" => control_next = true,
                        _ => {}
                    }
                } else if listed(FUNCTIONS, n) {
                    // Only `length` may stand without its parentheses.
                    if n != "length" && !next_after_blanks(b, i, b'(') {
                        return Err(format!("awk's {n} without its arguments"));
                    }
                } else if next_is_paren {
                    called.push(n);
                } else {
                    as_variable.push(n);
                }
            }
            Tok::Punct("(") => {
                if parens.len() >= MAX_PARENS {
                    return Err("an awk program nested too deeply".into());
                }
                parens.push(if control_next {
                    Paren::Control
                } else {
                    Paren::Other
                });
                control_next = false;
            }
            Tok::Punct(")") => {
                closed = parens.pop().ok_or("an awk ) without (")?;
                if print_at.is_some_and(|d| parens.len() < d) {
                    print_at = None;
                }
            }
            Tok::Punct(";" | "{" | "}") => print_at = None,
            Tok::Punct("|" | "|&") => return Err("an awk pipe runs a command".into()),
            Tok::Punct(">" | ">>") if print_at == Some(parens.len()) => {
                return Err("awk print > writes a file".into());
            }
            Tok::Punct("::") => return Err("a gawk namespace".into()),
            _ => {}
        }
        if !matches!(tok, Tok::Name("if" | "while" | "for" | "switch")) {
            control_next = false;
        }
        prev = Some(tok);
    }
    if !parens.is_empty() {
        return Err("an awk ( without )".into());
    }
    if let Some(f) = called.iter().find(|f| !defined.contains(f)) {
        return Err(format!(
            "the awk program calls {f}, which it does not define"
        ));
    }
    if let Some(f) = as_variable.iter().find(|f| defined.contains(f)) {
        return Err(format!("the awk function {f} used as a variable"));
    }
    Ok(())
}

/// Does a newline after this token end the statement? (After an operator,
/// a comma, `{`, `&&`, `||`, `do`, `else` … awk reads on.)
fn ends_operand(prev: Option<Tok>) -> bool {
    match prev {
        Some(Tok::Num | Tok::Str | Tok::Regex) => true,
        Some(Tok::Name(n)) => !listed(KEYWORDS, n) || listed(ENDING, n),
        Some(Tok::Punct(p)) => matches!(p, ")" | "]" | "++" | "--"),
        Some(Tok::End) | None => false,
    }
}

/// Is a `/` after `prev` the start of a regular expression?
fn regex_here(prev: Option<Tok>, closed: Paren) -> R<bool> {
    let ambiguous = |what: &str| {
        Err(format!(
            "awks read a / after {what} differently (a regular expression or a division)"
        ))
    };
    match prev {
        None | Some(Tok::End) => Ok(true),
        Some(Tok::Num | Tok::Str | Tok::Regex) => Ok(false),
        Some(Tok::Name("length")) => ambiguous("length"),
        Some(Tok::Name(n)) if listed(KEYWORDS, n) => Ok(true),
        Some(Tok::Name(_)) => Ok(false),
        Some(Tok::Punct(")")) => Ok(closed == Paren::Control),
        Some(Tok::Punct("]")) => Ok(false),
        Some(Tok::Punct(p @ ("++" | "--"))) => ambiguous(p),
        Some(Tok::Punct(_)) => Ok(true),
    }
}

fn next_after_blanks(b: &[u8], mut i: usize, want: u8) -> bool {
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    b.get(i) == Some(&want)
}

/// A string from its opening quote; returns the index after it.
fn string(b: &[u8], mut i: usize) -> R<usize> {
    i += 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => return Ok(i + 1),
            b'\\' => i += 2,
            b'\n' => return Err("an awk string across lines".into()),
            _ => i += 1,
        }
    }
    Err("an awk string without its closing quote".into())
}

/// A regular expression from its opening `/`; returns the index after it.
/// awks differ on a `/` or `\` inside a bracket expression: those ask.
fn regex(b: &[u8], mut i: usize) -> R<usize> {
    i += 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'/' => return Ok(i + 1),
            b'\\' if b.get(i + 1).is_some_and(|&n| n != b'\n') => i += 2,
            b'\n' | b'\\' => return Err("an awk regular expression across lines".into()),
            b'[' => i = bracket(b, i)?,
            _ => i += 1,
        }
    }
    Err("an awk regular expression without its closing /".into())
}

/// A bracket expression from its `[`; returns the index after its `]`.
fn bracket(b: &[u8], mut i: usize) -> R<usize> {
    i += 1;
    if b.get(i) == Some(&b'^') {
        i += 1;
    }
    if b.get(i) == Some(&b']') {
        i += 1;
    }
    while let Some(&c) = b.get(i) {
        match c {
            b']' => return Ok(i + 1),
            b'[' if matches!(b.get(i + 1), Some(b':' | b'.' | b'=')) => {
                let close = b[i + 2..]
                    .windows(2)
                    .position(|w| w[1] == b']' && w[0] == b[i + 1])
                    .ok_or("an unterminated character class in an awk regular expression")?;
                if b[i + 2..i + 2 + close]
                    .iter()
                    .any(|&y| matches!(y, b'/' | b'\\' | b'\n'))
                {
                    return Err(
                        "awks read a / or \\ inside a bracket expression differently".into(),
                    );
                }
                i += close + 4;
            }
            // Whether `\` escapes inside brackets differs between awks: only
            // where that cannot move the bracket's end (`[ \t]`).
            b'\\' if !matches!(b.get(i + 1), None | Some(b']' | b'[' | b'/' | b'\n')) => i += 2,
            b'/' | b'\\' | b'\n' => {
                return Err("awks read a / or \\ inside a bracket expression differently".into());
            }
            _ => i += 1,
        }
    }
    Err("an awk bracket expression without its ]".into())
}

/// A decimal number with its fraction and exponent; returns its end. What
/// follows it (`x1F` in `0x1F`, `system` in `1system(…)`) is read as the
/// next token, so no name hides inside a number.
fn number(b: &[u8], mut i: usize) -> usize {
    let digits = |i: &mut usize| {
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
    };
    digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if b.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
            i += 1 + sign;
            digits(&mut i);
        }
    }
    i
}

#[cfg(test)]
mod tests;
