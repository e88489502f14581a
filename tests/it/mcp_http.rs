//! Streamable HTTP per the current MCP spec, end to end through `tern`:
//!
//! - a stateless server (no `Mcp-Session-Id`) whose GET stream is answered
//!   404 or 405 offers no stream; it is not a lost session;
//! - a POST's answer stream that ends before the answer is resumed with a
//!   GET carrying `Last-Event-ID`, after the server's `retry`, a bounded
//!   number of times;
//! - a 404 on a POST that carried the session id starts a new session
//!   once, and says so; a second 404 in a row is an error.
//!
//! The server is scripted here (127.0.0.1, one thread per connection, every
//! answer `Connection: close`), so each case is exact; the Python SDK's
//! stateless server (`tests/mcp/fast_server.py`) is the real-world check.
#![cfg(feature = "mcp")]

use crate::support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::{self, Value};
use tern::obj;

/// What the scripted server does.
#[derive(Clone, Default)]
struct Script {
    /// Hands out an `Mcp-Session-Id` at `initialize`; otherwise stateless.
    sessions: bool,
    /// The status of a GET that is not a resumption (404 or 405).
    get_status: u16,
    /// How many times the answer's stream of `slow` ends before it
    /// carries the answer: the POST's, then each resumption's.
    drops: usize,
    /// How many `tools/call` POSTs find the session forgotten (404).
    forget: usize,
    /// Time taken to answer `tools/list`.
    list_delay: Duration,
    /// The `retry` the answer's stream asks for, in milliseconds.
    retry_ms: u64,
}

/// One request the server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: Value,
    at: Instant,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
    fn rpc(&self) -> Option<&str> {
        self.body.str_field("method")
    }
}

#[derive(Default)]
struct State {
    sessions: usize,
    current: Option<String>,
    events: usize,
    drops_done: usize,
    forgotten: usize,
    /// The id of the `slow` call whose answer is owed.
    owed: Option<Value>,
    /// The last event id written on each stream that ended early.
    last_ids: Vec<String>,
}

struct Scripted {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    state: Arc<Mutex<State>>,
}

impl Scripted {
    fn start(script: Script) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = Arc::new(Mutex::new(State::default()));
        let (s, st) = (Arc::clone(&seen), Arc::clone(&state));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (script, s, st) = (script.clone(), Arc::clone(&s), Arc::clone(&st));
                std::thread::spawn(move || serve(conn, &script, &s, &st));
            }
        });
        Scripted { port, seen, state }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self, rpc: &str) -> usize {
        self.seen().iter().filter(|s| s.rpc() == Some(rpc)).count()
    }

    /// The GETs that resumed a stream.
    fn resumptions(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "GET" && s.header("last-event-id").is_some())
            .collect()
    }
}

