//! The streaming backend: a WebSocket that takes `linear16` audio at
//! 16 kHz, mono, and answers with interim and final results (Deepgram's
//! listen protocol, which self-hosted servers also speak).
//!
//! The rules, from how Claude Code's voice behaves:
//! - the recorder and the connection start together; audio captured
//!   before the connection is ready waits in a queue and goes out in
//!   order, in frames of at most [`FRAME_BYTES`], once it is;
//! - KeepAlive while no audio is going out;
//! - a connection that fails before any text: a bounded number of new
//!   connections, the unsent queue kept;
//! - speech was heard and the server finished with no text: the whole
//!   utterance once more on a new connection, never twice;
//! - a failure after some text: that text is kept and the session ends
//!   (sent audio cannot be taken back, and sending it again would repeat
//!   words).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tungstenite::{Message, WebSocket};

use super::{Config, Control, Error, Event, Recording, server_words, wav};
use crate::json::{self, Value};

/// The largest binary frame: 250 ms of audio.
pub const FRAME_BYTES: usize = 8000;
/// New connections after failures before any text.
pub const RECONNECTS: u32 = 3;
const KEEPALIVE: Duration = Duration::from_secs(4);
/// After CloseStream, how long the server has to finish.
const FINISH: Duration = Duration::from_secs(15);
const CONNECT: Duration = Duration::from_secs(10);

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

type Ws = WebSocket<Stream>;

/// Why a connection could not be made: retried, or final.
struct ConnectError {
    error: Error,
    retry: bool,
}

/// The endpoint with the stream's parameters.
pub fn url_of(config: &Config, endpoint: &str) -> String {
    let mut url = endpoint.to_string();
    let mut add = |k: &str, v: &str| {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(k);
        url.push('=');
        url.extend(
            v.chars()
                .filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c)),
        );
    };
    add("encoding", "linear16");
    add("sample_rate", "16000");
    add("channels", "1");
    add("interim_results", "true");
    if let Some(l) = &config.language {
        add("language", l);
    }
    if let Some(m) = &config.model {
        add("model", m);
    }
    url
}

fn connect(config: &Config, url: &str) -> Result<Ws, ConnectError> {
    use tungstenite::client::IntoClientRequest;
    let fail = |error: Error, retry: bool| ConnectError { error, retry };
    let mut request = url
        .into_client_request()
        .map_err(|e| fail(Error::Server(format!("bad endpoint {url}: {e}")), false))?;
    if let Some(k) = &config.key {
        let value =
            tungstenite::http::HeaderValue::from_str(&format!("Token {k}")).map_err(|_| {
                fail(
                    Error::Auth("the key has characters a header cannot carry".into()),
                    false,
                )
            })?;
        request.headers_mut().insert("authorization", value);
    }
    let uri = request.uri().clone();
    let host = uri
        .host()
        .unwrap_or("")
        .trim_matches(['[', ']'])
        .to_string();
    let tls = uri.scheme_str() == Some("wss");
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let addrs = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| fail(Error::Unreachable(format!("{host}: {e}")), false))?;
    let mut last = None;
    let mut tcp = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, CONNECT) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let tcp = tcp.ok_or_else(|| {
        let why = last.map_or("no address".to_string(), |e| e.to_string());
        fail(Error::Unreachable(format!("{host}:{port}: {why}")), true)
    })?;
    let _ = tcp.set_nodelay(true);
    let _ = tcp.set_read_timeout(Some(CONNECT));
    let stream = if tls {
        // Here rustls is used directly, so the anchors go in as they are.
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(pem) = &config.extra_ca_pem {
            for item in ureq::tls::parse_pem(pem).flatten() {
                if let ureq::tls::PemItem::Certificate(c) = item {
                    let _ = roots.add(rustls::pki_types::CertificateDer::from(c.der().to_vec()));
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls_config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(Error::Server(format!("TLS: {e}")), false))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| fail(Error::Unreachable(format!("{host}: {e}")), false))?;
        let conn = rustls::ClientConnection::new(Arc::new(tls_config), name)
            .map_err(|e| fail(Error::Server(format!("TLS: {e}")), false))?;
        Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
    } else {
        Stream::Plain(tcp)
    };
    match tungstenite::client::client(request, stream) {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::HandshakeError::Failure(e)) => Err(handshake_error(e)),
        Err(tungstenite::HandshakeError::Interrupted(_)) => Err(fail(
            Error::Unreachable(format!("{host}:{port}: the handshake timed out")),
            true,
        )),
    }
}

fn handshake_error(e: tungstenite::Error) -> ConnectError {
    match e {
        tungstenite::Error::Http(response) => {
            let status = response.status().as_u16();
            let body = response
                .body()
                .as_deref()
                .map(|b| server_words(&String::from_utf8_lossy(b)))
                .unwrap_or_default();
            let said = format!("HTTP {status} {body}").trim_end().to_string();
            match status {
                401 | 403 => ConnectError {
                    error: Error::Auth(said),
                    retry: false,
                },
                415 => ConnectError {
                    error: Error::Format(said),
                    retry: false,
                },
                500..=599 => ConnectError {
                    error: Error::Server(said),
                    retry: true,
                },
                _ => ConnectError {
                    error: Error::Server(said),
                    retry: false,
                },
            }
        }
        other => ConnectError {
            error: Error::Unreachable(format!("the connection failed: {other}")),
            retry: true,
        },
    }
}

