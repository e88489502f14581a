use super::*;
use crate::model::stream::{Assembler, Block, Update};

fn run(chunks: &[&str]) -> (Assembler, Vec<String>) {
    let mut t = Translator::default();
    let mut a = Assembler::new();
    let mut names = Vec::new();
    for c in chunks {
        for (name, data) in t.translate(c) {
            names.push(name.to_string());
            match a.feed(name, &data) {
                Ok(Update::MessageDone) | Ok(_) => {}
                Err(e) => panic!("{name} {data}: {e:?}"),
            }
        }
    }
    (a, names)
}

#[test]
fn text_and_split_tool_calls_assemble_like_the_messages_api() {
    let (a, names) = run(&[
        r#"{"id":"c1","model":"smol","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"look."}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":"{\"file_"}}]}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"path\": \"a.rs\"}"}}]}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"Glob","arguments":"{\"pattern\":\"*\"}"}}]}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":40}}"#,
        "[DONE]",
    ]);
    assert!(a.is_done());
    assert_eq!(a.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(a.usage.input_tokens, 812);
    assert_eq!(a.usage.output_tokens, 40);
    let blocks: Vec<&Block> = a.blocks().collect();
    assert!(matches!(blocks[0], Block::Text(t) if t == "Let me look."));
    match blocks[1] {
        Block::ToolUse(call) => {
            assert_eq!((call.id.as_str(), call.name.as_str()), ("call_a", "Read"));
            assert_eq!(
                call.input.as_ref().unwrap().str_field("file_path"),
                Some("a.rs")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(blocks[2], Block::ToolUse(c) if c.name == "Glob"));
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
}

#[test]
fn length_maps_to_max_tokens_and_errors_become_error_events() {
    let (a, _) = run(&[
        r#"{"choices":[{"delta":{"content":"half"},"finish_reason":null}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        "[DONE]",
    ]);
    assert_eq!(a.stop_reason.as_deref(), Some("max_tokens"));
    let mut t = Translator::default();
    let out = t.translate(
        r#"{"error":{"message":"context length exceeded","type":"invalid_request_error"}}"#,
    );
    assert_eq!(out[0].0, "error");
    assert!(out[0].1.contains("context length exceeded"));
    assert_eq!(t.translate("{oops")[0].0, "error");
}

#[test]
fn requests_translate_tools_calls_and_results() {
    let system = ["You are tern.".to_string(), "Env: linux".to_string()];
    let tools = [
        obj! { "name" => "Read", "description" => "reads", "input_schema" => obj! { "type" => "object" } },
    ];
    let messages = [
        obj! { "role" => "user", "content" => "hi" },
        obj! { "role" => "assistant", "content" => vec![
            obj! { "type" => "text", "text" => "reading" },
            obj! { "type" => "tool_use", "id" => "t1", "name" => "Read", "input" => obj! { "file_path" => "a" } },
        ] },
        obj! { "role" => "user", "content" => vec![
            obj! { "type" => "tool_result", "tool_use_id" => "t1", "content" => "text of a", "is_error" => false },
            obj! { "type" => "text", "text" => "and now?" },
        ] },
    ];
    let body = json::parse(&build(&RequestParts {
        model: "smol",
        max_tokens: 256,
        system: &system,
        tools: &tools,
        messages: &messages,
        thinking: Default::default(),
    }))
    .unwrap();
    let msgs = body.get("messages").unwrap().as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().filter_map(|m| m.str_field("role")).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(
        msgs[0].str_field("content"),
        Some("You are tern.\n\nEnv: linux")
    );
    let call = &msgs[2].get("tool_calls").unwrap().as_array().unwrap()[0];
    assert_eq!(
        call.get("function").unwrap().str_field("arguments"),
        Some(r#"{"file_path":"a"}"#)
    );
    assert_eq!(msgs[3].str_field("tool_call_id"), Some("t1"));
    assert_eq!(msgs[3].str_field("content"), Some("text of a"));
    let tool = &body.get("tools").unwrap().as_array().unwrap()[0];
    assert_eq!(
        tool.get("function").unwrap().str_field("name"),
        Some("Read")
    );
    assert_eq!(body.get("stream").and_then(Value::as_bool), Some(true));
}

#[test]
fn images_follow_the_tool_message_and_documents_are_named_as_unshown() {
    let image = obj! { "type" => "image", "source" => obj! {
        "type" => "base64", "media_type" => "image/png", "data" => "iVBORw0KGgo=",
    } };
    let document = obj! { "type" => "document", "source" => obj! {
        "type" => "base64", "media_type" => "application/pdf", "data" => "JVBERi0=",
    } };
    let messages = [
        obj! { "role" => "assistant", "content" => vec![
            obj! { "type" => "tool_use", "id" => "t1", "name" => "Read", "input" => obj! {} },
            obj! { "type" => "tool_use", "id" => "t2", "name" => "Read", "input" => obj! {} },
        ] },
        obj! { "role" => "user", "content" => vec![
            obj! { "type" => "tool_result", "tool_use_id" => "t1", "content" => vec![
                obj! { "type" => "text", "text" => "PNG image, 1x1 pixels" },
                image.clone(),
            ] },
            obj! { "type" => "tool_result", "tool_use_id" => "t2", "content" => vec![
                obj! { "type" => "text", "text" => "PDF document, 1 page" },
                document,
            ] },
        ] },
        obj! { "role" => "user", "content" => vec![
            obj! { "type" => "text", "text" => "and this one?" },
            image,
        ] },
    ];
    let body = json::parse(&build(&RequestParts {
        model: "llava",
        max_tokens: 256,
        system: &[],
        tools: &[],
        messages: &messages,
        thinking: Default::default(),
    }))
    .unwrap();
    let msgs = body.get("messages").unwrap().as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().filter_map(|m| m.str_field("role")).collect();
    assert_eq!(roles, ["assistant", "tool", "tool", "user", "user"]);
    assert_eq!(msgs[1].str_field("content"), Some("PNG image, 1x1 pixels"));
    let pdf_note = msgs[2].str_field("content").unwrap();
    assert!(
        pdf_note.starts_with("PDF document, 1 page\n[a document (application/pdf)")
            && pdf_note.contains("cannot be shown through this provider"),
        "{pdf_note}"
    );
    let parts = msgs[3].get("content").unwrap().as_array().unwrap();
    assert_eq!(parts[0].str_field("type"), Some("text"));
    assert_eq!(
        parts[1].get("image_url").unwrap().str_field("url"),
        Some("data:image/png;base64,iVBORw0KGgo=")
    );
    let own = msgs[4].get("content").unwrap().as_array().unwrap();
    assert_eq!(own[0].str_field("text"), Some("and this one?"));
    assert_eq!(own[1].str_field("type"), Some("image_url"));
}

/// The thinking blocks and the text an assembled message holds.
fn thinking_and_text(a: &Assembler) -> (Vec<String>, String) {
    let mut thinking = Vec::new();
    let mut text = String::new();
    for b in a.blocks() {
        match b {
            Block::Text(t) => text.push_str(t),
            Block::Other(v) if v.str_field("type") == Some("thinking") => {
                thinking.push(v.str_field("thinking").unwrap_or_default().to_string());
            }
            _ => {}
        }
    }
    (thinking, text)
}

#[test]
fn reasoning_deltas_become_thinking_never_answer_text() {
    for key in ["reasoning_content", "reasoning"] {
        let chunk = |field: &str, v: &str| {
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"{field}":{}}}}}]}}"#,
                json::Value::from(v).to_json()
            )
        };
        let (a, _) = run(&[
            &chunk(key, "The user wants "),
            &chunk(key, "a greeting."),
            &chunk("content", "Hello!"),
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let (thinking, text) = thinking_and_text(&a);
        assert_eq!(thinking, ["The user wants a greeting."], "{key}");
        assert_eq!(text, "Hello!", "{key}");
    }
}

