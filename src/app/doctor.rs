//! `tern doctor`: one screen that says what a session started here would
//! use, where each choice came from, and whether it works — without ever
//! showing a secret. Exit 0 when nothing blocks a session, 1 otherwise.
//!
//! Each finding is a [`Check`] with a state; only `Fail` blocks. The
//! checks are gathered first and rendered after, as text or as JSON
//! (`--output-format json`), so both say exactly the same. `--bench` adds
//! a measurement of the model server (see `bench`).

use std::path::Path;
use std::time::{Duration, Instant};

use super::exit::Exit;
use crate::cli::{Args, OutputFormat};
use crate::config::{self, Inputs, Runtime};
use crate::json::Value;
use crate::model::client::{Auth, Client};
use crate::model::{Provider, discover};
use crate::obj;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ok,
    Info,
    Warn,
    Fail,
}

impl State {
    fn word(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Info => "info",
            State::Warn => "warn",
            State::Fail => "FAIL",
        }
    }
}

struct Check {
    section: &'static str,
    name: String,
    state: State,
    detail: String,
}

#[derive(Default)]
struct Report {
    checks: Vec<Check>,
    /// `--bench`'s measurement, and what it was of.
    bench: Option<(super::bench::Bench, String)>,
}

impl Report {
    fn add(&mut self, section: &'static str, name: &str, state: State, detail: impl Into<String>) {
        self.checks.push(Check {
            section,
            name: name.to_string(),
            state,
            detail: detail.into(),
        });
    }

    fn failures(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.state == State::Fail)
            .count()
    }

    fn text(&self) -> String {
        let mut out = String::from("tern doctor: what a session started here would use\n");
        let mut section = "";
        for c in &self.checks {
            if c.section != section {
                section = c.section;
                out.push_str(&format!("\n{section}\n"));
            }
            out.push_str(&format!(
                "  {:<5} {:<14} {}\n",
                c.state.word(),
                c.name,
                c.detail
            ));
        }
        if let Some((b, of)) = &self.bench {
            out.push_str(&format!("\nbench: {of}\n{}", b.text()));
        }
        let n = self.failures();
        out.push_str(&match n {
            0 => "\nready: nothing blocks a session\n".to_string(),
            1 => "\n1 problem blocks a session (marked FAIL)\n".to_string(),
            n => format!("\n{n} problems block a session (marked FAIL)\n"),
        });
        out
    }

    fn json(&self) -> String {
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| {
                obj! {
                    "section" => c.section,
                    "name" => c.name.as_str(),
                    "status" => c.state.word().to_ascii_lowercase(),
                    "detail" => c.detail.as_str(),
                }
            })
            .collect();
        let mut out = obj! { "ok" => self.failures() == 0, "checks" => checks };
        if let (Some((b, _)), Some(m)) = (&self.bench, out.as_object_mut()) {
            m.insert("bench", b.to_value());
        }
        out.to_json()
    }
}

/// `tern doctor [--bench] [--output-format json]`.
pub fn doctor(mut args: Args, bench: bool) -> Exit {
    let json = args.output_format == Some(OutputFormat::Json);
    args.prompt = Some(String::new());
    let report = match Inputs::from_process(None) {
        Ok(inputs) => {
            let ex: &'static smol::LocalExecutor<'static> =
                Box::leak(Box::new(smol::LocalExecutor::new()));
            smol::block_on(ex.run(examine(ex, args, inputs, bench)))
        }
        Err(e) => {
            let mut r = Report::default();
            r.add("session", "directory", State::Fail, e.to_string());
            r
        }
    };
    if json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    Exit::failed_if(report.failures() > 0)
}

