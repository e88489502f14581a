//! Read: a file as numbered lines, a window at a time.

use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;

use super::{
    Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput, cut_str, opt_usize,
};
use crate::json::{Value, parse};

pub struct Read;

pub const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE: usize = 2000;
/// Bytes kept of one line: `MAX_LINE` characters of up to four bytes.
const MAX_LINE_BYTES: usize = MAX_LINE * 4;

impl Tool for Read {
    fn name(&self) -> &str {
        "Read"
    }
    fn description(&self) -> &str {
        "Read a text file from the local filesystem. Returns lines numbered from 1 \
         (`cat -n` style). By default up to 2000 lines from the start; pass `offset` (the \
         first line number to show) and `limit` to page through long files. Lines longer \
         than 2000 characters are cut. Binary files, pipes and devices are refused. You \
         must Read a file before you Edit or overwrite it."
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
    fn paths(&self, input: &Value) -> Vec<PathUse> {
        vec![PathUse::new(
            Access::Read,
            input.str_field("file_path").unwrap_or(""),
        )]
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

/// Opens a resolved path for reading without following a symlink in its
/// last component and without blocking on a FIFO, and refuses anything
/// but a regular file: a pipe or a device would hang or never end.
pub fn open_regular(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => "it is a symbolic link that changed after it was checked".into(),
            _ => describe_io(e),
        })?;
    let t = file.metadata().map_err(describe_io)?.file_type();
    let refuse = |what: &str| {
        Err(format!(
            "it is {what}, not a regular file; Read only reads files"
        ))
    };
    if t.is_dir() {
        return Err("it is a directory; use Glob or Bash `ls` to list it".into());
    }
    if t.is_fifo() {
        return refuse("a named pipe (FIFO)");
    }
    if t.is_char_device() || t.is_block_device() {
        return refuse("a device");
    }
    if t.is_socket() {
        return refuse("a socket");
    }
    if !t.is_file() {
        return refuse("not a file");
    }
    // Regular files never block; reads go back to the ordinary mode.
    crate::sys::clear_nonblocking(&file).map_err(describe_io)?;
    Ok(file)
}

fn read_window(path: &Path, offset: usize, limit: usize) -> Result<String, String> {
    let mut file = open_regular(path)?;
    let mut head = vec![0u8; 8192];
    let n = read_full(&mut file, &mut head).map_err(describe_io)?;
    head.truncate(n);
    if super::files::looks_binary(&head) {
        return Err("it is a binary file and cannot be shown as text".into());
    }
    // Judged by what was read, not by the size: /proc files report a
    // size of zero.
    if head.is_empty() {
        return Ok("(the file exists but is empty)".into());
    }
    let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file));
    let mut out = String::new();
    let mut shown = 0;
    let total = each_line(reader, MAX_LINE_BYTES, |number, line, cut| {
        if number < offset || shown == limit {
            // Lines outside the window are counted, never kept.
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let body = cut_str(text, MAX_LINE);
        out.push_str(&format!("{number:>6}\t{body}"));
        if cut || body.len() < text.len() {
            out.push_str("… [line truncated]");
        }
        out.push('\n');
        shown += 1;
    })
    .map_err(describe_io)?;
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

/// Calls `line` for each line (1-based number, its first `keep` bytes,
/// whether more was cut) and returns how many lines there are. Memory
/// stays at the reader's buffer plus `keep` bytes, however long a line
/// is: a gigabyte on one line is skimmed, not loaded.
fn each_line(
    mut reader: impl BufRead,
    keep: usize,
    mut line: impl FnMut(usize, &[u8], bool),
) -> std::io::Result<usize> {
    let mut current: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut number = 0usize;
    let mut pending = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        let mut start = 0;
        while start < len {
            match memchr::memchr(b'\n', &chunk[start..]) {
                Some(i) => {
                    take(&mut current, &mut cut, &chunk[start..start + i], keep);
                    number += 1;
                    line(number, &current, cut);
                    current.clear();
                    cut = false;
                    pending = false;
                    start += i + 1;
                }
                None => {
                    take(&mut current, &mut cut, &chunk[start..], keep);
                    pending = true;
                    start = len;
                }
            }
        }
        reader.consume(len);
    }
    if pending {
        number += 1;
        line(number, &current, cut);
    }
    Ok(number)
}

/// Appends what fits of `bytes` to `current`; notes whether any was cut.
fn take(current: &mut Vec<u8>, cut: &mut bool, bytes: &[u8], keep: usize) {
    let room = keep.saturating_sub(current.len());
    if bytes.len() > room {
        *cut = true;
    }
    current.extend_from_slice(&bytes[..bytes.len().min(room)]);
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
