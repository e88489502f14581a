//! The Messages API client: one streaming POST per attempt.
//!
//! ureq is blocking, so the request is sent on a `blocking` pool thread and
//! the response body is read through `smol::Unblock`, which keeps one
//! helper thread reading ahead while the single-threaded executor parses
//! and runs tools. Dropping the stream drops the reader and closes the
//! connection.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use smol::io::AsyncReadExt;

use super::{ApiError, Detail, Provider};
use crate::json;

#[derive(Clone, Debug)]
pub enum Auth {
    /// `x-api-key` (ANTHROPIC_API_KEY).
    ApiKey(String),
    /// `Authorization: Bearer` (ANTHROPIC_AUTH_TOKEN).
    Bearer(String),
    /// A local server that needs no credentials.
    None,
}

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub provider: Provider,
    pub base_url: String,
    pub auth: Auth,
    /// Extra PEM bundle (SSL_CERT_FILE), added to the built-in roots.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// A stream that sends nothing for this long is treated as cut.
    pub idle_timeout: Duration,
}

#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    base: String,
    url: String,
    auth: Auth,
    provider: Provider,
}

impl Client {
    pub fn new(config: &ClientConfig) -> Result<Client, ApiError> {
        let agent_config = http_config(config.extra_ca_pem.as_deref())?
            .timeout_recv_response(Some(Duration::from_secs(600)))
            .timeout_per_read(Some(config.idle_timeout))
            .build();
        let base = config.base_url.trim_end_matches('/');
        let url = match config.provider {
            Provider::Anthropic => format!("{base}/v1/messages"),
            // OpenAI-style base URLs often already end in /v1.
            Provider::OpenAi if base.ends_with("/v1") => format!("{base}/chat/completions"),
            Provider::OpenAi => format!("{base}/v1/chat/completions"),
        };
        Ok(Client {
            agent: agent_config.new_agent(),
            base: base.to_string(),
            url,
            auth: config.auth.clone(),
            provider: config.provider,
        })
    }

    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The context window a local server reports: llama.cpp's `/props`
    /// (`n_ctx`), or `/v1/models` (vLLM's `max_model_len`, llama.cpp's
    /// `meta.n_ctx_train`). Blocking, with a short timeout; `None` when the
    /// server says nothing usable.
    pub fn server_window(&self) -> Option<u64> {
        let timeout = Duration::from_secs(3);
        if let Ok(props) = self.get_json("/props", timeout) {
            let n = props_window(&props);
            if n.is_some() {
                return n;
            }
        }
        let models = self.get_json("/v1/models", timeout).ok()?;
        let first = models.get("data")?.as_array()?.first()?;
        positive(first.get("max_model_len"))
            .or_else(|| positive(first.get("meta").and_then(|m| m.get("n_ctx_train"))))
    }

    /// GET `path` below the server's root (without a trailing `/v1`) and
    /// parse the answer as JSON: at most 1 MiB, within `timeout`. Blocking.
    /// The error says what the server did, for notes like "answered
    /// garbage".
    pub fn get_json(&self, path: &str, timeout: Duration) -> Result<json::Value, GetError> {
        let (status, text) = self.get(path, timeout)?;
        if status != 200 {
            return Err(GetError::Status {
                path: path.to_string(),
                status,
            });
        }
        json::parse(&text).map_err(|_| GetError::NotJson {
            path: path.to_string(),
            start: text.chars().take(40).collect(),
        })
    }

