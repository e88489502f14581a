//! Read beyond text, through the real binary: images, PDFs and notebooks
//! reach the model as image and document blocks inside the tool result
//! of its next request (in the Messages API, and as data-URL parts over
//! the OpenAI-compatible wire); damaged files are refused with a reason;
//! attachments are priced by pixels and pages, not bytes, so a photo
//! does not look like a full context window; a resumed session sends
//! them again from its transcript.

use crate::support;

use std::path::Path;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

/// The content blocks of the one tool result in `req`.
fn result_blocks(req: &standin::Request) -> (Vec<Value>, bool) {
    let results = tool_results(req);
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    let is_error = r.get("is_error").and_then(Value::as_bool) == Some(true);
    let blocks = match r.get("content") {
        Some(Value::Array(b)) => b.clone(),
        Some(Value::String(s)) => vec![tern::obj! { "type" => "text", "text" => s.as_str() }],
        _ => Vec::new(),
    };
    (blocks, is_error)
}

fn text_of(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b.str_field("text"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// (type, media type, decoded data) of each attachment.
fn attachments(blocks: &[Value]) -> Vec<(String, String, Vec<u8>)> {
    blocks
        .iter()
        .filter(|b| matches!(b.str_field("type"), Some("image" | "document")))
        .map(|b| {
            let source = b.get("source").unwrap();
            assert_eq!(source.str_field("type"), Some("base64"));
            (
                b.str_field("type").unwrap().to_string(),
                source.str_field("media_type").unwrap().to_string(),
                tern::harness::base64_decode(source.str_field("data").unwrap()).unwrap(),
            )
        })
        .collect()
}

/// One Read of `file` by the model; the request that carries its result.
fn read_once(dir: &Path, file: &str, args: &[&str]) -> (standin::Request, StandIn) {
    let input = format!(r#"{{"file_path": "{file}"}}"#);
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_read", "Read", &input)]),
        standin::text_reply("seen"),
    ]);
    let out = run(tern(&api.url, dir).args(["-p", "look"]).args(args));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    (reqs[1].clone(), api)
}

#[test]
fn each_image_format_reaches_the_model_as_an_image_block() {
    let dir = scratch("read-images");
    for (file, kind, media_type) in [
        ("shot.png", "png", "image/png"),
        ("photo.jpg", "jpeg", "image/jpeg"),
        ("anim.gif", "gif", "image/gif"),
        ("icon.webp", "webp", "image/webp"),
    ] {
        let bytes = support::samples::image(kind, 120, 80);
        std::fs::write(dir.join(file), &bytes).unwrap();
        let (req, _api) = read_once(&dir, file, &[]);
        let (blocks, is_error) = result_blocks(&req);
        assert!(!is_error, "{file}: {blocks:?}");
        assert_eq!(blocks[0].str_field("type"), Some("text"));
        assert!(text_of(&blocks).contains("120x80 pixels"), "{blocks:?}");
        let att = attachments(&blocks);
        assert_eq!(att.len(), 1, "{file}");
        assert_eq!(
            (att[0].0.as_str(), att[0].1.as_str()),
            ("image", media_type)
        );
        assert_eq!(att[0].2, bytes, "{file} is sent byte for byte");
    }
}

#[test]
fn a_pdf_reaches_the_model_as_a_document_block() {
    let dir = scratch("read-pdf");
    let doc = support::samples::pdf(2, false);
    std::fs::write(dir.join("spec.pdf"), &doc).unwrap();
    let (req, _api) = read_once(&dir, "spec.pdf", &[]);
    let (blocks, is_error) = result_blocks(&req);
    assert!(!is_error, "{blocks:?}");
    assert!(text_of(&blocks).contains("2 pages"), "{blocks:?}");
    assert_eq!(
        attachments(&blocks),
        [(
            "document".to_string(),
            "application/pdf".to_string(),
            doc.clone()
        )]
    );
}

/// Reads, in one turn, each (file, pages) given; the results in order,
/// as (blocks, is_error).
fn read_pages(dir: &Path, reads: &[(&str, &str)]) -> Vec<(Vec<Value>, bool)> {
    let inputs: Vec<String> = reads
        .iter()
        .map(|(file, pages)| format!(r#"{{"file_path": "{file}", "pages": "{pages}"}}"#))
        .collect();
    let ids: Vec<String> = (0..reads.len()).map(|i| format!("toolu_{i}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&inputs)
        .map(|(id, input)| (id.as_str(), "Read", input.as_str()))
        .collect();
    let api = StandIn::start(vec![
        standin::tools_reply(&calls),
        standin::text_reply("seen"),
    ]);
    let out = run(tern(&api.url, dir).args(["-p", "look"]));
    assert_ok(&out);
    let reqs = api.requests();
    tool_results(&reqs[1])
        .iter()
        .map(|r| {
            let is_error = r.get("is_error").and_then(Value::as_bool) == Some(true);
            let blocks = match r.get("content") {
                Some(Value::Array(b)) => b.clone(),
                Some(Value::String(s)) => {
                    vec![tern::obj! { "type" => "text", "text" => s.as_str() }]
                }
                _ => Vec::new(),
            };
            (blocks, is_error)
        })
        .collect()
}

/// Why the independent PDF readers (qpdf, poppler's pdfinfo and
/// pdftotext) cannot run here, if they cannot.
fn no_pdf_readers() -> Option<&'static str> {
    let have = |tool: &str| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok()
    };
    if !have("qpdf") || !have("pdfinfo") || !have("pdftotext") {
        return Some("needs qpdf and poppler-utils (ci/setup.sh installs them)");
    }
    None
}

/// What qpdf and poppler make of `pdf`: qpdf's check passes with no
/// warning, and (page count, each page's text, each page's "size"/"rot"
/// lines from pdfinfo).
fn independent_read(dir: &Path, pdf: &[u8]) -> (usize, Vec<String>, String) {
    let file = dir.join("sent.pdf");
    std::fs::write(&file, pdf).unwrap();
    let check = std::process::Command::new("qpdf")
        .arg("--check")
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(
        check.status.success() && said.contains("No syntax or stream encoding errors"),
        "qpdf --check: {said}"
    );
    let info = std::process::Command::new("pdfinfo")
        .args(["-f", "1", "-l", "99"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(info.status.success() && info.stderr.is_empty(), "{info:?}");
    let info = String::from_utf8_lossy(&info.stdout).into_owned();
    let pages: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let text = std::process::Command::new("pdftotext")
        .arg(&file)
        .arg("-")
        .output()
        .unwrap();
    assert!(text.status.success() && text.stderr.is_empty(), "{text:?}");
    // pdftotext ends each page with a form feed.
    let texts = String::from_utf8_lossy(&text.stdout)
        .split('\u{c}')
        .filter(|t| !t.trim().is_empty())
        .map(|t| t.trim().to_string())
        .collect();
    let boxes = info
        .lines()
        .filter(|l| l.starts_with("Page ") && (l.contains("size:") || l.contains("rot:")))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n");
    (pages, texts, boxes)
}

/// Page `n` of `pdf` drawn by poppler, small and grey.
fn render(pdf: &Path, n: usize) -> Vec<u8> {
    let n = n.to_string();
    let out = std::process::Command::new("pdftoppm")
        .args(["-r", "20", "-gray", "-f", &n, "-l", &n])
        .arg(pdf)
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.len() > 100, "{out:?}");
    out.stdout
}

#[test]
fn pages_send_a_pdf_of_just_those_pages_as_other_readers_see_it() {
    if let Some(why) = no_pdf_readers() {
        return skip("pages_send_a_pdf_of_just_those_pages", why);
    }
    let dir = scratch("read-pdf-pages");
    let nested = support::samples::pdf_nested(6);
    std::fs::write(dir.join("flat.pdf"), support::samples::pdf(5, false)).unwrap();
    std::fs::write(dir.join("nested.pdf"), &nested).unwrap();
    // The same document as a PDF 1.5 writer keeps it: objects packed in
    // compressed object streams, an xref stream instead of a table.
    let packed = std::process::Command::new("qpdf")
        .args(["--object-streams=generate", "--compress-streams=y"])
        .arg(dir.join("nested.pdf"))
        .arg(dir.join("packed.pdf"))
        .status()
        .unwrap();
    assert!(packed.success());
    let bytes = std::fs::read(dir.join("packed.pdf")).unwrap();
    for part in [&b"/ObjStm"[..], b"/XRef"] {
        assert!(memchr::memmem::find(&bytes, part).is_some());
    }
    assert!(memchr::memmem::find(&bytes, b"\nxref").is_none());

    let cases: &[(&str, &str, &[usize])] = &[
        ("flat.pdf", "2", &[2]),
        ("flat.pdf", "2-3", &[2, 3]),
        ("flat.pdf", "5", &[5]),
        ("nested.pdf", "2", &[2]),
        ("nested.pdf", "3-4", &[3, 4]),
        ("packed.pdf", "2-3", &[2, 3]),
        ("packed.pdf", "4-6", &[4, 5, 6]),
    ];
    let reads: Vec<(&str, &str)> = cases.iter().map(|(f, p, _)| (*f, *p)).collect();
    let results = read_pages(&dir, &reads);
    assert_eq!(results.len(), cases.len());
    for ((file, pages, want), (blocks, is_error)) in cases.iter().zip(results) {
        assert!(!is_error, "{file} {pages}: {blocks:?}");
        let text = text_of(&blocks);
        assert!(text.contains("sent as a PDF of th"), "{text}");
        let att = attachments(&blocks);
        assert_eq!(att.len(), 1);
        assert_eq!(att[0].0, "document");
        let (count, texts, boxes) = independent_read(&dir, &att[0].2);
        assert_eq!(count, want.len(), "{file} {pages}");
        let expected: Vec<String> = want.iter().map(|n| format!("Page {n} of tern")).collect();
        assert_eq!(texts, expected, "{file} {pages}");
        if *file != "flat.pdf" {
            // What the nested pages inherited: every page 300 x 200, and
            // those of the second half (4-6) turned 90 degrees.
            for (i, n) in want.iter().enumerate() {
                let page = i + 1;
                assert!(
                    boxes.contains(&format!("Page {page} size: 300 x 200 pts")),
                    "{boxes}"
                );
                let rot = if *n > 3 { 90 } else { 0 };
                assert!(
                    boxes.contains(&format!("Page {page} rot: {rot}")),
                    "{boxes}"
                );
            }
        }
        // Each page renders as the same page of the original does.
        for (i, n) in want.iter().enumerate() {
            assert_eq!(
                render(&dir.join("sent.pdf"), i + 1),
                render(&dir.join(file), *n),
                "{file} page {n}"
            );
        }
        // Only those pages' bytes go.
        assert!(
            att[0].2.len() < 2000,
            "{file} {pages}: {} bytes",
            att[0].2.len()
        );
    }
}

#[test]
fn pages_past_the_end_or_a_broken_page_tree_are_refused_with_a_reason() {
    let dir = scratch("read-pdf-pages-bad");
    std::fs::write(dir.join("three.pdf"), support::samples::pdf(3, false)).unwrap();
    let catalog = (1, "<< /Type /Catalog /Pages 2 0 R >>".to_string());
    let looped = support::samples::pdf_of(&[
        catalog.clone(),
        (2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into()),
        (3, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>".into()),
    ]);
    std::fs::write(dir.join("loop.pdf"), looped).unwrap();
    let gone = support::samples::pdf_of(&[
        catalog,
        (2, "<< /Type /Pages /Kids [3 0 R 7 0 R] /Count 2 >>".into()),
        (3, "<< /Type /Page /Parent 2 0 R >>".into()),
    ]);
    std::fs::write(dir.join("gone.pdf"), gone).unwrap();
    let results = read_pages(
        &dir,
        &[
            ("three.pdf", "4"),
            ("three.pdf", "2-5"),
            ("loop.pdf", "1"),
            ("gone.pdf", "1"),
        ],
    );
    let wants = [
        "page 4 is past its end: the document has 3 pages",
        "pages 2-5 run past its end: the document has 3 pages",
        "it is damaged: its page tree reaches object 2 twice",
        "it is damaged: object 7 is not in the file",
    ];
    for ((blocks, is_error), want) in results.iter().zip(wants) {
        let text = text_of(blocks);
        assert!(*is_error && text.contains(want), "{want}: {text}");
        assert!(attachments(blocks).is_empty());
    }
}

#[test]
fn a_notebook_reaches_the_model_as_cells_with_its_plot() {
    let dir = scratch("read-notebook");
    let png = support::samples::image("png", 64, 48);
    std::fs::write(dir.join("analysis.ipynb"), support::samples::notebook(&png)).unwrap();
    let (req, _api) = read_once(&dir, "analysis.ipynb", &[]);
    let (blocks, is_error) = result_blocks(&req);
    assert!(!is_error, "{blocks:?}");
    let text = text_of(&blocks);
    assert!(
        text.contains("<cell index=\"2\" id=\"oops\" type=\"code\""),
        "{text}"
    );
    assert!(
        text.contains("ZeroDivisionError: division by zero"),
        "{text}"
    );
    assert!(text.contains("loaded 3 rows"), "{text}");
    let att = attachments(&blocks);
    assert_eq!(att.len(), 1);
    assert_eq!(
        (att[0].0.as_str(), att[0].1.as_str()),
        ("image", "image/png")
    );
    assert_eq!(att[0].2, png);
}

#[test]
fn damaged_and_impostor_files_are_refused_with_a_reason() {
    let dir = scratch("read-damaged");
    let png = support::samples::image("png", 50, 50);
    let jpeg = support::samples::image("jpeg", 50, 50);
    let pdf = support::samples::pdf(1, false);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("cut.png", png[..png.len() - 30].to_vec(), "truncated"),
        ("cut.jpg", jpeg[..jpeg.len() / 2].to_vec(), "truncated"),
        ("fake.png", b"<svg/>".to_vec(), "named .png but is not"),
        ("fake.pdf", b"%!PS-Adobe-3.0\n".to_vec(), "not a PDF"),
        ("cut.pdf", pdf[..pdf.len() - 10].to_vec(), "truncated"),
        ("text.ipynb", b"# not json\n".to_vec(), "not valid JSON"),
    ];
    for (file, bytes, want) in cases {
        std::fs::write(dir.join(file), bytes).unwrap();
        let (req, _api) = read_once(&dir, file, &[]);
        let (blocks, is_error) = result_blocks(&req);
        let text = text_of(&blocks);
        assert!(is_error && text.contains(want), "{file}: {text}");
        assert!(attachments(&blocks).is_empty(), "{file}");
    }
}

#[test]
fn a_fifo_named_like_a_notebook_or_image_is_refused_without_hanging() {
    let dir = std::fs::canonicalize(scratch("read-fifo-media")).unwrap();
    for name in ["pipe.ipynb", "pipe.png", "pipe.pdf"] {
        let c = std::ffi::CString::new(dir.join(name).to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let began = std::time::Instant::now();
        let (req, _api) = read_once(&dir, name, &[]);
        assert!(began.elapsed() < std::time::Duration::from_secs(20));
        let (blocks, is_error) = result_blocks(&req);
        assert!(
            is_error && text_of(&blocks).contains("named pipe"),
            "{blocks:?}"
        );
    }
}

/// A photo of a few megabytes costs some 1,600 tokens, not its bytes / 4:
/// counted naively, this one request would not fit a 200k window and the
/// session would stop as "too long" right after the Read.
#[test]
fn a_large_photo_does_not_look_like_a_full_context_window() {
    let dir = scratch("read-photo-tokens");
    // Noise does not compress: a JPEG of about 1.5 MB.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let img = image::RgbImage::from_fn(1400, 1000, |_, _| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        image::Rgb([rng as u8, (rng >> 8) as u8, (rng >> 16) as u8])
    });
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 95)
        .encode_image(&img)
        .unwrap();
    assert!(bytes.len() > 900_000, "{} bytes", bytes.len());
    std::fs::write(dir.join("noise.jpg"), &bytes).unwrap();
    let (req, _api) = read_once(&dir, "noise.jpg", &["--model", "claude-sonnet-4-5"]);
    let (blocks, is_error) = result_blocks(&req);
    assert!(!is_error, "{}", text_of(&blocks));
    assert_eq!(attachments(&blocks).len(), 1);
    // The naive count of what was sent exceeds the window...
    assert!(
        req.body_len / 4 > 177_000,
        "the photo is too small to prove anything: {} bytes",
        req.body_len
    );
    // ...yet it went out, with no compaction before it.
    assert!(!req.body.contains("ran out of context"));
}

#[test]
fn a_small_window_refuses_a_pdf_it_cannot_hold() {
    let dir = scratch("read-pdf-small");
    std::fs::write(dir.join("book.pdf"), support::samples::pdf(4, false)).unwrap();
    let input = r#"{"file_path": "book.pdf"}"#;
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_read", "Read", input)]),
        standin::text_reply("ok"),
    ]);
    api.set_n_ctx(8192);
    assert_ok(&run(tern(&api.url, &dir).args(["-p", "read it"])));
    let (blocks, is_error) = result_blocks(&api.requests()[1]);
    let text = text_of(&blocks);
    assert!(is_error && text.contains("context window"), "{text}");
    assert!(
        text.contains("pdftotext"),
        "it says what to do instead: {text}"
    );
}

