//! The two HTTP transports of a remote server.
//!
//! - **Streamable HTTP**: a POST per message, answered with JSON or with
//!   an event stream whose messages are handled as they arrive; an answer's
//!   stream that ends before the answer is resumed with a GET carrying
//!   `Last-Event-ID`, after the server's `retry`, at most `RESUMES` times.
//!   After `initialize`, a GET stream for what the server sends unasked
//!   (`list_changed`, progress, logging), resumed the same way when it
//!   drops; a GET answered 404 or 405 means the server offers none (a
//!   stateless server has no session to lose). A 404 on a POST that
//!   carried the session id means the server ended the session: a new one
//!   is started once, and the message sent again.
//! - **HTTP+SSE** (the 2024-11-05 transport): one GET stream carries every
//!   message from the server; its first event names the endpoint that
//!   takes the client's POSTs. Chosen by `"type": "sse"`, or when a
//!   streamable-HTTP `initialize` is answered 400, 404 or 405. The stream
//!   is the session: when it ends, the hub connects again.
//!
//! With OAuth, every request carries the bearer token; what a 401 or 403
//! leads to (renewal, a new token, a step-up of scope) is in `auth`.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::Duration;

use smol::LocalExecutor;
use smol::future::FutureExt;

use super::error::McpError;
use super::rpc::Connection;
use super::wire::{self, Failure, Head, Piece, Request};
use crate::json::{self, Value};
use crate::obj;
use crate::policy::url;

mod auth;
pub(super) use auth::Auth;

/// How many times an answer's stream that ends early is resumed.
const RESUMES: u32 = 3;
/// The wait before resuming when the server asks for none, and the
/// longest wait whatever it asks (a `retry` of an hour is not honoured).
const RETRY_DEFAULT: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The wait before resuming a stream, from the server's `retry`.
fn retry_delay(retry_ms: Option<u64>) -> Duration {
    retry_ms
        .map_or(RETRY_DEFAULT, Duration::from_millis)
        .min(RETRY_MAX)
}

/// Where a stream resumes: its last event id and the server's `retry`.
#[derive(Default)]
struct Cursor {
    last_id: String,
    retry_ms: Option<u64>,
}

impl Cursor {
    fn event(&mut self, id: &str) {
        if !id.is_empty() {
            id.clone_into(&mut self.last_id);
        }
    }

    fn end(&mut self, last_id: &str, retry_ms: Option<u64>) {
        self.event(last_id);
        if retry_ms.is_some() {
            self.retry_ms = retry_ms;
        }
    }
}

pub(super) struct Remote {
    pub agent: ureq::Agent,
    /// The server's URL as configured.
    pub url: String,
    /// Where messages go: the URL itself, or the endpoint an SSE stream named.
    pub post_to: RefCell<String>,
    /// Speaking the HTTP+SSE transport.
    pub legacy: Cell<bool>,
    pub headers: Vec<(String, String)>,
    pub session: RefCell<Option<String>>,
    pub protocol: RefCell<Option<String>>,
    pub auth: Option<Auth>,
    /// One new session at a time: requests that all found the old one
    /// ended share the first one's.
    renewing_session: smol::lock::Mutex<()>,
    /// Told when a new session has started: a GET stream the old one
    /// refused may be offered now.
    session_started: (smol::channel::Sender<()>, smol::channel::Receiver<()>),
}

impl Remote {
    pub fn new(
        agent: ureq::Agent,
        url: &str,
        headers: Vec<(String, String)>,
        legacy: bool,
        auth: Option<Auth>,
    ) -> Remote {
        Remote {
            agent,
            url: url.to_string(),
            post_to: RefCell::new(url.to_string()),
            legacy: Cell::new(legacy),
            headers,
            session: RefCell::default(),
            protocol: RefCell::default(),
            auth,
            renewing_session: smol::lock::Mutex::new(()),
            session_started: smol::channel::bounded(1),
        }
    }
}

impl Remote {
    /// A GET of the server's URL: a stream is asked for.
    fn get(&self, headers: Vec<(String, String)>) -> smol::channel::Receiver<Piece> {
        wire::start(
            &self.agent,
            Request {
                method: "GET",
                url: self.url.clone(),
                headers,
                body: None,
            },
        )
    }
}

