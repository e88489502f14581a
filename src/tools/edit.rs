//! Edit: replace an exact string in a file the model has read.

use super::{
    Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput, files::write_atomically,
};
use crate::json::{Value, parse};

pub struct Edit;

impl Tool for Edit {
    fn name(&self) -> &str {
        "Edit"
    }
    fn description(&self) -> &str {
        "Replace `old_string` with `new_string` in a file. The file must have been Read \
         in this session and be unchanged since. `old_string` must match exactly \
         (including indentation) and be unique in the file unless `replace_all` is true; \
         include surrounding lines to make it unique. An empty `old_string` creates a \
         new file with `new_string` as its content."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["file_path","old_string","new_string"],"properties":{
            "file_path":{"type":"string","description":"Absolute path of the file to change"},
            "old_string":{"type":"string","description":"The exact text to replace"},
            "new_string":{"type":"string","description":"The text to put in its place"},
            "replace_all":{"type":"boolean","description":"Replace every occurrence (default false)"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Edit
    }
    fn is_read_only(&self, _: &Value) -> bool {
        false
    }
    fn paths(&self, input: &Value) -> Vec<PathUse> {
        vec![PathUse::new(
            Access::Write,
            input.str_field("file_path").unwrap_or(""),
        )]
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let old = input.str_field("old_string").unwrap_or("");
        let new = input.str_field("new_string").unwrap_or("");
        if old == new {
            return Err("old_string and new_string are identical; nothing to change".into());
        }
        let path = ctx.resolve(input.str_field("file_path").unwrap_or(""));
        let shown = ctx.display(&path);
        if old.is_empty() {
            if path.exists() {
                return Err(format!(
                    "{shown} already exists; an empty old_string only creates new files"
                ));
            }
            return Ok(());
        }
        if !path.exists() {
            return Err(format!("{shown} does not exist"));
        }
        ctx.files.borrow().check_fresh(&path, &shown)
    }
    fn native_timeout(&self, _: &Value) -> Option<std::time::Duration> {
        Some(super::FILE_TOOL_TIMEOUT)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match permit.target() {
                Ok(p) => p.to_path_buf(),
                Err(e) => return ToolOutput::error(e),
            };
            let shown = ctx.display(&path);
            let old = input.str_field("old_string").unwrap_or("").to_string();
            let new = input.str_field("new_string").unwrap_or("").to_string();
            let all = input
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let p = path.clone();
            let result = smol::unblock(move || apply(&p, &old, &new, all)).await;
            match result {
                Ok(Applied { count, first_line }) => {
                    ctx.files.borrow_mut().record(&path);
                    let what = if count == 1 {
                        "1 replacement".to_string()
                    } else {
                        format!("{count} replacements")
                    };
                    ToolOutput::ok(format!(
                        "Edited {shown}: {what}, first at line {first_line}"
                    ))
                }
                Err(e) => ToolOutput::error(format!("Cannot edit {shown}: {e}")),
            }
        })
    }
}

struct Applied {
    count: usize,
    first_line: usize,
}

fn apply(path: &std::path::Path, old: &str, new: &str, all: bool) -> Result<Applied, String> {
    if old.is_empty() {
        write_atomically(path, new.as_bytes()).map_err(super::read::describe_io)?;
        return Ok(Applied {
            count: 1,
            first_line: 1,
        });
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut super::read::open_regular(path)?, &mut bytes)
        .map_err(super::read::describe_io)?;
    let text = String::from_utf8(bytes).map_err(|_| "the file is not UTF-8 text".to_string())?;
    let count = text.matches(old).count();
    if count == 0 {
        return Err(
            "old_string was not found in the file (it must match exactly, whitespace included)"
                .into(),
        );
    }
    if count > 1 && !all {
        return Err(format!(
            "old_string occurs {count} times; add surrounding lines to make it unique, or set replace_all"
        ));
    }
    let first = text.find(old).unwrap_or(0);
    let first_line = text[..first].matches('\n').count() + 1;
    let updated = if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    write_atomically(path, updated.as_bytes()).map_err(super::read::describe_io)?;
    Ok(Applied { count, first_line })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::read::Read;
    use crate::tools::testing::{context, run};

    #[test]
    fn requires_read_unique_match_and_fresh_file() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("a.rs"), "let x = 1;\nlet y = 1;\n").unwrap();
        let edit = |old: &str, new: &str, all: bool| {
            run(
                &Edit,
                &ctx,
                obj! { "file_path" => "a.rs", "old_string" => old, "new_string" => new, "replace_all" => all },
            )
        };
        assert!(
            edit("x = 1", "x = 2", false)
                .content
                .contains("has not been read")
        );
        run(&Read, &ctx, obj! { "file_path" => "a.rs" });
        assert!(edit("= 1", "= 2", false).content.contains("occurs 2 times"));
        assert!(edit("zzz", "q", false).content.contains("not found"));
        let ok = edit("let y = 1", "let y = 3", false);
        assert!(!ok.is_error, "{}", ok.content);
        assert!(ok.content.contains("line 2"));
        assert_eq!(
            std::fs::read_to_string(dir.join("a.rs")).unwrap(),
            "let x = 1;\nlet y = 3;\n"
        );
        // Changed behind our back: refused until read again.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("a.rs"), "let x = 1;\nlet y = 4;\nmore\n").unwrap();
        assert!(
            edit("x = 1", "x = 5", false)
                .content
                .contains("modified since")
        );
        run(&Read, &ctx, obj! { "file_path" => "a.rs" });
        assert!(!edit("1", "9", true).is_error);
        assert_eq!(
            std::fs::read_to_string(dir.join("a.rs")).unwrap(),
            "let x = 9;\nlet y = 4;\nmore\n"
        );
    }

    /// A file touched (a formatter that changed nothing, `touch`, a
    /// checkout) is not "modified since read": its content is compared
    /// when its time differs. A same-length change is still caught.
    #[test]
    fn a_touched_file_is_not_modified_since_read() {
        let (ctx, dir) = context();
        let file = dir.join("t.txt");
        std::fs::write(&file, "alpha\nbeta\n").unwrap();
        run(&Read, &ctx, obj! { "file_path" => "t.txt" });
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let edit = |old: &str, new: &str| {
            run(
                &Edit,
                &ctx,
                obj! { "file_path" => "t.txt", "old_string" => old, "new_string" => new },
            )
        };
        let out = edit("beta", "gamma");
        assert!(!out.is_error, "{}", out.content);
        // Same length, other content, a new time: refused.
        std::fs::write(&file, "alpha\ndelta\n").unwrap();
        let later = later + std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let out = edit("alpha", "omega");
        assert!(
            out.is_error && out.content.contains("modified since"),
            "{}",
            out.content
        );
    }

    #[test]
    fn empty_old_string_creates_only_new_files() {
        let (ctx, dir) = context();
        let out = run(
            &Edit,
            &ctx,
            obj! { "file_path" => "n.txt", "old_string" => "", "new_string" => "hi" },
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(std::fs::read_to_string(dir.join("n.txt")).unwrap(), "hi");
        let out = run(
            &Edit,
            &ctx,
            obj! { "file_path" => "n.txt", "old_string" => "", "new_string" => "again" },
        );
        assert!(out.is_error && out.content.contains("already exists"));
    }
}
