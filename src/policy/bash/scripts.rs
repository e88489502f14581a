//! Programs whose first operand is a program of their own: `sed`, `awk`
//! and `jq`. Each script is read far enough to find the commands that
//! write files, read files the command line does not name, or run other
//! programs (`sed w/r/e` and `s///e`/`s///w`; awk `system`, `getline`,
//! pipes and `print > file`; jq `import`/`include`). Anything the reader
//! does not follow asks.

use super::check::Checker;
use super::plan::Arg;

type R<T> = Result<T, String>;

fn lit<'a>(prog: &str, a: &'a Arg) -> R<&'a str> {
    a.lit().ok_or_else(|| {
        format!(
            "{prog} gets a program or option computed at run time ({})",
            a.show()
        )
    })
}

/// `sed [options] script [file…]` or `sed -e script … [file…]`.
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
            | "--null-data" | "--posix" | "--debug" | "--sandbox" => {}
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
                        'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
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
    for s in &scripts {
        sed_script(s)?;
    }
    for f in &files {
        c.read(f, false, "sed")?;
    }
    Ok(())
}

fn sed_script(s: &str) -> R<()> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut depth = 0i32;
    let ws = |b: &[char], i: &mut usize| {
        while *i < b.len() && matches!(b[*i], ' ' | '\t') {
            *i += 1;
        }
    };
    loop {
        while i < b.len() && matches!(b[i], ' ' | '\t' | '\n' | ';') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == '#' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if sed_address(&b, &mut i)? {
            ws(&b, &mut i);
            if b.get(i) == Some(&',') {
                i += 1;
                ws(&b, &mut i);
                if matches!(b.get(i), Some('+' | '~')) {
                    i += 1;
                }
                if !sed_address(&b, &mut i)? {
                    return Err("a sed address range without its end".into());
                }
            }
        }
        ws(&b, &mut i);
        if b.get(i) == Some(&'!') {
            i += 1;
            ws(&b, &mut i);
        }
        let Some(&cmd) = b.get(i) else {
            return Err("a sed address without a command".into());
        };
        i += 1;
        match cmd {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err("a sed } without {".into());
                }
            }
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                ws(&b, &mut i);
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // Labels end at `;` or a newline here, which is never later
            // than sed ends them.
            'b' | 't' | 'T' | ':' | 'v' => {
                while i < b.len() && !matches!(b[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            // Text to print, to the end of the line (with \ continuations).
            'a' | 'i' | 'c' => {
                while i < b.len() && b[i] != '\n' {
                    if b[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            's' => {
                let d = *b.get(i).ok_or("a sed s without its delimiter")?;
                if d == '\\' || d == '\n' {
                    return Err("a sed s with an unusual delimiter".into());
                }
                i += 1;
                sed_part(&b, &mut i, d, true)?;
                sed_part(&b, &mut i, d, false)?;
                while let Some(&f) = b.get(i) {
                    match f {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => return Err("sed s///e runs the pattern space as a command".into()),
                        'w' | 'W' => return Err("sed s///w writes a file".into()),
                        ';' | '\n' | ' ' | '\t' | '}' | '#' => break,
                        other => return Err(format!("the sed s flag {other} is not analysed")),
                    }
                }
            }
            'y' => {
                let d = *b.get(i).ok_or("a sed y without its delimiter")?;
                i += 1;
                sed_part(&b, &mut i, d, false)?;
                sed_part(&b, &mut i, d, false)?;
            }
            'r' | 'R' => return Err("sed r reads a file the script names".into()),
            'w' | 'W' => return Err("sed w writes a file".into()),
            'e' => return Err("sed e runs a command".into()),
            other => return Err(format!("the sed command {other} is not analysed")),
        }
    }
    if depth != 0 {
        return Err("a sed { without }".into());
    }
    Ok(())
}

/// An address: a line number, `$`, `first~step`, `/re/` or `\cREc` (with
/// `I`/`M` flags). False when there is none.
fn sed_address(b: &[char], i: &mut usize) -> R<bool> {
    match b.get(*i) {
        Some(c) if c.is_ascii_digit() => {
            while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == '~') {
                *i += 1;
            }
            Ok(true)
        }
        Some('$') => {
            *i += 1;
            Ok(true)
        }
        Some('/') => {
            *i += 1;
            sed_part(b, i, '/', true)?;
            while matches!(b.get(*i), Some('I' | 'M')) {
                *i += 1;
            }
            Ok(true)
        }
        Some('\\') => {
            let d = *b.get(*i + 1).ok_or("a sed address ending in \\")?;
            *i += 2;
            sed_part(b, i, d, true)?;
            while matches!(b.get(*i), Some('I' | 'M')) {
                *i += 1;
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Up to and past the next unescaped delimiter. In a regex, GNU sed does
/// not end at a delimiter inside `[…]`: such a script is refused rather
/// than guessed.
fn sed_part(b: &[char], i: &mut usize, d: char, regex: bool) -> R<()> {
    while let Some(&c) = b.get(*i) {
        match c {
            '\\' => *i += 2,
            c if c == d => {
                *i += 1;
                return Ok(());
            }
            '[' if regex => {
                let mut j = *i + 1;
                if b.get(j) == Some(&'^') {
                    j += 1;
                }
                if b.get(j) == Some(&']') {
                    j += 1;
                }
                while let Some(&x) = b.get(j) {
                    if x == d {
                        return Err("a sed bracket expression holding the delimiter".into());
                    }
                    if x == '[' && matches!(b.get(j + 1), Some(':' | '.' | '=')) {
                        let close = b[j + 2..]
                            .windows(2)
                            .position(|w| w[1] == ']' && matches!(w[0], ':' | '.' | '='))
                            .ok_or("an unterminated sed character class")?;
                        j += close + 4;
                        continue;
                    }
                    if x == ']' {
                        break;
                    }
                    j += 1;
                }
                *i = j + 1;
            }
            '\n' if regex => return Err("a newline inside a sed pattern".into()),
            _ => *i += 1,
        }
    }
    Err("a sed command without its closing delimiter".into())
}

/// `awk [-F fs] [-v var=value]… 'program' [file | var=value]…`
pub(crate) fn awk(c: &mut Checker, args: &[Arg]) -> R<()> {
    let mut i = 0;
    let mut program: Option<String> = None;
    while let Some(a) = args.get(i) {
        if !a.may_be_flag() {
            break;
        }
        let s = lit("awk", a)?;
        i += 1;
        match s {
            "--" => break,
            "-F" | "-v" => {
                lit("awk", args.get(i).ok_or("awk -F/-v needs a value")?)?;
                i += 1;
            }
            "-e" | "--source" => {
                program = Some(lit("awk", args.get(i).ok_or("awk -e needs a program")?)?.into());
                i += 1;
            }
            s if s.starts_with("-F") || s.starts_with("-v") => {}
            s if s.starts_with("-f") || s.starts_with("-E") || s == "--file" => {
                return Err("awk -f reads its program from a file".into());
            }
            other => return Err(format!("awk {other} is not analysed")),
        }
    }
    let rest = &args[i..];
    let operands = match program {
        Some(p) => {
            awk_program(&p)?;
            rest
        }
        None => {
            let (p, rest) = rest.split_first().ok_or("awk without a program")?;
            awk_program(lit("awk", p)?)?;
            rest
        }
    };
    for a in operands {
        // `name=value` operands are assignments, not files.
        if let Some(s) = a.lit()
            && let Some((n, _)) = s.split_once('=')
            && super::syntax::is_name(n)
        {
            continue;
        }
        c.read(a, false, "awk")?;
    }
    Ok(())
}

fn awk_program(src: &str) -> R<()> {
    let b: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut depth = 0i32;
    // Paren depth at which the current print statement started.
    let mut print_at: Option<i32> = None;
    // Could a `/` here start a regex (no operand just before)?
    let mut regex_ok = true;
    while i < b.len() {
        let c = b[i];
        match c {
            ' ' | '\t' => {
                i += 1;
                continue;
            }
            '\\' if b.get(i + 1) == Some(&'\n') => {
                i += 2;
                continue;
            }
            '\n' | ';' | '{' | '}' => {
                print_at = None;
                regex_ok = true;
                i += 1;
                continue;
            }
            '#' => {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '"' => {
                i += 1;
                while i < b.len() && b[i] != '"' {
                    if b[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= b.len() {
                    return Err("an awk string without its closing quote".into());
                }
                i += 1;
                regex_ok = false;
                continue;
            }
            '/' if regex_ok => {
                i += 1;
                let mut class = false;
                while i < b.len() && (b[i] != '/' || class) {
                    match b[i] {
                        '\\' => i += 1,
                        '[' => class = true,
                        ']' => class = false,
                        '\n' => return Err("an awk regex across lines".into()),
                        _ => {}
                    }
                    i += 1;
                }
                if i >= b.len() {
                    return Err("an awk regex without its closing /".into());
                }
                i += 1;
                regex_ok = false;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
                let word: String = b[start..i].iter().collect();
                match word.as_str() {
                    "system" => return Err("awk system() runs a command".into()),
                    "getline" => return Err("awk getline reads files or commands".into()),
                    "ARGV" | "ARGC" => {
                        return Err("awk ARGV/ARGC can change which files are read".into());
                    }
                    "print" | "printf" => {
                        print_at = Some(depth);
                        regex_ok = true;
                    }
                    _ => regex_ok = false,
                }
                continue;
            }
            c if c.is_ascii_digit() || c == '.' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '.') {
                    i += 1;
                }
                regex_ok = false;
                continue;
            }
            '$' => {
                i += 1;
                regex_ok = true;
                continue;
            }
            '@' => return Err("a gawk @ directive".into()),
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                i += 1;
                regex_ok = false;
                continue;
            }
            ']' => {
                i += 1;
                regex_ok = false;
                continue;
            }
            '|' if b.get(i + 1) == Some(&'|') => i += 1,
            '|' => return Err("an awk pipe runs a command".into()),
            '>' if print_at == Some(depth) && b.get(i + 1) != Some(&'=') => {
                return Err("awk print > writes a file".into());
            }
            _ => {}
        }
        regex_ok = true;
        i += 1;
    }
    Ok(())
}

/// `jq [options] filter [file…]`; `--arg`/`--argjson` and the file forms
/// take two values.
pub(crate) fn jq(c: &mut Checker, args: &[Arg]) -> R<()> {
    let mut i = 0;
    let mut filter: Option<String> = None;
    let mut files = Vec::new();
    let mut positional = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if positional || !a.may_be_flag() {
            if filter.is_none() {
                filter = Some(lit("jq", a)?.to_string());
            } else if !positional {
                files.push(a.clone());
            }
            continue;
        }
        let s = lit("jq", a)?;
        match s {
            "--arg" | "--argjson" => i += 2,
            "--slurpfile" | "--rawfile" => {
                let f = args
                    .get(i + 1)
                    .ok_or_else(|| format!("jq {s} needs a file"))?;
                c.read(f, false, "jq")?;
                i += 2;
            }
            "--indent" => i += 1,
            "--args" | "--jsonargs" => positional = true,
            "--null-input"
            | "--raw-output"
            | "--join-output"
            | "--ascii-output"
            | "--compact-output"
            | "--color-output"
            | "--monochrome-output"
            | "--sort-keys"
            | "--slurp"
            | "--exit-status"
            | "--tab"
            | "--seq"
            | "--stream"
            | "--raw-input"
            | "--unbuffered"
            | "--help"
            | "--version"
            | "--raw-output0"
            | "--stream-errors" => {}
            "-f" | "--from-file" => return Err("jq -f reads its program from a file".into()),
            "-L" => return Err("jq -L loads modules from a directory".into()),
            s if s.starts_with("-L") => return Err("jq -L loads modules from a directory".into()),
            s if s.starts_with("--") => return Err(format!("jq {s} is not analysed")),
            s => {
                for ch in s.chars().skip(1) {
                    if !"nrjacCMSseRh".contains(ch) {
                        return Err(format!("jq -{ch} is not analysed"));
                    }
                }
            }
        }
    }
    let f = filter.ok_or("jq without a filter")?;
    for word in f.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')) {
        if matches!(
            word,
            "import" | "include" | "modulemeta" | "get_search_list"
        ) {
            return Err(format!(
                "jq {word} loads files the command line does not name"
            ));
        }
    }
    for a in &files {
        c.read(a, false, "jq")?;
    }
    Ok(())
}
