//! One page over HTTP(S): the model client's TLS roots and proxy
//! settings (`model::client::http_config`), bounded in bytes, time and
//! redirects.
//!
//! Redirects are followed by hand: to the same host (or its `www.`
//! twin), the same port, the same scheme or an upgrade to https, up to
//! [`Limits::redirects`] hops; anywhere else the redirect comes back as a
//! [`Fetched::Redirect`] for the model to decide about (and for policy to
//! ask about), never followed.
//!
//! Two agents share one configuration and differ only in their resolver:
//! the guarded one refuses to connect when a name resolves to a loopback
//! or private address (DNS rebinding: a public name that policy allowed
//! must not lead to `127.0.0.1` or a metadata service); the open one is
//! used when the permit says the host was named as local. Addresses are
//! checked where ureq connects, so the check and the connection see the
//! same answer. Behind a proxy the proxy resolves names, and reaches what
//! it lets through.
//!
//! Blocking: call from `smol::unblock`.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::policy::url::{self, Host, WebUrl};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of a body read at most; the rest is left unread.
    pub bytes: usize,
    /// For the whole fetch, redirects included.
    pub timeout: Duration,
    pub redirects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bytes: 5 * 1024 * 1024,
            timeout: Duration::from_secs(30),
            redirects: 5,
        }
    }
}

/// What a fetch brought back.
#[derive(Debug, Clone)]
pub(crate) enum Fetched {
    Page(Page),
    /// A redirect to somewhere tern does not follow by itself.
    Redirect {
        from: String,
        to: String,
        status: u16,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// Where the body came from (after same-host redirects).
    pub url: String,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// The body went on past [`Limits::bytes`].
    pub truncated: bool,
}

#[derive(Clone)]
pub(crate) struct Fetcher {
    guarded: ureq::Agent,
    open: ureq::Agent,
    pub limits: Limits,
}

/// Marks the resolver's refusal, so it can be told apart from other I/O.
const LOCAL_REFUSED: &str = "tern: refused local address:";

impl Fetcher {
    pub(crate) fn new(config: ureq::config::Config, limits: Limits) -> Fetcher {
        Self::with_resolver(config, limits, DefaultResolver::default)
    }

    /// With another resolver underneath (tests: a name that resolves to
    /// loopback without touching DNS).
    pub(crate) fn with_resolver<R: Resolver>(
        config: ureq::config::Config,
        limits: Limits,
        resolver: impl Fn() -> R,
    ) -> Fetcher {
        let connector = || ureq::unversioned::transport::DefaultConnector::default();
        Fetcher {
            guarded: ureq::Agent::with_parts(
                config.clone(),
                connector(),
                Guard { inner: resolver() },
            ),
            open: ureq::Agent::with_parts(config, connector(), resolver()),
            limits,
        }
    }

    /// Fetches `url`; `reach_local` lets names resolve to local addresses.
    pub(crate) fn fetch(&self, url: &WebUrl, reach_local: bool) -> Result<Fetched, String> {
        let agent = if reach_local {
            &self.open
        } else {
            &self.guarded
        };
        let deadline = Instant::now() + self.limits.timeout;
        let mut current = url.clone();
        for _ in 0..=self.limits.redirects {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.timed_out(&current));
            }
            let shown = current.to_string();
            let response = agent
                .get(&shown)
                .config()
                .max_redirects(0)
                .timeout_global(Some(left))
                .build()
                .header(
                    "accept",
                    "text/html, text/markdown, text/plain, application/xhtml+xml, application/json;q=0.9, */*;q=0.5",
                )
                .call()
                .map_err(|e| self.describe(&current, e))?;
            let status = response.status().as_u16();
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            if (300..400).contains(&status)
                && let Some(location) = header("location")
            {
                let target = super::html::resolve(&shown, &location).ok_or_else(|| {
                    format!("{shown} redirected to {location:?}, which is not a web address")
                })?;
                let next = match url::parse(&target) {
                    Ok(n) => n,
                    Err(e) => {
                        return Err(format!(
                            "{shown} redirected to {target}, which WebFetch will not fetch: {e}"
                        ));
                    }
                };
                if !follows(&current, &next) {
                    return Ok(Fetched::Redirect {
                        from: shown,
                        to: next.to_string(),
                        status,
                    });
                }
                current = next;
                continue;
            }
            let content_type = header("content-type").unwrap_or_default();
            let mut body = Vec::new();
            let read = response
                .into_body()
                .into_reader()
                .take(self.limits.bytes as u64 + 1)
                .read_to_end(&mut body);
            if let Err(e) = read {
                if Instant::now() >= deadline {
                    return Err(self.timed_out(&current));
                }
                return Err(format!("reading {shown} failed: {e}"));
            }
            let truncated = body.len() > self.limits.bytes;
            body.truncate(self.limits.bytes);
            return Ok(Fetched::Page(Page {
                url: shown,
                status,
                content_type,
                body,
                truncated,
            }));
        }
        Err(format!(
            "{url} redirected more than {} times; not followed further",
            self.limits.redirects
        ))
    }

    fn timed_out(&self, url: &WebUrl) -> String {
        format!(
            "{url} did not answer within {} s (the whole fetch may take at most that long)",
            self.limits.timeout.as_secs_f32()
        )
    }

    fn describe(&self, url: &WebUrl, e: ureq::Error) -> String {
        match e {
            ureq::Error::Timeout(_) => self.timed_out(url),
            ureq::Error::HostNotFound => format!("{} could not be found (DNS)", url.host),
            ureq::Error::Io(io) if io.to_string().starts_with(LOCAL_REFUSED) => format!(
                "{}; WebFetch does not follow a name allowed as public to a local or private address. \
                 A WebFetch(domain:{}) rule allows it if that is intended.",
                io.to_string().trim_start_matches(LOCAL_REFUSED).trim(),
                url.host.bare()
            ),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("{url}: connection refused")
            }
            other => format!("fetching {url} failed: {other}"),
        }
    }
}

