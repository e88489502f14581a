//! Edit: replace an exact string in a file the model has read.

use std::borrow::Cow;

use super::input::{Fields, Schema};
use super::{Access, LocalFuture, Permit, Tool, ToolContext, ToolOutput, files::write_atomically};
use crate::json::Value;

pub struct Edit;

/// An Edit call's input.
struct Args<'a> {
    file_path: &'a str,
    old_string: &'a str,
    new_string: &'a str,
    replace_all: bool,
}

impl<'a> Args<'a> {
    fn decode(input: &'a Value) -> Result<Args<'a>, String> {
        let f = Fields::of(input)?;
        Ok(Args {
            file_path: f.text("file_path")?,
            old_string: f.text("old_string")?,
            new_string: f.text("new_string")?,
            replace_all: f.flag("replace_all")?,
        })
    }
}

impl Tool for Edit {
    fn name(&self) -> &str {
        "Edit"
    }
    fn description(&self) -> &str {
        "Replace `old_string` with `new_string` in a file. The file must have been Read \
         in this session and be unchanged since. `old_string` must match exactly \
         (including indentation) and be unique in the file unless `replace_all` is true; \
         include surrounding lines to make it unique. Line endings follow the file's (an \
         LF `old_string` matches a CRLF file, and inserted lines get CRLF), and straight \
         quotes match the file's typographic ones. An empty `old_string` creates a new \
         file with `new_string` as its content."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["file_path","old_string","new_string"],"properties":{
            "file_path":{"type":"string","description":"Absolute path of the file to change"},
            "old_string":{"type":"string","description":"The exact text to replace"},
            "new_string":{"type":"string","description":"The text to put in its place"},
            "replace_all":{"type":"boolean","description":"Replace every occurrence (default false)"}}}"#,
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
        let args = Args::decode(input)?;
        let (old, new) = (args.old_string, args.new_string);
        if old == new {
            return Err("old_string and new_string are identical; nothing to change".into());
        }
        let path = ctx.resolve(args.file_path);
        let shown = ctx.display(&path);
        if old.is_empty() {
            if path.exists() {
                return Err(format!(
                    "{shown} already exists; an empty old_string only creates new files"
                ));
            }
            return Ok(());
        }
        if path.is_dir() {
            return Err(format!(
                "{shown} is a directory, not a file; Edit changes files (list it with Glob or Bash `ls`)"
            ));
        }
        if !path.exists() {
            return Err(format!(
                "File does not exist: {shown}. Current working directory: {}",
                ctx.cwd.display()
            ));
        }
        #[cfg(feature = "notebooks")]
        if is_notebook(&path) {
            return Err(format!(
                "{shown} is a Jupyter notebook; use the NotebookEdit tool to change its cells"
            ));
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
            let (old, new, all) = match Args::decode(&input) {
                Ok(a) => (
                    a.old_string.to_string(),
                    a.new_string.to_string(),
                    a.replace_all,
                ),
                Err(e) => return ToolOutput::error(e),
            };
            let sync = super::BufferSync::before(ctx, &path).await;
            let p = path.clone();
            let result = smol::unblock(move || apply(&p, &old, &new, all)).await;
            match result {
                Ok(Applied { count, first_line }) => {
                    ctx.files.borrow_mut().record(&path);
                    if let Some(sync) = sync {
                        sync.after(&path).await;
                    }
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

/// A Jupyter notebook is JSON that Edit would have to match byte for
/// byte; NotebookEdit changes it cell by cell.
#[cfg(feature = "notebooks")]
pub(crate) fn is_notebook(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
}

struct Applied {
    count: usize,
    first_line: usize,
}

fn apply(path: &std::path::Path, old: &str, new: &str, all: bool) -> Result<Applied, String> {
    use super::files::{Content, Encoding, classify};
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
    let encoding = Encoding::sniff(&bytes);
    if !encoding.is_utf16() && classify(&bytes) == Content::Binary {
        return Err("it is a binary file, not text; Edit changes text files only".into());
    }
    let text = encoding.decode(&bytes).map_err(|e| {
        format!("{e}; Edit changes text files only (UTF-8, or UTF-16 with a byte order mark)")
    })?;
    let edit = find(&text, old, new)?;
    if edit.spans.len() > 1 && !all {
        return Err(format!(
            "old_string occurs {} times; add surrounding lines to make it unique, or set replace_all",
            edit.spans.len()
        ));
    }
    let spans = if all {
        &edit.spans[..]
    } else {
        &edit.spans[..1]
    };
    let mut updated = String::with_capacity(text.len() + new.len());
    let mut at = 0;
    for &(start, end) in spans {
        updated.push_str(&text[at..start]);
        updated.push_str(&styled(&text[start..end], &edit.old, &edit.new));
        at = end;
    }
    updated.push_str(&text[at..]);
    let first_line = text[..spans[0].0].matches('\n').count() + 1;
    write_atomically(path, &encoding.encode(&updated)).map_err(super::read::describe_io)?;
    Ok(Applied {
        count: spans.len(),
        first_line,
    })
}

/// Where an Edit of `text` would apply, for the approval preview: the
/// first occurrence's byte range, what replaces it, and how many there
/// are, found as `apply` finds them.
pub(crate) fn first_change(
    text: &str,
    old: &str,
    new: &str,
) -> Option<(usize, usize, String, usize)> {
    if old.is_empty() {
        return None;
    }
    let found = find(text, old, new).ok()?;
    let &(start, end) = found.spans.first()?;
    let replacement = styled(&text[start..end], &found.old, &found.new);
    Some((start, end, replacement, found.spans.len()))
}

/// Byte ranges of each (non-overlapping) occurrence.
type Spans = Vec<(usize, usize)>;

/// Where old_string is in the text, and the strings as they matched.
struct Found {
    spans: Spans,
    old: String,
    new: String,
}

/// Finds `old` as Claude Code does: exactly; in a file of CRLF lines with
/// its line ends as the file's (and `new`'s too, so inserted lines are
/// CRLF); then with typographic quotes taken as straight ones.
fn find(text: &str, old: &str, new: &str) -> Result<Found, String> {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    let mut forms: Vec<(String, String)> = Vec::new();
    if crlf > lf {
        forms.push((to_crlf(old), to_crlf(new)));
    }
    forms.push((old.to_string(), new.to_string()));
    let exact = |o: &str| -> Vec<(usize, usize)> {
        text.match_indices(o)
            .map(|(i, m)| (i, i + m.len()))
            .collect()
    };
    let passes: [&dyn Fn(&str) -> Spans; 2] = [&exact, &|o| quote_blind(text, o)];
    for pass in passes {
        for (o, n) in &forms {
            let spans = pass(o);
            if !spans.is_empty() {
                return Ok(Found {
                    spans,
                    old: o.clone(),
                    new: n.clone(),
                });
            }
        }
    }
    Err("old_string was not found in the file (it must match exactly, whitespace included)".into())
}

/// Every line end in `s` as CRLF.
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

fn straight(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' => '\'',
        '\u{201c}' | '\u{201d}' => '"',
        c => c,
    }
}

/// Occurrences of `old` in `text` with ‘ ’ “ ” read as ' and ".
fn quote_blind(text: &str, old: &str) -> Vec<(usize, usize)> {
    let needle: String = old.chars().map(straight).collect();
    if !text.contains(['\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}']) {
        return Vec::new();
    }
    // The straightened text, and where in it each curly quote (three
    // bytes, now one) stood: an offset maps back by two bytes for each
    // quote before it.
    let mut flat = String::with_capacity(text.len());
    let mut curly: Vec<usize> = Vec::new();
    for c in text.chars() {
        let s = straight(c);
        if s != c {
            curly.push(flat.len());
        }
        flat.push(s);
    }
    let back = |at: usize| at + 2 * curly.partition_point(|&q| q < at);
    flat.match_indices(needle.as_str())
        .map(|(i, m)| (back(i), back(i + m.len())))
        .collect()
}

/// `new` in the quote style of the text it replaces: where old_string
/// matched only through straightened quotes, the straight quotes of
/// `new` become curly ones, opening or closing by what precedes them
/// (and an apostrophe between letters stays one).
fn styled(actual: &str, old: &str, new: &str) -> String {
    if actual == old {
        return new.to_string();
    }
    let double = actual.contains(['\u{201c}', '\u{201d}']);
    let single = actual.contains(['\u{2018}', '\u{2019}']);
    let chars: Vec<char> = new.chars().collect();
    let opens = |i: usize| {
        i == 0 || {
            let p = chars[i - 1];
            p.is_whitespace() || matches!(p, '(' | '[' | '{' | '\u{2014}' | '\u{2013}')
        }
    };
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            '"' if double => {
                if opens(i) {
                    '\u{201c}'
                } else {
                    '\u{201d}'
                }
            }
            '\'' if single => {
                let letter = |j: Option<&char>| j.is_some_and(|c| c.is_alphabetic());
                let between = i > 0 && letter(chars.get(i - 1)) && letter(chars.get(i + 1));
                if !between && opens(i) {
                    '\u{2018}'
                } else {
                    '\u{2019}'
                }
            }
            c => c,
        })
        .collect()
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

    fn read_then_edit(ctx: &ToolContext, file: &str, old: &str, new: &str) -> ToolOutput {
        let read = run(&Read, ctx, obj! { "file_path" => file });
        assert!(!read.is_error, "{}", read.content);
        run(
            &Edit,
            ctx,
            obj! { "file_path" => file, "old_string" => old, "new_string" => new },
        )
    }

    /// Models write LF; a CRLF file matches, and stays CRLF throughout,
    /// the inserted lines included.
    #[test]
    fn lf_old_string_matches_a_crlf_file_which_stays_crlf() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        let out = read_then_edit(&ctx, "w.txt", "one\ntwo\n", "uno\ndos\nmas\n");
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.join("w.txt")).unwrap(),
            "uno\r\ndos\r\nmas\r\nthree\r\n"
        );
        // A file of LF lines is left as it is.
        std::fs::write(dir.join("u.txt"), "one\ntwo\n").unwrap();
        let out = read_then_edit(&ctx, "u.txt", "one\ntwo", "a\nb");
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.join("u.txt")).unwrap(),
            "a\nb\n"
        );
    }

    /// Typographic quotes in the file match straight ones in old_string;
    /// the replacement is written in the file's quote style.
    #[test]
    fn straight_quotes_match_curly_ones_and_keep_their_style() {
        let (ctx, dir) = context();
        std::fs::write(
            dir.join("q.md"),
            "He said \u{201c}it\u{2019}s fine\u{201d} and left.\n",
        )
        .unwrap();
        let out = read_then_edit(&ctx, "q.md", "said \"it's fine\"", "said \"it's 'great'\"");
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.join("q.md")).unwrap(),
            "He said \u{201c}it\u{2019}s \u{2018}great\u{2019}\u{201d} and left.\n"
        );
        // An exact match wins: straight quotes stay straight.
        std::fs::write(dir.join("s.rs"), "let a = \"x\";\n").unwrap();
        let out = read_then_edit(&ctx, "s.rs", "\"x\"", "\"y\"");
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.join("s.rs")).unwrap(),
            "let a = \"y\";\n"
        );
    }

    #[test]
    fn notebooks_directories_binaries_and_missing_files_get_the_true_reason() {
        let (ctx, dir) = context();
        let edit = |file: &str| {
            run(
                &Edit,
                &ctx,
                obj! { "file_path" => file, "old_string" => "a", "new_string" => "b" },
            )
        };
        std::fs::write(dir.join("n.ipynb"), r#"{"cells":[]}"#).unwrap();
        let out = edit("n.ipynb");
        assert!(
            out.is_error && out.content.contains("NotebookEdit"),
            "{}",
            out.content
        );
        std::fs::create_dir(dir.join("sub")).unwrap();
        let out = edit("sub");
        assert!(
            out.is_error && out.content.contains("is a directory"),
            "{}",
            out.content
        );
        std::fs::write(dir.join("b.bin"), b"a\x00\x01\x02\x03\xff\xfe").unwrap();
        ctx.files.borrow_mut().record(&dir.join("b.bin"));
        let out = edit("b.bin");
        assert!(
            out.is_error && out.content.contains("binary"),
            "{}",
            out.content
        );
        let out = edit("nope.txt");
        assert!(
            out.is_error && out.content.starts_with("File does not exist: nope.txt."),
            "{}",
            out.content
        );
    }

    /// A UTF-16 file (with its mark) is edited as text and written back
    /// in UTF-16; a UTF-8 mark stays.
    #[test]
    fn files_are_written_back_in_their_encoding() {
        use crate::tools::files::Encoding;
        let (ctx, dir) = context();
        for (name, enc) in [
            ("le.txt", Encoding::Utf16Le),
            ("be.txt", Encoding::Utf16Be),
            ("bom.txt", Encoding::Utf8Bom),
        ] {
            std::fs::write(dir.join(name), enc.encode("caf\u{e9}\r\nbar\r\n")).unwrap();
            let out = read_then_edit(&ctx, name, "bar\n", "baz\nqux\n");
            assert!(!out.is_error, "{name}: {}", out.content);
            assert_eq!(
                std::fs::read(dir.join(name)).unwrap(),
                enc.encode("caf\u{e9}\r\nbaz\r\nqux\r\n"),
                "{name}"
            );
        }
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
