//! A scripted WebSocket speech-to-text server speaking the Deepgram-style
//! "listen" streaming protocol, for tests of the voice client.
//!
//! The client sends binary frames of raw PCM, `{"type":"KeepAlive"}` text
//! frames and finally `{"type":"CloseStream"}`; the server answers with
//! `Results` (interim or final), `Metadata` and a Close frame, or with an
//! error. Each connection follows one [`Behavior`] of the script and every
//! connection is recorded as a [`Conn`].
//!
//! Nothing here blocks forever: reads time out every few milliseconds, a
//! connection gives up after [`CONN_DEADLINE`], and the accept loop (and
//! every connection thread) stops once the [`WsStt`] is dropped.

use std::io::{self, ErrorKind};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::protocol::CloseFrame;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{Error as WsError, HandshakeError, Message, WebSocket};

/// How long one connection may last, handshake included.
pub const CONN_DEADLINE: Duration = Duration::from_secs(20);
/// How long [`WsStt::wait_connections`] waits.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server waits for the client's Close reply after its own.
const CLOSE_DRAIN: Duration = Duration::from_secs(5);
/// The read timeout: how often a blocked read checks the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// What the server does with one connection.
#[derive(Clone, Debug)]
pub enum Behavior {
    /// Accept the TCP connection and close it at once, no handshake (a
    /// connection error for the client).
    Drop,
    /// Answer the upgrade request with this HTTP status and body (e.g. 401
    /// "bad key", 503) and close.
    Reject(u16, String),
    /// Wait this long before completing the handshake (the TCP connect
    /// succeeds at once; the upgrade answer is late), then behave as `then`.
    Late(Duration, Box<Behavior>),
    /// Normal transcription: every `step_bytes` of audio received, an interim
    /// Results whose transcript is the next prefix of `words` (one more word
    /// each time, never all of them); on CloseStream one final Results
    /// (`is_final` and `speech_final`) with all `words` joined by spaces, then
    /// Metadata, then Close 1000.
    Transcribe {
        words: Vec<String>,
        step_bytes: usize,
    },
    /// Read all audio; on CloseStream send only Metadata and Close 1000: no
    /// Results at all ("finalized with no data").
    NoData,
    /// After `after_bytes` of audio (or at CloseStream if fewer arrive), a
    /// final Results with `words` (`is_final` true, `speech_final` false),
    /// then the TCP connection is dropped abruptly: no Close frame.
    FailAfterText {
        words: Vec<String>,
        after_bytes: usize,
    },
    /// After the handshake, `{"type":"Error","description":TEXT}` then Close
    /// 1011 with TEXT (cut to fit) as the reason.
    Error(String),
    /// After the handshake, only a Close frame with this code and reason.
    Close(u16, String),
}

impl Behavior {
    pub fn reject(status: u16, body: &str) -> Behavior {
        Behavior::Reject(status, body.to_string())
    }

    pub fn late(delay: Duration, then: Behavior) -> Behavior {
        Behavior::Late(delay, Box::new(then))
    }

    /// [`Behavior::Transcribe`] with `text` split on whitespace.
    pub fn transcribe(text: &str, step_bytes: usize) -> Behavior {
        Behavior::Transcribe {
            words: words(text),
            step_bytes,
        }
    }

    /// [`Behavior::FailAfterText`] with `text` split on whitespace.
    pub fn fail_after_text(text: &str, after_bytes: usize) -> Behavior {
        Behavior::FailAfterText {
            words: words(text),
            after_bytes,
        }
    }

    pub fn error(description: &str) -> Behavior {
        Behavior::Error(description.to_string())
    }

