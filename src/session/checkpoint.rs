//! File checkpoints and rewind.
//!
//! Before Edit or Write changes a file, its prior bytes (or the fact that
//! it did not exist) are kept beside the transcript: `<session>.files/`
//! holds one blob per change and `index.jsonl` one line per change,
//! naming the tool call that made it. `tern rewind` walks the index
//! backwards and puts files back as they were before the first change
//! made after the chosen message. Bash commands are not tracked: what they
//! did is reported, not undone.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::obj;
use crate::session::SessionError;

/// Files larger than this are not kept (and rewind says so).
const MAX_BYTES: u64 = 32 * 1024 * 1024;

pub struct Checkpoints {
    dir: PathBuf,
    /// Opened on the first change, so sessions that edit nothing leave
    /// no folder behind.
    index: Option<File>,
    seq: usize,
}

/// The checkpoint folder of a transcript.
pub fn dir_for(transcript: &Path) -> PathBuf {
    transcript.with_extension("files")
}

impl Checkpoints {
    /// Opens (or continues) the checkpoints of the session whose
    /// transcript is `transcript`.
    pub fn open(transcript: &Path) -> Checkpoints {
        let dir = dir_for(transcript);
        let seq = std::fs::read_to_string(dir.join("index.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        Checkpoints {
            dir,
            index: None,
            seq,
        }
    }

    fn index(&mut self) -> std::io::Result<&mut File> {
        if self.index.is_none() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)?;
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(self.dir.join("index.jsonl"))?;
            self.index = Some(file);
        }
        self.index
            .as_mut()
            .ok_or_else(|| std::io::Error::other("checkpoint index unavailable"))
    }

    /// Keeps what `path` holds now, before `tool_use_id` changes it.
    pub fn before_write(&mut self, path: &Path, tool_use_id: &str) -> std::io::Result<()> {
        self.index()?;
        let meta = std::fs::metadata(path);
        let (existed, blob, mode, note) = match meta {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (false, None, 0, None),
            Err(e) => return Err(e),
            Ok(m) if m.len() > MAX_BYTES => (
                true,
                None,
                m.permissions().mode(),
                Some(format!("larger than {} MiB; not kept", MAX_BYTES >> 20)),
            ),
            Ok(m) => {
                let bytes = std::fs::read(path)?;
                let name = format!("{:06}", self.seq);
                let mut f = OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(self.dir.join(&name))?;
                f.write_all(&bytes)?;
                (true, Some(name), m.permissions().mode(), None)
            }
        };
        let line = obj! {
            "seq" => self.seq,
            "toolUseId" => tool_use_id,
            "path" => path.display().to_string(),
            "existed" => existed,
            "blob" => blob,
            "mode" => i64::from(mode),
            "note" => note,
            "timestamp" => crate::session::time::timestamp(),
        };
        let mut text = line.to_json();
        text.push('\n');
        self.index()?.write_all(text.as_bytes())?;
        self.seq += 1;
        Ok(())
    }
}

/// One action of a rewind.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Put back the kept bytes (blob name inside the checkpoint folder).
    Restore {
        path: PathBuf,
        blob: String,
        mode: u32,
    },
    /// The file did not exist at that point.
    Remove(PathBuf),
    Cannot(PathBuf, String),
}

#[derive(Debug, Default)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Bash commands run after the point: their effects stay.
    pub commands: Vec<String>,
}

/// The tool calls made after message `to` (after the start when `None`),
/// in order, and the Bash commands among them.
fn calls_after(
    transcript: &Path,
    to: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), SessionError> {
    let text = std::fs::read_to_string(transcript).map_err(|source| SessionError::Unreadable {
        path: transcript.to_path_buf(),
        source,
    })?;
    let mut after = to.is_none();
    let (mut ids, mut commands) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let Ok(v) = json::parse(line) else { continue };
        if !after {
            after = v.str_field("uuid") == to;
            continue;
        }
        if v.str_field("type") != Some("assistant") {
            continue;
        }
        let blocks = v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        for b in blocks.into_iter().flatten() {
            if b.str_field("type") != Some("tool_use") {
                continue;
            }
            if let Some(id) = b.str_field("id") {
                ids.push(id.to_string());
            }
            if b.str_field("name") == Some("Bash")
                && let Some(c) = b.get("input").and_then(|i| i.str_field("command"))
            {
                commands.push(c.to_string());
            }
        }
    }
    if !after {
        return Err(SessionError::NoSuchMessage {
            id: to.unwrap_or_default().to_string(),
            path: transcript.to_path_buf(),
        });
    }
    Ok((ids, commands))
}