async fn examine(
    #[cfg_attr(not(feature = "mcp"), allow(unused_variables))] ex: &'static smol::LocalExecutor<
        'static,
    >,
    args: Args,
    inputs: Inputs,
    bench: bool,
) -> Report {
    let mut r = Report::default();
    let mut rt = match config::resolve(args, inputs) {
        Ok(rt) => rt,
        Err(e) => {
            r.add("settings", "configuration", State::Fail, e.to_string());
            return r;
        }
    };
    let unerased = rt.child_env.erase_from_own_environment();
    rt.warnings.extend(unerased);
    endpoint(&mut r, &mut rt).await;
    if bench {
        measure(&mut r, &rt).await;
    }
    settings(&mut r, &rt);
    trust(&mut r, &rt);
    plugins(&mut r, &rt);
    sandbox(&mut r, &rt);
    #[cfg(feature = "mcp")]
    mcp(&mut r, ex, &rt).await;
    #[cfg(not(feature = "mcp"))]
    if !rt.mcp_configs.is_empty() || !rt.mcp_settings.is_empty() {
        r.add(
            "mcp",
            "servers",
            State::Warn,
            "MCP servers are configured, but this tern was built without the mcp feature",
        );
    }
    hooks(&mut r, &rt);
    #[cfg(feature = "voice")]
    voice(&mut r, &rt);
    transcripts(&mut r, &rt);
    network(&mut r, &rt);
    r
}

/// Provider, URL, model, window and credentials, then one request to see
/// that the server answers and accepts them.
async fn endpoint(r: &mut Report, rt: &mut Runtime) {
    const S: &str = "model endpoint";
    if let Some(plan) = rt.discover.clone() {
        let ca = rt.client.extra_ca_pem.clone();
        let probes = smol::unblock(move || {
            discover::probe_all(&plan.candidates, plan.timeout, ca.as_deref())
        })
        .await;
        for p in &probes {
            let (state, detail) = match &p.outcome {
                Ok(f) => (State::Ok, format!("answers; lists {}", f.models.join(", "))),
                Err(e) if e.is_refused() => (State::Info, e.to_string()),
                Err(e) => (State::Warn, e.to_string()),
            };
            r.add(
                S,
                "probe",
                state,
                format!(
                    "{} at {}: {detail}",
                    p.candidate.kind.name(),
                    p.candidate.url
                ),
            );
        }
        match discover::pick(&probes).cloned() {
            Some(found) => {
                for note in rt.use_discovered(&found) {
                    r.add(S, "note", State::Info, note);
                }
            }
            None => {
                let detail = format!(
                    "nothing configured, and none of the servers probed above answered as expected. {}",
                    discover::FIXES
                );
                r.add(
                    S,
                    "server",
                    State::Fail,
                    detail.replace('\n', "\n                       "),
                );
                return;
            }
        }
    }
    let provider = match rt.client.provider {
        Provider::Anthropic => "anthropic (Messages API)",
        Provider::OpenAi => "openai (chat completions)",
    };
    let p = &rt.provenance;
    r.add(
        S,
        "provider",
        State::Ok,
        format!("{provider}  [{}]", p.provider),
    );
    r.add(
        S,
        "base URL",
        State::Ok,
        format!("{}  [{}]", rt.client.base_url, p.base_url),
    );
    r.add(
        S,
        "model",
        State::Ok,
        format!("{}  [{}]", rt.model, p.model),
    );
    let credentials = match (&rt.client.auth, rt.check_credentials()) {
        (_, Err(e)) => (State::Fail, e.to_string()),
        (Auth::None, Ok(())) => (State::Ok, "none (a local server needs none)".to_string()),
        (Auth::ApiKey(k) | Auth::Bearer(k), Ok(())) => (
            State::Ok,
            format!(
                "from {} ({} characters; not shown)",
                rt.api_key_source,
                k.chars().count()
            ),
        ),
    };
    let usable = credentials.0 != State::Fail;
    r.add(S, "credentials", credentials.0, credentials.1);
    if !usable {
        return;
    }
    let client = match Client::new(&rt.client) {
        Ok(c) => c,
        Err(e) => {
            r.add(S, "client", State::Fail, e.to_string());
            return;
        }
    };
    let probe = client.clone();
    let began = Instant::now();
    let answer = smol::unblock(move || probe.get("/v1/models", Duration::from_secs(5))).await;
    let ms = began.elapsed().as_millis();
    let (state, detail) = match answer {
        Ok((200, _)) => (
            State::Ok,
            format!("answers: GET /v1/models gave 200 in {ms} ms"),
        ),
        Ok((status @ (401 | 403), _)) => (
            State::Fail,
            format!("the server refuses the credentials (HTTP {status} on /v1/models)"),
        ),
        Ok((status, _)) => (
            State::Warn,
            format!(
                "reachable, but GET /v1/models answered HTTP {status} (some gateways do not list models)"
            ),
        ),
        Err(e) => (State::Fail, format!("unreachable: {e}")),
    };
    r.add(S, "server", state, detail);
    let window = match rt.context_window {
        Some(w) => format!("{w} tokens  [{}]", rt.provenance.context_window),
        None => {
            match crate::context::known_window(&rt.model) {
                Some(w) => format!("{w} tokens  [the model's name]"),
                None => {
                    let ask = client.clone();
                    match smol::unblock(move || ask.server_window()).await {
                    Some(w) => format!("{w} tokens  [the server reports it]"),
                    None => "200000 tokens  [default: neither settings, the server nor the name say]".to_string(),
                }
                }
            }
        }
    };
    r.add(S, "context", State::Ok, window);
}

