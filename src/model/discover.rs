//! Finding a model server already running on this machine, for when
//! nothing says where to go: no provider, base URL or credentials in
//! flags, settings or the environment. An air-gapped box usually has one
//! (llama.cpp, Ollama, LM Studio, vLLM on their usual ports); asking them
//! costs a few loopback round trips, in parallel, each bounded by a short
//! timeout.
//!
//! Each kind is recognised by an endpoint only it serves in that shape,
//! and must list a model; a server that answers anything else (an unrelated
//! web server on :8080, garbage) is skipped with a note, never trusted.
//! Every discovered server is then spoken to through its OpenAI-compatible
//! chat completions endpoint, which all four serve.
//!
//! The list probed comes from `TERN_LOCAL_SERVERS` when set, so tests (and
//! users with servers elsewhere) do not depend on fixed ports.

use std::time::Duration;

use super::ApiError;
use super::Provider;
use super::client::{Auth, Client, ClientConfig, GetError, props_window};
use crate::json::Value;

/// The kinds of servers tern knows how to recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    LlamaCpp,
    Ollama,
    LmStudio,
    Vllm,
    /// Any OpenAI-compatible server (`/v1/models`), for entries given
    /// without a kind.
    OpenAiCompatible,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::LlamaCpp => "llama.cpp",
            Kind::Ollama => "Ollama",
            Kind::LmStudio => "LM Studio",
            Kind::Vllm => "vLLM",
            Kind::OpenAiCompatible => "an OpenAI-compatible server",
        }
    }

    fn parse(word: &str) -> Option<Kind> {
        Some(match word.to_ascii_lowercase().as_str() {
            "llamacpp" | "llama.cpp" | "llama-cpp" | "llama" => Kind::LlamaCpp,
            "ollama" => Kind::Ollama,
            "lmstudio" | "lm-studio" | "lms" => Kind::LmStudio,
            "vllm" => Kind::Vllm,
            "openai" | "generic" => Kind::OpenAiCompatible,
            _ => return None,
        })
    }
}

/// One place to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub kind: Kind,
    pub url: String,
}

/// A server that answered as its kind does and listed a model.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub kind: Kind,
    pub url: String,
    /// What it lists, in its order.
    pub models: Vec<String>,
    /// The context window it reports for the running model, if it does.
    pub context_window: Option<u64>,
    /// Worth telling the user (e.g. where a window was assumed).
    pub note: Option<String>,
}

/// What asking one candidate gave.
#[derive(Debug)]
pub struct Probe {
    pub candidate: Candidate,
    pub outcome: Result<Found, ProbeError>,
}

/// Why a candidate is not used.
#[derive(Debug)]
pub enum ProbeError {
    /// No client could be made (a bad CA file, say).
    Client(ApiError),
    /// It did not answer, or not with JSON.
    Get(GetError),
    /// It answered, but lists no model.
    NoModels(Kind),
    /// It answered JSON that is not this kind of server's; `start` is
    /// its first 60 characters.
    NotItsAnswer { path: String, start: String },
    /// The probe's thread died.
    Panicked,
}

impl ProbeError {
    /// Nothing listens there: the normal case, not worth a word.
    pub fn is_refused(&self) -> bool {
        matches!(self, ProbeError::Get(g) if g.is_refused())
    }
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::Client(e) => write!(f, "{e}"),
            ProbeError::Get(e) => write!(f, "{e}"),
            ProbeError::NoModels(kind) => write!(f, "{} answers but lists no model", kind.name()),
            ProbeError::NotItsAnswer { path, start } => write!(
                f,
                "{path} answered JSON that is not this kind of server's ({start}); skipped"
            ),
            ProbeError::Panicked => f.write_str("the probe failed unexpectedly"),
        }
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProbeError::Client(e) => Some(e),
            ProbeError::Get(e) => Some(e),
            _ => None,
        }
    }
}

/// The variable that replaces the default list (`none` turns discovery off).
pub const LIST_VAR: &str = "TERN_LOCAL_SERVERS";
/// Milliseconds each candidate gets, in all.
pub const TIMEOUT_VAR: &str = "TERN_DISCOVER_TIMEOUT_MS";
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(800);

/// The usual loopback servers, in the order they are preferred.
pub fn default_candidates() -> Vec<Candidate> {
    [
        (Kind::LlamaCpp, "http://127.0.0.1:8080"),
        (Kind::Ollama, "http://127.0.0.1:11434"),
        (Kind::LmStudio, "http://127.0.0.1:1234"),
        (Kind::Vllm, "http://127.0.0.1:8000"),
    ]
    .into_iter()
    .map(|(kind, url)| Candidate {
        kind,
        url: url.to_string(),
    })
    .collect()
}

