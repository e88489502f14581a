use super::discover::challenge_params;
use super::*;

#[test]
fn pkce_challenge_is_base64url_sha256() {
    // Computed independently (Python's hashlib and base64).
    assert_eq!(
        challenge("dBjftJeZ4CVP-mJ92K9RnnBaZaKXvwn9BcQ"),
        "WWtSa1fj2hachvgtH1xzUrLcqmPvtAjzdBqTGEu6Qrk"
    );
    let a = random_token().unwrap();
    let b = random_token().unwrap();
    assert_ne!(a, b);
    assert_eq!(a.len(), 43, "32 bytes, base64url without padding");
    assert!(
        a.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    );
}

#[test]
fn challenges_give_their_metadata_and_scope() {
    let (m, s) = challenge_params(
        r#"Bearer error="invalid_token", resource_metadata="https://x.example/.well-known/oauth-protected-resource", scope="read write""#,
    );
    assert_eq!(
        m.as_deref(),
        Some("https://x.example/.well-known/oauth-protected-resource")
    );
    assert_eq!(s.as_deref(), Some("read write"));
    assert_eq!(challenge_params("Bearer"), (None, None));
    assert_eq!(
        challenge_params("Bearer realm=x, scope=mcp").1.as_deref(),
        Some("mcp")
    );
    // Never panics on junk.
    for junk in ["", "=", "\"", "Bearer a=\"", "a=b,=,\"\"=", "é=ü"] {
        let _ = challenge_params(junk);
    }
}

#[test]
fn forms_round_trip_through_query_parsing() {
    let encoded = form_encode(&[
        ("redirect_uri", "http://127.0.0.1:5/cb?x=1&y"),
        ("s", "a b+é"),
    ]);
    assert_eq!(
        encoded,
        "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcb%3Fx%3D1%26y&s=a%20b%2B%C3%A9"
    );
    let back = query_pairs(&encoded);
    assert_eq!(back[0].1, "http://127.0.0.1:5/cb?x=1&y");
    assert_eq!(back[1].1, "a b+é");
    // Broken escapes stay as they are.
    assert_eq!(query_pairs("a=%zz%4")[0].1, "%zz%4");
    assert_eq!(query_pairs("a=%é")[0].1, "%é");
}

#[test]
fn pasted_addresses_and_codes() {
    assert_eq!(
        parse_pasted("http://127.0.0.1:3333/callback?code=abc%2F1&state=xyz\n"),
        Ok(("abc/1".to_string(), Some("xyz".to_string())))
    );
    assert_eq!(
        parse_pasted("  c0de-42 "),
        Ok(("c0de-42".to_string(), None))
    );
    assert!(
        parse_pasted("http://127.0.0.1/callback?error=access_denied&error_description=no%1b[2J")
            .unwrap_err()
            .contains("access_denied: no[2J")
    );
    assert!(parse_pasted("").is_err());
    assert!(parse_pasted("http://127.0.0.1/callback").is_err());
    assert!(parse_pasted("two words").is_err());
}

#[test]
fn tokens_are_kept_private_and_only_for_their_url() {
    let dir = std::env::temp_dir().join(format!("tern-oauth-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::new(&dir);
    let tokens = Tokens {
        access_token: "at".into(),
        refresh_token: Some("rt".into()),
        expires_at: Some(now() + 30),
        token_endpoint: "https://a.example/token".into(),
        client_id: "c".into(),
        server_url: "https://s.example/mcp".into(),
        ..Tokens::default()
    };
    let path = store.save("my server/../x", &tokens).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert!(path.starts_with(dir.join("mcp-auth")), "{path:?}");
    assert_eq!(
        store.load("my server/../x", "https://s.example/mcp"),
        Some(tokens.clone())
    );
    assert_eq!(
        store.load("my server/../x", "https://other.example/mcp"),
        None
    );
    // 30 s left is inside the renewal margin, not yet expired.
    assert!(tokens.stale() && !tokens.expired());
    assert!(
        store
            .delete("my server/../x", "https://s.example/mcp")
            .unwrap()
    );
    assert!(
        !store
            .delete("my server/../x", "https://s.example/mcp")
            .unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server of canned JSON documents on loopback: (path, body) pairs
/// built from its own base URL; anything else is 404.
fn canned(routes: impl FnOnce(&str) -> Vec<(String, String)>) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let routes = routes(&base);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = head.split(' ').nth(1).unwrap_or("").to_string();
            let answer = match routes.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .into(),
            };
            let _ = s.write_all(answer.as_bytes());
        }
    });
    base
}