fn serve(mut conn: TcpStream, script: &Script, seen: &Mutex<Vec<Seen>>, state: &Mutex<State>) {
    let Some((method, headers, body)) = read_request(&conn) else {
        return;
    };
    let body = json::parse(&body).unwrap_or_default();
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        headers: headers.clone(),
        body: body.clone(),
        at: Instant::now(),
    });
    let session = headers.get("mcp-session-id").cloned();
    match method.as_str() {
        "DELETE" => respond(&mut conn, 200, &[], ""),
        "GET" => match headers.get("last-event-id") {
            Some(_) => {
                let mut st = state.lock().unwrap();
                let answer = st.drops_done >= script.drops;
                let id = next_event(&mut st);
                if answer {
                    let owed = st.owed.take().unwrap_or_default();
                    let reply = obj! { "jsonrpc" => "2.0", "id" => owed, "result" => obj! {
                    "content" => vec![obj! { "type" => "text", "text" => "slow done" }] } };
                    drop(st);
                    // The answer, on a stream the server keeps open (as a
                    // GET stream may be): the client must not wait for its end.
                    let events = format!("id: {id}\ndata: {}\n\n", reply.to_json());
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
                    let _ = write!(conn, "{head}{events}");
                    let _ = conn.flush();
                    std::thread::sleep(Duration::from_secs(90));
                } else {
                    st.drops_done += 1;
                    st.last_ids.push(id.clone());
                    drop(st);
                    // Only a cursor, and the stream ends again.
                    stream(&mut conn, &[], &format!("id: {id}\ndata:\n\n"));
                }
            }
            None => respond(&mut conn, script.get_status, &[], ""),
        },
        "POST" => {
            let rpc = body.str_field("method").unwrap_or_default().to_string();
            let id = body.get("id").cloned();
            if rpc == "initialize" {
                let mut extra = Vec::new();
                if script.sessions {
                    let mut st = state.lock().unwrap();
                    st.sessions += 1;
                    let s = format!("session-{}", st.sessions);
                    st.current = Some(s.clone());
                    extra.push(("mcp-session-id".to_string(), s));
                }
                let asked = body
                    .get("params")
                    .and_then(|p| p.str_field("protocolVersion"))
                    .unwrap_or_default();
                let version = if ["2025-11-25", "2025-06-18", "2025-03-26"].contains(&asked) {
                    asked
                } else {
                    "2025-06-18"
                };
                let result = obj! {
                    "protocolVersion" => version,
                    "capabilities" => obj! { "tools" => obj! {} },
                    "serverInfo" => obj! { "name" => "scripted", "version" => "1" },
                };
                return json_reply(&mut conn, &extra, id, result);
            }
            if script.sessions {
                let current = state.lock().unwrap().current.clone();
                if session.is_none() || session != current {
                    return respond(&mut conn, 404, &[], "no such session");
                }
            }
            let Some(id) = id else {
                return respond(&mut conn, 202, &[], "");
            };
            match rpc.as_str() {
                "tools/list" => {
                    std::thread::sleep(script.list_delay);
                    let tool = |name: &str| {
                        obj! { "name" => name, "description" => name,
                        "inputSchema" => obj! { "type" => "object" } }
                    };
                    let result = obj! { "tools" => vec![tool("slow"), tool("echo")] };
                    json_reply(&mut conn, &[], Some(id), result);
                }
                "tools/call" => {
                    if script.sessions {
                        let mut st = state.lock().unwrap();
                        if st.forgotten < script.forget {
                            st.forgotten += 1;
                            st.current = None;
                            drop(st);
                            return respond(&mut conn, 404, &[], "session expired");
                        }
                    }
                    let name = body
                        .get("params")
                        .and_then(|p| p.str_field("name"))
                        .unwrap_or_default();
                    if name == "slow" {
                        let mut st = state.lock().unwrap();
                        st.owed = Some(id);
                        // A priming event, a log message, and the stream
                        // ends before the answer.
                        let first = next_event(&mut st);
                        let second = next_event(&mut st);
                        st.drops_done += 1;
                        st.last_ids.push(second.clone());
                        drop(st);
                        let log = obj! { "jsonrpc" => "2.0", "method" => "notifications/message",
                        "params" => obj! { "level" => "info", "data" => "working" } };
                        let events = format!(
                            "retry: {}\nid: {first}\ndata:\n\nid: {second}\ndata: {}\n\n",
                            script.retry_ms,
                            log.to_json()
                        );
                        stream(&mut conn, &[], &events);
                    } else {
                        let result = obj! { "content" => vec![obj! {
                        "type" => "text", "text" => "echo: hi" }] };
                        json_reply(&mut conn, &[], Some(id), result);
                    }
                }
                _ => {
                    let reply = obj! { "jsonrpc" => "2.0", "id" => id,
                    "error" => obj! { "code" => -32601i64, "message" => "no such method" } };
                    respond(&mut conn, 200, &[], &reply.to_json());
                }
            }
        }
        _ => respond(&mut conn, 405, &[], ""),
    }
}

fn next_event(st: &mut State) -> String {
    st.events += 1;
    format!("ev-{}", st.events)
}

/// The request line's method, the headers (names lower-cased) and the body.
fn read_request(conn: &TcpStream) -> Option<(String, HashMap<String, String>, String)> {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let method = line.split(' ').next()?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some((method, headers, String::from_utf8_lossy(&body).into_owned()))
}

