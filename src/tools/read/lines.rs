//! Text files as numbered lines, a window at a time, in bounded memory.

use std::io::{BufRead, BufReader, Read as _};

use crate::tools::cut_str;

const MAX_LINE: usize = 2000;
/// Bytes kept of one line: `MAX_LINE` characters of up to four bytes.
const MAX_LINE_BYTES: usize = MAX_LINE * 4;

/// Which lines to show, and how much of them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lines {
    /// The first line (1-based).
    pub offset: usize,
    pub limit: usize,
    /// The most bytes of output: Read's token cap. None with `allow_large`.
    pub max_bytes: Option<usize>,
}

/// The window of numbered lines, from the file whose first bytes are
/// `head` (already read) and whose rest is still in `rest`.
pub(super) fn read_window(
    head: Vec<u8>,
    rest: impl std::io::Read,
    want: Lines,
) -> Result<String, String> {
    use crate::tools::files::{Content, classify};
    let nuls = match classify(&head) {
        Content::Binary => {
            return Err("it is a binary file and cannot be shown as text".into());
        }
        Content::TextWithNul(n) => n,
        Content::Text => 0,
    };
    // Judged by what was read, not by the size: /proc files report a
    // size of zero.
    if head.is_empty() {
        return Ok("(the file exists but is empty)".into());
    }
    let Lines {
        offset,
        limit,
        max_bytes,
    } = want;
    let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(rest));
    let mut out = String::new();
    let mut shown = 0;
    // Set when the next line would pass the byte cap: no more are shown.
    let mut full = false;
    let total = each_line(reader, MAX_LINE_BYTES, |number, line, cut| {
        if number < offset || shown == limit || full {
            // Lines outside the window are counted, never kept.
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let body = cut_str(text, MAX_LINE);
        let mut entry = format!("{number:>6}\t{body}");
        if cut || body.len() < text.len() {
            entry.push_str("… [line truncated]");
        }
        entry.push('\n');
        if nuls > 0 {
            // A NUL in a tool result is a hazard for what carries it
            // (terminals, some servers); the note says what the sign is.
            entry = entry.replace('\0', "\u{2400}");
        }
        // At least one line, however small the cap.
        if shown > 0 && max_bytes.is_some_and(|max| out.len() + entry.len() > max) {
            full = true;
            return;
        }
        out.push_str(&entry);
        shown += 1;
    })
    .map_err(super::describe_io)?;
    if shown == 0 {
        return Ok(format!(
            "(no lines at offset {offset}: the file has {total} lines)"
        ));
    }
    let last = offset + shown - 1;
    if full {
        // A small model's window caps a result below Read's own cap: the
        // note says which limit was met.
        let what = match max_bytes {
            Some(max) if max < super::MAX_TEXT_BYTES => {
                "more than fits in one result in this model's context window".to_string()
            }
            _ => format!(
                "longer than the {} tokens Read returns at once",
                super::MAX_TOKENS
            ),
        };
        out.push_str(&format!(
            "\n(showing lines {offset}-{last} of {total}: the file is {what}. Use offset {} and \
             limit to read further, or Grep to find what you need)\n",
            last + 1
        ));
    } else if last < total {
        out.push_str(&format!(
            "\n(showing lines {offset}-{last} of {total}; use offset {} to continue)\n",
            last + 1
        ));
    }
    if nuls > 0 {
        out.push_str("\n(this file contains NUL bytes, shown as \u{2400}; it is otherwise text)\n");
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