#[test]
fn over_the_openai_wire_images_are_data_urls_and_pdfs_are_named() {
    let dir = scratch("read-openai");
    let png = support::samples::image("png", 30, 20);
    std::fs::write(dir.join("a.png"), &png).unwrap();
    std::fs::write(dir.join("b.pdf"), support::samples::pdf(1, false)).unwrap();
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_a", "Read", r#"{"file_path": "a.png"}"#),
            ("toolu_b", "Read", r#"{"file_path": "b.pdf"}"#),
        ]),
        standin::text_reply("seen"),
    ]);
    let out = run(tern(&api.url, &dir)
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env("TERN_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
        .env("OPENAI_API_KEY", "sk-openai-test")
        .args(["-p", "look"]));
    assert_ok(&out);
    let req = &api.requests()[1];
    assert_eq!(req.path, "/v1/chat/completions");
    let msgs = body(req)
        .get("messages")
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    let tools: Vec<&Value> = msgs
        .iter()
        .filter(|m| m.str_field("role") == Some("tool"))
        .collect();
    assert_eq!(tools.len(), 2);
    assert!(
        tools[0]
            .str_field("content")
            .unwrap()
            .contains("30x20 pixels")
    );
    let pdf_note = tools[1].str_field("content").unwrap();
    assert!(
        pdf_note.contains("cannot be shown through this provider"),
        "{pdf_note}"
    );
    let last = msgs.last().unwrap();
    assert_eq!(last.str_field("role"), Some("user"));
    let parts = last.get("content").unwrap().as_array().unwrap();
    let url = parts[1].get("image_url").unwrap().str_field("url").unwrap();
    let data = url.strip_prefix("data:image/png;base64,").unwrap();
    assert_eq!(tern::harness::base64_decode(data).unwrap(), png);
}

