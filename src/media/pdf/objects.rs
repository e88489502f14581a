//! The objects of a PDF, for copying some of them into a new file.
//!
//! Objects are found by scanning the file for `N G obj`, as a reader does
//! when it rebuilds a broken cross-reference table, and never through the
//! table itself: one path for classic tables, xref streams and damaged
//! files alike. Where a number is defined twice (incremental updates) the
//! later definition wins, as the appended table would say. Objects inside
//! compressed object streams are indexed when their stream is met.
//!
//! Values borrow the file (or an inflated object stream); every parse has
//! a depth and a size limit, so a hostile file costs bounded memory.

use std::cell::Cell;
use std::collections::HashMap;

use super::{MAX_DEPTH, MAX_INFLATED, Token, is_space, lex, objstm, skip_space};

/// Values one object may hold at most (a million refs in a /Kids array is
/// already far past any real document).
const MAX_VALUES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value<'a> {
    Null,
    /// A number or boolean, kept as written ("12", "-0.5", "true").
    Word(&'a [u8]),
    /// A string with its delimiters, `(…)` or `<…>`, kept as written.
    Str(&'a [u8]),
    /// A name without its slash, kept as written (`#` escapes and all).
    Name(&'a [u8]),
    Array(Vec<Value<'a>>),
    Dict(Dict<'a>),
    /// An indirect reference, by object number (generations are not kept:
    /// the new file numbers its objects afresh).
    Ref(u32),
}

pub(super) type Dict<'a> = Vec<(&'a [u8], Value<'a>)>;

pub(super) fn get<'v, 'a>(dict: &'v Dict<'a>, key: &[u8]) -> Option<&'v Value<'a>> {
    dict.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

impl Value<'_> {
    /// A non-negative integer written directly.
    pub(super) fn int(&self) -> Option<usize> {
        match self {
            Value::Word(w) if w.iter().all(u8::is_ascii_digit) => {
                std::str::from_utf8(w).ok()?.parse().ok()
            }
            _ => None,
        }
    }
}

/// Why an object could not be read.
pub(super) type Bad = &'static str;

/// Reads one value at a time from `b`.
pub(super) struct Parser<'a> {
    b: &'a [u8],
    pub at: usize,
    budget: usize,
}

const KEYWORDS: &[&[u8]] = &[
    b"obj",
    b"endobj",
    b"stream",
    b"endstream",
    b"R",
    b"xref",
    b"trailer",
    b"startxref",
];

impl<'a> Parser<'a> {
    pub(super) fn new(b: &'a [u8], at: usize) -> Self {
        Parser {
            b,
            at,
            budget: MAX_VALUES,
        }
    }

    pub(super) fn value(&mut self) -> Result<Value<'a>, Bad> {
        self.parse(0)
    }

    fn parse(&mut self, depth: usize) -> Result<Value<'a>, Bad> {
        if depth > MAX_DEPTH {
            return Err("it nests arrays and dictionaries too deep");
        }
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or("an object holds too many values")?;
        let start = skip_space(self.b, self.at);
        let (token, end) = lex(self.b, start).ok_or("it ends inside an object")?;
        self.at = end;
        Ok(match token {
            Token::Int(n) => {
                // `N G R` is a reference; anything else leaves `N` alone.
                if let Some((Token::Int(_), g_end)) = lex(self.b, end)
                    && let Some((Token::Word(b"R"), r_end)) = lex(self.b, g_end)
                {
                    self.at = r_end;
                    Value::Ref(u32::try_from(n).map_err(|_| "an object number is too large")?)
                } else {
                    Value::Word(&self.b[start..end])
                }
            }
            Token::Word(b"null") => Value::Null,
            Token::Word(w) if KEYWORDS.contains(&w) => return Err("a value is missing"),
            Token::Word(w) => Value::Word(w),
            Token::Name(n) => Value::Name(n),
            Token::Other => match self.b[start] {
                b'(' | b'<' => Value::Str(&self.b[start..end]),
                // Digits too many for a usize: a number all the same.
                b'0'..=b'9' => Value::Word(&self.b[start..end]),
                _ => return Err("it has a stray delimiter"),
            },
            Token::ArrayOpen => {
                let mut items = Vec::new();
                loop {
                    let at = skip_space(self.b, self.at);
                    if self.b.get(at) == Some(&b']') {
                        self.at = at + 1;
                        break Value::Array(items);
                    }
                    items.push(self.parse(depth + 1)?);
                }
            }
            Token::DictOpen => {
                let mut entries = Vec::new();
                loop {
                    let at = skip_space(self.b, self.at);
                    if self.b.get(at..at + 2) == Some(b">>") {
                        self.at = at + 2;
                        break Value::Dict(entries);
                    }
                    let Some((Token::Name(key), next)) = lex(self.b, at) else {
                        return Err("a dictionary key is not a name");
                    };
                    self.at = next;
                    entries.push((key, self.parse(depth + 1)?));
                }
            }
            Token::DictClose | Token::ArrayClose => return Err("it closes what was not open"),
        })
    }
}

/// Where an object is defined.
#[derive(Debug, Clone, Copy)]
enum Loc {
    /// In the file: where its value starts (after `N G obj`).
    Top(usize),
    /// In the object stream `packed[.0]`, at this offset.
    Packed(usize, usize),
}

/// A stream's data, as offsets into the file.
pub(super) struct Stream {
    pub start: usize,
    pub end: usize,
}

pub(super) struct Doc<'a> {
    bytes: &'a [u8],
    packed: Vec<Vec<u8>>,
    index: HashMap<u32, Loc>,
    /// The catalog, from the last trailer or xref stream naming one.
    pub root: Option<u32>,
    /// The last top-level object of /Type /Catalog, for a file whose
    /// trailer is lost.
    pub catalog: Option<u32>,
    /// An object stream was met and could not be opened.
    pub unread_objstm: bool,
    inflated: usize,
    /// No `endstream` follows this offset: a file of many streams without
    /// one must not be searched to its end for each.
    no_end_after: Cell<usize>,
}

