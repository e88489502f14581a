//! The hot path of a streamed answer: `content_block_delta` events read
//! straight off their bytes.
//!
//! Almost every event of a long answer is a delta of a few dozen bytes
//! (`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta",
//! "text":"…"}}`). Building a JSON tree for each one costs a handful of
//! allocations; this scanner instead finds the block index, the delta's
//! type and the raw span of its one string, which the assembler unescapes
//! straight into the block's buffer. Key order does not matter. Anything it
//! does not recognise — another shape, an unknown field holding something
//! odd, malformed input — returns `None`, and the caller parses the event
//! with the general parser, which also gives the precise error.

/// What a delta adds to its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeltaKind {
    Text,
    InputJson,
    Thinking,
    Signature,
}

/// A recognised delta: the block it belongs to and its string, still
/// escaped (`raw` is what stood between the quotes; it holds no raw quote
/// or control character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delta<'a> {
    pub index: usize,
    pub kind: DeltaKind,
    pub raw: &'a str,
}

/// Reads a `content_block_delta` event of one of the four string kinds.
pub(crate) fn scan(data: &str) -> Option<Delta<'_>> {
    exact(data).or_else(|| any_order(data))
}

/// The byte layout the Messages API sends, checked piece by piece.
fn exact(data: &str) -> Option<Delta<'_>> {
    const HEAD: &str = r#"{"type":"content_block_delta","index":"#;
    const KINDS: [(&str, DeltaKind); 4] = [
        (r#","delta":{"type":"text_delta","text":""#, DeltaKind::Text),
        (
            r#","delta":{"type":"input_json_delta","partial_json":""#,
            DeltaKind::InputJson,
        ),
        (
            r#","delta":{"type":"thinking_delta","thinking":""#,
            DeltaKind::Thinking,
        ),
        (
            r#","delta":{"type":"signature_delta","signature":""#,
            DeltaKind::Signature,
        ),
    ];
    let rest = data.strip_prefix(HEAD)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 || (digits > 1 && rest.starts_with('0')) {
        return None;
    }
    let index = rest.as_bytes()[..digits]
        .iter()
        .fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
    let rest = &rest[digits..];
    let (kind, rest) = KINDS
        .iter()
        .find_map(|(head, kind)| rest.strip_prefix(head).map(|r| (*kind, r)))?;
    let end = string_end(rest.as_bytes())?;
    (&rest[end..] == "\"}}").then_some(Delta {
        index,
        kind,
        raw: &rest[..end],
    })
}

/// Bytes that end the plain run of a JSON string: the quote, the escape
/// and the control characters (which are an error).
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Where the string whose text starts at `b` (just past its opening
/// quote) closes; `None` if it does not, or holds a control character.
fn string_end(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        i += plain_run(&b[i..]);
        match b.get(i)? {
            b'"' => return Some(i),
            // The unescaper checks what the escape means.
            b'\\' if i + 1 < b.len() => i += 2,
            _ => return None,
        }
    }
}

/// The length of the leading run of bytes that are not special: eight
/// bytes at a time (a word has a special byte when one of its bytes is a
/// quote, a backslash or below 0x20), then byte by byte.
fn plain_run(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero, or (with `below`) under n: the classic tests.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let x = u64::from_le_bytes(w);
        let special = zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if special != 0 {
            break;
        }
        i += 8;
    }
    while i < b.len() && !SPECIAL[b[i] as usize] {
        i += 1;
    }
    i
}

/// The same event with its keys in any order and unrelated flat fields.
fn any_order(data: &str) -> Option<Delta<'_>> {
    let mut c = Cursor::new(data);
    let mut is_delta = false;
    let mut index = None;
    let mut delta = None;
    c.object(|c, key| {
        match key {
            "type" => is_delta = c.string()? == "content_block_delta",
            "index" => index = Some(c.index()?),
            "delta" => delta = Some(inner(c)?),
            _ => c.skip_value()?,
        }
        Some(())
    })?;
    if !c.at_end() || !is_delta {
        return None;
    }
    let (kind, raw) = delta?;
    Some(Delta {
        index: index?,
        kind,
        raw,
    })
}