/// `--bench`: measures the server the endpoint checks found, unless they
/// found it unusable, and keeps the result for sessions.
async fn measure(r: &mut Report, rt: &Runtime) {
    const S: &str = "bench";
    if r.failures() > 0 {
        r.add(
            S,
            "measure",
            State::Fail,
            "not measured: the model endpoint above does not work",
        );
        return;
    }
    let client = match Client::new(&rt.client) {
        Ok(c) => c,
        Err(e) => {
            r.add(S, "measure", State::Fail, e.to_string());
            return;
        }
    };
    match super::bench::measure(&client, &rt.model).await {
        Ok(b) => {
            let kept = match super::bench::keep(rt, &b) {
                Ok(file) => format!(
                    "kept in {}; sessions with this server and model use it",
                    file.display()
                ),
                Err(e) => format!("not kept: {e}"),
            };
            r.add(S, "measure", State::Ok, kept);
            r.bench = Some((b, format!("{} at {}", rt.model, rt.client.base_url)));
        }
        Err(e) => r.add(S, "measure", State::Fail, e),
    }
}

fn settings(r: &mut Report, rt: &Runtime) {
    const S: &str = "settings";
    if rt.settings_files.is_empty() {
        r.add(S, "files", State::Info, "none (built-in defaults)");
    }
    for f in &rt.settings_files {
        r.add(S, "read", State::Ok, f.clone());
    }
    for b in &rt.settings_broken {
        // Its rules (deny rules among them) are not in force.
        r.add(S, "broken", State::Fail, b.clone());
    }
    for w in rt
        .warnings
        .iter()
        .filter(|w| !rt.settings_broken.contains(w))
    {
        r.add(S, "warning", State::Warn, w.clone());
    }
    r.add(S, "mode", State::Info, rt.mode.as_str());
    r.add(
        S,
        "rules",
        State::Info,
        format!(
            "{} permission rules (tern config permissions lists them)",
            rt.rules.len()
        ),
    );
}

