//! The SSE parser and message assembler must give the same result however
//! the bytes are cut: at every single split point of recorded streams, one
//! byte at a time, and at many random multi-way splits.

use tern::harness::{Assembler, StreamError};
use tern::harness::{Flow, SseParser};

const FIXTURES: &[(&str, &[u8])] = &[
    ("tool_use", include_bytes!("../fixtures/tool_use.sse")),
    (
        "crlf_multiline",
        include_bytes!("../fixtures/crlf_multiline.sse"),
    ),
    (
        "error_midstream",
        include_bytes!("../fixtures/error_midstream.sse"),
    ),
];

#[derive(Debug, PartialEq)]
struct Parsed {
    events: Vec<(String, String)>,
    /// The assembled message, or the stream error, as JSON text.
    outcome: String,
}

fn parse(chunks: &[&[u8]]) -> Parsed {
    let mut parser = SseParser::default();
    let mut asm = Assembler::new();
    let mut events = Vec::new();
    let mut error: Option<StreamError> = None;
    for chunk in chunks {
        parser
            .feed(chunk, &mut |e| {
                events.push((e.event.to_string(), e.data.to_string()));
                if error.is_none()
                    && let Err(err) = asm.feed(e.event, e.data)
                {
                    error = Some(err);
                }
                Flow::Continue
            })
            .unwrap();
    }
    let outcome = match error {
        Some(e) => format!("error: {e}"),
        None => asm.message().to_json(),
    };
    Parsed { events, outcome }
}

#[test]
fn every_single_split_point_gives_identical_events() {
    for (name, bytes) in FIXTURES {
        let whole = parse(&[bytes]);
        assert!(
            whole.events.len() >= 4,
            "{name}: fixture parsed to too few events"
        );
        for cut in 0..=bytes.len() {
            let split = parse(&[&bytes[..cut], &bytes[cut..]]);
            assert_eq!(split, whole, "{name}: differs when cut at byte {cut}");
        }
    }
}

#[test]
fn one_byte_chunks_give_identical_events() {
    for (name, bytes) in FIXTURES {
        let whole = parse(&[bytes]);
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse(&singles), whole, "{name}");
    }
}

#[test]
fn random_multi_way_splits_give_identical_events() {
    let mut rng: u64 = 0x5eed;
    for (name, bytes) in FIXTURES {
        let whole = parse(&[bytes]);
        for round in 0..500 {
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut rest: &[u8] = bytes;
            while !rest.is_empty() {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let n = 1 + (rng >> 33) as usize % 64;
                let (a, b) = rest.split_at(n.min(rest.len()));
                chunks.push(a);
                rest = b;
            }
            assert_eq!(parse(&chunks), whole, "{name}: round {round}");
        }
    }
}

#[test]
fn fixtures_assemble_to_the_expected_messages() {
    let tool = parse(&[FIXTURES[0].1]);
    let msg = tern::json::parse(&tool.outcome).unwrap();
    let content = msg.get("content").unwrap().as_array().unwrap();
    assert_eq!(content.len(), 4);
    assert_eq!(
        content[0].str_field("signature"),
        Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds=")
    );
    assert!(
        content[0]
            .str_field("thinking")
            .unwrap()
            .ends_with("(ünïcödé ✓ 🚀).")
    );
    assert_eq!(
        content[1].str_field("text"),
        Some("I'll look for the port setting and the tests — both at once. 日本語も大丈夫。")
    );
    assert_eq!(
        content[2].get("input").unwrap().to_json(),
        r#"{"pattern":"8080","output_mode":"content","glob":"*.{ts,json}","-n":true}"#
    );
    assert_eq!(
        content[3].get("input").unwrap().str_field("command"),
        Some("grep -rn \"port\" test/ | head\n")
    );
    assert_eq!(
        content[3].get("input").unwrap().str_field("description"),
        Some("Find port in tests — quickly")
    );
    assert_eq!(
        msg.get("usage")
            .unwrap()
            .get("cache_read_input_tokens")
            .unwrap()
            .as_i64(),
        Some(11842)
    );

    let crlf = tern::json::parse(&parse(&[FIXTURES[1].1]).outcome).unwrap();
    let text = crlf.get("content").unwrap().as_array().unwrap()[0]
        .str_field("text")
        .unwrap()
        .to_string();
    assert_eq!(text, "Multi-line data, CRLF, and é — done.");

    assert_eq!(
        parse(&[FIXTURES[2].1]).outcome,
        "error: overloaded_error: Overloaded"
    );
}
