//! What the model is asked to think, and how each wire format says it.
//!
//! Claude Code's flags and settings set it: `--max-thinking-tokens N` (or
//! `MAX_THINKING_TOKENS`) a budget, `--thinking adaptive|enabled|disabled`,
//! `--thinking-display summarized|omitted`, `--effort`, the settings' key
//! `alwaysThinkingEnabled`, and the SDK's `set_max_thinking_tokens`. On the
//! Messages API it becomes the request's `thinking` and
//! `output_config.effort` fields and their beta headers, as Claude Code
//! sends them (measured against it through the stand-in): a budget is
//! `enabled` with `budget_tokens` below `max_tokens`; adaptive is the API's
//! own `adaptive` for models from Claude 4.6 on and for models tern does
//! not know, and a budget of `max_tokens - 1` for the Claude 4 models
//! before them; effort goes only to the models that take it. Chat
//! completions servers get `reasoning_effort`.
//!
//! tern asks for no thinking unless told to (Claude Code thinks by default
//! on Claude 4 models): a turn without it is cheaper and faster, and the
//! local models tern also serves mostly think on their own.

use crate::json::Value;
use crate::obj;

/// The smallest budget the Messages API takes.
pub const MIN_BUDGET: u32 = 1024;

/// Whether and how much the model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Not asked for (the request carries no `thinking` field).
    #[default]
    Unset,
    /// Asked not to (`--thinking disabled`).
    Disabled,
    /// Up to this many tokens.
    Budget(u32),
    /// As much as the model judges the task needs.
    Adaptive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    Summarized,
    Omitted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Low,
    Medium,
    High,
    XHigh,
    Max,
}

/// The session's thinking settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Thinking {
    pub mode: Mode,
    pub display: Option<Display>,
    pub effort: Option<Effort>,
}

impl Mode {
    /// `--thinking`'s value.
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "adaptive" | "enabled" => Ok(Mode::Adaptive),
            "disabled" => Ok(Mode::Disabled),
            other => Err(format!(
                "--thinking takes adaptive, enabled or disabled, not {other:?}"
            )),
        }
    }

    /// A token budget (`--max-thinking-tokens`, `MAX_THINKING_TOKENS`):
    /// 0 turns thinking off, as in Claude Code.
    pub fn budget(text: &str) -> Result<Mode, String> {
        match text.trim().parse::<u32>() {
            Ok(n) => Ok(Mode::of_budget(n)),
            Err(_) => Err(format!(
                "a thinking budget is a whole number of tokens, not {text:?}"
            )),
        }
    }

    pub fn of_budget(tokens: u32) -> Mode {
        match tokens {
            0 => Mode::Disabled,
            n => Mode::Budget(n),
        }
    }
}

