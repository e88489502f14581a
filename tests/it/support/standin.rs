//! A scripted stand-in for the Anthropic Messages API, for tests and
//! benchmarks. It listens on 127.0.0.1, answers each POST with the next
//! scripted reply in the exact wire format (chunked SSE with the real event
//! names, `input_json_delta` split at arbitrary points, JSON error bodies,
//! `retry-after`), can cut a stream anywhere, and records every request and
//! a timestamped log for assertions.
//!
//! A POST to `/v1/chat/completions` gets the same script in the
//! OpenAI-compatible format instead: each Messages API event becomes the
//! chat completion chunk a server like llama.cpp would send, so one script
//! exercises both wire formats.

#![allow(dead_code)]

#[path = "responses.rs"]
mod responses;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One step of a streamed reply.
#[derive(Clone, Debug)]
pub enum Step {
    /// A complete SSE event: `event: name` + `data: json`.
    Event(String, String),
    /// Raw bytes, written as they are (comments, odd framing).
    Raw(Vec<u8>),
    /// Hold the stream until this file exists (or give up after the timeout),
    /// logging which happened.
    WaitForFile(PathBuf, Duration),
    /// Pause before the next step.
    Sleep(Duration),
    /// Close the connection here, mid-stream, without the final chunk.
    Cut,
}

#[derive(Clone, Debug)]
pub enum Reply {
    Stream(Vec<Step>),
    Error {
        status: u16,
        retry_after: Option<String>,
        body: String,
    },
}

/// How the bytes of a stream are cut into writes.
#[derive(Clone, Copy, Debug)]
pub enum Split {
    /// One write per event.
    PerEvent,
    /// Writes of random sizes in 1..=max, from a seed.
    Random { seed: u64, max: usize },
}

#[derive(Clone, Debug)]
pub struct Request {
    pub at: Duration,
    pub path: String,
    /// The CONNECT target when the request came through a proxy tunnel.
    pub tunnel: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The body, cut to the stand-in's body limit when one is set.
    pub body: String,
    /// The body's full length in bytes.
    pub body_len: usize,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub type Responder = Box<dyn Fn(&Request) -> Option<Reply> + Send>;

#[derive(Default)]
struct State {
    replies: std::collections::VecDeque<Reply>,
    /// Served when the script is used up (for benchmarks and manual runs).
    fallback: Option<Reply>,
    /// Asked first about every request; a reply from it does not use up
    /// the script (answers compaction requests, say).
    responder: Option<Responder>,
    /// Keep at most this many bytes of each body (benchmarks: a process
    /// that holds hundreds of large bodies inflates the peak RSS that a
    /// child forked from it reports).
    body_limit: Option<usize>,
    /// Answer `GET /props` with this context size, like llama-server.
    n_ctx: Option<u64>,
    /// Scripted answers to GET paths (posing as a kind of local server).
    gets: Vec<(String, u16, String)>,
    requests: Vec<Request>,
    log: Vec<(Duration, String)>,
}

pub struct StandIn {
    pub url: String,
    state: Arc<Mutex<State>>,
    started: Instant,
    split: Arc<Mutex<Split>>,
}

/// Test TLS material: a server certificate for localhost/127.0.0.1 signed
/// by tests/fixtures/tls/ca.pem.
pub fn tls_config() -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(include_bytes!("../../fixtures/tls/server.pem"))
            .collect::<Result<_, _>>()
            .expect("server.pem");
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("../../fixtures/tls/server.key"))
        .expect("server.key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server certificate");
    Arc::new(config)
}

impl StandIn {
    pub fn start(replies: Vec<Reply>) -> StandIn {
        Self::start_on("127.0.0.1:0", replies)
    }

    pub fn start_on(addr: &str, replies: Vec<Reply>) -> StandIn {
        Self::listen(addr, replies, None)
    }

