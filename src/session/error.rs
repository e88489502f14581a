//! What can go wrong finding, reading or rewinding a recorded session: the
//! state plane's error. Its `Display` is the whole sentence `tern` says,
//! its cause's words included, so a caller prints it as it is; `source`
//! hands programs the cause itself.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum SessionError {
    /// A session id with a `/` in it, or none at all.
    NotAnId(String),
    /// No transcript of that id (or prefix) for this directory.
    NotFound {
        id: String,
        cwd: PathBuf,
        /// The first place looked.
        looked_in: Option<PathBuf>,
    },
    /// The prefix names more than one session.
    Ambiguous { id: String, count: usize },
    /// `--continue` with nothing recorded here.
    NoEarlier { cwd: PathBuf },
    /// `--session-id` names a session that is already recorded.
    Exists { id: String },
    /// A transcript could not be read.
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The transcript holds no conversation to go on with.
    NoConversation,
    /// The `parentUuid` chain loops.
    Loop { line: usize, uuid: String },
    /// Repair left nothing to send.
    NothingUsable,
    /// `rewind --to` names a message the transcript does not have.
    NoSuchMessage { id: String, path: PathBuf },
    /// Resuming `path` failed for `source`.
    Resume {
        path: PathBuf,
        source: Box<SessionError>,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::NotAnId(id) => write!(f, "'{id}' is not a session id"),
            SessionError::NotFound { id, cwd, looked_in } => write!(
                f,
                "no session '{id}' for {} (looked in {}); 'tern sessions' lists them",
                cwd.display(),
                looked_in
                    .as_ref()
                    .map_or(String::new(), |d| d.display().to_string())
            ),
            SessionError::Ambiguous { id, count } => {
                write!(f, "'{id}' matches {count} sessions; give more of the id")
            }
            SessionError::NoEarlier { cwd } => {
                write!(f, "no earlier session to continue in {}", cwd.display())
            }
            SessionError::Exists { id } => write!(
                f,
                "session {id} already exists; use --resume {id} to go on with it"
            ),
            SessionError::Unreadable { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            SessionError::NoConversation => {
                f.write_str("the transcript has no conversation entries")
            }
            SessionError::Loop { line, uuid } => write!(
                f,
                "the parentUuid chain loops back to line {line} ({uuid}); refusing to guess the order"
            ),
            SessionError::NothingUsable => f.write_str("no usable messages remain after repair"),
            SessionError::NoSuchMessage { id, path } => {
                write!(f, "no message {id} in {}", path.display())
            }
            SessionError::Resume { path, source } => {
                write!(f, "cannot resume {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Unreadable { source, .. } => Some(source),
            SessionError::Resume { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
