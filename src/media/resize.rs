//! Decoding and scaling images (the `images` feature, on the `image`
//! crate with only its PNG, JPEG and GIF decoders and PNG and JPEG
//! encoders). WebP is checked and passed on unchanged, as without the
//! feature.
//!
//! Every image is decoded once, which also proves its pixel data whole.
//! One that already fits goes to the model byte for byte; a larger one is
//! scaled to the longest edge and pixel count the API keeps anyway (or
//! fewer, when a small window leaves less) and encoded again: PNG when it
//! came as PNG, GIF or WebP (sharp edges and transparency survive), JPEG
//! for photographs and whenever the PNG would be too large.
//!
//! Caveat: decoding needs four bytes a pixel; images larger than
//! [`MAX_DECODE_PIXELS`] are refused rather than decoded, which keeps a
//! small board's memory (and a decompression bomb) in bounds.

use std::io::Cursor;

use image::{DynamicImage, ExtendedColorType, ImageFormat, ImageReader, Limits, RgbaImage};

use super::image::{Format, Info};
use super::{Prepared, Target, fit};

/// The largest image file Read opens; it is decoded and scaled down.
pub const MAX_INPUT_BYTES: usize = 64 << 20;
/// More pixels than this are not decoded (200 MB as RGBA).
pub const MAX_DECODE_PIXELS: u64 = 50_000_000;
/// JPEG quality when an image has to be encoded as JPEG.
const JPEG_QUALITY: u8 = 80;

pub fn prepare(bytes: &[u8], info: Info, target: &Target) -> Result<Prepared, String> {
    if info.format == Format::Webp {
        // A WebP decoder would cost 147 KB of binary (features.md); WebP
        // images go as they are, within the same limits as without one.
        return super::keep::unchanged(bytes, info, target, "tern does not scale WebP images");
    }
    let pixels = u64::from(info.width) * u64::from(info.height);
    if pixels > MAX_DECODE_PIXELS {
        return Err(format!(
            "it is {}x{} pixels, more than the {} megapixels tern decodes; make a smaller \
             copy with Bash, e.g. `convert in.png -resize 1568x1568 small.png`, and read that",
            info.width,
            info.height,
            MAX_DECODE_PIXELS / 1_000_000
        ));
    }
    let img = decode(bytes, info.format)?;
    let (w0, h0) = (img.width(), img.height());
    let (mut w, mut h) = fit(w0, h0, target.edge, target.pixels);
    if (w, h) == (w0, h0) && bytes.len() <= target.max_bytes {
        return Ok(Prepared {
            format: info.format,
            data: bytes.to_vec(),
            width: w0,
            height: h0,
            original: info,
            scaled: false,
        });
    }
    // One pixel type from here on: every generic step below is compiled
    // once, not once for each of the decoders' colour types.
    let rgba = img.into_rgba8();
    // Smaller each round until the encoding fits the byte limit.
    for _ in 0..6 {
        let small = image::imageops::resize(&rgba, w, h, image::imageops::FilterType::Triangle);
        let (format, data) = encode(&small, info.format != Format::Jpeg, target.max_bytes)?;
        if data.len() <= target.max_bytes {
            return Ok(Prepared {
                format,
                data,
                width: w,
                height: h,
                original: info,
                scaled: true,
            });
        }
        (w, h) = ((w * 3 / 4).max(1), (h * 3 / 4).max(1));
    }
    Err(format!(
        "even scaled down it stays larger than the {} bytes an image may have",
        target.max_bytes
    ))
}

fn decode(bytes: &[u8], format: Format) -> Result<DynamicImage, String> {
    let format = match format {
        Format::Png => ImageFormat::Png,
        Format::Jpeg => ImageFormat::Jpeg,
        Format::Gif => ImageFormat::Gif,
        // Not decoded (see `prepare`); named for completeness.
        Format::Webp => ImageFormat::WebP,
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_PIXELS * 4 + (16 << 20));
    reader.limits(limits);
    reader
        .decode()
        .map_err(|e| format!("it is corrupt: its pixel data cannot be decoded ({e})"))
}

/// PNG if wanted and small enough, else JPEG (transparency laid on white).
fn encode(img: &RgbaImage, png: bool, max: usize) -> Result<(Format, Vec<u8>), String> {
    use image::ImageEncoder as _;
    let failed = |e: image::ImageError| format!("it could not be encoded again ({e})");
    let (w, h) = img.dimensions();
    if png {
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(img.as_raw(), w, h, ExtendedColorType::Rgba8)
            .map_err(failed)?;
        if out.len() <= max {
            return Ok((Format::Png, out));
        }
    }
    let mut rgb = Vec::with_capacity(img.as_raw().len() / 4 * 3);
    for px in img.pixels() {
        let a = u16::from(px[3]);
        for c in 0..3 {
            rgb.push(((u16::from(px[c]) * a + 255 * (255 - a)) / 255) as u8);
        }
    }
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
        .write_image(&rgb, w, h, ExtendedColorType::Rgb8)
        .map_err(failed)?;
    Ok((Format::Jpeg, out))
}
