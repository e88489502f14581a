//! Images and PDFs as the model receives them: recognising the formats,
//! checking that a file is whole, its size in pixels or pages, base64,
//! and what each costs in tokens.
//!
//! A leaf beside `json`: the Read tool checks files with it before they
//! become image or document blocks, and token accounting (`context`)
//! prices the blocks already in a conversation with it. Decoding and
//! resizing pixels is [`resize`], behind the `images` feature.

pub mod image;
pub mod keep;
pub mod pdf;
/// Fits an image to the model's limits: decodes and scales with the
/// `images` feature, checks and passes it on unchanged without.
#[cfg(feature = "images")]
pub mod resize;
#[cfg(test)]
#[path = "../../tests/it/support/samples.rs"]
pub(crate) mod samples;
#[cfg(not(feature = "images"))]
pub use keep as resize;

use base64::Engine as _;

/// The longest edge the Messages API keeps; larger images are scaled
/// down by the API before the model sees them, so sending more pixels
/// buys nothing.
pub const MAX_EDGE: u32 = 1568;
/// About the most pixels the API keeps of one image (1,600 tokens; its
/// table of sizes that are not scaled tops out near 1.2 megapixels).
pub const MAX_PIXELS: u64 = 1_200_000;
/// The API refuses images larger than this on either side.
pub const API_MAX_SIDE: u32 = 8000;
/// The API's limit on one image, in bytes of base64.
pub const API_MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;
/// Tokens the API charges a full page of a PDF at most, about: its text
/// and the picture of the page.
pub const TOKENS_PER_PAGE: u64 = 2_000;

/// The media types the Messages API takes as image blocks.
#[cfg(feature = "mcp")]
pub fn is_image_type(media_type: &str) -> bool {
    matches!(
        media_type,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    )
}

/// What an image is to be fitted into.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The longest side, in pixels (scaling needs it; unscaled images
    /// are held to the API's side limit).
    #[cfg_attr(not(feature = "images"), allow(dead_code))]
    pub edge: u32,
    /// Width × height at most.
    pub pixels: u64,
    /// Bytes of the encoded image at most.
    pub max_bytes: usize,
}

/// An image ready to send.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub format: image::Format,
    pub data: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// What the file was.
    pub original: image::Info,
    /// Decoded and encoded again, smaller.
    pub scaled: bool,
}

/// Tokens an image of this size costs once the API has fitted it to
/// [`MAX_EDGE`] and [`MAX_PIXELS`]: width × height / 750.
pub fn image_tokens(width: u32, height: u32) -> u64 {
    let (w, h) = fit(width, height, MAX_EDGE, MAX_PIXELS);
    (u64::from(w) * u64::from(h)).div_ceil(750).max(1)
}

/// The size that fits `width`×`height` into a longest edge of `edge` and
/// at most `pixels` pixels, keeping the aspect ratio (never enlarging).
pub fn fit(width: u32, height: u32, edge: u32, pixels: u64) -> (u32, u32) {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let by_edge = f64::from(edge) / w.max(h);
    let by_area = (pixels as f64 / (w * h)).sqrt();
    let scale = by_edge.min(by_area).min(1.0);
    // A hair over, so that 3200 × (1568 / 3200) is 1568, not 1567.
    let side = |v: f64| ((v * scale + 1e-6).floor() as u32).max(1);
    (side(w), side(h))
}

pub fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes standard base64, with or without padding, ignoring line
/// breaks (notebooks wrap their image data).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let clean: String;
    let text = if text.contains(['\n', '\r', ' ']) {
        clean = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        &clean
    } else {
        text
    };
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(text).ok()
}

/// Decodes at most the first `max` bytes' worth of `text` (for headers).
pub fn decode_prefix(text: &str, max: usize) -> Option<Vec<u8>> {
    let chars = (max.div_ceil(3) * 4).min(text.len() / 4 * 4);
    let head = text.get(..chars)?;
    decode(head)
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 3)?;
    Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_keeps_the_aspect_and_never_enlarges() {
        assert_eq!(fit(100, 50, MAX_EDGE, MAX_PIXELS), (100, 50));
        assert_eq!(fit(3136, 1000, MAX_EDGE, u64::MAX), (1568, 500));
        let (w, h) = fit(2000, 2000, MAX_EDGE, MAX_PIXELS);
        assert!(
            u64::from(w) * u64::from(h) <= MAX_PIXELS && w == h,
            "{w}x{h}"
        );
        // The API's own example: 1092x1092 is about 1,590 tokens.
        assert_eq!(image_tokens(1092, 1092), 1590);
        assert_eq!(image_tokens(200, 200), 54);
    }

    #[test]
    fn base64_round_trips_and_tolerates_wrapping() {
        let data: Vec<u8> = (0..=255).collect();
        let text = encode(&data);
        assert_eq!(decode(&text).unwrap(), data);
        let wrapped: String = text
            .as_bytes()
            .chunks(76)
            .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
            .collect();
        assert_eq!(decode(&wrapped).unwrap(), data);
        assert_eq!(decode(text.trim_end_matches('=')).unwrap(), data);
        assert!(decode("not base64!").is_none());
        assert_eq!(decode_prefix(&text, 6).unwrap(), &data[..6]);
    }
}
