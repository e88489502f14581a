//! What a permission question is about, shown in full before the person
//! answers: the change an Edit or Write would make, as a diff with the
//! file's name and line numbers, and a Bash command whole, every line of
//! it. The model writes these inputs, so nothing is cut silently and
//! control characters are shown, not obeyed: a carriage return or an
//! escape sequence must not be able to hide part of what is approved.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::json::Value;

/// At most this many lines of a diff; the rest is counted. A command is
/// never cut: what runs is what the person reads.
const MAX_LINES: usize = 80;
/// Larger files are not diffed (a line count is shown instead).
const MAX_FILE: u64 = 1 << 20;
/// Line pairs beyond which the diff table would be too big to build.
const MAX_CELLS: usize = 4_000_000;
/// Unchanged lines shown around a change.
const CONTEXT: usize = 2;

/// The preview's lines (no trailing newlines), plain text; `paint` adds
/// colour to removed and added lines when the caller wants it.
pub(crate) fn preview(tool: &str, input: &Value, cwd: &Path) -> Vec<Line> {
    let path = |v: &Value| v.str_field("file_path").map(|p| resolve(cwd, p));
    let mut out = match tool {
        "Bash" => bash(input),
        "Edit" => match path(input) {
            Some(p) => edit(&p, input),
            None => Vec::new(),
        },
        "Write" => match path(input) {
            Some(p) => write(&p, input.str_field("content").unwrap_or("")),
            None => Vec::new(),
        },
        #[cfg(feature = "notebooks")]
        "NotebookEdit" => match input.str_field("notebook_path") {
            Some(p) => notebook(&resolve(cwd, p), input),
            None => Vec::new(),
        },
        _ => Vec::new(),
    };
    if tool != "Bash" && out.len() > MAX_LINES {
        let more = out.len() - MAX_LINES;
        out.truncate(MAX_LINES);
        out.push(Line::Note(format!("… {more} more lines")));
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Line {
    /// A heading or remark.
    Note(String),
    /// An unchanged line, with its number.
    Same(usize, String),
    Removed(usize, String),
    Added(usize, String),
}

impl Line {
    pub(crate) fn render(&self, color: bool) -> String {
        let paint = |code: &str, s: String| {
            if color {
                format!("\x1b[{code}m{s}\x1b[0m")
            } else {
                s
            }
        };
        match self {
            Line::Note(s) => format!("  {s}"),
            Line::Same(n, s) => format!("  {n:>5}   {s}"),
            Line::Removed(n, s) => paint("31", format!("  {n:>5} - {s}")),
            Line::Added(n, s) => paint("32", format!("  {n:>5} + {s}")),
        }
    }
}

fn resolve(cwd: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// Control characters (and bidirectional overrides) made visible.
pub(crate) fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

fn bash(input: &Value) -> Vec<Line> {
    let Some(command) = input.str_field("command") else {
        return Vec::new();
    };
    let lines: Vec<&str> = command.split('\n').collect();
    let mut out = vec![Line::Note(if lines.len() > 1 {
        format!("The whole command ({} lines):", lines.len())
    } else {
        "The whole command:".to_string()
    })];
    out.extend(
        lines
            .iter()
            .map(|l| Line::Note(format!("  {}", visible(l)))),
    );
    if input
        .get("dangerouslyDisableSandbox")
        .and_then(Value::as_bool)
        == Some(true)
    {
        out.push(Line::Note("It asks to run OUTSIDE the sandbox.".into()));
    }
    out
}

/// The file's text when it is a regular file small enough to show; never
/// blocks (a FIFO put where the file was is not opened for reading).
fn read_small(path: &Path) -> Result<Option<String>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_FILE {
        return Err(format!("it is too large to diff ({} bytes)", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

fn edit(path: &Path, input: &Value) -> Vec<Line> {
    let old = input.str_field("old_string").unwrap_or("");
    let new = input.str_field("new_string").unwrap_or("");
    let all = input.get("replace_all").and_then(Value::as_bool) == Some(true);
    let mut out = vec![Line::Note(format!(
        "Edit {}",
        visible(&path.display().to_string())
    ))];
    let text = match read_small(path) {
        Ok(Some(t)) => t,
        Ok(None) => {
            out.push(Line::Note(
                "(the file does not exist; the edit will fail)".into(),
            ));
            return out;
        }
        Err(why) => {
            out.push(Line::Note(format!("(no diff: {why})")));
            out.extend(plain_change(1, old, new));
            return out;
        }
    };
    // Found as Edit finds it (CRLF, typographic quotes).
    let Some((at, upto, replacement, count)) = crate::tools::edit_change(&text, old, new) else {
        out.push(Line::Note(
            "(old_string is not in the file; the edit will fail)".into(),
        ));
        out.extend(plain_change(1, old, new));
        return out;
    };
    if all && count > 1 {
        out.push(Line::Note(format!(
            "(all {count} occurrences; the first is shown)"
        )));
    }
    // Whole lines around the change, so the diff reads like the file.
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[upto..].find('\n').map_or(text.len(), |i| upto + i);
    let before = &text[start..end];
    let after = format!("{}{}{}", &text[start..at], replacement, &text[upto..end]);
    let first = text[..start].matches('\n').count() + 1;
    let lines: Vec<&str> = text.split('\n').collect();
    let ctx_from = (first - 1).saturating_sub(CONTEXT);
    for (i, l) in lines.iter().enumerate().take(first - 1).skip(ctx_from) {
        out.push(Line::Same(i + 1, visible(l)));
    }
    out.extend(diff_lines(first, before, &after));
    let last = first + before.split('\n').count() - 1;
    for (i, l) in lines.iter().enumerate().skip(last).take(CONTEXT) {
        out.push(Line::Same(i + 1, visible(l)));
    }
    out
}

fn write(path: &Path, content: &str) -> Vec<Line> {
    let name = visible(&path.display().to_string());
    match read_small(path) {
        Ok(None) => {
            let mut out = vec![Line::Note(format!("Create {name}"))];
            out.extend(
                content
                    .split('\n')
                    .enumerate()
                    .map(|(i, l)| Line::Added(i + 1, visible(l))),
            );
            out
        }
        Ok(Some(old)) if old == content => {
            vec![Line::Note(format!("Write {name} (no change)"))]
        }
        Ok(Some(old)) => {
            let mut out = vec![Line::Note(format!("Overwrite {name}"))];
            out.extend(hunks(&old, content));
            out
        }
        Err(why) => vec![
            Line::Note(format!("Overwrite {name}")),
            Line::Note(format!(
                "(no diff: {why}; {} new lines)",
                content.lines().count()
            )),
        ],
    }
}

/// Every old line removed, every new line added: for when no diff can be
/// made, so the person still sees both sides whole.
/// A notebook cell's change: which cell, how, and its source before
/// (when the notebook can be read) and after.
#[cfg(feature = "notebooks")]
fn notebook(path: &Path, input: &Value) -> Vec<Line> {
    let mode = input.str_field("edit_mode").unwrap_or("replace");
    let number = input.get("cell_number").and_then(Value::as_i64);
    let id = input.str_field("cell_id");
    let which = match (id, number) {
        (Some(id), _) => format!("the cell with id {}", visible(id)),
        (None, Some(n)) => format!("cell {n}"),
        (None, None) => "the start".to_string(),
    };
    let name = visible(&path.display().to_string());
    let heading = match mode {
        "insert" if id.is_some() => format!(
            "Insert a {} cell after {which} of {name}",
            input.str_field("cell_type").unwrap_or("code")
        ),
        "insert" => format!(
            "Insert a {} cell at {which} of {name}",
            input.str_field("cell_type").unwrap_or("code")
        ),
        "delete" => format!("Delete {which} of {name}"),
        _ => format!("Replace the source of {which} of {name}"),
    };
    let mut out = vec![Line::Note(heading)];
    let old = (mode != "insert")
        .then(|| read_small(path).ok().flatten())
        .flatten()
        .and_then(|text| crate::json::parse(&text).ok())
        .and_then(|nb| {
            let cells = nb.get("cells")?.as_array()?.clone();
            let cell = match (id, number) {
                (Some(id), _) => cells.into_iter().find(|c| c.str_field("id") == Some(id))?,
                (None, Some(n)) => cells.into_iter().nth(usize::try_from(n).ok()?)?,
                _ => return None,
            };
            Some(match cell.get("source") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                _ => String::new(),
            })
        });
    let new = input.str_field("new_source").unwrap_or("");
    match (mode, old) {
        ("delete", Some(old)) => out.extend(
            old.split('\n')
                .enumerate()
                .map(|(i, l)| Line::Removed(i + 1, visible(l))),
        ),
        ("delete", None) => {}
        (_, Some(old)) => out.extend(diff_lines(1, &old, new)),
        (_, None) => out.extend(
            new.split('\n')
                .enumerate()
                .map(|(i, l)| Line::Added(i + 1, visible(l))),
        ),
    }
    out
}

fn plain_change(first: usize, old: &str, new: &str) -> Vec<Line> {
    let mut out: Vec<Line> = old
        .split('\n')
        .enumerate()
        .map(|(i, l)| Line::Removed(first + i, visible(l)))
        .collect();
    out.extend(
        new.split('\n')
            .enumerate()
            .map(|(i, l)| Line::Added(first + i, visible(l))),
    );
    out
}

/// The changed region of an edit, line by line (no context of its own).
fn diff_lines(first: usize, old: &str, new: &str) -> Vec<Line> {
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    script(&a, &b)
        .into_iter()
        .map(|op| match op {
            Op::Same(i, _) => Line::Same(first + i, visible(a[i])),
            Op::Del(i) => Line::Removed(first + i, visible(a[i])),
            Op::Ins(j) => Line::Added(first + j, visible(b[j])),
        })
        .collect()
}

/// A whole-file diff in hunks with a little context.
fn hunks(old: &str, new: &str) -> Vec<Line> {
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    let ops = script(&a, &b);
    // Keep a Same line only near a change.
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(..)))
        .map(|(k, _)| k)
        .collect();
    let near = |k: usize| changed.iter().any(|&c| c.abs_diff(k) <= CONTEXT);
    let mut out = Vec::new();
    let mut gap = false;
    for (k, op) in ops.iter().enumerate() {
        match *op {
            Op::Same(i, _) if !near(k) => {
                gap = true;
                let _ = i;
            }
            Op::Same(i, _) => {
                if gap && !out.is_empty() {
                    out.push(Line::Note("…".into()));
                }
                gap = false;
                out.push(Line::Same(i + 1, visible(a[i])));
            }
            Op::Del(i) => {
                if gap && !out.is_empty() {
                    out.push(Line::Note("…".into()));
                }
                gap = false;
                out.push(Line::Removed(i + 1, visible(a[i])));
            }
            Op::Ins(j) => {
                if gap && !out.is_empty() {
                    out.push(Line::Note("…".into()));
                }
                gap = false;
                out.push(Line::Added(j + 1, visible(b[j])));
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// Old index, new index.
    Same(usize, usize),
    Del(usize),
    Ins(usize),
}

/// A shortest edit script by longest common subsequence over the lines
/// between the common head and tail. Quadratic, so bounded: past
/// MAX_CELLS the middle is shown as removed then added (still complete).
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops: Vec<Op> = (0..head).map(|i| Op::Same(i, i)).collect();
    if ma.len().saturating_mul(mb.len()) > MAX_CELLS {
        ops.extend((0..ma.len()).map(|i| Op::Del(head + i)));
        ops.extend((0..mb.len()).map(|j| Op::Ins(head + j)));
    } else {
        // lcs[i][j]: common length of ma[i..] and mb[j..].
        let w = mb.len() + 1;
        let mut lcs = vec![0u32; (ma.len() + 1) * w];
        for i in (0..ma.len()).rev() {
            for j in (0..mb.len()).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < ma.len() || j < mb.len() {
            if i < ma.len() && j < mb.len() && ma[i] == mb[j] {
                ops.push(Op::Same(head + i, head + j));
                i += 1;
                j += 1;
            } else if i < ma.len() && (j == mb.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])
            {
                // On a tie the removal comes first: a diff reads old, then new.
                ops.push(Op::Del(head + i));
                i += 1;
            } else {
                ops.push(Op::Ins(head + j));
                j += 1;
            }
        }
    }
    let (ta, tb) = (a.len() - tail, b.len() - tail);
    ops.extend((0..tail).map(|k| Op::Same(ta + k, tb + k)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    fn text(lines: &[Line]) -> String {
        lines
            .iter()
            .map(|l| l.render(false))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tern-preview-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_edit_shows_its_lines_with_numbers_and_context() {
        let d = scratch("edit");
        std::fs::write(d.join("f.rs"), "a\nb\nc\nfn old() {}\nd\ne\nf\n").unwrap();
        let input = obj! { "file_path" => "f.rs", "old_string" => "old", "new_string" => "new" };
        let t = text(&preview("Edit", &input, &d));
        assert!(t.contains("f.rs"), "{t}");
        assert!(t.contains("    4 - fn old() {}"), "{t}");
        assert!(t.contains("    4 + fn new() {}"), "{t}");
        let (removed, added) = (t.find("4 - fn old").unwrap(), t.find("4 + fn new").unwrap());
        assert!(removed < added, "the removed line comes first: {t}");
        assert!(t.contains("    3   c") && t.contains("    5   d"), "{t}");
        assert!(!t.contains("    1   a"), "only two lines of context: {t}");
    }

    #[cfg(feature = "notebooks")]
    #[test]
    fn a_notebook_edit_shows_the_cell_before_and_after() {
        let d = scratch("notebook");
        std::fs::write(
            d.join("n.ipynb"),
            r#"{"cells":[{"cell_type":"code","id":"a1","source":["x = 1\n","print(x)"]}]}"#,
        )
        .unwrap();
        let input = obj! { "notebook_path" => "n.ipynb", "cell_id" => "a1", "new_source" => "x = 2\nprint(x)" };
        let t = text(&preview("NotebookEdit", &input, &d));
        assert!(
            t.contains("Replace the source of the cell with id a1 of"),
            "{t}"
        );
        assert!(
            t.contains("    1 - x = 1") && t.contains("    1 + x = 2"),
            "{t}"
        );
        assert!(t.contains("    2   print(x)"), "{t}");
        let input = obj! { "notebook_path" => "n.ipynb", "edit_mode" => "insert", "cell_type" => "markdown", "new_source" => "# Hi\u{1b}[2J" };
        let t = text(&preview("NotebookEdit", &input, &d));
        assert!(t.contains("Insert a markdown cell at the start"), "{t}");
        assert!(
            t.contains("+ # Hi\\u{1b}[2J"),
            "escapes are shown, not obeyed: {t}"
        );
        let input =
            obj! { "notebook_path" => "n.ipynb", "cell_number" => 0i64, "edit_mode" => "delete" };
        let t = text(&preview("NotebookEdit", &input, &d));
        assert!(
            t.contains("Delete cell 0") && t.contains("- print(x)"),
            "{t}"
        );
    }

    /// The preview finds what Edit will change as Edit finds it: straight
    /// quotes against curly ones, LF against CRLF.
    #[test]
    fn an_edit_that_matches_as_claude_codes_does_is_previewed() {
        let d = scratch("loose");
        std::fs::write(d.join("p.md"), "a\nShe said \u{201c}no\u{201d}.\nb\n").unwrap();
        let input = obj! { "file_path" => "p.md", "old_string" => "said \"no\"", "new_string" => "said \"yes\"" };
        let t = text(&preview("Edit", &input, &d));
        assert!(!t.contains("not in the file"), "{t}");
        assert!(
            t.contains("    2 - She said \u{201c}no\u{201d}.")
                && t.contains("    2 + She said \u{201c}yes\u{201d}."),
            "{t}"
        );
        std::fs::write(d.join("w.txt"), "one\r\ntwo\r\n").unwrap();
        let input =
            obj! { "file_path" => "w.txt", "old_string" => "one\ntwo", "new_string" => "1\n2" };
        let t = text(&preview("Edit", &input, &d));
        assert!(!t.contains("not in the file"), "{t}");
        assert!(t.contains("    1 + 1"), "{t}");
    }

    #[test]
    fn an_edit_that_cannot_apply_still_shows_both_sides() {
        let d = scratch("miss");
        std::fs::write(d.join("f"), "x\n").unwrap();
        let input = obj! { "file_path" => "f", "old_string" => "gone", "new_string" => "rm -rf" };
        let t = text(&preview("Edit", &input, &d));
        assert!(
            t.contains("not in the file") && t.contains("+ rm -rf"),
            "{t}"
        );
    }

    #[test]
    fn a_write_over_a_file_is_a_diff_and_a_new_file_is_all_added() {
        let d = scratch("write");
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(d.join("w"), &old).unwrap();
        let new = old.replace("line 10\n", "line ten\n");
        let t = text(&preview(
            "Write",
            &obj! { "file_path" => "w", "content" => new },
            &d,
        ));
        assert!(
            t.contains("   10 - line 10") && t.contains("   10 + line ten"),
            "{t}"
        );
        assert!(!t.contains("line 2\n") && !t.contains("    2   "), "{t}");
        let t = text(&preview(
            "Write",
            &obj! { "file_path" => "n", "content" => "a\nb" },
            &d,
        ));
        assert!(t.contains("Create") && t.contains("    2 + b"), "{t}");
    }

    #[test]
    fn a_fifo_in_place_of_the_file_does_not_block() {
        let d = scratch("fifo");
        let p = d.join("pipe");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = text(&preview(
            "Write",
            &obj! { "file_path" => "pipe", "content" => "x" },
            &d,
        ));
        assert!(t.contains("not a regular file"), "{t}");
    }

    #[test]
    fn every_line_of_a_command_is_shown_and_control_characters_are_visible() {
        let cmd = "ls\nrm -rf ~/work\recho done\x1b[2K";
        let t = text(&preview("Bash", &obj! { "command" => cmd }, Path::new("/")));
        assert!(t.contains("rm -rf ~/work\\recho done\\u{1b}[2K"), "{t}");
        assert!(t.contains("2 lines"), "{t}");
        assert!(!t.contains('\x1b') && !t.contains('\r'));
        assert_eq!(visible("a\u{202e}b"), "a\\u{202e}b");
    }

    #[test]
    fn long_diffs_say_how_much_is_left_out_but_commands_are_whole() {
        let long: String = (0..200).map(|i| format!("echo {i}\n")).collect();
        let d = scratch("long");
        let lines = preview(
            "Write",
            &obj! { "file_path" => "n", "content" => long.clone() },
            &d,
        );
        assert_eq!(lines.len(), MAX_LINES + 1);
        assert!(text(&lines).contains("more lines"));
        let t = text(&preview(
            "Bash",
            &obj! { "command" => long },
            Path::new("/"),
        ));
        assert!(t.contains("echo 199") && !t.contains("more lines"), "{t}");
    }

    #[test]
    fn the_script_is_a_shortest_edit() {
        let a = ["a", "b", "c", "d"];
        let b = ["a", "x", "c", "d", "e"];
        let ops = script(&a, &b);
        let edits = ops.iter().filter(|o| !matches!(o, Op::Same(..))).count();
        assert_eq!(edits, 3, "{ops:?}");
        // A replaced line reads old then new, as in a unified diff.
        let b_at = ops.iter().position(|o| *o == Op::Del(1)).unwrap();
        let x_at = ops.iter().position(|o| *o == Op::Ins(1)).unwrap();
        assert!(b_at < x_at, "{ops:?}");
    }
}
