//! What the loop does after each step of a turn, decided from what the
//! turn came to and the run's counters alone.
//!
//! The loop in `agent/mod.rs` asks the model, then calls [`next`] and
//! acts on the answer until it says to ask again or to stop. Keeping the
//! decision here, free of I/O, puts every way a run goes on or ends (and
//! every limit on it) in one place a test can reach without a model.
//!
//! Some facts are learned only by acting: whether the tools were
//! interrupted, what a Stop hook said. The loop records them in the
//! [`Turn`] and asks again; [`next`] never asks for the same act twice.

use std::collections::VecDeque;

use crate::abort::Reason;
use crate::model::ApiError;

/// How often an answer cut off by `max_tokens` is asked to go on.
pub(crate) const MAX_LENGTH_RECOVERIES: u32 = 3;

/// How often a turn the provider paused (`pause_turn`) is resumed.
pub(crate) const MAX_PAUSES: u32 = 5;

/// How many times Stop hooks may send the model back before tern stops anyway.
pub(crate) const MAX_STOP_ROUNDS: u32 = 5;

/// How often a model that should answer through StructuredOutput is sent
/// back to do so.
pub(crate) const MAX_STRUCTURED_RETRIES: u32 = 5;

/// How the request to the model ended, retries included.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    Done,
    Failed(ApiError),
    Aborted(Reason),
}

/// Why the model stopped speaking, as far as the loop cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Cut off by the output limit.
    MaxTokens,
    /// The provider paused a long turn of its own tools (web search).
    PauseTurn,
    /// Anything else (`end_turn`, `tool_use`, `refusal`, none at all).
    Other,
}

impl StopReason {
    pub(crate) fn from_wire(reason: Option<&str>) -> StopReason {
        match reason {
            Some("max_tokens") => StopReason::MaxTokens,
            Some("pause_turn") => StopReason::PauseTurn,
            _ => StopReason::Other,
        }
    }
}

/// The tools the answer asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Calls {
    None,
    /// Started while the model spoke, not yet waited for.
    Pending,
    /// All answered; `interrupted` if an abort came while they ran.
    Ran {
        interrupted: Option<Reason>,
    },
}

/// What a Stop hook said about ending here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StopHook {
    NotAsked,
    /// Let the run end.
    Passed,
    /// Sent the model back, with this reason.
    Blocked(String),
}

/// What one turn came to: the reply, and what the loop learned since.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub(crate) reply: Reply,
    /// Something of the answer reached the record (so every tool call in
    /// it needs a result).
    pub(crate) has_blocks: bool,
    pub(crate) stop_reason: StopReason,
    pub(crate) calls: Calls,
    /// One of the calls was StructuredOutput.
    pub(crate) called_structured: bool,
    pub(crate) stop_hook: StopHook,
}

/// The `--json-schema` answer, as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema {
    NotWanted,
    Unanswered,
    Answered,
}

/// What the session holds at the moment of deciding (read afresh each
/// time: tools and hooks change it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    /// A Stop hook is configured.
    pub(crate) stop_hooks: bool,
    /// Background agents are running, or finished and not yet heard.
    pub(crate) background: bool,
    pub(crate) schema: Schema,
}

/// The run's counts and the limits on them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    /// Model iterations so far, this one included.
    pub(crate) turns: u32,
    pub(crate) max_turns: Option<u32>,
    pub(crate) length_recoveries: u32,
    pub(crate) pauses: u32,
    pub(crate) stop_rounds: u32,
    pub(crate) structured_misses: u32,
    /// Models not yet tried, in order.
    pub(crate) fallbacks: VecDeque<String>,
}

impl Counters {
    pub(crate) fn new(max_turns: Option<u32>, fallbacks: &[String]) -> Counters {
        Counters {
            max_turns,
            fallbacks: fallbacks.iter().cloned().collect(),
            ..Counters::default()
        }
    }

    /// Another turn may follow this one.
    fn has_room(&self) -> bool {
        self.max_turns.is_none_or(|max| self.turns < max)
    }

    /// Counts what going on for `why` uses up.
    pub(crate) fn went_on(&mut self, why: &Why) {
        match why {
            Why::OutputLimit => self.length_recoveries += 1,
            Why::Paused => self.pauses += 1,
            Why::StopHook(_) => self.stop_rounds += 1,
            Why::Structured
            | Why::ToolResults {
                missed_structured: true,
            } => self.structured_misses += 1,
            Why::Background | Why::ToolResults { .. } => {}
        }
    }

    /// The turn goes to the next fallback model: the same turn again.
    pub(crate) fn fell_back(&mut self) {
        self.fallbacks.pop_front();
        self.turns = self.turns.saturating_sub(1);
    }

    /// One more miss would be one too many.
    fn out_of_structured_retries(&self) -> bool {
        self.structured_misses >= MAX_STRUCTURED_RETRIES
    }
}

/// Why the model is asked again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// The tools ran; their results go back. A wrong StructuredOutput
    /// call among them counts as a miss.
    ToolResults { missed_structured: bool },
    /// Cut off by the output limit mid-answer: asked to go on rather
    /// than hand back half a sentence.
    OutputLimit,
    /// The provider paused its turn: sent back as it is, the model goes on.
    Paused,
    /// A Stop hook sent the model back with this reason.
    StopHook(String),
    /// Background agents' results are part of this answer: wait for them.
    Background,
    /// The answer must come through StructuredOutput: reminded.
    Structured,
}