impl Remote {
    /// Ends a streamable-HTTP session with a DELETE, waiting at most
    /// `grace` (a server may refuse with 405; nothing more is owed then).
    /// The HTTP+SSE transport's session ends with its stream.
    pub(super) async fn end_session(&self, grace: Duration) {
        let Some(session) = self.session.borrow().clone().filter(|_| !self.legacy.get()) else {
            return;
        };
        let mut headers = vec![("mcp-session-id".to_string(), session)];
        headers.extend(self.headers.iter().cloned());
        // The token as it is: a session being left is not worth a renewal.
        if let Some(token) = self.auth.as_ref().and_then(|a| a.tokens.borrow().clone()) {
            headers.push((
                "authorization".into(),
                format!("Bearer {}", token.access_token),
            ));
        }
        let rx = wire::start(
            &self.agent,
            Request {
                method: "DELETE",
                url: self.url.clone(),
                headers,
                body: None,
            },
        );
        let _ = smol::future::or(async { rx.recv().await.ok().map(drop) }, async {
            smol::Timer::after(grace).await;
            None
        })
        .await;
    }
}

fn failure(url: &str, f: Failure) -> McpError {
    match f {
        Failure::Unreachable(e) => McpError::Unreachable {
            url: url.to_string(),
            source: e,
        },
        Failure::Broken(why) => McpError::Gone(format!("{url}: {why}")),
    }
}

/// The head of an exchange, or why there is none.
async fn head(rx: &smol::channel::Receiver<Piece>, url: &str) -> Result<Head, McpError> {
    match rx.recv().await {
        Ok(Piece::Head(h)) => Ok(h),
        Ok(Piece::End(Err(f))) => Err(failure(url, f)),
        _ => Err(McpError::Gone(format!(
            "{url}: the exchange ended without an answer"
        ))),
    }
}

/// The first 300 characters of an error answer's body.
async fn error_body(rx: &smol::channel::Receiver<Piece>) -> String {
    while let Ok(piece) = rx.recv().await {
        match piece {
            Piece::Body(text) => {
                return text
                    .chars()
                    .filter(|c| !c.is_control() || *c == ' ')
                    .take(300)
                    .collect();
            }
            Piece::End(_) => break,
            _ => {}
        }
    }
    String::new()
}

/// Resolves the endpoint an SSE stream named against the stream's URL;
/// it must stay on the same origin (the stream could otherwise send the
/// session's messages, and its token, anywhere). Both are read by the
/// strict URL reader policy uses, so a trick that hides another host in
/// the text (`user@host`, `\\`, numeric forms) is refused, not compared.
pub(super) fn endpoint(base: &str, named: &str) -> Result<String, String> {
    let origin = url::parse(base)
        .map_err(|e| format!("{base}: {e}"))?
        .origin();
    let named = named.trim();
    let absolute = named.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let full = if absolute {
        named.to_string()
    } else if named.starts_with("//") {
        return Err(format!(
            "the server named the endpoint {named} on another host"
        ));
    } else if named.starts_with('/') {
        format!("{origin}{named}")
    } else {
        let path = base.split(['?', '#']).next().unwrap_or(base);
        let dir = &path[..path.rfind('/').map_or(path.len(), |i| i + 1)];
        format!("{dir}{named}")
    };
    match url::parse(&full) {
        Ok(u) if u.origin() == origin => Ok(u.to_string()),
        _ => Err(format!(
            "the server named the endpoint {named}, which is not on {origin}; refused"
        )),
    }
}

impl Connection {
    fn remote(&self) -> Option<&Remote> {
        match &self.link {
            super::rpc::Link::Remote(r) => Some(r),
            _ => None,
        }
    }

    /// The headers of a request: the configured ones, the session, the
    /// protocol version, and the bearer token.
    async fn remote_headers(
        &self,
        r: &Remote,
        post: bool,
    ) -> Result<Vec<(String, String)>, McpError> {
        let mut h: Vec<(String, String)> = Vec::new();
        if post {
            h.push(("content-type".into(), "application/json".into()));
            h.push((
                "accept".into(),
                "application/json, text/event-stream".into(),
            ));
        } else {
            h.push(("accept".into(), "text/event-stream".into()));
        }
        if !r.legacy.get() {
            if let Some(s) = r.session.borrow().clone() {
                h.push(("mcp-session-id".into(), s));
            }
            if let Some(v) = r.protocol.borrow().clone() {
                h.push(("mcp-protocol-version".into(), v));
            }
        }
        h.extend(r.headers.iter().cloned());
        if let Some(auth) = &r.auth
            && let Some(token) = auth.bearer().await?
        {
            h.push(("authorization".into(), format!("Bearer {token}")));
        }
        Ok(h)
    }

