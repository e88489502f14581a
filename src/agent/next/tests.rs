//! Every way the loop goes on or ends, decided without a model.

use super::*;

fn answer(stop_reason: Option<&str>) -> Turn {
    Turn {
        reply: Reply::Done,
        has_blocks: true,
        stop_reason: StopReason::from_wire(stop_reason),
        calls: Calls::None,
        called_structured: false,
        stop_hook: StopHook::NotAsked,
    }
}

fn with_tools() -> Turn {
    Turn {
        calls: Calls::Pending,
        ..answer(Some("tool_use"))
    }
}

fn tools_ran() -> Turn {
    Turn {
        calls: Calls::Ran { interrupted: None },
        ..with_tools()
    }
}

fn failed(error: ApiError, has_blocks: bool) -> Turn {
    Turn {
        reply: Reply::Failed(error),
        has_blocks,
        ..answer(None)
    }
}

fn http(status: u16, kind: &str) -> ApiError {
    ApiError::Http {
        status,
        kind: kind.into(),
        message: "m".into(),
        retry_after: None,
        request_id: None,
    }
}

fn overloaded() -> ApiError {
    http(529, "overloaded_error")
}

const QUIET: Now = Now {
    stop_hooks: false,
    background: false,
    schema: Schema::NotWanted,
};

fn turn_one() -> Counters {
    Counters {
        turns: 1,
        ..Counters::default()
    }
}

/// At the last turn `--max-turns` allows.
fn at_limit() -> Counters {
    Counters {
        turns: 3,
        max_turns: Some(3),
        ..Counters::default()
    }
}

fn with_fallbacks(models: &[&str]) -> Counters {
    let models: Vec<String> = models.iter().map(|m| m.to_string()).collect();
    Counters {
        turns: 1,
        ..Counters::new(None, &models)
    }
}

fn stops(next: Next) -> Stop {
    match next {
        Next::Stop(stop) => stop,
        other => panic!("expected a stop, got {other:?}"),
    }
}

fn goes_on(next: Next) -> Why {
    match next {
        Next::Continue(why) => why,
        other => panic!("expected to go on, got {other:?}"),
    }
}

// Before a request

fn spent(usd: f64) -> Used {
    Used {
        usd,
        ..Used::default()
    }
}

fn budget(usd: f64) -> Limits {
    Limits {
        usd: Some(usd),
        ..Limits::default()
    }
}

#[test]
fn a_request_goes_out_with_nothing_in_the_way() {
    assert!(before_asking(None, spent(0.0), Limits::default()).is_none());
    assert!(before_asking(None, spent(0.49), budget(0.5)).is_none());
}

#[test]
fn an_abort_stops_before_the_request_and_before_the_budget() {
    let stop = before_asking(Some(Reason::Signal(2)), spent(9.0), budget(1.0));
    assert!(matches!(
        stop,
        Some(Stop::Aborted {
            reason: Reason::Signal(2),
            in_tools: false
        })
    ));
}

#[test]
fn the_budget_stops_once_reached_with_what_was_spent() {
    assert!(matches!(
        before_asking(None, spent(0.5), budget(0.5)),
        Some(Stop::Budget(s)) if s == 0.5
    ));
    assert!(matches!(
        before_asking(None, spent(0.75), budget(0.5)),
        Some(Stop::Budget(s)) if s == 0.75
    ));
}

/// A local model costs nothing: its run is bounded by what it writes and
/// by time.
#[test]
fn budgets_without_a_price_stop_the_run() {
    let cap = Limits {
        output_tokens: Some(100),
        ..Limits::default()
    };
    let wrote = |output_tokens| Used {
        output_tokens,
        ..Used::default()
    };
    assert!(before_asking(None, wrote(99), cap).is_none());
    assert!(matches!(
        before_asking(None, wrote(130), cap),
        Some(Stop::OutputTokens(130))
    ));
    // The time limit is an interruption: it comes before the budgets.
    let late = Used {
        past_deadline: true,
        ..wrote(130)
    };
    assert!(matches!(
        before_asking(None, late, cap),
        Some(Stop::Aborted {
            reason: Reason::TimeLimit,
            in_tools: false
        })
    ));
    // A signal that came first is the one reported.
    assert!(matches!(
        before_asking(Some(Reason::Signal(15)), late, cap),
        Some(Stop::Aborted {
            reason: Reason::Signal(15),
            ..
        })
    ));
}

