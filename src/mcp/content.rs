//! MCP content as the model takes it. A tool's result, a prompt's
//! messages and a read resource all carry the same kinds of content; each
//! is sorted here, once, into words and the media the Messages API takes
//! whole (images of its four types, PDFs). Audio and other blobs are
//! described with their type and size rather than dropped unseen.

use crate::json::Value;
use crate::obj;

/// One piece of content, ready for either a tool result or a message.
#[derive(Debug, PartialEq)]
pub(super) enum Part {
    Text(String),
    /// Base64 data of a media type the model takes.
    Media {
        kind: String,
        data: String,
    },
}

/// Can the model be handed this media type as it is?
fn taken(kind: &str) -> bool {
    crate::media::is_image_type(kind) || kind == "application/pdf"
}

/// One content item (`text`, `image`, `audio`, `resource`,
/// `resource_link`, or a kind this tern does not know).
pub(super) fn parts(item: &Value, out: &mut Vec<Part>) {
    match item.str_field("type") {
        Some("text") => out.push(Part::Text(
            item.str_field("text").unwrap_or_default().to_string(),
        )),
        Some("image") => match (item.str_field("data"), item.str_field("mimeType")) {
            // An image of a type the API refuses would fail the whole
            // request, not just this result.
            (Some(data), Some(kind)) if crate::media::is_image_type(kind) => {
                out.push(Part::Media {
                    kind: kind.to_string(),
                    data: data.to_string(),
                })
            }
            _ => out.push(Part::Text(described(item))),
        },
        Some("resource") => match item.get("resource") {
            Some(r) => resource(r, out),
            None => out.push(Part::Text(described(item))),
        },
        Some("resource_link") => out.push(Part::Text(format!(
            "[resource link {} {}]",
            item.str_field("uri").unwrap_or_default(),
            item.str_field("name").unwrap_or_default()
        ))),
        _ => out.push(Part::Text(described(item))),
    }
}

/// A resource's contents: its text under its address; a blob the model
/// takes, announced and then passed on; any other blob described.
pub(super) fn resource(r: &Value, out: &mut Vec<Part>) {
    let uri = r.str_field("uri").unwrap_or_default();
    let kind = r
        .str_field("mimeType")
        .unwrap_or("application/octet-stream");
    if let Some(t) = r.str_field("text") {
        out.push(Part::Text(format!("[resource {uri}]\n{t}")));
    } else if let Some(blob) = r.str_field("blob") {
        let size = size_of_base64(blob);
        if taken(kind) {
            out.push(Part::Text(format!(
                "[resource {uri}: {kind}, {size}, attached]"
            )));
            out.push(Part::Media {
                kind: kind.to_string(),
                data: blob.to_string(),
            });
        } else {
            out.push(Part::Text(format!(
                "[resource {uri}: {kind}, {size} — binary, not passed on]"
            )));
        }
    }
}

/// A part as a message's content block: text, an image, or a document.
pub(super) fn block(part: Part) -> Value {
    match part {
        Part::Text(t) => obj! { "type" => "text", "text" => t },
        Part::Media { kind, data } => {
            let block = if kind == "application/pdf" {
                "document"
            } else {
                "image"
            };
            obj! {
                "type" => block,
                "source" => obj! { "type" => "base64", "media_type" => kind, "data" => data },
            }
        }
    }
}

/// "[audio content: audio/wav, 1.6 KB — …]" for content the model cannot
/// take.
fn described(content: &Value) -> String {
    let kind = content.str_field("type").unwrap_or("unknown");
    let mime = content.str_field("mimeType").unwrap_or("unknown type");
    match content.str_field("data") {
        Some(data) => format!(
            "[{kind} content: {mime}, {} — the model takes no {kind}; not passed on]",
            size_of_base64(data)
        ),
        None => format!("[{kind} content, not shown]"),
    }
}

fn size_of_base64(data: &str) -> String {
    let bytes = data.trim_end_matches('=').len() * 3 / 4;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts_of(json: &str) -> Vec<Part> {
        let mut out = Vec::new();
        parts(&crate::json::parse(json).unwrap(), &mut out);
        out
    }

    #[test]
    fn content_the_model_cannot_take_is_described_with_its_size() {
        let audio = parts_of(r#"{"type":"audio","mimeType":"audio/wav","data":"AAAAAAAA"}"#);
        assert!(
            matches!(&audio[..], [Part::Text(t)] if t.contains("audio/wav, 6 bytes")),
            "{audio:?}"
        );
        let blob = parts_of(
            r#"{"type":"resource","resource":{"uri":"blob://x","mimeType":"application/zip","blob":"AAAA"}}"#,
        );
        assert!(
            matches!(&blob[..], [Part::Text(t)] if t.contains("application/zip, 3 bytes — binary")),
            "{blob:?}"
        );
        assert_eq!(size_of_base64(&"A".repeat(4 * 1024)), "3.0 KB");
    }

    #[test]
    fn images_and_pdfs_pass_whole_in_tool_results_and_messages_alike() {
        let png = parts_of(
            r#"{"type":"resource","resource":{"uri":"blob://x","mimeType":"image/png","blob":"iVBORw0KGgo="}}"#,
        );
        assert!(matches!(&png[0], Part::Text(t) if t.contains("image/png, 8 bytes, attached")));
        assert_eq!(
            png[1],
            Part::Media {
                kind: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }
        );
        let mut pdf = parts_of(
            r#"{"type":"resource","resource":{"uri":"f://a.pdf","mimeType":"application/pdf","blob":"JVBERi0="}}"#,
        );
        let doc = block(pdf.remove(1));
        assert_eq!(doc.str_field("type"), Some("document"));
        assert_eq!(
            doc.get("source").and_then(|s| s.str_field("media_type")),
            Some("application/pdf")
        );
    }

    #[test]
    fn an_image_of_a_type_the_api_refuses_is_described_not_sent() {
        // Sent as an image block, it would fail the whole request.
        let tiff = parts_of(r#"{"type":"image","mimeType":"image/tiff","data":"AAAA"}"#);
        assert!(
            matches!(&tiff[..], [Part::Text(t)] if t.contains("image/tiff")),
            "{tiff:?}"
        );
        let gif = parts_of(r#"{"type":"image","mimeType":"image/gif","data":"AAAA"}"#);
        assert!(matches!(&gif[..], [Part::Media { .. }]), "{gif:?}");
    }
}
