//! The domain filter for `sandbox.network.allowedDomains`: a small HTTP
//! proxy (CONNECT for TLS, absolute-form requests for plain HTTP) that the
//! supervisor runs for its command. The command's proxy variables point at
//! it; it is the only address the command may connect to. A host passes
//! when it equals an allowed name or, for `*.example.com`, is a subdomain
//! of it; everything else gets a 403 and is reported on the command's
//! stderr. TLS is not inspected: a host that serves several names (a CDN)
//! can be reached under an allowed one.
//!
//! Names are resolved here, outside the sandbox; link-local addresses
//! (cloud metadata services) are refused unless listed literally.

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

const MAX_HEAD: usize = 32 * 1024;

/// Whether `host` is allowed by `patterns`.
pub(crate) fn allowed(patterns: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return false;
    }
    patterns.iter().any(|p| {
        let p = p.trim().trim_end_matches('.').to_ascii_lowercase();
        match p.strip_prefix("*.") {
            Some(base) => host.len() > base.len() + 1 && host.ends_with(&format!(".{base}")),
            None => host == p,
        }
    })
}

fn link_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    }
}

/// A parsed request head: where to, and what to send upstream.
struct Request {
    host: String,
    port: u16,
    connect: bool,
    /// The head to forward (plain HTTP, rewritten to origin-form).
    head: Vec<u8>,
}

fn split_host_port(s: &str, default: u16) -> Option<(String, u16)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default,
        };
        return Some((h.to_string(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Some((h.to_string(), p.parse().ok()?)),
        _ => Some((s.to_string(), default)),
    }
}

fn parse(head: &[u8]) -> Result<Request, &'static str> {
    let text = std::str::from_utf8(head).map_err(|_| "the request is not text")?;
    let mut lines = text.split("\r\n");
    let first = lines.next().ok_or("empty request")?;
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed request line");
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target, 443).ok_or("malformed CONNECT target")?;
        return Ok(Request {
            host,
            port,
            connect: true,
            head: Vec::new(),
        });
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or("only CONNECT and absolute http:// requests are proxied")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_host_port(authority, 80).ok_or("malformed host")?;
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines {
        let name = line.split(':').next().unwrap_or("").trim();
        if name.eq_ignore_ascii_case("proxy-connection")
            || name.eq_ignore_ascii_case("proxy-authorization")
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    // `lines` ended with the two empty strings of the blank line.
    while out.ends_with("\r\n\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
    Ok(Request {
        host,
        port,
        connect: false,
        head: out.into_bytes(),
    })
}

/// Reads up to the end of the head; returns (head, bytes after it).
fn read_head(s: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(i + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}

fn refuse(s: &mut TcpStream, status: &str, why: &str) {
    let body = format!("tern sandbox: {why}\n");
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn upstream(req: &Request, literal_ok: bool) -> std::io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = (req.host.as_str(), req.port).to_socket_addrs()?.collect();
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    for a in addrs {
        if link_local(&a.ip()) && !literal_ok {
            last = std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "link-local addresses are refused",
            );
            continue;
        }
        match TcpStream::connect_timeout(&a, Duration::from_secs(15)) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn relay(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let one = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || pipe(a2, b2));
    pipe(b, a);
    if let Ok(h) = one {
        let _ = h.join();
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

fn handle(mut client: TcpStream, allow: &[String], report: &dyn Fn(String)) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(60)));
    let Ok((head, rest)) = read_head(&mut client) else {
        return;
    };
    let req = match parse(&head) {
        Ok(r) => r,
        Err(why) => {
            refuse(&mut client, "400 Bad Request", why);
            return;
        }
    };
    if !allowed(allow, &req.host) {
        let why = format!("{} is not in sandbox.network.allowedDomains", req.host);
        report(format!(
            "refused a network request to {}:{} ({why})",
            req.host, req.port
        ));
        refuse(&mut client, "403 Forbidden", &why);
        return;
    }
    let literal = req.host.parse::<IpAddr>().is_ok();
    let mut up = match upstream(&req, literal) {
        Ok(s) => s,
        Err(e) => {
            refuse(
                &mut client,
                "502 Bad Gateway",
                &format!("cannot reach {}: {e}", req.host),
            );
            return;
        }
    };
    let _ = client.set_read_timeout(None);
    let sent = if req.connect {
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .and_then(|_| up.write_all(&rest))
    } else {
        up.write_all(&req.head).and_then(|_| up.write_all(&rest))
    };
    if sent.is_ok() {
        relay(client, up);
    }
}

/// Accepts connections for as long as the supervisor lives.
pub(crate) fn serve(
    listener: TcpListener,
    allow: Arc<Vec<String>>,
    report: Arc<dyn Fn(String) + Send + Sync>,
) {
    let _ = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (allow, report) = (Arc::clone(&allow), Arc::clone(&report));
                let _ = std::thread::Builder::new()
                    .stack_size(128 * 1024)
                    .spawn(move || handle(conn, &allow, &*report));
            }
        });
}

/// The variables that point programs at the proxy.
pub(crate) fn env(port: u16) -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut v: Vec<(&'static str, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .iter()
    .map(|k| (*k, url.clone()))
    .collect();
    // Everything goes through the proxy, loopback names included.
    v.push(("NO_PROXY", String::new()));
    v.push(("no_proxy", String::new()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_exactly_or_as_subdomains() {
        let p = vec!["example.com".to_string(), "*.example.org".to_string()];
        assert!(allowed(&p, "example.com"));
        assert!(allowed(&p, "Example.com."));
        assert!(!allowed(&p, "api.example.com"));
        assert!(!allowed(&p, "evilexample.com"));
        assert!(allowed(&p, "files.example.org"));
        assert!(!allowed(&p, "example.org"));
        assert!(!allowed(&p, "example.org.evil.test"));
        assert!(!allowed(&p, "x.evilexample.org"));
        assert!(!allowed(&p, ""));
        assert!(!allowed(&p, "127.0.0.1"));
    }

    #[test]
    fn requests_are_parsed_and_rewritten() {
        let c =
            parse(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").unwrap();
        assert!(c.connect);
        assert_eq!((c.host.as_str(), c.port), ("example.com", 443));
        let g = parse(
            b"GET http://localhost:8080/a?b=1 HTTP/1.1\r\nHost: localhost:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert!(!g.connect);
        assert_eq!((g.host.as_str(), g.port), ("localhost", 8080));
        assert_eq!(
            String::from_utf8(g.head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n\r\n"
        );
        let v6 = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 8443));
        assert!(parse(b"GET /relative HTTP/1.1\r\n\r\n").is_err());
        let user = parse(b"GET http://u:p@evil.com/ HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(user.host, "evil.com");
    }
}