/// Why the run ends.
#[derive(Debug, Clone)]
pub(crate) enum Stop {
    /// The model finished; its text is the result.
    Completed,
    /// Still cut off by the output limit after every continuation.
    CutOff,
    MaxTurns,
    /// The budget is spent (what was spent).
    Budget(f64),
    /// The output token budget is spent (how many were written).
    OutputTokens(u64),
    Aborted {
        reason: Reason,
        in_tools: bool,
    },
    /// The model could not be reached, or its answer broke off.
    Failed(ApiError),
    /// No valid StructuredOutput call in as many tries as allowed.
    StructuredRetries,
}

impl Stop {
    /// The answer's text is the run's result.
    pub(crate) fn keeps_answer(&self) -> bool {
        matches!(self, Stop::Completed | Stop::CutOff)
    }
}

/// The loop's next step.
#[derive(Debug, Clone)]
pub(crate) enum Next {
    /// Wait for the turn's tools and record their results, then decide again.
    RunTools,
    /// Before ending, let the Stop hook have its say (`again`: it has
    /// sent the model back before).
    AskStopHook {
        again: bool,
    },
    /// The model was overloaded or unknown and said nothing: the same
    /// turn goes to this one.
    FallBack(String),
    Continue(Why),
    Stop(Stop),
}

/// What the run has used so far (sub-agents and tools' model use counted
/// in), as the limits on it see it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Used {
    pub(crate) usd: f64,
    pub(crate) output_tokens: u64,
    /// The run's time limit has passed.
    pub(crate) past_deadline: bool,
}

/// The caps on a whole run besides its turns. Budgets without a price
/// (output tokens, time) bound a local model's run, which costs $0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// `--max-budget-usd`.
    pub usd: Option<f64>,
    /// `--max-output-tokens-total`.
    pub output_tokens: Option<u64>,
}

/// What stops the run before another request: an interruption or the
/// time limit, then the budgets.
pub(crate) fn before_asking(aborted: Option<Reason>, used: Used, limits: Limits) -> Option<Stop> {
    let aborted = aborted.or(used.past_deadline.then_some(Reason::TimeLimit));
    if let Some(reason) = aborted {
        return Some(Stop::Aborted {
            reason,
            in_tools: false,
        });
    }
    if limits.usd.is_some_and(|budget| used.usd >= budget) {
        return Some(Stop::Budget(used.usd));
    }
    limits
        .output_tokens
        .is_some_and(|cap| used.output_tokens >= cap)
        .then_some(Stop::OutputTokens(used.output_tokens))
}

/// The step after `turn`, given what the session holds now and what the
/// run has used so far.
pub(crate) fn next(turn: &Turn, now: &Now, count: &Counters) -> Next {
    match &turn.reply {
        Reply::Done => {}
        Reply::Failed(e) => {
            // An overloaded or unknown model that said nothing: another
            // model serves the same turn.
            if !turn.has_blocks
                && e.wants_fallback()
                && let Some(model) = count.fallbacks.front()
            {
                return Next::FallBack(model.clone());
            }
            return Next::Stop(Stop::Failed(e.clone()));
        }
        Reply::Aborted(reason) => {
            return Next::Stop(Stop::Aborted {
                reason: *reason,
                in_tools: false,
            });
        }
    }
    match turn.calls {
        Calls::Pending => Next::RunTools,
        Calls::Ran {
            interrupted: Some(reason),
        } => Next::Stop(Stop::Aborted {
            reason,
            in_tools: true,
        }),
        Calls::Ran { interrupted: None } => after_tools(turn, now, count),
        Calls::None => after_answer(turn, now, count),
    }
}

/// The tools ran to their end.
fn after_tools(turn: &Turn, now: &Now, count: &Counters) -> Next {
    let missed_structured = now.schema == Schema::Unanswered && turn.called_structured;
    if now.schema == Schema::Answered {
        // The answer is in: nothing more is needed from the model.
        return Next::Stop(Stop::Completed);
    }
    if missed_structured && count.out_of_structured_retries() {
        return Next::Stop(Stop::StructuredRetries);
    }
    if !count.has_room() {
        return Next::Stop(Stop::MaxTurns);
    }
    Next::Continue(Why::ToolResults { missed_structured })
}

/// The model answered without asking for tools: the run ends here unless
/// something sends it back.
fn after_answer(turn: &Turn, now: &Now, count: &Counters) -> Next {
    let room = count.has_room();
    match turn.stop_reason {
        StopReason::MaxTokens if room && count.length_recoveries < MAX_LENGTH_RECOVERIES => {
            return Next::Continue(Why::OutputLimit);
        }
        StopReason::PauseTurn if room && count.pauses < MAX_PAUSES => {
            return Next::Continue(Why::Paused);
        }
        _ => {}
    }
    match &turn.stop_hook {
        StopHook::NotAsked if room && now.stop_hooks && count.stop_rounds < MAX_STOP_ROUNDS => {
            return Next::AskStopHook {
                again: count.stop_rounds > 0,
            };
        }
        StopHook::Blocked(reason) => return Next::Continue(Why::StopHook(reason.clone())),
        StopHook::NotAsked | StopHook::Passed => {}
    }
    if room && now.background {
        return Next::Continue(Why::Background);
    }
    if now.schema == Schema::Unanswered {
        if count.out_of_structured_retries() {
            return Next::Stop(Stop::StructuredRetries);
        }
        // The structured answer is owed even past the turn limit.
        return Next::Continue(Why::Structured);
    }
    match turn.stop_reason {
        StopReason::MaxTokens => Next::Stop(Stop::CutOff),
        StopReason::PauseTurn | StopReason::Other => Next::Stop(Stop::Completed),
    }
}

#[cfg(test)]
mod tests;