    /// One message to the server; what comes back is handled as it comes.
    pub(super) async fn post_remote(&self, msg: &Value) -> Result<(), McpError> {
        let Some(r) = self.remote() else {
            return Ok(());
        };
        let body = msg.to_json();
        let request_id = msg
            .get("id")
            .and_then(Value::as_i64)
            .filter(|_| msg.get("method").is_some());
        let mut tries = auth::Tries::default();
        let mut new_session = false;
        loop {
            let headers = self.remote_headers(r, true).await?;
            let sent_session = r.session.borrow().clone().filter(|_| !r.legacy.get());
            let url = r.post_to.borrow().clone();
            let rx = wire::start(
                &r.agent,
                Request {
                    method: "POST",
                    url: url.clone(),
                    headers: headers.clone(),
                    body: Some(body.clone()),
                },
            );
            let head = head(&rx, &url).await?;
            match head.status {
                401 | 403 => {
                    self.after_refusal(r, head.status, head.challenge, &headers, &mut tries)
                        .await?;
                }
                // The session this message carried is over. A response
                // to the server's request belonged to it and is dropped;
                // anything else is sent again in a new session, once.
                404 if sent_session.is_some() => {
                    if new_session {
                        return Err(McpError::Gone(
                            "the server ended the session again (HTTP 404) right after a new one was started"
                                .into(),
                        ));
                    }
                    if msg.get("method").is_none() {
                        return Err(McpError::Gone(
                            "the server ended the session (HTTP 404)".into(),
                        ));
                    }
                    new_session = true;
                    Box::pin(self.start_new_session(r, sent_session)).await?;
                }
                s if s / 100 == 2 => {
                    if let Some(session) = head.session.filter(|_| !r.legacy.get()) {
                        *r.session.borrow_mut() = Some(session);
                    }
                    // The HTTP+SSE transport answers on its stream.
                    if r.legacy.get() {
                        return Ok(());
                    }
                    return self.take_answers(r, rx, &url, request_id).await;
                }
                status => {
                    return Err(McpError::Http {
                        status,
                        url,
                        body: error_body(&rx).await,
                    });
                }
            }
        }
    }

    /// Starts a new session after the server ended `ended` (a 404 on a
    /// POST that carried it): `initialize` again, then `initialized`.
    /// Said as a notice, since the server forgot whatever the old session
    /// held (subscriptions, state of its own).
    async fn start_new_session(&self, r: &Remote, ended: Option<String>) -> Result<(), McpError> {
        let _one = r.renewing_session.lock().await;
        // Another request started one while this one waited.
        if *r.session.borrow() != ended {
            return Ok(());
        }
        *r.session.borrow_mut() = None;
        let init = self
            .request("initialize", super::initialize_offering(self.offer.get()))
            .await
            .map_err(|e| McpError::Step {
                step: "starting a new session after the server ended the old one (HTTP 404)",
                source: Box::new(e),
            })?;
        if let Some(version) = init.str_field("protocolVersion") {
            self.set_protocol(version);
        }
        self.notify("notifications/initialized", obj! {}).await?;
        let _ = r.session_started.0.try_send(());
        crate::report::notice(
            crate::report::Level::Info,
            format!(
                "MCP server {}: the server ended the session (HTTP 404); started a new session",
                self.name
            ),
        );
        Ok(())
    }

