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

pub(super) fn pdf_output(bytes: &[u8], budget: Option<u64>) -> Result<ToolOutput, String> {
    let facts = pdf::check(bytes)?;
    let pages = facts.pages;
    let instead = "extract what you need as text with Bash, e.g. \
                   `pdftotext -f 1 -l 10 file.pdf -`, or split it with `qpdf --pages`";
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
    let mut out = ToolOutput::ok(format!(
        "PDF document (PDF {}), {pages} page{}, {}.",
        facts.version,
        if pages == 1 { "" } else { "s" },
        human_bytes(bytes.len() as u64)
    ));
    out.images
        .push(("application/pdf".to_string(), media::encode(bytes)));
    Ok(out)
}