/// Whether this directory's own settings are trusted, each item they
/// would add that was left out, and what they tried that only the user
/// may set.
fn trust(r: &mut Report, rt: &Runtime) {
    const S: &str = "trust";
    let t = &rt.trust;
    use crate::config::trust::Standing;
    let state = match t.standing() {
        Standing::Nothing => (
            State::Info,
            "the project's settings add nothing that runs or widens".to_string(),
        ),
        Standing::Trusted => (
            State::Ok,
            match t.by {
                Some(why) => format!("trusted for this run ({why})"),
                None => "trusted (recorded; pinned to what was trusted)".to_string(),
            },
        ),
        other => (
            State::Warn,
            format!(
                "{}: what the project adds below is not used (tern trust, after a look)",
                other.as_str()
            ),
        ),
    };
    r.add(
        S,
        "directory",
        state.0,
        format!("{}: {}", t.dir.display(), state.1),
    );
    for i in t.ignored() {
        let mark = if i.changed { " (new or changed)" } else { "" };
        r.add(
            S,
            "not used",
            State::Warn,
            format!("{}{mark}  [{}]", i.what, i.file),
        );
    }
    for u in &t.user_only {
        r.add(
            S,
            "user only",
            State::Warn,
            format!(
                "{} in {} ignored: only user settings, --settings and managed policy may set it",
                u.what, u.file
            ),
        );
    }
}

/// Where `/voice` records from and sends to; the key only as "set".
#[cfg(feature = "voice")]
fn voice(r: &mut Report, rt: &Runtime) {
    use crate::voice::{Backend, Source};
    const S: &str = "voice";
    let v = &rt.voice;
    match &v.source {
        Source::File(p) => r.add(S, "input", State::Info, format!("the file {}", p.display())),
        Source::Command(argv) => match crate::voice::recorder(argv.as_deref(), v.path.as_deref()) {
            Ok((program, args)) => r.add(
                S,
                "input",
                State::Ok,
                format!(
                    "microphone through {} {}",
                    program.display(),
                    args.join(" ")
                ),
            ),
            Err(e) => r.add(S, "input", State::Warn, e.to_string()),
        },
    }
    let Some(endpoint) = &v.endpoint else {
        r.add(
            S,
            "endpoint",
            State::Info,
            crate::voice::Error::NotConfigured.to_string(),
        );
        return;
    };
    let kind = match v.backend {
        Backend::Http => "OpenAI-compatible transcriptions (the utterance as one WAV)",
        Backend::WebSocket => "streaming WebSocket (linear16, 16 kHz, mono)",
    };
    r.add(S, "backend", State::Info, kind);
    r.add(S, "endpoint", State::Info, without_password(endpoint));
    let answers = crate::voice::reachable(endpoint, std::time::Duration::from_secs(2));
    match answers {
        Ok(()) => r.add(S, "server", State::Ok, "accepts connections"),
        Err(e) => r.add(S, "server", State::Warn, e),
    }
    r.add(
        S,
        "key",
        State::Info,
        match &v.key_source {
            Some(var) => format!("set (from {var})"),
            None => "none".to_string(),
        },
    );
    for (name, value) in [("model", &v.model), ("language", &v.language)] {
        if let Some(x) = value {
            r.add(S, name, State::Info, x.clone());
        }
    }
    r.add(
        S,
        "end of speech",
        State::Info,
        format!(
            "after {:.1}s of quiet (threshold {} dBFS)",
            v.silence.as_secs_f64(),
            v.floor_db
        ),
    );
    r.add(
        S,
        "audio kept",
        State::Info,
        match &v.save_dir {
            Some(d) => format!("every utterance is written to {}", d.display()),
            None => "never written to disk".to_string(),
        },
    );
}

fn sandbox(r: &mut Report, rt: &Runtime) {
    const S: &str = "sandbox";
    let status = crate::sandbox::probe();
    for line in status.render().lines().filter(|l| !l.trim().is_empty()) {
        let (name, detail) = line.split_once(':').unwrap_or(("host", line));
        r.add(S, name.trim(), State::Info, detail.trim().to_string());
    }
    match &rt.sandbox {
        None => r.add(S, "bash", State::Info, "off (settings: sandbox.enabled)"),
        Some(policy) => {
            let available = status.landlock.is_ok() && status.seccomp_kernel;
            let state = match (available, policy.fail_if_unavailable) {
                (true, _) => State::Ok,
                (false, true) => State::Fail,
                (false, false) => State::Warn,
            };
            let detail = if available {
                "on: Bash commands run under landlock and seccomp"
            } else if policy.fail_if_unavailable {
                "on, but this host cannot enforce it and failIfUnavailable is set: Bash commands will be refused"
            } else {
                "on, but this host cannot enforce it: commands run unsandboxed"
            };
            r.add(S, "bash", state, detail);
        }
    }
}