    /// GET `path` below the server's root with this client's credentials:
    /// the status and at most 1 MiB of the body. Blocking.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<(u16, String), GetError> {
        let root = self.base.trim_end_matches("/v1");
        let mut req = self
            .agent
            .get(&format!("{root}{path}"))
            .config()
            .timeout_global(Some(timeout))
            .build();
        if self.provider == Provider::Anthropic {
            req = req.header("anthropic-version", "2023-06-01");
        }
        req = match &self.auth {
            Auth::ApiKey(k) => req.header("x-api-key", k),
            Auth::Bearer(t) => req.header("authorization", &format!("Bearer {t}")),
            Auth::None => req,
        };
        let response = req.call().map_err(|e| match e {
            ureq::Error::Timeout(_) => GetError::Timeout(timeout),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                GetError::Refused(io)
            }
            other => GetError::Send(send_error(other)),
        })?;
        let status = response.status().as_u16();
        let mut text = String::new();
        response
            .into_body()
            .into_reader()
            .take(1024 * 1024)
            .read_to_string(&mut text)
            .map_err(|source| GetError::Read {
                path: path.to_string(),
                source,
            })?;
        Ok((status, text))
    }

    /// Sends one request and returns the open event stream, or the error
    /// the server answered with.
    /// `betas` are the Messages API features the body uses (sent as
    /// `anthropic-beta`; chat completions servers get none).
    pub async fn open(&self, body: String, betas: &[&str]) -> Result<ByteStream, ApiError> {
        let betas = betas.join(",");
        let agent = self.agent.clone();
        let url = self.url.clone();
        let auth = self.auth.clone();
        let provider = self.provider;
        smol::unblock(move || {
            let req = post(&agent, &url, &auth, provider, &betas);
            // A kept-alive connection the server has since closed (llama.cpp's
            // server closes one after a few requests) fails before any answer:
            // the request goes again, once, on a new connection.
            let response = match req.send(body.as_bytes()) {
                Err(ureq::Error::Io(io)) if closed_by_peer(&io) => {
                    resend(&agent, &url, &auth, provider, &betas, &body)?
                }
                other => other.map_err(send_error)?,
            };
            let status = response.status().as_u16();
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let retry_after = header("retry-after").and_then(|s| parse_retry_after(&s));
            let request_id = header("request-id");
            if status != 200 {
                let mut text = String::new();
                let _ = response
                    .into_body()
                    .into_reader()
                    .take(64 * 1024)
                    .read_to_string(&mut text);
                return Err(http_error(status, &text, retry_after, request_id));
            }
            Ok(ByteStream {
                reader: smol::Unblock::with_capacity(16 * 1024, response.into_body().into_reader()),
            })
        })
        .await
    }
}

/// A model request with its headers, ready to send.
fn post(
    agent: &ureq::Agent,
    url: &str,
    auth: &Auth,
    provider: Provider,
    betas: &str,
) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
    let mut req = agent
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    if provider == Provider::Anthropic {
        req = req.header("anthropic-version", "2023-06-01");
        if !betas.is_empty() {
            req = req.header("anthropic-beta", betas);
        }
    }
    match auth {
        Auth::ApiKey(k) => req.header("x-api-key", k),
        Auth::Bearer(t) => req.header("authorization", &format!("Bearer {t}")),
        Auth::None => req,
    }
}

/// The connection ended before the server answered anything.
fn closed_by_peer(io: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(
        io.kind(),
        UnexpectedEof | ConnectionReset | BrokenPipe | ConnectionAborted
    )
}

fn resend(
    agent: &ureq::Agent,
    url: &str,
    auth: &Auth,
    provider: Provider,
    betas: &str,
    body: &str,
) -> Result<ureq::http::Response<ureq::Body>, ApiError> {
    post(agent, url, auth, provider, betas)
        .send(body.as_bytes())
        .map_err(send_error)
}

/// What every HTTP request tern makes shares, the model's and WebFetch's:
/// the built-in roots plus `SSL_CERT_FILE`'s, the proxy from the
/// environment (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`: ureq's default),
/// tern's user agent, statuses as answers rather than errors.
pub fn http_config(
    extra_ca_pem: Option<&[u8]>,
) -> Result<ureq::config::ConfigBuilder<ureq::typestate::AgentScope>, ApiError> {
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(root_certs(extra_ca_pem)?)
        .build();
    // ureq's buffers are 128 KiB each by default and zero-filled a byte
    // at a time in a size-optimised build: a fifth of a short run's
    // instructions. Headers fit well in these, and bodies stream through.
    Ok(ureq::Agent::config_builder()
        .input_buffer_size(32 * 1024)
        .output_buffer_size(16 * 1024)
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .user_agent(concat!("tern/", env!("CARGO_PKG_VERSION")))
        .tls_config(tls))
}