enum Link {
    /// A connection is being made on another thread.
    Connecting(mpsc::Receiver<Result<Ws, ConnectError>>),
    Open(Box<Ws>),
    /// The next attempt at this time.
    Waiting(Instant),
    Idle,
}

/// What the server said, as the session sees it.
enum Heard {
    Interim(String),
    Final(String),
    Error(String),
    /// The server closed the stream.
    Closed,
    Nothing,
}

fn read_one(ws: &mut Ws) -> Result<Heard, String> {
    match ws.read() {
        Ok(Message::Text(t)) => Ok(parse(t.as_str())),
        Ok(Message::Close(frame)) => match frame {
            Some(f) if u16::from(f.code) != 1000 => Ok(Heard::Error(format!(
                "closed with {}: {}",
                u16::from(f.code),
                server_words(&f.reason)
            ))),
            _ => Ok(Heard::Closed),
        },
        Ok(_) => Ok(Heard::Nothing),
        Err(tungstenite::Error::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(Heard::Nothing)
        }
        Err(tungstenite::Error::ConnectionClosed) => Ok(Heard::Closed),
        Err(e) => Err(e.to_string()),
    }
}

fn parse(text: &str) -> Heard {
    let Ok(v) = json::parse(text) else {
        return Heard::Nothing;
    };
    match v.get("type").and_then(Value::as_str) {
        Some("Results") => {
            let t = v
                .get("channel")
                .and_then(|c| c.get("alternatives"))
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(|a| a.get("transcript"))
                .and_then(Value::as_str)
                .map(super::clean)
                .unwrap_or_default();
            if v.get("is_final").and_then(Value::as_bool) == Some(true) {
                Heard::Final(t)
            } else {
                Heard::Interim(t)
            }
        }
        Some("Error") => Heard::Error(server_words(text)),
        _ => Heard::Nothing,
    }
}

struct Session<'a> {
    config: &'a Config,
    url: String,
    link: Link,
    /// Unsent audio, oldest first.
    queue: VecDeque<u8>,
    finals: Vec<String>,
    interim: String,
    failures: u32,
    replayed: bool,
    close_sent: Option<Instant>,
    last_sent: Instant,
}

