//! A command's output as the model gets it. Up to 30,000 characters it
//! comes back whole; past that, as Claude Code does, everything is saved
//! to a file and the result is a `<persisted-output>` note with the path
//! and the first 2,000 characters (the model reads the rest from the
//! file).

use std::io::Write as _;
use std::path::PathBuf;

use super::INLINE_LIMIT;

/// Characters of a saved output shown in the result.
pub(super) const PREVIEW_CHARS: usize = 2_000;
/// Bytes kept of the latest output, for progress lines.
const RECENT: usize = 4096;

/// Keeps the output while it fits inline and, once it outgrows that,
/// streams everything to a spill file.
pub(super) struct Collector {
    /// The output from its start: all of it while it fits inline.
    head: Vec<u8>,
    /// The latest bytes (for progress, and for the end when the spill
    /// file could not be written).
    tail: std::collections::VecDeque<u8>,
    /// Bytes and characters so far (UTF-8 lead bytes; an invalid byte
    /// counts as one, as it is shown as one).
    total: usize,
    chars: usize,
    scratch: crate::tools::scratch::Scratch,
    spill: Option<(PathBuf, std::fs::File)>,
    spill_failed: bool,
}

impl Collector {
    pub(super) fn new(scratch: &crate::tools::scratch::Scratch) -> Self {
        Collector {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
            chars: 0,
            scratch: scratch.clone(),
            spill: None,
            spill_failed: false,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        let fits = self.chars <= INLINE_LIMIT;
        self.total += bytes.len();
        self.chars += bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count();
        if fits {
            self.head.extend_from_slice(bytes);
        }
        if self.chars > INLINE_LIMIT && self.spill.is_none() && !self.spill_failed {
            // Everything so far is in `head`.
            self.open_spill();
        } else if let Some((_, f)) = &mut self.spill
            && f.write_all(bytes).is_err()
        {
            self.spill = None;
            self.spill_failed = true;
        }
        if self.chars > INLINE_LIMIT {
            // The whole output is in the file now; only a preview's worth
            // (and more, for the rare failed spill) stays in memory.
            self.head.truncate(INLINE_LIMIT / 2);
        }
        self.tail.extend(bytes);
        let keep = if self.spill_failed {
            INLINE_LIMIT / 2
        } else {
            RECENT
        };
        if self.tail.len() > keep {
            let excess = self.tail.len() - keep;
            self.tail.drain(..excess);
        }
    }

    fn open_spill(&mut self) {
        let name = format!("bash-{}-{:08x}.out", std::process::id(), fastrand::u32(..));
        match self.scratch.create_file(&name) {
            Ok((path, f)) if (&f).write_all(&self.head).is_ok() => self.spill = Some((path, f)),
            _ => self.spill_failed = true,
        }
    }

    /// The last non-empty line so far (for progress), cut to 120 characters.
    pub(super) fn last_line(&self) -> Option<String> {
        let recent: Vec<u8> = self.tail.iter().copied().collect();
        let text = String::from_utf8_lossy(&recent);
        let line = text
            .split(['\n', '\r'])
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())?;
        Some(crate::report::summary(line))
    }

    /// Everything so far, to carry on in a background shell's log: from
    /// memory, or from the spill file once it outgrew memory.
    pub(super) fn so_far(&self) -> Vec<u8> {
        match &self.spill {
            Some((path, _)) => std::fs::read(path).unwrap_or_else(|_| self.head.clone()),
            None if self.chars <= INLINE_LIMIT => self.head.clone(),
            // The file failed: what memory has.
            None => {
                let mut all = self.head.clone();
                all.extend(self.tail.iter());
                all
            }
        }
    }

    /// The text for the model: the output whole, or the note naming the
    /// file it was saved to with its first characters.
    pub(super) fn finish(self) -> String {
        if self.chars <= INLINE_LIMIT {
            return String::from_utf8_lossy(&self.head).into_owned();
        }
        let head = String::from_utf8_lossy(&self.head);
        let preview: String = head.chars().take(PREVIEW_CHARS).collect();
        match self.spill {
            Some((path, _)) => persisted(&path.display().to_string(), self.total, &preview),
            None => {
                // No file to point at: the start and the end.
                let head = crate::tools::cut_str(&head, INLINE_LIMIT / 2);
                let tail: Vec<u8> = self.tail.into_iter().collect();
                let tail = String::from_utf8_lossy(&tail);
                let omitted = self.total - head.len() - tail.len();
                format!(
                    "{head}\n… [{omitted} bytes omitted; they could not be saved to a file] …\n{tail}"
                )
            }
        }
    }
}

/// Claude Code's note for an output saved to a file.
pub(super) fn persisted(path: &str, bytes: usize, preview: &str) -> String {
    format!(
        "<persisted-output>\nOutput too large ({}). Full output saved to: {path}\n\n\
         Preview (first 2KB):\n{preview}\n...\n</persisted-output>",
        size(bytes)
    )
}

/// `812 bytes`, `45.2KB`, `3MB`, as Claude Code writes sizes.
fn size(bytes: usize) -> String {
    let one = |v: f64, unit: &str| {
        let text = format!("{v:.1}");
        format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
    };
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        one(bytes as f64 / 1024.0, "KB")
    } else {
        one(bytes as f64 / (1024.0 * 1024.0), "MB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_claude_code_writes_them() {
        assert_eq!(size(812), "812 bytes");
        assert_eq!(size(46_285), "45.2KB");
        assert_eq!(size(2048), "2KB");
        assert_eq!(size(3 * 1024 * 1024), "3MB");
    }

    #[test]
    fn characters_not_bytes_decide_what_fits() {
        let dir = std::env::temp_dir().join(format!("tern-out-{}", fastrand::u32(..)));
        let scratch = crate::tools::scratch::Scratch::from(dir.clone());
        // 20,000 two-byte characters: 40,000 bytes, still inline.
        let mut c = Collector::new(&scratch);
        for _ in 0..20 {
            c.push("é".repeat(1000).as_bytes());
        }
        assert_eq!(c.finish().chars().count(), 20_000);
        // One past the limit, split inside a character: saved, and the
        // file has every byte.
        let mut c = Collector::new(&scratch);
        let text = "é".repeat(INLINE_LIMIT + 1);
        let (a, b) = text.as_bytes().split_at(INLINE_LIMIT + 1);
        c.push(a);
        c.push(b);
        let all = c.so_far();
        let out = c.finish();
        assert_eq!(all, text.as_bytes());
        assert!(
            out.starts_with("<persisted-output>\nOutput too large (58.6KB)"),
            "{out}"
        );
        let preview = out.split("Preview (first 2KB):\n").nth(1).unwrap();
        assert!(preview.starts_with(&"é".repeat(PREVIEW_CHARS)), "{preview}");
        assert!(
            !preview.starts_with(&"é".repeat(PREVIEW_CHARS + 1)),
            "{preview}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
