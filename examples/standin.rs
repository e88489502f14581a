//! Runs the scripted Messages API stand-in as a server, for trying tern
//! (or another client) without an API key:
//!
//! ```sh
//! cargo run --example standin            # prints the URL to use
//! ANTHROPIC_BASE_URL=http://127.0.0.1:PORT tern -p "hello"
//! ```
//!
//! Every request gets the same short text answer, in the format of the
//! path it came to: the Messages API, chat completions or the Responses
//! API (Codex). `STANDIN_PORT` picks the port.
//!
//! `STANDIN_TOOL_TURNS=N` makes it a tool session instead: a request that
//! offers tools and carries fewer than N-1 tool results is answered with
//! one shell call (`Bash` on the Messages API, Codex's `exec_command` on
//! the Responses API) running `echo turn K`, and then with the answer.
//! It decides from the request alone, so any number of clients can run
//! their sessions against it one after another (`benches/compare.sh`).
//!
//! `STANDIN_CALLS=FILE` scripts the calls instead: FILE holds a JSON array
//! of `{"name": …, "input": {…}}`, and a request that offers tools and
//! carries K tool results is answered with call K, and the last one with
//! the answer, after printing that request's body on a line of its own:
//! the whole conversation, each tool result as the client sent it. Run
//! tern and Claude Code against it to compare their results for the
//! same calls.

#[path = "../tests/it/support/standin.rs"]
mod standin;

fn main() {
    let port = std::env::var("STANDIN_PORT").unwrap_or_else(|_| "0".into());
    let api = standin::StandIn::start_on(&format!("127.0.0.1:{port}"), vec![]);
    api.set_fallback(standin::text_reply(
        "Hello from the tern stand-in. I have no model behind me, but the wire format is real.",
    ));
    if let Some(turns) = std::env::var("STANDIN_TOOL_TURNS")
        .ok()
        .and_then(|t| t.parse::<usize>().ok())
    {
        api.set_responder(Box::new(move |req| {
            if !req.body.contains("\"tools\"") {
                return None;
            }
            let done = req.body.matches("\"tool_result\"").count()
                + req.body.matches("\"function_call_output\"").count();
            if done + 1 >= turns {
                return Some(standin::text_reply("All turns done."));
            }
            let id = format!("toolu_turn{done}");
            let command = format!("echo turn {done}");
            Some(if req.path.ends_with("/responses") {
                let input = tern::obj! { "cmd" => command.as_str() }.to_json();
                standin::tools_reply(&[(&id, "exec_command", &input)])
            } else {
                let input = tern::obj! { "command" => command.as_str() }.to_json();
                standin::tools_reply(&[(&id, "Bash", &input)])
            })
        }));
    }
    if let Ok(file) = std::env::var("STANDIN_CALLS") {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let calls = tern::json::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let calls: Vec<(String, String)> = calls
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|c| {
                        let name = c.str_field("name").unwrap_or("").to_string();
                        let input = c.get("input").map(|i| i.to_json()).unwrap_or_default();
                        (name, input)
                    })
                    .collect()
            })
            .unwrap_or_default();
        api.set_responder(Box::new(move |req| {
            if !req.body.contains("\"tools\"") {
                return None;
            }
            let done = req.body.matches("\"tool_result\"").count();
            Some(match calls.get(done) {
                Some((name, input)) => {
                    let id = format!("toolu_call{done}");
                    standin::tools_reply(&[(&id, name, input)])
                }
                None => {
                    println!("{}", req.body);
                    standin::text_reply("All calls done.")
                }
            })
        }));
    }
    println!("{}", api.url);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