    /// Handles the messages of a POST's answer as they arrive; a stream
    /// that ends before the answer is resumed from its last event id,
    /// at most `RESUMES` times.
    async fn take_answers(
        &self,
        r: &Remote,
        mut rx: smol::channel::Receiver<Piece>,
        url: &str,
        request_id: Option<i64>,
    ) -> Result<(), McpError> {
        let mut cursor = Cursor::default();
        let mut resumed = 0;
        loop {
            // A resumed stream is a GET the server may keep open after the
            // answer: it is left once the answer has come.
            let until = request_id.filter(|_| resumed > 0);
            let broke = self.read_answers(&rx, &mut cursor, until).await?;
            // Answered, abandoned, or nothing was asked.
            let Some(id) = request_id.filter(|id| self.pending.borrow().contains_key(id)) else {
                return Ok(());
            };
            // A stream without event ids cannot be resumed.
            let why = if cursor.last_id.is_empty() || self.closed.borrow().is_some() {
                Some(match broke {
                    Some(b) => format!("{url}: {b}"),
                    None => format!("{url} closed the answer's stream before answering"),
                })
            } else if resumed == RESUMES {
                Some(format!(
                    "{url} ended the answer's stream before answering; resumed {RESUMES} times, and the answer never came"
                ))
            } else {
                None
            };
            if let Some(why) = why {
                self.fail_pending(id, why);
                return Ok(());
            }
            resumed += 1;
            let wait = smol::Timer::after(retry_delay(cursor.retry_ms));
            if or_stop(wait, &self.ended.1).await.is_none() {
                return Ok(());
            }
            match self.resume(r, &cursor.last_id).await {
                Ok(next) => rx = next,
                Err(e) => {
                    self.fail_pending(id, format!("resuming the answer's stream failed: {e}"));
                    return Ok(());
                }
            }
        }
    }

    fn fail_pending(&self, id: i64, why: String) {
        if let Some(tx) = self.pending.borrow_mut().remove(&id) {
            let _ = tx.try_send(Err(McpError::Gone(why)));
        }
    }

    /// Reads one answer's stream (or body) to its end, or until the
    /// request `until` has its answer, keeping its cursor; why it broke
    /// off, if it did.
    async fn read_answers(
        &self,
        rx: &smol::channel::Receiver<Piece>,
        cursor: &mut Cursor,
        until: Option<i64>,
    ) -> Result<Option<String>, McpError> {
        let mut broke = None;
        while let Ok(piece) = rx.recv().await {
            match piece {
                Piece::Event { id, event, data } => {
                    cursor.event(&id);
                    // A priming event's empty data is no message.
                    if event == "message"
                        && let Ok(v) = json::parse(&data)
                    {
                        Box::pin(self.dispatch(v)).await;
                    }
                }
                Piece::Cursor { last_id, retry_ms } => cursor.end(&last_id, retry_ms),
                Piece::Body(text) if !text.trim().is_empty() => match json::parse(&text) {
                    Ok(Value::Array(batch)) => {
                        for m in batch {
                            Box::pin(self.dispatch(m)).await;
                        }
                    }
                    Ok(v) => Box::pin(self.dispatch(v)).await,
                    Err(e) => return Err(McpError::NotJson(e)),
                },
                Piece::End(Err(f)) => broke = Some(f.to_string()),
                _ => {}
            }
            if until.is_some_and(|id| !self.pending.borrow().contains_key(&id)) {
                break;
            }
        }
        Ok(broke)
    }

    /// A GET that continues a stream after `last_id` (with the session,
    /// if any): the new stream, or why the server would not.
    async fn resume(
        &self,
        r: &Remote,
        last_id: &str,
    ) -> Result<smol::channel::Receiver<Piece>, McpError> {
        let mut tries = auth::Tries::default();
        loop {
            let mut headers = self.remote_headers(r, false).await?;
            headers.push(("last-event-id".into(), last_id.to_string()));
            let rx = r.get(headers.clone());
            let head = head(&rx, &r.url).await?;
            match head.status {
                401 | 403 => {
                    self.after_refusal(r, head.status, head.challenge, &headers, &mut tries)
                        .await?;
                }
                200 if head.stream => return Ok(rx),
                status => {
                    return Err(McpError::Http {
                        status,
                        url: r.url.clone(),
                        body: error_body(&rx).await,
                    });
                }
            }
        }
    }

