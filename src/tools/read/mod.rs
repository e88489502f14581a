//! Read: a text file as numbered lines, a window at a time; an image as
//! an image the model sees; a PDF as a document; a Jupyter notebook as
//! its cells and outputs. What the file is comes from its first bytes
//! (and, for a notebook, its name), never from the name alone: a `.png`
//! that is not one is refused rather than sent.

mod lines;
pub(crate) mod media;

use std::io::Read as _;
use std::path::Path;

use super::{Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput, opt_usize};
use crate::json::{Value, parse};

pub struct Read;

pub const DEFAULT_LIMIT: usize = 2000;
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
         (the first line number to show) and `limit` to page through long files. Lines \
         longer than 2000 characters are cut. Images (PNG, JPEG, GIF, WebP) come back as \
         images you can see and PDFs as documents. Other binary files, pipes and devices \
         are refused. You must Read a file before you Edit or overwrite it.";
        #[cfg(feature = "notebooks")]
        "Read a file from the local filesystem. Text comes back as lines numbered from 1 \
         (`cat -n` style): by default up to 2000 lines from the start; pass `offset` (the \
         first line number to show) and `limit` to page through long files. Lines longer \
         than 2000 characters are cut. Images (PNG, JPEG, GIF, WebP) come back as images \
         you can see, PDFs as documents, and Jupyter notebooks (.ipynb) as their cells \
         with outputs; for a notebook `offset` is the index of the first cell and `limit` \
         a number of cells. Other binary files, pipes and devices are refused. You must \
         Read a file before you Edit or overwrite it."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["file_path"],"properties":{
            "file_path":{"type":"string","description":"Absolute path of the file (relative paths are taken from the working directory)"},
            "offset":{"type":"integer","description":"Line number to start at (1-based); for a notebook, the first cell's index (0-based)"},
            "limit":{"type":"integer","description":"How many lines (or notebook cells) to read"}}}"#,
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
            let window = Window {
                offset: opt_usize(&input, "offset"),
                limit: opt_usize(&input, "limit"),
            };
            let shown = ctx.display(&path);
            let budget = ctx.media_budget();
            let path2 = path.clone();
            let result = smol::unblock(move || read_any(&path2, window, budget)).await;
            match result {
                Ok(out) => {
                    ctx.files.borrow_mut().record(&path);
                    out
                }
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
        let bytes = read_rest(head, file, media::MAX_PDF_BYTES, "a PDF")?;
        return media::pdf_output(&bytes, budget);
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
    let offset = window.offset.unwrap_or(1).max(1);
    let limit = window.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    lines::read_window(head, file, offset, limit).map(ToolOutput::ok)
}

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

        ctx.context_window = Some(8192);
        let out = run(&Read, &ctx, obj! { "file_path" => "report.pdf" });
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
