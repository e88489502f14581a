//! The one URL reader policy and WebFetch share.
//!
//! A URL the model writes is read strictly, once, into the parts that
//! decide where a request goes: scheme, host, port. Policy matches
//! `WebFetch(domain:…)` rules against the host this reader found, and the
//! tool sends its request to the URL this reader printed back, so a rule
//! and the request cannot disagree about the host (the classic tricks —
//! `https://good.com@evil.com/`, `https://evil.com\@good.com/`,
//! `http://2130706433/`, `http://0x7f.1/`, a trailing dot, upper case —
//! are either refused or normalised before anyone compares anything).
//!
//! Refused outright: schemes other than http and https (`file:`, `ftp:`,
//! `data:`…), a user name or password in the URL (tern never sends one,
//! and a model should not be carrying them), hosts that are not plain
//! ASCII names or IP addresses (IDN: give the `xn--` form), numeric hosts
//! in any form but a dotted quad, control characters anywhere.
//!
//! Hosts are classed as public or local: loopback, private, link-local,
//! unspecified and other special-purpose addresses, and `localhost`
//! (RFC 6761) are local. Policy asks about local hosts unless a rule names
//! them; the fetcher refuses public names that resolve to local addresses
//! unless the permit allows local ones.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A URL as WebFetch may request it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebUrl {
    pub https: bool,
    pub host: Host,
    /// Only when written and not the scheme's default.
    pub port: Option<u16>,
    /// Path and query, percent-encoded where needed; starts with `/`.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A DNS name: lower case, no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
        }
    }
}

impl fmt::Display for WebUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}", self.host)?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        f.write_str(&self.path)
    }
}

impl WebUrl {
    /// `scheme://host[:port]`: what a same-origin check compares (MCP's
    /// OAuth discovery and SSE endpoints).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        match self.port {
            Some(p) => format!("{scheme}://{}:{p}", self.host),
            None => format!("{scheme}://{}", self.host),
        }
    }
}

impl Host {
    /// Loopback, private, link-local and other addresses that are not the
    /// public internet, and `localhost` with its subdomains.
    pub fn is_local(&self) -> bool {
        match self {
            Host::Name(n) => n == "localhost" || n.ends_with(".localhost"),
            Host::Ip(ip) => !is_public(*ip),
        }
    }

    /// The host without brackets, as written in a `domain:` rule.
    pub fn bare(&self) -> String {
        match self {
            Host::Name(n) => n.clone(),
            Host::Ip(ip) => ip.to_string(),
        }
    }

    /// Does a `domain:` spec cover this host? A name covers itself and
    /// its subdomains; an address covers only itself.
    pub fn matches_domain(&self, spec: &str) -> bool {
        let spec = spec.trim().trim_end_matches('.').to_ascii_lowercase();
        let spec = spec
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .unwrap_or(&spec);
        match self {
            Host::Name(n) => !spec.is_empty() && (*n == spec || n.ends_with(&format!(".{spec}"))),
            Host::Ip(ip) => spec.parse::<IpAddr>().is_ok_and(|s| s == *ip),
        }
    }
}

/// Reads a URL the way WebFetch will request it, or says why it will not.
pub fn parse(url: &str) -> Result<WebUrl, String> {
    if url.chars().any(|c| c.is_control()) {
        return Err("the URL contains control characters".into());
    }
    let url = url.trim_matches(' ');
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err("not an absolute URL (expected https://host/path)".into());
    };
    let https = match scheme.to_ascii_lowercase().as_str() {
        "https" => true,
        "http" => false,
        other => {
            return Err(format!(
                "WebFetch fetches http and https URLs only, not {other}:"
            ));
        }
    };
    let Some(rest) = rest.strip_prefix("//") else {
        return Err("not an absolute URL (expected https://host/path)".into());
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(
            "the URL carries a user name or password; WebFetch does not send credentials (fetch it without them)"
                .into(),
        );
    }
    if authority.contains(['\\', '%', ' ']) {
        return Err(format!("{authority:?} is not a valid host"));
    }
    let (host, port) = split_port(authority)?;
    let host = parse_host(host)?;
    let default = if https { 443 } else { 80 };
    Ok(WebUrl {
        https,
        host,
        port: port.filter(|p| *p != default),
        path: encode_path(tail),
    })
}

fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let close = rest
            .find(']')
            .ok_or_else(|| format!("{authority:?} is not a valid host"))?;
        let after = &rest[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("{authority:?} is not a valid host")),
        };
        (&authority[..close + 2], port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("{p:?} is not a valid port"))?,
        ),
    };
    Ok((host, port))
}

fn parse_host(host: &str) -> Result<Host, String> {
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|a| Host::Ip(IpAddr::V6(a)))
            .map_err(|_| format!("{host:?} is not a valid IPv6 address"));
    }
    if !host.is_ascii() {
        return Err(format!(
            "{host:?} is not an ASCII host name; give its xn-- (punycode) form"
        ));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if let Ok(a) = name.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(a)));
    }
    let labels: Vec<&str> = name.split('.').collect();
    let valid_label = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 || !labels.iter().all(valid_label) {
        return Err(format!("{host:?} is not a valid host name"));
    }
    // A resolver reads `2130706433`, `0x7f.1` or `127.1` as an address:
    // only the dotted quad is taken as one, and a name whose last label
    // looks numeric is refused rather than left to a resolver's reading.
    let last = labels.last().copied().unwrap_or("");
    if last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x") {
        return Err(format!(
            "{host:?} is not a valid host (write an IPv4 address as four decimal numbers)"
        ));
    }
    Ok(Host::Name(name))
}

