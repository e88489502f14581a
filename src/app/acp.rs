//! `tern acp`: sessions driven by an editor over the Agent Client
//! Protocol (`frontend::acp` owns the wire). Each `session/new` or
//! `session/load` resolves the configuration for the client's working
//! directory — with the flags `tern acp` was started with and the
//! client's MCP servers as `--mcp-config` — and builds a session as any
//! other command does, so its transcript is one `tern --resume` takes
//! and its permissions are the same policy's. The client answers the
//! questions (`session/request_permission`) and, when it offers to,
//! lends its buffers to Read.
//!
//! Implementation: one task reads stdin; each prompt runs as a task of
//! its own, so `session/cancel` and the answers to tern's requests are
//! read while it runs. A session's parts sit behind an async lock: a
//! second prompt to a busy session waits for the first.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use smol::LocalExecutor;

use super::build::{self, External, Notes, Parts};
use super::exit::{Exit, Failure};
use crate::abort::{Abort, Reason};
use crate::agent::{Ending, Outcome};
use crate::cli::Args;
use crate::config::{self, Env, Inputs};
use crate::frontend::acp::{self, AcpApprover, AcpEditor, Call, Peer, RpcError, updates};
use crate::frontend::commands;
use crate::json::Value;
use crate::model::client::Client;
use crate::obj;
use crate::policy::Mode;
use crate::session::SessionError;

/// One open session.
struct Session {
    id: String,
    parts: smol::lock::Mutex<Parts>,
    abort: Abort,
    pipeline: Rc<crate::agent::pipeline::Pipeline>,
    cwd: PathBuf,
    /// The user's slash commands, expanded when a prompt starts with one.
    custom: Vec<commands::Custom>,
    bypass_allowed: bool,
    /// The model the client picked, taken up at the next prompt; and the
    /// configured ones it may pick from.
    model: RefCell<String>,
    models: Vec<String>,
    /// The OpenTelemetry export, when the environment asks for one.
    otel: RefCell<Option<super::telemetry::Observer>>,
}

impl Session {
    fn config_options(&self) -> Value {
        acp::config_options(&self.model.borrow(), &self.models)
    }
}

/// Serves ACP on stdin and stdout until stdin ends.
pub async fn run(ex: &'static LocalExecutor<'static>, args: Args) -> i32 {
    // Read once: the first session erases the credentials from tern's own
    // environment, and later sessions still need them.
    let env = Env::process();
    let peer = Rc::new(Peer::default());
    let (tx, rx) = smol::channel::unbounded();
    ex.spawn(acp::read_input(Rc::clone(&peer), tx)).detach();
    let sessions: Rc<RefCell<HashMap<String, Rc<Session>>>> = Rc::default();
    while let Ok(call) = rx.recv().await {
        match call {
            Call::Open {
                id,
                cwd,
                mcp_config,
                resume,
            } => {
                let loading = resume.is_some();
                match open(ex, &args, &env, &peer, cwd, mcp_config, resume).await {
                    Ok(session) => {
                        let modes =
                            acp::modes(session.pipeline.policy().mode(), session.bypass_allowed);
                        let options = session.config_options();
                        if loading {
                            let parts = session.parts.lock().await;
                            for u in updates::replay(parts.agent.messages(), &session.cwd) {
                                peer.update(&session.id, u);
                            }
                            drop(parts);
                            peer.respond(
                                &id,
                                Ok(obj! { "modes" => modes, "configOptions" => options }),
                            );
                        } else {
                            peer.respond(
                                &id,
                                Ok(obj! {
                                    "sessionId" => session.id.as_str(),
                                    "modes" => modes,
                                    "configOptions" => options,
                                }),
                            );
                        }
                        announce_commands(&peer, &session).await;
                        sessions.borrow_mut().insert(session.id.clone(), session);
                    }
                    Err(e) => peer.respond(&id, Err(e)),
                }
            }
            Call::Prompt {
                id,
                session,
                content,
            } => {
                let Some(s) = sessions.borrow().get(&session).cloned() else {
                    peer.respond(&id, Err(unknown(&session)));
                    continue;
                };
                let peer = Rc::clone(&peer);
                ex.spawn(async move {
                    let result = prompt(&peer, &s, content).await;
                    peer.respond(&id, result);
                })
                .detach();
            }
            Call::SetMode { id, session, mode } => {
                let Some(s) = sessions.borrow().get(&session).cloned() else {
                    peer.respond(&id, Err(unknown(&session)));
                    continue;
                };
                if mode == Mode::BypassPermissions && !s.bypass_allowed {
                    peer.respond(
                        &id,
                        Err(RpcError::params(
                            "bypassPermissions mode is disabled by the settings",
                        )),
                    );
                    continue;
                }
                s.pipeline.policy().set_mode(mode);
                peer.respond(&id, Ok(obj! {}));
                peer.update(&s.id, mode_update(mode));
            }
            Call::SetModel { id, session, model } => {
                let Some(s) = sessions.borrow().get(&session).cloned() else {
                    peer.respond(&id, Err(unknown(&session)));
                    continue;
                };
                *s.model.borrow_mut() = model;
                peer.respond(&id, Ok(obj! { "configOptions" => s.config_options() }));
            }
            Call::Cancel { session } => {
                if let Some(s) = sessions.borrow().get(&session) {
                    s.abort.trigger(Reason::Requested);
                }
            }
            Call::End => break,
        }
    }
    // Input ended: stop what runs, then close each session as any other
    // command would (background shells, SessionEnd hooks, MCP servers).
    let open: Vec<Rc<Session>> = sessions.borrow_mut().drain().map(|(_, s)| s).collect();
    for s in &open {
        s.abort.trigger(Reason::Requested);
    }
    for s in open {
        // Once the lock is free, the prompt that held it has ended.
        drop(s.parts.lock().await);
        if let Ok(s) = Rc::try_unwrap(s) {
            s.parts.into_inner().finish().await;
            if let Some(o) = s.otel.into_inner() {
                o.shutdown();
            }
        }
    }
    Exit::Success.code()
}