impl<'a> Doc<'a> {
    pub(super) fn scan(bytes: &'a [u8]) -> Doc<'a> {
        let mut doc = Doc {
            bytes,
            packed: Vec::new(),
            index: HashMap::new(),
            root: None,
            catalog: None,
            unread_objstm: false,
            inflated: 0,
            no_end_after: Cell::new(usize::MAX),
        };
        // The two integers before the current token, for `N G obj`.
        let mut ints: [Option<usize>; 2] = [None, None];
        let mut at = 0;
        while let Some((token, end)) = lex(bytes, at) {
            at = end;
            match token {
                Token::Int(n) => {
                    ints = [ints[1], Some(n)];
                    continue;
                }
                Token::Word(b"obj") => {
                    if let [Some(num), Some(_)] = ints
                        && let Ok(num) = u32::try_from(num)
                    {
                        at = doc.top_object(num, end);
                    }
                }
                Token::Word(b"trailer") => {
                    let mut p = Parser::new(bytes, end);
                    if let Ok(Value::Dict(d)) = p.value() {
                        if let Some(Value::Ref(r)) = get(&d, b"Root") {
                            doc.root = Some(*r);
                        }
                        at = p.at;
                    }
                }
                _ => {}
            }
            ints = [None, None];
        }
        doc
    }

    /// Indexes the object whose value starts at `at`; returns where the
    /// scan goes on (past its stream, if it has one).
    fn top_object(&mut self, num: u32, at: usize) -> usize {
        let mut p = Parser::new(self.bytes, at);
        // A damaged object is indexed all the same, so that a page needing
        // it is refused for the damage rather than for a missing object.
        self.index.insert(num, Loc::Top(at));
        let Ok(value) = p.value() else {
            return at;
        };
        let Value::Dict(dict) = value else {
            return p.at;
        };
        if get(&dict, b"Type") == Some(&Value::Name(b"Catalog")) {
            self.catalog = Some(num);
        }
        let Some(stream) =
            stream_after(self.bytes, p.at, get(&dict, b"Length"), &self.no_end_after)
        else {
            return p.at;
        };
        match get(&dict, b"Type") {
            Some(Value::Name(b"XRef")) => {
                if let Some(Value::Ref(r)) = get(&dict, b"Root") {
                    self.root = Some(*r);
                }
            }
            Some(Value::Name(b"ObjStm")) => self.object_stream(&dict, &stream),
            _ => {}
        }
        stream.resume
    }

    fn object_stream(&mut self, dict: &Dict<'_>, stream: &StreamAt) {
        let flate = match get(dict, b"Filter") {
            Some(Value::Name(b"FlateDecode" | b"Fl")) => true,
            Some(Value::Array(a)) => matches!(a.as_slice(), [Value::Name(b"FlateDecode" | b"Fl")]),
            _ => false,
        };
        // A predictor on an object stream is allowed and never seen.
        if !flate || get(dict, b"DecodeParms").is_some() {
            self.unread_objstm = true;
            return;
        }
        let room = MAX_INFLATED.saturating_sub(self.inflated);
        let Some(plain) = objstm::inflate(&self.bytes[stream.start..stream.end], room) else {
            self.unread_objstm = true;
            return;
        };
        self.inflated += plain.len();
        let (Some(n), Some(first)) = (
            get(dict, b"N").and_then(Value::int),
            get(dict, b"First").and_then(Value::int),
        ) else {
            return;
        };
        let which = self.packed.len();
        let header = &plain[..first.min(plain.len())];
        let mut at = 0;
        for _ in 0..n {
            let Some((Token::Int(num), next)) = lex(header, at) else {
                break;
            };
            let Some((Token::Int(off), next)) = lex(header, next) else {
                break;
            };
            at = next;
            if let (Ok(num), Some(pos)) = (u32::try_from(num), first.checked_add(off))
                && pos < plain.len()
            {
                self.index.insert(num, Loc::Packed(which, pos));
            }
        }
        self.packed.push(plain);
    }

    /// Whether object `num` is defined anywhere.
    pub(super) fn has(&self, num: u32) -> bool {
        self.index.contains_key(&num)
    }

    /// Object `num`'s value and, when it is a stream, its data.
    pub(super) fn object(&self, num: u32) -> Result<(Value<'_>, Option<Stream>), String> {
        let missing = || {
            if self.unread_objstm && !objstm::AVAILABLE {
                format!(
                    "object {num} is not in the file, or is in a compressed object stream, \
                     which this tern (built without the `pdf` feature) does not open"
                )
            } else {
                format!("object {num} is not in the file")
            }
        };
        match *self.index.get(&num).ok_or_else(missing)? {
            Loc::Packed(which, at) => {
                let data = self.packed.get(which).ok_or_else(missing)?;
                let value = Parser::new(data, at)
                    .value()
                    .map_err(|why| format!("object {num} is damaged: {why}"))?;
                Ok((value, None))
            }
            Loc::Top(at) => {
                let mut p = Parser::new(self.bytes, at);
                let value = p
                    .value()
                    .map_err(|why| format!("object {num} is damaged: {why}"))?;
                let stream = match &value {
                    Value::Dict(d) => {
                        // An indirect length is looked up now; the scan
                        // could not, and searched for `endstream`.
                        let length = match get(d, b"Length") {
                            Some(Value::Ref(r)) => self.plain_value(*r),
                            other => other.cloned(),
                        };
                        stream_after(self.bytes, p.at, length.as_ref(), &self.no_end_after).map(
                            |s| Stream {
                                start: s.start,
                                end: s.end,
                            },
                        )
                    }
                    _ => None,
                };
                Ok((value, stream))
            }
        }
    }

    /// Object `num`'s value alone, never its stream (so a /Length that
    /// names its own stream cannot loop).
    fn plain_value(&self, num: u32) -> Option<Value<'_>> {
        let (data, at) = match *self.index.get(&num)? {
            Loc::Top(at) => (self.bytes, at),
            Loc::Packed(which, at) => (self.packed.get(which)?.as_slice(), at),
        };
        Parser::new(data, at).value().ok()
    }

