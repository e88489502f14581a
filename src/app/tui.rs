//! The TUI's session loop: the same prompts, slash commands and queue as
//! line mode, drawn by `frontend::tui`. Keys are read all the time: at
//! the prompt they edit the composer; during a turn they answer dialogs,
//! queue messages, interrupt (Esc) or change the mode (Shift+Tab).

use std::cell::Cell;
use std::rc::Rc;

use smol::future::FutureExt;

use super::build::Parts;
use super::exit::Exit;
use super::lines::{Place, command};
use crate::abort::Reason;
use crate::agent::pipeline::Pipeline;
use crate::agent::{Ending, Event};
use crate::config::Runtime;
use crate::frontend::commands::{self, Command};
use crate::frontend::tui::{Action, Tui};
use crate::json::Value;
use crate::model::stream::Usage;
use crate::obj;
use crate::policy::Mode;

fn text(t: &str) -> Value {
    Value::Array(vec![obj! { "type" => "text", "text" => t }])
}

/// Shift+Tab: default → acceptEdits → plan, and bypassPermissions only in
/// a session that started in it (it is never reached by a key alone).
fn cycle(pipeline: &Pipeline, tui: &Tui, may_bypass: bool) {
    let policy = pipeline.policy();
    let next = match policy.mode() {
        Mode::Default => Mode::AcceptEdits,
        Mode::AcceptEdits => Mode::Plan,
        Mode::Plan if may_bypass => Mode::BypassPermissions,
        _ => Mode::Default,
    };
    policy.set_mode(next);
    tui.set_status(|s| s.mode = next.as_str().to_string());
}

/// What an ending other than a finished answer says.
fn ending_note(ending: &Ending, turns: u32) -> Option<String> {
    Some(match ending {
        Ending::Completed => return None,
        Ending::Aborted(crate::abort::Reason::TimeLimit) => {
            "tern: reached the time limit (--max-duration)".to_string()
        }
        Ending::Aborted(_) => "(interrupted)".to_string(),
        Ending::MaxTurns => format!("tern: reached the maximum number of turns ({turns})"),
        Ending::ModelError(m) | Ending::Blocked(m) => format!("tern: {m}"),
        Ending::BudgetExceeded(spent) => {
            format!("tern: reached the budget: ${spent:.4} spent (--max-budget-usd)")
        }
        Ending::StructuredOutputRetries(n) => {
            format!("tern: no valid StructuredOutput call in {n} tries")
        }
        Ending::OutputTokensExceeded(n) => {
            format!("tern: reached the output token budget: {n} tokens (--max-output-tokens-total)")
        }
    })
}

pub(super) async fn run(
    rt: &Runtime,
    parts: &mut Parts,
    tui: Rc<Tui>,
    otel: &mut Option<super::telemetry::Observer>,
) -> Exit {
    let custom = commands::load(&rt.command_dirs);
    let place = Place {
        custom: &custom,
        cwd: &rt.cwd,
        transcripts: &rt.transcripts,
    };
    let agent = &mut parts.agent;
    let pipeline = Rc::clone(agent.pipeline());
    let abort = agent.abort().clone();
    let may_bypass = rt.mode == Mode::BypassPermissions;
    tui.watch_shells(Rc::clone(&pipeline.ctx().shells));
    #[cfg(feature = "voice")]
    tui.set_voice(rt.voice.clone());
    let mut usage = Usage::default();
    let mut cost = 0.0;
    let mut next = (!rt.prompt.trim().is_empty()).then(|| {
        tui.echo(&rt.prompt);
        Value::Array(std::mem::take(&mut parts.first_prompt))
    });
    let mut exit = Exit::Success;
    loop {
        let prompt = match next.take() {
            Some(p) => p,
            None => {
                // MCP prompts of servers that joined since.
                tui.add_commands(agent.pipeline().registry().commands());
                let line = match tui.take_queued() {
                    Some(q) => q,
                    None => match tui.next().await {
                        Action::Submit(t) => t,
                        Action::Exit(interrupted) => {
                            if interrupted {
                                exit = Exit::Signal(libc::SIGINT);
                            }
                            break;
                        }
                        Action::CycleMode => {
                            cycle(&pipeline, &tui, may_bypass);
                            continue;
                        }
                        Action::Interrupt => continue,
                    },
                };
                tui.echo(&line);
                match commands::parse(&line, &custom) {
                    None => text(&line),
                    Some(Command::Prompt(p)) => text(&p),
                    Some(Command::Compact(args)) => text(&format!("/compact {args}")),
                    Some(Command::Exit) => break,
                    #[cfg(feature = "voice")]
                    Some(Command::Voice) => {
                        tui.start_voice();
                        continue;
                    }
                    Some(other) => {
                        let said = command(other, agent, &place, &usage, cost);
                        tui.say(&said);
                        let (model, mode) = (
                            agent.settings().model.clone(),
                            pipeline.policy().mode().as_str().to_string(),
                        );
                        tui.set_status(|s| {
                            s.model = model;
                            s.mode = mode;
                        });
                        continue;
                    }
                }
            }
        };
        abort.reset();
        tui.set_busy(true);
        let leaving = Cell::new(None);
        let transcript = &mut parts.transcript;
        if let Some(o) = otel.as_mut() {
            o.begin(&agent.settings().model);
        }
        let observer = &mut *otel;
        let outcome = async {
            Some(
                agent
                    .run(prompt, &mut |ev: Event<'_>| {
                        if let Some(t) = transcript.as_mut() {
                            crate::agent::record(t, &ev);
                        }
                        if let Some(o) = observer.as_mut() {
                            o.on(&ev);
                        }
                        tui.event(&ev);
                    })
                    .await,
            )
        }
        .or(async {
            loop {
                match tui.next().await {
                    // Typed during a turn: queued by the interface.
                    Action::Submit(_) => {}
                    Action::Interrupt => abort.trigger(Reason::Requested),
                    Action::Exit(interrupted) => {
                        leaving.set(Some(interrupted));
                        abort.trigger(Reason::Requested);
                    }
                    Action::CycleMode => cycle(&pipeline, &tui, may_bypass),
                }
            }
        })
        .await;
        tui.set_busy(false);
        if let Some(outcome) = outcome {
            if let Some(o) = otel.as_mut() {
                o.finish(&outcome);
            }
            usage.add(&outcome.usage);
            cost += outcome.cost_usd;
            let shells = pipeline.ctx().shells.running();
            tui.set_status(|s| {
                s.cost = cost;
                s.shells = shells;
            });
            if let Some(note) = ending_note(&outcome.ending, outcome.num_turns) {
                tui.say(&note);
            }
        }
        if let Some(interrupted) = leaving.get() {
            if interrupted {
                exit = Exit::Signal(libc::SIGINT);
            }
            break;
        }
    }
    tui.stop();
    exit
}
