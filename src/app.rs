//! Wires one invocation together: flags → configuration
//! ([`config::resolve`], the first stage) → the session's parts
//! ([`build`], the second) → a driver (print, line mode or an SDK's
//! session) → the exit status ([`exit`]).

use std::io::{IsTerminal, Read};

use smol::LocalExecutor;
use smol::io::AsyncReadExt;

use crate::abort::{Abort, Reason};
use crate::cli::Args;
use crate::config::{self, Inputs};
use crate::json::Value;
use crate::model::client::Client;
use crate::obj;

mod acp;
mod bench;
mod build;
mod doctor;
mod drive;
pub mod exit;
mod lines;
mod subcommands;
mod telemetry;
#[cfg(feature = "tui")]
mod tui;
#[cfg(any(feature = "web", feature = "repl"))]
mod web;
mod window;
pub use acp::run as acp;
pub use doctor::doctor;
pub use subcommands::{
    config_permissions, mcp_list, mcp_login, plugin_list, rewind, sessions, trust,
};
#[cfg(feature = "mcp")]
mod mcp_login;
#[cfg(feature = "mcp")]
mod mcp_start;

use build::Notes;
use exit::{Exit, Failure};

/// A session: `tern [prompt]`, `tern -p`, line mode, or an SDK's.
pub async fn run(ex: &'static LocalExecutor<'static>, args: Args) -> i32 {
    let mut notes = Notes::default();
    match session(ex, args, &mut notes).await {
        Ok(exit) => exit.code(),
        Err(failure) => {
            // What was said before the failure may explain it.
            say(notes.take());
            eprintln!("tern: {failure}");
            failure.exit().code()
        }
    }
}

/// Notices with no session to show them (a subcommand's, or those of a
/// session that failed to start): on stderr, as a session shows them.
fn say(notes: Vec<crate::report::Report>) {
    for n in notes {
        if let crate::report::Report::Notice { text, .. } = n {
            eprintln!("tern: {text}");
        }
    }
}

/// Until the session's frontend exists, what the start has to say goes
/// to `notes`; the frontend shows it first.
async fn session(
    ex: &'static LocalExecutor<'static>,
    mut args: Args,
    notes: &mut Notes,
) -> Result<Exit, Failure> {
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let interactive = !args.print && stdin_is_terminal && !args.stream_input;
    if interactive && args.prompt.is_none() {
        // Line mode may start without a first prompt.
        args.prompt = Some(String::new());
    }
    // With --input-format stream-json, stdin carries the SDK's messages.
    let stdin = if stdin_is_terminal || args.stream_input {
        None
    } else {
        smol::unblock(|| {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .ok()
                .map(|_| text)
        })
        .await
    };
    let again = args.clone();
    let mut rt = config::resolve(args, Inputs::from_process(stdin)?)?;
    if interactive && rt.trust.to_ask() {
        match settle_trust(rt, again)? {
            Some(trusted) => rt = trusted,
            None => return Ok(Exit::Success),
        }
    } else {
        crate::frontend::trust::notice(&rt.trust);
    }
    // Configuration has its copy: the credentials leave /proc/<tern>/environ.
    let unerased = rt.child_env.erase_from_own_environment();
    rt.warnings.extend(unerased);
    rt.check_credentials()?;
    for warning in &rt.warnings {
        notes.warning(format!("warning: {warning}"));
    }
    let discovered = discover_server(&mut rt, notes)
        .await
        .map_err(Failure::NoServer)?;
    let client = Client::new(&rt.client).map_err(Failure::Client)?;
    let abort = Abort::new();
    watch_signals(ex, abort.clone(), notes);
    let mut parts =
        build::build(ex, &rt, client, abort, discovered, interactive, None, notes).await?;
    parts.show_first(notes.take());
    // An SDK session says who it is at the start of each prompt, when the
    // servers and agents its initialize added are known.
    if !rt.stream_input {
        parts.printer.start();
    }
    // Off (None) unless the environment asks for an export.
    let mut otel = telemetry::Observer::start(
        &rt,
        &parts.printer.info.session_id,
        std::rc::Rc::clone(parts.agent.pipeline()),
    );
    let exit = if rt.stream_input {
        drive::sdk(ex, &rt, &mut parts, &mut otel).await
    } else if let Some(tui) = parts.take_tui() {
        #[cfg(feature = "tui")]
        {
            tui::run(&rt, &mut parts, tui, &mut otel).await
        }
        #[cfg(not(feature = "tui"))]
        match tui {}
    } else if let Some(input) = parts.line_input.take() {
        drive::lines(&rt, &mut parts, input, &mut otel).await
    } else {
        drive::print(&mut parts, &mut otel).await
    };
    parts.finish().await;
    if let Some(otel) = otel {
        otel.shutdown();
    }
    Ok(exit)
}

