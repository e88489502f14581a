//! The three ways a session's agent is driven: one prompt and its answer
//! (print mode), the line-mode loop, and an SDK's session over stdin.
//! Each event goes to the transcript, then to the printer.

use std::rc::Rc;

use smol::LocalExecutor;

use super::build::{Parts, agent_names};
use super::exit::Exit;
use super::telemetry::Observer;
use crate::agent::Event;
use crate::config::Runtime;
use crate::frontend::{commands, line, sdk};
use crate::json::Value;

/// Records an event, hands it to the OpenTelemetry observer (when there
/// is one), then prints it.
macro_rules! sink {
    ($transcript:expr, $printer:expr, $otel:expr) => {
        &mut |ev: Event<'_>| {
            if let Some(t) = $transcript.as_mut() {
                crate::agent::record(t, &ev);
            }
            if let Some(o) = $otel.as_mut() {
                o.on(&ev);
            }
            $printer.event(ev);
        }
    };
}

/// `tern -p` (and a piped prompt): one prompt, its answer, the outcome.
pub(super) async fn print(parts: &mut Parts, otel: &mut Option<Observer>) -> Exit {
    let Parts {
        agent,
        printer,
        transcript,
        first_prompt,
        ..
    } = parts;
    let prompt = Value::Array(std::mem::take(first_prompt));
    if let Some(o) = otel.as_mut() {
        o.begin(&agent.settings().model);
    }
    let outcome = agent.run(prompt, sink!(transcript, printer, otel)).await;
    if let Some(o) = otel.as_mut() {
        o.finish(&outcome);
    }
    printer.finish(&outcome);
    Exit::of_ending(&outcome.ending)
}

/// Line mode: prompts and slash commands at the terminal.
pub(super) async fn lines(
    rt: &Runtime,
    parts: &mut Parts,
    input: Rc<line::Input>,
    otel: &mut Option<Observer>,
) -> Exit {
    let first = (!rt.prompt.trim().is_empty())
        .then(|| Value::Array(std::mem::take(&mut parts.first_prompt)));
    let mut session = super::lines::Lines {
        input,
        custom: commands::load(&rt.command_dirs),
        cwd: rt.cwd.clone(),
        transcripts: rt.transcripts.clone(),
        transcript: &mut parts.transcript,
        printer: &mut parts.printer,
        otel,
        idle_notify: rt.idle_notify,
        #[cfg(feature = "voice")]
        voice: rt.voice.clone(),
    };
    let exit = session.run(&mut parts.agent, first).await;
    line::restore_terminal();
    exit
}

/// The SDK's session: prompts and control messages arrive on stdin until
/// it closes.
pub(super) async fn sdk(
    ex: &'static LocalExecutor<'static>,
    rt: &Runtime,
    parts: &mut Parts,
    otel: &mut Option<Observer>,
) -> Exit {
    let Parts {
        agent,
        printer,
        transcript,
        control,
        structured,
        #[cfg(feature = "mcp")]
        mcp_hub,
        system,
        ..
    } = parts;
    let (tx, rx) = smol::channel::unbounded();
    let ignored = Rc::new(std::cell::RefCell::new(Vec::new()));
    let context = Rc::new(std::cell::RefCell::new(sdk::context_view(
        agent,
        system.parts.memory.as_deref(),
    )));
    let session = sdk::Session {
        #[cfg(feature = "mcp")]
        ex,
        control: Rc::clone(control),
        abort: agent.abort().clone(),
        pipeline: Rc::clone(agent.pipeline()),
        #[cfg(feature = "mcp")]
        hub: mcp_hub.clone(),
        cwd: rt.cwd.clone(),
        structured: Rc::clone(structured),
        context: Rc::clone(&context),
        ignored: Rc::clone(&ignored),
        transcript: transcript.as_ref().map(|t| t.path().to_path_buf()),
        allowed_requests: Default::default(),
        #[cfg(feature = "mcp")]
        env: rt.env.clone(),
    };
    ex.spawn(sdk::read_input(session, tx)).detach();
    let mut exit = Exit::Success;
    loop {
        match rx.recv().await {
            Ok(sdk::Input::Prompt { content, uuid }) => {
                agent.abort().reset();
                // Servers an SDK named get the first turn's usual wait.
                #[cfg(feature = "mcp")]
                if let Some(hub) = &mcp_hub {
                    hub.settle(rt.mcp_timeouts.first_wait).await;
                    printer.info.mcp_servers = hub.summary();
                }
                printer.info.tools = agent.pipeline().registry().names();
                printer.info.model = agent.settings().model.clone();
                printer.info.permission_mode = agent.pipeline().policy().mode().as_str();
                printer.info.agents = agent_names(agent);
                printer.info.slash_commands = super::build::slash_commands(rt, agent);
                printer.info.ignored.extend(ignored.borrow_mut().drain(..));
                printer.start();
                *context.borrow_mut() = sdk::context_view(agent, system.parts.memory.as_deref());
                if let Some(o) = otel.as_mut() {
                    o.begin(&agent.settings().model);
                }
                let content =
                    commands::expand_content(content, || commands::load(&rt.command_dirs));
                let outcome = agent
                    .run_as(content, uuid, sink!(transcript, printer, otel))
                    .await;
                if let Some(o) = otel.as_mut() {
                    o.finish(&outcome);
                }
                printer.finish(&outcome);
                exit = Exit::of_ending(&outcome.ending);
                let mut view = sdk::context_view(agent, system.parts.memory.as_deref());
                view.api_usage = outcome.model_usage.last().map(|m| m.usage);
                *context.borrow_mut() = view;
            }
            Ok(sdk::Input::Model(m)) => agent.set_model(m),
            Ok(sdk::Input::Thinking(mode)) => agent.set_thinking(mode),
            Ok(sdk::Input::System { custom, append }) => {
                if custom.is_some() {
                    system.parts.custom = custom;
                }
                if append.is_some() {
                    system.parts.append = append;
                }
                agent.set_system(system.compose().0);
            }
            Ok(sdk::Input::End) | Err(_) => break,
        }
    }
    exit
}
