//! What the session knows about files it has read, so Write and Edit can
//! refuse to overwrite a file the model has not seen or that changed on
//! disk since it was read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl Stamp {
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

/// Files up to this size are remembered by their content too, so one
/// whose time changed but whose bytes did not is still fresh.
const MAX_HASHED: u64 = 16 << 20;

#[derive(Debug, Clone, Copy)]
struct Seen {
    stamp: Stamp,
    /// The content's hash, for files up to `MAX_HASHED`.
    hash: Option<u64>,
}

#[derive(Default, Clone)]
pub struct FileStamps {
    seen: HashMap<PathBuf, Seen>,
    /// Keyed per session: content cannot be chosen to collide.
    keys: std::hash::RandomState,
}

impl FileStamps {
    /// Records the file as the model now knows it.
    pub fn record(&mut self, path: &Path) {
        if let Some(stamp) = Stamp::of(path) {
            let hash = self.hash_of(path, stamp.len);
            self.seen.insert(path.to_path_buf(), Seen { stamp, hash });
        }
    }

    /// Ok when the model has read the file and it has not changed since:
    /// the same time and size, or (a touch, a formatter that changed
    /// nothing) a new time over the same bytes.
    pub fn check_fresh(&self, path: &Path, shown: &str) -> Result<(), String> {
        let Some(seen) = self.seen.get(path) else {
            return Err(format!(
                "{shown} has not been read in this session. Read it first, then edit."
            ));
        };
        let now = Stamp::of(path);
        if now == Some(seen.stamp) {
            return Ok(());
        }
        let same_bytes = match (now, seen.hash) {
            (Some(now), Some(hash)) if now.len == seen.stamp.len => {
                self.hash_of(path, now.len) == Some(hash)
            }
            _ => false,
        };
        if same_bytes {
            return Ok(());
        }
        Err(format!(
            "{shown} was modified since it was last read (by the user or a command). Read it again before editing."
        ))
    }

    fn hash_of(&self, path: &Path, len: u64) -> Option<u64> {
        use std::hash::{BuildHasher, Hasher};
        use std::io::Read;
        if len > MAX_HASHED {
            return None;
        }
        // Not following a link in the last component, nor opening a FIFO
        // put in the file's place: Read's own opener.
        let file = super::read::open_regular(path).ok()?;
        let mut hasher = self.keys.build_hasher();
        let mut reader = file.take(MAX_HASHED + 1);
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = reader.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            total += n as u64;
            hasher.write(&buf[..n]);
        }
        hasher.write_u64(total);
        (total <= MAX_HASHED).then(|| hasher.finish())
    }
}