/// Why a plain GET to the server (discovery, the window probe, `tern
/// doctor`) gave no usable answer.
#[derive(Debug)]
pub enum GetError {
    /// Nothing came back within the time given.
    Timeout(Duration),
    /// Nothing listens there (the usual case for a port probed at random).
    Refused(std::io::Error),
    /// Anything else before an answer, sorted as for a model request.
    Send(ApiError),
    /// The answer broke off.
    Read {
        path: String,
        source: std::io::Error,
    },
    /// `get_json`: a status other than 200.
    Status { path: String, status: u16 },
    /// `get_json`: not JSON; `start` is its first 40 characters.
    NotJson { path: String, start: String },
}

impl GetError {
    /// Nothing listens at the address.
    pub fn is_refused(&self) -> bool {
        matches!(self, GetError::Refused(_))
    }
}

impl std::fmt::Display for GetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetError::Timeout(t) => write!(f, "no answer within {} ms", t.as_millis()),
            GetError::Refused(_) => f.write_str("connection refused"),
            GetError::Send(e) => write!(f, "{e}"),
            GetError::Read { path, source } => {
                write!(f, "reading the answer to {path} failed: {source}")
            }
            GetError::Status { path, status } => write!(f, "{path} answered HTTP {status}"),
            GetError::NotJson { path, start } => {
                write!(f, "{path} answered something that is not JSON ({start:?})")
            }
        }
    }
}

impl std::error::Error for GetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GetError::Refused(e) | GetError::Read { source: e, .. } => Some(e),
            GetError::Send(e) => Some(e),
            GetError::Timeout(_) | GetError::Status { .. } | GetError::NotJson { .. } => None,
        }
    }
}

/// A positive whole number, as a count of tokens.
fn positive(v: Option<&json::Value>) -> Option<u64> {
    v.and_then(json::Value::as_i64)
        .filter(|n| *n > 0)
        .map(|n| n as u64)
}

/// llama.cpp's `/props`: the context of the running slots.
pub(crate) fn props_window(props: &json::Value) -> Option<u64> {
    positive(
        props
            .get("default_generation_settings")
            .and_then(|d| d.get("n_ctx")),
    )
    .or_else(|| positive(props.get("n_ctx")))
}

/// The response body as it arrives.
pub struct ByteStream {
    reader: smol::Unblock<ureq::BodyReader<'static>>,
}

impl ByteStream {
    /// The next chunk; an empty vector means the body ended.
    pub async fn next_chunk(&mut self, buf: &mut [u8]) -> Result<usize, ApiError> {
        self.reader.read(buf).await.map_err(|e| {
            ApiError::Stream(Detail::caused_by(
                format!("reading the response failed: {e}"),
                e,
            ))
        })
    }
}

/// Sorts a failed send into what retrying could fix (the network) and what
/// it cannot (certificates, configuration).
fn send_error(e: ureq::Error) -> ApiError {
    let hint = |detail: String| {
        format!("{detail} (if a proxy intercepts TLS, point SSL_CERT_FILE at its CA certificate)")
    };
    match e {
        ureq::Error::Rustls(inner) => {
            ApiError::Tls(Detail::caused_by(hint(inner.to_string()), inner))
        }
        ureq::Error::Tls(m) => ApiError::Tls(hint(m.to_string()).into()),
        ureq::Error::Io(io) => {
            let is_rustls = io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some());
            if is_rustls {
                ApiError::Tls(Detail::caused_by(hint(io.to_string()), io))
            } else {
                ApiError::Transport(Detail::caused_by(io.to_string(), io))
            }
        }
        ureq::Error::BadUri(_)
        | ureq::Error::InvalidProxyUrl
        | ureq::Error::RequireHttpsOnly(_)
        | ureq::Error::TlsRequired => ApiError::Config(e.to_string().into()),
        other => ApiError::Transport(Detail::caused_by(other.to_string(), other)),
    }
}