    /// The same over HTTPS, with the test certificate.
    pub fn start_tls(replies: Vec<Reply>) -> StandIn {
        Self::listen("127.0.0.1:0", replies, Some(tls_config()))
    }

    fn listen(addr: &str, replies: Vec<Reply>, tls: Option<Arc<rustls::ServerConfig>>) -> StandIn {
        let listener = TcpListener::bind(addr).expect("bind the stand-in address");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            ..State::default()
        }));
        let started = Instant::now();
        let split = Arc::new(Mutex::new(Split::Random { seed: 7, max: 48 }));
        let (st, sp) = (Arc::clone(&state), Arc::clone(&split));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                note(&st, started, "connection".into());
                let (st, sp, tls) = (Arc::clone(&st), Arc::clone(&sp), tls.clone());
                std::thread::spawn(move || {
                    let _ = match tls {
                        None => serve(conn, &st, started, &sp),
                        Some(config) => match rustls::ServerConnection::new(config) {
                            Ok(session) => {
                                serve(rustls::StreamOwned::new(session, conn), &st, started, &sp)
                            }
                            Err(_) => Ok(()),
                        },
                    };
                });
            }
        });
        StandIn {
            url,
            state,
            started,
            split,
        }
    }

    pub fn set_split(&self, split: Split) {
        *self.split.lock().unwrap() = split;
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// `requests()` for another thread.
    pub fn clone_requests_handle(&self) -> impl Fn() -> Vec<Request> + Send + 'static {
        let state = Arc::clone(&self.state);
        move || state.lock().unwrap().requests.clone()
    }

    pub fn log(&self) -> Vec<(Duration, String)> {
        self.state.lock().unwrap().log.clone()
    }

    /// How many connections were accepted (TLS handshakes included).
    pub fn connections(&self) -> usize {
        self.log().iter().filter(|(_, l)| l == "connection").count()
    }

    /// Answer with `reply` whenever the script has run out.
    pub fn set_fallback(&self, reply: Reply) {
        self.state.lock().unwrap().fallback = Some(reply);
    }

    /// Answers `GET path` with `status` and `body` (raw, usually JSON).
    pub fn set_get(&self, path: &str, status: u16, body: &str) {
        let mut st = self.state.lock().unwrap();
        st.gets.retain(|(p, _, _)| p != path);
        st.gets.push((path.to_string(), status, body.to_string()));
    }

    pub fn set_n_ctx(&self, n_ctx: u64) {
        self.state.lock().unwrap().n_ctx = Some(n_ctx);
    }

    pub fn set_body_limit(&self, limit: usize) {
        self.state.lock().unwrap().body_limit = Some(limit);
    }

    pub fn set_responder(&self, responder: Responder) {
        self.state.lock().unwrap().responder = Some(responder);
    }

    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().replies.push_back(reply);
    }
}

fn note(state: &Mutex<State>, started: Instant, what: String) {
    state.lock().unwrap().log.push((started.elapsed(), what));
}

