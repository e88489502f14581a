//! Hooks: the user's own commands, run at fixed points of a session
//! (PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure,
//! UserPromptSubmit, Stop, SubagentStart, SubagentStop, SessionStart,
//! SessionEnd, PreCompact, Notification).
//!
//! Each matching command gets the event as JSON on stdin and answers with
//! its exit status and output: 0 is fine (stdout may be JSON with a
//! decision, or plain context for prompt/session events), 2 blocks (stderr
//! goes to the model), anything else is a non-blocking error. Matching
//! hooks run in parallel, each under its own timeout, in their own process
//! group so a timeout kills all they started.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use smol::future::FutureExt;
use smol::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::settings::HookEntry;
use crate::json::{self, Map, Value};

/// What the hooks of one event said, combined.
#[derive(Debug, Default, Clone)]
pub struct Verdict {
    /// Exit 2 or `decision: "block"`: the reason, for the model.
    pub block: Option<String>,
    /// PreToolUse `permissionDecision` (`allow`, `deny`, `ask`) and reason.
    pub permission: Option<(String, String)>,
    /// PreToolUse `updatedInput`.
    pub updated_input: Option<Value>,
    /// Text to add to what the model sees next.
    pub context: Vec<String>,
    /// `continue: false`: stop the session, with this reason.
    pub stop: Option<String>,
    /// Messages for the user (non-blocking errors, `systemMessage`), in
    /// the order the hooks gave them.
    pub notices: Vec<Notice>,
    /// PermissionRequest's `decision`: answered in place of a person.
    pub request: Option<RequestDecision>,
}

/// A PermissionRequest hook's answer to the question it was shown.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestDecision {
    pub allow: bool,
    /// `updatedInput` with an allow.
    pub updated_input: Option<Value>,
    /// With a deny: what the model is told.
    pub message: Option<String>,
    /// With a deny: stop the turn too.
    pub interrupt: bool,
}

/// One thing a hook tells the user.
#[derive(Debug, Clone)]
pub enum Notice {
    /// Its `systemMessage`.
    Said(String),
    /// It failed without blocking anything.
    Failed(HookError),
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Said(m) => f.write_str(m),
            Notice::Failed(e) => write!(f, "{e}"),
        }
    }
}

/// How a hook failed (a non-blocking error: the session goes on): the
/// hooks' error. `Display` is the line the user reads.
#[derive(Debug, Clone)]
pub enum HookError {
    /// Its command could not be started.
    NotStarted {
        event: String,
        hook: String,
        source: std::sync::Arc<std::io::Error>,
    },
    /// It ran past its timeout and was killed.
    TimedOut {
        event: String,
        hook: String,
        secs: u64,
    },
    /// It exited with a status other than 0 and 2 (`None`: a signal), or
    /// an SDK callback answered with an error (its words as `stderr`).
    Failed {
        event: String,
        hook: String,
        status: Option<i32>,
        stderr: String,
    },
    /// Its output starts with `{` but is not JSON.
    InvalidJson { event: String, hook: String },
}

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookError::NotStarted {
                event,
                hook,
                source,
            } => write!(f, "{event} hook `{hook}` could not start: {source}"),
            HookError::TimedOut { event, hook, secs } => {
                write!(f, "{event} hook `{hook}` timed out after {secs} s")
            }
            HookError::Failed {
                event,
                hook,
                status,
                stderr,
            } => {
                let code = status.map_or("a signal".to_string(), |c| format!("status {c}"));
                write!(
                    f,
                    "{event} hook `{hook}` failed with {code}: {}",
                    stderr.trim()
                )
            }
            HookError::InvalidJson { event, hook } => {
                write!(f, "{event} hook `{hook}` printed invalid JSON")
            }
        }
    }
}

impl std::error::Error for HookError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HookError::NotStarted { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Session facts every hook receives.
#[derive(Clone, Debug, Default)]
pub struct SessionFacts {
    pub session_id: String,
    pub transcript_path: String,
    pub cwd: String,
    pub permission_mode: String,
}

/// Hooks registered by a controlling program (the Agent SDK's
/// `initialize`): answered by it over the control channel.
pub trait Callbacks {
    fn call<'a>(
        &'a self,
        callback_id: &'a str,
        input: Value,
        tool_use_id: Option<&'a str>,
    ) -> crate::tools::LocalFuture<'a, Result<Value, String>>;
}

/// One registered callback.
#[derive(Debug, Clone)]
pub struct Callback {
    pub event: String,
    pub matcher: String,
    pub id: String,
    pub timeout_secs: u64,
}