/// Is a redirect from `from` to `to` one tern follows by itself? The same
/// host (or its `www.` twin), the same port, and no move from https down
/// to http.
fn follows(from: &WebUrl, to: &WebUrl) -> bool {
    let twin = |a: &Host, b: &Host| match (a, b) {
        (Host::Name(a), Host::Name(b)) => {
            a == b
                || a.strip_prefix("www.") == Some(b.as_str())
                || b.strip_prefix("www.") == Some(a.as_str())
        }
        (a, b) => a == b,
    };
    let upgrade_port = !from.https && to.https && from.port.is_none() && to.port.is_none();
    twin(&from.host, &to.host)
        && (from.port == to.port || upgrade_port)
        && (to.https || !from.https)
}

/// Refuses addresses outside the public internet for names, except the
/// proxy's own (a local proxy is how many networks reach the web).
#[derive(Debug)]
struct Guard<R> {
    inner: R,
}

impl<R: Resolver> Resolver for Guard<R> {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let host = uri.host().unwrap_or("");
        if config.proxy().is_some_and(|p| p.host() == host) {
            return Ok(addrs);
        }
        if let Some(bad) = addrs.iter().find(|a| !url::is_public(a.ip())) {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{LOCAL_REFUSED} {host} resolves to {}", bad.ip()),
            )));
        }
        Ok(addrs)
    }
}

/// Text or not, by the content type, and by the bytes when it says
/// nothing or claims text: a NUL in the first 8 KB is not text.
pub(crate) fn is_text(content_type: &str, body: &[u8]) -> bool {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let textual = mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("+xml")
        || mime.ends_with("+json")
        || matches!(
            mime.as_str(),
            "application/xhtml+xml"
                | "application/xml"
                | "application/json"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        );
    textual && !body[..body.len().min(8192)].contains(&0)
}

/// The body as text, by the charset the content type names: UTF-8 unless
/// it says Latin-1 (or Windows-1252, read as Latin-1), invalid bytes
/// replaced.
pub(crate) fn decode(content_type: &str, body: &[u8]) -> String {
    let charset = content_type
        .split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase())
        .unwrap_or_default();
    match charset.as_str() {
        "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" | "us-ascii" => {
            body.iter().map(|&b| b as char).collect()
        }
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

/// Does the content type (or, without one, the start of the body) say HTML?
pub(crate) fn is_html(content_type: &str, body: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    if mime.eq_ignore_ascii_case("text/html") || mime.eq_ignore_ascii_case("application/xhtml+xml")
    {
        return true;
    }
    if !mime.is_empty() {
        return false;
    }
    let start: String = body
        .trim_start()
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> WebUrl {
        url::parse(s).unwrap()
    }

    #[test]
    fn redirects_followed_only_on_the_same_host() {
        assert!(follows(&u("https://a.io/x"), &u("https://a.io/y")));
        assert!(follows(&u("https://a.io/"), &u("https://www.a.io/")));
        assert!(follows(&u("https://www.a.io/"), &u("https://a.io/")));
        assert!(follows(&u("http://a.io/"), &u("https://a.io/")));
        assert!(follows(
            &u("http://127.0.0.1:5/"),
            &u("http://127.0.0.1:5/b")
        ));
        assert!(
            !follows(&u("https://a.io/"), &u("http://a.io/")),
            "downgrade"
        );
        assert!(!follows(&u("https://a.io/"), &u("https://b.io/")));
        assert!(!follows(&u("https://a.io/"), &u("https://a.io.evil.com/")));
        assert!(!follows(&u("https://a.io/"), &u("https://evil.a.io/")));
        assert!(!follows(
            &u("http://127.0.0.1:5/"),
            &u("http://127.0.0.1:6/")
        ));
        assert!(!follows(
            &u("http://127.0.0.1:5/"),
            &u("http://localhost:5/")
        ));
    }

    #[test]
    fn binary_is_told_from_text() {
        assert!(is_text("text/html; charset=utf-8", b"<p>hi</p>"));
        assert!(is_text("application/json", b"{}"));
        assert!(is_text("", b"plain words"));
        assert!(is_text("application/atom+xml", b"<feed/>"));
        assert!(!is_text("image/png", b"\x89PNG"));
        assert!(!is_text("application/octet-stream", b"abc"));
        assert!(!is_text("application/pdf", b"%PDF-1.7"));
        assert!(!is_text("text/plain", b"looks\0binary"));
        assert!(!is_text("", b"\x7fELF\x02\x01\x01\0\0"));
    }

    #[test]
    fn charsets() {
        assert_eq!(decode("text/html; charset=ISO-8859-1", b"caf\xe9"), "café");
        assert_eq!(decode("text/html", "café".as_bytes()), "café");
        assert_eq!(
            decode("text/plain; charset=\"utf-8\"", b"a\xffb"),
            "a\u{fffd}b"
        );
        assert!(is_html("", "  <!DOCTYPE html><p>"));
        assert!(!is_html("text/plain", "<html>"));
    }
}
