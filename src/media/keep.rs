//! Images as they are, for builds without the `images` feature (no pixel
//! decoder), and for WebP in any build: an image goes to the model unchanged when it is within the
//! API's limits and the window's budget, and is refused with the reason
//! and a way to shrink it otherwise. The API scales large images down
//! itself, so only bytes, sides and the budget can stop one here.

use super::image::Info;
use super::{API_MAX_SIDE, MAX_EDGE, MAX_PIXELS, fit};

use super::{Prepared, Target};

/// Nothing larger can be sent unchanged (the API's 5 MB of base64).
#[cfg_attr(feature = "images", allow(dead_code))]
pub const MAX_INPUT_BYTES: usize = super::API_MAX_IMAGE_BASE64 / 4 * 3;

#[cfg(not(feature = "images"))]
const NO_SCALER: &str = "this tern was built without image scaling (the `images` feature)";

#[cfg(not(feature = "images"))]
pub fn prepare(bytes: &[u8], info: Info, target: &Target) -> Result<Prepared, String> {
    unchanged(bytes, info, target, NO_SCALER)
}

/// The image as it is, if it fits; `why` says why it is not scaled.
pub fn unchanged(bytes: &[u8], info: Info, target: &Target, why: &str) -> Result<Prepared, String> {
    let shrink = format!(
        "{why}; make a smaller copy with Bash, e.g. \
         `convert FILE -resize 1568x1568 small.png`, and read that"
    );
    if info.width > API_MAX_SIDE || info.height > API_MAX_SIDE {
        return Err(format!(
            "it is {}x{} pixels, and the model takes at most {API_MAX_SIDE} on a side; {shrink}",
            info.width, info.height
        ));
    }
    if bytes.len() > target.max_bytes {
        return Err(format!(
            "it is {} bytes, more than the {} an image may have; {shrink}",
            bytes.len(),
            target.max_bytes
        ));
    }
    let (w, h) = fit(info.width, info.height, MAX_EDGE, MAX_PIXELS);
    if u64::from(w) * u64::from(h) > target.pixels {
        return Err(format!(
            "at {}x{} pixels it would take about {} tokens, more than this context window \
             leaves for one image (about {}); {shrink}",
            info.width,
            info.height,
            super::image_tokens(info.width, info.height),
            target.pixels / 750
        ));
    }
    Ok(Prepared {
        format: info.format,
        data: bytes.to_vec(),
        width: info.width,
        height: info.height,
        original: info,
        scaled: false,
    })
}