pub struct Hooks {
    entries: Vec<HookEntry>,
    facts: SessionFacts,
    callbacks: std::cell::RefCell<Vec<Callback>>,
    bridge: std::cell::RefCell<Option<std::rc::Rc<dyn Callbacks>>>,
    /// What hook commands inherit (credentials removed).
    env: crate::config::ChildEnv,
}

impl Hooks {
    pub fn new(entries: Vec<HookEntry>, facts: SessionFacts) -> Hooks {
        Hooks {
            entries,
            facts,
            callbacks: Default::default(),
            bridge: Default::default(),
            env: crate::config::ChildEnv::new(Vec::new(), "", &[], &[]),
        }
    }

    /// The environment hook commands get.
    pub fn with_env(mut self, env: crate::config::ChildEnv) -> Hooks {
        self.env = env;
        self
    }

    /// Adds callback hooks answered through `bridge`.
    pub fn register(&self, callbacks: Vec<Callback>, bridge: std::rc::Rc<dyn Callbacks>) {
        self.callbacks.borrow_mut().extend(callbacks);
        *self.bridge.borrow_mut() = Some(bridge);
    }

    pub fn none() -> Hooks {
        Hooks::new(Vec::new(), SessionFacts::default())
    }

    /// Are there hooks for `event` matching `subject` (a tool name, or
    /// the event's own matcher value)?
    pub fn wants(&self, event: &str, subject: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.event == event && matcher_matches(&e.matcher, subject))
            || self
                .callbacks
                .borrow()
                .iter()
                .any(|c| c.event == event && matcher_matches(&c.matcher, subject))
    }

    /// Runs the hooks of `event` that match `subject`, with `fields` added
    /// to the common input, and combines what they said.
    pub async fn run(&self, event: &str, subject: &str, fields: Map) -> Verdict {
        let matching: Vec<&HookEntry> = self
            .entries
            .iter()
            .filter(|e| e.event == event && matcher_matches(&e.matcher, subject))
            .collect();
        let callbacks: Vec<Callback> = self
            .callbacks
            .borrow()
            .iter()
            .filter(|c| c.event == event && matcher_matches(&c.matcher, subject))
            .cloned()
            .collect();
        if matching.is_empty() && callbacks.is_empty() {
            return Verdict::default();
        }
        let mut input = Map::new();
        input.insert("session_id", self.facts.session_id.as_str());
        input.insert("transcript_path", self.facts.transcript_path.as_str());
        input.insert("cwd", self.facts.cwd.as_str());
        input.insert("permission_mode", self.facts.permission_mode.as_str());
        input.insert("hook_event_name", event);
        for (k, v) in fields.iter() {
            input.insert(k, v.clone());
        }
        let stdin = Value::Object(input).to_json();
        let runs: Vec<Pin<Box<dyn Future<Output = Ran> + '_>>> = matching
            .iter()
            .map(|e| {
                Box::pin(run_one(e, &stdin, &self.facts.cwd, &self.env))
                    as Pin<Box<dyn Future<Output = Ran>>>
            })
            .collect();
        let mut verdict = Verdict::default();
        for (entry, ran) in matching.iter().zip(join_all(runs).await) {
            interpret(event, entry, ran, &mut verdict);
        }
        let bridge = self.bridge.borrow().clone();
        if let Some(bridge) = bridge {
            let tool_use_id = fields.get("tool_use_id").and_then(Value::as_str);
            let input = json::parse(&stdin).unwrap_or_default();
            for c in callbacks {
                let asked = bridge.call(&c.id, input.clone(), tool_use_id);
                let timeout = async {
                    smol::Timer::after(Duration::from_secs(c.timeout_secs)).await;
                    Err("timed out".to_string())
                };
                let answer = asked.or(timeout).await;
                let entry = HookEntry {
                    event: c.event.clone(),
                    matcher: c.matcher.clone(),
                    command: format!("SDK callback {}", c.id),
                    timeout_secs: c.timeout_secs,
                    origin: crate::config::settings::Origin {
                        source: crate::config::settings::Source::Cli,
                        file: "SDK initialize".into(),
                        base: std::path::PathBuf::new(),
                    },
                };
                let ran = match answer {
                    Ok(output) => Ran {
                        status: Some(0),
                        stdout: output.to_json(),
                        stderr: String::new(),
                        timed_out: false,
                        spawn_error: None,
                    },
                    Err(e) => Ran {
                        status: Some(1),
                        stdout: String::new(),
                        stderr: e,
                        timed_out: false,
                        spawn_error: None,
                    },
                };
                interpret(event, &entry, ran, &mut verdict);
            }
        }
        verdict
    }
}