// The request failed or was interrupted

#[test]
fn an_overloaded_model_that_said_nothing_falls_back_to_the_next_model() {
    let next = next(
        &failed(overloaded(), false),
        &QUIET,
        &with_fallbacks(&["b", "c"]),
    );
    assert!(matches!(next, Next::FallBack(m) if m == "b"));
    let unknown = failed(http(404, "not_found_error"), false);
    assert!(matches!(
        super::next(&unknown, &QUIET, &with_fallbacks(&["b"])),
        Next::FallBack(_)
    ));
    let in_stream = failed(
        ApiError::InStream {
            kind: "overloaded_error".into(),
            message: "m".into(),
        },
        false,
    );
    assert!(matches!(
        super::next(&in_stream, &QUIET, &with_fallbacks(&["b"])),
        Next::FallBack(_)
    ));
}

#[test]
fn without_a_fallback_left_an_overloaded_model_ends_the_run() {
    let stop = stops(next(&failed(overloaded(), false), &QUIET, &turn_one()));
    assert!(matches!(
        stop,
        Stop::Failed(ApiError::Http { status: 529, .. })
    ));
}

#[test]
fn an_answer_that_broke_off_after_it_began_never_falls_back() {
    let stop = stops(next(
        &failed(overloaded(), true),
        &QUIET,
        &with_fallbacks(&["b"]),
    ));
    assert!(matches!(stop, Stop::Failed(_)));
}

#[test]
fn an_error_that_is_not_about_the_model_never_falls_back() {
    for error in [
        http(400, "invalid_request_error"),
        http(500, "api_error"),
        ApiError::Transport("reset".into()),
        ApiError::Stream("cut".into()),
    ] {
        let stop = stops(next(&failed(error, false), &QUIET, &with_fallbacks(&["b"])));
        assert!(matches!(stop, Stop::Failed(_)));
    }
}

#[test]
fn a_failure_with_tool_calls_in_the_record_stops_without_running_them() {
    let turn = Turn {
        calls: Calls::Pending,
        ..failed(ApiError::Stream("cut".into()), true)
    };
    assert!(matches!(
        stops(next(&turn, &QUIET, &turn_one())),
        Stop::Failed(_)
    ));
}

#[test]
fn an_abort_while_the_model_spoke_stops_as_not_in_tools() {
    for calls in [Calls::None, Calls::Pending] {
        let turn = Turn {
            reply: Reply::Aborted(Reason::Requested),
            calls,
            ..answer(None)
        };
        assert!(matches!(
            stops(next(&turn, &QUIET, &turn_one())),
            Stop::Aborted {
                reason: Reason::Requested,
                in_tools: false
            }
        ));
    }
}

// The model asked for tools

#[test]
fn tool_calls_run_before_anything_else() {
    // Even at the turn limit, and even when the answer was cut off.
    for stop_reason in [Some("tool_use"), Some("max_tokens"), Some("pause_turn")] {
        let turn = Turn {
            calls: Calls::Pending,
            ..answer(stop_reason)
        };
        assert!(matches!(next(&turn, &QUIET, &at_limit()), Next::RunTools));
    }
}

#[test]
fn after_the_tools_their_results_go_back() {
    let why = goes_on(next(&tools_ran(), &QUIET, &turn_one()));
    assert_eq!(
        why,
        Why::ToolResults {
            missed_structured: false
        }
    );
}

#[test]
fn an_abort_while_tools_ran_stops_as_in_tools() {
    let turn = Turn {
        calls: Calls::Ran {
            interrupted: Some(Reason::Signal(15)),
        },
        ..with_tools()
    };
    assert!(matches!(
        stops(next(&turn, &QUIET, &turn_one())),
        Stop::Aborted {
            reason: Reason::Signal(15),
            in_tools: true
        }
    ));
}

#[test]
fn the_turn_limit_stops_after_that_turns_tools_ran() {
    assert!(matches!(
        stops(next(&tools_ran(), &QUIET, &at_limit())),
        Stop::MaxTurns
    ));
    let below = Counters {
        turns: 2,
        ..at_limit()
    };
    assert!(matches!(
        next(&tools_ran(), &QUIET, &below),
        Next::Continue(_)
    ));
}