fn agent() -> ureq::Agent {
    crate::mcp::http_agent(None).unwrap()
}

/// The documents of an honest server, with `tweak` applied to them.
fn documents(base: &str, tweak: &dyn Fn(&str, &mut String)) -> Vec<(String, String)> {
    let mut prm = format!(
        r#"{{"resource":"{base}/mcp","authorization_servers":["{base}/auth"],"scopes_supported":["mcp"]}}"#
    );
    let mut meta = format!(
        r#"{{"issuer":"{base}/auth","authorization_endpoint":"{base}/auth/authorize","token_endpoint":"{base}/auth/token","registration_endpoint":"{base}/auth/register","code_challenge_methods_supported":["S256"]}}"#
    );
    tweak("prm", &mut prm);
    tweak("meta", &mut meta);
    vec![
        ("/.well-known/oauth-protected-resource/mcp".into(), prm),
        ("/.well-known/oauth-authorization-server/auth".into(), meta),
    ]
}

#[test]
fn an_honest_servers_documents_give_its_endpoints() {
    let base = canned(|b| documents(b, &|_, _| {}));
    let found = discover::endpoints(&agent(), &format!("{base}/mcp"), None, None).unwrap();
    assert_eq!(found.token, format!("{base}/auth/token"));
    assert_eq!(
        found.register.as_deref(),
        Some(format!("{base}/auth/register").as_str())
    );
    assert_eq!(found.resource, format!("{base}/mcp"));
    assert_eq!(found.scope.as_deref(), Some("mcp"));
    // The challenge's own metadata address and scope come first.
    let challenge = format!(
        r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", scope="tools""#
    );
    let found =
        discover::endpoints(&agent(), &format!("{base}/mcp"), Some(&challenge), None).unwrap();
    assert_eq!(found.scope.as_deref(), Some("tools"));
}

/// Each hostile document is refused; without the checks, each would send
/// the sign-in (or the tokens) where the document says.
#[test]
fn documents_that_point_elsewhere_are_refused() {
    type Tweak<'a> = &'a dyn Fn(&str, &mut String);
    let attacks: [(&str, Tweak, &str); 5] = [
        (
            "metadata for another resource",
            &|which, doc: &mut String| {
                if which == "prm" {
                    *doc = doc.replacen("/mcp\"", "/other\"", 1);
                }
            },
            "refusing to sign in",
        ),
        (
            "an authorization server on a plain-HTTP host",
            &|which, doc: &mut String| {
                if which == "prm" {
                    *doc = r#"{"authorization_servers":["http://evil.example/auth"]}"#.into();
                }
            },
            "not HTTPS",
        ),
        (
            "metadata naming another issuer",
            &|which, doc: &mut String| {
                if which == "meta" {
                    *doc = doc.replacen("/auth\"", "/evil\"", 1);
                }
            },
            "names the issuer",
        ),
        (
            "a token endpoint on a plain-HTTP host",
            &|which, doc: &mut String| {
                if which == "meta" {
                    let at = doc.find("\"token_endpoint\":\"").unwrap() + 18;
                    let end = doc[at..].find('"').unwrap() + at;
                    doc.replace_range(at..end, "http://evil.example/token");
                }
            },
            "not HTTPS",
        ),
        (
            "no PKCE with S256",
            &|which, doc: &mut String| {
                if which == "meta" {
                    *doc = doc.replace("[\"S256\"]", "[\"plain\"]");
                }
            },
            "S256",
        ),
    ];
    for (what, tweak, said) in attacks {
        let base = canned(|b| documents(b, tweak));
        let got = discover::endpoints(&agent(), &format!("{base}/mcp"), None, None);
        match got {
            Err(e) => assert!(e.contains(said), "{what}: {e}"),
            Ok(e) => panic!("{what}: accepted {e:?}"),
        }
    }
}
