//! OAuth for remote MCP servers against the scripted authorization and
//! resource server of `tests/mcp/scripted_http.py` on 127.0.0.1: sign-in
//! by pasted address and by redirect, renewal, the token endpoint auth
//! method the server asks for, pre-registered clients, sign-in asked for
//! after `initialize`, scope step-up, `client_credentials` with a secret
//! and with a signed assertion, and servers that misbehave.
#![cfg(feature = "mcp")]

use crate::remote_support;
use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use remote_support::*;
use support::standin;
use support::*;
use tern::json::{self, Value};
use tern::obj;

/// GET without following redirects: the status and the Location.
fn get_location(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let location = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Location: ")
                .or(l.strip_prefix("location: "))
        })
        .map(|l| l.trim().to_string());
    (status, location)
}

/// `tern mcp login s`: its output lines as they come, and its stdin.
struct Login {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Login {
    fn start(dir: &Path, mcp: &str) -> Login {
        Login::start_with(dir, mcp, &[])
    }

    fn start_with(dir: &Path, mcp: &str, env: &[(&str, &str)]) -> Login {
        let mut cmd = tern("http://127.0.0.1:9", dir);
        cmd.envs(env.iter().copied());
        cmd.args(["mcp", "login", "s", "--mcp-config", mcp])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        for stream in [Box::new(out) as Box<dyn Read + Send>, Box::new(err)] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Login { child, lines }
    }

    /// The authorization address tern printed.
    fn address(&self) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("tern printed no sign-in address");
            if let Some(url) = line
                .trim()
                .strip_prefix("http")
                .filter(|_| line.contains("authorize"))
            {
                return format!("http{url}");
            }
        }
    }

    /// Waits for tern, then reads what it said to the end of both streams: the readers may
    /// still hold its last lines when it exits (a bare `try_iter` lost them once in CI).
    fn finish(mut self) -> (bool, String) {
        let status = self.child.wait().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        let mut said = Vec::new();
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => said.push(line),
                Err(_) => break,
            }
        }
        (status.success(), said.join("\n"))
    }
}

fn token_file(dir: &Path) -> Option<PathBuf> {
    let auth = home_of(dir).join(".local/share/tern/mcp-auth");
    std::fs::read_dir(auth)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
}