impl Display {
    pub fn parse(text: &str) -> Result<Display, String> {
        match text {
            "summarized" => Ok(Display::Summarized),
            "omitted" => Ok(Display::Omitted),
            other => Err(format!(
                "--thinking-display takes summarized or omitted, not {other:?}"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Display::Summarized => "summarized",
            Display::Omitted => "omitted",
        }
    }
}

impl Effort {
    pub fn parse(text: &str) -> Result<Effort, String> {
        match text {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            "xhigh" => Ok(Effort::XHigh),
            "max" => Ok(Effort::Max),
            other => Err(format!(
                "--effort takes low, medium, high, xhigh or max, not {other:?}"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// The chat completions `reasoning_effort`, whose scale ends at high.
    fn reasoning_effort(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High | Effort::XHigh | Effort::Max => "high",
        }
    }
}

/// A Claude model's family version, when the name says it: `(4, 6)` for
/// `claude-opus-4-6`, `(4, 0)` for `claude-sonnet-4-20250514`, `(3, 7)`
/// for `claude-3-7-sonnet-latest`. `None` for a name that is not Claude's.
fn claude_version(model: &str) -> Option<(u32, u32)> {
    let rest = model.strip_prefix("claude-")?;
    let numbers: Vec<u32> = rest
        .split('-')
        .filter_map(|part| part.parse().ok())
        // A date (20250514) is not a version number.
        .filter(|n| *n < 100)
        .collect();
    match numbers.as_slice() {
        [] => None,
        [major] => Some((*major, 0)),
        [major, minor, ..] => Some((*major, *minor)),
    }
}

fn is_opus(model: &str) -> bool {
    model.contains("opus")
}

/// Models that think at all: every Claude from 3.7 on, and any model tern
/// does not know (a gateway's names), which Claude Code treats as new.
fn thinks(model: &str) -> bool {
    claude_version(model).is_none_or(|v| v >= (3, 7))
}

/// Models that take `{"type":"adaptive"}`: Claude 4.6 on, and unknown ones.
fn adapts(model: &str) -> bool {
    claude_version(model).is_none_or(|v| v >= (4, 6))
}

/// Models that take an effort level: Opus 4.5, every Claude from 4.6 on,
/// and unknown ones.
fn takes_effort(model: &str) -> bool {
    claude_version(model).is_none_or(|v| v >= (4, 6) || (is_opus(model) && v >= (4, 5)))
}

impl Thinking {
    /// Whether a request for `model` asks for thinking.
    pub fn is_on(&self, model: &str) -> bool {
        matches!(self.mode, Mode::Budget(_) | Mode::Adaptive) && thinks(model)
    }

    /// The Messages API's `thinking` field for `model`, or none. A budget
    /// must leave room for the answer within `max_tokens`; one that cannot
    /// (a `max_tokens` at the API's least budget or below) sends nothing.
    pub fn field(&self, model: &str, max_tokens: u32) -> Option<Value> {
        if !thinks(model) {
            return None;
        }
        let room = max_tokens.saturating_sub(1);
        let mut field = match self.mode {
            Mode::Unset => return None,
            Mode::Disabled => return Some(obj! { "type" => "disabled" }),
            Mode::Adaptive if adapts(model) => obj! { "type" => "adaptive" },
            Mode::Adaptive | Mode::Budget(_) if room < MIN_BUDGET => return None,
            Mode::Adaptive => obj! { "type" => "enabled", "budget_tokens" => i64::from(room) },
            Mode::Budget(n) => obj! {
                "type" => "enabled",
                "budget_tokens" => i64::from(n.clamp(MIN_BUDGET, room)),
            },
        };
        if let (Some(display), Some(map)) = (self.display, field.as_object_mut()) {
            map.insert("display", display.name());
        }
        Some(field)
    }

    /// The Messages API's `output_config`, for a model that takes effort.
    pub fn output_config(&self, model: &str) -> Option<Value> {
        let effort = self.effort.filter(|_| takes_effort(model))?;
        Some(obj! { "effort" => effort.name() })
    }

    /// The beta headers the request's fields need.
    pub fn betas(&self, model: &str) -> Vec<&'static str> {
        let mut betas = Vec::new();
        if self.is_on(model) {
            // Thinking between tool calls, not only before the first.
            betas.push("interleaved-thinking-2025-05-14");
        }
        if self.output_config(model).is_some() {
            betas.push("effort-2025-11-24");
        }
        betas
    }

    /// Chat completions' `reasoning_effort`, when an effort was asked for.
    pub fn reasoning_effort(&self) -> Option<&'static str> {
        self.effort.map(Effort::reasoning_effort)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(v: Option<Value>) -> String {
        v.map_or("none".into(), |v| v.to_json())
    }

    /// What Claude Code sent through the stand-in for each case (its
    /// `thinking` and `output_config` with `display` left out), as tern
    /// sends it.
    #[test]
    fn requests_match_what_claude_code_sends() {
        let budget = |n| Thinking {
            mode: Mode::Budget(n),
            ..Default::default()
        };
        let adaptive = Thinking {
            mode: Mode::Adaptive,
            ..Default::default()
        };
        assert_eq!(
            json(budget(4000).field("claude-sonnet-4-5", 32000)),
            r#"{"type":"enabled","budget_tokens":4000}"#
        );
        assert_eq!(
            json(adaptive.field("claude-sonnet-4-5", 32000)),
            r#"{"type":"enabled","budget_tokens":31999}"#
        );
        assert_eq!(
            json(adaptive.field("claude-opus-4-6", 64000)),
            r#"{"type":"adaptive"}"#
        );
        assert_eq!(
            json(adaptive.field("qwen3:8b", 32000)),
            r#"{"type":"adaptive"}"#
        );
        assert_eq!(
            json(adaptive.field("claude-3-5-haiku-20241022", 8192)),
            "none"
        );
        let off = Thinking {
            mode: Mode::Disabled,
            ..Default::default()
        };
        assert_eq!(
            json(off.field("claude-sonnet-4-5", 32000)),
            r#"{"type":"disabled"}"#
        );
        assert_eq!(
            json(Thinking::default().field("claude-sonnet-4-5", 32000)),
            "none"
        );

        let effort = |e| Thinking {
            effort: Some(e),
            ..Default::default()
        };
        assert_eq!(
            json(effort(Effort::Low).output_config("claude-opus-4-5")),
            r#"{"effort":"low"}"#
        );
        assert_eq!(
            json(effort(Effort::High).output_config("claude-sonnet-4-5")),
            "none"
        );
        assert_eq!(
            json(effort(Effort::High).output_config("qwen3:8b")),
            r#"{"effort":"high"}"#
        );
        assert_eq!(
            effort(Effort::Medium).betas("claude-opus-4-6"),
            ["effort-2025-11-24"]
        );
        assert_eq!(
            budget(2000).betas("claude-sonnet-4-5"),
            ["interleaved-thinking-2025-05-14"]
        );
    }

    #[test]
    fn a_budget_leaves_room_for_the_answer_and_shows_as_asked() {
        let mut t = Thinking {
            mode: Mode::Budget(50_000),
            display: Some(Display::Summarized),
            effort: None,
        };
        assert_eq!(
            json(t.field("claude-sonnet-4-5", 32000)),
            r#"{"type":"enabled","budget_tokens":31999,"display":"summarized"}"#
        );
        t.mode = Mode::Budget(10);
        assert_eq!(
            json(t.field("claude-sonnet-4-5", 32000)),
            r#"{"type":"enabled","budget_tokens":1024,"display":"summarized"}"#
        );
        // No room for the least budget: nothing is asked rather than an
        // error from the API.
        assert_eq!(json(t.field("claude-sonnet-4-5", 1024)), "none");
    }

    #[test]
    fn flags_parse_and_bad_values_are_named() {
        assert_eq!(Mode::budget("4000"), Ok(Mode::Budget(4000)));
        assert_eq!(Mode::budget("0"), Ok(Mode::Disabled));
        assert!(Mode::budget("-3").unwrap_err().contains("-3"));
        assert_eq!(Mode::parse("adaptive"), Ok(Mode::Adaptive));
        assert!(Mode::parse("sometimes").is_err());
        assert_eq!(Effort::parse("xhigh"), Ok(Effort::XHigh));
        assert!(Effort::parse("extreme").unwrap_err().contains("extreme"));
        assert_eq!(Effort::Max.reasoning_effort(), "high");
        assert_eq!(claude_version("claude-opus-4-20250514"), Some((4, 0)));
        assert_eq!(claude_version("claude-3-7-sonnet-latest"), Some((3, 7)));
        assert_eq!(claude_version("gpt-oss-20b"), None);
    }
}