fn serve<S: Read + Write>(
    conn: S,
    state: &Mutex<State>,
    started: Instant,
    split: &Mutex<Split>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn);
    let (mut method, mut path, mut headers) = read_head(&mut reader)?;
    // Acting as a proxy: accept the tunnel, then serve what comes through it.
    let mut tunnel = None;
    if method == "CONNECT" {
        note(state, started, format!("CONNECT {path}"));
        reader
            .get_mut()
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        tunnel = Some(path);
        (method, path, headers) = read_head(&mut reader)?;
    }
    if method == "GET" {
        // Servers are asked about themselves (llama.cpp's /props) before
        // the conversation; such lookups are logged, not recorded as requests.
        let (n_ctx, scripted) = {
            let st = state.lock().unwrap();
            let scripted = st
                .gets
                .iter()
                .find(|(p, _, _)| *p == path)
                .map(|(_, status, body)| (*status, body.clone()));
            (st.n_ctx, scripted)
        };
        note(state, started, format!("GET {path}"));
        let mut conn = reader.into_inner();
        let (status, body) = match (path.as_str(), n_ctx) {
            _ if scripted.is_some() => scripted.unwrap(),
            ("/props", Some(n)) => (
                200,
                format!(r#"{{"default_generation_settings":{{"n_ctx":{n}}},"total_slots":1}}"#),
            ),
            _ => (404, error_json("not_found_error", "no such path")),
        };
        conn.write_all(
            format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                reason(status),
                body.len()
            )
            .as_bytes(),
        )?;
        return Ok(());
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    // Nothing more is read from a connection: write through the stream.
    let mut conn = reader.into_inner();
    let reply = {
        let mut st = state.lock().unwrap();
        let n = st.requests.len() + 1;
        let mut request = Request {
            at: started.elapsed(),
            path: path.clone(),
            tunnel,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
            body_len: body.len(),
        };
        drop(body);
        let special = st.responder.as_ref().and_then(|r| r(&request));
        if let Some(limit) = st.body_limit {
            let mut cut = limit.min(request.body.len());
            while !request.body.is_char_boundary(cut) {
                cut -= 1;
            }
            request.body.truncate(cut);
            request.body.shrink_to_fit();
        }
        st.requests.push(request);
        st.log.push((started.elapsed(), format!("request {n}")));
        special
            .or_else(|| st.replies.pop_front())
            .or_else(|| st.fallback.clone())
    };
    let reply = reply.unwrap_or(Reply::Error {
        status: 500,
        retry_after: None,
        body: error_json("api_error", "stand-in: no scripted reply left"),
    });
    match reply {
        Reply::Error {
            status,
            retry_after,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\nrequest-id: req_standin\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            );
            if let Some(r) = retry_after {
                head.push_str(&format!("retry-after: {r}\r\n"));
            }
            head.push_str("\r\n");
            conn.write_all(head.as_bytes())?;
            conn.write_all(body.as_bytes())?;
            note(state, started, format!("error {status} sent"));
        }
        Reply::Stream(steps) => {
            let steps = if path.ends_with("/chat/completions") {
                to_chat_completions(steps)
            } else if path.ends_with("/responses") {
                responses::to_responses(steps)
            } else {
                steps
            };
            conn.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            )?;
            let split = *split.lock().unwrap();
            let mut rng = match split {
                Split::Random { seed, .. } => seed,
                Split::PerEvent => 0,
            };
            let mut write = |conn: &mut S, bytes: &[u8]| -> std::io::Result<()> {
                match split {
                    Split::PerEvent => chunk(conn, bytes),
                    Split::Random { max, .. } => {
                        let mut rest = bytes;
                        while !rest.is_empty() {
                            rng = rng
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            let n = 1 + (rng >> 33) as usize % max.max(1);
                            let (now, later) = rest.split_at(n.min(rest.len()));
                            chunk(conn, now)?;
                            rest = later;
                        }
                        Ok(())
                    }
                }
            };
            for step in steps {
                match step {
                    Step::Event(name, data) => {
                        write(
                            &mut conn,
                            format!("event: {name}\ndata: {data}\n\n").as_bytes(),
                        )?;
                        note(state, started, format!("sent {name}"));
                    }
                    Step::Raw(bytes) => write(&mut conn, &bytes)?,
                    Step::Sleep(d) => std::thread::sleep(d),
                    Step::WaitForFile(path, timeout) => {
                        let began = Instant::now();
                        while !path.exists() && began.elapsed() < timeout {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        let what = if path.exists() {
                            "found"
                        } else {
                            "timed out waiting for"
                        };
                        note(state, started, format!("{what} {}", path.display()));
                    }
                    Step::Cut => {
                        // Dropping the stream closes the connection mid-body.
                        note(state, started, "cut".into());
                        return conn.flush();
                    }
                }
            }
            conn.write_all(b"0\r\n\r\n")?;
        }
    }
    conn.flush()
}

