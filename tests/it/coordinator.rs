//! Coordinator mode: the top level has only Agent, SendMessage and
//! TaskStop; workers do the work with the other tools, share a scratchpad,
//! can be messaged while they run, can be stopped, and report back as
//! structured notifications.

use crate::support;

use std::time::Duration;

use support::standin::{self, Reply, StandIn, Step};
use support::*;
use tern::json::Value;

fn names(req: &standin::Request) -> Vec<String> {
    body(req)
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|x| x.str_field("name").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn first_user(req: &standin::Request) -> String {
    body(req)
        .get("messages")
        .and_then(|m| m.as_array().and_then(|a| a.first().cloned()))
        .map(|m| m.to_json())
        .unwrap_or_default()
}

#[test]
fn the_coordinator_delegates_messages_and_stops_workers() {
    let dir = scratch("coordinator");
    let api = StandIn::start(vec![
        // Coordinator: start two workers in the background.
        standin::tools_reply(&[
            (
                "toolu_w1",
                "Agent",
                r#"{"description": "notes", "prompt": "WORKER-ONE: write notes", "run_in_background": true}"#,
            ),
            (
                "toolu_w2",
                "Agent",
                r#"{"description": "forever", "prompt": "WORKER-TWO: loop forever", "run_in_background": true}"#,
            ),
        ]),
        // Coordinator, after the acknowledgements: steer one, stop the other.
        standin::text_reply("placeholder"),
    ]);
    let acks_seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = std::sync::Arc::clone(&acks_seen);
    api.set_responder(Box::new(move |req| {
        let first = first_user(req);
        // The conversation only: system prompts mention these words too.
        let all = body(req)
            .get("messages")
            .map(|m| m.to_json())
            .unwrap_or_default();
        if first.contains("WORKER-ONE") {
            // Its second step sees the coordinator's message.
            if all.contains("<message-from-parent>") {
                return Some(standin::text_reply(
                    "worker one done, notes in the scratchpad",
                ));
            }
            if all.matches("toolu_sleep").count() > 20 {
                return Some(standin::text_reply(
                    "worker one never heard from the coordinator",
                ));
            }
            // Keep taking steps until the coordinator's message arrives.
            return Some(standin::tools_reply(&[(
                "toolu_sleep",
                "Bash",
                r#"{"command": "sleep 0.2"}"#,
            )]));
        }
        if first.contains("WORKER-TWO") {
            let mut steps = vec![
                standin::message_start("msg_forever"),
                Step::Sleep(Duration::from_secs(30)),
            ];
            steps.extend(standin::message_end("end_turn", 1));
            return Some(Reply::Stream(steps));
        }
        // The coordinator after its first turn: pick out the worker ids.
        // Notifications carry <task-id>; the acknowledgements only mention them.
        if all.contains("in the background (id agent-")
            && !all.contains("Delivered to")
            && !all.contains("<task-id>")
        {
            let ids: Vec<String> = all
                .match_indices("(id agent-")
                .map(|(i, _)| all[i + 4..i + 4 + 14].to_string())
                .collect();
            seen.lock().unwrap().extend(ids.clone());
            let msg = format!(
                r#"{{"to": "{}", "message": "also list the files"}}"#,
                ids[0]
            );
            let stop = format!(r#"{{"task_id": "{}"}}"#, ids[1]);
            return Some(standin::tools_reply(&[
                ("toolu_send", "SendMessage", &msg),
                ("toolu_stop", "TaskStop", &stop),
            ]));
        }
        if all.matches("<task-id>").count() >= 2 {
            return Some(standin::text_reply("Both workers reported."));
        }
        if all.contains("<task-id>") || all.contains("Delivered to") {
            return Some(standin::text_reply("waiting for the rest"));
        }
        None
    }));
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "organise the work",
        "--coordinator",
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "stream-json",
    ]));
    assert_ok(&out);
    let init = &lines(&out)[0];
    assert_eq!(
        init.get("tools").unwrap().to_json(),
        r#"["Agent","SendMessage","TaskStop"]"#
    );
    let reqs = api.requests();
    let coordinator: Vec<&standin::Request> = reqs
        .iter()
        .filter(|r| first_user(r).contains("organise the work"))
        .collect();
    let workers: Vec<&standin::Request> = reqs
        .iter()
        .filter(|r| first_user(r).contains("WORKER-"))
        .collect();
    assert_eq!(names(coordinator[0]), ["Agent", "SendMessage", "TaskStop"]);
    let worker_tools = names(workers[0]);
    assert!(
        worker_tools.contains(&"Bash".to_string()) && !worker_tools.iter().any(|t| t == "Agent"),
        "{worker_tools:?}"
    );
    assert!(
        workers[0].body.contains("Shared scratchpad directory"),
        "workers are told about the scratchpad"
    );
    // The message reached worker one; worker two was stopped.
    assert!(
        workers
            .iter()
            .any(|r| r.body.contains("also list the files"))
    );
    let last = coordinator.last().unwrap().body.clone();
    assert!(
        last.contains("<status>completed</status>") && last.contains("worker one done"),
        "{last}"
    );
    assert!(last.contains("<status>interrupted</status>"), "{last}");
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("Both workers reported.")
    );
    assert_eq!(acks_seen.lock().unwrap().len(), 2);
}
