//! Read: a file as numbered lines, a window at a time.

use std::io::{BufRead, BufReader, Read as _};

use super::{LocalFuture, Tool, ToolContext, ToolOutput, cut_str as cut, opt_usize};
use crate::agent::pipeline::Permit;
use crate::json::{Value, parse};

pub struct Read;

pub const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE: usize = 2000;

impl Tool for Read {
    fn name(&self) -> &'static str {
        "Read"
    }
    fn description(&self) -> &'static str {
        "Read a text file from the local filesystem. Returns lines numbered from 1 \
         (`cat -n` style). By default up to 2000 lines from the start; pass `offset` (the \
         first line number to show) and `limit` to page through long files. Lines longer \
         than 2000 characters are cut. Binary files are refused. You must Read a file \
         before you Edit or overwrite it."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["file_path"],"properties":{
            "file_path":{"type":"string","description":"Absolute path of the file (relative paths are taken from the working directory)"},
            "offset":{"type":"integer","description":"Line number to start at (1-based)"},
            "limit":{"type":"integer","description":"How many lines to read"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Read
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = ctx.resolve(input.str_field("file_path").unwrap_or(""));
            let offset = opt_usize(&input, "offset").unwrap_or(1).max(1);
            let limit = opt_usize(&input, "limit").unwrap_or(DEFAULT_LIMIT).max(1);
            let shown = ctx.display(&path);
            let path2 = path.clone();
            let result = smol::unblock(move || read_window(&path2, offset, limit)).await;
            match result {
                Ok(text) => {
                    ctx.files.borrow_mut().record(&path);
                    ToolOutput::ok(text)
                }
                Err(e) => ToolOutput::error(format!("Cannot read {shown}: {e}")),
            }
        })
    }
}

fn read_window(path: &std::path::Path, offset: usize, limit: usize) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(describe_io)?;
    if meta.is_dir() {
        return Err("it is a directory; use Glob or Bash `ls` to list it".into());
    }
    let mut file = std::fs::File::open(path).map_err(describe_io)?;
    let mut head = vec![0u8; 8192];
    let n = read_full(&mut file, &mut head).map_err(describe_io)?;
    head.truncate(n);
    if super::files::looks_binary(&head) {
        return Err("it is a binary file and cannot be shown as text".into());
    }
    // Judged by what was read, not by the size: pipes and /proc files
    // report a size of zero.
    if head.is_empty() {
        return Ok("(the file exists but is empty)".into());
    }
    let reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let mut out = String::new();
    let mut shown = 0;
    let mut total = 0;
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(describe_io)?;
        total = i + 1;
        if total < offset {
            continue;
        }
        if shown == limit {
            // Keep counting so the note can say how long the file is.
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let body = cut(text, MAX_LINE);
        out.push_str(&format!("{:>6}\t{}", total, body));
        if body.len() < text.len() {
            out.push_str("… [line truncated]");
        }
        out.push('\n');
        shown += 1;
    }
    if shown == 0 {
        return Ok(format!(
            "(no lines at offset {offset}: the file has {total} lines)"
        ));
    }
    let last = offset + shown - 1;
    if last < total {
        out.push_str(&format!(
            "\n(showing lines {offset}-{last} of {total}; use offset {} to continue)\n",
            last + 1
        ));
    }
    Ok(out)
}

fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

pub fn describe_io(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::testing::{context, run};

    #[test]
    fn numbers_lines_and_pages() {
        let (ctx, dir) = context();
        let body: String = (1..=5).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.join("f.txt"), body).unwrap();
        let out = run(
            &Read,
            &ctx,
            obj! { "file_path" => "f.txt", "offset" => 2i64, "limit" => 2i64 },
        );
        assert!(!out.is_error);
        assert!(
            out.content.starts_with("     2\tline 2\n     3\tline 3\n"),
            "{}",
            out.content
        );
        assert!(out.content.contains("showing lines 2-3 of 5; use offset 4"));
    }

    #[test]
    fn refuses_binary_and_missing_and_dirs() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "b.bin" });
        assert!(out.is_error && out.content.contains("binary"));
        let out = run(&Read, &ctx, obj! { "file_path" => "nope" });
        assert!(out.is_error && out.content.contains("no such file"));
        let out = run(&Read, &ctx, obj! { "file_path" => "." });
        assert!(out.is_error && out.content.contains("directory"));
    }

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("l.txt"), "é".repeat(3000)).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "l.txt" });
        assert!(out.content.contains("[line truncated]"));
        assert!(out.content.len() < 2100);
    }
}