#[test]
fn a_structured_answer_given_through_the_tool_completes_the_run() {
    let now = Now {
        schema: Schema::Answered,
        ..QUIET
    };
    assert!(matches!(
        stops(next(&tools_ran(), &now, &at_limit())),
        Stop::Completed
    ));
}

#[test]
fn a_wrong_structured_call_is_a_miss_and_too_many_stop() {
    let now = Now {
        schema: Schema::Unanswered,
        ..QUIET
    };
    let called = Turn {
        called_structured: true,
        ..tools_ran()
    };
    assert_eq!(
        goes_on(next(&called, &now, &turn_one())),
        Why::ToolResults {
            missed_structured: true
        }
    );
    let spent = Counters {
        structured_misses: MAX_STRUCTURED_RETRIES,
        ..at_limit()
    };
    assert!(matches!(
        stops(next(&called, &now, &spent)),
        Stop::StructuredRetries
    ));
    // Other tools are no miss, however many there were before.
    let spent = Counters {
        structured_misses: MAX_STRUCTURED_RETRIES,
        ..turn_one()
    };
    assert_eq!(
        goes_on(next(&tools_ran(), &now, &spent)),
        Why::ToolResults {
            missed_structured: false
        }
    );
}

// The model answered without tools

#[test]
fn an_answer_ends_the_run_whatever_the_stop_reason() {
    for reason in [
        Some("end_turn"),
        Some("stop_sequence"),
        Some("refusal"),
        Some("tool_use"),
        None,
    ] {
        let stop = stops(next(&answer(reason), &QUIET, &turn_one()));
        assert!(matches!(stop, Stop::Completed), "{reason:?}");
        assert!(stop.keeps_answer());
    }
}

#[test]
fn a_cut_off_answer_is_asked_to_go_on_a_few_times_then_fails() {
    let cut = answer(Some("max_tokens"));
    for done in 0..MAX_LENGTH_RECOVERIES {
        let count = Counters {
            length_recoveries: done,
            ..turn_one()
        };
        assert_eq!(goes_on(next(&cut, &QUIET, &count)), Why::OutputLimit);
    }
    let spent = Counters {
        length_recoveries: MAX_LENGTH_RECOVERIES,
        ..turn_one()
    };
    let stop = stops(next(&cut, &QUIET, &spent));
    assert!(matches!(stop, Stop::CutOff));
    assert!(stop.keeps_answer());
    assert!(matches!(
        stops(next(&cut, &QUIET, &at_limit())),
        Stop::CutOff
    ));
}

#[test]
fn a_paused_turn_is_resumed_a_few_times_then_ends_as_it_is() {
    let paused = answer(Some("pause_turn"));
    for done in 0..MAX_PAUSES {
        let count = Counters {
            pauses: done,
            ..turn_one()
        };
        assert_eq!(goes_on(next(&paused, &QUIET, &count)), Why::Paused);
    }
    let spent = Counters {
        pauses: MAX_PAUSES,
        ..turn_one()
    };
    assert!(matches!(
        stops(next(&paused, &QUIET, &spent)),
        Stop::Completed
    ));
    assert!(matches!(
        stops(next(&paused, &QUIET, &at_limit())),
        Stop::Completed
    ));
}

#[test]
fn a_stop_hook_is_asked_before_the_run_ends() {
    let now = Now {
        stop_hooks: true,
        ..QUIET
    };
    assert!(matches!(
        next(&answer(None), &now, &turn_one()),
        Next::AskStopHook { again: false }
    ));
    let once = Counters {
        stop_rounds: 1,
        ..turn_one()
    };
    assert!(matches!(
        next(&answer(None), &now, &once),
        Next::AskStopHook { again: true }
    ));
    // Cut-off answers go on first; the hook is asked when they are spent.
    assert_eq!(
        goes_on(next(&answer(Some("max_tokens")), &now, &turn_one())),
        Why::OutputLimit
    );
    let spent = Counters {
        length_recoveries: MAX_LENGTH_RECOVERIES,
        ..turn_one()
    };
    assert!(matches!(
        next(&answer(Some("max_tokens")), &now, &spent),
        Next::AskStopHook { .. }
    ));
}

