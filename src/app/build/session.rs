//! The build's first step: the session's record, new, resumed (same id,
//! same file) or forked (new id, the history copied into a new file).

use super::Notes;
use crate::config::Runtime;
use crate::json::Value;
use crate::obj;
use crate::session::transcript::{self, Transcript};
use crate::session::{SessionError, new_uuid, resume, store};

pub(super) struct OpenedSession {
    pub session_id: String,
    pub transcript: Option<Transcript>,
    /// The conversation so far (empty for a new session).
    pub history: Vec<Value>,
    /// The transcript `history` was read from (resumed or forked).
    #[cfg_attr(not(feature = "repl"), allow(dead_code))]
    pub earlier: Option<std::path::PathBuf>,
    /// Where the Bash tool's shell was when that transcript ended.
    pub shell_cwd: Option<std::path::PathBuf>,
}

/// A new session, or a recorded one resumed (same id, same file) or
/// forked (new id, history copied into a new file).
pub(super) fn open_session(rt: &Runtime, notes: &mut Notes) -> Result<OpenedSession, SessionError> {
    let choice = &rt.session;
    let places = &rt.transcripts;
    let source = match (&choice.resume, choice.continue_latest) {
        (Some(id), _) => Some(store::find(places, &rt.cwd, id)?),
        (None, true) => Some(store::latest(places, &rt.cwd)?),
        (None, false) => None,
    };
    let Some(source) = source else {
        let session_id = choice.id.clone().unwrap_or_else(new_uuid);
        if let Some(id) = &choice.id
            && store::find(places, &rt.cwd, id).is_ok()
        {
            return Err(SessionError::Exists { id: id.clone() });
        }
        let transcript = rt
            .persist_session
            .then(|| new_transcript(rt, &session_id, notes))
            .flatten();
        return Ok(OpenedSession {
            session_id,
            transcript,
            history: Vec::new(),
            earlier: None,
            shell_cwd: None,
        });
    };
    let loaded = resume::load_file(&source).map_err(|e| SessionError::Resume {
        path: source.clone(),
        source: Box::new(e),
    })?;
    for w in &loaded.warnings {
        notes.warning(format!("resume: {w}"));
    }
    let old_id = source
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    if !choice.fork {
        let mut transcript = if rt.persist_session {
            match transcript::reopen(&source, &rt.cwd, &old_id, loaded.leaf.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    notes.warning(format!(
                        "warning: cannot append to {} ({e}); this run is not recorded",
                        source.display()
                    ));
                    None
                }
            }
        } else {
            None
        };
        // The made-up results become part of the record, so the next
        // resume sees the same conversation.
        if let Some(t) = transcript.as_mut()
            && !loaded.synthesized.is_empty()
        {
            t.append(
                "user",
                &obj! { "role" => "user", "content" => loaded.synthesized.clone() },
                &new_uuid(),
            );
        }
        return Ok(OpenedSession {
            session_id: old_id,
            transcript,
            history: loaded.messages,
            earlier: Some(source),
            shell_cwd: loaded.cwd,
        });
    }
    let session_id = choice.id.clone().unwrap_or_else(new_uuid);
    let mut transcript = rt
        .persist_session
        .then(|| new_transcript(rt, &session_id, notes))
        .flatten();
    if let Some(t) = transcript.as_mut() {
        for m in &loaded.messages {
            t.append(m.str_field("role").unwrap_or("user"), m, &new_uuid());
        }
    }
    Ok(OpenedSession {
        session_id,
        transcript,
        history: loaded.messages,
        earlier: Some(source),
        shell_cwd: loaded.cwd,
    })
}

fn new_transcript(rt: &Runtime, session_id: &str, notes: &mut Notes) -> Option<Transcript> {
    let opened = transcript::open(&rt.transcripts, &rt.cwd, session_id);
    if let Some(notice) = opened.notice {
        notes.warning(notice);
    }
    opened.transcript
}
