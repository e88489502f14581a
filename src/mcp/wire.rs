//! One HTTP exchange with a remote MCP server, run on a thread of its own
//! (ureq blocks) and handed to the session piece by piece over a
//! channel: the head, then each server-sent event as it arrives (a long
//! tool call's progress, a GET stream that stays open for hours), or the
//! whole body when it is not a stream.
//!
//! Dropping the receiver ends the exchange: the thread notices at its
//! next piece, or when its read times out.

use std::time::Duration;

use crate::model::sse::{Flow, SseParser};

/// What comes back, in order: `Head`, then events or a body, then `End`.
pub(super) enum Piece {
    Head(Head),
    Event {
        id: String,
        event: String,
        data: String,
    },
    /// A body that is not an event stream (at most 64 MiB).
    Body(String),
    /// Sent when an event stream ends, however it ended: where a resumed
    /// stream would start (the last event id, empty when the server gave
    /// none) and the `retry` delay the server asked for.
    Cursor {
        last_id: String,
        retry_ms: Option<u64>,
    },
    /// The exchange is over: `Err` says why it broke.
    End(Result<(), Failure>),
}

#[derive(Debug, Clone)]
pub(super) struct Head {
    pub status: u16,
    pub stream: bool,
    pub session: Option<String>,
    /// `WWW-Authenticate`, for a 401 or 403: what sign-in the server wants.
    pub challenge: Option<String>,
}

/// Why an exchange broke.
#[derive(Debug, Clone)]
pub(super) enum Failure {
    /// Nothing answered (refused, DNS, TLS, timeout before the head).
    Unreachable(std::sync::Arc<ureq::Error>),
    /// The answer broke off or was not what it claimed.
    Broken(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(e) => write!(f, "{e}"),
            Failure::Broken(why) => f.write_str(why),
        }
    }
}

/// Largest non-stream body kept.
const MAX_BODY: u64 = 64 * 1024 * 1024;
/// Largest single event of a stream.
const MAX_EVENT: usize = 16 * 1024 * 1024;

pub(super) struct Request {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// Starts the exchange; its pieces arrive on the returned channel.
pub(super) fn start(agent: &ureq::Agent, req: Request) -> smol::channel::Receiver<Piece> {
    let (tx, rx) = smol::channel::bounded(64);
    let agent = agent.clone();
    // With no thread the receiver finds the channel closed at once, and
    // the caller reports a broken exchange.
    let _ = std::thread::Builder::new()
        .name("tern-mcp-http".into())
        .spawn(move || {
            let end = exchange(&agent, req, &tx);
            let _ = tx.send_blocking(Piece::End(end));
        });
    rx
}

fn exchange(
    agent: &ureq::Agent,
    req: Request,
    tx: &smol::channel::Sender<Piece>,
) -> Result<(), Failure> {
    let mut builder = ureq::http::Request::builder()
        .method(req.method)
        .uri(req.url.as_str());
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let response = match req.body {
        Some(body) => send(agent, builder.body(body))?,
        None => send(agent, builder.body(()))?,
    };
    let header = |n: &str| {
        response
            .headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let stream =
        header("content-type").is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    let head = Head {
        status: response.status().as_u16(),
        stream,
        session: header("mcp-session-id"),
        challenge: header("www-authenticate"),
    };
    let ok = head.status / 100 == 2;
    if tx.send_blocking(Piece::Head(head)).is_err() {
        return Ok(());
    }
    let mut body = response.into_body().into_reader();
    if !(stream && ok) {
        let mut text = String::new();
        let mut limited = std::io::Read::take(body, MAX_BODY);
        std::io::Read::read_to_string(&mut limited, &mut text)
            .map_err(|e| Failure::Broken(format!("the answer broke off: {e}")))?;
        let _ = tx.send_blocking(Piece::Body(text));
        return Ok(());
    }
    let mut parser = SseParser::new(MAX_EVENT);
    let read = read_events(&mut body, &mut parser, tx);
    // An id-only event (a priming event) is never dispatched, so the
    // cursor comes from the parser, not from the events sent.
    let _ = tx.send_blocking(Piece::Cursor {
        last_id: parser.last_id().to_string(),
        retry_ms: parser.retry_ms(),
    });
    read
}

/// Sends each event of a stream as it is completed, until the stream ends.
fn read_events(
    body: &mut impl std::io::Read,
    parser: &mut SseParser,
    tx: &smol::channel::Sender<Piece>,
) -> Result<(), Failure> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut gone = false;
    loop {
        let n = match std::io::Read::read(body, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Failure::Broken(format!("the stream broke off: {e}"))),
        };
        parser
            .feed(&buf[..n], &mut |ev| {
                let piece = Piece::Event {
                    id: ev.id.to_string(),
                    event: ev.event.to_string(),
                    data: ev.data.to_string(),
                };
                if tx.send_blocking(piece).is_err() {
                    gone = true;
                    return Flow::Stop;
                }
                Flow::Continue
            })
            .map_err(|e| Failure::Broken(e.to_string()))?;
        if gone {
            return Ok(());
        }
    }
    Ok(())
}

fn send(
    agent: &ureq::Agent,
    request: Result<ureq::http::Request<impl ureq::AsSendBody>, ureq::http::Error>,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let request = request.map_err(|e| Failure::Broken(e.to_string()))?;
    agent
        .run(request)
        .map_err(|e| Failure::Unreachable(std::sync::Arc::new(e)))
}

/// The agent for one remote server: the model client's roots (with
/// SSL_CERT_FILE), a connect timeout, and a long per-read timeout so a
/// stream nobody writes to is eventually let go and opened again.
/// (ureq's own default roots are compiled out and panic when used: an
/// `https://` server once ended tern that way.)
pub(super) fn agent(extra_ca_pem: Option<&[u8]>) -> Result<ureq::Agent, String> {
    let builder = crate::model::client::http_config(extra_ca_pem).map_err(|e| e.to_string())?;
    Ok(builder
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_per_read(Some(Duration::from_secs(600)))
        .build()
        .new_agent())
}
