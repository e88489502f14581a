//! Permission decisions, in their minimal form: a mode and tool-name
//! allow/deny rules. Every caller asks `decide`; nobody else says yes.
//!
//! Rules are `Tool` or `Tool(spec)`. For Bash the spec is a command
//! (`Bash(git status)`) or a prefix (`Bash(npm run:*)`); other specs are
//! matched literally against the tool's main argument. Deny beats allow.
//! The layered engine with ask rules, settings files and Bash AST checks
//! replaces this in the permission-pipeline work.

pub mod shell;

use std::fmt;

use crate::json::Value;
use crate::tools::{Kind, Tool};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Default,
    AcceptEdits,
    BypassPermissions,
    Plan,
    DontAsk,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "default" | "manual" => Mode::Default,
            "acceptEdits" => Mode::AcceptEdits,
            "bypassPermissions" => Mode::BypassPermissions,
            "plan" => Mode::Plan,
            "dontAsk" => Mode::DontAsk,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::BypassPermissions => "bypassPermissions",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub tool: String,
    pub spec: Option<String>,
}

impl Rule {
    pub fn parse(text: &str) -> Rule {
        let text = text.trim();
        match text.split_once('(') {
            Some((tool, rest)) if rest.ends_with(')') => Rule {
                tool: tool.trim().to_string(),
                spec: Some(rest[..rest.len() - 1].to_string()),
            },
            _ => Rule {
                tool: text.to_string(),
                spec: None,
            },
        }
    }

    fn matches(&self, tool: &str, input: &Value) -> bool {
        if self.tool != tool {
            return false;
        }
        let Some(spec) = &self.spec else {
            return true;
        };
        let subject = match tool {
            "Bash" => input.str_field("command"),
            "Read" | "Write" | "Edit" => input.str_field("file_path"),
            "Glob" | "Grep" => input.str_field("pattern"),
            _ => None,
        };
        let Some(subject) = subject.map(str::trim) else {
            return false;
        };
        match spec.strip_suffix(":*") {
            Some(prefix) => {
                subject == prefix
                    || subject
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with(' '))
                        && !has_chaining(subject)
            }
            None => subject == spec,
        }
    }
}

/// A prefix rule must not let `git status; rm -rf ~` through.
fn has_chaining(command: &str) -> bool {
    command.contains([';', '&', '|', '\n', '`', '$', '>', '<'])
}

/// Splits a tool list the way the CLI accepts it: commas and spaces,
/// except inside parentheses (`Bash(git log:*), Read`).
pub fn split_tool_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' | ' ' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Needs a person's yes; the reason says what is being asked.
    Ask(String),
    Deny(String),
}

pub struct Policy {
    pub mode: Mode,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl Policy {
    pub fn decide(&self, tool: &dyn Tool, input: &Value) -> Decision {
        let name = tool.name();
        if let Some(rule) = self.deny.iter().find(|r| r.matches(name, input)) {
            return Decision::Deny(format!(
                "Permission to use {name} was denied by the rule {}",
                show_rule(rule)
            ));
        }
        if self.mode == Mode::BypassPermissions {
            return Decision::Allow;
        }
        let read_only = tool.is_read_only(input);
        if self.mode == Mode::Plan && !read_only {
            return Decision::Deny(format!(
                "{name} would change things, and plan mode only allows reading. Finish the plan first."
            ));
        }
        if self.allow.iter().any(|r| r.matches(name, input)) {
            return Decision::Allow;
        }
        if read_only {
            return Decision::Allow;
        }
        if self.mode == Mode::AcceptEdits && tool.kind() == Kind::Edit {
            return Decision::Allow;
        }
        let what = match (
            name,
            input.str_field("command"),
            input.str_field("file_path"),
        ) {
            ("Bash", Some(cmd), _) => format!("run `{}`", first_line(cmd)),
            (_, _, Some(path)) => format!("use {name} on {path}"),
            _ => format!("use {name}"),
        };
        if self.mode == Mode::DontAsk {
            return Decision::Deny(format!(
                "Permission to {what} was not granted in advance, and dontAsk mode denies everything else."
            ));
        }
        Decision::Ask(format!("Allow tern to {what}?"))
    }
}

fn show_rule(rule: &Rule) -> String {
    match &rule.spec {
        Some(s) => format!("{}({s})", rule.tool),
        None => rule.tool.clone(),
    }
}

fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    crate::tools::cut_str(line, 200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::Registry;

    fn policy(mode: Mode, allow: &[&str], deny: &[&str]) -> Policy {
        Policy {
            mode,
            allow: allow.iter().map(|r| Rule::parse(r)).collect(),
            deny: deny.iter().map(|r| Rule::parse(r)).collect(),
        }
    }

    #[test]
    fn modes_and_rules() {
        let reg = Registry::builtin();
        let bash = reg.get("Bash").unwrap();
        let edit = reg.get("Edit").unwrap();
        let read = reg.get("Read").unwrap();
        let rm = obj! { "command" => "rm -rf build" };
        let ls = obj! { "command" => "ls" };
        let file = obj! { "file_path" => "a", "old_string" => "x", "new_string" => "y" };

        let p = policy(Mode::Default, &[], &[]);
        assert!(matches!(p.decide(&*bash, &rm), Decision::Ask(_)));
        assert_eq!(p.decide(&*bash, &ls), Decision::Allow);
        assert!(matches!(p.decide(&*edit, &file), Decision::Ask(_)));
        assert_eq!(
            p.decide(&*read, &obj! { "file_path" => "a" }),
            Decision::Allow
        );

        assert_eq!(
            policy(Mode::AcceptEdits, &[], &[]).decide(&*edit, &file),
            Decision::Allow
        );
        assert!(matches!(
            policy(Mode::AcceptEdits, &[], &[]).decide(&*bash, &rm),
            Decision::Ask(_)
        ));
        assert_eq!(
            policy(Mode::BypassPermissions, &[], &[]).decide(&*bash, &rm),
            Decision::Allow
        );
        assert!(matches!(
            policy(Mode::BypassPermissions, &[], &["Bash"]).decide(&*bash, &ls),
            Decision::Deny(_)
        ));
        assert!(matches!(
            policy(Mode::Plan, &["Edit"], &[]).decide(&*edit, &file),
            Decision::Deny(_)
        ));
        assert!(matches!(
            policy(Mode::DontAsk, &[], &[]).decide(&*bash, &rm),
            Decision::Deny(_)
        ));
        assert_eq!(
            policy(Mode::DontAsk, &["Bash(rm:*)"], &[]).decide(&*bash, &rm),
            Decision::Allow
        );
    }

    #[test]
    fn bash_prefix_rules_do_not_cover_chains() {
        let reg = Registry::builtin();
        let bash = reg.get("Bash").unwrap();
        let p = policy(Mode::Default, &["Bash(git commit:*)"], &[]);
        assert_eq!(
            p.decide(&*bash, &obj! { "command" => "git commit -m x" }),
            Decision::Allow
        );
        assert!(matches!(
            p.decide(&*bash, &obj! { "command" => "git commit -m x; rm -rf /" }),
            Decision::Ask(_)
        ));
        assert!(matches!(
            p.decide(&*bash, &obj! { "command" => "git committer" }),
            Decision::Ask(_)
        ));
    }

    #[test]
    fn tool_lists_split_outside_parentheses() {
        assert_eq!(
            split_tool_list("Read, Bash(git log:*)  Edit,Bash(npm run test)"),
            ["Read", "Bash(git log:*)", "Edit", "Bash(npm run test)"]
        );
    }
}