type Head = (String, String, Vec<(String, String)>);

fn read_head<S: Read>(reader: &mut BufReader<S>) -> std::io::Result<Head> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let path = words.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok((method, path, headers))
}

fn chunk<S: Write>(conn: &mut S, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    conn.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
    conn.write_all(bytes)?;
    conn.write_all(b"\r\n")?;
    conn.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Site Overloaded",
        _ => "Error",
    }
}

// ------------------------------------------------ chat completions format

/// The same reply as OpenAI-style `data:` chunks.
fn to_chat_completions(steps: Vec<Step>) -> Vec<Step> {
    use tern::json::{self, Value};
    let chunk = |delta: String, finish: &str| {
        Step::Raw(
            format!(
                "data: {{\"id\":\"chatcmpl-standin\",\"object\":\"chat.completion.chunk\",\"model\":\"standin\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
            )
            .into_bytes(),
        )
    };
    // Messages API block index -> tool call slot.
    let mut slots: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut output_tokens = 0;
    for step in steps {
        let Step::Event(name, data) = step else {
            out.push(step);
            continue;
        };
        let v = json::parse(&data).unwrap_or(Value::Null);
        let index = v.get("index").and_then(Value::as_i64).unwrap_or(0) as usize;
        let slot = |slots: &Vec<usize>| slots.iter().position(|&i| i == index).unwrap_or(0);
        match name.as_str() {
            "message_start" => {
                out.push(chunk(r#"{"role":"assistant","content":""}"#.into(), "null"))
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                if block.str_field("type") == Some("tool_use") {
                    slots.push(index);
                    out.push(chunk(
                        format!(
                            r#"{{"tool_calls":[{{"index":{},"id":"{}","type":"function","function":{{"name":"{}","arguments":""}}}}]}}"#,
                            slots.len() - 1,
                            block.str_field("id").unwrap_or_default(),
                            block.str_field("name").unwrap_or_default()
                        ),
                        "null",
                    ));
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                if let Some(text) = delta.str_field("text") {
                    out.push(chunk(
                        format!(r#"{{"content":{}}}"#, Value::from(text).to_json()),
                        "null",
                    ));
                }
                // Thinking streams as llama.cpp's reasoning_content; its
                // signature has no chat completions form.
                if let Some(thinking) = delta.str_field("thinking") {
                    out.push(chunk(
                        format!(
                            r#"{{"reasoning_content":{}}}"#,
                            Value::from(thinking).to_json()
                        ),
                        "null",
                    ));
                }
                if let Some(part) = delta.str_field("partial_json") {
                    out.push(chunk(
                        format!(
                            r#"{{"tool_calls":[{{"index":{},"function":{{"arguments":{}}}}}]}}"#,
                            slot(&slots),
                            Value::from(part).to_json()
                        ),
                        "null",
                    ));
                }
            }
            "message_delta" => {
                output_tokens = v
                    .get("usage")
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let finish = match v.get("delta").and_then(|d| d.str_field("stop_reason")) {
                    Some("tool_use") => "\"tool_calls\"",
                    Some("max_tokens") => "\"length\"",
                    _ => "\"stop\"",
                };
                out.push(chunk("{}".into(), finish));
            }
            "message_stop" => {
                out.push(Step::Raw(
                    format!(
                        "data: {{\"id\":\"chatcmpl-standin\",\"choices\":[],\"usage\":{{\"prompt_tokens\":100,\"completion_tokens\":{output_tokens},\"total_tokens\":{}}}}}\n\n",
                        100 + output_tokens
                    )
                    .into_bytes(),
                ));
                out.push(Step::Raw(b"data: [DONE]\n\n".to_vec()));
            }
            "error" => {
                let err = v.get("error").cloned().unwrap_or(Value::Null);
                out.push(Step::Raw(
                    format!("data: {{\"error\":{}}}\n\n", err.to_json()).into_bytes(),
                ));
            }
            _ => {} // ping, content_block_stop: no counterpart
        }
    }
    out
}

// ------------------------------------------------------------- builders

pub fn error_json(kind: &str, message: &str) -> String {
    format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"{message}"}}}}"#)
}