    pub(super) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

struct StreamAt {
    start: usize,
    end: usize,
    /// Past `endstream`.
    resume: usize,
}

/// The data of a stream whose dictionary ends at `at`, if the `stream`
/// keyword follows: by its /Length when `endstream` is where that says,
/// else up to the next `endstream` (less the end of line before it).
/// `no_end` is where a search found none, for the searches after it.
fn stream_after(
    b: &[u8],
    at: usize,
    length: Option<&Value<'_>>,
    no_end: &Cell<usize>,
) -> Option<StreamAt> {
    let at = skip_space(b, at);
    if !b.get(at..)?.starts_with(b"stream") {
        return None;
    }
    let mut start = at + b"stream".len();
    if b.get(start) == Some(&b'\r') {
        start += 1;
    }
    if b.get(start) == Some(&b'\n') {
        start += 1;
    }
    let by_length = length.and_then(Value::int).and_then(|n| {
        let end = start.checked_add(n)?;
        let rest = b.get(end..)?;
        let skip = rest.iter().take_while(|c| is_space(**c)).count();
        rest[skip..]
            .starts_with(b"endstream")
            .then_some((end, end + skip))
    });
    let (end, kw) = match by_length {
        Some(found) => found,
        None => {
            if start >= no_end.get() {
                return None;
            }
            let Some(found) = memchr::memmem::find(b.get(start..)?, b"endstream") else {
                no_end.set(start);
                return None;
            };
            let kw = start + found;
            let mut end = kw;
            if end > start && b[end - 1] == b'\n' {
                end -= 1;
            }
            if end > start && b[end - 1] == b'\r' {
                end -= 1;
            }
            (end, kw)
        }
    };
    Some(StreamAt {
        start,
        end,
        resume: kw + b"endstream".len(),
    })
}
