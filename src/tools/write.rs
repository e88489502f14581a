//! Write: create a file or replace one the model has read.

use std::borrow::Cow;

use super::input::{Fields, Schema};
use super::{Access, LocalFuture, Permit, Tool, ToolContext, ToolOutput, files::write_atomically};
use crate::json::Value;

pub struct Write;

/// A Write call's input.
struct Args<'a> {
    file_path: &'a str,
    content: &'a str,
}

impl<'a> Args<'a> {
    fn decode(input: &'a Value) -> Result<Args<'a>, String> {
        let f = Fields::of(input)?;
        Ok(Args {
            file_path: f.text("file_path")?,
            content: f.text("content")?,
        })
    }
}

impl Tool for Write {
    fn name(&self) -> &str {
        "Write"
    }
    fn description(&self) -> &str {
        "Write a file, creating parent directories as needed. Overwriting an existing \
         file is only allowed after you have Read it in this session and it has not \
         changed since. Prefer Edit for changes to existing files, and NotebookEdit for \
         existing Jupyter notebooks."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["file_path","content"],"properties":{
            "file_path":{"type":"string","description":"Absolute path of the file to write"},
            "content":{"type":"string","description":"The complete new content"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Edit
    }
    fn is_read_only(&self, _: &Value) -> bool {
        false
    }
    fn path_field(&self) -> Option<(Access, &'static str)> {
        Some((Access::Write, "file_path"))
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let path = ctx.resolve(Args::decode(input)?.file_path);
        if path.is_dir() {
            return Err(format!("{} is a directory", ctx.display(&path)));
        }
        if path.exists() {
            #[cfg(feature = "notebooks")]
            if super::edit::is_notebook(&path) {
                return Err(format!(
                    "{} is a Jupyter notebook; use the NotebookEdit tool to change its cells \
                     (Write only creates new notebooks)",
                    ctx.display(&path)
                ));
            }
            ctx.files.borrow().check_fresh(&path, &ctx.display(&path))?;
        }
        Ok(())
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
            let content = match Args::decode(&input) {
                Ok(a) => a.content.to_string(),
                Err(e) => return ToolOutput::error(e),
            };
            let existed = path.exists();
            let lines = content.lines().count();
            let sync = super::BufferSync::before(ctx, &path).await;
            let p = path.clone();
            match smol::unblock(move || write_atomically(&p, content.as_bytes())).await {
                Ok(()) => {
                    ctx.files.borrow_mut().record(&path);
                    if let Some(sync) = sync {
                        sync.after(&path).await;
                    }
                    let verb = if existed { "Updated" } else { "Created" };
                    ToolOutput::ok(format!("{verb} {} ({lines} lines)", ctx.display(&path)))
                }
                Err(e) => ToolOutput::error(format!(
                    "Cannot write {}: {}",
                    ctx.display(&path),
                    super::read::describe_io(e)
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::read::Read;
    use crate::tools::testing::{context, run};

    #[test]
    fn creates_new_but_refuses_unread_existing() {
        let (ctx, dir) = context();
        let out = run(
            &Write,
            &ctx,
            obj! { "file_path" => "sub/new.txt", "content" => "a\nb\n" },
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/new.txt")).unwrap(),
            "a\nb\n"
        );

        std::fs::write(dir.join("old.txt"), "x").unwrap();
        let out = run(
            &Write,
            &ctx,
            obj! { "file_path" => "old.txt", "content" => "y" },
        );
        assert!(out.is_error && out.content.contains("has not been read"));
        run(&Read, &ctx, obj! { "file_path" => "old.txt" });
        let out = run(
            &Write,
            &ctx,
            obj! { "file_path" => "old.txt", "content" => "y" },
        );
        assert!(!out.is_error);
        assert_eq!(std::fs::read_to_string(dir.join("old.txt")).unwrap(), "y");
    }

    /// An existing notebook is changed cell by cell with NotebookEdit;
    /// a new one may be written whole.
    #[cfg(feature = "notebooks")]
    #[test]
    fn an_existing_notebook_is_left_to_notebook_edit() {
        let (ctx, dir) = context();
        std::fs::write(
            dir.join("n.ipynb"),
            r#"{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":5}"#,
        )
        .unwrap();
        run(&Read, &ctx, obj! { "file_path" => "n.ipynb" });
        let out = run(
            &Write,
            &ctx,
            obj! { "file_path" => "n.ipynb", "content" => "{}" },
        );
        assert!(
            out.is_error && out.content.contains("NotebookEdit"),
            "{}",
            out.content
        );
        let out = run(
            &Write,
            &ctx,
            obj! { "file_path" => "new.ipynb", "content" => "{}" },
        );
        assert!(!out.is_error, "{}", out.content);
    }
}
