//! Text files as numbered lines, a window at a time, in bounded memory.

use std::io::{BufRead, BufReader, Read as _};

use crate::tools::cut_str;

const MAX_LINE: usize = 2000;
/// Bytes kept of one line: `MAX_LINE` characters of up to four bytes.
const MAX_LINE_BYTES: usize = MAX_LINE * 4;

/// The window of numbered lines, from the file whose first bytes are
/// `head` (already read) and whose rest is still in `file`.
pub(super) fn read_window(
    head: Vec<u8>,
    file: std::fs::File,
    offset: usize,
    limit: usize,
) -> Result<String, String> {
    if crate::tools::files::looks_binary(&head) {
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
    .map_err(super::describe_io)?;
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