#[test]
fn oauth_sign_in_by_pasted_address_then_by_redirect_with_refresh_and_expiry() {
    let dir = scratch("mcp-oauth");
    let srv = scripted(
        "oauth",
        &dir,
        &[
            ("SCRIPTED_TOKEN_TTL", "2"),
            ("SCRIPTED_REQUIRE_RESOURCE", "1"),
        ],
    );
    let mcp = config("s", http(&srv.url("/mcp")));
    // Before signing in: the server is listed as needing it, with the way.
    let listed = run(tern("http://127.0.0.1:9", &dir).args(["mcp", "list", "--mcp-config", &mcp]));
    let said = String::from_utf8_lossy(&listed.stdout);
    assert!(
        said.contains("needs-auth") && said.contains("tern mcp login s"),
        "{said}"
    );

    // No browser here: the test plays it, and pastes where it ended up.
    let mut login = Login::start(&dir, &mcp);
    let address = login.address();
    assert!(address.contains("code_challenge_method=S256") && address.contains("resource="));
    let (status, location) = get_location(&address);
    assert_eq!(status, 302, "the authorization server refused: {address}");
    let back = location.unwrap();
    assert!(back.starts_with("http://127.0.0.1:") && back.contains("code="));
    // A wrong paste is said and a second try is taken.
    let stdin = login.child.stdin.as_mut().unwrap();
    writeln!(stdin, "not a code at all").unwrap();
    writeln!(stdin, "{back}").unwrap();
    let (ok, said) = login.finish();
    assert!(ok, "{said}");
    assert!(
        said.contains("Signed in to s") && said.contains("paste the address again"),
        "{said}"
    );
    assert!(!said.contains("access_token"), "tokens printed: {said}");
    let file = token_file(&dir).expect("no token file");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // The tokens live two seconds: each use renews them first.
    std::thread::sleep(Duration::from_millis(2100));
    let (out, api) = session(
        &dir,
        &mcp,
        "echo",
        vec![
            standin::tools_reply(&[("t1", "mcp__s__echo", r#"{"text":"signed"}"#)]),
            standin::text_reply("done"),
        ],
    );
    assert_ok(&out);
    assert!(result_texts(&api.requests()[1]).contains("echo: signed"));
    let log = srv.requests();
    let refreshed = log.iter().any(|r| {
        r.str_field("path") == Some("/auth/token")
            && r.get("body")
                .map(Value::to_json)
                .unwrap_or_default()
                .contains("refresh_token")
    });
    assert!(refreshed, "no refresh grant in {log:?}");
    let bearer = log.iter().any(|r| {
        r.get("headers")
            .and_then(|h| h.str_field("authorization"))
            .is_some_and(|a| a.starts_with("Bearer "))
    });
    assert!(bearer);
    // Nothing of the tokens in the transcript or the output.
    let saved = std::fs::read_to_string(&file).unwrap();
    let token = json::parse(&saved)
        .unwrap()
        .str_field("access_token")
        .unwrap()
        .to_string();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&token));

    // The redirect way: the "browser" follows the address back to tern.
    let mut login = Login::start(&dir, &mcp);
    let address = login.address();
    let (_, location) = get_location(&address);
    let (status, _) = get_location(&location.unwrap());
    assert_eq!(status, 200);
    drop(login.child.stdin.take());
    let (ok, said) = login.finish();
    assert!(ok, "{said}");

    // Logged out: the file is gone and the server needs a sign-in again.
    let out =
        run(tern("http://127.0.0.1:9", &dir).args(["mcp", "logout", "s", "--mcp-config", &mcp]));
    assert_ok(&out);
    assert!(token_file(&dir).is_none());
}

#[test]
fn a_refused_renewal_asks_for_a_new_sign_in() {
    let dir = scratch("mcp-oauth-expired");
    let srv = scripted(
        "oauth",
        &dir,
        &[("SCRIPTED_TOKEN_TTL", "1"), ("SCRIPTED_REFRESH_FAILS", "1")],
    );
    let mcp = config("s", http(&srv.url("/mcp")));
    let mut login = Login::start(&dir, &mcp);
    let address = login.address();
    let (_, location) = get_location(&address);
    writeln!(login.child.stdin.as_mut().unwrap(), "{}", location.unwrap()).unwrap();
    let (ok, said) = login.finish();
    assert!(ok, "{said}");
    std::thread::sleep(Duration::from_millis(1100));
    let listed = run(tern("http://127.0.0.1:9", &dir).args(["mcp", "list", "--mcp-config", &mcp]));
    let said = String::from_utf8_lossy(&listed.stdout);
    assert!(
        said.contains("needs-auth") && said.contains("refused to renew"),
        "{said}"
    );
}

/// `tern mcp list` with one server: what it printed.
fn list(dir: &Path, mcp: &str, env: &[(&str, &str)]) -> String {
    let out = run(tern("http://127.0.0.1:9", dir)
        .args(["mcp", "list", "--mcp-config", mcp])
        .envs(env.iter().copied()));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Signs in by following the address and pasting where it ended.
fn login(dir: &Path, mcp: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let mut login = Login::start_with(dir, mcp, env);
    let address = login.address();
    let (_, location) = get_location(&address);
    if let Some(back) = location {
        writeln!(login.child.stdin.as_mut().unwrap(), "{back}").unwrap();
    }
    drop(login.child.stdin.take());
    let (ok, said) = login.finish();
    (ok, said, address)
}

/// The token requests the server saw: (authorization header, body).
fn token_requests(srv: &Server) -> Vec<(String, String)> {
    srv.requests()
        .iter()
        .filter(|r| r.str_field("path") == Some("/auth/token"))
        .map(|r| {
            let auth = r
                .get("headers")
                .and_then(|h| h.str_field("authorization"))
                .unwrap_or_default()
                .to_string();
            let body = r.get("body").map(Value::to_json).unwrap_or_default();
            (auth, body)
        })
        .collect()
}

fn echo_session(dir: &Path, mcp: &str, env: &[(&str, &str)]) -> (std::process::Output, String) {
    let api = standin::StandIn::start(vec![
        standin::tools_reply(&[("t1", "mcp__s__echo", r#"{"text":"hi"}"#)]),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, dir)
        .args([
            "-p",
            "echo",
            "--mcp-config",
            mcp,
            "--permission-mode",
            "bypassPermissions",
        ])
        .envs(env.iter().copied()));
    let requests = api.requests();
    let results = requests.get(1).map(result_texts).unwrap_or_default();
    (out, results)
}

#[test]
fn the_token_endpoint_gets_the_auth_method_the_server_lists() {
    for method in ["client_secret_basic", "client_secret_post"] {
        let dir = scratch(&format!("mcp-oauth-{method}"));
        let srv = scripted(
            "oauth",
            &dir,
            &[
                ("SCRIPTED_AUTH_METHOD", method),
                ("SCRIPTED_TOKEN_TTL", "2"),
            ],
        );
        let mcp = config("s", http(&srv.url("/mcp")));
        let (ok, said, _) = login(&dir, &mcp, &[]);
        assert!(ok, "{method}: {said}");
        // Renewed with the same method.
        std::thread::sleep(Duration::from_millis(2100));
        let (out, results) = echo_session(&dir, &mcp, &[]);
        assert_ok(&out);
        assert!(results.contains("echo: hi"), "{method}: {results}");
        let sent = token_requests(&srv);
        assert!(sent.len() >= 2, "{sent:?}");
        for (auth, body) in &sent {
            let basic = auth.starts_with("Basic ");
            assert_eq!(basic, method == "client_secret_basic", "{auth} {body}");
            assert_eq!(body.contains("client_secret"), !basic, "{body}");
        }
        assert!(sent.iter().any(|(_, b)| b.contains("refresh_token")));
    }
}

#[test]
fn a_pre_registered_client_takes_its_secret_from_the_environment() {
    let dir = scratch("mcp-oauth-preset");
    let srv = scripted(
        "oauth",
        &dir,
        &[
            ("SCRIPTED_NO_REGISTRATION", "1"),
            ("SCRIPTED_AUTH_METHOD", "client_secret_basic"),
        ],
    );
    let mut entry = http(&srv.url("/mcp"));
    entry.as_object_mut().unwrap().insert(
        "oauth",
        obj! { "clientId" => "preset-client", "clientSecret" => "${PRESET_SECRET}" },
    );
    let mcp = config("s", entry);
    let (ok, said, _) = login(&dir, &mcp, &[("PRESET_SECRET", "preset-secret")]);
    assert!(ok, "{said}");
    let sent = token_requests(&srv);
    assert!(sent[0].0.starts_with("Basic "), "{sent:?}");
    assert!(!said.contains("preset-secret"));
    let (out, results) = echo_session(&dir, &mcp, &[("PRESET_SECRET", "preset-secret")]);
    assert_ok(&out);
    assert!(results.contains("echo: hi"), "{results}");
}

/// Regression: a server that let initialize through and asked for a
/// sign-in on tools/list was needs-auth in the list while login said
/// there was nothing to log in to.
#[test]
fn a_sign_in_asked_for_after_initialize_is_one_login_can_do() {
    let dir = scratch("mcp-oauth-init-open");
    let srv = scripted("oauth", &dir, &[("SCRIPTED_INIT_OPEN", "1")]);
    let mcp = config("s", http(&srv.url("/mcp")));
    assert!(list(&dir, &mcp, &[]).contains("needs-auth"));
    let (ok, said, _) = login(&dir, &mcp, &[]);
    assert!(ok, "{said}");
    assert!(list(&dir, &mcp, &[]).contains("connected"));
}

#[test]
fn scope_step_up_in_a_session_with_a_browser_and_without_one() {
    let dir = scratch("mcp-oauth-step-up");
    let srv = scripted("oauth", &dir, &[("SCRIPTED_STEP_UP", "extra")]);
    let mcp = config("s", http(&srv.url("/mcp")));
    let (ok, said, first) = login(&dir, &mcp, &[]);
    assert!(ok, "{said}");
    assert!(!first.contains("extra"), "{first}");
    // No browser: the call fails saying what to do, and the scope is kept.
    let (out, results) = echo_session(&dir, &mcp, &[("BROWSER", ""), ("DISPLAY", "")]);
    assert_ok(&out);
    assert!(
        results.contains("mcp extra") && results.contains("tern mcp login s"),
        "{results}"
    );
    // The next login asks for the union.
    let (ok, said, second) = login(&dir, &mcp, &[]);
    assert!(ok, "{said}");
    assert!(second.contains("scope=mcp%20extra"), "{second}");
    let (out, results) = echo_session(&dir, &mcp, &[]);
    assert_ok(&out);
    assert!(results.contains("echo: hi"), "{results}");

    // With a browser, the session asks by itself and carries on.
    let dir = scratch("mcp-oauth-step-up-browser");
    let (ok, said, _) = login(&dir, &mcp, &[]);
    assert!(ok, "{said}");
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])' \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = srv.requests().len();
    let (out, results) = echo_session(&dir, &mcp, &[("BROWSER", browser.to_str().unwrap())]);
    assert_ok(&out);
    assert!(results.contains("echo: hi"), "{results}");
    let asked = srv.requests()[before..]
        .iter()
        .filter(|r| {
            r.str_field("path")
                .is_some_and(|p| p.starts_with("/auth/authorize") && p.contains("mcp%20extra"))
        })
        .count();
    assert_eq!(asked, 1);
}

/// Whether the Python that runs the scripted server can check signatures.
fn python_has_cryptography() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import cryptography"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn client_credentials_with_a_secret_and_with_a_signed_assertion() {
    // A secret, sent by HTTP Basic: no login, no person.
    let dir = scratch("mcp-oauth-machine-secret");
    let srv = scripted(
        "oauth",
        &dir,
        &[
            ("SCRIPTED_MACHINE", "secret"),
            ("SCRIPTED_AUTH_METHOD", "client_secret_basic"),
        ],
    );
    let entry = |secret: &str| {
        let mut e = http(&srv.url("/mcp"));
        e.as_object_mut().unwrap().insert(
            "oauth",
            obj! { "clientId" => "machine-client", "clientSecret" => secret, "grant" => "client_credentials" },
        );
        config("s", e)
    };
    let mcp = entry("${MACHINE_SECRET}");
    let env = [("MACHINE_SECRET", "machine-secret")];
    let listed = list(&dir, &mcp, &env);
    assert!(listed.contains("connected"), "{listed}");
    let (out, results) = echo_session(&dir, &mcp, &env);
    assert_ok(&out);
    assert!(results.contains("echo: hi"), "{results}");
    assert!(
        token_requests(&srv)
            .iter()
            .all(|(a, b)| a.starts_with("Basic ") && b.contains("client_credentials"))
    );
    // A wrong secret is said, and nothing is kept.
    let dir = scratch("mcp-oauth-machine-wrong");
    let listed = list(&dir, &entry("not-it"), &[]);
    assert!(
        listed.contains("failed") && listed.contains("wrong client secret"),
        "{listed}"
    );
    assert!(token_file(&dir).is_none());

    if !python_has_cryptography() {
        skip(
            "client_credentials_with_a_signed_assertion",
            "python3 has no cryptography module to check the assertion (ci/setup.sh installs python3-cryptography)",
        );
        return;
    }
    let dir = scratch("mcp-oauth-machine-jwt");
    let key = dir.join("client-key.pem");
    let srv = scripted(
        "oauth",
        &dir,
        &[
            ("SCRIPTED_MACHINE", "jwt"),
            ("SCRIPTED_MACHINE_KEY_FILE", key.to_str().unwrap()),
        ],
    );
    let mut e = http(&srv.url("/mcp"));
    e.as_object_mut().unwrap().insert(
        "oauth",
        obj! { "clientId" => "machine-client", "privateKeyFile" => key.to_str().unwrap(), "grant" => "client_credentials" },
    );
    let mcp = config("s", e);
    let listed = list(&dir, &mcp, &[]);
    assert!(listed.contains("connected"), "{listed}");
    let (out, results) = echo_session(&dir, &mcp, &[]);
    assert_ok(&out);
    assert!(results.contains("echo: hi"), "{results}");
    let sent = token_requests(&srv);
    assert!(
        sent.iter().all(|(_, b)| b.contains("client_assertion")),
        "{sent:?}"
    );
}

#[test]
fn a_server_that_refuses_every_token_gets_a_bounded_try_and_a_clear_error() {
    let dir = scratch("mcp-oauth-401-loop");
    let srv = scripted(
        "oauth",
        &dir,
        &[
            ("SCRIPTED_MACHINE", "secret"),
            ("SCRIPTED_AUTH_METHOD", "client_secret_post"),
            ("SCRIPTED_ALWAYS_401", "1"),
        ],
    );
    let mut e = http(&srv.url("/mcp"));
    e.as_object_mut().unwrap().insert(
        "oauth",
        obj! { "clientId" => "machine-client", "clientSecret" => "machine-secret", "grant" => "client_credentials" },
    );
    let began = Instant::now();
    let listed = list(&dir, &config("s", e), &[]);
    assert!(began.elapsed() < Duration::from_secs(20));
    assert!(
        listed.contains("failed") && listed.contains("refused a new token"),
        "{listed}"
    );
    assert_eq!(token_requests(&srv).len(), 1, "one new token, not a loop");
}

#[test]
fn a_malformed_token_answer_is_an_error_and_nothing_is_kept() {
    let dir = scratch("mcp-oauth-bad-token");
    let srv = scripted("oauth", &dir, &[("SCRIPTED_BAD_TOKEN", "1")]);
    let mcp = config("s", http(&srv.url("/mcp")));
    let (ok, said, _) = login(&dir, &mcp, &[]);
    assert!(!ok);
    assert!(
        said.contains("signing in to s") && said.contains("not a JSON token response"),
        "{said}"
    );
    assert!(token_file(&dir).is_none());
    // The server is still listed, as needing a sign-in.
    assert!(list(&dir, &mcp, &[]).contains("needs-auth"));
}
