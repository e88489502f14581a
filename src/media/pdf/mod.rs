//! Enough of PDF to decide whether a file may go to the model as a
//! document: that it is one (the `%PDF-` header), that it is whole (the
//! `%%EOF` trailer), that it is not encrypted, and how many pages it has.
//!
//! The page count is the largest `/Count` of a `/Type /Pages` dictionary:
//! the root of the page tree counts every page below it. Dictionaries are
//! found by a small lexer over the file (strings, comments and stream
//! bodies skipped), and again inside compressed object streams (PDF 1.5
//! and later keep most dictionaries there), which are inflated with a
//! size limit. The lexer keeps a stack, never recursion: the file is
//! untrusted.

mod cut;
mod objects;

pub(crate) use cut::{CutError, cut};

/// Inflated object streams, all together, stop here (a zip bomb in a
/// PDF must not take the memory of a small board).
const MAX_INFLATED: usize = 64 << 20;
/// Nesting deeper than this is not a real document.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub pages: usize,
    /// The version in the header, such as "1.7".
    pub version: String,
}

pub fn looks_like_pdf(bytes: &[u8]) -> bool {
    header_at(bytes).is_some()
}

fn header_at(bytes: &[u8]) -> Option<usize> {
    memchr::memmem::find(&bytes[..bytes.len().min(1024)], b"%PDF-")
}

pub fn check(bytes: &[u8]) -> Result<Facts, String> {
    let at = header_at(bytes).ok_or("it is not a PDF (there is no %PDF- header)")?;
    let version: String = bytes[at + 5..]
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .take(8)
        .map(|&b| char::from(b))
        .collect();
    let tail = &bytes[bytes.len().saturating_sub(2048)..];
    if memchr::memmem::rfind(tail, b"%%EOF").is_none() {
        return Err("it is truncated (a PDF ends with %%EOF, and this one does not)".into());
    }
    let mut scan = Scan::default();
    scan.run(bytes, true);
    if scan.encrypted {
        return Err(
            "it is encrypted (password-protected); decrypt a copy first, e.g. \
             `qpdf --decrypt in.pdf out.pdf`, and read that"
                .into(),
        );
    }
    match scan.pages {
        Some(pages) if pages > 0 => Ok(Facts { pages, version }),
        Some(_) => Err("it has no pages".into()),
        None if scan.unread_objstm && !objstm::AVAILABLE => Err(
            "its page tree is in a compressed object stream, which this tern (built without \
             the `pdf` feature) does not open; extract its text with Bash, e.g. \
             `pdftotext file.pdf -`"
                .into(),
        ),
        None => Err("it is damaged: its page tree cannot be found".into()),
    }
}

/// What the lexer found.
#[derive(Default)]
struct Scan {
    pages: Option<usize>,
    encrypted: bool,
    inflated: usize,
    /// An object stream was seen and not opened.
    unread_objstm: bool,
}

/// A dictionary being read: the key waiting for its value, and the facts
/// that matter about it.
#[derive(Default)]
struct Dict {
    key: Option<Vec<u8>>,
    type_pages: bool,
    type_objstm: bool,
    count: Option<usize>,
    length: Option<usize>,
    flate: bool,
    /// A filter other than Flate alone (the stream cannot be inflated).
    other_filter: bool,
    encrypt: bool,
}

enum Frame {
    Dict(Dict),
    /// An array, and whether it is the value of a /Filter key.
    Array(bool),
}

