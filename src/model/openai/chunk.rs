//! The hot path of a chat completions stream: a chunk that only adds
//! text or reasoning, read straight off its bytes.
//!
//! Nearly every chunk of a long answer is one of these (`{"id":…,
//! "object":"chat.completion.chunk",…,"choices":[{"index":0,"delta":
//! {"content":"…"},"finish_reason":null}]}`), and building a JSON tree
//! for each cost ten times what the rest of the path did. This reader
//! finds the raw spans of the delta's strings and nothing else; anything
//! it does not take — the first chunk, a finish, usage, tool calls, an
//! error, more than one choice, nested fields, a key written with an
//! escape, malformed input — is `None`, and the translator reads that
//! chunk with the general parser, which also words any error.

use crate::model::delta::Cursor;

/// What a plain chunk's delta holds: each field's raw text between its
/// quotes, escapes left in place (`None` when absent or `null`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Plain<'a> {
    pub(super) reasoning_content: Option<&'a str>,
    pub(super) reasoning: Option<&'a str>,
    pub(super) content: Option<&'a str>,
}

/// Reads a chunk that has one choice whose delta carries only text or
/// reasoning, no finish reason, no usage and no error. Duplicate keys
/// resolve as the general parser resolves them: the last one wins.
pub(super) fn plain(data: &str) -> Option<Plain<'_>> {
    let mut c = Cursor::new(data);
    let mut plain = None;
    c.object(|c, key| match key {
        "choices" => {
            plain = Some(choices(c)?);
            Some(())
        }
        "usage" => c.null(),
        "error" => None,
        _ => c.skip_value(),
    })?;
    if !c.at_end() {
        return None;
    }
    plain
}

/// `[ {…} ]`: exactly one choice.
fn choices<'a>(c: &mut Cursor<'a>) -> Option<Plain<'a>> {
    c.eat(b'[')?;
    let mut plain = None;
    c.object(|c, key| match key {
        "delta" => {
            plain = Some(delta(c)?);
            Some(())
        }
        "finish_reason" => c.null(),
        _ => c.skip_value(),
    })?;
    c.eat(b']')?;
    plain
}

fn delta<'a>(c: &mut Cursor<'a>) -> Option<Plain<'a>> {
    let mut p = Plain::default();
    c.object(|c, key| {
        let slot = match key {
            "content" => &mut p.content,
            "reasoning_content" => &mut p.reasoning_content,
            "reasoning" => &mut p.reasoning,
            "tool_calls" => return c.null(),
            _ => return c.skip_value(),
        };
        *slot = c.string_or_null()?;
        Some(())
    })?;
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_reasoning_chunks_are_read_in_any_key_order() {
        let p = plain(r#"{"id":"c","object":"chat.completion.chunk","created":1733,"model":"q","system_fingerprint":"b1","choices":[{"index":0,"delta":{"content":"a\"b"},"logprobs":null,"finish_reason":null}]}"#).unwrap();
        assert_eq!(p.content, Some(r#"a\"b"#));
        let p = plain(r#" { "choices" : [ { "delta" : { "role" : "assistant" , "reasoning_content" : "hm" , "content" : null } } ] , "usage" : null } "#).unwrap();
        assert_eq!(
            p,
            Plain {
                reasoning_content: Some("hm"),
                ..Plain::default()
            }
        );
        let p = plain(r#"{"choices":[{"delta":{"reasoning":"x","content":"y","content":"z"}}]}"#)
            .unwrap();
        assert_eq!((p.reasoning, p.content), (Some("x"), Some("z")));
    }

    #[test]
    fn anything_else_goes_to_the_general_parser() {
        for other in [
            r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"error":null}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
            r#"{"choices":[]}"#,
            r#"{"choices":[{"delta":{"content":1}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","con\u0074ent":"b"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"timings":{"n":1}}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"created":01}"#,
            r#"{"choices":[{"delta":{"content":"a"}}]} x"#,
            r#"{"choices":[{"delta":{"content":"a"}}]"#,
            r#"{"id":"c"}"#,
            "[DONE]",
            "",
        ] {
            assert_eq!(plain(other), None, "{other}");
        }
    }
}