#[cfg(feature = "mcp")]
async fn mcp(r: &mut Report, ex: &'static smol::LocalExecutor<'static>, rt: &Runtime) {
    const S: &str = "mcp";
    let offer = super::mcp_start::offer(rt, true, true);
    let mut notes = super::build::Notes::default();
    let hub =
        super::mcp_start::start(ex, rt, super::mcp_start::Wait::All, None, offer, &mut notes).await;
    super::say(notes.take());
    let Some(hub) = hub else {
        r.add(S, "servers", State::Info, "none configured");
        return;
    };
    for s in hub.servers() {
        let (state, detail) = match s.status() {
            crate::mcp::Status::Connected => (
                State::Ok,
                format!(
                    "connected, {} tools, {} prompts; {}",
                    s.tool_count(),
                    s.prompt_count(),
                    super::mcp_start::offers_line(&s)
                ),
            ),
            crate::mcp::Status::NeedsAuth(why) => (
                State::Warn,
                format!("needs a sign-in: {why}; run: tern mcp login {}", s.name),
            ),
            crate::mcp::Status::Pending => {
                (State::Warn, "still starting after MCP_TIMEOUT".to_string())
            }
            crate::mcp::Status::Failed(reason) => (State::Warn, format!("failed: {reason}")),
            crate::mcp::Status::Disabled => (State::Info, "disabled".to_string()),
            crate::mcp::Status::NeedsApproval => (
                State::Info,
                format!("not started: {}", crate::mcp::APPROVAL_HINT),
            ),
        };
        r.add(S, &s.name, state, detail);
    }
    hub.shutdown().await;
}

fn plugins(r: &mut Report, rt: &Runtime) {
    for (state, name, detail) in plugin_findings(rt) {
        r.add("plugins", &name, state, detail);
    }
}

/// `tern plugin list`'s lines: the same findings as the doctor's.
pub(super) fn plugin_lines(rt: &Runtime) -> Vec<String> {
    plugin_findings(rt)
        .into_iter()
        .map(|(state, name, detail)| match state {
            State::Ok | State::Info => format!("{name}: {detail}"),
            _ => format!("{name}: {} {detail}", state.word()),
        })
        .collect()
}

/// What each plugin adds and on whose standing, what of it is not used,
/// and each folder refused with why.
fn plugin_findings(rt: &Runtime) -> Vec<(State, String, String)> {
    let mut out = Vec::new();
    for p in &rt.plugins {
        let standing = if p.project {
            "held to the project's trust"
        } else {
            "yours"
        };
        let version = p
            .version
            .as_deref()
            .map_or(String::new(), |v| format!(" {v}"));
        out.push((
            State::Ok,
            p.name.clone(),
            format!(
                "loaded{version} from {} ({}; {standing})",
                p.root.display(),
                p.from
            ),
        ));
        let commands: Vec<String> = crate::frontend::commands::load(&p.commands)
            .into_iter()
            .map(|c| format!("/{}", c.name))
            .collect();
        let (defs, _) = crate::agent::subagent::defs::load(&p.agents);
        let agents: Vec<String> = defs
            .into_iter()
            .filter(|d| d.source != "built-in")
            .map(|d| d.name)
            .collect();
        let prefix = format!("{}:", p.name);
        let skills: Vec<String> = rt
            .system
            .skills
            .iter()
            .filter(|s| s.source == "plugin" && s.name.starts_with(&prefix))
            .map(|s| s.name.clone())
            .collect();
        let (hooks, servers) = p.counts();
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        out.push((
            State::Info,
            p.name.clone(),
            format!(
                "commands {}; agents {}; skills {}; hooks {hooks}; MCP servers {servers}",
                list(&commands),
                list(&agents),
                list(&skills)
            ),
        ));
        for i in rt.trust.ignored().filter(|i| i.file == p.layer_file) {
            out.push((
                State::Warn,
                p.name.clone(),
                format!(
                    "not used: {} (the project is not trusted for it: tern trust, after a look, or --trust-project)",
                    i.what
                ),
            ));
        }
        for note in &p.notes {
            out.push((State::Warn, p.name.clone(), note.clone()));
        }
    }
    for f in &rt.plugins_refused {
        out.push((
            State::Warn,
            f.path.clone(),
            format!("refused (from {}): {}", f.from, f.why),
        ));
    }
    out
}