fn unknown(session: &str) -> RpcError {
    RpcError::new(
        RpcError::NOT_FOUND,
        format!("no session {session:?} is open (session/new or session/load it first)"),
    )
}

fn mode_update(mode: Mode) -> Value {
    obj! { "sessionUpdate" => "current_mode_update", "currentModeId" => mode.as_str() }
}

/// Resolves the configuration for the client's directory and builds the
/// session, new or resumed.
#[allow(clippy::too_many_arguments)]
async fn open(
    ex: &'static LocalExecutor<'static>,
    args: &Args,
    env: &Env,
    peer: &Rc<Peer>,
    cwd: PathBuf,
    mcp_config: Option<String>,
    resume: Option<String>,
) -> Result<Rc<Session>, RpcError> {
    let failed = |e: &dyn std::fmt::Display| RpcError::internal(e.to_string());
    let mut args = args.clone();
    args.prompt = Some(String::new());
    args.mcp_configs.extend(mcp_config);
    // The id is chosen here, so the client's answerers know it before
    // the session is built.
    let id = match resume {
        Some(r) => {
            args.resume = Some(r.clone());
            r
        }
        None => {
            let id = crate::session::new_uuid();
            args.session_id = Some(id.clone());
            id
        }
    };
    let inputs = Inputs {
        env: env.clone(),
        cwd,
        stdin: None,
    };
    let mut rt = config::resolve(args, inputs).map_err(|e| failed(&e))?;
    crate::frontend::trust::notice(&rt.trust);
    let _ = rt.child_env.erase_from_own_environment();
    rt.check_credentials().map_err(|e| failed(&e))?;
    let mut notes = Notes::default();
    for warning in &rt.warnings {
        notes.warning(format!("warning: {warning}"));
    }
    let discovered = super::discover_server(&mut rt, &mut notes)
        .await
        .map_err(|e| failed(&e))?;
    let client = Client::new(&rt.client).map_err(|e| failed(&e))?;
    let abort = Abort::new();
    let caps = peer.caps();
    let external = External {
        approver: Rc::new(AcpApprover {
            peer: Rc::clone(peer),
            session: id.clone(),
            abort: abort.clone(),
            cwd: rt.cwd.clone(),
        }),
        // Writes to buffers need reads too: a buffer is written only when
        // it was seen to hold what the disk held.
        editor: caps.read_text_file.then(|| {
            Rc::new(AcpEditor {
                peer: Rc::clone(peer),
                session: id.clone(),
                writes: caps.write_text_file,
            }) as Rc<dyn crate::tools::Editor>
        }),
    };
    let parts = build::build(
        ex,
        &rt,
        client,
        abort.clone(),
        discovered,
        false,
        Some(external),
        &mut notes,
    )
    .await
    .map_err(|e| match &e {
        // session/load of a session this directory does not have.
        Failure::Session(SessionError::NotFound { .. }) => {
            RpcError::new(RpcError::NOT_FOUND, e.to_string())
        }
        Failure::Session(SessionError::NotAnId(_)) => RpcError::params(e.to_string()),
        _ => failed(&e),
    })?;
    // stdout is the protocol's: what the build has to say goes to stderr.
    super::say(notes.take());
    let otel = super::telemetry::Observer::start(&rt, &id, Rc::clone(parts.agent.pipeline()));
    Ok(Rc::new(Session {
        otel: RefCell::new(otel),
        id,
        pipeline: Rc::clone(parts.agent.pipeline()),
        abort,
        cwd: rt.cwd.clone(),
        custom: commands::load(&rt.command_dirs),
        bypass_allowed: rt.bypass_allowed,
        model: RefCell::new(rt.model.clone()),
        models: std::iter::once(rt.model.clone())
            .chain(rt.fallback_models.iter().cloned())
            .collect(),
        parts: smol::lock::Mutex::new(parts),
    }))
}

