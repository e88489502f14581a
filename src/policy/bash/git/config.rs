//! git's config file format, read the way git reads it, so that what tern
//! checks is what git will use.
//!
//! Bytes, not text: a value or subsection may hold any byte but NUL and a
//! newline, and a byte that is not UTF-8 is data (git reads it; skipping
//! the file over it would fail open). A leading UTF-8 byte-order mark is
//! skipped, as git skips it. The grammar (git-config(1), "Syntax"):
//! `[name]`, `[name "sub"]` (subsection case-sensitive, `\x` is `x`),
//! the deprecated `[name.sub]` (subsection lowercased); keys are
//! case-insensitive, start with a letter and hold letters, digits and
//! `-`; a key without `=` is boolean true; values take `"…"`, the escapes
//! `\n \t \b \\ \"`, a `\` at the end of a line to continue it, `#`/`;`
//! comments outside quotes, and lose leading and trailing blanks (a blank
//! inside the value is kept as written).
//!
//! Whatever this reader is not certain git reads the same way is an error
//! (the git command then asks): anything git itself rejects, and a few
//! forms git accepts but that no tool writes (a key before any section,
//! `[.a]`, control characters, a `\` at the very end of the file).

/// Larger config files are not read (the git command asks).
pub(crate) const MAX_BYTES: u64 = 1 << 20;

/// One `key = value` as git sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Lowercase ASCII.
    pub section: String,
    /// As written (or lowercased, from the deprecated `[name.sub]` form).
    pub sub: Option<Vec<u8>>,
    /// Lowercase ASCII.
    pub key: String,
    /// None: written without `=` (boolean true).
    pub value: Option<Vec<u8>>,
    pub line: usize,
}

impl Entry {
    /// `section.sub.key`, as git names it (subsection bytes as they are).
    pub(crate) fn name_bytes(&self) -> Vec<u8> {
        let mut n = self.section.as_bytes().to_vec();
        if let Some(s) = &self.sub {
            n.push(b'.');
            n.extend_from_slice(s);
        }
        n.push(b'.');
        n.extend_from_slice(self.key.as_bytes());
        n
    }

    /// The same, for messages.
    pub(crate) fn name(&self) -> String {
        String::from_utf8_lossy(&self.name_bytes()).into_owned()
    }

    /// Whether this is `section.key` (no subsection).
    pub(crate) fn is(&self, section: &str, key: &str) -> bool {
        self.sub.is_none() && self.section == section && self.key == key
    }
}

/// git's blanks inside a line (a CR counts, as it does for git).
fn blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r')
}

/// A byte that is data nowhere in a config file tern reads.
fn control(c: u8) -> bool {
    (c < 0x20 && c != b'\t' && c != b'\n' && c != b'\r') || c == 0x7f
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
}

impl Cur<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// The next byte; a CR LF pair is one newline, as git reads it.
    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        if c == b'\r' && self.peek() == Some(b'\n') {
            self.i += 1;
            self.line += 1;
            return Some(b'\n');
        }
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn at_newline(&self) -> bool {
        match self.peek() {
            Some(b'\n') => true,
            Some(b'\r') => self.b.get(self.i + 1) == Some(&b'\n'),
            _ => false,
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.bump() {
            if c == b'\n' {
                break;
            }
        }
    }

    fn err(&self, what: &str) -> String {
        format!("line {}: {what}", self.line)
    }
}

/// Every entry of a config file, in order; Err where tern cannot be
/// certain how git reads the file.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    if let Some(i) = bytes.iter().position(|&c| c == 0 || control(c)) {
        let line = 1 + bytes[..i].iter().filter(|&&c| c == b'\n').count();
        return Err(format!(
            "line {line}: a control character (byte {:#04x})",
            bytes[i]
        ));
    }
    let mut cur = Cur {
        b: bytes,
        i: 0,
        line: 1,
    };
    let mut section: Option<(String, Option<Vec<u8>>)> = None;
    let mut out = Vec::new();
    while let Some(c) = cur.peek() {
        match c {
            c if blank(c) || c == b'\n' => {
                cur.bump();
            }
            b'#' | b';' => cur.skip_line(),
            b'[' => {
                cur.bump();
                section = Some(header(&mut cur)?);
            }
            c if c.is_ascii_alphabetic() => {
                let line = cur.line;
                let mut key = String::new();
                while let Some(c) = cur
                    .peek()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == b'-')
                {
                    key.push(c.to_ascii_lowercase() as char);
                    cur.bump();
                }
                // Only spaces and tabs here (a CR is not a blank to git
                // between a key and its `=`).
                while matches!(cur.peek(), Some(b' ' | b'\t')) {
                    cur.bump();
                }
                let value = match cur.peek() {
                    None => None,
                    Some(_) if cur.at_newline() => None,
                    Some(b'=') => {
                        cur.bump();
                        Some(value(&mut cur)?)
                    }
                    Some(_) => {
                        return Err(cur.err(&format!(
                            "{key} is followed by neither = nor the end of the line"
                        )));
                    }
                };
                let Some((s, sub)) = &section else {
                    return Err(cur.err(&format!("{key} comes before any [section]")));
                };
                out.push(Entry {
                    section: s.clone(),
                    sub: sub.clone(),
                    key,
                    value,
                    line,
                });
            }
            _ => return Err(cur.err("a line that is neither a section, a key nor a comment")),
        }
    }
    Ok(out)
}

