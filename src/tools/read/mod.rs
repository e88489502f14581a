//! Read: a text file as numbered lines, a window at a time; an image as
//! an image the model sees; a PDF as a document; a Jupyter notebook as
//! its cells and outputs. What the file is comes from its first bytes
//! (and, for a notebook, its name), never from the name alone: a `.png`
//! that is not one is refused rather than sent.

mod lines;
pub(crate) mod media;

use std::borrow::Cow;
use std::io::Read as _;
use std::path::Path;

use super::files::Encoding;
use super::input::{Fields, Schema};
use super::{Access, LocalFuture, Permit, Tool, ToolContext, ToolOutput};
use crate::json::Value;

pub struct Read;

/// A Read call's input, but for its path.
struct Args {
    offset: Option<usize>,
    limit: Option<usize>,
    /// The PDF pages asked for, first and last (1-based).
    pages: Option<(usize, usize)>,
    allow_large: bool,
}

impl Args {
    /// The file comes from the permit, resolved; the rest from here.
    fn decode(input: &Value) -> Result<Args, String> {
        let f = Fields::of(input)?;
        Ok(Args {
            offset: f.opt_count("offset")?,
            limit: f.opt_count("limit")?,
            pages: f.opt_text("pages")?.map(parse_pages).transpose()?,
            allow_large: f.flag("allow_large")?,
        })
    }
}

pub const DEFAULT_LIMIT: usize = 2000;
/// Claude Code's cap on one Read's text, in tokens; about four bytes
/// each. `allow_large` lifts it (the 2000-line default still holds).
pub(crate) const MAX_TOKENS: usize = 25_000;
const MAX_TEXT_BYTES: usize = MAX_TOKENS * 4;
/// UTF-16 files are decoded whole; larger ones are refused.
const MAX_UTF16_BYTES: usize = 32 << 20;
/// Claude Code's most pages one Read takes of a PDF with `pages`.
pub(crate) const MAX_PAGES_ASKED: usize = 20;
/// How much of a file is looked at to tell what it is.
const HEAD: usize = 8192;

impl Tool for Read {
    fn name(&self) -> &str {
        "Read"
    }
    fn description(&self) -> &str {
        #[cfg(not(feature = "notebooks"))]
        return "Read a file from the local filesystem. Text comes back as lines numbered \
         from 1 (`cat -n` style): by default up to 2000 lines from the start; pass `offset` \
         (the first line number to show) and `limit` to page through long files. Output is \
         capped at about 25000 tokens (set `allow_large` to read past that cap); a cut read \
         says where to continue. Lines longer than 2000 characters are cut. UTF-16 files \
         with a byte order mark are decoded. Images (PNG, JPEG, GIF, WebP) come back as \
         images you can see and PDFs as documents (`pages`, e.g. \"1-5\", names the pages \
         you want). Other binary files, pipes and devices are refused. You must Read a \
         file before you Edit or overwrite it.";
        #[cfg(feature = "notebooks")]
        "Read a file from the local filesystem. Text comes back as lines numbered from 1 \
         (`cat -n` style): by default up to 2000 lines from the start; pass `offset` (the \
         first line number to show) and `limit` to page through long files. Output is capped \
         at about 25000 tokens (set `allow_large` to read past that cap); a cut read says \
         where to continue. Lines longer than 2000 characters are cut. UTF-16 files with a \
         byte order mark are decoded. Images (PNG, JPEG, GIF, WebP) come back as images you \
         can see, PDFs as documents (`pages`, e.g. \"1-5\", names the pages you want), and \
         Jupyter notebooks (.ipynb) as their cells with outputs; for a notebook `offset` is \
         the index of the first cell and `limit` a number of cells. Other binary files, \
         pipes and devices are refused. You must Read a file before you Edit or overwrite it."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["file_path"],"properties":{
            "file_path":{"type":"string","description":"Absolute path of the file (relative paths are taken from the working directory)"},
            "offset":{"type":"integer","description":"Line number to start at (1-based); for a notebook, the first cell's index (0-based)"},
            "limit":{"type":"integer","description":"How many lines (or notebook cells) to read"},
            "pages":{"type":"string","description":"Pages of a PDF, e.g. \"3\" or \"1-5\" (at most 20); only for PDF files"},
            "allow_large":{"type":"boolean","description":"Read past the 25000-token cap on one read's text (default false)"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Read
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn path_field(&self) -> Option<(Access, &'static str)> {
        Some((Access::Read, "file_path"))
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        Args::decode(input).map(drop)
    }
    fn native_timeout(&self, _: &Value) -> Option<std::time::Duration> {
        Some(crate::tools::FILE_TOOL_TIMEOUT)
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
            let args = match Args::decode(&input) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(e),
            };
            // The cap leaves room for the note within a small window's
            // result limit, so it is not cut off by the pipeline.
            let max_bytes = (!args.allow_large).then(|| {
                ctx.result_limit.map_or(MAX_TEXT_BYTES, |l| {
                    l.saturating_sub(400).min(MAX_TEXT_BYTES)
                })
            });
            let window = Window {
                offset: args.offset,
                limit: args.limit,
                max_bytes,
                pages: args.pages,
            };
            let shown = ctx.display(&path);
            if let Some(editor) = &ctx.editor
                && let Some(out) = from_editor(&**editor, &path, window).await
            {
                ctx.files.borrow_mut().record(&path);
                return out;
            }
            let budget = ctx.media_budget();
            let path2 = path.clone();
            let result = smol::unblock(move || read_any(&path2, window, budget)).await;
            match result {
                Ok(out) => {
                    ctx.files.borrow_mut().record(&path);
                    out
                }
                Err(e) if e == NOT_FOUND => ToolOutput::error(format!(
                    "File does not exist: {shown}. Current working directory: {}",
                    ctx.cwd.display()
                )),
                Err(e) => ToolOutput::error(format!("Cannot read {shown}: {e}")),
            }
        })
    }
}

