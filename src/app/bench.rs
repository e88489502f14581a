//! `tern doctor --bench`: how fast the server a session would use is, how
//! big its window really is, and whether its tool calls come back native,
//! as text tern can recover, or not at all — so a person on a small board
//! knows whether a turn takes two seconds or two minutes.
//!
//! Four small requests: a warm-up, a long prompt answered with one token
//! (prompt speed: its tokens over the time to the first output), a count
//! (generation speed: tokens over the time between first and last
//! output), and one tool offered with a question that needs it. The
//! result is kept per server and model in `<state>/bench.json`; sessions
//! with that server and model read it (see [`Kept`]).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::config::Runtime;
use crate::json::Value;
use crate::model::ApiError;
use crate::model::client::Client;
use crate::model::once::{Answer, complete};
use crate::model::request::RequestParts;
use crate::obj;

/// The turn a verdict is about: a prompt this long, an answer this long.
const TURN_IN: u64 = 3_000;
const TURN_OUT: u64 = 300;

/// What came back when a tool was offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolCalls {
    /// As native `tool_use` / `tool_calls`.
    Native,
    /// Written as text, in a format tern recovers.
    Recovered,
    /// The model answered without calling it.
    Ignored,
    /// The server refuses `tools` in a request.
    Refused,
    /// The question failed for another reason.
    Unknown,
}