fn respond(conn: &mut TcpStream, status: u16, extra: &[(String, String)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let _ = write!(conn, "{head}\r\n{body}");
}

fn json_reply(conn: &mut TcpStream, extra: &[(String, String)], id: Option<Value>, result: Value) {
    let reply = obj! { "jsonrpc" => "2.0", "id" => id.unwrap_or_default(), "result" => result };
    respond(conn, 200, extra, &reply.to_json());
}

/// An event stream that ends (the connection closes) after `events`.
fn stream(conn: &mut TcpStream, extra: &[(String, String)], events: &str) {
    let mut head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n".to_string();
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let _ = write!(conn, "{head}\r\n{events}");
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

fn config(url: &str) -> String {
    obj! { "mcpServers" => obj! { "s" => obj! { "type" => "http", "url" => url } } }.to_json()
}

/// `tern mcp list` for the one server: what it printed.
fn listed(dir: &Path, mcp: &str) -> String {
    let out = run(tern("http://127.0.0.1:9", dir).args(["mcp", "list", "--mcp-config", mcp]));
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `tern -p` whose model calls `tool` once, then ends: the output, and
/// the text of the tool's result as the model got it.
fn call(dir: &Path, mcp: &str, tool: &str) -> (Output, String) {
    call_with(dir, mcp, tool, &[])
}

fn call_with(dir: &Path, mcp: &str, tool: &str, env: &[(&str, &str)]) -> (Output, String) {
    let api = StandIn::start(vec![
        standin::tools_reply(&[("t1", tool, "{}")]),
        standin::text_reply("done"),
    ]);
    let mut cmd = tern(&api.url, dir);
    cmd.envs(env.iter().copied());
    let out = run(cmd.args([
        "-p",
        "call it",
        "--mcp-config",
        mcp,
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    let reqs = api.requests();
    let result = reqs
        .get(1)
        .map(|r| {
            tool_results(r)
                .iter()
                .map(Value::to_json)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    (out, result)
}

fn said(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_server_that_offers_no_get_stream_is_not_a_lost_session() {
    // Stateless with 404 and with 405, and a session whose GET is 404:
    // each means only that the server offers no stream. tools/list is
    // answered late, so a GET taken for a lost session would fail it.
    for (sessions, get_status) in [(false, 404), (false, 405), (true, 404)] {
        let dir = scratch(&format!("mcp-http-noget-{sessions}-{get_status}"));
        let srv = Scripted::start(Script {
            sessions,
            get_status,
            list_delay: Duration::from_millis(400),
            ..Script::default()
        });
        let mcp = config(&srv.url());
        let list = listed(&dir, &mcp);
        assert!(
            list.contains("connected") && !list.contains("failed"),
            "sessions {sessions}, GET {get_status}: {list}"
        );
        let (out, result) = call(&dir, &mcp, "mcp__s__echo");
        assert_ok(&out);
        assert!(
            result.contains("echo: hi"),
            "sessions {sessions}, GET {get_status}: {result}\n{}",
            said(&out)
        );
        assert!(!said(&out).contains("ended the session"), "{}", said(&out));
        // One initialize per tern run: the server was never dropped.
        assert_eq!(srv.count("initialize"), 2, "{}", said(&out));
    }
}

#[test]
fn an_answer_stream_that_ends_early_is_resumed_with_the_last_event_id() {
    let dir = scratch("mcp-http-resume");
    // The POST's stream ends after two events, the first resumption's
    // after one more; the second resumption carries the answer.
    let srv = Scripted::start(Script {
        sessions: true,
        get_status: 405,
        drops: 2,
        retry_ms: 300,
        ..Script::default()
    });
    let mcp = config(&srv.url());
    let (out, result) = call(&dir, &mcp, "mcp__s__slow");
    assert_ok(&out);
    assert!(result.contains("slow done"), "{result}\n{}", said(&out));
    let resumed = srv.resumptions();
    let last_ids = srv.state.lock().unwrap().last_ids.clone();
    assert_eq!(resumed.len(), 2, "{resumed:?}");
    for (get, last) in resumed.iter().zip(&last_ids) {
        // The last id of the stream that ended, and the session.
        assert_eq!(get.header("last-event-id"), Some(last.as_str()));
        assert_eq!(get.header("mcp-session-id"), Some("session-1"));
    }
    // Each after the server's retry (300 ms) from the end before it.
    let seen = srv.seen();
    let call_at = seen
        .iter()
        .find(|s| s.rpc() == Some("tools/call"))
        .unwrap()
        .at;
    assert!(resumed[0].at - call_at >= Duration::from_millis(250));
    assert!(resumed[1].at - resumed[0].at >= Duration::from_millis(250));
}

#[test]
fn an_answer_stream_that_keeps_ending_fails_after_three_resumptions() {
    let dir = scratch("mcp-http-resume-fails");
    let srv = Scripted::start(Script {
        sessions: false,
        get_status: 404,
        drops: 100,
        retry_ms: 50,
        ..Script::default()
    });
    let mcp = config(&srv.url());
    let (out, result) = call(&dir, &mcp, "mcp__s__slow");
    assert_ok(&out);
    assert!(
        result.contains("resumed 3 times") && !result.contains("slow done"),
        "{result}\n{}",
        said(&out)
    );
    let resumed = srv.resumptions();
    assert_eq!(resumed.len(), 3, "{resumed:?}");
    // No session was issued, and none is claimed.
    assert!(resumed.iter().all(|g| g.header("mcp-session-id").is_none()));
}

#[test]
fn a_session_the_server_ended_is_started_again_once() {
    let dir = scratch("mcp-http-new-session");
    let srv = Scripted::start(Script {
        sessions: true,
        get_status: 405,
        forget: 1,
        ..Script::default()
    });
    let mcp = config(&srv.url());
    let (out, result) = call_with(
        &dir,
        &mcp,
        "mcp__s__echo",
        &[("TERN_MCP_ELICITATION", "accept-defaults")],
    );
    assert_ok(&out);
    assert!(result.contains("echo: hi"), "{result}\n{}", said(&out));
    assert!(
        said(&out).contains("started a new session"),
        "no notice: {}",
        said(&out)
    );
    // initialize again, then the call again, with the new session.
    let seen = srv.seen();
    let calls: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.rpc() == Some("tools/call"))
        .collect();
    assert_eq!(srv.count("initialize"), 2);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].header("mcp-session-id"), Some("session-1"));
    assert_eq!(calls[1].header("mcp-session-id"), Some("session-2"));
    let reinit = seen
        .iter()
        .filter(|s| s.rpc() == Some("initialize"))
        .nth(1)
        .unwrap();
    assert!(reinit.header("mcp-session-id").is_none());
    // The new session is offered what the first was (elicitation here):
    // it offered roots only, and the server's forms were refused.
    let offered = |s: &Seen| {
        s.body
            .get("params")
            .and_then(|p| p.get("capabilities"))
            .map(Value::to_json)
            .unwrap_or_default()
    };
    let first = seen.iter().find(|s| s.rpc() == Some("initialize")).unwrap();
    assert!(offered(first).contains("elicitation"), "{}", offered(first));
    assert_eq!(offered(reinit), offered(first));

    // A second 404 in a row: an error, and no third session.
    let dir = scratch("mcp-http-new-session-again");
    let srv = Scripted::start(Script {
        sessions: true,
        get_status: 405,
        forget: 100,
        ..Script::default()
    });
    let (out, result) = call(&dir, &config(&srv.url()), "mcp__s__echo");
    assert_ok(&out);
    assert!(
        result.contains("404") && !result.contains("echo: hi"),
        "{result}\n{}",
        said(&out)
    );
    assert_eq!(srv.count("initialize"), 2, "{}", said(&out));
    assert_eq!(srv.count("tools/call"), 2, "{}", said(&out));
}

/// Where `ci/mcp.sh` put the Python SDK; `None` (said) when missing.
fn python_sdk(test: &str) -> Option<PathBuf> {
    mcp_servers_dir(test, &["venv/bin/python"])
}

/// The Python SDK's server in `transport` mode, killed when dropped.
struct Fast {
    child: Child,
    port: u16,
}

impl Drop for Fast {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fast(servers: &Path, transport: &str, dir: &Path) -> Fast {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fast_server.py");
    let port_file = dir.join(format!("{transport}.port"));
    let mut child = Command::new(servers.join("venv/bin/python"))
        .arg(script)
        .arg(transport)
        .arg(&port_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Python SDK server");
    let began = Instant::now();
    loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return Fast { child, port };
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the Python SDK server ({transport}) exited: {status}");
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "it did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_python_sdk_stateless_server_with_event_streams_and_with_json() {
    let Some(servers) = python_sdk("MCP Python SDK stateless server") else {
        return;
    };
    for transport in ["http-stateless", "http-stateless-json"] {
        let dir = scratch(&format!("mcp-http-{transport}"));
        let srv = fast(&servers, transport, &dir);
        let mcp = config(&format!("http://127.0.0.1:{}/mcp", srv.port));
        let list = listed(&dir, &mcp);
        assert!(list.contains("connected"), "{transport}: {list}");
        let api = StandIn::start(vec![
            standin::tools_reply(&[("t1", "mcp__s__add", r#"{"a":2,"b":40}"#)]),
            standin::text_reply("done"),
        ]);
        let out = run(tern(&api.url, &dir).args([
            "-p",
            "add",
            "--mcp-config",
            &mcp,
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert_ok(&out);
        let reqs = api.requests();
        let result = tool_results(&reqs[1])
            .iter()
            .map(Value::to_json)
            .collect::<String>();
        assert!(result.contains("42"), "{transport}: {result}");
    }
}
