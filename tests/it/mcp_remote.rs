//! Remote MCP servers: streamable HTTP with its GET stream (dropped and
//! resumed), the older HTTP+SSE transport (chosen, fallen back to, and
//! reconnected), prompts as slash commands, resources named in a prompt
//! and subscribed to, audio and blob results, sub-agents that name MCP
//! tools — against the scripted
//! server of `tests/mcp/scripted_http.py`, the official Python SDK's
//! server (`tests/mcp/fast_server.py`) and the npm reference server in
//! its SSE mode.
#![cfg(feature = "mcp")]

use crate::remote_support;
use crate::support;

use std::path::PathBuf;

use remote_support::*;
use support::standin;
use support::*;
use tern::json::Value;
use tern::obj;

/// Where `ci/mcp.sh` put the real servers; `None` (said) when missing.
fn servers_dir(test: &str) -> Option<PathBuf> {
    mcp_servers_dir(
        test,
        &["node_modules/.bin/mcp-server-everything", "venv/bin/python"],
    )
}

#[test]
fn streamable_http_takes_notifications_from_the_get_stream_and_resumes_it() {
    let dir = scratch("mcp-streamable");
    // The GET stream is dropped after each event: the second of poke's
    // two notifications comes only through a resumed stream.
    let srv = scripted("streamable", &dir, &[("SCRIPTED_DROP_GET_AFTER", "1")]);
    let mcp = config("s", http(&srv.url("/mcp")));
    let (out, api) = session(
        &dir,
        &mcp,
        "poke it",
        vec![
            standin::tools_reply(&[("t1", "mcp__s__poke", "{}")]),
            standin::tools_reply(&[("t2", "mcp__s__echo", r#"{"text":"hi"}"#)]),
            standin::tools_reply(&[("t3", "mcp__s__fresh", "{}")]),
            standin::text_reply("done"),
        ],
    );
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 4, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text_of(&reqs[0]).contains("mcp__s__fresh"));
    assert!(result_texts(&reqs[1]).contains("poked"));
    // list_changed came on the GET stream, and the catalog followed it.
    assert!(
        text_of(&reqs[2]).contains("mcp__s__fresh"),
        "no fresh tool after list_changed"
    );
    assert!(result_texts(&reqs[3]).contains("fresh tool"));
    let log = srv.requests();
    let gets: Vec<&Value> = log
        .iter()
        .filter(|r| r.str_field("method") == Some("GET"))
        .collect();
    assert!(
        gets.iter().any(|g| g
            .get("headers")
            .and_then(|h| h.str_field("last-event-id"))
            .is_some()),
        "no GET resumed with Last-Event-ID: {gets:?}"
    );
    // Every request after initialize carried the session and the version.
    let posts: Vec<&Value> = log
        .iter()
        .filter(|r| r.str_field("method") == Some("POST"))
        .collect();
    for p in &posts[1..] {
        let h = p.get("headers").unwrap();
        assert!(h.str_field("mcp-session-id").is_some(), "{p:?}");
        assert!(h.str_field("mcp-protocol-version").is_some(), "{p:?}");
    }
    // The session was ended with a DELETE.
    assert!(log.iter().any(|r| r.str_field("method") == Some("DELETE")));
}

#[test]
fn answers_streamed_as_events_and_a_server_without_a_get_stream() {
    let dir = scratch("mcp-sse-post");
    let srv = scripted(
        "streamable",
        &dir,
        &[("SCRIPTED_SSE_POST", "1"), ("SCRIPTED_GET_405", "1")],
    );
    let mcp = config("s", http(&srv.url("/mcp")));
    let (out, api) = session(
        &dir,
        &mcp,
        "echo",
        vec![
            standin::tools_reply(&[("t1", "mcp__s__echo", r#"{"text":"over sse"}"#)]),
            standin::text_reply("done"),
        ],
    );
    assert_ok(&out);
    assert!(result_texts(&api.requests()[1]).contains("echo: over sse"));
    // 405 on GET: asked once, never again.
    let gets = srv
        .requests()
        .iter()
        .filter(|r| r.str_field("method") == Some("GET"))
        .count();
    assert_eq!(gets, 1);
}

#[test]
fn the_sse_transport_by_name_by_fallback_and_after_its_stream_drops() {
    let dir = scratch("mcp-legacy");
    let srv = scripted("legacy", &dir, &[("SCRIPTED_DROP_SSE_AFTER", "4")]);
    for entry in [
        obj! { "type" => "sse", "url" => srv.url("/sse") },
        // Configured as streamable HTTP: the POST is refused (405) and
        // the same address is tried as an SSE stream.
        http(&srv.url("/mcp")),
    ] {
        let mcp = config("old", entry.clone());
        // initialize, tools/list, prompts/list, then the first call's
        // answer: the stream is dropped after those four messages, so the
        // second call waits for a new connection (a new session). The
        // model asks for it a moment later, after tern has seen the
        // stream end: sent before that, on the session that is ending,
        // its answer is lost with the stream and the call fails with
        // "the server closed its SSE stream" — what a client must say
        // then, since it cannot know whether the server ran it (this
        // test failed so, about once in thirty runs, on a busy machine).
        let standin::Reply::Stream(mut later) =
            standin::tools_reply(&[("t2", "mcp__old__echo", r#"{"text":"two"}"#)])
        else {
            unreachable!("tools_reply streams")
        };
        later.insert(
            0,
            standin::Step::Sleep(std::time::Duration::from_millis(500)),
        );
        let (out, api) = session(
            &dir,
            &mcp,
            "twice",
            vec![
                standin::tools_reply(&[("t1", "mcp__old__echo", r#"{"text":"one"}"#)]),
                standin::Reply::Stream(later),
                standin::text_reply("done"),
            ],
        );
        assert_ok(&out);
        let reqs = api.requests();
        let (one, two) = (result_texts(&reqs[1]), result_texts(&reqs[2]));
        assert!(one.contains("echo: one"), "{entry:?}: {one}");
        assert!(two.contains("echo: two"), "{entry:?}: {two}");
    }
    let streams = srv
        .requests()
        .iter()
        .filter(|r| r.str_field("method") == Some("GET"))
        .count();
    assert!(
        streams >= 4,
        "the dropped streams were not opened again ({streams})"
    );
}

#[test]
fn prompts_are_slash_commands_and_named_resources_are_attached_and_watched() {
    let dir = scratch("mcp-prompts");
    let srv = scripted("streamable", &dir, &[]);
    let mcp = config("s", http(&srv.url("/mcp")));
    let (out, api) = session(
        &dir,
        &mcp,
        "/mcp__s__greet \"Ada Lovelace\" warm",
        vec![standin::text_reply("hello")],
    );
    assert_ok(&out);
    let first = text_of(&api.requests()[0]);
    assert!(
        first.contains("Say hello to Ada Lovelace in a warm tone."),
        "{first}"
    );
    let init = lines(&out)
        .into_iter()
        .find(|l| l.str_field("subtype") == Some("init"))
        .unwrap();
    assert!(
        init.get("slash_commands")
            .unwrap()
            .to_json()
            .contains("\"mcp__s__greet\"")
    );

    // A missing argument is said, and nothing is sent.
    let (out, api) = session(&dir, &mcp, "/mcp__s__greet", vec![]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("<name> [tone]"));
    assert!(api.requests().is_empty());

    // @server:uri is read and attached; a change to it is told.
    let (out, api) = session(
        &dir,
        &mcp,
        "summarise @s:memo://one please",
        vec![
            standin::tools_reply(&[("t1", "mcp__s__touch", r#"{"uri":"memo://one"}"#)]),
            standin::tools_reply(&[("t2", "mcp__s__echo", r#"{"text":"x"}"#)]),
            standin::text_reply("ok"),
        ],
    );
    assert_ok(&out);
    let reqs = api.requests();
    assert!(text_of(&reqs[0]).contains("memo one body"));
    let later = text_of(&reqs[2]);
    assert!(
        later.contains("@s:memo://one has changed"),
        "no reminder of the changed resource: {later}"
    );
    let subscribed = srv
        .requests()
        .iter()
        .any(|r| r.get("body").and_then(|b| b.str_field("method")) == Some("resources/subscribe"));
    assert!(subscribed);
}

#[test]
fn the_python_sdk_server_over_each_transport_with_audio_and_blobs() {
    let Some(servers) = servers_dir("MCP Python SDK transports") else {
        return;
    };
    let dir = scratch("mcp-fast");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fast_server.py");
    let stdio = obj! {
        "command" => servers.join("venv/bin/python").display().to_string(),
        "args" => vec![Value::from(script.display().to_string()), Value::from("stdio")],
    };
    let sse_srv = fast(&servers, "sse", &dir);
    let http_srv = fast(&servers, "http", &dir);
    for (label, entry) in [
        ("stdio", stdio),
        (
            "sse",
            obj! { "type" => "sse", "url" => sse_srv.url("/sse") },
        ),
        ("http", http(&http_srv.url("/mcp"))),
    ] {
        let mcp = config("py", entry);
        let (out, api) = session(
            &dir,
            &mcp,
            "/mcp__py__review src/lib.rs",
            vec![
                standin::tools_reply(&[
                    ("t1", "mcp__py__add", r#"{"a":2,"b":40}"#),
                    ("t2", "mcp__py__tone", "{}"),
                    ("t3", "mcp__py__pixel", "{}"),
                ]),
                standin::text_reply("done"),
            ],
        );
        assert_ok(&out);
        let reqs = api.requests();
        assert!(
            text_of(&reqs[0]).contains("Review src/lib.rs with a focus on style."),
            "{label}"
        );
        let results = tool_results(&reqs[1]);
        assert_eq!(results.len(), 3, "{label}");
        assert!(
            results[0].to_json().contains("42"),
            "{label}: {:?}",
            results[0]
        );
        let audio = results[1].to_json();
        assert!(
            audio.contains("audio/wav") && audio.contains("not passed on"),
            "{label}: {audio}"
        );
        let pixel = results[2].to_json();
        assert!(
            pixel.contains("\"type\":\"image\""),
            "{label}: no image block: {pixel}"
        );
        assert!(
            pixel.contains("application/octet-stream, 1000 bytes"),
            "{label}: {pixel}"
        );
    }
}

#[test]
fn the_reference_server_in_its_sse_mode() {
    let Some(servers) = servers_dir("MCP reference server (SSE)") else {
        return;
    };
    let dir = scratch("mcp-everything-sse");
    let (mut child, port) = everything_server(&servers, "sse");
    let mcp = config(
        "ev",
        obj! { "type" => "sse", "url" => format!("http://127.0.0.1:{port}/sse") },
    );
    let (out, api) = session(
        &dir,
        &mcp,
        "echo",
        vec![
            standin::tools_reply(&[("t1", "mcp__ev__echo", r#"{"message":"from sse"}"#)]),
            standin::text_reply("done"),
        ],
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_ok(&out);
    assert!(result_texts(&api.requests()[1]).contains("from sse"));
}

#[test]
fn sub_agents_get_the_mcp_tools_their_definition_names() {
    let dir = scratch("mcp-child-names");
    let srv = scripted("streamable", &dir, &[]);
    let agents = dir.join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("named.md"),
        "---\nname: named\ndescription: d\ntools: Read, mcp__s\n---\nYou help.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("one.md"),
        "---\nname: one\ndescription: d\ntools: Read, mcp__s__echo\n---\nYou help.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("plain.md"),
        "---\nname: plain\ndescription: d\ntools: Read\n---\nYou help.\n",
    )
    .unwrap();
    let mcp = config("s", http(&srv.url("/mcp")));
    for (agent, echo, poke) in [
        ("named", true, true),
        ("one", true, false),
        ("plain", false, false),
    ] {
        let call =
            format!(r#"{{"description": "d", "prompt": "CHILD", "subagent_type": "{agent}"}}"#);
        let (out, api) = session(
            &dir,
            &mcp,
            "delegate",
            vec![
                standin::tools_reply(&[("a1", "Agent", &call)]),
                standin::text_reply("child done"),
                standin::text_reply("parent done"),
            ],
        );
        assert_ok(&out);
        let child = body(&api.requests()[1]).get("tools").unwrap().to_json();
        assert_eq!(child.contains("mcp__s__echo"), echo, "{agent}: {child}");
        assert_eq!(child.contains("mcp__s__poke"), poke, "{agent}: {child}");
    }
}

/// Regression: an `https://` server made tern abort (ureq's compiled-out
/// default roots panic when used).
#[test]
fn an_https_server_is_a_failed_server_not_a_crash() {
    let dir = scratch("mcp-https");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            drop(s);
        }
    });
    let mcp = config("tls", http(&format!("https://127.0.0.1:{port}/mcp")));
    let out = run(tern("http://127.0.0.1:9", &dir).args(["mcp", "list", "--mcp-config", &mcp]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("failed"));
}