/// The part of a file asked for, as the model gave it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub offset: Option<usize>,
    pub limit: Option<usize>,
    /// The cap on a text's output; None when `allow_large` lifts it.
    pub max_bytes: Option<usize>,
    /// A PDF's pages asked for (first, last; 1-based).
    pub pages: Option<(usize, usize)>,
}

/// `pages` as Claude Code takes it: one page ("3") or a range ("1-5"),
/// at most 20 pages.
fn parse_pages(text: &str) -> Result<(usize, usize), String> {
    let bad = |why: &str| {
        Err(format!(
            "pages {text:?} {why}; give one page (\"3\") or a range (\"1-5\") of at most \
             {MAX_PAGES_ASKED} pages, counted from 1"
        ))
    };
    let number = |s: &str| s.trim().parse::<usize>().ok().filter(|&n| n >= 1);
    let (first, last) = match text.split_once('-') {
        Some((a, b)) => (number(a), number(b)),
        None => (number(text), number(text)),
    };
    let (Some(first), Some(last)) = (first, last) else {
        return bad("is not a page number or range");
    };
    if first > last {
        return bad("ends before it starts");
    }
    if last - first + 1 > MAX_PAGES_ASKED {
        return bad(&format!("asks for {} pages", last - first + 1));
    }
    Ok((first, last))
}

/// A text file as the editor holds it (unsaved changes included), in
/// the same numbered window a file on disk gives. `None` leaves it to
/// the disk: an image, PDF, notebook or UTF-16 file (the editor's text
/// of those is not what Read shows), or an editor that cannot say.
async fn from_editor(
    editor: &dyn super::Editor,
    path: &Path,
    window: Window,
) -> Option<ToolOutput> {
    let owned = path.to_path_buf();
    if !smol::unblock(move || plain_text(&owned)).await {
        return None;
    }
    let text = editor.read_text(path).await.ok()?;
    let want = lines::Lines {
        offset: window.offset.unwrap_or(1).max(1),
        limit: window.limit.unwrap_or(DEFAULT_LIMIT).max(1),
        max_bytes: window.max_bytes,
    };
    Some(
        match lines::read_window(text.into_bytes(), std::io::empty(), want) {
            Ok(text) => ToolOutput::ok(text),
            Err(e) => ToolOutput::error(format!("Cannot read {}: {e}", path.display())),
        },
    )
}