fn esc(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

pub fn ev(name: &str, data: String) -> Step {
    Step::Event(name.to_string(), data)
}

pub fn message_start(id: &str) -> Step {
    ev(
        "message_start",
        format!(
            r#"{{"type":"message_start","message":{{"id":"{id}","type":"message","role":"assistant","model":"claude-standin","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}}}}"#
        ),
    )
}

pub fn text_block(index: usize, text: &str) -> Vec<Step> {
    let mut steps = vec![ev(
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
        ),
    )];
    // Two deltas so the assembly of text is exercised too.
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    for part in [&text[..mid], &text[mid..]] {
        if !part.is_empty() {
            steps.push(ev(
                "content_block_delta",
                format!(
                    r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{}"}}}}"#,
                    esc(part)
                ),
            ));
        }
    }
    steps.push(block_stop(index));
    steps
}

/// A thinking block as the Messages API streams it: its text in two
/// deltas, then its signature.
pub fn thinking_block(index: usize, thinking: &str, signature: &str) -> Vec<Step> {
    let mid = thinking
        .char_indices()
        .nth(thinking.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let mut steps = vec![ev(
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"thinking","thinking":""}}}}"#
        ),
    )];
    for part in [&thinking[..mid], &thinking[mid..]] {
        steps.push(ev(
            "content_block_delta",
            format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"thinking_delta","thinking":"{}"}}}}"#,
                esc(part)
            ),
        ));
    }
    steps.push(ev(
        "content_block_delta",
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"signature_delta","signature":"{}"}}}}"#,
            esc(signature)
        ),
    ));
    steps.push(block_stop(index));
    steps
}

pub fn tool_start(index: usize, id: &str, name: &str) -> Step {
    ev(
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}}}"#
        ),
    )
}

pub fn json_delta(index: usize, fragment: &str) -> Step {
    ev(
        "content_block_delta",
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":"{}"}}}}"#,
            esc(fragment)
        ),
    )
}

pub fn block_stop(index: usize) -> Step {
    ev(
        "content_block_stop",
        format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
    )
}

/// A tool_use block whose input JSON arrives in fragments cut at
/// pseudo-random points (including inside strings and escapes).
pub fn tool_block(index: usize, id: &str, name: &str, input_json: &str, seed: u64) -> Vec<Step> {
    let mut steps = vec![tool_start(index, id, name)];
    let chars: Vec<char> = input_json.chars().collect();
    let mut rng = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut at = 0;
    while at < chars.len() {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = 1 + (rng >> 33) as usize % 7;
        let end = (at + n).min(chars.len());
        steps.push(json_delta(
            index,
            &chars[at..end].iter().collect::<String>(),
        ));
        at = end;
    }
    steps.push(block_stop(index));
    steps
}

pub fn message_end(stop_reason: &str, output_tokens: u32) -> Vec<Step> {
    vec![
        ev(
            "message_delta",
            format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop_reason}","stop_sequence":null}},"usage":{{"output_tokens":{output_tokens}}}}}"#
            ),
        ),
        ev("message_stop", r#"{"type":"message_stop"}"#.to_string()),
    ]
}