impl ToolCalls {
    fn word(self) -> &'static str {
        match self {
            ToolCalls::Native => "native",
            ToolCalls::Recovered => "recovered",
            ToolCalls::Ignored => "ignored",
            ToolCalls::Refused => "refused",
            ToolCalls::Unknown => "unknown",
        }
    }

    fn from_word(w: &str) -> ToolCalls {
        match w {
            "native" => ToolCalls::Native,
            "recovered" => ToolCalls::Recovered,
            "ignored" => ToolCalls::Ignored,
            "refused" => ToolCalls::Refused,
            _ => ToolCalls::Unknown,
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bench {
    pub prompt_tokens: u64,
    pub prompt_secs: f64,
    pub output_tokens: u64,
    pub output_secs: f64,
    /// The server's context window, when it says.
    pub window: Option<u64>,
    pub tool_calls: ToolCalls,
    /// What the tool question got, in a few words.
    pub tool_detail: String,
    /// Seconds since the epoch.
    pub at: u64,
}

impl Bench {
    pub(crate) fn prompt_rate(&self) -> Option<f64> {
        rate(self.prompt_tokens, self.prompt_secs)
    }

    pub(crate) fn output_rate(&self) -> Option<f64> {
        rate(self.output_tokens, self.output_secs)
    }

    /// Seconds a typical turn takes here.
    pub(crate) fn turn_secs(&self) -> Option<f64> {
        Some(TURN_IN as f64 / self.prompt_rate()? + TURN_OUT as f64 / self.output_rate()?)
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut v = obj! {
            "prompt_tokens" => self.prompt_tokens as i64,
            "prompt_seconds" => round3(self.prompt_secs),
            "output_tokens" => self.output_tokens as i64,
            "output_seconds" => round3(self.output_secs),
            "tool_calls" => self.tool_calls.word(),
            "tool_calls_detail" => self.tool_detail.as_str(),
            "at" => self.at as i64,
        };
        if let Some(m) = v.as_object_mut() {
            let mut put = |k: &str, x: Option<f64>| {
                m.insert(k, x.map_or(Value::Null, |x| Value::from(round3(x))));
            };
            put("prompt_tokens_per_second", self.prompt_rate());
            put("output_tokens_per_second", self.output_rate());
            put("turn_seconds", self.turn_secs());
            m.insert(
                "context_window",
                self.window.map_or(Value::Null, |w| Value::from(w as i64)),
            );
        }
        v
    }

    fn from_value(v: &Value) -> Option<Bench> {
        let int = |k: &str| v.get(k).and_then(Value::as_i64).map(|n| n.max(0) as u64);
        let num = |k: &str| v.get(k).and_then(Value::as_f64);
        Some(Bench {
            prompt_tokens: int("prompt_tokens")?,
            prompt_secs: num("prompt_seconds")?,
            output_tokens: int("output_tokens")?,
            output_secs: num("output_seconds")?,
            window: int("context_window").filter(|w| *w > 0),
            tool_calls: ToolCalls::from_word(v.str_field("tool_calls")?),
            tool_detail: v.str_field("tool_calls_detail").unwrap_or("").to_string(),
            at: int("at")?,
        })
    }

    /// One line for a session's `--verbose` start.
    pub(crate) fn summary(&self) -> String {
        let r = |x: Option<f64>| x.map_or("?".to_string(), |x| format!("{x:.0}"));
        format!(
            "prompt {} tokens/s, generation {} tokens/s, tool calls {}{}",
            r(self.prompt_rate()),
            r(self.output_rate()),
            self.tool_calls.word(),
            self.turn_secs()
                .map_or(String::new(), |s| format!("; a typical turn ~{}", human(s))),
        )
    }

    /// The lines a person reads.
    pub(crate) fn text(&self) -> String {
        let speed = |tokens: u64, secs: f64, r: Option<f64>| match r {
            Some(r) => format!("{tokens} tokens in {secs:.2} s: {r:.0} tokens/s"),
            None => format!("{tokens} tokens in {secs:.2} s: too few to tell"),
        };
        let mut out = format!(
            "  prompt      {}\n  generation  {}\n  window      {}\n  tool calls  {} ({})\n",
            speed(self.prompt_tokens, self.prompt_secs, self.prompt_rate()),
            speed(self.output_tokens, self.output_secs, self.output_rate()),
            self.window
                .map_or("the server does not say".to_string(), |w| format!(
                    "{w} tokens"
                )),
            self.tool_calls.word(),
            self.tool_detail,
        );
        out.push_str(&format!("verdict: {}\n", self.verdict()));
        out
    }

    fn verdict(&self) -> String {
        let mut v = match self.turn_secs() {
            Some(s) => format!(
                "a turn of {TURN_IN} tokens in and {TURN_OUT} out takes about {} here.",
                human(s)
            ),
            None => "too little came back to time a turn.".to_string(),
        };
        v.push(' ');
        v.push_str(match self.tool_calls {
            ToolCalls::Native => "Tool calls come back native.",
            ToolCalls::Recovered => {
                "Tool calls come back as text that tern recovers; sessions with this server recover them."
            }
            ToolCalls::Ignored => {
                "The model answered without calling the tool it was offered: expect it to do little on its own."
            }
            ToolCalls::Refused => {
                "The server takes no tools in a request; sessions with it describe the tools in the system prompt."
            }
            ToolCalls::Unknown => "Whether tools work could not be told.",
        });
        if let Some(w) = self.window.filter(|w| crate::context::is_small(*w)) {
            v.push_str(&format!(
                " Its {w}-token window gets the compact prompt, and MCP tools wait behind ToolSearch."
            ));
        }
        v
    }
}

fn rate(tokens: u64, secs: f64) -> Option<f64> {
    (tokens >= 2 && secs > 0.0).then(|| tokens as f64 / secs)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn human(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.1} s")
    } else {
        format!("{:.1} min", secs / 60.0)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Runs the four requests against `client` and `model`.
pub(super) async fn measure(client: &Client, model: &str) -> Result<Bench, String> {
    let ask = |text: String, max_tokens: u32, tools: Vec<Value>| async move {
        let messages = [obj! { "role" => "user", "content" => text }];
        let parts = RequestParts {
            model,
            max_tokens,
            system: &[],
            tools: &tools,
            messages: &messages,
            thinking: Default::default(),
        };
        let began = Instant::now();
        complete(client, &parts).await.map(|a| (a, began.elapsed()))
    };
    let fail = |what: &str, e: ApiError| format!("the {what} request failed: {e}");
    ask("Say OK.".into(), 1, Vec::new())
        .await
        .map_err(|e| fail("warm-up", e))?;

    let window = {
        let c = client.clone();
        smol::unblock(move || c.server_window()).await
    };
    // About 500 tokens (enough to time; on a slow board a bigger one
    // only makes the person wait), never seen before (a server's prompt
    // cache would make it look fast).
    let budget = window.map_or(512, |w| (w / 3).clamp(64, 512));
    let (long, elapsed) = ask(long_prompt(budget, now()), 1, Vec::new())
        .await
        .map_err(|e| fail("prompt", e))?;
    let prompt_tokens = if long.usage.input_tokens > 0 {
        long.usage.input_tokens
    } else {
        crate::context::estimate_bytes(budget as usize * 4)
    };
    let prompt_secs = long.first_output.unwrap_or(elapsed).as_secs_f64();

    let (count, _) = ask(
        "Count from 1 to 200, the numbers separated by commas, nothing else.".into(),
        128,
        Vec::new(),
    )
    .await
    .map_err(|e| fail("generation", e))?;
    let (output_tokens, output_secs) = generation(&count);

    let (tool_calls, tool_detail) = match ask(
        "What is the weather in Paris right now? Use the get_weather tool.".into(),
        128,
        vec![weather_tool()],
    )
    .await
    {
        Ok((a, _)) => judge(&a),
        Err(e) if e.refuses_tools() => (ToolCalls::Refused, one_line(&e.to_string())),
        Err(e) => (ToolCalls::Unknown, one_line(&e.to_string())),
    };
    Ok(Bench {
        prompt_tokens,
        prompt_secs,
        output_tokens,
        output_secs,
        window,
        tool_calls,
        tool_detail,
        at: now(),
    })
}

fn long_prompt(tokens: u64, nonce: u64) -> String {
    // The note first: a prompt that starts as no earlier one did.
    let mut text = format!("Note {nonce}. Read these lines, then answer with one word.\n");
    // About fourteen tokens a line, whatever the tokenizer does with
    // numbers.
    for i in 0..tokens / 14 {
        text.push_str(&format!(
            "Line {i}: the small board builds the whole crate again.\n"
        ));
    }
    text
}

/// Output tokens, and the time they took after the first arrived: the
/// pieces after the first, at the answer's tokens per piece.
fn generation(a: &Answer) -> (u64, f64) {
    let tokens = if a.usage.output_tokens > 0 {
        a.usage.output_tokens
    } else {
        a.pieces
    };
    let (Some(first), Some(last)) = (a.first_output, a.last_output) else {
        return (tokens, 0.0);
    };
    if a.pieces < 2 {
        return (tokens, 0.0);
    }
    // The first piece's tokens came with the prompt's time.
    let after_first = tokens as f64 * (a.pieces - 1) as f64 / a.pieces as f64;
    let secs = last.saturating_sub(first).as_secs_f64();
    // As (tokens, seconds) at the same rate.
    if secs <= 0.0 {
        return (tokens, 0.0);
    }
    (tokens, secs * tokens as f64 / after_first)
}

fn weather_tool() -> Value {
    obj! {
        "name" => "get_weather",
        "description" => "The current weather in a city.",
        "input_schema" => obj! {
            "type" => "object",
            "properties" => obj! { "city" => obj! { "type" => "string" } },
            "required" => vec![Value::from("city")],
        },
    }
}

fn judge(a: &Answer) -> (ToolCalls, String) {
    if let Some(c) = a.calls.first() {
        let input = c.input.as_ref().map(Value::to_json).unwrap_or_default();
        return (ToolCalls::Native, format!("{}({input})", c.name));
    }
    let tool = weather_tool();
    let schema = |name: &str| {
        (name == "get_weather")
            .then(|| tool.get("input_schema").cloned())
            .flatten()
            .map(std::borrow::Cow::Owned)
    };
    if let Some(r) = crate::agent::recover::recover(&a.text, schema)
        && let Some(c) = r.calls.first()
    {
        let input = c.input.as_ref().map(Value::to_json).unwrap_or_default();
        return (
            ToolCalls::Recovered,
            format!("{}({input}) from text", c.name),
        );
    }
    (
        ToolCalls::Ignored,
        format!("answered: {}", one_line(&a.text)),
    )
}

fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = crate::tools::cut_str(&flat, 100);
    if cut.len() < flat.len() {
        format!("{cut}…")
    } else {
        flat
    }
}

fn key(base_url: &str, model: &str) -> String {
    format!("{base_url}\n{model}")
}

/// Keeps a measurement for sessions with this server and model.
pub(super) fn keep(rt: &Runtime, bench: &Bench) -> std::io::Result<std::path::PathBuf> {
    let file = rt.state_root().join("bench.json");
    super::window::keep_entry(
        &file,
        &key(&rt.client.base_url, &rt.model),
        bench.to_value(),
    )?;
    Ok(file)
}

/// What an earlier `doctor --bench` measured for this server and model.
pub(crate) fn kept(rt: &Runtime) -> Option<Bench> {
    let file = rt.state_root().join("bench.json");
    let entry = super::window::kept_entry(&file, &key(&rt.client.base_url, &rt.model))?;
    Bench::from_value(&entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample() -> Bench {
        Bench {
            prompt_tokens: 1_000,
            prompt_secs: 2.0,
            output_tokens: 100,
            output_secs: 4.0,
            window: Some(4096),
            tool_calls: ToolCalls::Recovered,
            tool_detail: "get_weather({\"city\":\"Paris\"}) from text".into(),
            at: 1_800_000_000,
        }
    }

    #[test]
    fn rates_turns_and_the_kept_form_round_trip() {
        let b = sample();
        assert_eq!(b.prompt_rate(), Some(500.0));
        assert_eq!(b.output_rate(), Some(25.0));
        // 3000 / 500 + 300 / 25
        assert_eq!(b.turn_secs(), Some(18.0));
        let kept = crate::json::parse(&b.to_value().to_json()).unwrap();
        assert_eq!(Bench::from_value(&kept), Some(b.clone()));
        let text = b.text();
        assert!(text.contains("500 tokens/s"), "{text}");
        assert!(text.contains("about 18.0 s"), "{text}");
        assert!(text.contains("recover"), "{text}");
        assert!(text.contains("ToolSearch"), "{text}");
    }

    #[test]
    fn too_little_output_is_said_not_invented() {
        let b = Bench {
            output_tokens: 1,
            output_secs: 0.0,
            ..sample()
        };
        assert_eq!(b.output_rate(), None);
        assert_eq!(b.turn_secs(), None);
        assert!(b.text().contains("too few to tell"));
        let v = b.to_value();
        assert_eq!(v.get("turn_seconds"), Some(&Value::Null));
    }

    #[test]
    fn generation_time_leaves_out_the_first_piece() {
        let a = Answer {
            text: String::new(),
            usage: Default::default(),
            calls: Vec::new(),
            first_output: Some(Duration::from_millis(500)),
            last_output: Some(Duration::from_millis(1_400)),
            pieces: 10,
        };
        // 9 pieces after the first in 0.9 s: 10 tokens/s.
        let (tokens, secs) = generation(&a);
        assert_eq!(tokens, 10);
        assert!((rate(tokens, secs).unwrap() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn tool_answers_are_judged() {
        let answer = |text: &str| Answer {
            text: text.into(),
            usage: Default::default(),
            calls: Vec::new(),
            first_output: None,
            last_output: None,
            pieces: 0,
        };
        let (calls, detail) = judge(&answer(
            r#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#,
        ));
        assert_eq!(calls, ToolCalls::Recovered, "{detail}");
        assert_eq!(judge(&answer("It is sunny.")).0, ToolCalls::Ignored);
        // A call of a tool that was not offered is no call.
        assert_eq!(
            judge(&answer(
                r#"<tool_call>{"name":"rm","arguments":{}}</tool_call>"#
            ))
            .0,
            ToolCalls::Ignored
        );
    }
}