/// After `[`: the section name and subsection, through `]`.
fn header(cur: &mut Cur) -> Result<(String, Option<Vec<u8>>), String> {
    let mut name = String::new();
    loop {
        match cur.bump() {
            Some(b']') => break,
            Some(c) if blank(c) => return quoted_sub(cur, name),
            Some(c) if c.is_ascii_alphanumeric() || c == b'-' || c == b'.' => {
                name.push(c.to_ascii_lowercase() as char);
            }
            _ => return Err(cur.err("a section header tern cannot read")),
        }
    }
    // `[name]`, or the deprecated `[name.sub]` (lowercased already).
    match name.split_once('.') {
        None if !name.is_empty() => Ok((name, None)),
        Some((s, sub))
            if !s.is_empty() && !sub.is_empty() && !sub.split('.').any(str::is_empty) =>
        {
            Ok((s.to_string(), Some(sub.as_bytes().to_vec())))
        }
        _ => Err(cur.err(&format!("a section name tern cannot read ([{name}])"))),
    }
}

/// `[name "sub"]` after the blank that follows the name.
fn quoted_sub(cur: &mut Cur, name: String) -> Result<(String, Option<Vec<u8>>), String> {
    if name.is_empty() || name.contains('.') {
        return Err(cur.err(&format!("a section name tern cannot read ([{name} …])")));
    }
    while cur.peek().is_some_and(blank) && !cur.at_newline() {
        cur.bump();
    }
    if cur.bump() != Some(b'"') {
        return Err(cur.err(&format!("[{name} …] without a quoted subsection")));
    }
    let mut sub = Vec::new();
    loop {
        match cur.bump() {
            None | Some(b'\n') => return Err(cur.err("a subsection without its closing quote")),
            Some(b'"') => break,
            Some(b'\\') => match cur.bump() {
                None | Some(b'\n') => return Err(cur.err("a subsection without its closing quote")),
                Some(c) => sub.push(c),
            },
            Some(c) => sub.push(c),
        }
    }
    if cur.bump() != Some(b']') {
        return Err(cur.err("a section header with more after its subsection"));
    }
    Ok((name, Some(sub)))
}

/// A value after `=`, through the end of its (last) line.
fn value(cur: &mut Cur) -> Result<Vec<u8>, String> {
    let mut v = Vec::new();
    // Blanks outside quotes, kept only if more of the value follows.
    let mut pending = Vec::new();
    let mut quoted = false;
    loop {
        let Some(c) = cur.bump() else {
            if quoted {
                return Err(cur.err("a value without its closing quote"));
            }
            return Ok(v);
        };
        match c {
            b'\n' if quoted => return Err(cur.err("a value without its closing quote")),
            b'\n' => return Ok(v),
            c if !quoted && blank(c) => {
                // Leading blanks go; so do blanks while nothing is kept.
                if !v.is_empty() {
                    pending.push(c);
                }
            }
            b'#' | b';' if !quoted => {
                cur.skip_line();
                return Ok(v);
            }
            c => {
                v.append(&mut pending);
                match c {
                    b'\\' => match cur.bump() {
                        Some(b'\n') => {}
                        Some(b'n') => v.push(b'\n'),
                        Some(b't') => v.push(b'\t'),
                        Some(b'b') => v.push(8),
                        Some(b'\\') => v.push(b'\\'),
                        Some(b'"') => v.push(b'"'),
                        Some(other) => {
                            return Err(cur.err(&format!(
                                "an escape git does not know (\\{})",
                                other as char
                            )));
                        }
                        None => return Err(cur.err("a backslash at the end of the file")),
                    },
                    b'"' => quoted = !quoted,
                    // A CR inside quotes is data to git; no tool writes one.
                    b'\r' => return Err(cur.err("a carriage return inside quotes")),
                    c => v.push(c),
                }
            }
        }
    }
}

/// A config file's bytes; None when there is none. Err when it cannot
/// be read or is larger than [`MAX_BYTES`].
pub(crate) fn read(path: &std::path::Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(20) => return Ok(None), // ENOTDIR
        Err(e) => return Err(format!("{} cannot be read ({e})", path.display())),
    };
    let mut bytes = Vec::with_capacity(1024);
    f.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "{} is larger than {} bytes, more than tern reads",
            path.display(),
            MAX_BYTES
        ));
    }
    Ok(Some(bytes))
}