/// Whether Read shows this file as UTF-8 text (a file not yet on disk
/// may be a new buffer in the editor, so it counts).
fn plain_text(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if matches!(
        ext.as_str(),
        "pdf" | "png" | "jpg" | "jpeg" | "gif" | "webp" | "ipynb"
    ) {
        return false;
    }
    let mut file = match open_regular(path) {
        Ok(f) => f,
        Err(e) => return e == NOT_FOUND,
    };
    let mut head = vec![0u8; HEAD];
    let Ok(n) = read_full(&mut file, &mut head) else {
        return false;
    };
    head.truncate(n);
    crate::media::image::sniff(&head).is_none()
        && !crate::media::pdf::looks_like_pdf(&head)
        && matches!(Encoding::sniff(&head), Encoding::Utf8 | Encoding::Utf8Bom)
}

/// Tells what the file is by its first bytes and reads it that way.
fn read_any(path: &Path, window: Window, budget: Option<u64>) -> Result<ToolOutput, String> {
    let mut file = open_regular(path)?;
    let mut head = vec![0u8; HEAD];
    let n = read_full(&mut file, &mut head).map_err(describe_io)?;
    head.truncate(n);
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if crate::media::image::sniff(&head).is_some() {
        let bytes = read_rest(head, file, media::max_image_input(), "an image")?;
        return media::image_output(&bytes, budget);
    }
    if crate::media::pdf::looks_like_pdf(&head) {
        // Pages are cut out of a larger file than is ever sent whole.
        let bytes = match window.pages {
            Some(_) => read_rest(head, file, media::MAX_PDF_INPUT_BYTES, "a PDF")?,
            None => read_rest(head, file, media::MAX_PDF_BYTES, "a PDF").map_err(|e| {
                if e.starts_with("it is ") {
                    format!("{e}; read some of its pages with `pages` (e.g. \"1-20\")")
                } else {
                    e
                }
            })?,
        };
        return media::pdf_output(&bytes, budget, window.pages);
    }
    match ext.as_str() {
        "pdf" => return Err("it is named .pdf but is not a PDF (there is no %PDF- header)".into()),
        "png" | "jpg" | "jpeg" | "gif" | "webp" if !head.is_empty() => {
            return Err(format!(
                "it is named .{ext} but is not a PNG, JPEG, GIF or WebP image"
            ));
        }
        #[cfg(feature = "notebooks")]
        "ipynb" => {
            let bytes = read_rest(head, file, super::notebook::MAX_BYTES, "a notebook")?;
            return super::notebook::read(&bytes, window, budget);
        }
        _ => {}
    }
    let want = lines::Lines {
        offset: window.offset.unwrap_or(1).max(1),
        limit: window.limit.unwrap_or(DEFAULT_LIMIT).max(1),
        max_bytes: window.max_bytes,
    };
    let encoding = Encoding::sniff(&head);
    let text = match encoding {
        Encoding::Utf8 => return lines::read_window(head, file, want).map(ToolOutput::ok),
        // The mark is not part of the text (nor of line 1).
        Encoding::Utf8Bom => {
            head.drain(..3);
            return lines::read_window(head, file, want).map(ToolOutput::ok);
        }
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let bytes = read_rest(head, file, MAX_UTF16_BYTES, "a UTF-16 text")?;
            encoding.decode(&bytes)?
        }
    };
    lines::read_window(text.into_bytes(), std::io::empty(), want).map(|mut text| {
        text.push_str(&format!("\n(decoded from {})\n", encoding.name()));
        ToolOutput::ok(text)
    })
}

/// What `describe_io` says of a missing file; Read words it as Claude
/// Code does.
const NOT_FOUND: &str = "no such file or directory";

/// The whole file, from its first bytes and the rest of `file`, refusing
/// one larger than `max` bytes without reading it all.
fn read_rest(
    mut head: Vec<u8>,
    file: std::fs::File,
    max: usize,
    what: &str,
) -> Result<Vec<u8>, String> {
    let limit = u64::try_from(max).unwrap_or(u64::MAX);
    let mut rest = file.take(limit.saturating_sub(head.len() as u64) + 1);
    rest.read_to_end(&mut head).map_err(describe_io)?;
    if head.len() > max {
        let size = rest.into_inner().metadata().map_or(0, |m| m.len());
        return Err(format!(
            "it is {}, more than the {} Read takes of {what}",
            human_bytes(size.max(head.len() as u64)),
            human_bytes(limit)
        ));
    }
    Ok(head)
}