fn hooks(r: &mut Report, rt: &Runtime) {
    const S: &str = "hooks";
    if rt.hooks.is_empty() {
        r.add(S, "hooks", State::Info, "none");
    }
    for h in &rt.hooks {
        let matcher = if h.matcher.is_empty() {
            "*"
        } else {
            h.matcher.as_str()
        };
        r.add(
            S,
            &h.event,
            State::Info,
            format!("{matcher} → {}  [{}]", h.command, h.origin.file),
        );
    }
}

fn transcripts(r: &mut Report, rt: &Runtime) {
    const S: &str = "transcripts";
    let cwd = &rt.cwd;
    let Some(root) = &rt.transcripts.preferred else {
        r.add(
            S,
            "folder",
            State::Warn,
            "no HOME, XDG_DATA_HOME or TERN_HOME: transcripts go to the temp folder",
        );
        return;
    };
    let dir = root.join(crate::session::transcript::project_dir_name(cwd));
    let (state, detail) = match writable(&dir) {
        Ok(()) => (State::Ok, format!("{} (writable)", dir.display())),
        Err(e) => (
            State::Warn,
            format!(
                "{} is not writable ({e}): sessions fall back to the temp folder",
                dir.display()
            ),
        ),
    };
    r.add(S, "folder", state, detail);
}

/// Creates the folder if needed and a file in it, then removes the file.
fn writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let probe = dir.join(format!(".tern-doctor-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

fn network(r: &mut Report, rt: &Runtime) {
    const S: &str = "network";
    let set = |k: &str| rt.env.non_empty(k);
    let ca = match (set("SSL_CERT_FILE"), &rt.client.extra_ca_pem) {
        (Some(path), Some(_)) => format!("built-in Mozilla roots + {path} (SSL_CERT_FILE)"),
        (Some(path), None) => {
            format!("built-in Mozilla roots only: {path} (SSL_CERT_FILE) could not be read")
        }
        (None, _) => "built-in Mozilla roots".to_string(),
    };
    r.add(S, "CA bundle", State::Info, ca);
    let proxies: Vec<String> = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ]
    .iter()
    .filter_map(|k| set(k).map(|v| format!("{k}={}", without_password(&v))))
    .collect();
    let detail = if proxies.is_empty() {
        "none".to_string()
    } else {
        proxies.join(", ")
    };
    r.add(S, "proxy", State::Info, detail);
}

/// `http://user:secret@host:3128` → `http://user:***@host:3128`.
fn without_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    let user = userinfo.split(':').next().unwrap_or_default();
    let prefix = if scheme.is_empty() {
        String::new()
    } else {
        format!("{scheme}://")
    };
    format!("{prefix}{user}:***@{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_passwords_are_masked() {
        assert_eq!(without_password("http://u:pw@h:1"), "http://u:***@h:1");
        assert_eq!(without_password("http://h:1"), "http://h:1");
    }

    #[test]
    fn only_failures_block() {
        let mut r = Report::default();
        r.add("a", "x", State::Warn, "w");
        r.add("a", "y", State::Info, "i");
        assert_eq!(r.failures(), 0);
        assert!(r.text().contains("ready"));
        r.add("b", "z", State::Fail, "f");
        assert_eq!(r.failures(), 1);
        assert!(r.json().contains(r#""ok":false"#));
    }
}
