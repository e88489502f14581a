//! PNG, JPEG, GIF and WebP as containers: which format a file is, its
//! size in pixels, and whether its structure is whole.
//!
//! This is no decoder. It walks the chunks, segments and blocks each
//! format is made of, so a file cut short or with a broken chunk is
//! refused with a reason before it reaches the model (the API answers a
//! bad image with an error that would then stay in the history and fail
//! every later request). PNG chunks carry CRCs and are checked; the
//! compressed pixel data of the other formats is only checked for being
//! there and being terminated.

use super::{be16, be32, le16, le24};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl Format {
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::Webp => "image/webp",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Png => "PNG",
            Format::Jpeg => "JPEG",
            Format::Gif => "GIF",
            Format::Webp => "WebP",
        }
    }
}

/// What the header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    pub format: Format,
    pub width: u32,
    pub height: u32,
}

/// The format by its signature, when it is one of the four.
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Format::Png)
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(Format::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(Format::Gif)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(Format::Webp)
    } else {
        None
    }
}

/// The size in pixels from the header alone, without checking the rest:
/// for estimates over images already in the conversation.
pub fn dimensions(bytes: &[u8]) -> Option<Info> {
    let format = sniff(bytes)?;
    let (width, height) = match format {
        Format::Png => (be32(bytes, 16)?, be32(bytes, 20)?),
        Format::Gif => (u32::from(le16(bytes, 6)?), u32::from(le16(bytes, 8)?)),
        Format::Jpeg => jpeg(bytes, false).ok()?,
        Format::Webp => webp(bytes, false).ok()?,
    };
    Some(Info {
        format,
        width,
        height,
    })
}

/// Checks the whole structure and returns the header's facts, or why the
/// file cannot be an intact image of its kind.
pub fn check(bytes: &[u8]) -> Result<Info, String> {
    let format = sniff(bytes).ok_or("it is not a PNG, JPEG, GIF or WebP image")?;
    let (width, height) = match format {
        Format::Png => png(bytes)?,
        Format::Jpeg => jpeg(bytes, true)?,
        Format::Gif => gif(bytes)?,
        Format::Webp => webp(bytes, true)?,
    };
    if width == 0 || height == 0 {
        return Err(format!(
            "the {} header gives a size of {width}x{height} pixels",
            format.name()
        ));
    }
    Ok(Info {
        format,
        width,
        height,
    })
}

const CUT: &str = "it is truncated (the file ends inside its data)";

fn png(b: &[u8]) -> Result<(u32, u32), String> {
    let mut at = 8;
    let mut size = None;
    let mut seen_data = false;
    loop {
        let len = be32(b, at).ok_or(CUT)? as usize;
        let kind = b.get(at + 4..at + 8).ok_or(CUT)?;
        let end = (at + 8).checked_add(len).ok_or(CUT)?;
        let data = b.get(at + 8..end).ok_or(CUT)?;
        let crc = be32(b, end).ok_or(CUT)?;
        if crc32(&b[at + 4..end]) != crc {
            return Err(format!(
                "it is corrupt: the PNG chunk {} at byte {at} fails its checksum",
                String::from_utf8_lossy(kind)
            ));
        }
        match kind {
            b"IHDR" if size.is_none() && len == 13 => {
                size = Some((be32(data, 0).ok_or(CUT)?, be32(data, 4).ok_or(CUT)?));
            }
            _ if size.is_none() => return Err("it is corrupt: the PNG has no IHDR chunk".into()),
            b"IDAT" => seen_data = true,
            b"IEND" => break,
            _ => {}
        }
        at = end + 4;
    }
    if !seen_data {
        return Err("it is corrupt: the PNG has no image data (IDAT)".into());
    }
    size.ok_or_else(|| "it is corrupt: the PNG has no IHDR chunk".into())
}

/// Walks JPEG segments to the frame header; with `whole`, on through the
/// scans to the end-of-image marker.
fn jpeg(b: &[u8], whole: bool) -> Result<(u32, u32), String> {
    let mut at = 2;
    let mut size = None;
    loop {
        // Markers may be padded with any number of 0xff bytes.
        while b.get(at) == Some(&0xff) && b.get(at + 1) == Some(&0xff) {
            at += 1;
        }
        if b.get(at) != Some(&0xff) {
            return Err(if at >= b.len() {
                CUT.into()
            } else {
                format!("it is corrupt: no JPEG marker at byte {at}")
            });
        }
        let marker = *b.get(at + 1).ok_or(CUT)?;
        at += 2;
        match marker {
            0xd9 => break,
            0x01 | 0xd0..=0xd7 => continue,
            _ => {}
        }
        let len = usize::from(be16(b, at).ok_or(CUT)?);
        if len < 2 {
            return Err(format!("it is corrupt: a JPEG segment of length {len}"));
        }
        let seg = b.get(at + 2..at + len).ok_or(CUT)?;
        if matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let h = u32::from(be16(seg, 1).ok_or(CUT)?);
            let w = u32::from(be16(seg, 3).ok_or(CUT)?);
            size = Some((w, h));
            if !whole {
                return Ok((w, h));
            }
        }
        at += len;
        if marker == 0xda {
            // Entropy-coded data runs to the next marker that is neither
            // a stuffed zero nor a restart.
            loop {
                let i = memchr::memchr(0xff, b.get(at..).ok_or(CUT)?).ok_or(CUT)?;
                at += i;
                match b.get(at + 1) {
                    None => return Err(CUT.into()),
                    Some(0x00 | 0xd0..=0xd7 | 0xff) => at += 1,
                    Some(_) => break,
                }
            }
        }
    }
    let size = size.ok_or("it is corrupt: the JPEG has no frame header")?;
    Ok(size)
}