/// Empty or `*`: everything. Only names, `|`, `,` and spaces: exact names.
/// Anything else: a regular expression searched in the subject.
pub fn matcher_matches(matcher: &str, subject: &str) -> bool {
    let m = matcher.trim();
    if m.is_empty() || m == "*" {
        return true;
    }
    let plain = m
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '|' | ',' | ' ' | '-'));
    if plain {
        return m.split(['|', ',']).any(|name| name.trim() == subject);
    }
    regex::Regex::new(m).is_ok_and(|re| re.is_match(subject))
}

struct Ran {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
    spawn_error: Option<std::io::Error>,
}

async fn run_one(entry: &HookEntry, stdin: &str, cwd: &str, env: &crate::config::ChildEnv) -> Ran {
    let mut std_cmd = std::process::Command::new("/bin/sh");
    std_cmd.arg("-c").arg(&entry.command).current_dir(cwd);
    env.apply(&mut std_cmd);
    std_cmd
        .env("TERN_PROJECT_DIR", cwd)
        .env("CLAUDE_PROJECT_DIR", cwd);
    let mut child = match crate::sys::spawn_group(std_cmd) {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                status: None,
                stdout: String::new(),
                stderr: String::new(),
                timed_out: false,
                spawn_error: Some(e),
            };
        }
    };
    let pgid = child.id();
    let _group = crate::sys::GroupGuard::new(pgid);
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let mut input = child.stdin.take();
    let work = async {
        if let Some(w) = input.as_mut() {
            // A hook that ignores stdin may close it early: not an error.
            let _ = w.write_all(stdin.as_bytes()).await;
        }
        drop(input);
        let mut o = String::new();
        let mut e = String::new();
        let read_out = async {
            if let Some(r) = out.as_mut() {
                let _ = r.read_to_string(&mut o).await;
            }
        };
        let read_err = async {
            if let Some(r) = err.as_mut() {
                let _ = r.read_to_string(&mut e).await;
            }
        };
        smol::future::zip(read_out, read_err).await;
        let status = child.status().await.ok().and_then(|s| s.code());
        Some((status, o, e))
    };
    let timeout = async {
        smol::Timer::after(Duration::from_secs(entry.timeout_secs)).await;
        None
    };
    let finished = work.or(timeout).await;
    crate::sys::kill_process_group(pgid);
    let timed_out = finished.is_none();
    let (status, stdout, stderr) = finished.unwrap_or_default();
    Ran {
        status,
        stdout,
        stderr,
        timed_out,
        spawn_error: None,
    }
}

fn interpret(event: &str, entry: &HookEntry, ran: Ran, v: &mut Verdict) {
    let name = &entry.command;
    let failed = |e: HookError| Notice::Failed(e);
    if let Some(e) = ran.spawn_error {
        v.notices.push(failed(HookError::NotStarted {
            event: event.to_string(),
            hook: name.clone(),
            source: std::sync::Arc::new(e),
        }));
        return;
    }
    if ran.timed_out {
        v.notices.push(failed(HookError::TimedOut {
            event: event.to_string(),
            hook: name.clone(),
            secs: entry.timeout_secs,
        }));
        return;
    }
    match ran.status {
        Some(0) => {}
        Some(2) => {
            let reason = ran.stderr.trim();
            v.block = Some(if reason.is_empty() {
                format!("blocked by the {event} hook `{name}`")
            } else {
                reason.to_string()
            });
            return;
        }
        status => {
            v.notices.push(failed(HookError::Failed {
                event: event.to_string(),
                hook: name.clone(),
                status,
                stderr: ran.stderr,
            }));
            return;
        }
    }
    let out = ran.stdout.trim();
    if !out.starts_with('{') {
        // Plain output is context for the events that take it.
        if !out.is_empty() && matches!(event, "UserPromptSubmit" | "SessionStart") {
            v.context.push(out.to_string());
        }
        return;
    }
    let Ok(j) = json::parse(out) else {
        v.notices.push(failed(HookError::InvalidJson {
            event: event.to_string(),
            hook: name.clone(),
        }));
        return;
    };
    if j.get("continue").and_then(Value::as_bool) == Some(false) {
        v.stop = Some(
            j.str_field("stopReason")
                .unwrap_or("stopped by a hook")
                .to_string(),
        );
    }
    if let Some(m) = j.str_field("systemMessage") {
        v.notices.push(Notice::Said(m.to_string()));
    }
    if j.str_field("decision") == Some("block") {
        v.block = Some(
            j.str_field("reason")
                .unwrap_or("blocked by a hook")
                .to_string(),
        );
    }
    if let Some(h) = j.get("hookSpecificOutput") {
        if let Some(d) = h.str_field("permissionDecision") {
            let reason = h
                .str_field("permissionDecisionReason")
                .unwrap_or("")
                .to_string();
            v.permission = Some((d.to_string(), reason));
        }
        if let Some(u) = h.get("updatedInput") {
            v.updated_input = Some(u.clone());
        }
        if let Some(c) = h.str_field("additionalContext") {
            v.context.push(c.to_string());
        }
        if let Some(d) = h.get("decision").filter(|d| d.as_object().is_some()) {
            // A deny from any hook wins over an allow from another.
            let allow = d.str_field("behavior") == Some("allow");
            if d.str_field("behavior").is_some() && v.request.as_ref().is_none_or(|r| r.allow) {
                v.request = Some(RequestDecision {
                    allow,
                    updated_input: d.get("updatedInput").filter(|_| allow).cloned(),
                    message: d.str_field("message").map(str::to_string),
                    interrupt: d.get("interrupt").and_then(Value::as_bool) == Some(true),
                });
            }
        }
    }
}

