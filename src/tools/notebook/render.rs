//! A notebook as Read shows it: each cell with its index, id and type,
//! its source, then its outputs — streams, results, errors (tracebacks
//! without their colour codes) as text, and images (PNG, JPEG, GIF, WebP)
//! as images the model sees. Long outputs and long notebooks are cut with
//! a note saying how to see the rest.

use super::{Notebook, joined};
use crate::json::Value;
use crate::tools::ToolOutput;
use crate::tools::read::Window;
use crate::tools::read::media as read_media;

/// The whole rendering stops near this many characters, at a cell edge.
const MAX_TEXT: usize = 100_000;
/// One output's text is cut at this many characters.
const MAX_OUTPUT_TEXT: usize = 10_000;
/// Images attached from outputs, at most (beyond 20 in one request the
/// API takes smaller images only).
const MAX_IMAGES: usize = 20;

/// Mime types of text outputs, the first one present shown.
const TEXT_KINDS: &[&str] = &[
    "text/plain",
    "text/markdown",
    "text/latex",
    "application/json",
    "text/html",
];
const IMAGE_KINDS: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

pub(crate) fn read(
    bytes: &[u8],
    window: Window,
    budget: Option<u64>,
) -> Result<ToolOutput, String> {
    let (nb, _) = Notebook::parse(bytes)?;
    let cells = nb.cells();
    let (major, minor) = nb.version();
    let mut out = ToolOutput::ok(format!(
        "Jupyter notebook: {} cell{}, {} (nbformat {major}.{minor}).\n",
        cells.len(),
        if cells.len() == 1 { "" } else { "s" },
        nb.language()
    ));
    let first = window.offset.unwrap_or(0);
    if first >= cells.len() && !cells.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "(no cell at index {first}: the notebook has {} cells, indexed from 0)",
            cells.len()
        )));
    }
    let last = window.limit.map_or(cells.len(), |n| {
        first.saturating_add(n.max(1)).min(cells.len())
    });
    let mut images = Images {
        budget,
        attached: Vec::new(),
    };
    let mut shown_to = first;
    for (index, cell) in cells.iter().enumerate().take(last).skip(first) {
        let mut text = String::new();
        let (attached, budget) = (images.attached.len(), images.budget);
        cell_text(index, cell, &mut images, &mut text);
        if out.content.len() + text.len() > MAX_TEXT && index > first {
            // Not shown this time: neither are its images.
            images.attached.truncate(attached);
            images.budget = budget;
            break;
        }
        if text.len() > MAX_TEXT {
            let kept = crate::tools::cut_str(&text, MAX_TEXT).len();
            text.truncate(kept);
            text.push_str("\n[… this cell is cut: it is too long to show whole]\n");
        }
        out.content.push('\n');
        out.content.push_str(&text);
        shown_to = index + 1;
    }
    if shown_to < cells.len() {
        out.content.push_str(&format!(
            "\n(showing cells {first}-{} of {}; Read with offset {shown_to} to see more)\n",
            shown_to.saturating_sub(1),
            cells.len(),
        ));
    } else if first > 0 {
        out.content.push_str(&format!(
            "\n(showing cells {first}-{} of {})\n",
            cells.len() - 1,
            cells.len()
        ));
    }
    if cells.is_empty() {
        out.content.push_str("\n(the notebook has no cells)\n");
    }
    out.images = images.attached;
    Ok(out)
}

/// The images of outputs, as they are attached.
struct Images {
    /// Tokens left for them, when the window sets a limit.
    budget: Option<u64>,
    attached: Vec<(String, String)>,
}

