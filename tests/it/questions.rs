//! AskUserQuestion and ExitPlanMode with nobody to ask (`-p` without a
//! permission prompt tool): refused with a note the model can act on, in
//! every mode — bypassPermissions gives no answers — and plan mode still
//! changes nothing. (With an SDK: tests/it/sdk.rs; in a terminal:
//! tests/it/line_mode.rs.)

use crate::support;

use support::standin::{self, StandIn};
use support::*;

fn content(req: &standin::Request) -> String {
    tool_results(req)
        .first()
        .and_then(|v| v.str_field("content").map(str::to_string))
        .unwrap_or_default()
}

const QUESTION: &str = r#"{"questions": [{"question": "Tabs or spaces?", "header": "Indent", "multiSelect": false,
    "options": [{"label": "Tabs", "description": "one per level"}, {"label": "Spaces", "description": "four per level"}]}],
    "answers": {"Tabs or spaces?": "Tabs"}}"#;

#[test]
fn with_nobody_to_ask_questions_are_refused_in_every_mode() {
    for mode in ["default", "acceptEdits", "bypassPermissions", "plan"] {
        let dir = scratch("ask-nobody");
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_q", "AskUserQuestion", QUESTION)]),
            standin::text_reply("I assumed spaces."),
        ]);
        let out = run(tern(&api.url, &dir).args(["-p", "format it", "--permission-mode", mode]));
        assert_ok(&out);
        let got = content(&api.requests()[1]);
        assert!(
            got.contains("Nobody can answer AskUserQuestion"),
            "{mode}: {got}"
        );
        // The model's own "answers" never count as the user's.
        assert!(!got.contains("The user answered"), "{mode}: {got}");
    }
}

#[test]
fn in_plan_mode_with_nobody_to_ask_the_plan_is_the_answer() {
    let dir = scratch("plan-nobody");
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_w",
            "Write",
            r#"{"file_path": "out.txt", "content": "x"}"#,
        )]),
        standin::tools_reply(&[("toolu_p", "ExitPlanMode", r#"{"plan": "1. write out.txt"}"#)]),
        standin::tools_reply(&[(
            "toolu_w2",
            "Write",
            r#"{"file_path": "out.txt", "content": "x"}"#,
        )]),
        standin::text_reply("Here is the plan: write out.txt."),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "plan it",
        "--permission-mode",
        "plan",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert!(reqs[0].body.contains("Plan mode is on"));
    assert!(
        content(&reqs[1]).contains("plan mode only allows reading"),
        "{}",
        content(&reqs[1])
    );
    assert!(
        content(&reqs[2]).contains("Nobody can answer ExitPlanMode"),
        "{}",
        content(&reqs[2])
    );
    // Still in plan mode: the write is refused again.
    assert!(
        content(&reqs[3]).contains("plan mode only allows reading"),
        "{}",
        content(&reqs[3])
    );
    assert!(!dir.join("out.txt").exists());
    // Told once, not on every request.
    assert_eq!(reqs[3].body.matches("Plan mode is on").count(), 1);
}
