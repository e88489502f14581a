//! Local model discovery: with no provider, base URL or credentials
//! configured anywhere, tern looks for a server on this machine. Each test
//! poses a stand-in as one kind of server (llama.cpp, Ollama, LM Studio,
//! vLLM) among candidates that are closed, hanging or answering garbage,
//! through `TERN_LOCAL_SERVERS` so no fixed port has to be free.

use crate::support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;

/// A loopback URL where nothing listens (the port was just freed).
fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    url
}

/// A listener that accepts connections and never answers; kept open for
/// the life of the returned value.
fn hanging_port() -> (TcpListener, String, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let accept = l.try_clone().unwrap();
    let t = std::thread::spawn(move || {
        let mut held = Vec::new();
        // Accepts what the probes open and holds on to it.
        for c in accept.incoming().take(4).flatten() {
            held.push(c);
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    (l, url, t)
}

/// tern with nothing configured but the list of servers to look at.
fn bare_tern(dir: &Path, servers: &str) -> Command {
    let mut c = tern_command();
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home_of(dir))
        .env("TMPDIR", dir)
        .env("TERN_LOCAL_SERVERS", servers)
        .env("TERN_RETRY_BASE_MS", "20")
        .stdin(std::process::Stdio::null());
    c
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The chat completions requests a stand-in received, with their model.
fn chat_models(api: &StandIn) -> Vec<String> {
    api.requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| body(r).str_field("model").unwrap_or_default().to_string())
        .collect()
}

fn pose_as_llama(api: &StandIn) {
    api.set_get(
        "/props",
        200,
        r#"{"default_generation_settings":{"n_ctx":8192},"model_path":"/models/qwen2.5-coder-7b-q4.gguf","total_slots":1}"#,
    );
    api.set_get(
        "/v1/models",
        200,
        r#"{"object":"list","data":[{"id":"qwen2.5-coder-7b","object":"model","owned_by":"llamacpp"}]}"#,
    );
}

#[test]
fn llama_cpp_is_found_among_closed_and_hanging_ports() {
    let dir = scratch("disc-llama");
    let api = StandIn::start(vec![standin::text_reply("hello from llama")]);
    pose_as_llama(&api);
    let (_hold, hanging, _t) = hanging_port();
    let servers = format!(
        "vllm={},ollama={hanging},llamacpp={}",
        closed_port(),
        api.url
    );
    let out = run(bare_tern(&dir, &servers).args(["-p", "hi"]));
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello from llama"));
    let err = stderr(&out);
    assert!(
        err.contains("using llama.cpp at") && err.contains("with model qwen2.5-coder-7b"),
        "{err}"
    );
    // The hanging server is named; the closed port is the normal case.
    assert!(err.contains("skipped Ollama"), "{err}");
    assert_eq!(chat_models(&api), ["qwen2.5-coder-7b"]);
    // The window came with the probe: /props is not asked a second time.
    let props = api.log().iter().filter(|(_, l)| l == "GET /props").count();
    assert_eq!(props, 1, "{:?}", api.log());
}

#[test]
fn ollama_is_found_and_reported_in_system_init() {
    let dir = scratch("disc-ollama");
    let api = StandIn::start(vec![standin::text_reply("hello from ollama")]);
    api.set_get(
        "/api/tags",
        200,
        r#"{"models":[{"name":"llama3.2:3b","model":"llama3.2:3b","size":2019393189},{"name":"qwen3:8b","model":"qwen3:8b"}]}"#,
    );
    api.set_get(
        "/api/ps",
        200,
        r#"{"models":[{"name":"llama3.2:3b","context_length":16384}]}"#,
    );
    let servers = format!("llamacpp={},ollama={}", closed_port(), api.url);
    let out = run(bare_tern(&dir, &servers).args([
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert_ok(&out);
    let lines = lines(&out);
    let init = &lines[0];
    assert_eq!(init.str_field("subtype"), Some("init"));
    assert_eq!(init.str_field("model"), Some("llama3.2:3b"));
    let found = init.get("discovered_server").expect("discovered_server");
    assert_eq!(found.str_field("server"), Some("Ollama"));
    assert_eq!(found.str_field("url"), Some(api.url.as_str()));
    assert_eq!(
        found.get("context_window").and_then(|v| v.as_i64()),
        Some(16384)
    );
    // stream-json keeps stderr for problems only.
    assert!(!stderr(&out).contains("using Ollama"), "{}", stderr(&out));
    assert_eq!(chat_models(&api), ["llama3.2:3b"]);
}

#[test]
fn lm_studio_prefers_the_loaded_model() {
    let dir = scratch("disc-lms");
    let api = StandIn::start(vec![standin::text_reply("hello from lm studio")]);
    api.set_get(
        "/api/v0/models",
        200,
        r#"{"object":"list","data":[
            {"id":"text-embedding-nomic","type":"embeddings","state":"loaded"},
            {"id":"mistral-7b","type":"llm","state":"not-loaded","max_context_length":32768},
            {"id":"gemma-3-4b","type":"vlm","state":"loaded","max_context_length":131072,"loaded_context_length":8192}
        ]}"#,
    );
    let out = run(bare_tern(&dir, &format!("lmstudio={}", api.url)).args(["-p", "hi"]));
    assert_ok(&out);
    assert!(
        stderr(&out).contains("using LM Studio at"),
        "{}",
        stderr(&out)
    );
    assert_eq!(chat_models(&api), ["gemma-3-4b"]);
}

#[test]
fn vllm_is_found_and_a_named_model_wins() {
    let dir = scratch("disc-vllm");
    let api = StandIn::start(vec![standin::text_reply("one"), standin::text_reply("two")]);
    api.set_get(
        "/v1/models",
        200,
        r#"{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","owned_by":"vllm","max_model_len":32768},{"id":"lora-a","owned_by":"vllm"}]}"#,
    );
    let servers = format!("vllm={}", api.url);
    let out = run(bare_tern(&dir, &servers).args(["-p", "hi"]));
    assert_ok(&out);
    let out = run(bare_tern(&dir, &servers).args(["-p", "hi", "--model", "lora-a"]));
    assert_ok(&out);
    assert_eq!(chat_models(&api), ["Qwen/Qwen2.5-7B-Instruct", "lora-a"]);
}

#[test]
fn an_explicit_base_url_wins_and_nothing_is_probed() {
    let dir = scratch("disc-explicit");
    let chosen = StandIn::start(vec![standin::text_reply("from the configured one")]);
    let local = StandIn::start(vec![standin::text_reply("from the local one")]);
    pose_as_llama(&local);
    let out = run(bare_tern(&dir, &format!("llamacpp={}", local.url))
        .env("ANTHROPIC_BASE_URL", &chosen.url)
        .args(["-p", "hi"]));
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("from the configured one"));
    assert!(local.log().is_empty(), "probed: {:?}", local.log());
    assert!(!stderr(&out).contains("using llama.cpp"));
}

#[test]
fn nothing_answering_is_a_listed_error_within_two_seconds() {
    let dir = scratch("disc-none");
    let (_hold, hanging, _t) = hanging_port();
    let (a, b) = (closed_port(), closed_port());
    let servers = format!("llamacpp={a},ollama={b},vllm={hanging}");
    let began = Instant::now();
    let out = run(bare_tern(&dir, &servers).args(["-p", "hi"]));
    let took = began.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for url in [&a, &b, &hanging] {
        assert!(err.contains(url.as_str()), "{url} not listed: {err}");
    }
    assert!(err.contains("connection refused"), "{err}");
    assert!(err.contains("no answer within"), "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(err.contains("ANTHROPIC_BASE_URL"), "{err}");
    assert!(err.contains("llama-server"), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");

    // An empty list: discovery is off, the same three ways out.
    let out = run(bare_tern(&dir, "none").args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Fix it one of three ways"));
    // A malformed list is named.
    let out = run(bare_tern(&dir, "gpt4=http://127.0.0.1:1").args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown server kind"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn garbage_answers_are_skipped_with_a_note() {
    let dir = scratch("disc-garbage");
    // An unrelated web server on the llama.cpp port, a server answering
    // JSON of the wrong shape, and one answering a truncated body.
    let html = StandIn::start(vec![]);
    html.set_get("/props", 200, "<html><body>router admin</body></html>");
    let wrong = StandIn::start(vec![]);
    wrong.set_get("/api/tags", 200, r#"{"models":"lots"}"#);
    let torn = StandIn::start(vec![]);
    torn.set_get("/v1/models", 200, r#"{"data":[{"id":"x""#);
    let good = StandIn::start(vec![standin::text_reply("the real one")]);
    pose_as_llama(&good);
    let servers = format!(
        "llamacpp={},ollama={},vllm={},llamacpp={}",
        html.url, wrong.url, torn.url, good.url
    );
    let out = run(bare_tern(&dir, &servers).args(["-p", "hi"]));
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("skipped llama.cpp at {}", html.url)),
        "{err}"
    );
    assert!(err.contains("not JSON"), "{err}");
    assert!(
        err.contains(&format!("skipped Ollama at {}", wrong.url)),
        "{err}"
    );
    assert!(
        err.contains(&format!("skipped vLLM at {}", torn.url)),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("the real one"));

    // Garbage only: a clear error, not a panic.
    let servers = format!("llamacpp={},ollama={}", html.url, wrong.url);
    let out = run(bare_tern(&dir, &servers).args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
    assert!(
        stderr(&out).contains("not this kind of server"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_server_that_lists_no_model_is_not_used() {
    let dir = scratch("disc-empty");
    let empty = StandIn::start(vec![]);
    empty.set_get("/api/tags", 200, r#"{"models":[]}"#);
    let out = run(bare_tern(&dir, &format!("ollama={}", empty.url)).args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("lists no model"), "{}", stderr(&out));
}
