//! Reasoning written into the answer's text: models served through chat
//! completions (Qwen3, DeepSeek-R1 distills and others) put their thinking
//! between `<think>` and `</think>` at the start of `content` when the
//! server does not split it out into `reasoning_content` itself.
//!
//! The splitter follows the text as it streams, tags cut across chunks
//! included, and says which pieces are thinking and which are the answer.
//! Only a `<think>` that opens the message counts (after white space): a
//! tag later in an answer is the answer's own text (a model explaining
//! these tags), and stays text.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but white space yet: a `<think>` may still open.
    Start,
    Thinking,
    /// Just after `</think>`: the white space that separates the thinking
    /// from the answer is dropped.
    AfterThinking,
    Text,
}

/// One piece of the streamed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Thinking(String),
    Text(String),
}

#[derive(Debug)]
pub(crate) struct Splitter {
    state: State,
    /// Text held back because it may be the start of a tag.
    held: String,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter {
            state: State::Start,
            held: String::new(),
        }
    }
}

impl Splitter {
    /// Past any thinking, with nothing held back: every chunk from here on
    /// is answer text as it stands, and need not pass through [`push`].
    pub(crate) fn passes_through(&self) -> bool {
        self.state == State::Text
    }

    /// The pieces `chunk` completes, in order; what may still be part of
    /// a tag waits for the next chunk (or [`Splitter::finish`]).
    pub(crate) fn push(&mut self, chunk: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut rest = std::mem::take(&mut self.held);
        rest.push_str(chunk);
        let mut rest = rest.as_str();
        loop {
            match self.state {
                State::Start => {
                    let trimmed = rest.trim_start();
                    if let Some(after) = trimmed.strip_prefix(OPEN) {
                        self.state = State::Thinking;
                        rest = after;
                    } else if OPEN.starts_with(trimmed) {
                        // White space, or the start of a tag cut short.
                        self.held = rest.to_string();
                        return out;
                    } else {
                        self.state = State::Text;
                    }
                }
                State::Thinking => match rest.find(CLOSE) {
                    Some(at) => {
                        push(&mut out, Piece::Thinking(rest[..at].to_string()));
                        rest = &rest[at + CLOSE.len()..];
                        self.state = State::AfterThinking;
                    }
                    None => {
                        let keep = partial_tag_len(rest, CLOSE);
                        push(
                            &mut out,
                            Piece::Thinking(rest[..rest.len() - keep].to_string()),
                        );
                        self.held = rest[rest.len() - keep..].to_string();
                        return out;
                    }
                },
                State::AfterThinking => {
                    rest = rest.trim_start();
                    if rest.is_empty() {
                        return out;
                    }
                    self.state = State::Text;
                }
                State::Text => {
                    push(&mut out, Piece::Text(rest.to_string()));
                    return out;
                }
            }
        }
    }

    /// What was held back, once the stream has ended: an unfinished tag
    /// is what it turned out to be — text before thinking began, thinking
    /// inside it.
    pub(crate) fn finish(&mut self) -> Vec<Piece> {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        match self.state {
            State::Thinking => push(&mut out, Piece::Thinking(held)),
            State::Start if !held.trim().is_empty() => push(&mut out, Piece::Text(held)),
            _ => {}
        }
        out
    }
}

/// Adds a piece unless it is empty.
fn push(out: &mut Vec<Piece>, piece: Piece) {
    let empty = match &piece {
        Piece::Thinking(t) | Piece::Text(t) => t.is_empty(),
    };
    if !empty {
        out.push(piece);
    }
}

/// How many bytes at the end of `text` could begin `tag`.
fn partial_tag_len(text: &str, tag: &str) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds the chunks and joins what came out, neighbours of a kind
    /// merged, as the translator's blocks would hold them.
    fn split(chunks: &[&str]) -> Vec<Piece> {
        let mut s = Splitter::default();
        let mut pieces: Vec<Piece> = chunks.iter().flat_map(|c| s.push(c)).collect();
        pieces.extend(s.finish());
        let mut all: Vec<Piece> = Vec::new();
        for piece in pieces {
            match (all.last_mut(), piece) {
                (Some(Piece::Thinking(a)), Piece::Thinking(b)) => a.push_str(&b),
                (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
                (_, p) => all.push(p),
            }
        }
        all
    }

    fn thinking(t: &str) -> Piece {
        Piece::Thinking(t.into())
    }
    fn text(t: &str) -> Piece {
        Piece::Text(t.into())
    }

    #[test]
    fn a_leading_think_block_is_thinking_and_the_rest_the_answer() {
        assert_eq!(
            split(&["<think>\nweigh it\n</think>\n\nThe answer."]),
            [thinking("\nweigh it\n"), text("The answer.")]
        );
    }

    #[test]
    fn tags_cut_anywhere_across_chunks_are_still_tags() {
        let whole = "  <think>a</think>b";
        for cut in 1..whole.len() {
            let (x, y) = whole.split_at(cut);
            assert_eq!(split(&[x, y]), [thinking("a"), text("b")], "cut at {cut}");
        }
        let chars: Vec<String> = whole.chars().map(String::from).collect();
        let one_by_one: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(split(&one_by_one), [thinking("a"), text("b")]);
    }

    #[test]
    fn near_misses_stay_text() {
        // A tag later in the answer is the answer's own.
        assert_eq!(
            split(&["Use <think>x</think> tags."]),
            [text("Use <think>x</think> tags.")]
        );
        // Something like the tag, but not it.
        assert_eq!(
            split(&["<thinking>no</thinking>"]),
            [text("<thinking>no</thinking>")]
        );
        assert_eq!(split(&["<thi", "s is text"]), [text("<this is text")]);
        // A stream that ends inside the tag's first letters.
        assert_eq!(split(&["<thi"]), [text("<thi")]);
    }

    #[test]
    fn an_unclosed_think_stays_thinking_and_a_close_tag_in_the_answer_stays_text() {
        assert_eq!(
            split(&["<think>still going </th"]),
            [thinking("still going </th")]
        );
        assert_eq!(
            split(&["<think>a</think>ok, </think> is a tag"]),
            [thinking("a"), text("ok, </think> is a tag")]
        );
    }

    #[test]
    fn white_space_alone_is_nothing_and_multibyte_text_is_cut_on_characters() {
        assert_eq!(split(&["  \n"]), []);
        assert_eq!(
            split(&["<think>é", "</thi", "nk>ü"]),
            [thinking("é"), text("ü")]
        );
        assert_eq!(
            split(&["<think>日本</", "think>語"]),
            [thinking("日本"), text("語")]
        );
    }
}