fn gif(b: &[u8]) -> Result<(u32, u32), String> {
    let (w, h) = (
        u32::from(le16(b, 6).ok_or(CUT)?),
        u32::from(le16(b, 8).ok_or(CUT)?),
    );
    let flags = *b.get(10).ok_or(CUT)?;
    let mut at = 13;
    if flags & 0x80 != 0 {
        at += 3 << ((flags & 7) + 1);
    }
    let mut frames = 0;
    loop {
        match *b.get(at).ok_or(CUT)? {
            0x3b => break,
            0x21 => at = sub_blocks(b, at + 2)?,
            0x2c => {
                let local = *b.get(at + 9).ok_or(CUT)?;
                at += 10;
                if local & 0x80 != 0 {
                    at += 3 << ((local & 7) + 1);
                }
                // LZW minimum code size, then the data.
                at = sub_blocks(b, at + 1)?;
                frames += 1;
            }
            other => {
                return Err(format!(
                    "it is corrupt: unknown GIF block 0x{other:02x} at byte {at}"
                ));
            }
        }
    }
    if frames == 0 {
        return Err("it is corrupt: the GIF has no image".into());
    }
    Ok((w, h))
}

/// Skips a chain of GIF data sub-blocks; returns where the next block is.
fn sub_blocks(b: &[u8], mut at: usize) -> Result<usize, String> {
    loop {
        let n = usize::from(*b.get(at).ok_or(CUT)?);
        at += 1;
        if n == 0 {
            return Ok(at);
        }
        at += n;
    }
}

fn webp(b: &[u8], whole: bool) -> Result<(u32, u32), String> {
    let riff = le32(b, 4).ok_or(CUT)? as usize;
    let end = riff.checked_add(8).ok_or(CUT)?;
    if whole && end > b.len() {
        return Err(CUT.into());
    }
    let body = &b[..end.min(b.len())];
    let mut at = 12;
    let mut size = None;
    let mut has_image = false;
    while at + 8 <= body.len() {
        let kind = &body[at..at + 4];
        let len = le32(body, at + 4).ok_or(CUT)? as usize;
        let data_end = (at + 8).checked_add(len).ok_or(CUT)?;
        let data = body.get(at + 8..data_end);
        if whole && data.is_none() {
            return Err(CUT.into());
        }
        let data = data.unwrap_or(&body[at + 8..]);
        match kind {
            b"VP8X" if size.is_none() => {
                let w = le24(data, 4).ok_or(CUT)? + 1;
                let h = le24(data, 7).ok_or(CUT)? + 1;
                size = Some((w, h));
            }
            b"VP8 " => {
                if data.get(3..6) != Some(&[0x9d, 0x01, 0x2a]) {
                    return Err("it is corrupt: the WebP VP8 frame has no start code".into());
                }
                let w = u32::from(le16(data, 6).ok_or(CUT)? & 0x3fff);
                let h = u32::from(le16(data, 8).ok_or(CUT)? & 0x3fff);
                size.get_or_insert((w, h));
                has_image = true;
            }
            b"VP8L" => {
                if data.first() != Some(&0x2f) {
                    return Err("it is corrupt: the WebP lossless signature is missing".into());
                }
                let bits = le32(data, 1).ok_or(CUT)?;
                size.get_or_insert(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1));
                has_image = true;
            }
            b"ANMF" => has_image = true,
            _ => {}
        }
        if !whole && size.is_some() {
            break;
        }
        // Chunks are padded to an even length.
        at = data_end + (len & 1);
    }
    if whole && !has_image {
        return Err("it is corrupt: the WebP has no image data".into());
    }
    size.ok_or_else(|| "it is corrupt: the WebP has no size".into())
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// CRC-32 (IEEE), as PNG chunks carry it; a table built at compile time.
fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    let mut c = !0u32;
    for &byte in data {
        c = TABLE[((c ^ u32::from(byte)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::samples;

    const ALL: [(&str, Format); 4] = [
        ("png", Format::Png),
        ("jpeg", Format::Jpeg),
        ("gif", Format::Gif),
        ("webp", Format::Webp),
    ];

    #[test]
    fn real_files_of_each_format_pass_with_their_size() {
        for (name, format) in ALL {
            let bytes = samples::image(name, 97, 41);
            let info = check(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!((info.format, info.width, info.height), (format, 97, 41));
            assert_eq!(dimensions(&bytes), Some(info), "{name}");
        }
    }

    #[test]
    fn truncated_files_of_each_format_are_refused() {
        for (name, _) in ALL {
            let bytes = samples::image(name, 64, 64);
            for keep in [bytes.len() - 1, bytes.len() * 2 / 3, 40, 12] {
                let err = check(&bytes[..keep]).expect_err(name);
                assert!(
                    err.contains("truncated") || err.contains("corrupt"),
                    "{name} cut to {keep}: {err}"
                );
            }
        }
    }

    #[test]
    fn a_png_with_a_damaged_chunk_fails_its_checksum() {
        let mut bytes = samples::image("png", 32, 32);
        let idat = memchr::memmem::find(&bytes, b"IDAT").unwrap();
        bytes[idat + 10] ^= 0x55;
        let err = check(&bytes).unwrap_err();
        assert!(err.contains("IDAT") && err.contains("checksum"), "{err}");
    }

    #[test]
    fn other_files_are_not_images() {
        assert!(check(b"hello world").unwrap_err().contains("not a PNG"));
        assert_eq!(sniff(b"BM\x00\x00"), None);
    }

    #[test]
    fn crc_matches_the_png_specification_example() {
        // The CRC of "IEND" with no data, as every PNG ends.
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
    }
}