/// Asks the person about the directory's own settings and records the
/// answer. On a yes the configuration is resolved again, so everything is
/// read afresh with them in (nothing from before the answer is reused); on
/// a no the session goes on without them. `None`: the person chose to quit.
fn settle_trust(rt: config::Runtime, mut args: Args) -> Result<Option<config::Runtime>, Failure> {
    use crate::frontend::trust::{Answer, ask};
    let answer = ask(&rt.trust);
    if answer == Answer::Quit {
        return Ok(None);
    }
    let yes = answer == Answer::Trust;
    if let Err(e) = rt.trust_store.answer(&rt.trust.dir, &rt.trust.items, yes) {
        eprintln!("tern: warning: cannot remember the answer ({e}); it holds for this run only");
        args.trust_project = yes;
    }
    if !yes {
        return Ok(Some(rt));
    }
    Ok(Some(config::resolve(args, Inputs::from_process(None)?)?))
}

/// With nothing configured, finds a model server on this machine and
/// points the session at it; says which (stderr in text and json modes,
/// `system/init` in stream-json). `Err` lists what was tried.
async fn discover_server(
    rt: &mut config::Runtime,
    said: &mut Notes,
) -> Result<Option<Value>, String> {
    use crate::model::discover;
    let Some(plan) = rt.discover.clone() else {
        return Ok(None);
    };
    let ca = rt.client.extra_ca_pem.clone();
    let probes =
        smol::unblock(move || discover::probe_all(&plan.candidates, plan.timeout, ca.as_deref()))
            .await;
    let Some(found) = discover::pick(&probes).cloned() else {
        return Err(discover::nothing_found(&probes));
    };
    let quiet = rt.format == crate::cli::OutputFormat::StreamJson;
    let skipped: Vec<String> = probes
        .iter()
        .filter_map(|p| match &p.outcome {
            // Only servers that answered wrongly are worth a word; closed
            // ports are the normal case.
            Err(e) if !e.is_refused() => Some(format!(
                "{} at {}: {e}",
                p.candidate.kind.name(),
                p.candidate.url
            )),
            _ => None,
        })
        .collect();
    let notes = rt.use_discovered(&found);
    if !quiet {
        for s in &skipped {
            said.warning(format!("note: skipped {s}"));
        }
        said.warning(format!(
            "no API key or base URL configured; using {} at {} with model {}",
            found.kind.name(),
            found.url,
            rt.model
        ));
        for n in &notes {
            said.warning(format!("note: {n}"));
        }
    }
    Ok(Some(obj! {
        "server" => found.kind.name(),
        "url" => found.url.clone(),
        "model" => rt.model.clone(),
        "models" => found.models.iter().map(|m| Value::from(m.as_str())).collect::<Vec<_>>(),
        "context_window" => found.context_window.map(|w| w as i64),
        "skipped" => skipped.into_iter().map(Value::from).collect::<Vec<_>>(),
        "notes" => notes.into_iter().map(Value::from).collect::<Vec<_>>(),
    }))
}

/// SIGINT/SIGTERM trigger the abort token; a second one exits at once.
fn watch_signals(ex: &LocalExecutor<'static>, abort: Abort, notes: &mut Notes) {
    let pipe = match crate::sys::catch_termination_signals().and_then(smol::Async::new) {
        Ok(p) => p,
        Err(e) => {
            notes.warning(format!(
                "warning: cannot catch signals ({e}); Ctrl-C will kill tern outright"
            ));
            return;
        }
    };
    ex.spawn(async move {
        let mut pipe = pipe;
        let mut byte = [0u8; 1];
        while let Ok(1) = pipe.read(&mut byte).await {
            let sig = i32::from(byte[0]);
            if abort.is_triggered() {
                crate::frontend::line::restore_terminal();
                crate::sys::kill_registered_groups();
                std::process::exit(Exit::Signal(sig).code());
            }
            abort.trigger(Reason::Signal(sig));
        }
    })
    .detach();
}
