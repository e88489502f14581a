//! Images and PDFs as attachments of a Read result. Each is checked whole
//! first (a broken one would be refused by the API, and stay in the
//! history failing every later request) and held to the API's limits and
//! to what the context window leaves for it.

use crate::media::{self, image, pdf, resize};
use crate::tools::ToolOutput;

use super::human_bytes;

/// PDFs larger than this are refused: base64 makes them a third larger,
/// and the whole request must stay under the API's 32 MB.
pub(crate) const MAX_PDF_BYTES: usize = 20 << 20;
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

/// A PDF as a document block. tern cannot cut pages out of a PDF, so
/// `asked` (pages, first and last) is checked against the document and
/// named in the text, and the whole document goes when it fits; when it
/// does not, the reason says how to extract those pages.
pub(super) fn pdf_output(
    bytes: &[u8],
    budget: Option<u64>,
    asked: Option<(usize, usize)>,
) -> Result<ToolOutput, String> {
    let facts = pdf::check(bytes)?;
    let pages = facts.pages;
    let (from, to) = asked.unwrap_or((1, 10));
    let instead = format!(
        "extract what you need as text with Bash, e.g. `pdftotext -f {from} -l {to} file.pdf -`, \
         or cut those pages into a new PDF with `qpdf file.pdf --pages . {from}-{to} -- part.pdf` \
         and Read that"
    );
    if let Some((first, last)) = asked
        && last > pages
    {
        return Err(format!(
            "pages {first}-{last} asks for page {last}, but the document has {pages} page{}",
            if pages == 1 { "" } else { "s" }
        ));
    }
    if pages > MAX_PDF_PAGES {
        return Err(format!(
            "it has {pages} pages, more than the {MAX_PDF_PAGES} the model can read of one \
             document; {instead}"
        ));
    }
    let tokens = pages as u64 * media::TOKENS_PER_PAGE;
    if let Some(budget) = budget
        && tokens > budget
    {
        let fit = budget / media::TOKENS_PER_PAGE;
        return Err(format!(
            "its {pages} pages would take about {tokens} tokens, more than the {budget} this \
             context window leaves for one document (about {fit} pages); {instead}"
        ));
    }
    let mut text = format!(
        "PDF document (PDF {}), {pages} page{}, {}.",
        facts.version,
        if pages == 1 { "" } else { "s" },
        human_bytes(bytes.len() as u64)
    );
    if let Some((first, last)) = asked
        && (first, last) != (1, pages)
    {
        let which = if first == last {
            format!("page {first}")
        } else {
            format!("pages {first}-{last}")
        };
        text.push_str(&format!(
            " You asked for {which}: the whole document is attached (Read does not cut PDFs); \
             look at {which}."
        ));
    }
    let mut out = ToolOutput::ok(text);
    out.images
        .push(("application/pdf".to_string(), media::encode(bytes)));
    Ok(out)
}
