//! The line-mode session loop: prompts, slash commands, queued messages.

use std::rc::Rc;

use smol::future::FutureExt;

use super::exit::Exit;
use crate::agent::{Agent, Ending, Event};
use crate::frontend::Printer;
use crate::frontend::commands::{self, Command, Custom};
use crate::frontend::line::Input;
use crate::json::Value;
use crate::model::stream::Usage;
use crate::obj;
use crate::session::transcript::{Places, Transcript};
use crate::session::{resume, store};

pub struct Lines<'s> {
    pub input: Rc<Input>,
    pub custom: Vec<Custom>,
    pub cwd: std::path::PathBuf,
    /// Where `/resume` looks for sessions.
    pub transcripts: Places,
    pub transcript: &'s mut Option<Transcript>,
    pub printer: &'s mut Printer,
    /// The OpenTelemetry observer, when the environment asks for one.
    pub otel: &'s mut Option<super::telemetry::Observer>,
    /// After an answer, how long the prompt waits before Notification
    /// hooks hear `idle_prompt`.
    pub idle_notify: std::time::Duration,
    /// `/voice`'s recorder and speech server.
    #[cfg(feature = "voice")]
    pub voice: crate::voice::Config,
}

const IDLE_MESSAGE: &str = "tern is waiting for your input";

fn text(t: &str) -> Value {
    Value::Array(vec![obj! { "type" => "text", "text" => t }])
}

impl Lines<'_> {
    pub async fn run(&mut self, agent: &mut Agent<'_>, first: Option<Value>) -> Exit {
        eprintln!(
            "tern {} · {} · /help for commands · Ctrl-D to leave",
            env!("CARGO_PKG_VERSION"),
            agent.settings().model
        );
        let mut usage = Usage::default();
        let mut cost = 0.0;
        let mut next = first;
        // Whether the model has answered and the prompt waits on the user
        // (only then is an idle prompt news).
        let mut answered = false;
        loop {
            let prompt = match next.take() {
                Some(p) => p,
                None => {
                    let queued = self.input.queue.borrow_mut().pop_front();
                    let line = match queued {
                        Some(q) => {
                            eprintln!("> {q}");
                            q
                        }
                        None => {
                            let idle = async {
                                if answered {
                                    smol::Timer::after(self.idle_notify).await;
                                    agent
                                        .pipeline()
                                        .notification("idle_prompt", IDLE_MESSAGE)
                                        .await;
                                }
                                std::future::pending().await
                            };
                            match self.input.read_line("> ", agent.abort()).or(idle).await {
                                Some(l) => l,
                                None => break,
                            }
                        }
                    };
                    if line.trim().is_empty() {
                        continue;
                    }
                    self.input.history.borrow_mut().push(line.clone());
                    match commands::parse(&line, &self.custom) {
                        None => text(&line),
                        Some(Command::Prompt(p)) => text(&p),
                        Some(Command::Compact(args)) => text(&format!("/compact {args}")),
                        Some(Command::Exit) => break,
                        #[cfg(feature = "voice")]
                        Some(Command::Voice) => {
                            self.input.dictate(&self.voice, agent.abort()).await;
                            continue;
                        }
                        Some(other) => {
                            let place = Place {
                                custom: &self.custom,
                                cwd: &self.cwd,
                                transcripts: &self.transcripts,
                            };
                            eprint!("{}", command(other, agent, &place, &usage, cost));
                            continue;
                        }
                    }
                }
            };
            agent.abort().reset();
            let transcript = &mut *self.transcript;
            let printer = &mut *self.printer;
            let otel = &mut *self.otel;
            if let Some(o) = otel.as_mut() {
                o.begin(&agent.settings().model);
            }
            let input = Rc::clone(&self.input);
            let outcome = async {
                Some(
                    agent
                        .run(prompt, &mut |ev: Event<'_>| {
                            if let Some(t) = transcript.as_mut() {
                                crate::agent::record(t, &ev);
                            }
                            if let Some(o) = otel.as_mut() {
                                o.on(&ev);
                            }
                            printer.event(ev);
                        })
                        .await,
                )
            }
            .or(async {
                input.pump_lines().await;
                None
            })
            .await;
            let Some(outcome) = outcome else { continue };
            if let Some(o) = self.otel.as_mut() {
                o.finish(&outcome);
            }
            answered = true;
            usage.add(&outcome.usage);
            cost += outcome.cost_usd;
            if let Ending::Aborted(_) = outcome.ending {
                // Back at the prompt, the next Ctrl-C counts as a first one.
                agent.abort().reset();
                eprintln!("(interrupted)");
                continue;
            }
            self.printer.finish(&outcome);
        }
        Exit::Success
    }
}