/// Polls every future until all are done; results in the given order.
async fn join_all<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut results: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in futures.iter_mut().enumerate() {
            if results[i].is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => results[i] = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::{Origin, Source};

    fn entry(event: &str, matcher: &str, command: &str) -> HookEntry {
        HookEntry {
            event: event.into(),
            matcher: matcher.into(),
            command: command.into(),
            timeout_secs: 5,
            origin: Origin {
                source: Source::Project,
                file: "test".into(),
                base: std::env::temp_dir(),
            },
        }
    }

    fn hooks(entries: Vec<HookEntry>) -> Hooks {
        Hooks::new(
            entries,
            SessionFacts {
                session_id: "s1".into(),
                transcript_path: "/t.jsonl".into(),
                cwd: std::env::temp_dir().display().to_string(),
                permission_mode: "default".into(),
            },
        )
    }

    #[test]
    fn matchers() {
        assert!(matcher_matches("", "Bash"));
        assert!(matcher_matches("*", "Bash"));
        assert!(matcher_matches("Edit|Write", "Write"));
        assert!(!matcher_matches("Edit|Write", "WriteFile"));
        assert!(matcher_matches("mcp__.*__delete", "mcp__github__delete"));
        assert!(!matcher_matches("Edit", "Bash"));
    }

    #[test]
    fn exit_codes_json_and_parallel_runs() {
        let h = hooks(vec![
            entry(
                "PreToolUse",
                "Bash",
                "cat > /dev/null; echo 'no rm here' >&2; exit 2",
            ),
            entry(
                "PreToolUse",
                "Bash",
                r#"echo '{"hookSpecificOutput":{"additionalContext":"ctx from hook"},"systemMessage":"hi"}'"#,
            ),
            entry("PreToolUse", "Read", "exit 2"),
            entry("PreToolUse", "Bash", "exit 7"),
        ]);
        let mut fields = Map::new();
        fields.insert("tool_name", "Bash");
        let v = smol::block_on(h.run("PreToolUse", "Bash", fields));
        assert_eq!(v.block.as_deref(), Some("no rm here"));
        assert_eq!(v.context, ["ctx from hook"]);
        assert!(v.notices.iter().any(|n| n.to_string() == "hi"));
        assert!(v.notices.iter().any(|n| n.to_string().contains("status 7")));
    }

    #[test]
    fn input_reaches_the_hook_and_decisions_come_back() {
        let h = hooks(vec![entry(
            "PreToolUse",
            "",
            r#"read -r line; case "$line" in *'"hook_event_name":"PreToolUse"'*'"tool_name":"Bash"'*) echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"saw bash"}}';; *) echo "$line" >&2; exit 1;; esac"#,
        )]);
        let mut fields = Map::new();
        fields.insert("tool_name", "Bash");
        let v = smol::block_on(h.run("PreToolUse", "Bash", fields));
        assert_eq!(
            v.permission,
            Some(("deny".into(), "saw bash".into())),
            "{v:?}"
        );
    }

    #[test]
    fn timeouts_kill_the_hook() {
        let mut e = entry("Stop", "", "sleep 30");
        e.timeout_secs = 1;
        let began = std::time::Instant::now();
        let v = smol::block_on(hooks(vec![e]).run("Stop", "", Map::new()));
        assert!(
            v.notices[0].to_string().contains("timed out after 1 s"),
            "{v:?}"
        );
        assert!(began.elapsed() < Duration::from_secs(10));
    }
}