#[test]
fn a_resumed_session_sends_its_images_again() {
    let dir = scratch("read-resume");
    let png = support::samples::image("png", 25, 25);
    std::fs::write(dir.join("logo.png"), &png).unwrap();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_logo", "Read", r#"{"file_path": "logo.png"}"#)]),
        standin::text_reply("a logo"),
        standin::text_reply("still a logo"),
    ]);
    assert_ok(&run(tern(&api.url, &dir).args(["-p", "what is it?"])));
    // The file goes away: what the model saw lives on in the transcript.
    std::fs::remove_file(dir.join("logo.png")).unwrap();
    assert_ok(&run(tern(&api.url, &dir).args(["-c", "-p", "and now?"])));
    let sent = body(&api.requests()[2]);
    let msgs = sent.get("messages").unwrap().as_array().unwrap();
    let blocks: Vec<Value> = msgs
        .iter()
        .filter_map(|m| m.get("content")?.as_array().cloned())
        .flatten()
        .filter(|b| b.str_field("type") == Some("tool_result"))
        .filter_map(|b| b.get("content")?.as_array().cloned())
        .flatten()
        .collect();
    let att = attachments(&blocks);
    assert_eq!(att.len(), 1, "{msgs:?}");
    assert_eq!(att[0].2, png);
}
