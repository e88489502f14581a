//! How tern ends, and the exit status that says so: decided here, for
//! the session and every subcommand (README, "Exit status").
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | an error result (model error, `--max-turns`, budget, hook block), a session that could not start, a failed subcommand |
//! | 2 | a usage error (flags, no prompt) |
//! | 128 + n | ended by signal n (130 SIGINT, 143 SIGTERM) |
//!
//! The sandbox launcher is a process of its own and passes on the status
//! of the command it ran.

use std::fmt;
use std::path::PathBuf;

use crate::abort::Reason;
use crate::agent::Ending;
use crate::config::ConfigError;
use crate::model::ApiError;
use crate::session::SessionError;

/// How an invocation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    /// Something failed (see the table above).
    Failure,
    /// A bad invocation.
    Usage,
    /// A signal ended it.
    Signal(i32),
}

impl Exit {
    /// The process's exit status: the one place it is decided.
    pub fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
            Exit::Signal(n) => 128 + n,
        }
    }

    /// Success unless `failed`.
    pub fn failed_if(failed: bool) -> Exit {
        if failed { Exit::Failure } else { Exit::Success }
    }

    /// How a run of the agent ended.
    pub fn of_ending(ending: &Ending) -> Exit {
        match ending {
            Ending::Completed => Exit::Success,
            Ending::Aborted(Reason::Signal(s)) => Exit::Signal(*s),
            Ending::Aborted(Reason::Requested | Reason::TimeLimit)
            | Ending::MaxTurns
            | Ending::OutputTokensExceeded(_)
            | Ending::ModelError(_)
            | Ending::Blocked(_)
            | Ending::BudgetExceeded(_)
            | Ending::StructuredOutputRetries(_) => Exit::Failure,
        }
    }
}

/// Why a session could not start: the top-level error. `Display` is what
/// `tern:` says; `source` the cause, where there is one.
#[derive(Debug)]
pub enum Failure {
    /// Flags, settings or environment that cannot work.
    Config(ConfigError),
    /// Nothing is configured and discovery found no server (what was
    /// tried, and the ways out).
    NoServer(String),
    /// The model client could not be made.
    Client(ApiError),
    /// The session to resume or continue is not there or unreadable.
    Session(SessionError),
    /// The scratch folder (or a coordinator's scratchpad) could not be made.
    Scratch {
        dir: PathBuf,
        source: std::io::Error,
    },
    Scratchpad {
        dir: PathBuf,
        source: std::io::Error,
    },
}

impl Failure {
    /// Its exit status.
    pub fn exit(&self) -> Exit {
        match self {
            Failure::Config(ConfigError::Usage(_)) => Exit::Usage,
            Failure::Config(ConfigError::Unusable(_))
            | Failure::NoServer(_)
            | Failure::Client(_)
            | Failure::Session(_)
            | Failure::Scratch { .. }
            | Failure::Scratchpad { .. } => Exit::Failure,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Config(e @ ConfigError::Usage(_)) => write!(f, "{e}\nTry 'tern --help'."),
            Failure::Config(e) => write!(f, "{e}"),
            Failure::NoServer(m) => f.write_str(m),
            Failure::Client(e) => write!(f, "{e}"),
            Failure::Session(e) => write!(f, "{e}"),
            Failure::Scratch { dir, source } => write!(
                f,
                "cannot create a scratch folder in {} ({source})",
                dir.display()
            ),
            Failure::Scratchpad { dir, source } => {
                write!(
                    f,
                    "cannot create the scratchpad {} ({source})",
                    dir.display()
                )
            }
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failure::Config(_) | Failure::NoServer(_) => None,
            Failure::Client(e) => Some(e),
            Failure::Session(e) => Some(e),
            Failure::Scratch { source, .. } | Failure::Scratchpad { source, .. } => Some(source),
        }
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Failure {
        Failure::Config(e)
    }
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Failure {
        Failure::Session(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(Exit::of_ending(&Ending::Completed).code(), 0);
        assert_eq!(Exit::of_ending(&Ending::MaxTurns).code(), 1);
        assert_eq!(
            Exit::of_ending(&Ending::Aborted(Reason::Signal(2))).code(),
            130
        );
        assert_eq!(
            Exit::of_ending(&Ending::Aborted(Reason::Signal(15))).code(),
            143
        );
        assert_eq!(
            Exit::of_ending(&Ending::Aborted(Reason::Requested)).code(),
            1
        );
        let usage = Failure::Config(ConfigError::Usage("no prompt".into()));
        assert_eq!(usage.exit().code(), 2);
        assert_eq!(usage.to_string(), "no prompt\nTry 'tern --help'.");
        let gone = Failure::Session(SessionError::NoEarlier { cwd: "/w".into() });
        assert_eq!(gone.exit().code(), 1);
        assert_eq!(gone.to_string(), "no earlier session to continue in /w");
        assert_eq!(Exit::failed_if(true).code(), 1);
        assert_eq!(Exit::failed_if(false).code(), 0);
    }
}
