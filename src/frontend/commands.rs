//! Slash commands of line mode: the built-in ones and the user's own,
//! Markdown files in `.tern/commands/` or `.claude/commands/` (project)
//! and `~/.config/tern/commands/` or `~/.claude/commands/` (user), as the
//! configuration lists them (`Runtime::command_dirs`). A file
//! `review.md` becomes `/review`; `$ARGUMENTS` in it is replaced by what
//! follows the command.

use crate::config::Folder;
use crate::json::Value;

pub const BUILT_IN: &[(&str, &str)] = &[
    ("/help", "this list"),
    ("/clear", "start a fresh conversation"),
    (
        "/compact [instructions]",
        "summarise the conversation to free context",
    ),
    ("/model [name]", "show or switch the model"),
    ("/cost", "tokens and estimated cost so far"),
    ("/permissions", "the permission mode and rules in force"),
    (
        "/mode [name]",
        "show or switch the permission mode (default, acceptEdits, plan, …)",
    ),
    ("/plan", "enter plan mode: read and plan, change nothing"),
    (
        "/resume [id]",
        "list sessions, or load one into this conversation",
    ),
    ("/agents", "the sub-agents available"),
    ("/bashes", "background shells and how they are doing"),
    (
        "/voice",
        "speak: the transcript goes to the prompt, for you to edit and send",
    ),
    ("/exit", "leave (Ctrl-D works too)"),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Custom {
    pub name: String,
    pub description: String,
    pub body: String,
}

/// What a typed line means.
#[derive(Debug, PartialEq)]
pub enum Command {
    Help,
    Clear,
    Compact(String),
    Model(Option<String>),
    Cost,
    Permissions,
    Mode(Option<String>),
    Plan,
    Resume(Option<String>),
    Agents,
    Bashes,
    Voice,
    Exit,
    /// A custom command, expanded into the prompt to send.
    Prompt(String),
    Unknown(String),
}

/// Custom commands, earlier directories winning over later ones.
pub fn load(dirs: &[Folder]) -> Vec<Custom> {
    let mut out: Vec<Custom> = Vec::new();
    for dir in dirs {
        for path in dir.files() {
            let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let name = dir.name(name);
            if out.iter().any(|c| c.name == name) {
                continue;
            }
            // A link out of the folder, a FIFO, a huge file: left out.
            let Ok(text) = crate::config::read_inside(&dir.root, &path) else {
                continue;
            };
            let (description, body) = split_frontmatter(&text);
            out.push(Custom {
                name,
                description,
                body,
            });
        }
    }
    out
}

fn split_frontmatter(text: &str) -> (String, String) {
    if let Some(rest) = text.strip_prefix("---")
        && let Some(end) = rest.find("\n---")
    {
        let description = rest[..end]
            .lines()
            .find_map(|l| l.trim().strip_prefix("description:"))
            .map(|d| d.trim().trim_matches('"').to_string())
            .unwrap_or_default();
        let body = rest[end + 4..]
            .split_once('\n')
            .map_or("", |(_, b)| b)
            .trim()
            .to_string();
        return (description, body);
    }
    (String::new(), text.trim().to_string())
}

/// A prompt that invokes a custom command (`/name args`, a plugin's
/// `/plugin:name`) as the text it stands for; `None` for any other
/// prompt. `-p` and the SDK's prompts take commands too, as Claude Code's
/// do.
pub fn expand(prompt: &str, custom: &[Custom]) -> Option<String> {
    match parse(prompt, custom) {
        Some(Command::Prompt(text)) => Some(text),
        _ => None,
    }
}

/// A prompt's content (text, or blocks whose only text is a command) with
/// a custom command expanded. `custom` reads the command folders: called
/// only for a prompt that is a command line.
pub fn expand_content(content: Value, custom: impl FnOnce() -> Vec<Custom>) -> Value {
    // The SDK sends `[{"type": "text", "text": "/name args"}]` too; a
    // command is the only block, as at a prompt.
    let line = match &content {
        Value::String(s) => Some(s.as_str()),
        Value::Array(blocks) => match blocks.as_slice() {
            [block] if block.str_field("type") == Some("text") => block.str_field("text"),
            _ => None,
        },
        _ => None,
    };
    let Some(text) = line
        .filter(|l| l.trim_start().starts_with('/'))
        .and_then(|l| expand(l, &custom()))
    else {
        return content;
    };
    match content {
        Value::Array(mut blocks) => {
            if let Some(m) = blocks.first_mut().and_then(Value::as_object_mut) {
                m.insert("text", text);
            }
            Value::Array(blocks)
        }
        _ => Value::from(text),
    }
}

pub fn parse(line: &str, custom: &[Custom]) -> Option<Command> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    let opt = || Some(args.to_string()).filter(|a| !a.is_empty());
    Some(match name {
        "help" => Command::Help,
        "clear" => Command::Clear,
        "compact" => Command::Compact(args.to_string()),
        "model" => Command::Model(opt()),
        "cost" => Command::Cost,
        "permissions" => Command::Permissions,
        "mode" => Command::Mode(opt()),
        "plan" => Command::Plan,
        "resume" => Command::Resume(opt()),
        "agents" => Command::Agents,
        "bashes" => Command::Bashes,
        "voice" => Command::Voice,
        "exit" | "quit" => Command::Exit,
        // An MCP server's prompt: the agent asks the server for it.
        other if other.starts_with("mcp__") => Command::Prompt(line.to_string()),
        other => match custom.iter().find(|c| c.name == other) {
            Some(c) => Command::Prompt(if c.body.contains("$ARGUMENTS") {
                c.body.replace("$ARGUMENTS", args)
            } else if args.is_empty() {
                c.body.clone()
            } else {
                format!("{}\n\n{args}", c.body)
            }),
            None => Command::Unknown(other.to_string()),
        },
    })
}

