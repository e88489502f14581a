//! Command-line flags: parsed and checked here, with no I/O, into [`Args`].
//! Resolving them against the environment happens in `config`.

use std::ffi::OsString;
use std::fmt;

use crate::model::thinking;
use crate::policy::Mode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

#[derive(Debug, Default, Clone)]
pub struct Args {
    pub prompt: Option<String>,
    pub print: bool,
    pub output_format: Option<OutputFormat>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// `--thinking` or `--max-thinking-tokens`, whichever came last.
    pub thinking: Option<crate::model::thinking::Mode>,
    pub thinking_display: Option<crate::model::thinking::Display>,
    pub effort: Option<crate::model::thinking::Effort>,
    pub permission_mode: Option<Mode>,
    pub allowed_tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub verbose: bool,
    /// `--no-tui`: line mode even on a terminal that could draw.
    pub no_tui: bool,
    pub no_session_persistence: bool,
    /// `--settings`: a file or inline JSON.
    pub settings: Option<String>,
    /// `--setting-sources user,project,local`.
    pub setting_sources: Option<Vec<String>>,
    /// `--add-dir`: more working directories.
    pub add_dirs: Vec<String>,
    /// `-r/--resume <id>`: go on with a recorded session.
    pub resume: Option<String>,
    /// `-c/--continue`: go on with the latest session in this directory.
    pub continue_latest: bool,
    /// `--fork-session`: resume into a new session id.
    pub fork_session: bool,
    /// `--session-id <uuid>`: the id for a new (or forked) session.
    pub session_id: Option<String>,
    /// `--fallback-model a,b`: tried in order when the model is unavailable.
    pub fallback_models: Vec<String>,
    /// `--max-budget-usd X`: stop once the session has cost this much.
    pub max_budget_usd: Option<f64>,
    /// `--max-output-tokens-total`: what the run's models may write.
    pub max_output_tokens_total: Option<u64>,
    /// `--max-duration`: how long the run may take.
    pub max_duration: Option<std::time::Duration>,
    /// `--provider anthropic|openai`: the wire format.
    pub provider: Option<String>,
    /// `--tools A,B` (`""` for none): the built-in tools offered.
    pub tools: Option<Vec<String>>,
    /// `--input-format stream-json`: NDJSON messages and control requests on stdin.
    pub stream_input: bool,
    /// `--include-partial-messages`: raw stream events as `stream_event` lines.
    pub include_partial: bool,
    /// `--permission-prompt-tool stdio`: permission questions go to the controller.
    pub permission_prompt_tool: Option<String>,
    /// Flags accepted for compatibility but not acted on: the flag (with
    /// its value) and why (named in a notice and in `system/init`).
    pub ignored: Vec<(String, &'static str)>,
    /// `--json-schema`: the answer must match this schema (StructuredOutput).
    pub json_schema: Option<crate::json::Value>,
    /// `--coordinator`: the top level only delegates to workers.
    pub coordinator: bool,
    /// `--plugin-dir` folders (repeatable): plugins for this run.
    pub plugin_dirs: Vec<String>,
    /// `--mcp-config` files or inline JSON (repeatable).
    pub mcp_configs: Vec<String>,
    /// `--strict-mcp-config`: only servers from `--mcp-config`.
    pub strict_mcp: bool,
    /// `--trust-project`: this run trusts the project's own settings
    /// whole (hooks, allow rules, mode, directories, MCP servers).
    pub trust_project: bool,
}

/// Claude Code flags that tern accepts without acting on them (each named
/// in a notice and in `system/init`), so programs that pass them still
/// run: the name, whether it takes a value (`None`: an optional one, as
/// `--debug[=filter]`), and why tern does not act on it.
const IGNORED_FLAGS: &[(&str, Option<bool>, &str)] = &[
    (
        "include-hook-events",
        Some(false),
        "hook events are not streamed",
    ),
    ("betas", Some(true), "tern sends no beta headers"),
    ("task-budget", Some(true), "tern sends no task budget"),
    (
        "resume-session-at",
        Some(true),
        "tern resumes at the end of a session only",
    ),
    (
        "resume-drops-turn",
        Some(true),
        "tern resumes at the end of a session only",
    ),
    (
        "session-mirror",
        Some(false),
        "tern writes its own transcript; no mirror frames",
    ),
    (
        "debug-to-stderr",
        Some(false),
        "tern has no debug log; --verbose reports on stderr",
    ),
    (
        "debug",
        None,
        "tern has no debug log; --verbose reports on stderr",
    ),
    (
        "debug-file",
        Some(true),
        "tern has no debug log; --verbose reports on stderr",
    ),
    (
        "permission-prompts",
        Some(true),
        "questions go to can_use_tool or are refused",
    ),
    ("channels", Some(true), "tern has no channels"),
    (
        "project-config-root",
        Some(true),
        "settings are read from the working directory",
    ),
    ("agent", Some(true), "the main thread runs tern's own agent"),
];

#[derive(Debug)]
pub enum Command {
    Run(Args),
    /// `tern acp`: an Agent Client Protocol agent on stdin and stdout.
    Acp(Args),
    Version,
    Help,
    /// `tern sandbox status`: what isolation this host offers.
    SandboxStatus,
    /// `tern config permissions`: the effective rules and where they came from.
    ConfigPermissions(Args),
    /// `tern sessions`: the recorded sessions of this directory.
    Sessions,
    /// `tern mcp list`: each configured MCP server and whether it connects.
    McpList(Args),
    /// `tern plugin list`: each plugin, what it adds, and what was refused.
    PluginList(Args),
    /// `tern mcp login NAME`, `tern mcp logout NAME`.
    McpLogin(Args, String),
    McpLogout(Args, String),
    /// `tern doctor`: what a session would use and whether it works.
    Doctor {
        args: Args,
        /// `--bench`: measure the server too.
        bench: bool,
    },
    /// `tern trust [DIR]`, `tern trust --revoke [DIR]`: a person's answer
    /// about a directory's settings, for scripted use.
    Trust {
        args: Args,
        dir: Option<String>,
        revoke: bool,
    },
    /// `tern rewind <session> [--to <uuid>] [--dry-run]`.
    Rewind {
        session: String,
        to: Option<String>,
        dry_run: bool,
    },
}

/// A usage error: exit status 2, message names the culprit.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub const HELP: &str = "\
tern — a small coding agent

Usage: tern [OPTIONS] [PROMPT]
       tern sandbox status
       tern config permissions
       tern sessions
       tern mcp list
       tern plugin list
       tern mcp login NAME | tern mcp logout NAME
       tern doctor [--bench] [--output-format json]
       tern acp          (an Agent Client Protocol agent on stdin/stdout, for editors)
       tern trust [DIR] | tern trust --revoke [DIR]
       tern rewind <SESSION> [--to <MESSAGE-UUID>] [--dry-run]

With -p, tern answers PROMPT (or standard input) and exits; scripts and CI
read the result from stdout. Without -p the answer streams to the terminal.

Options:
  -p, --print                     Answer and exit (headless)
      --output-format <FORMAT>    text (default), json, or stream-json
      --model <MODEL>             Model to use (default: $ANTHROPIC_MODEL or claude-sonnet-4-5)
      --max-turns <N>             Stop after N model turns
      --max-output-tokens-total <N>
                                  Stop once the run's models have written N tokens
      --max-duration <TIME>       Stop the run after TIME (90, 90s, 15m, 2h)
      --max-thinking-tokens <N>   Let the model think up to N tokens first (0: not at all)
      --thinking <MODE>           adaptive (the model decides), enabled, or disabled
      --thinking-display <HOW>    summarized or omitted: the thinking text the API returns
      --effort <LEVEL>            low, medium, high, xhigh or max (models that take it)
      --permission-mode <MODE>    default, acceptEdits, plan, dontAsk, bypassPermissions
      --dangerously-skip-permissions
                                  Same as --permission-mode bypassPermissions
      --allowedTools <TOOLS...>   Tools allowed without asking, e.g. \"Read Edit Bash(git log:*)\"
      --disallowedTools <TOOLS>   Tools always refused
      --system-prompt <TEXT>      Replace the system prompt
      --append-system-prompt <TEXT>
                                  Add to the system prompt
      --verbose                   Report retries and tool activity on stderr
      --no-tui                    Line mode on a terminal (no inline interface)
      --no-session-persistence    Keep no transcript of this session
  -c, --continue                  Go on with the latest session in this directory
  -r, --resume <ID>               Go on with session ID (see 'tern sessions')
      --fork-session              With -c/-r: continue under a new session id
      --session-id <UUID>         Use this id for the new session
      --fallback-model <A,B>      Models to switch to when the model is overloaded or unknown
      --max-budget-usd <USD>      Stop once the session's estimated cost reaches this
      --provider <NAME>           anthropic (Messages API, default) or openai (chat completions)
      --tools <LIST>              Only these built-in tools, e.g. \"Read,Grep\" (\"\" for none)
      --mcp-config <FILE|JSON>    MCP servers to start (repeatable; feature mcp)
      --strict-mcp-config         Only the servers from --mcp-config
      --plugin-dir <DIR>          Load the plugin in DIR: its commands, agents, skills,
                                  hooks and MCP servers (repeatable; see 'tern plugin list')
      --coordinator               Only delegate: Agent, SendMessage, TaskStop; workers do the work
      --input-format <FORMAT>     text (default) or stream-json (the Agent SDK's protocol on stdin)
      --include-partial-messages  With stream-json: raw stream events as stream_event lines
      --permission-prompt-tool stdio
                                  Ask permission questions over the SDK control channel
      --system-prompt-file <FILE>, --append-system-prompt-file <FILE>
      --settings <FILE|JSON>      Extra settings (above project and user files)
      --setting-sources <LIST>    Which settings files to read: user,project,local
      --add-dir <DIR>             Another working directory (repeatable)
      --trust-project             Use this directory's own settings (hooks, allow rules,
                                  mode, MCP servers) for this run, as 'tern trust' would
  -v, --version                   Print the version
  -h, --help                      Print this help

Environment:
  ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN   Credentials (x-api-key / bearer)
  ANTHROPIC_BASE_URL                        API endpoint (a local server works)
  ANTHROPIC_MODEL                           Default model
  TERN_LOCAL_SERVERS                        With nothing configured, the local servers to look
                                            for (kind=URL,…; default llama.cpp :8080, Ollama
                                            :11434, LM Studio :1234, vLLM :8000; none: off)
  TERN_HOME                                 Where transcripts go (default ~/.local/share/tern)
  TERN_TRUST_PROJECT=1                      Same as --trust-project
  SSL_CERT_FILE                             Extra CA certificates (PEM)
  HTTPS_PROXY, NO_PROXY                     Proxy settings

Exit status: 0 success, 1 error result, 2 usage error, 130/143 interrupted.
";

pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, UsageError> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_iter(args);
    let mut a = Args::default();
    let mut words: Vec<String> = Vec::new();
    // Only meaningful after `tern rewind`.
    let mut to: Option<String> = None;
    let mut dry_run = false;
    let mut revoke = false;
    let mut bench = false;
    while let Some(arg) = parser.next().map_err(usage)? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Short('v') | Long("version") => return Ok(Command::Version),
            Short('p') | Long("print") => a.print = true,
            Long("verbose") => a.verbose = true,
            Long("no-tui") => a.no_tui = true,
            Long("no-session-persistence") => a.no_session_persistence = true,
            Long("settings") => a.settings = Some(text(&mut parser, "--settings")?),
            Long("setting-sources") => {
                let v = text(&mut parser, "--setting-sources")?;
                let list: Vec<String> = v
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if let Some(bad) = list
                    .iter()
                    .find(|s| !matches!(s.as_str(), "user" | "project" | "local"))
                {
                    return Err(UsageError(format!(
                        "invalid --setting-sources entry '{bad}' (expected user, project, local)"
                    )));
                }
                a.setting_sources = Some(list);
            }
            Long("add-dir") => a.add_dirs.extend(texts(&mut parser, "--add-dir")?),
            Short('r') | Long("resume") => a.resume = Some(text(&mut parser, "--resume")?),
            Short('c') | Long("continue") => a.continue_latest = true,
            Long("fork-session") => a.fork_session = true,
            Long("session-id") => {
                let v = text(&mut parser, "--session-id")?;
                if !crate::session::is_uuid(&v) {
                    return Err(UsageError(format!(
                        "invalid --session-id '{v}' (expected a UUID like 123e4567-e89b-42d3-a456-426614174000)"
                    )));
                }
                a.session_id = Some(v.to_ascii_lowercase());
            }
            Long("fallback-model") => {
                let v = text(&mut parser, "--fallback-model")?;
                a.fallback_models.extend(
                    v.split(',')
                        .map(str::trim)
                        .filter(|m| !m.is_empty())
                        .map(str::to_string),
                );
            }
            Long("max-budget-usd") => {
                let v = text(&mut parser, "--max-budget-usd")?;
                match v.parse::<f64>() {
                    Ok(x) if x > 0.0 && x.is_finite() => a.max_budget_usd = Some(x),
                    _ => {
                        return Err(UsageError(format!(
                            "invalid --max-budget-usd '{v}' (expected a positive amount in dollars)"
                        )));
                    }
                }
            }
            Long("max-output-tokens-total") => {
                let v = text(&mut parser, "--max-output-tokens-total")?;
                match v.parse::<u64>() {
                    Ok(n) if n > 0 => a.max_output_tokens_total = Some(n),
                    _ => {
                        return Err(UsageError(format!(
                            "invalid --max-output-tokens-total '{v}' (expected a positive whole number of tokens)"
                        )));
                    }
                }
            }
            Long("max-duration") => {
                let v = text(&mut parser, "--max-duration")?;
                a.max_duration = Some(duration(&v).ok_or_else(|| {
                    UsageError(format!(
                        "invalid --max-duration '{v}' (expected seconds, or a number with s, m or h: 90, 90s, 15m, 2h)"
                    ))
                })?);
            }
            Long("provider") => {
                let v = text(&mut parser, "--provider")?;
                if !matches!(v.as_str(), "anthropic" | "openai") {
                    return Err(UsageError(format!(
                        "invalid --provider '{v}' (expected anthropic or openai)"
                    )));
                }
                a.provider = Some(v);
            }
            Long("tools") => {
                let v = text(&mut parser, "--tools")?;
                a.tools = match v.trim() {
                    "default" => None,
                    _ => Some(crate::policy::split_tool_list(&v)),
                };
            }
            Long("to") => to = Some(text(&mut parser, "--to")?),
            Long("dry-run") => dry_run = true,
            Long("output-format") => {
                let v = text(&mut parser, "--output-format")?;
                a.output_format = Some(match v.as_str() {
                    "text" => OutputFormat::Text,
                    "json" => OutputFormat::Json,
                    "stream-json" => OutputFormat::StreamJson,
                    other => {
                        return Err(UsageError(format!(
                            "invalid --output-format '{other}' (expected text, json or stream-json)"
                        )));
                    }
                });
            }
            Long("input-format") => {
                let v = text(&mut parser, "--input-format")?;
                a.stream_input = match v.as_str() {
                    "text" => false,
                    "stream-json" => true,
                    other => {
                        return Err(UsageError(format!(
                            "invalid --input-format '{other}' (expected text or stream-json)"
                        )));
                    }
                };
            }
            Long("include-partial-messages") => a.include_partial = true,
            Long("coordinator") => a.coordinator = true,
            Long("mcp-config") => a.mcp_configs.extend(texts(&mut parser, "--mcp-config")?),
            Long("plugin-dir") => a.plugin_dirs.push(text(&mut parser, "--plugin-dir")?),
            Long("strict-mcp-config") => a.strict_mcp = true,
            Long("trust-project") => a.trust_project = true,
            Long("revoke") => revoke = true,
            Long("bench") => bench = true,
            Long("permission-prompt-tool") => {
                let v = text(&mut parser, "--permission-prompt-tool")?;
                if v != "stdio" {
                    return Err(UsageError(format!(
                        "--permission-prompt-tool '{v}' is not supported (only stdio, the SDK's control channel)"
                    )));
                }
                a.permission_prompt_tool = Some(v);
            }
            Long("system-prompt-file") => {
                let path = text(&mut parser, "--system-prompt-file")?;
                a.system_prompt = Some(read_flag_file("--system-prompt-file", &path)?);
            }
            Long("append-system-prompt-file") => {
                let path = text(&mut parser, "--append-system-prompt-file")?;
                a.append_system_prompt =
                    Some(read_flag_file("--append-system-prompt-file", &path)?);
            }
            // Passed by the TypeScript SDK with bypassPermissions: a
            // second confirmation that tern does not need.
            Long("allow-dangerously-skip-permissions") => {}
            // The SDK's initialize arrives before its first prompt, and
            // tern reads standard input in order, so it is always awaited.
            Long("await-initialize") | Long("managed-settings-in-initialize") => {}
            // Which fields come in initialize; tern reads every field there.
            Long("initialize-fields") => {
                text(&mut parser, "--initialize-fields")?;
            }
            Long("json-schema") => {
                let v = text(&mut parser, "--json-schema")?;
                match crate::json::parse(&v) {
                    Ok(schema) if schema.as_object().is_some() => a.json_schema = Some(schema),
                    _ => {
                        return Err(UsageError(format!(
                            "--json-schema needs a JSON schema object, got {v:?}"
                        )));
                    }
                }
            }
            Long("managed-settings") => {
                return Err(UsageError(
                    "--managed-settings is refused: tern reads managed policy only from its managed-settings file (TERN_MANAGED_SETTINGS), so a policy passed here would not be enforced".into(),
                ));
            }
            Long("sdk-url") => {
                return Err(UsageError(
                    "--sdk-url is not supported: tern talks to its controller on standard input and output only".into(),
                ));
            }
            Long(name) if IGNORED_FLAGS.iter().any(|(f, _, _)| *f == name) => {
                let name = name.to_string();
                let (takes_value, why) = IGNORED_FLAGS
                    .iter()
                    .find(|(f, _, _)| *f == name)
                    .map_or((Some(false), ""), |(_, v, why)| (*v, *why));
                let value = match takes_value {
                    Some(true) => Some(text(&mut parser, &format!("--{name}"))?),
                    Some(false) => None,
                    None => parser.optional_value().and_then(|v| v.into_string().ok()),
                };
                let shown = match value {
                    Some(v) => format!("--{name} {v}"),
                    None => format!("--{name}"),
                };
                a.ignored.push((shown, why));
            }
            Long("model") => a.model = Some(text(&mut parser, "--model")?),
            Long("thinking") => {
                let v = text(&mut parser, "--thinking")?;
                a.thinking = Some(thinking::Mode::parse(&v).map_err(UsageError)?);
            }
            Long("max-thinking-tokens") => {
                let v = text(&mut parser, "--max-thinking-tokens")?;
                a.thinking = Some(
                    thinking::Mode::budget(&v)
                        .map_err(|e| UsageError(format!("--max-thinking-tokens: {e}")))?,
                );
            }
            Long("thinking-display") => {
                let v = text(&mut parser, "--thinking-display")?;
                a.thinking_display = Some(thinking::Display::parse(&v).map_err(UsageError)?);
            }
            Long("effort") => {
                let v = text(&mut parser, "--effort")?;
                a.effort = Some(thinking::Effort::parse(&v).map_err(UsageError)?);
            }
            Long("max-turns") => {
                let v = text(&mut parser, "--max-turns")?;
                match v.parse::<u32>() {
                    Ok(n) if n > 0 => a.max_turns = Some(n),
                    _ => {
                        return Err(UsageError(format!(
                            "invalid --max-turns '{v}' (expected a positive whole number)"
                        )));
                    }
                }
            }
            Long("permission-mode") => {
                let v = text(&mut parser, "--permission-mode")?;
                a.permission_mode = Some(Mode::parse(&v).ok_or_else(|| {
                    UsageError(format!(
                        "invalid --permission-mode '{v}' (expected default, acceptEdits, plan, dontAsk or bypassPermissions)"
                    ))
                })?);
            }
            Long("dangerously-skip-permissions") => {
                a.permission_mode = Some(Mode::BypassPermissions)
            }
            Long("allowedTools" | "allowed-tools") => {
                for v in texts(&mut parser, "--allowedTools")? {
                    a.allowed_tools.extend(crate::policy::split_tool_list(&v));
                }
            }
            Long("disallowedTools" | "disallowed-tools") => {
                for v in texts(&mut parser, "--disallowedTools")? {
                    a.disallowed_tools
                        .extend(crate::policy::split_tool_list(&v));
                }
            }
            Long("system-prompt") => a.system_prompt = Some(text(&mut parser, "--system-prompt")?),
            Long("append-system-prompt") => {
                a.append_system_prompt = Some(text(&mut parser, "--append-system-prompt")?)
            }
            Value(v) => words.push(
                v.into_string()
                    .map_err(|_| UsageError("the prompt is not valid UTF-8".into()))?,
            ),
            Short(c) => return Err(UsageError(format!("unknown option '-{c}'"))),
            Long(name) => return Err(UsageError(format!("unknown option '--{name}'"))),
        }
    }
    if bench && words != ["doctor"] {
        return Err(UsageError("--bench belongs to 'tern doctor'".into()));
    }
    if words == ["sandbox", "status"] {
        return Ok(Command::SandboxStatus);
    }
    if words == ["config", "permissions"] {
        return Ok(Command::ConfigPermissions(a));
    }
    if words == ["sessions"] {
        return Ok(Command::Sessions);
    }
    if words == ["mcp", "list"] {
        return Ok(Command::McpList(a));
    }
    if words == ["plugin", "list"] {
        return Ok(Command::PluginList(a));
    }
    if let [mcp, verb, rest @ ..] = words.as_slice()
        && mcp == "mcp"
        && (verb == "login" || verb == "logout")
    {
        let [name] = rest else {
            return Err(UsageError(format!("usage: tern mcp {verb} NAME")));
        };
        return Ok(if verb == "login" {
            Command::McpLogin(a, name.clone())
        } else {
            Command::McpLogout(a, name.clone())
        });
    }
    // `tern trust`, `tern trust DIR`; a longer line is a prompt.
    if let [first, rest @ ..] = words.as_slice()
        && first == "trust"
        && rest.len() <= 1
        && !a.print
    {
        let dir = rest.first().cloned();
        return Ok(Command::Trust {
            args: a,
            dir,
            revoke,
        });
    }
    if revoke {
        return Err(UsageError("--revoke belongs to 'tern trust'".into()));
    }
    if words == ["acp"] && !a.print && a.prompt.is_none() {
        return Ok(Command::Acp(a));
    }
    if words == ["doctor"] {
        return Ok(Command::Doctor { args: a, bench });
    }
    if words.first().map(String::as_str) == Some("rewind") {
        let [_, session] = words.as_slice() else {
            return Err(UsageError(
                "usage: tern rewind <SESSION> [--to <MESSAGE-UUID>] [--dry-run]".into(),
            ));
        };
        return Ok(Command::Rewind {
            session: session.clone(),
            to,
            dry_run,
        });
    }
    if to.is_some() || dry_run {
        return Err(UsageError(
            "--to and --dry-run belong to 'tern rewind'".into(),
        ));
    }
    if a.stream_input && a.output_format != Some(OutputFormat::StreamJson) {
        return Err(UsageError(
            "--input-format stream-json needs --output-format stream-json".into(),
        ));
    }
    if a.fork_session && a.resume.is_none() && !a.continue_latest {
        return Err(UsageError(
            "--fork-session needs --resume <id> or --continue".into(),
        ));
    }
    if a.resume.is_some() && a.continue_latest {
        return Err(UsageError(
            "use either --resume <id> or --continue, not both".into(),
        ));
    }
    if a.session_id.is_some() && (a.resume.is_some() || a.continue_latest) && !a.fork_session {
        return Err(UsageError(
            "--session-id with --resume/--continue needs --fork-session (a resumed session keeps its id)".into(),
        ));
    }
    if !words.is_empty() {
        a.prompt = Some(words.join(" "));
    }
    Ok(Command::Run(a))
}

