//! Finding recorded sessions: the transcripts of one working directory,
//! newest first, with what a person needs to pick one.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::json::{self, Value};
use crate::session::SessionError;
use crate::session::transcript::{Places, project_dir_name};

pub struct Summary {
    pub id: String,
    pub path: PathBuf,
    pub modified: SystemTime,
    /// The first prompt's text, on one line.
    pub first_prompt: String,
    /// Model iterations recorded (assistant entries).
    pub turns: usize,
}

/// Where this directory's transcripts may be: the preferred root and the
/// temporary fallback that `transcript::open` uses.
pub fn project_dirs(places: &Places, cwd: &Path) -> Vec<PathBuf> {
    let name = project_dir_name(cwd);
    places
        .preferred
        .iter()
        .chain(std::iter::once(&places.fallback))
        .map(|r| r.join(&name))
        .collect()
}

/// All sessions of `cwd`, newest first.
pub fn list(places: &Places, cwd: &Path) -> Vec<Summary> {
    let mut out = Vec::new();
    for dir in project_dirs(places, cwd) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            if let Some(s) = summarise(&path) {
                out.push(s);
            }
        }
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.modified));
    out
}

fn summarise(path: &Path) -> Option<Summary> {
    let id = path.file_stem()?.to_str()?.to_string();
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    let mut first_prompt = String::new();
    let mut turns = 0;
    for line in text.lines() {
        let Ok(v) = json::parse(line) else { continue };
        match v.str_field("type") {
            Some("assistant") => turns += 1,
            Some("user") if first_prompt.is_empty() => {
                first_prompt = prompt_text(v.get("message"));
            }
            _ => {}
        }
    }
    Some(Summary {
        id,
        path: path.to_path_buf(),
        modified,
        first_prompt,
        turns,
    })
}

fn prompt_text(message: Option<&Value>) -> String {
    let text = match message.and_then(|m| m.get("content")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.str_field("text"))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The transcript of session `id` in this directory.
pub fn find(places: &Places, cwd: &Path, id: &str) -> Result<PathBuf, SessionError> {
    if id.contains('/') || id.is_empty() {
        return Err(SessionError::NotAnId(id.to_string()));
    }
    let dirs = project_dirs(places, cwd);
    for dir in &dirs {
        let path = dir.join(format!("{id}.jsonl"));
        if path.is_file() {
            return Ok(path);
        }
    }
    // A unique prefix is enough, as with git.
    let matches: Vec<Summary> = list(places, cwd)
        .into_iter()
        .filter(|s| s.id.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.path.clone()),
        [] => Err(SessionError::NotFound {
            id: id.to_string(),
            cwd: cwd.to_path_buf(),
            looked_in: dirs.into_iter().next(),
        }),
        many => Err(SessionError::Ambiguous {
            id: id.to_string(),
            count: many.len(),
        }),
    }
}

/// The most recently written session of this directory.
pub fn latest(places: &Places, cwd: &Path) -> Result<PathBuf, SessionError> {
    list(places, cwd)
        .into_iter()
        .next()
        .map(|s| s.path)
        .ok_or_else(|| SessionError::NoEarlier {
            cwd: cwd.to_path_buf(),
        })
}

/// `tern sessions`: one line per session, newest first.
pub fn render(sessions: &[Summary]) -> String {
    let mut out = String::new();
    if sessions.is_empty() {
        out.push_str("no sessions recorded for this directory\n");
    }
    for s in sessions {
        let when = crate::session::time::format_system_time(s.modified);
        let mut prompt: String = s.first_prompt.chars().take(60).collect();
        if s.first_prompt.chars().count() > 60 {
            prompt.push('…');
        }
        out.push_str(&format!(
            "{}  {when}  {:>4} turns  {prompt}\n",
            s.id, s.turns
        ));
    }
    out
}
