//! The transcript: one JSON line per conversation event, appended and
//! flushed as it happens, so a session killed at any point leaves a
//! readable record.
//!
//! Where: `$TERN_HOME/projects/<cwd>/<session>.jsonl`, else
//! `$XDG_DATA_HOME/tern/projects/…`, else `~/.local/share/tern/projects/…`.
//! When that cannot be written (read-only home, no HOME) the transcript
//! goes under the temporary directory instead and tern says so; when that
//! fails too, the session runs without one and tern says that.
//! Files are 0600 and directories 0700: transcripts hold code and prompts.
//! Credentials are never written (requests' headers are not recorded).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::json::Value;
use crate::obj;

pub struct Transcript {
    path: PathBuf,
    file: File,
    session_id: String,
    cwd: String,
    /// The Bash tool's directory, when the session has one: written as
    /// each entry's `cwd` (as Claude Code writes its current directory),
    /// which is where a resume starts the shell again.
    shell_cwd: Option<crate::session::ShellCwd>,
    last_uuid: Option<String>,
    /// Set after a failed write: the session goes on without a record.
    broken: bool,
}

/// The outcome of opening: the transcript (if any) and what to tell the user.
pub struct Opened {
    pub transcript: Option<Transcript>,
    pub notice: Option<String>,
}

/// Where a session's transcripts are kept: the preferred root, if the
/// environment names one, and the temporary fallback for when it does not
/// or cannot be written. Worked out once by the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    pub preferred: Option<PathBuf>,
    pub fallback: PathBuf,
}

impl Places {
    /// From the variables (see [`preferred_root`]) and the temporary
    /// directory.
    pub fn new(env: &dyn Fn(&str) -> Option<String>, temp_dir: &Path) -> Places {
        Places {
            preferred: preferred_root(env),
            fallback: temp_dir
                .join(format!("tern-{}", crate::sys::uid()))
                .join("projects"),
        }
    }
}

/// The preferred transcript root for this environment, if one can be named.
pub fn preferred_root(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = var("TERN_HOME") {
        return Some(home.join("projects"));
    }
    if let Some(data) = var("XDG_DATA_HOME") {
        return Some(data.join("tern/projects"));
    }
    var("HOME").map(|h| h.join(".local/share/tern/projects"))
}

/// `/work/my app` → `-work-my-app`: one directory per working directory.
pub fn project_dir_name(cwd: &Path) -> String {
    cwd.display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

pub fn open(places: &Places, cwd: &Path, session_id: &str) -> Opened {
    let project = project_dir_name(cwd);
    let fallback = &places.fallback;
    let first_error = match &places.preferred {
        Some(root) => match create(&root.join(&project), cwd, session_id) {
            Ok(t) => {
                return Opened {
                    transcript: Some(t),
                    notice: None,
                };
            }
            Err(e) => format!("cannot write transcripts under {} ({e})", root.display()),
        },
        None => "no HOME, XDG_DATA_HOME or TERN_HOME to keep transcripts in".to_string(),
    };
    match create(&fallback.join(&project), cwd, session_id) {
        Ok(t) => {
            let notice = format!(
                "{first_error}; this session's transcript is in {}",
                t.path.display()
            );
            Opened {
                transcript: Some(t),
                notice: Some(notice),
            }
        }
        Err(e) => Opened {
            transcript: None,
            notice: Some(format!(
                "{first_error}, nor under {} ({e}); this session has no transcript",
                fallback.display()
            )),
        },
    }
}

/// Reopens an existing transcript to go on appending after `leaf`
/// (resuming a session keeps its id and its file).
pub fn reopen(
    path: &Path,
    cwd: &Path,
    session_id: &str,
    leaf: Option<String>,
) -> std::io::Result<Transcript> {
    let file = OpenOptions::new().append(true).open(path)?;
    Ok(Transcript {
        path: path.to_path_buf(),
        file,
        session_id: session_id.to_string(),
        cwd: cwd.display().to_string(),
        shell_cwd: None,
        last_uuid: leaf,
        broken: false,
    })
}

/// A new transcript at exactly `path` (a sub-agent's, beside its session).
pub fn create_at(path: &Path, cwd: &Path, session_id: &str) -> std::io::Result<Transcript> {
    let dir = path.parent().unwrap_or(Path::new("."));
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    Ok(Transcript {
        path: path.to_path_buf(),
        file,
        session_id: session_id.to_string(),
        cwd: cwd.display().to_string(),
        shell_cwd: None,
        last_uuid: None,
        broken: false,
    })
}

fn create(dir: &Path, cwd: &Path, session_id: &str) -> std::io::Result<Transcript> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let path = dir.join(format!("{session_id}.jsonl"));
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .open(&path)?;
    Ok(Transcript {
        path,
        file,
        session_id: session_id.to_string(),
        cwd: cwd.display().to_string(),
        shell_cwd: None,
        last_uuid: None,
        broken: false,
    })
}