/// `/help`: the built-in commands, the user's, and the MCP servers'
/// prompts (`extra`, as (name, description)).
pub fn help(custom: &[Custom], extra: &[(String, String)]) -> String {
    let mut out = String::from("Commands:\n");
    for (name, what) in BUILT_IN {
        out.push_str(&format!("  {name:<26} {what}\n"));
    }
    for c in custom {
        out.push_str(&format!("  /{:<25} {}\n", c.name, c.description));
    }
    for (name, what) in extra {
        out.push_str(&format!("  /{name:<25} {what}\n"));
    }
    out.push_str("Type while tern works to queue a message; Ctrl-C interrupts the turn, twice at an empty prompt exits.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_that_is_a_command_is_expanded_as_text_or_as_one_block() {
        let custom = vec![Custom {
            name: "p:hello".into(),
            description: String::new(),
            body: "Greet $ARGUMENTS.".into(),
        }];
        let text = |v: &Value| v.to_json();
        assert_eq!(
            text(&expand_content(Value::from("/p:hello you"), || custom.clone())),
            "\"Greet you.\""
        );
        let one = crate::json::parse(r#"[{"type":"text","text":"/p:hello all"}]"#).unwrap();
        assert!(text(&expand_content(one, || custom.clone())).contains("Greet all."));
        // Not a command, a second block, an unknown name: as they were.
        for kept in [
            r#""/etc/hosts is wrong""#,
            r#"[{"type":"text","text":"/p:hello x"},{"type":"text","text":"more"}]"#,
            r#"[{"type":"text","text":"/p:other"}]"#,
        ] {
            let v = crate::json::parse(kept).unwrap();
            assert_eq!(
                text(&expand_content(v.clone(), || custom.clone())),
                text(&v),
                "{kept}"
            );
        }
    }

    #[test]
    fn builtins_and_custom_commands_with_arguments() {
        let custom = vec![Custom {
            name: "review".into(),
            description: "review a file".into(),
            body: "Review $ARGUMENTS for bugs.".into(),
        }];
        assert_eq!(parse("hello", &custom), None);
        assert_eq!(parse("/exit", &custom), Some(Command::Exit));
        assert_eq!(parse("/model", &custom), Some(Command::Model(None)));
        assert_eq!(
            parse("/model claude-haiku-4-5", &custom),
            Some(Command::Model(Some("claude-haiku-4-5".into())))
        );
        assert_eq!(
            parse("/compact keep the API notes", &custom),
            Some(Command::Compact("keep the API notes".into()))
        );
        assert_eq!(
            parse("/review src/main.rs", &custom),
            Some(Command::Prompt("Review src/main.rs for bugs.".into()))
        );
        assert_eq!(
            parse("/nope", &custom),
            Some(Command::Unknown("nope".into()))
        );
        assert_eq!(
            parse(" /mcp__s__greet Ada ", &custom),
            Some(Command::Prompt("/mcp__s__greet Ada".into()))
        );
        let help = help(
            &custom,
            &[("mcp__s__greet".into(), "<name> say hello".into())],
        );
        assert!(help.contains("/mcp__s__greet") && help.contains("<name> say hello"));
        let (d, b) = split_frontmatter("---\ndescription: \"Fix it\"\n---\nDo $ARGUMENTS\n");
        assert_eq!((d.as_str(), b.as_str()), ("Fix it", "Do $ARGUMENTS"));
    }
}