impl Images {
    /// Attaches an output's image if it is sound and there is room; the
    /// text that stands for it in the rendering.
    fn attach(&mut self, mime: &str, data: &Value) -> String {
        if self.attached.len() >= MAX_IMAGES {
            return format!("[{mime} output: not attached, {MAX_IMAGES} images already are]");
        }
        let Some(bytes) = crate::media::decode(&joined(Some(data))) else {
            return format!("[{mime} output: not attached, its data is not valid base64]");
        };
        match read_media::prepare(&bytes, self.budget) {
            Ok(p) => {
                if let Some(b) = &mut self.budget {
                    *b = b.saturating_sub(crate::media::image_tokens(p.width, p.height));
                }
                let line = format!(
                    "[{}, attached as image {}]",
                    read_media::describe(&p, bytes.len()),
                    self.attached.len() + 1
                );
                self.attached.push((
                    p.format.media_type().to_string(),
                    crate::media::encode(&p.data),
                ));
                line
            }
            Err(e) => format!("[{mime} output: not attached, {e}]"),
        }
    }
}

fn cell_text(index: usize, cell: &Value, images: &mut Images, out: &mut String) {
    let kind = cell.str_field("cell_type").unwrap_or("code");
    out.push_str(&format!("<cell index=\"{index}\""));
    if let Some(id) = cell.str_field("id") {
        out.push_str(&format!(" id=\"{id}\""));
    }
    out.push_str(&format!(" type=\"{kind}\""));
    if let Some(n) = cell.get("execution_count").and_then(Value::as_i64) {
        out.push_str(&format!(" execution_count=\"{n}\""));
    }
    out.push_str(">\n");
    let source = joined(cell.get("source"));
    out.push_str(&source);
    if !source.is_empty() && !source.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("</cell>\n");
    for output in cell
        .get("outputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        output_text(output, images, out);
    }
}

fn output_text(output: &Value, images: &mut Images, out: &mut String) {
    let kind = output.str_field("output_type").unwrap_or("unknown");
    let mut head = format!("<output type=\"{kind}\"");
    let mut body = String::new();
    match kind {
        "stream" => {
            head.push_str(&format!(
                " name=\"{}\"",
                output.str_field("name").unwrap_or("stdout")
            ));
            body = joined(output.get("text"));
        }
        "error" => {
            let traceback: Vec<String> = output
                .get("traceback")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(strip_ansi)
                .collect();
            body = if traceback.is_empty() {
                format!(
                    "{}: {}",
                    output.str_field("ename").unwrap_or("Error"),
                    output.str_field("evalue").unwrap_or("")
                )
            } else {
                traceback.join("\n")
            };
        }
        "execute_result" | "display_data" => {
            let data = output.get("data").and_then(Value::as_object);
            let mut parts = Vec::new();
            if let Some(data) = data {
                if let Some((mime, v)) =
                    TEXT_KINDS.iter().find_map(|m| data.get(m).map(|v| (*m, v)))
                {
                    let text = match v {
                        Value::String(_) | Value::Array(_) => joined(Some(v)),
                        other => other.to_json(),
                    };
                    if mime != "text/plain" {
                        head.push_str(&format!(" mime=\"{mime}\""));
                    }
                    parts.push(text);
                }
                for (mime, v) in data.iter() {
                    if IMAGE_KINDS.contains(&mime) {
                        parts.push(images.attach(mime, v));
                    } else if !TEXT_KINDS.contains(&mime) {
                        parts.push(format!("[{mime} output, not shown]"));
                    }
                }
            }
            body = parts.join("\n");
        }
        _ => {}
    }
    out.push_str(&head);
    out.push_str(">\n");
    let chars = body.chars().count();
    if chars > MAX_OUTPUT_TEXT {
        let kept: String = body.chars().take(MAX_OUTPUT_TEXT).collect();
        out.push_str(&kept);
        out.push_str(&format!(
            "\n[… {} more characters of this output not shown]",
            chars - MAX_OUTPUT_TEXT
        ));
    } else {
        out.push_str(&body);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("</output>\n");
}

/// Removes terminal escape sequences (tracebacks come coloured).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_leave_tracebacks() {
        assert_eq!(
            strip_ansi("\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"),
            "ZeroDivisionError: division by zero"
        );
    }
}