impl Session<'_> {
    fn text(&self) -> String {
        let mut parts: Vec<&str> = self.finals.iter().map(String::as_str).collect();
        if !self.interim.is_empty() {
            parts.push(&self.interim);
        }
        parts.join(" ")
    }

    fn dial(&mut self) {
        let (tx, rx) = mpsc::channel();
        let config = self.config.clone();
        let url = self.url.clone();
        std::thread::spawn(move || {
            let _ = tx.send(connect(&config, &url));
        });
        self.link = Link::Connecting(rx);
    }

    /// Sends what is queued, and CloseStream once recording has stopped.
    fn send(&mut self, ws: &mut Ws, stopped: bool) -> Result<(), String> {
        while !self.queue.is_empty() {
            let n = self.queue.len().min(FRAME_BYTES);
            let frame: Vec<u8> = self.queue.drain(..n).collect();
            ws.send(Message::Binary(frame.into()))
                .map_err(|e| e.to_string())?;
            self.last_sent = Instant::now();
        }
        if stopped && self.close_sent.is_none() {
            ws.send(Message::text(r#"{"type":"CloseStream"}"#))
                .map_err(|e| e.to_string())?;
            self.close_sent = Some(Instant::now());
        } else if self.close_sent.is_none() && self.last_sent.elapsed() >= KEEPALIVE {
            ws.send(Message::text(r#"{"type":"KeepAlive"}"#))
                .map_err(|e| e.to_string())?;
            self.last_sent = Instant::now();
        }
        Ok(())
    }
}

/// How a session ended.
enum End {
    Text(String),
    Failed(Error),
    Cancelled,
}

pub(super) fn run(
    config: &Config,
    endpoint: &str,
    rec: &mut Recording,
    ctl: &Control,
    emit: &dyn Fn(Event),
) {
    let mut s = Session {
        config,
        url: url_of(config, endpoint),
        link: Link::Idle,
        queue: VecDeque::new(),
        finals: Vec::new(),
        interim: String::new(),
        failures: 0,
        replayed: false,
        close_sent: None,
        last_sent: Instant::now(),
    };
    s.dial();
    let end = drive(&mut s, rec, ctl, emit);
    rec.stop();
    match end {
        End::Text(t) => emit(Event::Final(t, rec.since_stop())),
        End::Failed(e) => emit(Event::Failed(e)),
        End::Cancelled => {}
    }
}

fn drive(s: &mut Session<'_>, rec: &mut Recording, ctl: &Control, emit: &dyn Fn(Event)) -> End {
    let mut said_transcribing = false;
    loop {
        if ctl.cancel.load(Ordering::Relaxed) {
            return End::Cancelled;
        }
        let fresh = rec.take(ctl, Duration::from_millis(10), emit);
        s.queue.extend(wav::bytes_of(&fresh));
        let stopped = rec.stopped.is_some();
        if stopped && !said_transcribing {
            said_transcribing = true;
            if let Some(e) = rec.failed.take()
                && rec.all.is_empty()
            {
                return End::Failed(e);
            }
            rec.save(s.config, emit);
            emit(Event::Transcribing);
        }
        // A connection that failed: try again, or give up.
        let mut lost: Option<(Error, bool)> = None;
        match std::mem::replace(&mut s.link, Link::Idle) {
            Link::Connecting(rx) => match rx.try_recv() {
                Ok(Ok(ws)) => {
                    let short = Some(Duration::from_millis(5));
                    let _ = ws.get_ref().tcp().set_read_timeout(short);
                    s.link = Link::Open(Box::new(ws));
                }
                Ok(Err(e)) => lost = Some((e.error, e.retry)),
                Err(mpsc::TryRecvError::Empty) => s.link = Link::Connecting(rx),
                Err(mpsc::TryRecvError::Disconnected) => {
                    lost = Some((
                        Error::Unreachable("the connection attempt died".into()),
                        true,
                    ))
                }
            },
            Link::Waiting(at) if Instant::now() >= at => s.dial(),
            Link::Open(mut ws) => match exchange(s, &mut ws, stopped, emit) {
                Exchange::Going => s.link = Link::Open(ws),
                Exchange::Finished => {
                    let text = s.text();
                    if !text.is_empty() {
                        return End::Text(text);
                    }
                    if rec.heard() && !s.replayed {
                        // Speech, and no text: the whole utterance once more.
                        s.replayed = true;
                        emit(Event::Note(
                            "the speech server returned no text; sending the audio once more"
                                .into(),
                        ));
                        s.queue = wav::bytes_of(&rec.all).into();
                        s.close_sent = None;
                        s.dial();
                    } else if rec.heard() {
                        return End::Failed(Error::NoText);
                    } else {
                        return End::Failed(rec.failed.take().unwrap_or(Error::NoSpeech));
                    }
                }
                Exchange::Lost(e, retry) => lost = Some((e, retry)),
            },
            other => s.link = other,
        }
        if let Some((error, retry)) = lost {
            let text = s.text();
            if !text.is_empty() {
                emit(Event::Note(format!(
                    "{error}; keeping the text heard so far"
                )));
                return End::Text(text);
            }
            s.failures += 1;
            if !retry || s.failures > RECONNECTS {
                return End::Failed(error);
            }
            emit(Event::Note(format!(
                "{error}; connecting again ({}/{RECONNECTS})",
                s.failures
            )));
            // Audio sent on the dead connection is gone; what was not sent stays queued.
            s.close_sent = None;
            s.link = Link::Waiting(Instant::now() + Duration::from_millis(200 << s.failures));
        }
    }
}

enum Exchange {
    Going,
    /// The server closed the stream after our CloseStream.
    Finished,
    Lost(Error, bool),
}

fn exchange(s: &mut Session<'_>, ws: &mut Ws, stopped: bool, emit: &dyn Fn(Event)) -> Exchange {
    if let Err(e) = s.send(ws, stopped) {
        return Exchange::Lost(Error::Unreachable(format!("sending failed: {e}")), true);
    }
    // Everything the server has said so far.
    for _ in 0..64 {
        match read_one(ws) {
            Ok(Heard::Nothing) => break,
            Ok(Heard::Interim(t)) => {
                s.interim = t;
                emit(Event::Interim(s.text()));
            }
            Ok(Heard::Final(t)) => {
                s.interim.clear();
                if !t.is_empty() {
                    s.finals.push(t);
                }
                emit(Event::Interim(s.text()));
            }
            Ok(Heard::Error(m)) => return Exchange::Lost(Error::Server(m), false),
            Ok(Heard::Closed) if s.close_sent.is_some() => return Exchange::Finished,
            Ok(Heard::Closed) => {
                return Exchange::Lost(
                    Error::Unreachable("the server closed the stream early".into()),
                    true,
                );
            }
            Err(e) if s.close_sent.is_some() && !s.text().is_empty() => {
                // Ended without a close frame after the last words.
                let _ = e;
                return Exchange::Finished;
            }
            Err(e) => {
                return Exchange::Lost(
                    Error::Unreachable(format!("the connection broke: {e}")),
                    true,
                );
            }
        }
    }
    if s.close_sent.is_some_and(|t| t.elapsed() > FINISH) {
        return Exchange::Lost(
            Error::Server("no final result after the end of the audio".into()),
            false,
        );
    }
    Exchange::Going
}
