//! A command's output as the model gets it: the first and last parts
//! inline, everything in a spill file once it outgrows the inline limit.

use std::io::Write as _;
use std::path::PathBuf;

use super::super::ToolOutput;
use super::INLINE_LIMIT;

pub(super) fn with_spill_note(
    mut text: String,
    spilled: Option<PathBuf>,
    is_error: bool,
) -> ToolOutput {
    if let Some(path) = spilled {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("(full output saved to {})", path.display()));
    }
    ToolOutput {
        content: text,
        is_error,
        images: Vec::new(),
    }
}

/// Keeps the first and last halves of the inline budget in memory and,
/// once output outgrows it, streams everything to a spill file.
pub(super) struct Collector {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
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
            scratch: scratch.clone(),
            spill: None,
            spill_failed: false,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        if self.total > INLINE_LIMIT && self.spill.is_none() && !self.spill_failed {
            self.open_spill();
        }
        if let Some((_, f)) = &mut self.spill
            && f.write_all(bytes).is_err()
        {
            self.spill = None;
            self.spill_failed = true;
        }
        let room = INLINE_LIMIT.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        let keep = INLINE_LIMIT / 2;
        if self.tail.len() > keep {
            let excess = self.tail.len() - keep;
            self.tail.drain(..excess);
        }
    }

    fn open_spill(&mut self) {
        let name = format!("bash-{}-{:08x}.out", std::process::id(), fastrand::u32(..));
        match self.scratch.create_file(&name) {
            Ok((path, mut f)) => {
                // Everything so far is in `head` (we only spill once past it).
                let ok = f.write_all(&self.head).is_ok()
                    && f.write_all(&self.tail.iter().copied().collect::<Vec<u8>>())
                        .is_ok();
                if ok {
                    self.spill = Some((path, f));
                } else {
                    self.spill_failed = true;
                }
            }
            Err(_) => self.spill_failed = true,
        }
    }

    /// The last non-empty line so far (for progress), cut to 120 characters.
    pub(super) fn last_line(&self) -> Option<String> {
        let tail: Vec<u8> = if self.tail.is_empty() {
            let from = self.head.len().saturating_sub(4096);
            self.head[from..].to_vec()
        } else {
            let from = self.tail.len().saturating_sub(4096);
            self.tail.range(from..).copied().collect()
        };
        let text = String::from_utf8_lossy(&tail);
        let line = text
            .split(['\n', '\r'])
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())?;
        Some(crate::report::summary(line))
    }

    pub(super) fn finish(self) -> (String, Option<PathBuf>) {
        if self.total <= INLINE_LIMIT {
            return (String::from_utf8_lossy(&self.head).into_owned(), None);
        }
        let half = INLINE_LIMIT / 2;
        let head = String::from_utf8_lossy(&self.head[..half.min(self.head.len())]).into_owned();
        let tail_bytes: Vec<u8> = self.tail.into_iter().collect();
        let tail = String::from_utf8_lossy(&tail_bytes).into_owned();
        let omitted = self.total - half - tail_bytes.len();
        let text = format!("{head}\n… [{omitted} bytes omitted] …\n{tail}");
        (text, self.spill.map(|(p, _)| p))
    }
}