    /// Opens the HTTP+SSE transport's stream and waits for the endpoint
    /// it names; its messages are then handled until it ends.
    pub(super) async fn start_legacy(
        self: &Rc<Self>,
        ex: &'static LocalExecutor<'static>,
    ) -> Result<(), McpError> {
        let Some(r) = self.remote() else {
            return Ok(());
        };
        r.legacy.set(true);
        let mut rx = None;
        let mut tries = auth::Tries::default();
        for _ in 0..4 {
            let headers = self.remote_headers(r, false).await?;
            let started = r.get(headers.clone());
            let head = head(&started, &r.url).await?;
            match head.status {
                401 | 403 => {
                    self.after_refusal(r, head.status, head.challenge, &headers, &mut tries)
                        .await?
                }
                200 if head.stream => {
                    rx = Some(started);
                    break;
                }
                status => {
                    let body = error_body(&started).await;
                    return Err(McpError::Http {
                        status,
                        url: r.url.clone(),
                        body: if head.stream || status == 200 {
                            "neither a streamable HTTP nor an SSE endpoint".into()
                        } else {
                            body
                        },
                    });
                }
            }
        }
        let rx = rx.ok_or_else(|| McpError::NeedsLogin {
            server: self.name.clone(),
            why: "the server refused the sign-in".into(),
        })?;
        // The endpoint comes first; anything before it is not for us yet.
        loop {
            match rx.recv().await {
                Ok(Piece::Event { event, data, .. }) if event == "endpoint" => {
                    let at = endpoint(&r.url, &data).map_err(McpError::Gone)?;
                    *r.post_to.borrow_mut() = at;
                    break;
                }
                Ok(Piece::End(end)) => {
                    return Err(McpError::Gone(match end {
                        Err(f) => format!("{}: {f}", r.url),
                        Ok(()) => format!("{} closed its stream before naming an endpoint", r.url),
                    }));
                }
                Ok(_) => {}
                Err(_) => return Err(McpError::Gone(format!("{}: the stream ended", r.url))),
            }
        }
        let weak = Rc::downgrade(self);
        let stop = self.ended.1.clone();
        ex.spawn(read_legacy(weak, rx, stop)).detach();
        Ok(())
    }

    /// Starts the GET stream of a streamable-HTTP session.
    pub(super) fn listen(self: &Rc<Self>, ex: &'static LocalExecutor<'static>) {
        if self.remote().is_some_and(|r| !r.legacy.get()) {
            let weak = Rc::downgrade(self);
            let stop = self.ended.1.clone();
            ex.spawn(get_stream(weak, stop)).detach();
        }
    }
}

/// Waits for `f`, unless the connection ends first.
async fn or_stop<T>(
    f: impl std::future::Future<Output = T>,
    stop: &smol::channel::Receiver<()>,
) -> Option<T> {
    async { Some(f.await) }
        .or(async {
            let _ = stop.recv().await;
            None
        })
        .await
}

async fn read_legacy(
    weak: Weak<Connection>,
    rx: smol::channel::Receiver<Piece>,
    stop: smol::channel::Receiver<()>,
) {
    let why = loop {
        let Some(piece) = or_stop(rx.recv(), &stop).await else {
            return;
        };
        match piece {
            Ok(Piece::Event { event, data, .. }) if event == "message" => {
                let Some(conn) = weak.upgrade() else { return };
                if let Ok(v) = json::parse(&data) {
                    conn.dispatch(v).await;
                }
            }
            Ok(Piece::End(Err(f))) => break format!("the server's SSE stream broke off: {f}"),
            Ok(Piece::End(Ok(()))) | Err(_) => {
                break "the server closed its SSE stream".to_string();
            }
            Ok(_) => {}
        }
    };
    if let Some(conn) = weak.upgrade() {
        conn.close(why);
    }
}

