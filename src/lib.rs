//! tern: a coding agent in one static binary.
//!
//! Planes as folders, so a reader finds the owner of a decision by where
//! it lives:
//!
//! | plane | owns | module |
//! |---|---|---|
//! | control | flags, environment, settings, system prompt | [`cli`], [`config`] |
//! | request | model clients, SSE, retries, request assembly, discovery | [`model`] |
//! | execution | agent loop, pipeline, tools, permissions, sandbox, MCP | [`agent`], [`tools`], [`policy`], [`sandbox`], [`mcp`] |
//! | state | transcripts, resume, checkpoints, context accounting | [`session`], [`context`] |
//! | observation | reports out of the planes; text / json / stream-json / SDK | [`report`], [`frontend`] |
//!
//! Layers, lowest first. A module imports only modules on earlier lines
//! (tests/it/architecture.rs holds the tree to this), so the arrows form a
//! DAG: the loop reaches tools, tools never reach the loop; what flows
//! back up does so through traits the upper plane implements
//! (`tools::Subagents`, `tools::ToolSource`, `agent::Approver`) and through [`report`].
//!
//! ```text
//! json      values and the wire format
//! media     image and PDF formats, base64, their token costs
//! sys       process groups, signals, raw syscalls
//! abort     cancellation
//! report    events out of the planes
//! session   transcripts and ids
//! context   token accounting
//! model     the model's wire
//! telemetry OpenTelemetry export: OTLP/JSON over HTTP, off unless asked
//! voice     speech into composer text (feature `voice`)
//! sandbox   landlock, seccomp, namespaces
//! policy    decisions; mints Permits
//! cli       flags
//! config    settings and the Runtime
//! tools     the tool belt
//! mcp       MCP servers as tools
//! agent     the loop, hooks, sub-agents
//! frontend  printers, approvers, the SDK protocol
//! app       wiring and subcommands
//! harness   the public face tests and benchmarks drive
//! ```
//!
//! The library exists so tests and benchmarks can drive the parts; the
//! binary is `src/main.rs`. Its public face is [`harness`] (the parts the
//! tests, benchmarks, examples and fuzzer drive: policy, the tool
//! registry and context, the pipeline and hooks, the sandbox's setup, the
//! SSE parser and stream assembler), [`json`] (the wire format) and
//! [`run_main`]. Every plane is `pub(crate)`, so what a plane marks `pub`
//! is crate-visible only, unless the harness names it.

pub(crate) mod abort;
pub(crate) mod agent;
pub(crate) mod app;
pub(crate) mod cli;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod frontend;
pub mod harness;
pub mod json;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod media;
pub(crate) mod model;
pub(crate) mod policy;
pub(crate) mod report;
pub(crate) mod sandbox;
pub(crate) mod session;
mod sys;
pub(crate) mod telemetry;
pub(crate) mod tools;
#[cfg(feature = "voice")]
pub(crate) mod voice;

/// Runs tern with these arguments and returns the exit status.
pub fn run_main(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    // The sandbox launcher must run before anything starts a thread.
    if args.get(1).is_some_and(|a| a == sandbox::LAUNCHER_ARG) {
        return sandbox::launch(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::SERVER_ARG) {
        return sandbox::serve(&args[2..]);
    }
    #[cfg(feature = "repl")]
    if args.get(1).is_some_and(|a| a == tools::repl::VM_ARG) {
        return tools::repl::vm::serve(&args[2..]);
    }
    // Before any command runs: what later launches the sandbox is this
    // very file, whatever a command does to its path.
    sandbox::remember_launcher();
    use app::exit::Exit;
    match cli::parse(args) {
        Ok(cli::Command::Version) => {
            println!("{} (tern)", env!("CARGO_PKG_VERSION"));
            Exit::Success.code()
        }
        Ok(cli::Command::Help) => {
            print!("{}", cli::HELP);
            Exit::Success.code()
        }
        Ok(cli::Command::ConfigPermissions(args)) => app::config_permissions(args).code(),
        Ok(cli::Command::Sessions) => app::sessions().code(),
        Ok(cli::Command::McpList(args)) => app::mcp_list(args).code(),
        Ok(cli::Command::PluginList(args)) => app::plugin_list(args).code(),
        Ok(cli::Command::McpLogin(args, name)) => app::mcp_login(args, &name, true).code(),
        Ok(cli::Command::McpLogout(args, name)) => app::mcp_login(args, &name, false).code(),
        Ok(cli::Command::Doctor { args, bench }) => app::doctor(args, bench).code(),
        Ok(cli::Command::Trust { args, dir, revoke }) => {
            app::trust(args, dir.as_deref(), revoke).code()
        }
        Ok(cli::Command::Rewind {
            session,
            to,
            dry_run,
        }) => app::rewind(&session, to.as_deref(), dry_run).code(),
        Ok(cli::Command::SandboxStatus) => {
            print!("{}", sandbox::probe().render());
            Exit::Success.code()
        }
        Ok(cli::Command::Run(args)) => {
            // One executor for the life of the process; sub-agents started
            // in the background hold on to it.
            let ex: &'static smol::LocalExecutor<'static> =
                Box::leak(Box::new(smol::LocalExecutor::new()));
            let code = smol::block_on(ex.run(app::run(ex, args)));
            // Whatever a dropped future left running goes with tern.
            sys::kill_registered_groups();
            code
        }
        Ok(cli::Command::Acp(args)) => {
            let ex: &'static smol::LocalExecutor<'static> =
                Box::leak(Box::new(smol::LocalExecutor::new()));
            let code = smol::block_on(ex.run(app::acp(ex, args)));
            // Whatever a dropped future left running goes with tern.
            sys::kill_registered_groups();
            code
        }
        Err(e) => {
            eprintln!("tern: {e}\nTry 'tern --help'.");
            Exit::Usage.code()
        }
    }
}