/// Where slash commands look: custom commands, and the sessions `/resume`
/// can load.
pub(super) struct Place<'a> {
    pub custom: &'a [Custom],
    pub cwd: &'a std::path::Path,
    pub transcripts: &'a Places,
}

/// Runs a slash command other than a prompt, `/compact` or `/exit`; what
/// it has to say, for the frontend to show.
pub(super) fn command(
    command: Command,
    agent: &mut Agent<'_>,
    place: &Place<'_>,
    usage: &Usage,
    cost: f64,
) -> String {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    macro_rules! say {
        ($o:expr, $($t:tt)*) => {{ let _ = writeln!($o, $($t)*); }};
    }
    macro_rules! put {
        ($o:expr, $($t:tt)*) => {{ let _ = write!($o, $($t)*); }};
    }
    let mut out = String::new();
    match command {
        Command::Help => put!(
            out,
            "{}",
            commands::help(place.custom, &agent.pipeline().registry().commands())
        ),
        Command::Clear => {
            agent.replace_messages(Vec::new());
            say!(out, "(conversation cleared)");
        }
        Command::Model(None) => say!(out, "model: {}", agent.settings().model),
        Command::Model(Some(m)) => {
            say!(out, "model: {} → {m}", agent.settings().model);
            agent.set_model(m);
        }
        Command::Cost => say!(
            out,
            "{} input tokens ({} cached), {} output; about ${cost:.4}",
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens
        ),
        Command::Permissions => {
            let policy = agent.pipeline().policy();
            say!(out, "permission mode: {}", policy.mode());
            if policy.rules.is_empty() {
                say!(out, "  (no rules)");
            }
            for r in &policy.rules {
                say!(
                    out,
                    "  {:<6} {}",
                    format!("{:?}", r.behavior).to_lowercase(),
                    r.text()
                );
            }
        }
        Command::Resume(None) => {
            put!(
                out,
                "{}",
                store::render(&store::list(place.transcripts, place.cwd))
            );
        }
        Command::Resume(Some(id)) => {
            match store::find(place.transcripts, place.cwd, &id).and_then(|p| resume::load_file(&p))
            {
                Ok(loaded) => {
                    for w in &loaded.warnings {
                        say!(out, "tern: resume: {w}");
                    }
                    say!(out, "(loaded {} messages from {id})", loaded.messages.len());
                    agent.replace_messages(loaded.messages);
                }
                Err(e) => say!(out, "tern: {e}"),
            }
        }
        Command::Agents => match agent.pipeline().subagents() {
            Some(host) => {
                for d in host.defs.borrow().iter() {
                    say!(out, "  {:<20} {} ({})", d.name, d.description, d.source);
                }
            }
            None => say!(out, "(no sub-agents in this session)"),
        },
        Command::Mode(None) => {
            say!(out, "permission mode: {}", agent.pipeline().policy().mode());
        }
        Command::Mode(Some(name)) => match crate::policy::Mode::parse(&name) {
            // bypassPermissions is for the command line, where it is
            // chosen before anything runs, not mid-session.
            Some(crate::policy::Mode::BypassPermissions) | None => {
                say!(
                    out,
                    "unknown mode {name}; choose default, acceptEdits, plan or dontAsk"
                )
            }
            Some(mode) => {
                agent.pipeline().policy().set_mode(mode);
                say!(out, "(permission mode: {mode})");
            }
        },
        Command::Plan => {
            agent
                .pipeline()
                .policy()
                .set_mode(crate::policy::Mode::Plan);
            say!(
                out,
                "(plan mode: tern reads and plans; nothing is changed until you approve the plan)"
            );
        }
        Command::Bashes => {
            let shells = agent.pipeline().ctx().shells.listing();
            if shells.is_empty() {
                say!(out, "(no background shells)");
            }
            for line in shells {
                say!(out, "  {line}");
            }
        }
        Command::Voice => say!(
            out,
            "voice input is not in this build (it is built with the voice feature)"
        ),
        Command::Unknown(name) => say!(out, "unknown command /{name}; /help lists them"),
        Command::Compact(_) | Command::Prompt(_) | Command::Exit => {}
    }
    out
}