#[test]
fn a_stop_hook_that_blocks_sends_the_model_back_with_its_reason() {
    let now = Now {
        stop_hooks: true,
        ..QUIET
    };
    let blocked = Turn {
        stop_hook: StopHook::Blocked("tests fail".into()),
        ..answer(None)
    };
    assert_eq!(
        goes_on(next(&blocked, &now, &turn_one())),
        Why::StopHook("tests fail".into())
    );
    let passed = Turn {
        stop_hook: StopHook::Passed,
        ..answer(None)
    };
    assert!(matches!(
        stops(next(&passed, &now, &turn_one())),
        Stop::Completed
    ));
}

#[test]
fn a_stop_hook_is_not_asked_past_its_rounds_or_the_turn_limit() {
    let now = Now {
        stop_hooks: true,
        ..QUIET
    };
    let spent = Counters {
        stop_rounds: MAX_STOP_ROUNDS,
        ..turn_one()
    };
    assert!(matches!(
        stops(next(&answer(None), &now, &spent)),
        Stop::Completed
    ));
    assert!(matches!(
        stops(next(&answer(None), &now, &at_limit())),
        Stop::Completed
    ));
    assert!(matches!(
        stops(next(&answer(None), &QUIET, &turn_one())),
        Stop::Completed
    ));
}

#[test]
fn background_agents_are_waited_for_within_the_turn_limit() {
    let now = Now {
        background: true,
        ..QUIET
    };
    assert_eq!(
        goes_on(next(&answer(None), &now, &turn_one())),
        Why::Background
    );
    assert!(matches!(
        stops(next(&answer(None), &now, &at_limit())),
        Stop::Completed
    ));
    // The Stop hook comes first; once it let the run end, the wait.
    let hooked = Now {
        stop_hooks: true,
        ..now
    };
    assert!(matches!(
        next(&answer(None), &hooked, &turn_one()),
        Next::AskStopHook { .. }
    ));
    let passed = Turn {
        stop_hook: StopHook::Passed,
        ..answer(None)
    };
    assert_eq!(
        goes_on(next(&passed, &hooked, &turn_one())),
        Why::Background
    );
}

#[test]
fn a_missing_structured_answer_is_reminded_even_past_the_turn_limit() {
    let now = Now {
        schema: Schema::Unanswered,
        ..QUIET
    };
    assert_eq!(
        goes_on(next(&answer(None), &now, &turn_one())),
        Why::Structured
    );
    assert_eq!(
        goes_on(next(&answer(None), &now, &at_limit())),
        Why::Structured
    );
    let spent = Counters {
        structured_misses: MAX_STRUCTURED_RETRIES,
        ..turn_one()
    };
    assert!(matches!(
        stops(next(&answer(None), &now, &spent)),
        Stop::StructuredRetries
    ));
    // Background agents are waited for before the reminder.
    let busy = Now {
        background: true,
        ..now
    };
    assert_eq!(
        goes_on(next(&answer(None), &busy, &turn_one())),
        Why::Background
    );
    let answered = Now {
        schema: Schema::Answered,
        ..QUIET
    };
    assert!(matches!(
        stops(next(&answer(None), &answered, &turn_one())),
        Stop::Completed
    ));
}

#[test]
fn stops_other_than_an_answer_keep_no_result() {
    for stop in [
        Stop::MaxTurns,
        Stop::Budget(1.0),
        Stop::Aborted {
            reason: Reason::Requested,
            in_tools: false,
        },
        Stop::Failed(overloaded()),
        Stop::StructuredRetries,
    ] {
        assert!(!stop.keeps_answer(), "{stop:?}");
    }
}

// The counters

#[test]
fn going_on_uses_up_what_it_should() {
    let mut count = turn_one();
    for why in [
        Why::OutputLimit,
        Why::Paused,
        Why::Paused,
        Why::StopHook("r".into()),
        Why::Structured,
        Why::ToolResults {
            missed_structured: true,
        },
        Why::ToolResults {
            missed_structured: false,
        },
        Why::Background,
    ] {
        count.went_on(&why);
    }
    assert_eq!(count.length_recoveries, 1);
    assert_eq!(count.pauses, 2);
    assert_eq!(count.stop_rounds, 1);
    assert_eq!(count.structured_misses, 2);
    assert_eq!(count.turns, 1, "the loop counts turns as it asks");
}