impl Transcript {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `cwd`'s directory as each entry's `cwd` from now on.
    pub(crate) fn follow_cwd(&mut self, cwd: crate::session::ShellCwd) {
        self.shell_cwd = Some(cwd);
    }

    /// Appends one event (`user` or `assistant`, with its API-shaped
    /// message) chained to the previous one. A failed write is reported
    /// once and ends recording; it never ends the session.
    /// `uuid` is the message's identity, made where the message was.
    pub fn append(&mut self, kind: &str, message: &Value, uuid: &str) {
        let mut extra = crate::json::Map::new();
        extra.insert("message", message.clone());
        self.append_entry(kind, extra, uuid);
    }

    /// A message the conversation does not send to the model but keeps
    /// (a REPL block's inner calls): in the chain, marked `isVirtual`.
    pub fn append_virtual(&mut self, kind: &str, message: &Value, uuid: &str) {
        let mut extra = crate::json::Map::new();
        extra.insert("message", message.clone());
        extra.insert("isVirtual", true);
        self.append_entry(kind, extra, uuid);
    }

    /// A compact boundary: the chain restarts here (no parent), so a
    /// resume loads the summary that follows and nothing before it.
    pub fn append_boundary(&mut self, trigger: &str, pre_tokens: u64, uuid: &str) {
        let mut extra = crate::json::Map::new();
        extra.insert("subtype", "compact_boundary");
        extra.insert("logicalParentUuid", self.last_uuid.clone());
        extra.insert(
            "compactMetadata",
            obj! { "trigger" => trigger, "preTokens" => pre_tokens as i64 },
        );
        self.last_uuid = None;
        self.append_entry("system", extra, uuid);
    }

    fn append_entry(&mut self, kind: &str, extra: crate::json::Map, uuid: &str) {
        if self.broken {
            return;
        }
        let mut line = obj! {
            "uuid" => uuid,
            "parentUuid" => self.last_uuid.clone(),
            "sessionId" => self.session_id.as_str(),
            "type" => kind,
            "timestamp" => crate::session::time::timestamp(),
            "cwd" => self.shell_cwd.as_ref().map_or_else(|| self.cwd.clone(), |c| c.get().display().to_string()),
            "version" => env!("CARGO_PKG_VERSION"),
        };
        if let Some(map) = line.as_object_mut() {
            for (k, v) in extra.iter() {
                map.insert(k, v.clone());
            }
        }
        let mut text = line.to_json();
        text.push('\n');
        // One write per line on an O_APPEND file: a crash leaves at most
        // a truncated last line, never interleaved ones.
        if let Err(e) = self.file.write_all(text.as_bytes()) {
            self.broken = true;
            crate::report::notice(
                crate::report::Level::Warning,
                format!(
                    "writing the transcript {} failed ({e}); recording stops here",
                    self.path.display()
                ),
            );
            return;
        }
        self.last_uuid = Some(uuid.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tern-tr-{name}-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn writes_chained_private_lines() {
        let home = temp("home");
        let h = home.display().to_string();
        let env = move |k: &str| (k == "TERN_HOME").then(|| h.clone());
        let places = Places::new(&env, &std::env::temp_dir());
        let opened = open(&places, Path::new("/work/my app"), "sess-1");
        assert!(opened.notice.is_none());
        let mut t = opened.transcript.unwrap();
        assert_eq!(t.path(), home.join("projects/-work-my-app/sess-1.jsonl"));
        let first = crate::session::new_uuid();
        t.append(
            "user",
            &obj! { "role" => "user", "content" => "hi" },
            &first,
        );
        t.append(
            "assistant",
            &obj! { "role" => "assistant", "content" => vec![] },
            "a-2",
        );
        let text = std::fs::read_to_string(t.path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| crate::json::parse(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].get("parentUuid").unwrap().is_null());
        assert_eq!(lines[0].str_field("uuid"), Some(first.as_str()));
        assert_eq!(lines[1].str_field("uuid"), Some("a-2"));
        assert_eq!(lines[1].str_field("parentUuid"), Some(first.as_str()));
        assert_eq!(lines[1].str_field("sessionId"), Some("sess-1"));
        assert_eq!(lines[0].str_field("cwd"), Some("/work/my app"));
        let mode = std::fs::metadata(t.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn unwritable_root_falls_back_and_says_so() {
        let env = |k: &str| (k == "HOME").then(|| "/proc/no-such-home".to_string());
        let places = Places::new(&env, &std::env::temp_dir());
        let opened = open(&places, Path::new("/w"), &crate::session::new_uuid());
        let notice = opened.notice.unwrap();
        assert!(
            notice.contains("cannot write transcripts under /proc/no-such-home"),
            "{notice}"
        );
        assert!(
            notice.contains("this session's transcript is in"),
            "{notice}"
        );
        assert!(
            opened
                .transcript
                .unwrap()
                .path()
                .starts_with(std::env::temp_dir())
        );
    }
}
