//! `haiku(prompt, schema?)`: one single-turn request to the session's
//! small model (ANTHROPIC_SMALL_FAST_MODEL, Haiku on Anthropic's API,
//! else the session's model), outside the conversation. With a schema the
//! answer must be JSON that matches it, or the call fails. It is the
//! session's spending like any other request.

use crate::json::{self, Value};
use crate::tools::input::Fields;
use crate::tools::{ToolContext, ToolOutput};

const SYSTEM: &str = "You answer one request from a script a coding agent runs. Answer \
    the request directly, with no preamble.";
/// How much of the window the prompt may take (about 3 characters a token,
/// counted low), and the longest answer.
const MAX_ANSWER_TOKENS: u64 = 4096;

/// Answers `{prompt, schema?}`; with a schema, the content is the JSON
/// value that matched it.
pub(super) async fn haiku(ctx: &ToolContext, input: &Value) -> ToolOutput {
    let Some(sampler) = ctx.sampler.as_deref() else {
        return ToolOutput::error("there is no model to ask here");
    };
    // A script's request: no schema has checked it.
    let (prompt, schema) = match Fields::of(input).and_then(|f| Ok((f.opt_text("prompt")?, f))) {
        Ok((prompt, f)) => (prompt.unwrap_or_default(), f.value("schema")),
        Err(e) => return ToolOutput::error(e),
    };
    if prompt.trim().is_empty() {
        return ToolOutput::error("the prompt is empty");
    }
    if let Some(s) = schema
        && let Err(e) = crate::tools::schema::well_formed(s)
    {
        return ToolOutput::error(format!("the schema is not usable: {e}"));
    }
    let answer_tokens = (sampler.window / 4).clamp(256, MAX_ANSWER_TOKENS);
    let room = sampler.window.saturating_sub(answer_tokens + 500) as usize * 3;
    if prompt.len() > room {
        return ToolOutput::error(format!(
            "the prompt is {} characters; {} has room for about {room}",
            prompt.len(),
            sampler.model
        ));
    }
    let text = match schema {
        None => prompt.to_string(),
        Some(s) => format!(
            "{prompt}\n\nAnswer with one JSON value that matches this JSON Schema, and nothing \
             else (no prose, no code fence):\n{s}"
        ),
    };
    let system = [SYSTEM.to_string()];
    let messages = [crate::obj! {
        "role" => "user",
        "content" => vec![crate::obj! { "type" => "text", "text" => text }],
    }];
    let parts = crate::model::request::RequestParts {
        model: &sampler.model,
        max_tokens: answer_tokens as u32,
        system: &system,
        tools: &[],
        messages: &messages,
        thinking: Default::default(),
    };
    let answer = match crate::tools::ask_side(ctx, sampler, &parts).await {
        None => return ToolOutput::error("interrupted"),
        Some(Err(e)) => return ToolOutput::error(format!("{} failed: {e}", sampler.model)),
        Some(Ok(a)) => a,
    };
    let Some(schema) = schema else {
        return ToolOutput::ok(answer.text);
    };
    match matching(&answer.text, schema) {
        Ok(v) => ToolOutput::ok(v.to_json()),
        Err(e) => ToolOutput::error(format!(
            "{} did not answer with JSON matching the schema ({e}); it said: {}",
            sampler.model,
            crate::tools::cut_str(answer.text.trim(), 500)
        )),
    }
}

/// The JSON value in an answer (a code fence around it is taken off),
/// checked against the schema.
fn matching(text: &str, schema: &Value) -> Result<Value, String> {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.trim_end().strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    let v = json::parse(t).map_err(|e| format!("not JSON: {e}"))?;
    crate::tools::schema::check(schema, &v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_json_matching_the_schema_or_an_error() {
        let schema = json::parse(
            r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
        )
        .unwrap();
        assert_eq!(
            matching("```json\n{\"n\": 3}\n```", &schema)
                .unwrap()
                .to_json(),
            r#"{"n":3}"#
        );
        assert!(matching("{\"n\": \"three\"}", &schema).is_err());
        assert!(matching("Sure! {\"n\": 3}", &schema).is_err());
    }
}