fn read_flag_file(flag: &str, path: &str) -> Result<String, UsageError> {
    std::fs::read_to_string(path).map_err(|e| UsageError(format!("{flag} {path}: {e}")))
}

fn text(parser: &mut lexopt::Parser, flag: &str) -> Result<String, UsageError> {
    let v = parser
        .value()
        .map_err(|_| UsageError(format!("{flag} needs a value")))?;
    v.into_string()
        .map_err(|_| UsageError(format!("the value of {flag} is not valid UTF-8")))
}

/// Every value up to the next option, as Claude Code's list flags take
/// them (`--allowedTools Read Edit`): the SDKs and scripts pass lists so,
/// and a second value read as the prompt would run the wrong task. A
/// prompt after such a flag needs `--` or to come first, as there.
fn texts(parser: &mut lexopt::Parser, flag: &str) -> Result<Vec<String>, UsageError> {
    let values = parser
        .values()
        .map_err(|_| UsageError(format!("{flag} needs a value")))?;
    values
        .map(|v| {
            v.into_string()
                .map_err(|_| UsageError(format!("the value of {flag} is not valid UTF-8")))
        })
        .collect()
}

fn usage(e: lexopt::Error) -> UsageError {
    UsageError(e.to_string())
}

/// A positive length of time: seconds, or a number with `s`, `m` or `h`.
fn duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last()? {
        (at, 's') => (&text[..at], 1.0),
        (at, 'm') => (&text[..at], 60.0),
        (at, 'h') => (&text[..at], 3600.0),
        _ => (text, 1.0),
    };
    let seconds = number.trim().parse::<f64>().ok()? * unit;
    (seconds.is_finite() && seconds > 0.0 && seconds < 1e9)
        .then(|| std::time::Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Args, UsageError> {
        let all = std::iter::once("tern")
            .chain(args.iter().copied())
            .map(OsString::from);
        match parse(all)? {
            Command::Run(a) => Ok(a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn both_value_styles_and_lists() {
        let a = run(&[
            "-p",
            "--output-format=json",
            "--max-turns",
            "3",
            "--allowedTools",
            "Read,Bash(git log:*)",
            "--allowed-tools=Edit",
            "fix",
            "it",
        ])
        .unwrap();
        assert!(a.print);
        assert_eq!(a.output_format, Some(OutputFormat::Json));
        assert_eq!(a.max_turns, Some(3));
        assert_eq!(a.allowed_tools, ["Read", "Bash(git log:*)", "Edit"]);
        assert_eq!(a.prompt.as_deref(), Some("fix it"));
    }

    /// List flags take every value up to the next option, as Claude
    /// Code's do; the prompt is what comes before them or after `--`.
    #[test]
    fn list_flags_take_every_value_until_the_next_option() {
        let a = run(&[
            "-p",
            "go on",
            "--allowedTools",
            "Read",
            "Edit",
            "Bash(git log:*)",
            "--disallowedTools",
            "WebFetch",
            "Write",
            "--add-dir",
            "/a",
            "/b",
            "--max-turns",
            "2",
        ])
        .unwrap();
        assert_eq!(a.allowed_tools, ["Read", "Edit", "Bash(git log:*)"]);
        assert_eq!(a.disallowed_tools, ["WebFetch", "Write"]);
        assert_eq!(a.add_dirs, ["/a", "/b"]);
        assert_eq!(a.prompt.as_deref(), Some("go on"));
        let a = run(&["--allowedTools", "Read", "--", "fix it"]).unwrap();
        assert_eq!(a.allowed_tools, ["Read"]);
        assert_eq!(a.prompt.as_deref(), Some("fix it"));
        assert!(run(&["--allowedTools"]).is_err());
    }

    #[test]
    fn errors_name_the_flag() {
        assert_eq!(
            run(&["--frobnicate"]).unwrap_err().0,
            "unknown option '--frobnicate'"
        );
        assert_eq!(run(&["-q"]).unwrap_err().0, "unknown option '-q'");
        assert!(
            run(&["--max-turns", "0"])
                .unwrap_err()
                .0
                .contains("--max-turns")
        );
        assert!(
            run(&["--output-format", "xml"])
                .unwrap_err()
                .0
                .contains("xml")
        );
        assert!(
            run(&["--model"])
                .unwrap_err()
                .0
                .contains("--model needs a value")
        );
        assert!(
            run(&["--permission-mode=yolo"])
                .unwrap_err()
                .0
                .contains("yolo")
        );
    }

    #[test]
    fn version_and_help_win() {
        let v = parse(["tern", "--bogus-later", "-v"].map(OsString::from));
        assert!(v.is_err(), "unknown flags before -v are still errors");
        let v = parse(["tern", "-v", "--bogus"].map(OsString::from)).unwrap();
        assert!(matches!(v, Command::Version));
        assert!(matches!(
            parse(["tern", "-h"].map(OsString::from)).unwrap(),
            Command::Help
        ));
    }

    #[test]
    fn durations_read_seconds_and_units_and_refuse_the_rest() {
        use std::time::Duration;
        assert_eq!(duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(duration("1.5m"), Some(Duration::from_secs(90)));
        assert_eq!(duration("2h"), Some(Duration::from_secs(7200)));
        for bad in ["", "0", "-5", "soon", "5d", "m", "inf", "NaN"] {
            assert_eq!(duration(bad), None, "{bad:?}");
        }
        assert!(
            run(&["--max-duration", "later"])
                .unwrap_err()
                .0
                .contains("--max-duration")
        );
        assert!(run(&["--max-output-tokens-total", "0"]).is_err());
        let a = run(&["--max-output-tokens-total", "500", "--max-duration", "2m"]).unwrap();
        assert_eq!(a.max_output_tokens_total, Some(500));
        assert_eq!(a.max_duration, Some(Duration::from_secs(120)));
    }
}