/// The `delta` object: its type and the string field that type carries.
fn inner<'a>(c: &mut Cursor<'a>) -> Option<(DeltaKind, &'a str)> {
    let mut kind = None;
    let mut fields: [Option<&'a str>; 4] = [None; 4];
    c.object(|c, key| {
        let slot = match key {
            "type" => {
                kind = Some(match c.string()? {
                    "text_delta" => DeltaKind::Text,
                    "input_json_delta" => DeltaKind::InputJson,
                    "thinking_delta" => DeltaKind::Thinking,
                    "signature_delta" => DeltaKind::Signature,
                    _ => return None,
                });
                return Some(());
            }
            "text" => 0,
            "partial_json" => 1,
            "thinking" => 2,
            "signature" => 3,
            _ => return c.skip_value(),
        };
        fields[slot] = Some(c.string()?);
        Some(())
    })?;
    let kind = kind?;
    let slot = match kind {
        DeltaKind::Text => 0,
        DeltaKind::InputJson => 1,
        DeltaKind::Thinking => 2,
        DeltaKind::Signature => 3,
    };
    Some((kind, fields[slot]?))
}

/// A reader of the JSON shapes the fast paths take (here and in the chat
/// completions chunk reader): every method says `None` for anything it
/// does not take, and the caller falls back to the general parser.
pub(super) struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Cursor {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    /// Only white space is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    pub(super) fn eat(&mut self, byte: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&byte)).then(|| self.i += 1)
    }

    /// `{ "key": value, … }`, calling `field` with the cursor on each value.
    /// A key written with an escape is not compared (`"te\u0078t"` is
    /// `text` to the general parser): such an object is not taken.
    pub(super) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.string().filter(|k| !k.contains('\\'))?;
            self.eat(b':')?;
            self.ws();
            field(self, key)?;
            self.ws();
            match self.b.get(self.i)? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string's raw text, or `None` inside for `null`.
    pub(super) fn string_or_null(&mut self) -> Option<Option<&'a str>> {
        self.ws();
        match self.b.get(self.i)? {
            b'n' => self.word(b"null").map(|()| None),
            _ => self.string().map(Some),
        }
    }

    /// `null`, and nothing else.
    pub(super) fn null(&mut self) -> Option<()> {
        self.ws();
        self.word(b"null")
    }

    /// The raw text between a string's quotes (escapes left in place).
    fn string(&mut self) -> Option<&'a str> {
        self.ws();
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let end = start + string_end(&self.b[start..])?;
        self.i = end + 1;
        // Both ends are ASCII quotes, so the slice is on char boundaries.
        self.s.get(start..end)
    }

    /// A block index: a plain non-negative integer.
    fn index(&mut self) -> Option<usize> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        let digits = self.s.get(start..self.i)?;
        if digits.len() > 1 && digits.starts_with('0') {
            return None;
        }
        digits.parse().ok()
    }

    /// Steps over one value of a field the fast path does not use. Only
    /// flat values: anything nested goes to the general parser.
    pub(super) fn skip_value(&mut self) -> Option<()> {
        match self.b.get(self.i)? {
            // Its escapes are checked as the parser checks them (a used
            // string's are checked when it is decoded).
            b'"' => {
                let raw = self.string()?;
                let escaped = memchr::memchr(b'\\', raw.as_bytes()).is_some();
                (!escaped || crate::json::unescape_into(raw, &mut String::new()).is_ok())
                    .then_some(())
            }
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A number as RFC 8259 writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)?
    /// ([eE] [+-]? [0-9]+)?`. What follows is the caller's to judge (`01`
    /// stops after the `0`, and no object takes the `1`).
    fn number(&mut self) -> Option<()> {
        let digits = |c: &mut Self| {
            let from = c.i;
            while let Some(b'0'..=b'9') = c.b.get(c.i) {
                c.i += 1;
            }
            c.i - from
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            (digits(self) > 0).then_some(())?;
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            (digits(self) > 0).then_some(())?;
        }
        Some(())
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(w).then(|| self.i += w.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_kinds_in_any_key_order() {
        let d = scan(r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"a\"b"}}"#).unwrap();
        assert_eq!((d.index, d.kind, d.raw), (3, DeltaKind::Text, r#"a\"b"#));
        let d = scan(r#"{ "delta" : { "partial_json" : "{\"x\"" , "type" : "input_json_delta" } , "index" : 0 , "type" : "content_block_delta" }"#).unwrap();
        assert_eq!((d.index, d.kind), (0, DeltaKind::InputJson));
        assert_eq!(d.raw, r#"{\"x\""#);
        let d = scan(r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"},"extra":null}"#).unwrap();
        assert_eq!(d.kind, DeltaKind::Thinking);
        let d = scan(r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"c2ln"}}"#).unwrap();
        assert_eq!(d.kind, DeltaKind::Signature);
    }

    #[test]
    fn numbers_in_other_fields_are_held_to_the_general_parsers_grammar() {
        use crate::json::tests::{BAD_NUMBERS, GOOD_NUMBERS};
        for n in GOOD_NUMBERS.iter().chain(BAD_NUMBERS) {
            let event = format!(
                r#"{{"n":{n},"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"a"}}}}"#
            );
            assert_eq!(
                scan(&event).is_some(),
                crate::json::parse(&event).is_ok(),
                "{n}"
            );
        }
    }

    /// Every one-byte change to a delta (a byte removed, or replaced by
    /// one that matters to JSON) is either left to the parser or read as
    /// the parser reads it.
    #[test]
    fn mutated_deltas_are_taken_only_as_the_parser_reads_them() {
        let samples = [
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a \"b\" \u00e9"}}"#,
            r#"{"index":12,"x":-0.5e1,"type":"content_block_delta","y":"\n","delta":{"thinking":"hm","type":"thinking_delta"}}"#,
        ];
        let mut taken = 0;
        for sample in samples {
            for at in 0..sample.len() {
                for with in [
                    None,
                    Some(b'"'),
                    Some(b'\\'),
                    Some(b'}'),
                    Some(b','),
                    Some(b'0'),
                    Some(b' '),
                ] {
                    let mut bytes = sample.as_bytes().to_vec();
                    match with {
                        None => {
                            bytes.remove(at);
                        }
                        Some(b) => bytes[at] = b,
                    }
                    let Ok(event) = String::from_utf8(bytes) else {
                        continue;
                    };
                    let Some(d) = scan(&event) else { continue };
                    taken += 1;
                    // A bad escape in the delta's own string is the
                    // assembler's error when it decodes it: both fail.
                    let mut text = String::new();
                    let decoded = crate::json::unescape_into(d.raw, &mut text);
                    let v = match crate::json::parse(&event) {
                        Ok(v) => v,
                        Err(e) => {
                            assert!(decoded.is_err(), "taken, but the parser says {e}: {event}");
                            continue;
                        }
                    };
                    assert!(decoded.is_ok(), "{event}");
                    assert_eq!(
                        v.get("index").and_then(|i| i.as_i64()),
                        Some(d.index as i64)
                    );
                    let delta = v.get("delta").unwrap();
                    let field = match d.kind {
                        DeltaKind::Text => "text",
                        DeltaKind::InputJson => "partial_json",
                        DeltaKind::Thinking => "thinking",
                        DeltaKind::Signature => "signature",
                    };
                    assert_eq!(delta.str_field(field), Some(text.as_str()), "{event}");
                }
            }
        }
        assert!(taken > 100, "{taken}");
    }

    #[test]
    fn plain_runs_stop_at_every_special_byte_in_every_position() {
        for special in [b'"', b'\\', 0u8, 0x1f, b'\n'] {
            for at in 0..20 {
                let mut b = vec![b'a'; 24];
                b[at] = special;
                assert_eq!(plain_run(&b), at, "byte {special:#x} at {at}");
            }
        }
        // High bytes (UTF-8) and 0x20.. are plain.
        let b = "é中😀 ~!#".as_bytes();
        assert_eq!(plain_run(b), b.len());
    }

    #[test]
    fn anything_else_goes_to_the_general_parser() {
        for other in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"x":1}}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}} x"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","thinking":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"x":[1],"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"},"n":01}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"#,
            // A bad escape in a field the fast path does not use.
            r#"{"type":"content_block_delta","index":0,"x":"\h","delta":{"type":"text_delta","text":"a"}}"#,
            // The general parser reads the escaped key as `text`, the last one.
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","te\u0078t":"b"}}"#,
            "",
            "{",
        ] {
            assert_eq!(scan(other), None, "{other}");
        }
        // A raw control character inside the string.
        let tab = "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\tb\"}}";
        assert!(tab.contains('\t'));
        assert_eq!(scan(tab), None);
    }
}