/// Bytes for people: "3.2 MB", "512 KB", "12 bytes".
pub(crate) fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MB", n as f64 / f64::from(1u32 << 20))
    } else if n >= 1 << 10 {
        format!("{} KB", n >> 10)
    } else {
        format!("{n} bytes")
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
        std::io::ErrorKind::NotFound => NOT_FOUND.into(),
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

    /// Small models send numbers as strings; the validator coerces them
    /// for every tool, Read among them.
    #[test]
    fn numbers_sent_as_strings_are_taken() {
        let (ctx, dir) = context();
        let body: String = (1..=5).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.join("f.txt"), body).unwrap();
        let out = run(
            &Read,
            &ctx,
            obj! { "file_path" => "f.txt", "offset" => "2", "limit" => "2" },
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.starts_with("     2\tline 2\n     3\tline 3\n"));
        let out = run(
            &Read,
            &ctx,
            obj! { "file_path" => "f.txt", "limit" => "two" },
        );
        assert!(
            out.is_error
                && out
                    .content
                    .contains(r#"limit must be integer, got string "two""#),
            "{}",
            out.content
        );
    }

    #[test]
    fn refuses_binary_and_missing_and_dirs() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "b.bin" });
        assert!(out.is_error && out.content.contains("binary"));
        let out = run(&Read, &ctx, obj! { "file_path" => "nope" });
        assert!(
            out.is_error && out.content.starts_with("File does not exist: nope."),
            "{}",
            out.content
        );
        let out = run(&Read, &ctx, obj! { "file_path" => "." });
        assert!(out.is_error && out.content.contains("directory"));
    }

    /// Without `limit`, a read stops at about 25000 tokens (4 bytes
    /// each) and says where to go on; `allow_large` reads on to the
    /// 2000-line default.
    #[test]
    fn long_reads_stop_at_the_token_cap_unless_allow_large() {
        let (ctx, dir) = context();
        // 1500 lines of 200 characters: about 310 KB, over the cap.
        let body: String = (1..=1500)
            .map(|i| format!("{i:04} {}\n", "x".repeat(195)))
            .collect();
        std::fs::write(dir.join("big.txt"), body).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "big.txt" });
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.len() <= MAX_TEXT_BYTES + 400,
            "{}",
            out.content.len()
        );
        let shown = out.content.matches("\t").count();
        assert!((400..500).contains(&shown), "{shown}");
        let note = format!(
            "(showing lines 1-{shown} of 1500: the file is longer than the 25000 tokens Read \
             returns at once. Use offset {} and limit to read further",
            shown + 1
        );
        assert!(
            out.content.contains(&note),
            "{}",
            &out.content[out.content.len() - 300..]
        );
        // An explicit window is held to the cap too.
        let out = run(
            &Read,
            &ctx,
            obj! { "file_path" => "big.txt", "offset" => 1001i64, "limit" => 500i64 },
        );
        assert!(out.content.contains("Use offset"), "{}", out.content.len());
        let out = run(
            &Read,
            &ctx,
            obj! { "file_path" => "big.txt", "allow_large" => true },
        );
        assert!(!out.is_error);
        assert_eq!(out.content.matches("\t").count(), 1500);
        assert!(!out.content.contains("Use offset"));
        // Short files are not touched by the cap.
        std::fs::write(dir.join("small.txt"), "a\nb\n").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "small.txt" });
        assert_eq!(out.content, "     1\ta\n     2\tb\n");
    }

    #[test]
    fn byte_order_marks_are_decoded_or_dropped() {
        let (ctx, dir) = context();
        let text = "caf\u{e9} \u{1f600}\r\nzwei\n";
        for (name, bytes) in [
            ("le.txt", Encoding::Utf16Le.encode(text)),
            ("be.txt", Encoding::Utf16Be.encode(text)),
        ] {
            std::fs::write(dir.join(name), bytes).unwrap();
            let out = run(&Read, &ctx, obj! { "file_path" => name });
            assert!(!out.is_error, "{name}: {}", out.content);
            assert!(
                out.content
                    .starts_with("     1\tcaf\u{e9} \u{1f600}\n     2\tzwei\n"),
                "{name}: {}",
                out.content
            );
            assert!(
                out.content.contains("decoded from UTF-16"),
                "{}",
                out.content
            );
        }
        std::fs::write(dir.join("bom.txt"), "\u{feff}first\nsecond\n").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "bom.txt" });
        assert_eq!(out.content, "     1\tfirst\n     2\tsecond\n");
    }

    /// One NUL in otherwise plain text is shown, with a note; binary
    /// files stay refused.
    #[test]
    fn a_stray_nul_is_shown_with_a_note() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("n.log"), "start\nhello\0world\nend\n").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "n.log" });
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("     2\thello\u{2400}world\n"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("contains NUL bytes"),
            "{}",
            out.content
        );
        assert!(!out.content.contains('\0'));
        std::fs::write(dir.join("elf"), b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "elf" });
        assert!(
            out.is_error && out.content.contains("binary"),
            "{}",
            out.content
        );
    }

    #[test]
    fn pdf_pages_are_checked_and_named() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("r.pdf"), samples::pdf(3, cfg!(feature = "pdf"))).unwrap();
        let read = |pages: &str| {
            run(
                &Read,
                &ctx,
                obj! { "file_path" => "r.pdf", "pages" => pages },
            )
        };
        let out = read("2-3");
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .contains("pages 2-3 of 3, sent as a PDF of those 2 pages"),
            "{}",
            out.content
        );
        assert_eq!(out.images.len(), 1);
        let sent = crate::media::decode(&out.images[0].1).unwrap();
        assert_eq!(crate::media::pdf::check(&sent).unwrap().pages, 2);
        let out = read("2");
        assert!(
            out.content
                .contains("page 2 of 3, sent as a PDF of that page"),
            "{}",
            out.content
        );
        // All the pages: the file as it is.
        let out = read("1-3");
        assert!(out.content.contains("3 pages"), "{}", out.content);
        let sent = crate::media::decode(&out.images[0].1).unwrap();
        assert_eq!(sent, samples::pdf(3, cfg!(feature = "pdf")));
        for (bad, why) in [
            ("0", "not a page number"),
            ("x-2", "not a page number"),
            ("3-1", "ends before it starts"),
            ("1-21", "asks for 21 pages"),
            ("", "not a page number"),
        ] {
            let out = read(bad);
            assert!(
                out.is_error && out.content.contains(why),
                "{bad}: {}",
                out.content
            );
        }
        for past in ["2-4", "4", "9-12"] {
            let out = read(past);
            assert!(
                out.is_error
                    && out
                        .content
                        .contains("past its end: the document has 3 pages"),
                "{}",
                out.content
            );
        }
        // On a text file `pages` means nothing and is let be.
        std::fs::write(dir.join("t.txt"), "x\n").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "t.txt", "pages" => "1" });
        assert!(!out.is_error, "{}", out.content);
    }

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("l.txt"), "é".repeat(3000)).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "l.txt" });
        assert!(out.content.contains("[line truncated]"));
        assert!(out.content.len() < 2100);
    }

    use crate::media::samples;

    #[test]
    fn images_of_each_format_come_back_as_images() {
        let (ctx, dir) = context();
        for (ext, media_type, name) in [
            ("png", "image/png", "PNG"),
            ("jpg", "image/jpeg", "JPEG"),
            ("gif", "image/gif", "GIF"),
            ("webp", "image/webp", "WebP"),
        ] {
            let kind = if ext == "jpg" { "jpeg" } else { ext };
            let bytes = samples::image(kind, 97, 41);
            // The name does not decide: the bytes do.
            std::fs::write(dir.join(format!("pic.{ext}.bin")), &bytes).unwrap();
            let out = run(
                &Read,
                &ctx,
                obj! { "file_path" => format!("pic.{ext}.bin") },
            );
            assert!(!out.is_error, "{ext}: {}", out.content);
            assert!(
                out.content
                    .starts_with(&format!("{name} image, 97x41 pixels")),
                "{}",
                out.content
            );
            assert_eq!(out.images.len(), 1);
            assert_eq!(out.images[0].0, media_type);
            assert_eq!(
                crate::media::decode(&out.images[0].1).unwrap(),
                bytes,
                "sent unchanged"
            );
        }
    }

    #[test]
    fn damaged_or_misnamed_images_are_refused() {
        let (ctx, dir) = context();
        let png = samples::image("png", 64, 64);
        std::fs::write(dir.join("cut.png"), &png[..png.len() / 2]).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "cut.png" });
        assert!(
            out.is_error && out.content.contains("truncated"),
            "{}",
            out.content
        );
        std::fs::write(dir.join("fake.png"), "not a picture\n").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "fake.png" });
        assert!(
            out.is_error && out.content.contains("named .png but is not"),
            "{}",
            out.content
        );
        std::fs::write(dir.join("fake.pdf"), "%PDX\n").unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "fake.pdf" });
        assert!(
            out.is_error && out.content.contains("not a PDF"),
            "{}",
            out.content
        );
    }

    #[test]
    fn large_images_are_fitted_to_the_model() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("wide.png"), samples::image("png", 3200, 1000)).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "wide.png" });
        let sent = crate::media::decode(&out.images[0].1).unwrap();
        let info = crate::media::image::check(&sent).unwrap();
        if cfg!(feature = "images") {
            assert!(
                out.content.contains("shown scaled to 1568x490"),
                "{}",
                out.content
            );
            assert_eq!((info.width, info.height), (1568, 490));
        } else {
            // The API scales it itself; it goes as it is.
            assert_eq!((info.width, info.height), (3200, 1000));
        }
    }

    #[test]
    fn a_small_window_gets_a_smaller_image_or_a_reason() {
        let (mut ctx, dir) = context();
        ctx.context_window = Some(4096);
        ctx.result_limit = Some(3072);
        assert_eq!(ctx.media_budget(), Some(768));
        std::fs::write(dir.join("photo.jpg"), samples::image("jpeg", 1200, 900)).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "photo.jpg" });
        if cfg!(feature = "images") {
            assert!(!out.is_error, "{}", out.content);
            let sent = crate::media::decode(&out.images[0].1).unwrap();
            let info = crate::media::image::check(&sent).unwrap();
            assert!(
                crate::media::image_tokens(info.width, info.height) <= 768,
                "{}x{}",
                info.width,
                info.height
            );
            assert_eq!(info.format, crate::media::image::Format::Jpeg);
        } else {
            assert!(
                out.is_error && out.content.contains("context window"),
                "{}",
                out.content
            );
        }
        // A small picture fits either way.
        std::fs::write(dir.join("icon.png"), samples::image("png", 64, 64)).unwrap();
        assert!(!run(&Read, &ctx, obj! { "file_path" => "icon.png" }).is_error);
    }

    #[test]
    fn pdfs_come_back_as_documents_within_their_limits() {
        let (mut ctx, dir) = context();
        let doc = samples::pdf(3, cfg!(feature = "pdf"));
        std::fs::write(dir.join("report.pdf"), &doc).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "report.pdf" });
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("PDF document (PDF 1.7), 3 pages"),
            "{}",
            out.content
        );
        assert_eq!(out.images[0].0, "application/pdf");
        assert_eq!(crate::media::decode(&out.images[0].1).unwrap(), doc);

        std::fs::write(dir.join("long.pdf"), samples::pdf(101, false)).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "long.pdf" });
        assert!(
            out.is_error && out.content.contains("101 pages, more than the 100"),
            "{}",
            out.content
        );
        assert!(out.content.contains("pdftotext"));
        assert!(
            out.content.contains("`pages` (e.g. \"1-20\")"),
            "{}",
            out.content
        );
        // Over the API's 100 pages, 20 at a time go.
        let out = run(
            &Read,
            &ctx,
            obj! { "file_path" => "long.pdf", "pages" => "81-100" },
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("pages 81-100 of 101"),
            "{}",
            out.content
        );

        ctx.context_window = Some(8192);
        let out = run(&Read, &ctx, obj! { "file_path" => "report.pdf" });
        assert!(
            out.is_error && out.content.contains("about 2 pages"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("`pages` (e.g. \"1-2\")"),
            "{}",
            out.content
        );
        // The window holds two pages, not three.
        let read = |pages: &str| {
            run(
                &Read,
                &ctx,
                obj! { "file_path" => "report.pdf", "pages" => pages },
            )
        };
        assert!(!read("2-3").is_error);
        let out = read("1-3");
        assert!(
            out.is_error && out.content.contains("about 2 pages"),
            "{}",
            out.content
        );

        std::fs::write(dir.join("cut.pdf"), &doc[..doc.len() - 20]).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => "cut.pdf" });
        assert!(
            out.is_error && out.content.contains("truncated"),
            "{}",
            out.content
        );
    }
}