    pub fn close(code: u16, reason: &str) -> Behavior {
        Behavior::Close(code, reason.to_string())
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// What one connection got, and what the server sent on it.
#[derive(Clone, Debug)]
pub struct Conn {
    /// 0-based, in order of arrival; the index into the script.
    pub index: usize,
    /// The behavior this connection followed (`Late` included).
    pub behavior: Behavior,
    /// From the upgrade request ("" if no request was read).
    pub path_and_query: String,
    /// The `Authorization` header of the upgrade request.
    pub authorization: Option<String>,
    /// All headers of the upgrade request, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The WebSocket handshake completed (false for `Drop` and `Reject`).
    pub handshake_done: bool,
    /// The size of each binary frame, in order.
    pub audio_frames: Vec<usize>,
    /// All binary payloads concatenated in order.
    pub audio: Vec<u8>,
    /// Text frames received (KeepAlive, CloseStream…), in order.
    pub texts: Vec<String>,
    /// CloseStream was received.
    pub closed_stream: bool,
    /// The client sent a Close frame.
    pub client_closed: bool,
    /// Text frames the server sent, in order.
    pub sent: Vec<String>,
    /// TCP accept time.
    pub accepted_at: Instant,
    pub handshake_at: Option<Instant>,
    /// The server is done with the connection.
    pub ended: bool,
    pub ended_at: Option<Instant>,
}

impl Conn {
    fn new(index: usize, behavior: Behavior) -> Conn {
        Conn {
            index,
            behavior,
            path_and_query: String::new(),
            authorization: None,
            headers: Vec::new(),
            handshake_done: false,
            audio_frames: Vec::new(),
            audio: Vec::new(),
            texts: Vec::new(),
            closed_stream: false,
            client_closed: false,
            sent: Vec::new(),
            accepted_at: Instant::now(),
            handshake_at: None,
            ended: false,
            ended_at: None,
        }
    }

    /// The value of a query parameter of the upgrade request.
    pub fn query(&self, name: &str) -> Option<String> {
        let (_, query) = self.path_and_query.split_once('?')?;
        query
            .split('&')
            .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }

    /// The path of the upgrade request, without the query.
    pub fn path(&self) -> &str {
        self.path_and_query
            .split_once('?')
            .map_or(self.path_and_query.as_str(), |(p, _)| p)
    }

    /// Seconds of s16le 16 kHz mono audio received.
    pub fn audio_seconds(&self) -> f64 {
        self.audio.len() as f64 / 32_000.0
    }

    /// How long after the TCP accept the handshake completed.
    pub fn handshake_delay(&self) -> Option<Duration> {
        self.handshake_at.map(|h| h - self.accepted_at)
    }
}

struct Shared {
    stop: AtomicBool,
    conns: Mutex<Vec<Conn>>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with<R>(&self, index: usize, f: impl FnOnce(&mut Conn) -> R) -> R {
        let mut conns = self.lock();
        let r = f(&mut conns[index]);
        drop(conns);
        self.changed.notify_all();
        r
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// The scripted server. Dropping it stops the accept loop (the port is
/// closed when `drop` returns) and makes open connections end shortly.
pub struct WsStt {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl WsStt {
    /// Starts the server on 127.0.0.1 (a free port); connection i (0-based)
    /// gets `script[i]`, the last entry repeats.
    pub fn start(script: Vec<Behavior>) -> WsStt {
        assert!(!script.is_empty(), "WsStt::start: empty script");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = listener.local_addr().expect("local_addr");
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("ws-stt-accept".into())
                .spawn(move || accept_loop(listener, script, shared))
                .expect("spawn accept thread")
        };
        WsStt {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `ws://127.0.0.1:PORT/v1/listen`
    pub fn url(&self) -> String {
        format!("ws://{}/v1/listen", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What each connection so far got, in order of arrival (ended or not).
    pub fn connections(&self) -> Vec<Conn> {
        self.shared.lock().clone()
    }

    /// Waits (up to [`WAIT_TIMEOUT`]) until the first `n` connections have
    /// all ended and returns those `n`, in order of arrival. Panics with what
    /// there is on timeout.
    pub fn wait_connections(&self, n: usize) -> Vec<Conn> {
        let deadline = Instant::now() + WAIT_TIMEOUT;
        let mut conns = self.shared.lock();
        loop {
            if conns.len() >= n && conns[..n].iter().all(|c| c.ended) {
                return conns[..n].to_vec();
            }
            let now = Instant::now();
            if now >= deadline {
                panic!(
                    "WsStt: {n} ended connections wanted, after {WAIT_TIMEOUT:?} there are {} \
                     ({} ended): {:#?}",
                    conns.len(),
                    conns.iter().filter(|c| c.ended).count(),
                    *conns
                );
            }
            conns = self
                .shared
                .changed
                .wait_timeout(conns, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for WsStt {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: TcpListener, script: Vec<Behavior>, shared: Arc<Shared>) {
    while !shared.stopped() {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let index;
                let behavior;
                {
                    let mut conns = shared.lock();
                    index = conns.len();
                    behavior = script[index.min(script.len() - 1)].clone();
                    conns.push(Conn::new(index, behavior.clone()));
                }
                shared.changed.notify_all();
                let mine = Arc::clone(&shared);
                let spawned = thread::Builder::new()
                    .name(format!("ws-stt-conn-{index}"))
                    .spawn(move || {
                        let _end = EndGuard {
                            shared: Arc::clone(&mine),
                            index,
                        };
                        serve(stream, behavior, &mine, index);
                    });
                if spawned.is_err() {
                    shared.with(index, |c| {
                        c.ended = true;
                        c.ended_at = Some(Instant::now());
                    });
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(5)),
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Marks the connection ended however its thread leaves (panics included).
struct EndGuard {
    shared: Arc<Shared>,
    index: usize,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.shared.with(self.index, |c| {
            c.ended = true;
            c.ended_at = Some(Instant::now());
        });
    }
}

/// Why a connection loop stops early.
enum Stop {
    /// The client went away, the deadline passed, or the server was dropped.
    Gone,
}

type Ws = WebSocket<TcpStream>;

fn serve(stream: TcpStream, behavior: Behavior, shared: &Arc<Shared>, index: usize) {
    let deadline = Instant::now() + CONN_DEADLINE;
    let mut behavior = behavior;
    while let Behavior::Late(delay, then) = behavior {
        if !sleep(delay, shared) {
            return;
        }
        behavior = *then;
    }
    if let Behavior::Drop = behavior {
        let _ = stream.shutdown(Shutdown::Both);
        return;
    }
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(POLL));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));

    let reject = match &behavior {
        Behavior::Reject(status, body) => Some((*status, body.clone())),
        _ => None,
    };
    let recorder = Arc::clone(shared);
    // The callback's signature is tungstenite's (its ErrorResponse is big).
    #[allow(clippy::result_large_err)]
    let callback = move |request: &Request, response: Response| {
        record_request(&recorder, index, request);
        match reject {
            None => Ok(response),
            Some((status, body)) => Err(error_response(status, body)),
        }
    };
    let mut attempt = tungstenite::accept_hdr(stream, callback);
    let mut ws = loop {
        match attempt {
            Ok(ws) => break ws,
            Err(HandshakeError::Interrupted(mid)) => {
                if shared.stopped() || Instant::now() >= deadline {
                    return;
                }
                attempt = mid.handshake();
            }
            // A rejection lands here too, once the response is written.
            Err(HandshakeError::Failure(_)) => return,
        }
    };
    shared.with(index, |c| {
        c.handshake_done = true;
        c.handshake_at = Some(Instant::now());
    });
    let mut s = Session {
        ws: &mut ws,
        shared,
        index,
        deadline,
        audio_len: 0,
    };
    let _ = s.run(behavior);
}

fn record_request(shared: &Shared, index: usize, request: &Request) {
    let path_and_query = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().to_string(), |p| p.as_str().to_string());
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let authorization = headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    shared.with(index, |c| {
        c.path_and_query = path_and_query;
        c.authorization = authorization;
        c.headers = headers;
    });
}

fn error_response(status: u16, body: String) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(body.clone()));
    *response.status_mut() =
        tungstenite::http::StatusCode::from_u16(status).expect("a valid HTTP status");
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        tungstenite::http::HeaderValue::from_static("text/plain"),
    );
    headers.insert("content-length", body.len().into());
    headers.insert(
        "connection",
        tungstenite::http::HeaderValue::from_static("close"),
    );
    response
}

/// Sleeps `d` in small steps; false if the server was dropped meanwhile.
fn sleep(d: Duration, shared: &Shared) -> bool {
    let end = Instant::now() + d;
    loop {
        if shared.stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        thread::sleep((end - now).min(POLL));
    }
}

fn is_timeout(e: &WsError) -> bool {
    matches!(e, WsError::Io(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut))
}

/// One incoming frame, as the session loop sees it.
enum Got {
    Audio,
    Text,
    CloseStream,
}

struct Session<'a> {
    ws: &'a mut Ws,
    shared: &'a Shared,
    index: usize,
    deadline: Instant,
    audio_len: usize,
}

impl Session<'_> {
    fn run(&mut self, behavior: Behavior) -> Result<(), Stop> {
        match behavior {
            Behavior::Transcribe { words, step_bytes } => {
                let step = step_bytes.max(1);
                let most = words.len().saturating_sub(1);
                let mut interims = 0;
                loop {
                    match self.next()? {
                        Got::Audio => {
                            let due = (self.audio_len / step).min(most);
                            while interims < due {
                                interims += 1;
                                self.send(results(&words[..interims].join(" "), false, false))?;
                            }
                        }
                        Got::Text => {}
                        Got::CloseStream => break,
                    }
                }
                self.send(results(&words.join(" "), true, true))?;
                self.finish()
            }
            Behavior::NoData => {
                while !matches!(self.next()?, Got::CloseStream) {}
                self.finish()
            }
            Behavior::FailAfterText { words, after_bytes } => {
                while self.audio_len < after_bytes {
                    if let Got::CloseStream = self.next()? {
                        break;
                    }
                }
                self.send(results(&words.join(" "), true, false))?;
                let _ = self.ws.get_ref().shutdown(Shutdown::Both);
                Err(Stop::Gone)
            }
            Behavior::Error(description) => {
                self.send(format!(
                    r#"{{"type":"Error","description":{}}}"#,
                    json_str(&description)
                ))?;
                self.close(1011, &description)
            }
            Behavior::Close(code, reason) => self.close(code, &reason),
            Behavior::Drop | Behavior::Reject(..) | Behavior::Late(..) => {
                unreachable!("handled before the handshake")
            }
        }
    }

    /// Metadata, then Close 1000.
    fn finish(&mut self) -> Result<(), Stop> {
        let duration = self.audio_len as f64 / 32_000.0;
        self.send(format!(
            r#"{{"type":"Metadata","request_id":"ws-stt-{}","duration":{duration}}}"#,
            self.index
        ))?;
        self.close(1000, "")
    }

    fn send(&mut self, text: String) -> Result<(), Stop> {
        self.shared.with(self.index, |c| c.sent.push(text.clone()));
        self.ws.send(Message::text(text)).map_err(|_| Stop::Gone)
    }

    /// Sends a Close frame and waits (briefly) for the client's reply.
    fn close(&mut self, code: u16, reason: &str) -> Result<(), Stop> {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: cut(reason, 123).into(),
        };
        self.ws.close(Some(frame)).map_err(|_| Stop::Gone)?;
        self.deadline = self.deadline.min(Instant::now() + CLOSE_DRAIN);
        // Drains until the close handshake completes or the client goes.
        while self.next().is_ok() {}
        Ok(())
    }

    /// The next data frame, recorded. Pings are answered by tungstenite; a
    /// Close from the client is recorded and its reply flushed.
    fn next(&mut self) -> Result<Got, Stop> {
        loop {
            if self.shared.stopped() || Instant::now() >= self.deadline {
                return Err(Stop::Gone);
            }
            match self.ws.read() {
                Ok(Message::Binary(data)) => {
                    self.audio_len += data.len();
                    self.shared.with(self.index, |c| {
                        c.audio_frames.push(data.len());
                        c.audio.extend_from_slice(&data);
                    });
                    return Ok(Got::Audio);
                }
                Ok(Message::Text(text)) => {
                    let text = text.as_str().to_string();
                    let close_stream = is_close_stream(&text);
                    self.shared.with(self.index, |c| {
                        c.texts.push(text);
                        c.closed_stream |= close_stream;
                    });
                    return Ok(if close_stream {
                        Got::CloseStream
                    } else {
                        Got::Text
                    });
                }
                Ok(Message::Close(_)) => {
                    self.shared.with(self.index, |c| c.client_closed = true);
                    // tungstenite queued the reply; reading on flushes it
                    // and ends with ConnectionClosed.
                }
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(_) => return Err(Stop::Gone),
            }
        }
    }
}

fn is_close_stream(text: &str) -> bool {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    squeezed.contains(r#""type":"CloseStream""#)
}

/// A Results message.
pub fn results(transcript: &str, is_final: bool, speech_final: bool) -> String {
    format!(
        r#"{{"type":"Results","is_final":{is_final},"speech_final":{speech_final},"channel":{{"alternatives":[{{"transcript":{},"confidence":0.9}}]}}}}"#,
        json_str(transcript)
    )
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// At most `max` bytes of `s`, cut on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A raw TCP connection to the server, with 10 s read and write timeouts
/// (for driving a handshake by hand).
pub fn connect_tcp(server: &WsStt) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(server.addr())?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    Ok(stream)
}