/// Writes `content` to `path` through a temporary file and a rename, so a
/// crash or full disk never leaves a half-written file behind.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tern-{}", std::process::id()));
    let result = (|| {
        std::fs::write(&tmp, content)?;
        // Keep the original file's permissions (an executable script stays executable).
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// True when the leading bytes look binary (a NUL byte, as git and grep judge).
pub fn looks_binary(head: &[u8]) -> bool {
    memchr::memchr(0, &head[..head.len().min(8192)]).is_some()
}

/// How a text file's bytes stand for its text, so an Edit writes it back
/// the way it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Utf8,
    /// UTF-8 behind a byte order mark (Windows editors write one).
    Utf8Bom,
    Utf16Le,
    Utf16Be,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

impl Encoding {
    /// Told by the byte order mark alone: UTF-16 without one is not
    /// guessed (it reads as binary, full of NULs).
    pub(crate) fn sniff(head: &[u8]) -> Encoding {
        if head.starts_with(UTF8_BOM) {
            Encoding::Utf8Bom
        } else if head.starts_with(b"\xFF\xFE") {
            Encoding::Utf16Le
        } else if head.starts_with(b"\xFE\xFF") {
            Encoding::Utf16Be
        } else {
            Encoding::Utf8
        }
    }

    pub(crate) fn is_utf16(self) -> bool {
        matches!(self, Encoding::Utf16Le | Encoding::Utf16Be)
    }

    /// The text of `bytes` (its mark removed). UTF-8 that is not valid
    /// is an error here: Edit must write back exactly what it did not
    /// change.
    pub(crate) fn decode(self, bytes: &[u8]) -> Result<String, String> {
        match self {
            Encoding::Utf8 | Encoding::Utf8Bom => {
                let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
                String::from_utf8(body.to_vec()).map_err(|_| "it is not UTF-8 text".to_string())
            }
            Encoding::Utf16Le | Encoding::Utf16Be => {
                let body = &bytes[2.min(bytes.len())..];
                if !body.len().is_multiple_of(2) {
                    return Err("it has a UTF-16 byte order mark but an odd number of bytes".into());
                }
                let units = body.chunks_exact(2).map(|p| match self {
                    Encoding::Utf16Le => u16::from_le_bytes([p[0], p[1]]),
                    _ => u16::from_be_bytes([p[0], p[1]]),
                });
                char::decode_utf16(units)
                    .collect::<Result<String, _>>()
                    .map_err(|_| "it has a UTF-16 byte order mark but is not valid UTF-16".into())
            }
        }
    }

    pub(crate) fn encode(self, text: &str) -> Vec<u8> {
        match self {
            Encoding::Utf8 => text.as_bytes().to_vec(),
            Encoding::Utf8Bom => [UTF8_BOM, text.as_bytes()].concat(),
            Encoding::Utf16Le => std::iter::once(0xFEFF)
                .chain(text.encode_utf16())
                .flat_map(u16::to_le_bytes)
                .collect(),
            Encoding::Utf16Be => std::iter::once(0xFEFF)
                .chain(text.encode_utf16())
                .flat_map(u16::to_be_bytes)
                .collect(),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with a byte order mark",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
        }
    }
}

/// What the first bytes of a (UTF-8) file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Content {
    Text,
    /// Text with this many NUL bytes in the part looked at: a log with a
    /// stray NUL, a file a crash left a hole in. Shown, with a note.
    TextWithNul(usize),
    Binary,
}

/// Text, text with a few NULs, or binary. A NUL alone does not make a
/// file binary; it is binary when the bytes around it are not UTF-8
/// (allowing a character cut at the end of `head`) or when control bytes
/// (NULs included; tab, newlines, form feed and escape are text) are more
/// than one in ten. Real binaries (executables, archives, images, UTF-16
/// without a mark) fail one or both by far.
pub(crate) fn classify(head: &[u8]) -> Content {
    let head = &head[..head.len().min(8192)];
    let nuls = memchr::memchr_iter(0, head).count();
    if nuls == 0 {
        return Content::Text;
    }
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    };
    let controls = head
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f)
        .count();
    if utf8 && controls * 10 <= head.len() {
        Content::TextWithNul(nuls)
    } else {
        Content::Binary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stray_nul_in_text_is_text_but_binaries_are_binary() {
        assert_eq!(classify(b"plain\n"), Content::Text);
        assert_eq!(classify(b"hello\0world\n"), Content::TextWithNul(1));
        let log = [&b"line one\n"[..], b"\0\0\0\0", &b"line two\n".repeat(20)].concat();
        assert_eq!(classify(&log), Content::TextWithNul(4));
        assert_eq!(classify(&[0, 1, 2, 3]), Content::Binary);
        // UTF-16 without a mark: half NULs.
        let utf16: Vec<u8> = "hello world\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(classify(&utf16), Content::Binary);
        // Not UTF-8 around the NUL.
        assert_eq!(classify(b"abc\0\xff\xfe text text text"), Content::Binary);
        // An ELF header.
        let elf = [
            &b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0\x01\0\0\0"[..],
            &[0u8; 40],
        ]
        .concat();
        assert_eq!(classify(&elf), Content::Binary);
    }

    #[test]
    fn encodings_round_trip_behind_their_marks() {
        for enc in [
            Encoding::Utf8,
            Encoding::Utf8Bom,
            Encoding::Utf16Le,
            Encoding::Utf16Be,
        ] {
            let text = "h\u{e9}llo \u{1f600}\r\nzwei\n";
            let bytes = enc.encode(text);
            assert_eq!(Encoding::sniff(&bytes), enc);
            assert_eq!(enc.decode(&bytes).as_deref(), Ok(text));
        }
        assert!(Encoding::Utf16Le.decode(b"\xFF\xFEa").is_err());
        assert!(Encoding::Utf8.decode(b"\xff").is_err());
    }
}
