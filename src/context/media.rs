//! What images and documents in a conversation cost. Their base64 is
//! most of a request's bytes but not of its tokens: the API charges an
//! image by its pixels (at most about 1,600 tokens) and a PDF by its
//! pages. Counting their bytes at four a token would make one photo look
//! like a third of a million tokens and end the session as "too long".
//!
//! The API also limits a request's bytes (32 MB) and its images (100):
//! [`shed`] takes the oldest attachments out of what is sent when the
//! conversation outgrows either.

use std::cell::RefCell;

use crate::json::Value;
use crate::media;
use crate::obj;

/// Requests stay under this many bytes (the API takes 32 MB).
pub const MAX_REQUEST_BYTES: usize = 30 << 20;
/// Attachments in one request at most (the API takes 100 images).
pub const MAX_ATTACHMENTS: usize = 100;
/// Tokens of an image whose size cannot be read: the most one costs.
const UNKNOWN_IMAGE_TOKENS: u64 = 1_600;

const SHED: &str = "[An image or document shown here earlier was taken out to keep the \
                    request within the API's limits; Read the file again if it is still needed]";

/// Bytes of attachment data in `v` and the tokens they stand for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub bytes: usize,
    pub tokens: u64,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        self.bytes += other.bytes;
        self.tokens += other.tokens;
    }
}

/// The attachments of messages (their blocks and the blocks inside
/// their tool results).
pub fn cost(messages: &[Value]) -> Cost {
    let mut total = Cost::default();
    for m in messages {
        total += cost_of(m.get("content"));
    }
    total
}

/// The attachments of one message's (or tool result's) content.
pub fn cost_of(content: Option<&Value>) -> Cost {
    let mut total = Cost::default();
    for b in content.and_then(Value::as_array).into_iter().flatten() {
        total += block_cost(b);
    }
    total
}

/// The attachments of one content block: itself, or those inside a tool
/// result.
pub fn block_cost(b: &Value) -> Cost {
    match b.str_field("type") {
        Some("tool_result") => cost_of(b.get("content")),
        Some(kind @ ("image" | "document")) => {
            match b.get("source").and_then(|s| s.str_field("data")) {
                Some(data) => Cost {
                    bytes: data.len(),
                    tokens: attachment_tokens(kind == "image", data),
                },
                None => Cost::default(),
            }
        }
        _ => Cost::default(),
    }
}

fn attachment_tokens(image: bool, data: &str) -> u64 {
    if image {
        // The header is at the start, a JPEG's frame after its metadata.
        return media::decode_prefix(data, 64 << 10)
            .and_then(|head| media::image::dimensions(&head))
            .map_or(UNKNOWN_IMAGE_TOKENS, |i| {
                media::image_tokens(i.width, i.height)
            });
    }
    let key = (data.len(), fingerprint(data));
    if let Some(t) = MEMO.with(|m| m.borrow().iter().find(|(k, _)| *k == key).map(|(_, t)| *t)) {
        return t;
    }
    let pages = media::decode(data).and_then(|bytes| media::pdf::check(&bytes).ok());
    let tokens = match pages {
        Some(f) => f.pages as u64 * media::TOKENS_PER_PAGE,
        // Not a PDF this can read: at most what the API reads of one.
        None => super::estimate_bytes(data.len()).min(100 * media::TOKENS_PER_PAGE),
    };
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 64 {
            m.remove(0);
        }
        m.push((key, tokens));
    });
    tokens
}

// Thread-local because pricing is asked by the context accounting of
// every request, far from anything that could own the table.
thread_local! {
    /// Documents already priced: decoding and scanning a 20 MB PDF
    /// before every request would be waste. Keyed by length and a
    /// fingerprint of the data.
    static MEMO: RefCell<Vec<((usize, u64), u64)>> = const { RefCell::new(Vec::new()) };
}

/// FNV-1a over the first and last 4 KB and a sample between.
fn fingerprint(data: &str) -> u64 {
    let b = data.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &x in bytes {
            h ^= u64::from(x);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(&b[..b.len().min(4096)]);
    eat(&b[b.len().saturating_sub(4096)..]);
    for i in (0..b.len()).step_by((b.len() / 4096).max(1)) {
        eat(&b[i..=i]);
    }
    h
}

/// Replaces the oldest attachments with a note until `excess` bytes are
/// gone and at most [`MAX_ATTACHMENTS`] remain. Returns how many were
/// taken out.
pub fn shed(messages: &mut [Value], mut excess: usize) -> usize {
    let total = count(messages);
    let mut over = total.saturating_sub(MAX_ATTACHMENTS);
    let mut taken = 0;
    for m in messages.iter_mut() {
        if excess == 0 && over == 0 {
            break;
        }
        let Some(Value::Array(blocks)) = m.as_object_mut().and_then(|o| o.get_mut("content"))
        else {
            continue;
        };
        for b in blocks.iter_mut() {
            let inner = match b.as_object_mut().and_then(|o| o.get_mut("content")) {
                Some(Value::Array(inner)) => inner,
                _ => continue,
            };
            for part in inner.iter_mut() {
                if excess == 0 && over == 0 {
                    break;
                }
                if !matches!(part.str_field("type"), Some("image" | "document")) {
                    continue;
                }
                let size = part.to_json().len();
                *part = obj! { "type" => "text", "text" => SHED };
                excess = excess.saturating_sub(size);
                over = over.saturating_sub(1);
                taken += 1;
            }
        }
    }
    taken
}

/// Attachments inside tool results.
fn count(messages: &[Value]) -> usize {
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter_map(|b| b.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|p| matches!(p.str_field("type"), Some("image" | "document")))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_attachment(kind: &str, media_type: &str, data: &str) -> Value {
        obj! { "role" => "user", "content" => vec![obj! {
            "type" => "tool_result", "tool_use_id" => "t", "content" => vec![
                obj! { "type" => "text", "text" => "x" },
                obj! { "type" => kind, "source" => obj! {
                    "type" => "base64", "media_type" => media_type, "data" => data,
                } },
            ],
        }] }
    }

    /// A PNG header (signature, IHDR with the size): enough for a price.
    fn png_head(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn images_cost_their_pixels_not_their_bytes() {
        let mut data = png_head(200, 100);
        data.resize(3 << 20, 7);
        let text = media::encode(&data);
        let c = cost(&[with_attachment("image", "image/png", &text)]);
        assert_eq!(c.bytes, text.len());
        assert_eq!(c.tokens, media::image_tokens(200, 100));
        assert!(c.tokens < 100, "{c:?}");
        // Unreadable: the most an image can cost, not its bytes.
        let c = cost(&[with_attachment("image", "image/png", "AAAA")]);
        assert_eq!(c.tokens, UNKNOWN_IMAGE_TOKENS);
    }

    #[test]
    fn shedding_takes_the_oldest_attachments_first() {
        let big = "A".repeat(1000);
        let mut msgs: Vec<Value> = (0..3)
            .map(|_| with_attachment("image", "image/png", &big))
            .collect();
        assert_eq!(shed(&mut msgs, 1500), 2);
        let json = Value::Array(msgs.clone()).to_json();
        assert_eq!(json.matches(SHED).count(), 2);
        assert_eq!(cost(&msgs[2..]).bytes, 1000, "the newest is kept");
        assert_eq!(shed(&mut msgs, 0), 0);
    }
}
