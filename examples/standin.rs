//! Runs the scripted Messages API stand-in as a server, for trying tern
//! (or another client) without an API key:
//!
//! ```sh
//! cargo run --example standin            # prints the URL to use
//! ANTHROPIC_BASE_URL=http://127.0.0.1:PORT tern -p "hello"
//! ```
//!
//! Every request gets the same short text answer. `STANDIN_PORT` picks the
//! port.

#[path = "../tests/support/standin.rs"]
mod standin;

fn main() {
    let port = std::env::var("STANDIN_PORT").unwrap_or_else(|_| "0".into());
    let api = standin::StandIn::start_on(&format!("127.0.0.1:{port}"), vec![]);
    api.set_fallback(standin::text_reply(
        "Hello from the tern stand-in. I have no model behind me, but the wire format is real.",
    ));
    println!("{}", api.url);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