/// The GET stream: opened, read, and opened again with the last event id
/// when it drops (after the server's `retry`, else at once; failures back
/// off to 30 s), until the connection ends. A 404 or 405 means the server
/// offers no stream (a stateless server has no session to lose; a session
/// that really ended shows on the next POST): it is asked again only once
/// a new session has started.
async fn get_stream(weak: Weak<Connection>, stop: smol::channel::Receiver<()>) {
    let mut cursor = Cursor::default();
    // The session the cursor belongs to: a new session starts afresh.
    let mut cursor_session = None;
    let mut delay = Duration::from_millis(250);
    let mut renewed = false;
    loop {
        let (rx, url, headers, started) = {
            let Some(conn) = weak.upgrade() else { return };
            let Some(r) = conn.remote() else { return };
            if conn.closed.borrow().is_some() {
                return;
            }
            let Some(Ok(mut headers)) = or_stop(conn.remote_headers(r, false), &stop).await else {
                return;
            };
            let session = r.session.borrow().clone();
            if session != cursor_session {
                cursor = Cursor::default();
                cursor_session = session;
            }
            if !cursor.last_id.is_empty() {
                headers.push(("last-event-id".into(), cursor.last_id.clone()));
            }
            (
                r.get(headers.clone()),
                r.url.clone(),
                headers,
                r.session_started.1.clone(),
            )
        };
        let Some(head) = or_stop(head(&rx, &url), &stop).await else {
            return;
        };
        let mut heard = false;
        match head {
            Ok(h) if h.status == 404 || h.status == 405 => {
                drop(rx);
                if or_stop(started.recv(), &stop)
                    .await
                    .is_none_or(|r| r.is_err())
                {
                    return;
                }
                continue;
            }
            // Only a renewal or a new client-credentials token: a step-up
            // waits for a request the person made.
            Ok(h) if h.status == 401 && !renewed => {
                renewed = true;
                let Some(conn) = weak.upgrade() else { return };
                let Some(r) = conn.remote() else { return };
                let mut tries = auth::Tries::default();
                let fixed = conn.after_refusal(r, h.status, None, &headers, &mut tries);
                if or_stop(fixed, &stop).await.is_none_or(|r| r.is_err()) {
                    return;
                }
                continue;
            }
            Ok(h) if h.status == 200 && h.stream => {
                renewed = false;
                loop {
                    let Some(piece) = or_stop(rx.recv(), &stop).await else {
                        return;
                    };
                    match piece {
                        Ok(Piece::Event { id, event, data }) => {
                            heard = true;
                            cursor.event(&id);
                            if event == "message"
                                && let Ok(v) = json::parse(&data)
                            {
                                let Some(conn) = weak.upgrade() else { return };
                                conn.dispatch(v).await;
                            }
                        }
                        Ok(Piece::Cursor { last_id, retry_ms }) => cursor.end(&last_id, retry_ms),
                        Ok(Piece::End(_)) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            }
            // Other answers and failures: try again later.
            Ok(_) | Err(_) => {}
        }
        // A stream that carried events and ended is resumed (a server may
        // end one whenever it likes): after its `retry`, or at once when it
        // asked for none; failures back off.
        if heard {
            delay = Duration::from_millis(250);
            if let Some(ms) = cursor.retry_ms
                && or_stop(smol::Timer::after(retry_delay(Some(ms))), &stop)
                    .await
                    .is_none()
            {
                return;
            }
            continue;
        }
        if or_stop(smol::Timer::after(delay), &stop).await.is_none() {
            return;
        }
        delay = (delay * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn endpoints_stay_on_the_streams_origin() {
        let base = "http://127.0.0.1:5/sse";
        assert_eq!(
            endpoint(base, "/messages?session_id=1").unwrap(),
            "http://127.0.0.1:5/messages?session_id=1"
        );
        assert_eq!(
            endpoint("http://h:1/a/sse?x=1", "messages").unwrap(),
            "http://h:1/a/messages"
        );
        assert_eq!(
            endpoint(base, "http://127.0.0.1:5/m").unwrap(),
            "http://127.0.0.1:5/m"
        );
        // A URL in the query is not an absolute endpoint.
        assert_eq!(
            endpoint(base, "/messages?next=http://evil.example/").unwrap(),
            "http://127.0.0.1:5/messages?next=http://evil.example/"
        );
        // A browser reads `/\\host` as `//host`; here it is a path on the
        // same origin, and goes there escaped.
        let escaped = endpoint(base, "/\\evil.example/m").unwrap();
        assert!(escaped.starts_with("http://127.0.0.1:5/%5C"), "{escaped}");
        for evil in [
            "http://evil.example/m",
            "http://2130706433:5/m",
            "http://127.0.0.1:5\\@evil.example/m",
            "//evil.example/m",
            "https://127.0.0.1:5/m",
            "http://127.0.0.1:6/m",
            "http://127.0.0.1:5@evil.example/m",
        ] {
            assert!(endpoint(base, evil).is_err(), "{evil}");
        }
    }
}
