//! A small JSON value with an insertion-ordered object, a depth-bounded
//! parser and a writer.
//!
//! Why our own: everything tern exchanges (API bodies, SSE payloads, tool
//! inputs, hook I/O) is schemaless at the edges, so we work on a `Value`
//! anyway. Keeping object keys in the order they arrived means a hook or a
//! transcript sees exactly what the model sent, and the whole module costs a
//! few kilobytes of binary.
//!
//! Model output is untrusted: the parser refuses nesting deeper than
//! [`MAX_DEPTH`], which also bounds recursion in `Drop`, `Clone` and the
//! writer.

use std::fmt;

/// Deeper input is rejected; no legitimate tool input comes close.
pub const MAX_DEPTH: usize = 256;

#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    Int(i64),
    Float(f64),
}

/// An object whose keys keep their order. Lookups scan linearly, which is
/// faster than hashing for the handful of keys a JSON object has here.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Map {
    entries: Vec<(String, Value)>,
}

impl Map {
    pub fn new() -> Self {
        Map::default()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Sets `key`, replacing an earlier value in place (keeping its position).
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        let key = key.into();
        let value = value.into();
        match self.get_mut(&key) {
            Some(slot) => *slot = value,
            None => self.entries.push((key, value)),
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Value {
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i),
            Value::Number(Number::Float(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Some(*f as i64)
            }
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i as f64),
            Value::Number(Number::Float(f)) => Some(*f),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// `get(key)` as a string, for the common "optional string field" case.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Compact JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_value(self, &mut out);
        out
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Value::String(s.clone())
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Number(Number::Int(n))
    }
}
impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::Number(Number::Int(i64::try_from(n).unwrap_or(i64::MAX)))
    }
}
impl From<usize> for Value {
    fn from(n: usize) -> Self {
        Value::from(n as u64)
    }
}
impl From<u32> for Value {
    fn from(n: u32) -> Self {
        Value::Number(Number::Int(i64::from(n)))
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::Number(Number::Float(n))
    }
}
impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}
impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Self {
        Value::Array(a)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}