/// The path and query as sent: the fragment dropped, spaces, quotes,
/// backslashes and non-ASCII percent-encoded.
fn encode_path(tail: &str) -> String {
    let tail = tail.split('#').next().unwrap_or("");
    let mut out = String::with_capacity(tail.len() + 1);
    if !tail.starts_with('/') {
        out.push('/');
    }
    for b in tail.bytes() {
        match b {
            b' ' | b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}' | 0x80.. => {
                out.push_str(&format!("%{b:02X}"))
            }
            _ => out.push(b as char),
        }
    }
    out
}

/// The public internet: not loopback, private, link-local, shared
/// (CGNAT), benchmarking, documentation, multicast, broadcast or
/// unspecified; IPv4-mapped and NAT64 IPv6 judged by their IPv4 part.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || a.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 198 && (18..20).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || o[0] >= 240)
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = a.segments();
            if s[0] == 0x64 && s[1] == 0xff9b {
                let v4 =
                    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
                return is_public(IpAddr::V4(v4));
            }
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                // IPv4-compatible (deprecated) ::a.b.c.d
                || (s[..6] == [0; 6]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(url: &str) -> String {
        parse(url).unwrap().host.to_string()
    }

    #[test]
    fn the_host_is_the_one_a_request_would_reach() {
        assert_eq!(host("https://Example.COM./a"), "example.com");
        assert_eq!(host("https://example.com:8443/x?y#z"), "example.com");
        assert_eq!(host("http://127.0.0.1:9/"), "127.0.0.1");
        assert_eq!(host("http://[::1]:80/"), "[::1]");
        assert_eq!(host("HTTPS://a.b"), "a.b");
        let u = parse("https://example.com/a b\"é#frag").unwrap();
        assert_eq!(u.to_string(), "https://example.com/a%20b%22%C3%A9");
        assert_eq!(
            parse("https://example.com").unwrap().to_string(),
            "https://example.com/"
        );
        assert_eq!(
            parse("https://example.com:443?q").unwrap().to_string(),
            "https://example.com/?q"
        );
        assert_eq!(parse("http://h.io:8080/").unwrap().port, Some(8080));
    }

    #[test]
    fn tricks_that_move_the_host_are_refused() {
        for bad in [
            "https://good.com@evil.com/",
            "https://user:pw@good.com/",
            "https://evil.com\\@good.com/",
            "https://evil.com\\.good.com/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0x7f000001/",
            "http://127.1/",
            "http://017700000001/",
            "https://exa mple.com/",
            "https://ex%61mple.com/",
            "https://bücher.de/",
            "https://a..b/",
            "https:///path",
            "https://-x.com/",
            "https://x.com:99999/",
            "https://x.com:abc/",
            "https://[::1/",
            "https://[::1]x/",
            "https://x.com/\u{0}",
            "https://x.com\n.evil/",
        ] {
            assert!(parse(bad).is_err(), "{bad} was accepted: {:?}", parse(bad));
        }
    }

    #[test]
    fn only_http_and_https() {
        for bad in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "data:text/html,hi",
            "javascript:alert(1)",
            "gopher://x/",
            "example.com/page",
            "//example.com/",
            "https:example.com",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(
            parse("file:///etc/passwd")
                .unwrap_err()
                .contains("http and https URLs only")
        );
        assert!(parse("https://a@b.c/").unwrap_err().contains("password"));
    }

    #[test]
    fn local_hosts_are_known() {
        for local in [
            "http://localhost/",
            "http://api.localhost/",
            "http://127.0.0.1/",
            "http://127.8.9.10/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://[::1]/",
            "http://[::]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[::127.0.0.1]/",
        ] {
            assert!(parse(local).unwrap().host.is_local(), "{local}");
        }
        for public in [
            "https://example.com/",
            "https://93.184.215.14/",
            "https://[2606:4700::1111]/",
            "https://8.8.8.8/",
            "https://localhost.example.com/",
        ] {
            assert!(!parse(public).unwrap().host.is_local(), "{public}");
        }
    }

    #[test]
    fn domain_specs_cover_the_host_and_its_subdomains() {
        let h = |u: &str| parse(u).unwrap().host;
        assert!(h("https://docs.rs/x").matches_domain("docs.rs"));
        assert!(h("https://a.b.docs.rs/").matches_domain("docs.rs"));
        assert!(h("https://docs.rs/").matches_domain("DOCS.RS."));
        assert!(!h("https://evildocs.rs/").matches_domain("docs.rs"));
        assert!(!h("https://docs.rs.evil.com/").matches_domain("docs.rs"));
        assert!(!h("https://docs.rs/").matches_domain(""));
        assert!(h("http://127.0.0.1:8/").matches_domain("127.0.0.1"));
        assert!(!h("http://127.0.0.2/").matches_domain("127.0.0.1"));
        assert!(!h("http://127.0.0.1/").matches_domain("0.0.1"));
        assert!(h("http://[::1]/").matches_domain("[::1]"));
        assert!(h("http://[::1]/").matches_domain("::1"));
    }
}
