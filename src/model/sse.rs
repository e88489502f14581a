//! Incremental Server-Sent Events parser.
//!
//! Bytes arrive in arbitrary chunks (mid line, mid UTF-8 character, a CR in
//! one chunk and its LF in the next). The parser keeps only the unfinished
//! line and the pending event, and pushes each complete event into a sink,
//! ripgrep-style: the sink returns [`Flow::Stop`] to end early.
//!
//! It follows the WHATWG event-stream rules that matter for the Messages API:
//! LF, CR and CRLF line ends; `:` comment lines; `data:` lines joined with
//! `\n`; one optional space after the colon; an event without data is not
//! dispatched. `id` sets the stream's last event id (kept across events,
//! as the rules say, and handed out with each one: an MCP stream resumes
//! from it) and `retry` the reconnection delay the server asks for.

use std::fmt;

/// One dispatched event. `data` is the joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, or `"message"` when none was given.
    pub event: &'a str,
    pub data: &'a str,
    /// The last event id the stream has set (empty when none).
    pub id: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A line or event grew past the configured cap.
    TooLarge { limit: usize },
    /// An event's data is not valid UTF-8.
    InvalidUtf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::TooLarge { limit } => {
                write!(f, "server-sent event larger than {limit} bytes")
            }
            SseError::InvalidUtf8 => f.write_str("server-sent event is not valid UTF-8"),
        }
    }
}

impl std::error::Error for SseError {}

/// Default cap on one event: far above any real Messages API event.
pub const DEFAULT_MAX_EVENT: usize = 16 * 1024 * 1024;

pub struct SseParser {
    line: Vec<u8>,
    event: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The previous chunk ended with CR: a leading LF belongs to that line end.
    after_cr: bool,
    max_event: usize,
    last_id: String,
    retry: Option<u64>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EVENT)
    }
}

impl SseParser {
    pub fn new(max_event: usize) -> Self {
        SseParser {
            line: Vec::new(),
            event: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
            max_event,
            last_id: String::new(),
            retry: None,
        }
    }

    /// The reconnection delay the server last asked for, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// The stream's last event id (empty when none was set): what a
    /// resumed stream starts after (only MCP's streams resume).
    #[cfg(feature = "mcp")]
    pub(crate) fn last_id(&self) -> &str {
        &self.last_id
    }