/// Builds an object from `key => value` pairs: `obj! { "type" => "text" }`.
#[macro_export]
macro_rules! obj {
    () => { $crate::json::Value::Object($crate::json::Map::new()) };
    ($($k:expr => $v:expr),+ $(,)?) => {{
        let mut m = $crate::json::Map::new();
        $( m.insert($k, $v); )+
        $crate::json::Value::Object(m)
    }};
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

// ---------------------------------------------------------------- writing

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(Number::Int(i)) => out.push_str(&i.to_string()),
        Value::Number(Number::Float(f)) => {
            if f.is_finite() {
                let s = f.to_string();
                out.push_str(&s);
            } else {
                out.push_str("null");
            }
        }
        Value::String(s) => write_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// Appends `s` as a JSON string literal.
pub fn write_str(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str(&format!("\\u{:04x}", b));
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

// ---------------------------------------------------------------- parsing

#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub offset: usize,
    pub message: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for ParseError {}

pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    let v = p.value()?;
    p.skip_ws();
    if p.pos != p.bytes.len() {
        return Err(p.err("trailing characters after JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, message: &'static str) -> ParseError {
        ParseError {
            offset: self.pos,
            message,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn literal(&mut self, word: &'static str, v: Value) -> Result<Value, ParseError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.err("unexpected end of input")),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'[') => self.array(),
            Some(b'{') => self.object(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("expected a JSON value")),
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("JSON nested too deeply"));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(())
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']' in array")),
            }
        }
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        // Entries are collected as they come and duplicate keys resolved
        // once at the end: checking each insert against the whole object
        // made a 40,000-key object take seconds.
        let mut entries: Vec<(String, Value)> = Vec::new();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Object(Map { entries }));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key in object"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':' after object key"));
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value()?;
            entries.push((key, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Value::Object(Map {
                        entries: dedup_keys(entries),
                    }));
                }
                _ => return Err(self.err("expected ',' or '}' in object")),
            }
        }
    }

    /// RFC 8259's grammar exactly: `-? (0 | [1-9][0-9]*) (. [0-9]+)?
    /// ([eE] [+-]? [0-9]+)?`. Integers that fit stay exact.
    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let bad = |p: &Self| ParseError {
            offset: p.pos,
            message: "invalid number",
        };
        let digits = |p: &mut Self| {
            let from = p.pos;
            while let Some(b'0'..=b'9') = p.peek() {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(bad(self));
                }
            }
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(bad(self)),
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            float = true;
            if digits(self) == 0 {
                return Err(bad(self));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            float = true;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(bad(self));
            }
        }
        // The range is ASCII by construction.
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| bad(self))?;
        if !float && let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Number(Number::Int(i)));
        }
        text.parse::<f64>()
            .map(|f| Value::Number(Number::Float(f)))
            .map_err(|_| ParseError {
                offset: start,
                message: "invalid number",
            })
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.pos += 1; // opening quote
        let start = self.pos;
        // Find the closing quote first, then decode the span in one go.
        loop {
            let rest = &self.bytes[self.pos..];
            let Some(at) = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            else {
                self.pos = self.bytes.len();
                return Err(self.err("unterminated string"));
            };
            self.pos += at;
            match rest[at] {
                b'"' => break,
                b'\\' => {
                    if self.pos + 1 >= self.bytes.len() {
                        self.pos = self.bytes.len();
                        return Err(self.err("unterminated string"));
                    }
                    self.pos += 2;
                }
                _ => return Err(self.err("control character in string")),
            }
        }
        // Both ends are ASCII, so the span is on char boundaries of the text.
        let raw = std::str::from_utf8(&self.bytes[start..self.pos])
            .map_err(|_| self.err("invalid UTF-8 in string"))?;
        self.pos += 1; // closing quote
        let mut out = String::with_capacity(raw.len());
        unescape_into(raw, &mut out).map_err(|(offset, message)| ParseError {
            offset: start + offset,
            message,
        })?;
        Ok(out)
    }
}

/// Decodes the inside of a JSON string (`raw_text`, between the quotes,
/// already checked for raw quotes and control characters) onto `out`.
/// Errors give the offset within it. A lone surrogate becomes U+FFFD.
/// Shared by the parser and the stream's fast path.
pub(crate) fn unescape_into(raw_text: &str, out: &mut String) -> Result<(), (usize, &'static str)> {
    let raw = raw_text.as_bytes();
    // Runs between escapes end at ASCII bytes, so slicing stays on char
    // boundaries and needs no second UTF-8 check.
    let text = |from: usize, to: usize| -> Result<&str, (usize, &'static str)> {
        raw_text
            .get(from..to)
            .ok_or((from, "invalid UTF-8 in string"))
    };
    let hex4 = |at: usize| -> Result<u32, (usize, &'static str)> {
        let chunk = raw.get(at..at + 4).ok_or((at, "truncated \\u escape"))?;
        let mut n = 0u32;
        for &b in chunk {
            let d = (b as char).to_digit(16).ok_or((at, "invalid \\u escape"))?;
            n = n * 16 + d;
        }
        Ok(n)
    };
    let mut i = 0;
    while i < raw.len() {
        let Some(at) = memchr::memchr(b'\\', &raw[i..]) else {
            out.push_str(text(i, raw.len())?);
            return Ok(());
        };
        out.push_str(text(i, i + at)?);
        i += at + 1;
        let esc = *raw.get(i).ok_or((i, "unterminated string"))?;
        i += 1;
        match esc {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let hi = hex4(i)?;
                i += 4;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate must be followed by a low one.
                    if raw.get(i..i + 2) == Some(b"\\u") {
                        let lo = hex4(i + 2)?;
                        if !(0xDC00..0xE000).contains(&lo) {
                            return Err((i, "invalid surrogate pair"));
                        }
                        i += 6;
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    } else {
                        0xFFFD
                    }
                } else {
                    hi
                };
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            _ => return Err((i - 1, "invalid escape in string")),
        }
    }
    Ok(())
}

