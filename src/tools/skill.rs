//! Skill: loads one of the skills the system prompt lists (see
//! `config::skills`) — its instructions, and the names of the files in its
//! folder for the model to read when the instructions refer to them.

use std::borrow::Cow;

use super::input::{Fields, Schema};
use super::{Kind, LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::policy::Permit;

/// Files of a skill's folder named at most.
const MAX_FILES: usize = 50;

pub struct Skill;

impl Tool for Skill {
    fn name(&self) -> &str {
        "Skill"
    }
    fn description(&self) -> &str {
        "Load a skill from the list in the system prompt: its instructions for a kind \
         of task, and the files in its folder. Load it when the task matches the skill's \
         description, then follow it."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["skill"],"properties":{
            "skill":{"type":"string","description":"The skill's name"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // It reads folders the user or the project set up for this.
        true
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        find(ctx, Fields::of(input)?.text("skill")?).map(|_| ())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let skill = match Fields::of(&input)
                .and_then(|f| f.text("skill"))
                .and_then(|name| find(ctx, name))
            {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(e),
            };
            let body = match crate::config::skills::body(skill) {
                Ok(b) => b,
                Err(e) => return ToolOutput::error(format!("Cannot load {}: {e}", skill.name)),
            };
            let mut out = format!(
                "<skill name=\"{}\" folder=\"{}\">\n{body}\n</skill>",
                skill.name,
                skill.dir.display()
            );
            let files = files(&skill.dir);
            if !files.is_empty() {
                out.push_str(&format!(
                    "\nFiles in the skill's folder (Read them when the instructions refer to them): {}",
                    files.join(", ")
                ));
            }
            ToolOutput::ok(out)
        })
    }
}

fn find<'a>(ctx: &'a ToolContext, name: &str) -> Result<&'a crate::config::skills::Skill, String> {
    ctx.skills.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = ctx.skills.iter().map(|s| s.name.as_str()).collect();
        if names.is_empty() {
            format!("No skill {name:?}: none is installed")
        } else {
            format!("No skill {name:?}; there are {}", names.join(", "))
        }
    })
}

/// The folder's files other than SKILL.md, relative, two levels deep.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() && depth < 2 {
                stack.push((path, depth + 1));
            } else if !kind.is_dir()
                && path != dir.join("SKILL.md")
                && let Ok(rel) = path.strip_prefix(dir)
            {
                out.push(rel.display().to_string());
            }
            if out.len() >= MAX_FILES {
                out.push("…".into());
                return out;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::testing::{context, run};
    use std::rc::Rc;

    #[test]
    fn loads_the_body_and_names_the_files() {
        let (mut ctx, dir) = context();
        let root = dir.join(".tern/skills");
        std::fs::create_dir_all(root.join("release/scripts")).unwrap();
        std::fs::write(
            root.join("release/SKILL.md"),
            "---\nname: release\ndescription: cut a release\n---\nRun scripts/tag.sh.\n",
        )
        .unwrap();
        std::fs::write(root.join("release/scripts/tag.sh"), "git tag\n").unwrap();
        let (skills, _) = crate::config::skills::discover(&[(root, "project")]);
        ctx.skills = Rc::new(skills);
        let out = run(&Skill, &ctx, obj! { "skill" => "release" });
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("Run scripts/tag.sh."),
            "{}",
            out.content
        );
        assert!(out.content.contains("scripts/tag.sh"), "{}", out.content);
        assert!(!out.content.contains("---"), "{}", out.content);
        let out = run(&Skill, &ctx, obj! { "skill" => "nope" });
        assert!(
            out.is_error && out.content.contains("there are release"),
            "{}",
            out.content
        );
    }
}