/// Parses `TERN_LOCAL_SERVERS`: entries separated by commas or spaces, each
/// `kind=URL` or a bare URL (probed as a generic OpenAI-compatible server);
/// `none` (or `off`) is the empty list.
pub fn parse_candidates(text: &str) -> Result<Vec<Candidate>, String> {
    let mut out = Vec::new();
    for entry in text.split([',', ' ', '\n', '\t']).filter(|e| !e.is_empty()) {
        if matches!(entry, "none" | "off") {
            continue;
        }
        let (kind, url) = match entry.split_once('=') {
            Some((k, u)) => (
                Kind::parse(k).ok_or_else(|| {
                    format!(
                        "{LIST_VAR}: unknown server kind \"{k}\" (expected llamacpp, ollama, lmstudio, vllm or openai)"
                    )
                })?,
                u,
            ),
            None => (Kind::OpenAiCompatible, entry),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "{LIST_VAR}: \"{url}\" must start with http:// or https://"
            ));
        }
        out.push(Candidate {
            kind,
            url: url.trim_end_matches('/').to_string(),
        });
    }
    Ok(out)
}

/// Asks every candidate at once; the results come back in the
/// candidates' order. Blocking: at most about `timeout` in all.
pub fn probe_all(
    candidates: &[Candidate],
    timeout: Duration,
    extra_ca_pem: Option<&[u8]>,
) -> Vec<Probe> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = candidates
            .iter()
            .map(|c| scope.spawn(move || probe(c, timeout, extra_ca_pem)))
            .collect();
        handles
            .into_iter()
            .zip(candidates)
            .map(|(h, c)| Probe {
                candidate: c.clone(),
                outcome: h.join().unwrap_or(Err(ProbeError::Panicked)),
            })
            .collect()
    })
}

/// The first candidate, in list order, that answered as its kind does.
pub fn pick(probes: &[Probe]) -> Option<&Found> {
    probes.iter().find_map(|p| p.outcome.as_ref().ok())
}

/// The model to use from `found`: the one asked for when it is listed (or
/// when the user named one explicitly: their word wins, with a note), else
/// the first it lists.
pub fn choose_model(found: &Found, wanted: Option<&str>) -> (String, Option<String>) {
    match wanted {
        Some(w) if found.models.iter().any(|m| m == w) => (w.to_string(), None),
        Some(w) => (
            w.to_string(),
            Some(format!(
                "{} at {} does not list the model \"{w}\" (it lists: {}); asking for it anyway",
                found.kind.name(),
                found.url,
                found.models.join(", ")
            )),
        ),
        None => (found.models[0].clone(), None),
    }
}

/// The client configuration for a discovered server.
pub fn client_config(found: &Found, extra_ca_pem: Option<Vec<u8>>, idle: Duration) -> ClientConfig {
    ClientConfig {
        provider: Provider::OpenAi,
        base_url: found.url.clone(),
        auth: Auth::None,
        extra_ca_pem,
        idle_timeout: idle,
    }
}

/// The message for when nothing answered: what was tried, and the ways out.
pub fn nothing_found(probes: &[Probe]) -> String {
    let mut text =
        String::from("no model server configured, and none found on this machine. Tried:\n");
    for p in probes {
        let why = match &p.outcome {
            Ok(_) => "answered".to_string(),
            Err(e) => e.to_string(),
        };
        text.push_str(&format!(
            "  {} at {}: {why}\n",
            p.candidate.kind.name(),
            p.candidate.url
        ));
    }
    if probes.is_empty() {
        text.push_str(&format!("  nothing ({LIST_VAR} lists no servers)\n"));
    }
    text.push_str(FIXES);
    text
}

/// The three ways to give tern a model server.
pub const FIXES: &str = "Fix it one of three ways:\n\
         \x20 1. the Anthropic API: export ANTHROPIC_API_KEY=… (or ANTHROPIC_AUTH_TOKEN)\n\
         \x20 2. a server elsewhere: export ANTHROPIC_BASE_URL=http://host:port (Messages API),\n\
         \x20    or OPENAI_BASE_URL=http://host:port with --provider openai (chat completions)\n\
         \x20 3. a local server: start one (llama-server -m MODEL.gguf --port 8080, ollama serve,\n\
         \x20    LM Studio, vllm serve), or list yours in TERN_LOCAL_SERVERS=kind=URL,…";