    /// Feeds a chunk; calls `sink` for every event completed by it.
    /// Returns `Flow::Stop` if the sink asked to stop.
    ///
    /// An event whose one `data:` line and closing blank line both lie in
    /// this chunk (nearly all of them) is handed to the sink straight from
    /// the chunk; only what spans chunks is copied.
    pub fn feed(
        &mut self,
        input: &[u8],
        sink: &mut dyn FnMut(SseEvent<'_>) -> Flow,
    ) -> Result<Flow, SseError> {
        let mut pos = 0;
        if self.after_cr {
            self.after_cr = false;
            if input.first() == Some(&b'\n') {
                pos = 1;
            }
        }
        // The current event's data while it still lies in `input`.
        let mut lent: Option<(usize, usize)> = None;
        while pos < input.len() {
            let Some(off) = memchr::memchr2(b'\n', b'\r', &input[pos..]) else {
                self.push_partial(&input[pos..])?;
                break;
            };
            let end = pos + off;
            let flow = if !self.line.is_empty() {
                self.push_partial(&input[pos..end])?;
                let line = std::mem::take(&mut self.line);
                let flow = self.take_line(&line, sink);
                self.line = line;
                self.line.clear();
                flow?
            } else {
                let line = &input[pos..end];
                match (line, lent) {
                    ([], Some((from, to))) => {
                        lent = None;
                        self.dispatch_data(&input[from..to], sink)?
                    }
                    ([b'd', b'a', b't', b'a', b':', rest @ ..], None) if !self.has_data => {
                        let value = rest.strip_prefix(b" ").unwrap_or(rest);
                        if value.len() > self.max_event {
                            return Err(SseError::TooLarge {
                                limit: self.max_event,
                            });
                        }
                        let from = end - value.len();
                        lent = Some((from, end));
                        Flow::Continue
                    }
                    _ => {
                        // A second data line: the first joins the buffer.
                        if let Some((from, to)) = lent.take() {
                            self.data.extend_from_slice(&input[from..to]);
                            self.has_data = true;
                        }
                        self.take_line(line, sink)?
                    }
                }
            };
            let was_cr = input[end] == b'\r';
            pos = end + 1;
            if was_cr {
                match input.get(pos) {
                    Some(b'\n') => pos += 1,
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            if flow == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        // The chunk goes away: keep what the next one completes.
        if let Some((from, to)) = lent {
            self.data.extend_from_slice(&input[from..to]);
            self.has_data = true;
        }
        Ok(Flow::Continue)
    }

    /// True when no partial line or undispatched event is held; a stream
    /// that ends while this is false was cut mid-event.
    pub fn is_idle(&self) -> bool {
        self.line.is_empty() && !self.has_data && self.event.is_empty()
    }

    fn push_partial(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.max_event {
            return Err(SseError::TooLarge {
                limit: self.max_event,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn take_line(
        &mut self,
        line: &[u8],
        sink: &mut dyn FnMut(SseEvent<'_>) -> Flow,
    ) -> Result<Flow, SseError> {
        if line.is_empty() {
            return self.dispatch(sink);
        }
        if line[0] == b':' {
            return Ok(Flow::Continue);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let v = &line[colon + 1..];
                (&line[..colon], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // An id with a NUL is ignored, as the rules say.
            b"id" if !value.contains(&0) => {
                if let Ok(id) = std::str::from_utf8(value) {
                    id.clone_into(&mut self.last_id);
                }
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max_event {
                    return Err(SseError::TooLarge {
                        limit: self.max_event,
                    });
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    /// Dispatches an event whose data lies outside the buffer.
    fn dispatch_data(
        &mut self,
        data: &[u8],
        sink: &mut dyn FnMut(SseEvent<'_>) -> Flow,
    ) -> Result<Flow, SseError> {
        let result = match (std::str::from_utf8(&self.event), std::str::from_utf8(data)) {
            (Ok(event), Ok(data)) => Ok(sink(SseEvent {
                event: if event.is_empty() { "message" } else { event },
                data,
                id: &self.last_id,
            })),
            _ => Err(SseError::InvalidUtf8),
        };
        self.event.clear();
        result
    }

    fn dispatch(&mut self, sink: &mut dyn FnMut(SseEvent<'_>) -> Flow) -> Result<Flow, SseError> {
        if !self.has_data {
            self.event.clear();
            return Ok(Flow::Continue);
        }
        let result = match (
            std::str::from_utf8(&self.event),
            std::str::from_utf8(&self.data),
        ) {
            (Ok(event), Ok(data)) => Ok(sink(SseEvent {
                event: if event.is_empty() { "message" } else { event },
                data,
                id: &self.last_id,
            })),
            _ => Err(SseError::InvalidUtf8),
        };
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]], cap: usize) -> Result<Vec<(String, String)>, SseError> {
        let mut p = SseParser::new(cap);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut |e| {
                out.push((e.event.to_string(), e.data.to_string()));
                Flow::Continue
            })?;
        }
        Ok(out)
    }

    #[test]
    fn line_endings_comments_and_multiline_data() {
        let text =
            b": hello\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\nevent: b\rdata: x\r\rdata: y\n\n";
        let got = collect(&[text], 1024).unwrap();
        assert_eq!(
            got,
            vec![
                ("a".into(), "1\n2".into()),
                ("b".into(), "x".into()),
                ("message".into(), "y".into())
            ]
        );
    }

    #[test]
    fn cr_then_lf_across_chunks_is_one_line_end() {
        let got = collect(&[b"data: a\r", b"\n", b"\r", b"\ndata: b\n\n"], 1024).unwrap();
        assert_eq!(
            got,
            vec![
                ("message".into(), "a".into()),
                ("message".into(), "b".into())
            ]
        );
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let text = "data: é😀\n\n".as_bytes();
        for cut in 0..text.len() {
            let got = collect(&[&text[..cut], &text[cut..]], 1024).unwrap();
            assert_eq!(got, vec![("message".into(), "é😀".into())], "cut at {cut}");
        }
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        let got = collect(&[b"event: ping\n\nevent: x\ndata\n\n"], 1024).unwrap();
        assert_eq!(got, vec![("x".into(), "".into())]);
    }

    #[test]
    fn oversized_line_is_an_error() {
        let err = collect(&[b"data: 0123456789", b"0123456789\n\n"], 16).unwrap_err();
        assert_eq!(err, SseError::TooLarge { limit: 16 });
        assert!(collect(&[b"data: 0123\n\n"], 16).is_ok());
    }

    #[test]
    fn every_two_way_split_gives_the_same_events() {
        let text: &[u8] = b"event: a\ndata: {\"x\":1}\n\n: c\ndata: one\ndata: two\n\nevent: b\r\ndata:3\r\n\r\ndata\n\ndata: last\n\n";
        let whole = collect(&[text], 1024).unwrap();
        assert_eq!(whole.len(), 5);
        assert_eq!(whole[1], ("message".into(), "one\ntwo".into()));
        for cut in 0..=text.len() {
            let got = collect(&[&text[..cut], &text[cut..]], 1024).unwrap();
            assert_eq!(got, whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(collect(&bytes, 1024).unwrap(), whole);
        // The cap holds for data handed out without copying, too.
        assert_eq!(
            collect(&[b"data: 0123456789abcdefXYZ\n\n"], 16).unwrap_err(),
            SseError::TooLarge { limit: 16 }
        );
    }

    #[test]
    fn stop_ends_feeding() {
        let mut p = SseParser::default();
        let mut n = 0;
        let flow = p
            .feed(b"data: 1\n\ndata: 2\n\n", &mut |_| {
                n += 1;
                Flow::Stop
            })
            .unwrap();
        assert_eq!((flow, n), (Flow::Stop, 1));
    }

    #[test]
    fn idle_tracks_partial_state() {
        let mut p = SseParser::default();
        let mut sink = |_: SseEvent<'_>| Flow::Continue;
        p.feed(b"data: x\n", &mut sink).unwrap();
        assert!(!p.is_idle());
        p.feed(b"\n", &mut sink).unwrap();
        assert!(p.is_idle());
    }

    #[test]
    fn ids_persist_across_events_and_retry_is_kept() {
        let mut seen = Vec::new();
        let text = b"id: 7\ndata: a\n\ndata: b\n\nid: 8\0x\nretry: 2500\nid: 9\ndata: c\n\nid\ndata: d\n\n";
        for cut in 0..text.len() {
            seen.clear();
            let mut p = SseParser::default();
            for part in [&text[..cut], &text[cut..]] {
                p.feed(part, &mut |e| {
                    seen.push((e.id.to_string(), e.data.to_string()));
                    Flow::Continue
                })
                .unwrap();
            }
            let want: Vec<(String, String)> = [("7", "a"), ("7", "b"), ("9", "c"), ("", "d")]
                .iter()
                .map(|(i, d)| (i.to_string(), d.to_string()))
                .collect();
            assert_eq!(seen, want, "cut at {cut}");
            assert_eq!(p.retry_ms(), Some(2500));
        }
    }
}
