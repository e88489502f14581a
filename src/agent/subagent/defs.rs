//! Agent definitions: Markdown files with a frontmatter header, read from
//! `.tern/agents/` and `.claude/agents/` in the project and
//! `~/.config/tern/agents/` and `~/.claude/agents/` for the user, plus the
//! built-in general-purpose agent (the configuration lists the folders:
//! `Runtime::agent_dirs`). Project files win over user files of the same
//! name.
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a diff for bugs
//! tools: Read, Grep, Glob
//! disallowedTools: Bash
//! model: claude-haiku-4-5
//! maxTurns: 20
//! permissionMode: plan
//! ---
//! You review code. …
//! ```

use std::path::Path;

use crate::config::Folder;
use crate::policy::Mode;

#[derive(Debug, Clone, PartialEq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// `None`: every tool the parent has.
    pub tools: Option<Vec<String>>,
    pub disallowed: Vec<String>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub permission_mode: Option<Mode>,
    /// The body: added to the child's system prompt.
    pub prompt: String,
    /// Where it came from (`built-in` or a path).
    pub source: String,
}

pub fn general_purpose() -> AgentDef {
    AgentDef {
        name: "general-purpose".into(),
        description: "Researches questions, searches code and carries out multi-step tasks on its own; \
                      give it a complete, self-contained task."
            .into(),
        tools: None,
        disallowed: Vec::new(),
        model: None,
        max_turns: None,
        permission_mode: None,
        prompt: "You are a sub-agent started by another agent for one task. Do the task fully with your \
                 tools, then answer with what you found or did: that answer is all the other agent sees."
            .into(),
        source: "built-in".into(),
    }
}

/// Every definition found, the built-in first; problems are returned as
/// warnings and the file is skipped.
pub fn load(dirs: &[Folder]) -> (Vec<AgentDef>, Vec<String>) {
    let mut defs = vec![general_purpose()];
    let mut warnings = Vec::new();
    for dir in dirs {
        for path in dir.files() {
            let text = match crate::config::read_inside(&dir.root, &path) {
                Ok(t) => t,
                Err(e) => {
                    warnings.push(format!("{e}; skipped"));
                    continue;
                }
            };
            // A plugin's agents answer to `plugin:name`.
            match parse(&text, &path).map(|def| AgentDef {
                name: dir.name(&def.name),
                ..def
            }) {
                Ok(def)
                    if defs
                        .iter()
                        .any(|d| d.name == def.name && d.source != "built-in") => {}
                Ok(def) => {
                    defs.retain(|d| d.name != def.name);
                    defs.push(def);
                }
                Err(e) => warnings.push(format!("{}: {e}; skipped", path.display())),
            }
        }
    }
    (defs, warnings)
}

pub fn parse(text: &str, path: &Path) -> Result<AgentDef, String> {
    let rest = text
        .strip_prefix("---")
        .ok_or("no frontmatter (the file must start with a '---' line)")?;
    let end = rest
        .find("\n---")
        .ok_or("the frontmatter is not closed by a '---' line")?;
    let (header, body) = (&rest[..end], &rest[end + 4..]);
    let body = body.split_once('\n').map_or("", |(_, b)| b);
    let mut def = AgentDef {
        name: String::new(),
        description: String::new(),
        tools: None,
        disallowed: Vec::new(),
        model: None,
        max_turns: None,
        permission_mode: None,
        prompt: body.trim().to_string(),
        source: path.display().to_string(),
    };
    let lines: Vec<&str> = header.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, mut value) = (key.trim(), value.trim().to_string());
        // A YAML list on the following lines: `- Read`.
        if value.is_empty() {
            let mut items = Vec::new();
            while i < lines.len() && lines[i].trim_start().starts_with("- ") {
                items.push(lines[i].trim_start()[2..].trim().to_string());
                i += 1;
            }
            value = items.join(",");
        }
        let value = unquote(&value);
        match key {
            "name" => def.name = value,
            "description" => def.description = value,
            "tools" => def.tools = Some(list(&value)),
            "disallowedTools" => def.disallowed = list(&value),
            "model" => def.model = Some(value),
            "maxTurns" => {
                def.max_turns = Some(
                    value
                        .parse()
                        .map_err(|_| format!("maxTurns '{value}' is not a number"))?,
                )
            }
            "permissionMode" => {
                def.permission_mode = Some(
                    Mode::parse(&value)
                        .ok_or_else(|| format!("unknown permissionMode '{value}'"))?,
                )
            }
            _ => {}
        }
    }
    if def.name.is_empty() {
        return Err("no name in the frontmatter".into());
    }
    if !def
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "name '{}' may only hold letters, digits, '-' and '_'",
            def.name
        ));
    }
    Ok(def)
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    let inner = v
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')));
    inner.unwrap_or(v).to_string()
}

/// `Read, Grep` or `[Read, Grep]`.
fn list(v: &str) -> Vec<String> {
    v.trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| unquote(s.trim()))
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_fields_and_lists() {
        let text = "---\nname: reviewer\ndescription: \"Reviews diffs\"\ntools: Read, Grep\n\
                    disallowedTools:\n  - Bash\n  - Write\nmodel: claude-haiku-4-5\nmaxTurns: 7\n\
                    permissionMode: plan\n---\nYou review code.\n";
        let d = parse(text, Path::new("r.md")).unwrap();
        assert_eq!(d.name, "reviewer");
        assert_eq!(d.description, "Reviews diffs");
        assert_eq!(
            d.tools.as_deref(),
            Some(&["Read".to_string(), "Grep".to_string()][..])
        );
        assert_eq!(d.disallowed, ["Bash", "Write"]);
        assert_eq!(d.max_turns, Some(7));
        assert_eq!(d.permission_mode, Some(Mode::Plan));
        assert_eq!(d.prompt, "You review code.");
        assert!(
            parse("no header", Path::new("x.md"))
                .unwrap_err()
                .contains("frontmatter")
        );
        assert!(parse("---\nname: a b\n---\n", Path::new("x.md")).is_err());
        assert!(parse("---\nname: x\nmaxTurns: many\n---\n", Path::new("x.md")).is_err());
    }
}