enum Token<'a> {
    Name(&'a [u8]),
    Int(usize),
    Word(&'a [u8]),
    Other,
    DictOpen,
    DictClose,
    ArrayOpen,
    ArrayClose,
}

fn is_space(b: u8) -> bool {
    matches!(b, 0 | b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

fn is_delim(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

impl Scan {
    /// Lexes `bytes`; `top` is the file itself (streams follow their
    /// dictionaries there; object streams hold none).
    fn run(&mut self, bytes: &[u8], top: bool) {
        let mut stack: Vec<Frame> = Vec::new();
        // The dictionary that closed last, for a `stream` keyword after it.
        let mut closed: Option<Dict> = None;
        let mut at = 0;
        while let Some((token, next)) = lex(bytes, at) {
            at = next;
            match token {
                Token::DictOpen => {
                    value_taken(&mut stack);
                    if stack.len() < MAX_DEPTH {
                        stack.push(Frame::Dict(Dict::default()));
                    }
                    closed = None;
                    continue;
                }
                Token::DictClose => {
                    if let Some(Frame::Dict(d)) = stack.pop() {
                        self.note(&d);
                        closed = Some(d);
                    }
                    continue;
                }
                Token::ArrayOpen => {
                    let filter = matches!(stack.last(), Some(Frame::Dict(d)) if d.key.as_deref() == Some(b"Filter"));
                    value_taken(&mut stack);
                    if stack.len() < MAX_DEPTH {
                        stack.push(Frame::Array(filter));
                    }
                }
                Token::ArrayClose => {
                    if let Some(Frame::Array(_)) = stack.last() {
                        stack.pop();
                    }
                }
                Token::Word(b"stream") if top && stack.is_empty() => {
                    let dict = closed.take().unwrap_or_default();
                    at = self.stream(bytes, at, &dict);
                    continue;
                }
                Token::Name(name) => match stack.last_mut() {
                    Some(Frame::Dict(d)) => match d.key.take() {
                        None => {
                            if name == b"Encrypt" {
                                d.encrypt = true;
                            }
                            d.key = Some(name.to_vec());
                        }
                        Some(key) => match (key.as_slice(), name) {
                            (b"Type", b"Pages") => d.type_pages = true,
                            (b"Type", b"ObjStm") => d.type_objstm = true,
                            (b"Filter", b"FlateDecode" | b"Fl") => d.flate = true,
                            (b"Filter", _) => d.other_filter = true,
                            _ => {}
                        },
                    },
                    Some(Frame::Array(true)) => {
                        // A filter chain: only Flate alone can be undone here.
                        let n = stack.len();
                        if let Some(Frame::Dict(d)) =
                            n.checked_sub(2).and_then(|i| stack.get_mut(i))
                        {
                            if matches!(name, b"FlateDecode" | b"Fl") && !d.flate {
                                d.flate = true;
                            } else {
                                d.other_filter = true;
                            }
                        }
                    }
                    _ => {}
                },
                Token::Int(n) => {
                    if let Some(Frame::Dict(d)) = stack.last_mut()
                        && let Some(key) = d.key.take()
                    {
                        match key.as_slice() {
                            b"Count" => d.count = Some(n),
                            b"Length" => d.length = Some(n),
                            _ => {}
                        }
                    }
                }
                Token::Word(_) | Token::Other => value_taken(&mut stack),
            }
            closed = None;
        }
    }

    fn note(&mut self, d: &Dict) {
        if d.encrypt {
            self.encrypted = true;
        }
        if d.type_pages
            && let Some(c) = d.count
        {
            self.pages = Some(self.pages.map_or(c, |p| p.max(c)));
        }
    }

    /// Skips a stream body that starts after the keyword at `at`, looking
    /// into it when it is a compressed object stream. Returns where the
    /// lexer goes on.
    fn stream(&mut self, bytes: &[u8], mut at: usize, dict: &Dict) -> usize {
        if bytes.get(at) == Some(&b'\r') {
            at += 1;
        }
        if bytes.get(at) == Some(&b'\n') {
            at += 1;
        }
        let by_length = dict.length.and_then(|n| {
            let end = at.checked_add(n)?;
            let rest = bytes.get(end..)?;
            let skip = rest.iter().take_while(|b| is_space(**b)).count();
            rest[skip..].starts_with(b"endstream").then_some(end)
        });
        let end = by_length.unwrap_or_else(|| {
            memchr::memmem::find(&bytes[at..], b"endstream").map_or(bytes.len(), |i| at + i)
        });
        if dict.type_objstm && dict.flate && !dict.other_filter {
            let room = MAX_INFLATED.saturating_sub(self.inflated);
            match objstm::inflate(&bytes[at..end], room) {
                Some(plain) => {
                    self.inflated += plain.len();
                    self.run(&plain, false);
                }
                None => self.unread_objstm = true,
            }
        }
        end
    }
}

/// Inflating object streams: with the `pdf` feature (default), on
/// `miniz_oxide`; the core build leaves them closed and says so when the
/// page tree is inside one.
#[cfg(feature = "pdf")]
mod objstm {
    pub(super) const AVAILABLE: bool = true;

    pub(super) fn inflate(data: &[u8], room: usize) -> Option<Vec<u8>> {
        miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(data, room).ok()
    }
}

#[cfg(not(feature = "pdf"))]
mod objstm {
    pub(super) const AVAILABLE: bool = false;

    pub(super) fn inflate(_: &[u8], _: usize) -> Option<Vec<u8>> {
        None
    }
}

/// A value in the innermost dictionary was read: its key is done.
fn value_taken(stack: &mut [Frame]) {
    if let Some(Frame::Dict(d)) = stack.last_mut() {
        d.key = None;
    }
}

/// Where the next token starts at or after `at`: past white space and
/// comments.
fn skip_space(b: &[u8], mut at: usize) -> usize {
    loop {
        while at < b.len() && is_space(b[at]) {
            at += 1;
        }
        if b.get(at) == Some(&b'%') {
            while at < b.len() && b[at] != b'\n' && b[at] != b'\r' {
                at += 1;
            }
            continue;
        }
        return at;
    }
}

/// The next token at or after `at`, and where the one after starts.
fn lex(b: &[u8], at: usize) -> Option<(Token<'_>, usize)> {
    let at = skip_space(b, at);
    let c = *b.get(at)?;
    match c {
        b'<' if b.get(at + 1) == Some(&b'<') => Some((Token::DictOpen, at + 2)),
        b'>' if b.get(at + 1) == Some(&b'>') => Some((Token::DictClose, at + 2)),
        b'<' => {
            let end = memchr::memchr(b'>', &b[at..]).map_or(b.len(), |i| at + i + 1);
            Some((Token::Other, end))
        }
        b'(' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'\\' => i += 1,
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            Some((Token::Other, (i + 1).min(b.len())))
        }
        b'[' => Some((Token::ArrayOpen, at + 1)),
        b']' => Some((Token::ArrayClose, at + 1)),
        b'/' => {
            let start = at + 1;
            let mut i = start;
            while i < b.len() && !is_space(b[i]) && !is_delim(b[i]) {
                i += 1;
            }
            Some((Token::Name(&b[start..i]), i))
        }
        _ if is_delim(c) => Some((Token::Other, at + 1)),
        _ => {
            let mut i = at;
            while i < b.len() && !is_space(b[i]) && !is_delim(b[i]) {
                i += 1;
            }
            let word = &b[at..i];
            let token = if word.iter().all(u8::is_ascii_digit) {
                std::str::from_utf8(word)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .map_or(Token::Other, Token::Int)
            } else {
                Token::Word(word)
            };
            Some((token, i))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::samples;

    #[test]
    fn pages_are_counted_in_plain_and_packed_files() {
        for pages in [1, 3, 12] {
            let plain = check(&samples::pdf(pages, false)).unwrap();
            assert_eq!(plain.pages, pages);
            assert_eq!(plain.version, "1.7");
            let packed = check(&samples::pdf(pages, true));
            if cfg!(feature = "pdf") {
                assert_eq!(packed.unwrap().pages, pages);
            } else {
                assert!(packed.unwrap_err().contains("`pdf` feature"));
            }
        }
    }

    #[test]
    fn not_a_pdf_truncated_and_encrypted_are_refused() {
        assert!(check(b"just text").unwrap_err().contains("not a PDF"));
        let whole = samples::pdf(2, false);
        let cut = &whole[..whole.len() / 2];
        assert!(check(cut).unwrap_err().contains("truncated"));
        // A page tree hidden where it cannot be read.
        let mut hidden = samples::pdf(2, true);
        let at = memchr::memmem::find(&hidden, b"/FlateDecode").unwrap();
        hidden[at + 1..at + 12].copy_from_slice(b"LZWDecode  ");
        assert!(check(&hidden).unwrap_err().contains("page tree"));
        let text = String::from_utf8_lossy(&whole).replace(
            "/Root 1 0 R >>",
            "/Root 1 0 R /Encrypt << /Filter /Standard /V 2 >> >>",
        );
        let err = check(text.as_bytes()).unwrap_err();
        assert!(err.contains("encrypted"), "{err}");
    }

    #[test]
    fn strings_and_comments_do_not_fake_a_page_tree() {
        let doc = b"%PDF-1.4\n1 0 obj (<< /Type /Pages /Count 999 >>) endobj\n\
            % << /Type /Pages /Count 500 >>\n\
            2 0 obj << /Type /Pages /Kids [] /Count 2 >> endobj\n%%EOF\n";
        assert_eq!(check(doc).unwrap().pages, 2);
    }

    #[test]
    fn a_zip_bomb_in_an_object_stream_stops_at_the_limit() {
        // 100 MB of zeros packed into about 100 KB.
        let zeros = vec![0u8; 100 << 20];
        let packed = miniz_oxide::deflate::compress_to_vec_zlib(&zeros, 9);
        let mut doc = format!(
            "%PDF-1.5\n1 0 obj << /Type /ObjStm /Filter /FlateDecode /Length {} >>\nstream\n",
            packed.len()
        )
        .into_bytes();
        doc.extend_from_slice(&packed);
        doc.extend_from_slice(
            b"\nendstream\nendobj\n2 0 obj << /Type /Pages /Count 1 >> endobj\n%%EOF\n",
        );
        assert_eq!(check(&doc).unwrap().pages, 1);
    }
}