/// What rewinding `transcript` to just after message `to` (or to before
/// the session's first change) would do.
pub fn plan(transcript: &Path, to: Option<&str>) -> Result<Plan, SessionError> {
    let (later, commands) = calls_after(transcript, to)?;
    let index =
        std::fs::read_to_string(dir_for(transcript).join("index.jsonl")).unwrap_or_default();
    let mut actions = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for v in index.lines().filter_map(|l| json::parse(l).ok()) {
        let (Some(id), Some(path)) = (v.str_field("toolUseId"), v.str_field("path")) else {
            continue;
        };
        let path = PathBuf::from(path);
        // The first change after the point holds the file as it was then.
        if !later.iter().any(|c| c == id) || seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        let existed = v.get("existed").and_then(Value::as_bool).unwrap_or(true);
        actions.push(match (v.str_field("blob"), existed) {
            (_, false) => Action::Remove(path),
            (Some(blob), true) => Action::Restore {
                path,
                blob: blob.to_string(),
                mode: v.get("mode").and_then(Value::as_i64).unwrap_or(0o644) as u32,
            },
            (None, true) => {
                let why = v
                    .str_field("note")
                    .unwrap_or("its earlier content was not kept")
                    .to_string();
                Action::Cannot(path, why)
            }
        });
    }
    Ok(Plan { actions, commands })
}

/// Carries out a plan; one line per action taken or refused.
pub fn apply(transcript: &Path, plan: &Plan) -> Vec<String> {
    let dir = dir_for(transcript);
    let mut report = Vec::new();
    for action in &plan.actions {
        match action {
            Action::Remove(p) => match std::fs::remove_file(p) {
                Ok(()) => report.push(format!("removed {} (it did not exist then)", p.display())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    report.push(format!("{} is already gone", p.display()))
                }
                Err(e) => report.push(format!("could not remove {}: {e}", p.display())),
            },
            Action::Restore { path, blob, mode } => {
                let restored = std::fs::read(dir.join(blob)).and_then(|bytes| {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::fs::write(path, bytes)?;
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7777))
                });
                match restored {
                    Ok(()) => report.push(format!("restored {}", path.display())),
                    Err(e) => report.push(format!("could not restore {}: {e}", path.display())),
                }
            }
            Action::Cannot(p, why) => report.push(format!("cannot restore {}: {why}", p.display())),
        }
    }
    report
}

/// How a plan reads to a person (`--dry-run` and the tail of a rewind).
pub fn describe(plan: &Plan) -> Vec<String> {
    let mut out: Vec<String> = plan
        .actions
        .iter()
        .map(|a| match a {
            Action::Restore { path, .. } => format!("would restore {}", path.display()),
            Action::Remove(p) => format!("would remove {} (it did not exist then)", p.display()),
            Action::Cannot(p, why) => format!("cannot restore {}: {why}", p.display()),
        })
        .collect();
    if plan.actions.is_empty() {
        out.push("no file changes by Edit or Write to undo".into());
    }
    out
}

/// The warning about what a rewind leaves alone.
pub fn untracked_note(plan: &Plan) -> Option<String> {
    if plan.commands.is_empty() {
        return None;
    }
    let mut note = format!(
        "not undone: {} Bash command(s) ran after that point and their effects are not tracked:",
        plan.commands.len()
    );
    for c in plan.commands.iter().take(10) {
        let one_line: String = c
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(100)
            .collect();
        note.push_str(&format!("\n  $ {one_line}"));
    }
    if plan.commands.len() > 10 {
        note.push_str(&format!("\n  … and {} more", plan.commands.len() - 10));
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tern-ckpt-{name}-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn assistant(uuid: &str, calls: &[(&str, &str, Value)]) -> String {
        let content: Vec<Value> = calls
            .iter()
            .map(|(id, name, input)| {
                obj! { "type" => "tool_use", "id" => *id, "name" => *name, "input" => input.clone() }
            })
            .collect();
        obj! { "uuid" => uuid, "type" => "assistant", "message" => obj! { "role" => "assistant", "content" => content } }
            .to_json()
    }

    #[test]
    fn rewind_restores_edits_removes_creations_and_names_bash() {
        let dir = temp("rw");
        let transcript = dir.join("s.jsonl");
        let a = dir.join("a.txt");
        let b = dir.join("b.txt");
        std::fs::write(&a, "v1").unwrap();
        let mut ck = Checkpoints::open(&transcript);
        // Message m1: edit a (v1 -> v2). Message m2: edit a (v2 -> v3), create b, run Bash.
        ck.before_write(&a, "t1").unwrap();
        std::fs::write(&a, "v2").unwrap();
        ck.before_write(&a, "t2").unwrap();
        std::fs::write(&a, "v3").unwrap();
        ck.before_write(&b, "t3").unwrap();
        std::fs::write(&b, "new").unwrap();
        let lines = [
            assistant("m1", &[("t1", "Edit", obj! {})]),
            assistant(
                "m2",
                &[
                    ("t2", "Edit", obj! {}),
                    ("t3", "Write", obj! {}),
                    ("t4", "Bash", obj! { "command" => "rm -rf build" }),
                ],
            ),
        ];
        std::fs::write(&transcript, lines.join("\n")).unwrap();

        let to_m1 = plan(&transcript, Some("m1")).unwrap();
        assert_eq!(
            describe(&to_m1),
            [
                format!("would restore {}", a.display()),
                format!("would remove {} (it did not exist then)", b.display()),
            ]
        );
        assert!(untracked_note(&to_m1).unwrap().contains("$ rm -rf build"));
        apply(&transcript, &to_m1);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "v2");
        assert!(!b.exists());

        let all = plan(&transcript, None).unwrap();
        apply(&transcript, &all);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "v1");

        assert!(
            plan(&transcript, Some("nope"))
                .unwrap_err()
                .to_string()
                .contains("no message nope")
        );
    }
}
