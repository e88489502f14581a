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
//! dispatched. `id` and `retry` are accepted and ignored.

use std::fmt;

/// One dispatched event. `data` is the joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, or `"message"` when none was given.
    pub event: &'a str,
    pub data: &'a str,
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
        }
    }

    /// Feeds a chunk; calls `sink` for every event completed by it.
    /// Returns `Flow::Stop` if the sink asked to stop.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        sink: &mut dyn FnMut(SseEvent<'_>) -> Flow,
    ) -> Result<Flow, SseError> {
        if self.after_cr {
            self.after_cr = false;
            if let [b'\n', rest @ ..] = chunk {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.push_partial(chunk)?;
                    break;
                }
                Some(end) => {
                    let flow = if self.line.is_empty() {
                        self.take_line(&chunk[..end], sink)?
                    } else {
                        self.push_partial(&chunk[..end])?;
                        let line = std::mem::take(&mut self.line);
                        let flow = self.take_line(&line, sink);
                        self.line = line;
                        self.line.clear();
                        flow?
                    };
                    let was_cr = chunk[end] == b'\r';
                    chunk = &chunk[end + 1..];
                    if was_cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            None => self.after_cr = true,
                            Some(_) => {}
                        }
                    }
                    if flow == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
            }
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
}