#[test]
fn a_think_block_in_the_text_is_thinking_across_chunks() {
    let (a, _) = run(&[
        r#"{"choices":[{"index":0,"delta":{"content":"<thi"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"nk>\nplan: read it</th"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"ink>\n\nIt says hi."}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let (thinking, text) = thinking_and_text(&a);
    assert_eq!(thinking, ["\nplan: read it"]);
    assert_eq!(text, "It says hi.");
}

#[test]
fn thinking_then_a_tool_call_keeps_both_and_only_the_call_goes_back() {
    let (a, _) = run(&[
        r#"{"choices":[{"index":0,"delta":{"content":"<think>need the file"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"Read","arguments":"{\"file_path\":\"a\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    let blocks: Vec<Value> = a.blocks().map(Block::to_api).collect();
    assert_eq!(blocks[0].str_field("type"), Some("thinking"));
    assert_eq!(blocks[0].str_field("thinking"), Some("need the file"));
    assert_eq!(blocks[1].str_field("type"), Some("tool_use"));
    // Sent back, the thinking is not said as if the model had said it.
    let message = obj! { "role" => "assistant", "content" => blocks };
    let back = assistant(&message);
    assert_eq!(back.str_field("content"), Some(""));
    assert!(!back.to_json().contains("need the file"));
    assert!(back.get("tool_calls").is_some());
}

/// The chunk reader's fast path and the general parser give the same
/// events, byte for byte, for chunks it takes and chunks it leaves.
#[test]
fn fast_and_general_chunk_paths_agree() {
    let streams: [&[&str]; 5] = [
        &[
            r#"{"id":"c","model":"q","choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"q","choices":[{"index":0,"delta":{"content":"<thi"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"content":"nk>so \"a\" \u00e9 \ud83d\ude00"}}]}"#,
            r#"{"choices":[{"delta":{"content":"</think>\n\nThe answer\t"}}],"usage":null}"#,
            r#"{"choices":[{"delta":{"content":"is 4.","content":" is 5."}}]}"#,
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            "[DONE]",
        ],
        &[
            r#"{"id":"c","choices":[{"delta":{"reasoning_content":"Let me"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":" see","reasoning":" both"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":null,"content":"Done"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"k","function":{"name":"Read","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"after"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ],
        &[
            r#"{"id":"c","choices":[{"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"content":"bad \q escape"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lone \ud800 surrogate"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","con\u0074ent":"b"}}]}"#,
            r#"{"choices":[{"delta":{"content":7}}]}"#,
            r#"{"choices":[{"delta":{"content":"two"}},{"delta":{"content":"choices"}}]}"#,
            r#"{"choices":[{"delta":{"content":"t"}}],"timings":{"predicted_n":3}}"#,
            r#"{"choices":[{"delta":{"content":"u"}}],"error":{"message":"boom"}}"#,
            r#"{"choices":[{"delta":{"content":"unterminated"}}]"#,
            "[DONE]",
        ],
        &[
            r#"{"id":"c","choices":[{"delta":{"content":"   "}}]}"#,
            r#"{"choices":[{"delta":{"content":"  <think"}}]}"#,
            r#"{"choices":[{"delta":{"content":">"}}]}"#,
            r#"{"choices":[{"delta":{"content":"deep</thi"}}]}"#,
            r#"{"choices":[{"delta":{"content":"nk>"}}]}"#,
            r#"{"choices":[{"delta":{"content":"  "}}]}"#,
            r#"{"choices":[{"delta":{"content":"Yes <think> is a tag."}}]}"#,
            "[DONE]",
        ],
        &[
            r#"{"id":"c","choices":[{"delta":{"content":"cut"}}]}"#,
            r#"{"choices":[{"delta":{"content":"short"}}]}"#,
        ],
    ];
    // The fast path is taken, not just agreed with: most of these are its.
    let taken = streams
        .iter()
        .flat_map(|s| s.iter())
        .filter(|c| chunk::plain(c).is_some())
        .count();
    assert!(taken >= 15, "{taken}");
    for chunks in streams {
        let mut fast = Translator::default();
        let mut general = Translator {
            general_only: true,
            ..Translator::default()
        };
        for c in chunks {
            assert_eq!(fast.translate(c), general.translate(c), "{c}");
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fast.finish(&mut a, None, None);
        general.finish(&mut b, None, None);
        assert_eq!(a, b);
    }
}

/// Every one-byte change to a plain chunk (a byte removed, or replaced by
/// one that matters to JSON) reads the same through both paths, and
/// neither panics.
#[test]
fn mutated_chunks_read_the_same_through_both_paths() {
    let first = r#"{"id":"c","choices":[{"delta":{"role":"assistant","content":""}}]}"#;
    let samples = [
        r#"{"id":"c","object":"chat.completion.chunk","created":17,"choices":[{"index":0,"delta":{"content":"a \"b\" \u00e9"},"finish_reason":null}]}"#,
        r#"{"choices":[{"delta":{"reasoning_content":"x\ny","content":null}}],"usage":null}"#,
        r#"{"choices":[{"delta":{"reasoning":"-1.5e3"}}]}"#,
    ];
    let replacements = [
        None,
        Some(b'"'),
        Some(b'\\'),
        Some(b'{'),
        Some(b'}'),
        Some(b'['),
        Some(b']'),
        Some(b','),
        Some(b':'),
        Some(b'0'),
        Some(b'n'),
        Some(b' '),
        Some(b'\t'),
    ];
    let mut taken = 0;
    for sample in samples {
        for at in 0..sample.len() {
            for with in replacements {
                let mut bytes = sample.as_bytes().to_vec();
                match with {
                    None => {
                        bytes.remove(at);
                    }
                    Some(b) => bytes[at] = b,
                }
                let Ok(chunk) = String::from_utf8(bytes) else {
                    continue;
                };
                taken += usize::from(chunk::plain(&chunk).is_some());
                let mut fast = Translator::default();
                let mut general = Translator {
                    general_only: true,
                    ..Translator::default()
                };
                fast.translate(first);
                general.translate(first);
                assert_eq!(fast.translate(&chunk), general.translate(&chunk), "{chunk}");
            }
        }
    }
    // Many mutations (in a string's text, white space) stay plain chunks.
    assert!(taken > 200, "{taken}");
}