fn probe(
    c: &Candidate,
    timeout: Duration,
    extra_ca_pem: Option<&[u8]>,
) -> Result<Found, ProbeError> {
    let client = Client::new(&ClientConfig {
        provider: Provider::OpenAi,
        base_url: c.url.clone(),
        auth: Auth::None,
        extra_ca_pem: extra_ca_pem.map(<[u8]>::to_vec),
        idle_timeout: timeout,
    })
    .map_err(ProbeError::Client)?;
    let deadline = std::time::Instant::now() + timeout;
    // Every request shares the candidate's one budget.
    let get = |path: &str| {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(ProbeError::Get(GetError::Timeout(timeout)));
        }
        client.get_json(path, left).map_err(ProbeError::Get)
    };
    let found = |models: Vec<String>, context_window: Option<u64>, note: Option<String>| {
        if models.is_empty() {
            return Err(ProbeError::NoModels(c.kind));
        }
        Ok(Found {
            kind: c.kind,
            url: c.url.clone(),
            models,
            context_window,
            note,
        })
    };
    match c.kind {
        Kind::LlamaCpp => {
            let props = get("/props")?;
            let is_llama = props
                .get("default_generation_settings")
                .is_some_and(|d| d.as_object().is_some())
                || props.str_field("model_path").is_some();
            if !is_llama {
                return Err(not_its_answer("/props", &props));
            }
            // llama-server serves one model; /v1/models names it, and
            // the file name stands in where that fails.
            let models = get("/v1/models")
                .ok()
                .map(|v| openai_models(&v))
                .filter(|m| !m.is_empty())
                .or_else(|| {
                    let path = props.str_field("model_path")?;
                    let stem = std::path::Path::new(path).file_stem()?.to_str()?;
                    Some(vec![stem.to_string()])
                })
                .unwrap_or_default();
            found(models, props_window(&props), None)
        }
        Kind::Ollama => {
            let tags = get("/api/tags")?;
            let Some(list) = tags.get("models").and_then(Value::as_array) else {
                return Err(not_its_answer("/api/tags", &tags));
            };
            let models: Vec<String> = list
                .iter()
                .filter_map(|m| m.str_field("name").or_else(|| m.str_field("model")))
                .map(str::to_string)
                .collect();
            // Ollama cuts prompts to its own context (4096 tokens unless
            // configured) without saying so; a loaded model reports its
            // real one in /api/ps.
            let running = get("/api/ps").ok().and_then(|ps| {
                ps.get("models")?.as_array()?.iter().find_map(|m| {
                    let n = m.get("context_length")?.as_i64()?;
                    (n > 0).then_some(n as u64)
                })
            });
            let note = running.is_none().then(|| {
                "Ollama does not say its context length until a model is loaded; assuming its default of 4096 tokens (set contextWindow to change)".to_string()
            });
            found(models, Some(running.unwrap_or(4096)), note)
        }
        Kind::LmStudio => {
            // LM Studio's own listing says which models are loaded and
            // with what context; /v1/models is the fallback.
            if let Ok(v) = get("/api/v0/models")
                && let Some(list) = v.get("data").and_then(Value::as_array)
            {
                let llms: Vec<&Value> = list
                    .iter()
                    .filter(|m| m.str_field("type").is_none_or(|t| t == "llm" || t == "vlm"))
                    .collect();
                let mut ordered: Vec<&Value> = llms
                    .iter()
                    .copied()
                    .filter(|m| m.str_field("state") == Some("loaded"))
                    .collect();
                ordered.extend(
                    llms.iter()
                        .copied()
                        .filter(|m| m.str_field("state") != Some("loaded")),
                );
                let window = ordered.first().and_then(|m| {
                    m.get("loaded_context_length")
                        .or_else(|| m.get("max_context_length"))
                        .and_then(Value::as_i64)
                        .filter(|n| *n > 0)
                        .map(|n| n as u64)
                });
                let models = ordered
                    .iter()
                    .filter_map(|m| m.str_field("id").map(str::to_string))
                    .collect();
                return found(models, window, None);
            }
            let v = get("/v1/models")?;
            if v.get("data").and_then(Value::as_array).is_none() {
                return Err(not_its_answer("/v1/models", &v));
            }
            found(openai_models(&v), None, None)
        }
        Kind::Vllm | Kind::OpenAiCompatible => {
            let v = get("/v1/models")?;
            let Some(first) = v.get("data").and_then(Value::as_array) else {
                return Err(not_its_answer("/v1/models", &v));
            };
            let window = first.first().and_then(|m| {
                m.get("max_model_len")
                    .and_then(Value::as_i64)
                    .filter(|n| *n > 0)
                    .map(|n| n as u64)
            });
            found(openai_models(&v), window, None)
        }
    }
}

/// The ids in an OpenAI-style model list.
fn openai_models(v: &Value) -> Vec<String> {
    v.get("data")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|m| m.str_field("id"))
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn not_its_answer(path: &str, v: &Value) -> ProbeError {
    ProbeError::NotItsAnswer {
        path: path.to_string(),
        start: v.to_json().chars().take(60).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_variable_is_parsed_strictly() {
        let list = parse_candidates("ollama=http://127.0.0.1:9/, http://h:1").unwrap();
        assert_eq!(
            list,
            vec![
                Candidate {
                    kind: Kind::Ollama,
                    url: "http://127.0.0.1:9".into()
                },
                Candidate {
                    kind: Kind::OpenAiCompatible,
                    url: "http://h:1".into()
                }
            ]
        );
        assert!(parse_candidates("none").unwrap().is_empty());
        assert!(parse_candidates("gpt=http://x").is_err());
        assert!(parse_candidates("llamacpp=localhost:8080").is_err());
    }

    #[test]
    fn an_explicit_model_wins_with_a_note() {
        let found = Found {
            kind: Kind::Vllm,
            url: "http://x".into(),
            models: vec!["a".into(), "b".into()],
            context_window: None,
            note: None,
        };
        assert_eq!(choose_model(&found, None), ("a".to_string(), None));
        assert_eq!(choose_model(&found, Some("b")), ("b".to_string(), None));
        let (m, note) = choose_model(&found, Some("c"));
        assert_eq!(m, "c");
        assert!(note.unwrap().contains("does not list"));
    }
}