#[test]
fn falling_back_is_the_same_turn_on_the_next_model() {
    let mut count = with_fallbacks(&["b", "c"]);
    count.fell_back();
    assert_eq!(count.turns, 0);
    assert_eq!(count.fallbacks, ["c"]);
    count.fell_back();
    assert!(count.fallbacks.is_empty());
}

// Whole runs, the loop's acts played by the test

/// How a scripted run went: the turns it took and how it ended.
fn play(replies: &[Turn], now: Now, mut count: Counters, hook_says: Option<&str>) -> (u32, Stop) {
    for reply in replies {
        count.turns += 1;
        let mut turn = reply.clone();
        // Each act at most once per turn: a loop here would never end.
        for _ in 0..4 {
            match next(&turn, &now, &count) {
                Next::RunTools => turn.calls = Calls::Ran { interrupted: None },
                Next::AskStopHook { .. } => {
                    turn.stop_hook = match hook_says {
                        Some(r) => StopHook::Blocked(r.into()),
                        None => StopHook::Passed,
                    }
                }
                Next::FallBack(_) => {
                    count.fell_back();
                    break;
                }
                Next::Continue(why) => {
                    count.went_on(&why);
                    break;
                }
                Next::Stop(stop) => return (count.turns, stop),
            }
        }
    }
    panic!("the script ran out after {} turns", count.turns)
}

#[test]
fn a_run_of_tool_turns_stops_at_the_turn_limit() {
    let script = vec![with_tools(); 10];
    let (turns, stop) = play(&script, QUIET, Counters::new(Some(3), &[]), None);
    assert_eq!(turns, 3);
    assert!(matches!(stop, Stop::MaxTurns));
    let (turns, stop) = play(&script, QUIET, Counters::new(Some(1), &[]), None);
    assert_eq!(turns, 1);
    assert!(matches!(stop, Stop::MaxTurns));
}

#[test]
fn a_fallback_does_not_count_as_a_turn() {
    let script = [failed(overloaded(), false), with_tools(), answer(None)];
    let fallbacks = ["b".to_string()];
    let (turns, stop) = play(&script, QUIET, Counters::new(Some(2), &fallbacks), None);
    assert_eq!(turns, 2);
    assert!(matches!(stop, Stop::Completed));
}

#[test]
fn a_stop_hook_that_always_blocks_gives_up_after_its_rounds() {
    let script = vec![answer(None); 10];
    let now = Now {
        stop_hooks: true,
        ..QUIET
    };
    let (turns, stop) = play(&script, now, Counters::new(None, &[]), Some("again"));
    assert_eq!(turns, MAX_STOP_ROUNDS + 1);
    assert!(matches!(stop, Stop::Completed));
}

#[test]
fn an_answer_always_cut_off_fails_after_its_continuations() {
    let script = vec![answer(Some("max_tokens")); 10];
    let (turns, stop) = play(&script, QUIET, Counters::new(None, &[]), None);
    assert_eq!(turns, MAX_LENGTH_RECOVERIES + 1);
    assert!(matches!(stop, Stop::CutOff));
}

#[test]
fn a_model_that_never_answers_structurally_gives_up_after_its_retries() {
    let script = vec![answer(None); 10];
    let now = Now {
        schema: Schema::Unanswered,
        ..QUIET
    };
    let (turns, stop) = play(&script, now, Counters::new(Some(2), &[]), None);
    assert_eq!(turns, MAX_STRUCTURED_RETRIES + 1);
    assert!(matches!(stop, Stop::StructuredRetries));
}

#[test]
fn stop_reasons_from_the_wire() {
    assert_eq!(
        StopReason::from_wire(Some("max_tokens")),
        StopReason::MaxTokens
    );
    assert_eq!(
        StopReason::from_wire(Some("pause_turn")),
        StopReason::PauseTurn
    );
    for other in [Some("end_turn"), Some("refusal"), Some("tool_use"), None] {
        assert_eq!(StopReason::from_wire(other), StopReason::Other);
    }
}
