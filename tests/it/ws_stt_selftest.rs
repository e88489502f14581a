//! The scripted speech-to-text WebSocket server of tests/it/support/ws_stt.rs,
//! driven by tungstenite's own client: each behavior does what it says.

use crate::support;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::ws_stt::{Behavior, WsStt, connect_tcp, results};
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::CloseFrame;
use tungstenite::{Error, HandshakeError, Message, WebSocket};

const QUERY: &str = "?encoding=linear16&sample_rate=16000&channels=1&interim_results=true";

fn connect(server: &WsStt, key: Option<&str>) -> Result<WebSocket<TcpStream>, Error> {
    let mut request = format!("{}{QUERY}&language=en", server.url())
        .into_client_request()
        .expect("request");
    if let Some(key) = key {
        let value = format!("Token {key}").parse().expect("header value");
        request.headers_mut().insert("authorization", value);
    }
    let stream = connect_tcp(server).expect("tcp connect");
    match tungstenite::client::client(request, stream) {
        Ok((ws, _response)) => Ok(ws),
        Err(HandshakeError::Failure(e)) => Err(e),
        Err(HandshakeError::Interrupted(_)) => panic!("handshake timed out"),
    }
}

/// How the server ended the stream.
#[derive(Debug)]
enum End {
    Close(Option<CloseFrame>),
    Error(Error),
}

/// Every text frame until the stream ends, and how it ended.
fn read_all(ws: &mut WebSocket<TcpStream>) -> (Vec<String>, End) {
    let mut texts = Vec::new();
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => texts.push(t.as_str().to_string()),
            Ok(Message::Close(frame)) => {
                // Completes the close handshake.
                while ws.read().is_ok() {}
                return (texts, End::Close(frame));
            }
            Ok(other) => panic!("unexpected frame {other:?}"),
            Err(e) => return (texts, End::Error(e)),
        }
    }
}

fn close_code(end: &End) -> Option<u16> {
    match end {
        End::Close(Some(frame)) => Some(frame.code.into()),
        _ => None,
    }
}

fn audio(n: usize) -> Message {
    Message::binary(vec![7u8; n])
}