/// A whole reply that only says `text`.
pub fn text_reply(text: &str) -> Reply {
    let mut steps = vec![
        message_start("msg_text"),
        ev("ping", r#"{"type": "ping"}"#.into()),
    ];
    steps.extend(text_block(0, text));
    steps.extend(message_end("end_turn", 12));
    Reply::Stream(steps)
}

/// A reply asking for these tool calls: (id, name, input JSON).
pub fn tools_reply(calls: &[(&str, &str, &str)]) -> Reply {
    let mut steps = vec![message_start("msg_tools")];
    steps.extend(text_block(0, "Working on it."));
    for (i, (id, name, input)) in calls.iter().enumerate() {
        steps.extend(tool_block(i + 1, id, name, input, i as u64 + 1));
    }
    steps.extend(message_end("tool_use", 40));
    Reply::Stream(steps)
}

// ------------------------------------------------------- server tools

/// The Messages API's own web search, as it streams: a `server_tool_use`
/// block (`input` empty at the start, the query in `input_json_delta`
/// pieces), then a `web_search_tool_result` block that arrives whole in
/// its `content_block_start`. Results are (url, title); each gets an
/// `encrypted_content` and a `page_age` as the API sends them.
pub fn web_search_blocks(
    index: usize,
    id: &str,
    query: &str,
    results: &[(&str, &str)],
) -> Vec<Step> {
    let mut steps = vec![ev(
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"server_tool_use","id":"{id}","name":"web_search","input":{{}}}}}}"#
        ),
    )];
    let input = format!(r#"{{"query": "{}"}}"#, esc(query));
    let mid = input.len() / 2;
    steps.push(json_delta(index, &input[..mid]));
    steps.push(json_delta(index, &input[mid..]));
    steps.push(block_stop(index));
    steps.push(ev(
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{},"content_block":{{"type":"web_search_tool_result","tool_use_id":"{id}","content":[{}]}}}}"#,
            index + 1,
            web_search_results(results)
        ),
    ));
    steps.push(block_stop(index + 1));
    steps
}

/// The `content` array of a `web_search_tool_result`, as JSON.
pub fn web_search_results(results: &[(&str, &str)]) -> String {
    results
        .iter()
        .enumerate()
        .map(|(i, (url, title))| {
            format!(
                r#"{{"type":"web_search_result","title":"{}","url":"{}","encrypted_content":"EqgfCioIARgBIiQ3YTAwMjY1Mi1jZjRiLTQ{i}","page_age":"April 30, 2025"}}"#,
                esc(title),
                esc(url)
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A text block citing a search result, with a `citations_delta`.
pub fn cited_text_block(index: usize, text: &str, url: &str, title: &str) -> Vec<Step> {
    vec![
        ev(
            "content_block_start",
            format!(
                r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
            ),
        ),
        ev(
            "content_block_delta",
            format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"citations_delta","citation":{{"type":"web_search_result_location","cited_text":"{}","url":"{}","title":"{}","encrypted_index":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"}}}}}}"#,
                esc(text),
                esc(url),
                esc(title)
            ),
        ),
        ev(
            "content_block_delta",
            format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{}"}}}}"#,
                esc(text)
            ),
        ),
        block_stop(index),
    ]
}

/// The end of a message that used the server's search `searches` times.
pub fn message_end_with_searches(stop_reason: &str, searches: u32) -> Vec<Step> {
    vec![
        ev(
            "message_delta",
            format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop_reason}","stop_sequence":null}},"usage":{{"output_tokens":60,"server_tool_use":{{"web_search_requests":{searches}}}}}}}"#
            ),
        ),
        ev("message_stop", r#"{"type":"message_stop"}"#.to_string()),
    ]
}

/// A text answer that streams `first`, waits `pause`, then streams `rest`.
pub fn slow_text(first: &str, pause: Duration, rest: &str) -> Reply {
    let delta = |t: &str| {
        ev(
            "content_block_delta",
            format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#
            ),
        )
    };
    let mut steps = vec![message_start("msg_slow")];
    steps.push(ev(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
            .into(),
    ));
    steps.push(delta(first));
    steps.push(Step::Sleep(pause));
    steps.push(delta(rest));
    steps.push(block_stop(0));
    steps.extend(message_end("end_turn", 20));
    Reply::Stream(steps)
}
