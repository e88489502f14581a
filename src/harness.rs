//! The library's public face: what the integration tests, benchmarks,
//! examples and fuzz targets drive tern's parts with. Every plane is
//! `pub(crate)`; a part is public only when it is named here, so the
//! surface a change can break outside the crate is this list (and
//! [`crate::json`], the wire format the tests read and write).

/// How a settings layer's rule behaves (allow, ask, deny).
pub use crate::config::settings::Behavior;
/// The Bash reduction, for the fuzzer: statements and plans.
pub use crate::policy::bash::{analyse as analyse_bash, line_commands as bash_line_commands};
/// Permission decisions over a call's facts.
pub use crate::policy::{Decision, Mode, Policy, Rule};

pub use crate::abort::Abort;
/// One call through every step: hooks, rules, the tool.
pub use crate::agent::hooks::Hooks;
pub use crate::agent::pipeline::Pipeline;
/// The tool belt, and the facts of one call as policy sees them.
pub use crate::tools::{Registry, ToolContext, facts};

/// The sandbox's parts the escape tests and the footprint bench set up.
pub use crate::sandbox::protect::Report as ProtectReport;
pub use crate::sandbox::{
    SandboxPolicy, UnixSockets, parse_status, probe as sandbox_probe, remember_launcher_at,
};

/// Tool calls a model wrote as text, found in a finished answer.
pub use crate::agent::recover::{Recovered, recover as recover_text_calls};
/// Chat completions chunks into the Messages API events above.
pub use crate::model::openai::Translator as ChatTranslator;
/// The streaming wire: SSE frames into events, events into a message.
pub use crate::model::sse::{Flow, SseParser};
pub use crate::model::stream::{Assembler, StreamError, ToolUse};

/// Base64 as the media blocks carry it.
pub use crate::media::decode as base64_decode;
/// The folder name a project's transcripts live under.
pub use crate::session::transcript::project_dir_name;

/// The terminal interface drawing into a sink, for its benchmark.
#[cfg(feature = "tui")]
pub use crate::frontend::tui::Rig as TuiRig;

/// Voice input: a listening session over a source and a backend, for the
/// voice tests and benchmark.
#[cfg(feature = "voice")]
pub use crate::voice::face as voice;