fn http_error(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    request_id: Option<String>,
) -> ApiError {
    let parsed = json::parse(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let kind = err
        .and_then(|e| e.str_field("type"))
        .unwrap_or("http_error")
        .to_string();
    let mut message = err
        .and_then(|e| e.str_field("message"))
        .map(str::to_string)
        .unwrap_or_else(|| body.chars().take(500).collect());
    if message.is_empty() {
        message = format!("HTTP {status}");
    }
    ApiError::Http {
        status,
        kind,
        message,
        retry_after,
        request_id,
    }
}

/// `retry-after` in seconds (the API never sends the date form, but a
/// proxy might; an unparsable value is ignored).
fn parse_retry_after(s: &str) -> Option<Duration> {
    let secs: f64 = s.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// The roots every agent trusts: Mozilla's, and `SSL_CERT_FILE`'s.
///
/// Without `SSL_CERT_FILE` ureq is handed Mozilla's anchors as they are
/// (`WebPki`), read only at the first TLS connection: writing them out
/// as certificates was a sixth of a one-turn run's instructions, paid
/// even against an `http://` server. ureq replaces its roots when given
/// certificates, so with `SSL_CERT_FILE` every root goes in as one.
///
/// That list is made once per process and shared: a system bundle in
/// `SSL_CERT_FILE` (common in containers) is ~200 KB of PEM, and decoding
/// it for each agent cost a short run several milliseconds.
fn root_certs(extra_pem: Option<&[u8]>) -> Result<ureq::tls::RootCerts, ApiError> {
    let Some(extra_pem) = extra_pem else {
        return Ok(ureq::tls::RootCerts::WebPki);
    };
    type Roots = Arc<Vec<ureq::tls::Certificate<'static>>>;
    static MADE: std::sync::Mutex<Option<(Vec<u8>, Roots)>> = std::sync::Mutex::new(None);
    let mut made = MADE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((pem, roots)) = made.as_ref()
        && same_bytes(pem, extra_pem)
    {
        return Ok(ureq::tls::RootCerts::Specific(Arc::clone(roots)));
    }
    let mut certs: Vec<ureq::tls::Certificate<'static>> = super::roots::mozilla()
        .iter()
        .map(|der| ureq::tls::Certificate::from_der(der))
        .collect();
    let before = certs.len();
    certs.extend(
        super::roots::pem_certificates(extra_pem)
            .into_iter()
            .map(|der| ureq::tls::Certificate::from_der(&der).to_owned()),
    );
    if certs.len() == before {
        return Err(ApiError::Config(
            "SSL_CERT_FILE contains no PEM certificates".into(),
        ));
    }
    let roots = Arc::new(certs);
    *made = Some((extra_pem.to_vec(), Arc::clone(&roots)));
    Ok(ureq::tls::RootCerts::Specific(roots))
}

/// `a == b` eight bytes at a time: a slice comparison goes to musl's
/// memcmp, which compares a byte at a time (1.5M instructions for a
/// system bundle, each time an HTTP agent is made).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let ((a_words, a_rest), (b_words, b_rest)) = (a.as_chunks::<8>(), b.as_chunks::<8>());
    a_rest == b_rest
        && a_words
            .iter()
            .zip(b_words)
            .all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that answers the first request on a connection with
    /// keep-alive, takes the second and hangs up without an answer (as
    /// llama.cpp's server does past its requests per connection), then
    /// answers on a new connection: the client must not fail for it.
    #[test]
    fn a_kept_alive_connection_the_server_hung_up_is_replaced() {
        use std::io::{BufRead, BufReader, Write};
        fn read_request(reader: &mut BufReader<std::net::TcpStream>) {
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(reader, &mut body).unwrap();
        }
        fn answer(conn: &mut std::net::TcpStream) {
            let sse = "data: [DONE]\n\n";
            write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}",
                sse.len()
            )
            .unwrap();
            conn.flush().unwrap();
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut first, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(first.try_clone().unwrap());
            read_request(&mut reader);
            answer(&mut first);
            read_request(&mut reader);
            drop(reader);
            drop(first);
            let (mut second, _) = listener.accept().unwrap();
            read_request(&mut BufReader::new(second.try_clone().unwrap()));
            answer(&mut second);
        });
        let client = Client::new(&ClientConfig {
            provider: Provider::OpenAi,
            base_url: url,
            auth: Auth::None,
            extra_ca_pem: None,
            idle_timeout: std::time::Duration::from_secs(5),
        })
        .unwrap();
        for _ in 0..2 {
            let mut stream = smol::block_on(client.open("{}".into(), &[])).unwrap();
            let mut buf = [0u8; 64];
            while smol::block_on(stream.next_chunk(&mut buf)).unwrap() > 0 {}
        }
        server.join().unwrap();
    }

    #[test]
    fn http_errors_keep_type_message_and_retry_after() {
        let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        match http_error(429, body, parse_retry_after("2"), None) {
            ApiError::Http {
                status,
                kind,
                message,
                retry_after,
                ..
            } => {
                assert_eq!(
                    (status, kind.as_str(), message.as_str()),
                    (429, "rate_limit_error", "slow down")
                );
                assert_eq!(retry_after, Some(Duration::from_secs(2)));
            }
            other => panic!("{other:?}"),
        }
        match http_error(502, "<html>bad gateway</html>", None, None) {
            ApiError::Http { kind, message, .. } => {
                assert_eq!(kind, "http_error");
                assert!(message.contains("bad gateway"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn same_bytes_is_slice_equality() {
        let a: Vec<u8> = (0..=255u8).cycle().take(1003).collect();
        for len in [0, 1, 7, 8, 9, 64, 1003] {
            // A copy: equal bytes at another address.
            let copy = a[..len].to_vec();
            assert!(same_bytes(&a[..len], &copy));
            for at in [0, len / 2, len.saturating_sub(1)] {
                if len > 0 {
                    let mut b = a[..len].to_vec();
                    b[at] ^= 1;
                    assert!(!same_bytes(&a[..len], &b), "{len} {at}");
                }
            }
        }
        assert!(!same_bytes(&a[..8], &a[..9]));
    }

    #[test]
    fn extra_ca_is_added_to_the_builtin_roots() {
        let count = |roots: ureq::tls::RootCerts| match roots {
            ureq::tls::RootCerts::Specific(certs) => certs.len(),
            _ => 0,
        };
        // Without SSL_CERT_FILE, Mozilla's anchors go to ureq as they are.
        assert!(matches!(
            root_certs(None).unwrap(),
            ureq::tls::RootCerts::WebPki
        ));
        let builtin = webpki_roots::TLS_SERVER_ROOTS.len();
        assert!(builtin > 100, "Mozilla roots missing");
        let pem = include_bytes!("../../tests/fixtures/extra-ca.pem");
        assert_eq!(count(root_certs(Some(pem)).unwrap()), builtin + 1);
        assert!(matches!(
            root_certs(Some(b"not a pem")),
            Err(ApiError::Config(_))
        ));
    }

    /// The transport chain: what the user reads stays one sentence, and
    /// the error under it is there for a program to look at.
    #[test]
    fn a_transport_failure_keeps_its_cause() {
        use std::error::Error;
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = send_error(ureq::Error::Io(io));
        assert_eq!(e.to_string(), "connection failed: reset by peer");
        let cause = e.source().expect("the cause is kept");
        let io = cause
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
        assert!(e.is_retryable());
        // A GET that nothing answers says so, typed, with its cause.
        let refused = GetError::Refused(std::io::ErrorKind::ConnectionRefused.into());
        assert!(refused.is_refused());
        assert_eq!(refused.to_string(), "connection refused");
        assert!(refused.source().is_some());
        assert!(ApiError::Config("x".into()).source().is_none());
    }

    #[test]
    fn retry_after_rejects_nonsense() {
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
    }
}