fn close_stream() -> Message {
    Message::text(r#"{"type":"CloseStream"}"#)
}

#[test]
fn transcribe_sends_interims_then_a_final_metadata_and_close() {
    let server = WsStt::start(vec![Behavior::transcribe("one two three four", 3200)]);
    let mut ws = connect(&server, Some("sekrit")).expect("handshake");
    ws.send(Message::text(r#"{"type":"KeepAlive"}"#)).unwrap();
    for n in [3200, 3200, 3200] {
        ws.send(audio(n)).unwrap();
    }
    ws.send(close_stream()).unwrap();
    let (texts, end) = read_all(&mut ws);

    assert_eq!(texts.len(), 5, "{texts:#?}");
    assert_eq!(texts[0], results("one", false, false));
    assert_eq!(texts[1], results("one two", false, false));
    assert_eq!(texts[2], results("one two three", false, false));
    assert_eq!(texts[3], results("one two three four", true, true));
    assert!(texts[3].contains(r#""is_final":true,"speech_final":true"#));
    assert_eq!(
        texts[4],
        r#"{"type":"Metadata","request_id":"ws-stt-0","duration":0.3}"#
    );
    assert_eq!(close_code(&end), Some(1000), "{end:?}");

    let conns = server.wait_connections(1);
    let c = &conns[0];
    assert!(c.handshake_done && c.closed_stream && c.client_closed);
    assert_eq!(c.path(), "/v1/listen");
    assert_eq!(c.query("sample_rate").as_deref(), Some("16000"));
    assert_eq!(c.query("language").as_deref(), Some("en"));
    assert_eq!(c.authorization.as_deref(), Some("Token sekrit"));
    assert_eq!(c.audio_frames, vec![3200, 3200, 3200]);
    assert_eq!(c.audio.len(), 9600);
    assert_eq!(
        c.texts,
        vec![r#"{"type":"KeepAlive"}"#, r#"{"type":"CloseStream"}"#]
    );
    assert_eq!(c.sent, texts);
}

#[test]
fn no_data_sends_only_metadata_and_error_sends_error_then_1011() {
    let server = WsStt::start(vec![
        Behavior::NoData,
        Behavior::error("quota \"exceeded\""),
    ]);

    let mut ws = connect(&server, None).expect("handshake");
    ws.send(audio(16_000)).unwrap();
    ws.send(close_stream()).unwrap();
    let (texts, end) = read_all(&mut ws);
    assert_eq!(
        texts,
        vec![r#"{"type":"Metadata","request_id":"ws-stt-0","duration":0.5}"#]
    );
    assert_eq!(close_code(&end), Some(1000), "{end:?}");

    let mut ws = connect(&server, None).expect("handshake");
    let (texts, end) = read_all(&mut ws);
    assert_eq!(
        texts,
        vec![r#"{"type":"Error","description":"quota \"exceeded\""}"#]
    );
    assert_eq!(close_code(&end), Some(1011), "{end:?}");
    match &end {
        End::Close(Some(frame)) => assert_eq!(frame.reason.as_str(), "quota \"exceeded\""),
        other => panic!("{other:?}"),
    }

    let conns = server.wait_connections(2);
    assert_eq!(conns[0].audio.len(), 16_000);
    assert!(conns[0].closed_stream);
    assert!(conns[1].handshake_done && conns[1].audio.is_empty());
}

#[test]
fn drop_fails_the_handshake_and_reject_answers_with_the_status() {
    let server = WsStt::start(vec![
        Behavior::Drop,
        Behavior::reject(401, "bad key"),
        Behavior::close(1011, "overloaded"),
    ]);

    match connect(&server, None) {
        Err(Error::Http(r)) => panic!("Drop answered HTTP {}", r.status()),
        Err(_) => {}
        Ok(_) => panic!("Drop completed a handshake"),
    }
    match connect(&server, Some("wrong")) {
        Err(Error::Http(r)) => {
            assert_eq!(r.status().as_u16(), 401);
            assert_eq!(r.body().as_deref(), Some(&b"bad key"[..]));
        }
        Err(e) => panic!("Reject: {e}"),
        Ok(_) => panic!("Reject completed a handshake"),
    }
    let mut ws = connect(&server, None).expect("handshake");
    let (texts, end) = read_all(&mut ws);
    assert!(texts.is_empty());
    assert_eq!(close_code(&end), Some(1011), "{end:?}");

    let conns = server.wait_connections(3);
    assert!(!conns[0].handshake_done && conns[0].path_and_query.is_empty());
    assert!(!conns[1].handshake_done);
    assert_eq!(conns[1].authorization.as_deref(), Some("Token wrong"));
    assert!(
        conns[1]
            .path_and_query
            .starts_with("/v1/listen?encoding=linear16")
    );
    assert!(conns[2].handshake_done);
    // The last entry repeats.
    assert!(matches!(
        server.wait_connections(3)[2].behavior,
        Behavior::Close(1011, _)
    ));
}

#[test]
fn fail_after_text_sends_a_final_then_ends_without_close() {
    let server = WsStt::start(vec![Behavior::fail_after_text("hello there", 6400)]);
    let mut ws = connect(&server, None).expect("handshake");
    ws.send(audio(3200)).unwrap();
    ws.send(audio(3200)).unwrap();
    let (texts, end) = read_all(&mut ws);
    assert_eq!(texts, vec![results("hello there", true, false)]);
    match end {
        End::Error(Error::Protocol(_) | Error::Io(_) | Error::ConnectionClosed) => {}
        other => panic!("expected an abrupt end, got {other:?}"),
    }
    let c = &server.wait_connections(1)[0];
    assert_eq!(c.audio.len(), 6400);
    assert!(!c.closed_stream && !c.client_closed);
}

#[test]
fn late_delays_the_handshake() {
    let delay = Duration::from_millis(300);
    let server = WsStt::start(vec![Behavior::late(delay, Behavior::NoData)]);
    let mut ws = connect(&server, None).expect("handshake");
    ws.send(audio(320)).unwrap();
    ws.send(close_stream()).unwrap();
    let (texts, end) = read_all(&mut ws);
    assert_eq!(texts.len(), 1);
    assert!(texts[0].starts_with(r#"{"type":"Metadata""#));
    assert_eq!(close_code(&end), Some(1000));
    let c = &server.wait_connections(1)[0];
    let waited = c.handshake_delay().expect("handshake done");
    assert!(waited >= delay, "{waited:?}");
    assert_eq!(c.audio_frames, vec![320]);
}

#[test]
fn dropping_the_server_closes_the_port() {
    let server = WsStt::start(vec![Behavior::NoData]);
    let addr = server.addr();
    drop(server);
    // The listener may live on for a moment in a process another test is starting: a fork
    // copies every descriptor and close-on-exec drops them only at exec. So the port must
    // close soon, not at once.
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_ok() {
        assert!(
            Instant::now() < until,
            "the port stayed open after the drop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
