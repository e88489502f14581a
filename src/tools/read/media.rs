//! Images and PDFs as attachments of a Read result. Each is checked whole
//! first (a broken one would be refused by the API, and stay in the
//! history failing every later request) and held to the API's limits and
//! to what the context window leaves for it.

use crate::media::pdf::{self, CutError};
use crate::media::{self, image, resize};
use crate::tools::ToolOutput;

use super::{MAX_PAGES_ASKED, human_bytes};

/// PDFs larger than this are refused: base64 makes them a third larger,
/// and the whole request must stay under the API's 32 MB.
pub(crate) const MAX_PDF_BYTES: usize = 20 << 20;
/// The largest PDF Read opens to take pages out of (`pages`); what it
/// sends is held to MAX_PDF_BYTES.
pub(crate) const MAX_PDF_INPUT_BYTES: usize = 100 << 20;
/// The Messages API reads at most this many pages of one document.
pub(crate) const MAX_PDF_PAGES: usize = 100;

/// The largest image file Read opens. With a scaler it shrinks whatever
/// is larger than the API takes; without one, that is its own limit.
pub(crate) fn max_image_input() -> usize {
    resize::MAX_INPUT_BYTES
}

/// How an image is fitted for the model, given the budget in tokens.
pub(crate) fn target(budget: Option<u64>) -> media::Target {
    let pixels = budget.map_or(media::MAX_PIXELS, |t| {
        t.saturating_mul(750).min(media::MAX_PIXELS)
    });
    media::Target {
        edge: media::MAX_EDGE,
        pixels,
        max_bytes: media::API_MAX_IMAGE_BASE64 / 4 * 3,
    }
}

/// An image file as the model will see it, or why it cannot be shown.
pub(crate) fn prepare(bytes: &[u8], budget: Option<u64>) -> Result<media::Prepared, String> {
    let info = image::check(bytes)?;
    resize::prepare(bytes, info, &target(budget))
}

/// A line saying what the model is shown.
pub(crate) fn describe(p: &media::Prepared, original_bytes: usize) -> String {
    let mut text = format!(
        "{} image, {}x{} pixels, {}",
        p.original.format.name(),
        p.original.width,
        p.original.height,
        human_bytes(original_bytes as u64)
    );
    if p.scaled {
        text.push_str(&format!(
            "; shown scaled to {}x{} ({}, {}) to fit the model's limits",
            p.width,
            p.height,
            p.format.name(),
            human_bytes(p.data.len() as u64)
        ));
    }
    text
}

pub(super) fn image_output(bytes: &[u8], budget: Option<u64>) -> Result<ToolOutput, String> {
    let p = prepare(bytes, budget)?;
    let mut out = ToolOutput::ok(format!("{}.", describe(&p, bytes.len())));
    out.images
        .push((p.format.media_type().to_string(), media::encode(&p.data)));
    Ok(out)
}

/// A PDF as a document block: the whole file, or with `asked` (pages,
/// first and last) a new file of just those pages, so the model reads
/// and is charged for what it asked for. A document too long or too large
/// to send whole is refused with a way to read it in parts.
pub(super) fn pdf_output(
    bytes: &[u8],
    budget: Option<u64>,
    asked: Option<(usize, usize)>,
) -> Result<ToolOutput, String> {
    let facts = pdf::check(bytes)?;
    if let Some((first, last)) = asked {
        let which = if first == last {
            format!("page {first}")
        } else {
            format!("pages {first}-{last}")
        };
        let cut =
            pdf::cut(bytes, &facts.version, first, last, MAX_PDF_BYTES).map_err(|e| match e {
                CutError::Range(total) => format!(
                    "{which} {} past its end: the document has {total} page{}",
                    if first == last { "is" } else { "run" },
                    if total == 1 { "" } else { "s" }
                ),
                CutError::TooLarge => format!(
                    "{which} alone take more than the {} one document may be; ask for fewer pages",
                    human_bytes(MAX_PDF_BYTES as u64)
                ),
                CutError::Bad(why) => why,
            })?;
        if let Some(part) = cut.bytes {
            let count = last - first + 1;
            let tokens = count as u64 * media::TOKENS_PER_PAGE;
            if let Some(budget) = budget
                && tokens > budget
            {
                let fit = budget / media::TOKENS_PER_PAGE;
                return Err(format!(
                    "{which} would take about {tokens} tokens, more than the {budget} this \
                     context window leaves for one document (about {fit} page{}); ask for fewer, \
                     or extract the text with Bash, e.g. `pdftotext -f {first} -l {last} file.pdf -`",
                    if fit == 1 { "" } else { "s" }
                ));
            }
            let text = format!(
                "PDF document (PDF {}), {which} of {}, sent as a PDF of {} ({}): its page 1 is \
                 page {first} of the document.",
                facts.version,
                cut.total,
                if count == 1 {
                    "that page".to_string()
                } else {
                    format!("those {count} pages")
                },
                human_bytes(part.len() as u64)
            );
            let mut out = ToolOutput::ok(text);
            out.images
                .push(("application/pdf".to_string(), media::encode(&part)));
            return Ok(out);
        }
        // All its pages were asked for: the file goes as it is.
    }
    let pages = facts.pages;
    if bytes.len() > MAX_PDF_BYTES {
        return Err(format!(
            "it is {}, more than the {} Read sends of one PDF; {}",
            human_bytes(bytes.len() as u64),
            human_bytes(MAX_PDF_BYTES as u64),
            in_parts(pages.min(MAX_PAGES_ASKED))
        ));
    }
    if pages > MAX_PDF_PAGES {
        return Err(format!(
            "it has {pages} pages, more than the {MAX_PDF_PAGES} the model can read of one \
             document; {}",
            in_parts(MAX_PAGES_ASKED)
        ));
    }
    let tokens = pages as u64 * media::TOKENS_PER_PAGE;
    if let Some(budget) = budget
        && tokens > budget
    {
        let fit = budget / media::TOKENS_PER_PAGE;
        return Err(format!(
            "its {pages} pages would take about {tokens} tokens, more than the {budget} this \
             context window leaves for one document (about {fit} page{}); {}",
            if fit == 1 { "" } else { "s" },
            in_parts(fit.min(MAX_PAGES_ASKED as u64) as usize)
        ));
    }
    let text = format!(
        "PDF document (PDF {}), {pages} page{}, {}.",
        facts.version,
        if pages == 1 { "" } else { "s" },
        human_bytes(bytes.len() as u64)
    );
    let mut out = ToolOutput::ok(text);
    out.images
        .push(("application/pdf".to_string(), media::encode(bytes)));
    Ok(out)
}

/// How to read a document in parts: `pages`, or its text with Bash.
fn in_parts(fit: usize) -> String {
    let text = "extract its text with Bash, e.g. `pdftotext file.pdf -`";
    match fit {
        0 => text.to_string(),
        1 => format!("read one page at a time with `pages` (e.g. \"1\"), or {text}"),
        n => format!("read it in parts with `pages` (e.g. \"1-{n}\"), or {text}"),
    }
}
