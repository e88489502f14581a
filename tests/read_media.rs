//! Read beyond text, through the real binary: images, PDFs and notebooks
//! reach the model as image and document blocks inside the tool result
//! of its next request (in the Messages API, and as data-URL parts over
//! the OpenAI-compatible wire); damaged files are refused with a reason;
//! attachments are priced by pixels and pages, not bytes, so a photo
//! does not look like a full context window; a resumed session sends
//! them again from its transcript.

mod support;

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
