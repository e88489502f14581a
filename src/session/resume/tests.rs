use super::*;

fn line(uuid: &str, parent: Option<&str>, kind: &str, message: Value) -> String {
    obj! {
        "uuid" => uuid,
        "parentUuid" => parent,
        "sessionId" => "s",
        "type" => kind,
        "message" => message,
    }
    .to_json()
}

fn user(text: &str) -> Value {
    obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => text }] }
}

fn calls(ids: &[&str]) -> Value {
    let content: Vec<Value> = ids
        .iter()
        .map(|id| obj! { "type" => "tool_use", "id" => *id, "name" => "Bash", "input" => obj! {} })
        .collect();
    obj! { "role" => "assistant", "content" => content }
}

fn results(ids: &[&str]) -> Value {
    let content: Vec<Value> = ids
        .iter()
        .map(|id| obj! { "type" => "tool_result", "tool_use_id" => *id, "content" => "ok" })
        .collect();
    obj! { "role" => "user", "content" => content }
}

fn text_reply(t: &str) -> Value {
    obj! { "role" => "assistant", "content" => vec![obj! { "type" => "text", "text" => t }] }
}

fn roles(l: &Loaded) -> Vec<String> {
    l.messages
        .iter()
        .map(|m| m.str_field("role").unwrap().to_string())
        .collect()
}

#[test]
fn a_clean_chain_loads_as_written() {
    let text = [
        line("a", None, "user", user("hi")),
        line("b", Some("a"), "assistant", calls(&["t1"])),
        line("c", Some("b"), "user", results(&["t1"])),
        line("d", Some("c"), "assistant", text_reply("done")),
    ]
    .join("\n");
    let l = load(&text).unwrap();
    assert_eq!(roles(&l), ["user", "assistant", "user", "assistant"]);
    assert_eq!(l.leaf.as_deref(), Some("d"));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(l.synthesized.is_empty());
}

#[test]
fn a_truncated_last_line_is_skipped_and_the_call_before_it_answered() {
    let mut text = [
        line("a", None, "user", user("hi")),
        line("b", Some("a"), "assistant", calls(&["t1", "t2"])),
    ]
    .join("\n");
    let partial = line("c", Some("b"), "user", results(&["t1", "t2"]));
    text.push('\n');
    text.push_str(&partial[..partial.len() / 2]);
    let l = load(&text).unwrap();
    assert!(
        l.warnings[0].starts_with("line 3: not valid JSON"),
        "{:?}",
        l.warnings
    );
    assert_eq!(roles(&l), ["user", "assistant", "user"]);
    let last = l.messages[2].get("content").unwrap().as_array().unwrap();
    assert_eq!(last.len(), 2);
    for (block, id) in last.iter().zip(["t1", "t2"]) {
        assert_eq!(block.str_field("tool_use_id"), Some(id));
        assert_eq!(block.get("is_error").and_then(Value::as_bool), Some(true));
    }
    assert_eq!(l.synthesized.len(), 2);
}

#[test]
fn a_cycle_is_refused_with_the_line() {
    let text = [
        line("a", Some("c"), "user", user("hi")),
        line("b", Some("a"), "assistant", text_reply("x")),
        line("c", Some("b"), "user", user("again")),
    ]
    .join("\n");
    let err = load(&text).unwrap_err().to_string();
    assert!(err.contains("loops back to line 3 (c)"), "{err}");
}

#[test]
fn a_missing_parent_is_bridged_by_file_order_and_said() {
    let text = [
        line("a", None, "user", user("hi")),
        line("b", Some("a"), "assistant", text_reply("hello")),
        line("c", Some("gone"), "user", user("more")),
        line("d", Some("c"), "assistant", text_reply("sure")),
    ]
    .join("\n");
    let l = load(&text).unwrap();
    assert_eq!(roles(&l), ["user", "assistant", "user", "assistant"]);
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("line 3: parent gone is not in the transcript; continuing")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn too_many_missing_parents_stop_the_walk() {
    let mut lines = vec![line("root", None, "user", user("start"))];
    for i in 0..5 {
        lines.push(line(
            &format!("u{i}"),
            Some(&format!("gone{i}")),
            "user",
            user("x"),
        ));
    }
    let l = load(&lines.join("\n")).unwrap();
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("earlier history is not loaded")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn an_orphan_tool_result_is_dropped() {
    let text = [
        line("a", None, "user", user("hi")),
        line("b", Some("a"), "assistant", text_reply("hello")),
        line("c", Some("b"), "user", results(&["never-called"])),
        line("d", Some("c"), "user", user("next")),
    ]
    .join("\n");
    let l = load(&text).unwrap();
    assert_eq!(roles(&l), ["user", "assistant", "user"]);
    let last = l.messages[2].get("content").unwrap().as_array().unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].str_field("type"), Some("text"));
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("without a matching tool_use"))
    );
}

#[test]
fn a_compact_boundary_ends_the_walk() {
    let boundary = obj! {
        "uuid" => "k", "parentUuid" => Value::Null, "type" => "system",
        "subtype" => "compact_boundary", "logicalParentUuid" => "b",
    }
    .to_json();
    let text = [
        line("a", None, "user", user("old")),
        line("b", Some("a"), "assistant", text_reply("old reply")),
        boundary,
        line("s", Some("k"), "user", user("summary of before")),
        line("r", Some("s"), "assistant", text_reply("ok")),
    ]
    .join("\n");
    let l = load(&text).unwrap();
    assert_eq!(roles(&l), ["user", "assistant"]);
    assert!(l.messages[0].to_json().contains("summary of before"));
}

#[test]
fn nothing_usable_is_an_error() {
    assert!(
        load("")
            .unwrap_err()
            .to_string()
            .contains("no conversation entries")
    );
    assert!(
        load("{not json")
            .unwrap_err()
            .to_string()
            .contains("no conversation entries")
    );
}

/// A REPL block's inner calls are kept in the chain as virtual pairs: a
/// resume walks through them but does not send them to the model.
#[test]
fn virtual_pairs_are_links_of_the_chain_not_messages() {
    let virtual_line = |uuid: &str, parent: &str, kind: &str, message: Value| {
        let mut v = json::parse(&line(uuid, Some(parent), kind, message)).unwrap();
        v.as_object_mut().unwrap().insert("isVirtual", true);
        v.to_json()
    };
    let text = [
        line("a", None, "user", user("hi")),
        line("b", Some("a"), "assistant", calls(&["repl1"])),
        line("c", Some("b"), "user", results(&["repl1"])),
        virtual_line("v1", "c", "assistant", calls(&["inner1", "inner2"])),
        virtual_line("v2", "v1", "user", results(&["inner1", "inner2"])),
        line("d", Some("v2"), "assistant", text_reply("done")),
    ]
    .join("\n");
    let l = load(&text).unwrap();
    assert_eq!(roles(&l), ["user", "assistant", "user", "assistant"]);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(
        l.synthesized.is_empty(),
        "no made-up results for inner calls"
    );
    assert!(!l.messages.iter().any(|m| m.to_json().contains("inner1")));
}