/// Duplicate keys: the last value wins, in the first key's place (what
/// [`Map::insert`] does one by one). Small objects compare pairwise;
/// large ones go through a hash map, so the whole parse stays linear.
fn dedup_keys(mut entries: Vec<(String, Value)>) -> Vec<(String, Value)> {
    const SMALL: usize = 16;
    if entries.len() <= SMALL {
        let mut i = 1;
        while i < entries.len() {
            match entries[..i].iter().position(|(k, _)| *k == entries[i].0) {
                Some(first) => {
                    let (_, v) = entries.remove(i);
                    entries[first].1 = v;
                }
                None => i += 1,
            }
        }
        return entries;
    }
    let mut first: std::collections::HashMap<String, usize> =
        std::collections::HashMap::with_capacity(entries.len());
    let mut out: Vec<(String, Value)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        match first.get(&k) {
            Some(&at) => out[at].1 = v,
            None => {
                first.insert(k.clone(), out.len());
                out.push((k, v));
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_key_order() {
        let text = r#"{"z":1,"a":[true,false,null,-2.5,"x\"y\n\u00e9\ud83d\ude00"],"m":{}}"#;
        let v = parse(text).unwrap();
        assert_eq!(
            v.to_json(),
            r#"{"z":1,"a":[true,false,null,-2.5,"x\"y\né😀"],"m":{}}"#
        );
        let keys: Vec<_> = v.as_object().unwrap().iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn rejects_garbage_with_offsets() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "tru",
            "\"abc",
            "01x",
            "{} x",
            "\"\\q\"",
            "-",
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
        let e = parse("[1, 2, ?]").unwrap_err();
        assert_eq!(e.offset, 7);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(parse(&deep).unwrap_err().message, "JSON nested too deeply");
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn numbers_keep_integers_exact() {
        let v = parse("[9007199254740993, 1e3, -0, 3.25]").unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a[0].as_i64(), Some(9007199254740993));
        assert_eq!(a[1].as_f64(), Some(1000.0));
        assert_eq!(a[3].as_f64(), Some(3.25));
    }

    /// What RFC 8259 takes as a number and what it does not (the stream's
    /// fast path is held to the same lists).
    pub(crate) const GOOD_NUMBERS: &[&str] = &[
        "0",
        "-0",
        "1",
        "-1",
        "10",
        "0.5",
        "-0.5",
        "1e5",
        "1E5",
        "1e+5",
        "1e-5",
        "1.25e-3",
        "123456789012345678901234567890",
    ];
    pub(crate) const BAD_NUMBERS: &[&str] = &[
        "01", "-01", "00", "1.", "-1.", ".5", "1e", "1e+", "+1", "--1", "1.e5", "0x10", "1.5.5",
        "-", "1ee5", "NaN", "Infinity",
    ];

    #[test]
    fn numbers_follow_rfc_8259_exactly() {
        for good in GOOD_NUMBERS {
            assert!(parse(good).is_ok(), "refused {good:?}");
        }
        for bad in BAD_NUMBERS {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
        assert_eq!(parse("[1,-0]").unwrap().to_json(), "[1,0]");
    }

    #[test]
    fn a_hundred_thousand_keys_parse_and_duplicates_resolve_in_place() {
        let mut text = String::from("{");
        for i in 0..100_000 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k7\":\"last\"}");
        let v = parse(&text).unwrap();
        let map = v.as_object().unwrap();
        assert_eq!(map.iter().count(), 100_000);
        assert_eq!(map.iter().nth(7).map(|(k, _)| k), Some("k7"));
        assert_eq!(v.str_field("k7"), Some("last"));
        // The same rule for small objects.
        let small = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(small.to_json(), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn control_characters_are_escaped() {
        let v = Value::from("a\u{1}b\tc");
        assert_eq!(v.to_json(), "\"a\\u0001b\\tc\"");
        assert_eq!(parse(&v.to_json()).unwrap(), v);
    }
}