/// The commands a prompt may start with: the user's own and the MCP
/// servers' prompts.
async fn announce_commands(peer: &Peer, session: &Session) {
    let mut list: Vec<Value> = session
        .custom
        .iter()
        .map(|c| {
            obj! {
                "name" => c.name.as_str(),
                "description" => c.description.as_str(),
                "input" => obj! { "hint" => "arguments" },
            }
        })
        .collect();
    let parts = session.parts.lock().await;
    for (name, description) in parts.agent.pipeline().registry().commands() {
        list.push(obj! { "name" => name, "description" => description });
    }
    drop(parts);
    peer.update(
        &session.id,
        obj! { "sessionUpdate" => "available_commands_update", "availableCommands" => list },
    );
}

/// Runs one prompt, streaming its updates; answers its stop reason.
async fn prompt(
    peer: &Peer,
    session: &Session,
    mut content: Vec<Value>,
) -> Result<Value, RpcError> {
    expand_command(&mut content, &session.custom);
    let mut parts = session.parts.lock().await;
    let Parts {
        agent, transcript, ..
    } = &mut *parts;
    agent.abort().reset();
    let model = session.model.borrow().clone();
    if agent.settings().model != model {
        agent.set_model(model);
    }
    let policy = Rc::clone(agent.pipeline());
    let mut mode = policy.policy().mode();
    let cwd: &Path = &session.cwd;
    // Taken for the prompt (the parts' lock makes it the only one) and put
    // back after: no borrow is held across the run.
    let mut otel = session.otel.borrow_mut().take();
    if let Some(o) = otel.as_mut() {
        o.begin(&agent.settings().model);
    }
    let outcome = agent
        .run(Value::Array(content), &mut |ev| {
            if let Some(t) = transcript.as_mut() {
                crate::agent::record(t, &ev);
            }
            if let Some(o) = otel.as_mut() {
                o.on(&ev);
            }
            for u in updates::live(&ev, cwd) {
                peer.update(&session.id, u);
            }
            // An approved plan changes the mode: the client is told.
            let now = policy.policy().mode();
            if now != mode {
                mode = now;
                peer.update(&session.id, mode_update(now));
            }
        })
        .await;
    if let Some(o) = otel.as_mut() {
        o.finish(&outcome);
    }
    *session.otel.borrow_mut() = otel;
    drop(parts);
    // Said while the prompt ran (a server that failed, say): on stderr.
    super::say(crate::report::notices().take());
    stop_reason(&outcome)
}

/// A prompt that starts with one of the user's commands is that
/// command's text.
fn expand_command(content: &mut [Value], custom: &[commands::Custom]) {
    if let Some(first) = content.first_mut()
        && let Some(expanded) = first
            .str_field("text")
            .and_then(|t| commands::expand(t, custom))
    {
        *first = obj! { "type" => "text", "text" => expanded };
    }
}

/// How the turn ended, in ACP's words; a model that failed is an error.
fn stop_reason(outcome: &Outcome) -> Result<Value, RpcError> {
    let reason = match &outcome.ending {
        Ending::Completed if outcome.stop_reason.as_deref() == Some("max_tokens") => "max_tokens",
        Ending::Completed => "end_turn",
        Ending::MaxTurns | Ending::BudgetExceeded(_) => "max_turn_requests",
        Ending::OutputTokensExceeded(_) => "max_tokens",
        Ending::Aborted(_) => "cancelled",
        Ending::Blocked(_) | Ending::StructuredOutputRetries(_) => "refusal",
        Ending::ModelError(e) => return Err(RpcError::internal(e.clone())),
    };
    Ok(obj! { "stopReason" => reason })
}
