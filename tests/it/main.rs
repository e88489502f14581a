//! Every integration test in one binary: one link of the dependencies
//! instead of one per file (CI spent most of its test build linking
//! ~50 binaries). Each module is what was a `tests/*.rs` file; run one
//! with `cargo test --test it NAME::`.

/// What the remote-MCP tests (mcp_remote, mcp_oauth) share.
#[cfg(feature = "mcp")]
mod remote_support;
mod support;

mod acp;
mod architecture;
mod background_shells;
mod bash_attacks;
mod bash_corpus;
mod bash_session;
mod bench;
mod child_env;
mod cli;
mod compaction;
mod constrained;
mod coordinator;
mod deferred_tools;
mod discovery;
mod doctor;
mod e2e;
mod events;
mod file_attacks;
mod file_tools;
mod fleet;
mod grants;
mod hooks;
mod line_mode;
mod local_model;
mod mcp;
mod mcp_asks;
mod mcp_asks_sdk;
mod mcp_asks_terminal;
mod mcp_conformance;
mod mcp_http;
mod mcp_oauth;
mod mcp_remote;
mod mcp_trust;
mod memory_imports;
mod notebook_edit;
mod otel;
mod parity;
mod plugins;
mod protocol;
mod providers;
mod questions;
mod read_media;
mod read_memory;
mod repl;
mod repl_context;
mod resilience;
mod sandbox;
mod sandbox_escapes;
mod sdk;
mod search_tools;
mod sessions;
mod settings;
mod skills;
mod small_window;
mod sse_splits;
mod start_notices;
mod subagents;
mod text_tool_calls;
mod thinking;
mod trust;
mod tui;
mod voice_speech;
mod voice_stream;
mod voice_trust;
mod web_fetch;
mod web_search;
mod ws_stt_selftest;
