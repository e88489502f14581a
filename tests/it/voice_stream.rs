//! Voice over a streaming WebSocket, against the scripted server in
//! `support/ws_stt.rs`: each of the seed's buffering and failure rules
//! (late connection, early failures, silent no-data, failure after text)
//! and the distinct errors of everything that can go wrong before text.
//! The audio is a WAV played at a microphone's pace: quiet, a tone loud
//! enough to be speech, quiet again (the pause that ends it).

#![cfg(feature = "voice")]

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::scratch;
use support::ws_stt::{Behavior, WsStt};
use tern::harness::voice::{self, Config, Error, Event, Source};

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// quiet_ms of near-silence, speech_ms of a loud tone, quiet_ms again.
fn utterance(dir: &Path, quiet_ms: usize, speech_ms: usize) -> PathBuf {
    let mut samples = Vec::new();
    let mut x: u32 = 7;
    let mut quiet = |samples: &mut Vec<i16>, ms: usize| {
        for _ in 0..ms * 16 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            samples.push(((x >> 16) % 40) as i16 - 20);
        }
    };
    quiet(&mut samples, quiet_ms);
    for i in 0..speech_ms * 16 {
        let t = i as f32 / 16_000.0;
        let s = (t * 2.0 * std::f32::consts::PI * 220.0).sin() * 0.3
            + (t * 2.0 * std::f32::consts::PI * 660.0).sin() * 0.1;
        samples.push((s * 32767.0) as i16);
    }
    quiet(&mut samples, quiet_ms);
    let path = dir.join("utterance.wav");
    std::fs::write(&path, voice::encode_wav(&samples)).unwrap();
    path
}

fn pcm(path: &Path) -> Vec<u8> {
    let samples = voice::decode_wav(&std::fs::read(path).unwrap()).unwrap();
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn config(url: &str, file: &Path) -> Config {
    Config {
        backend: voice::Backend::WebSocket,
        endpoint: Some(url.to_string()),
        source: Source::File(file.to_path_buf()),
        silence: Duration::from_millis(500),
        key: Some("sekrit-key".into()),
        language: Some("en".into()),
        ..Config::default()
    }
}

/// Every event of one session, in order (bounded: a hang fails).
fn listen(config: Config) -> Vec<Event> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let l = voice::start(config);
        while let Some(ev) = l.next_blocking() {
            if tx.send(ev).is_err() {
                return;
            }
        }
    });
    let mut out = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(ev) => out.push(ev),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return out,
            Err(e) => panic!("voice session hung: {e:?}; events so far: {out:?}"),
        }
    }
}

fn final_text(events: &[Event]) -> Option<String> {
    events.iter().find_map(|e| match e {
        Event::Final(t, _) => Some(t.clone()),
        _ => None,
    })
}

fn failure(events: &[Event]) -> Option<Error> {
    events.iter().find_map(|e| match e {
        Event::Failed(e) => Some(e.clone()),
        _ => None,
    })
}

fn notes(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Note(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn audio_captured_before_a_late_connection_is_flushed_in_order() {
    let dir = scratch("voice-late");
    let file = utterance(&dir, 300, 1500);
    let server = WsStt::start(vec![Behavior::Late(
        Duration::from_millis(1200),
        Box::new(Behavior::Transcribe {
            words: words(&["list", "the", "files"]),
            step_bytes: 12_000,
        }),
    )]);
    let events = listen(config(&server.url(), &file));
    assert_eq!(
        final_text(&events).as_deref(),
        Some("list the files"),
        "{events:?}"
    );
    // Interim text came before the final, growing.
    let interims: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Interim(t) => Some(t),
            _ => None,
        })
        .collect();
    assert!(
        interims.iter().any(|t| t.as_str() == "list"),
        "{interims:?}"
    );
    let conns = server.wait_connections(1);
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    let late = c.handshake_at.unwrap() - c.accepted_at;
    assert!(late >= Duration::from_millis(1200), "{late:?}");
    // Everything captured went out, in order: the server's audio is the
    // file's own PCM from its first sample, past the whole tone.
    let source = pcm(&file);
    assert!(
        c.audio.len() >= (300 + 1500) * 32,
        "{} bytes",
        c.audio.len()
    );
    assert_eq!(&source[..c.audio.len()], &c.audio[..]);
    // More than the handshake's delay was queued, and went in bounded frames.
    assert!(c.audio.len() > 1200 * 32);
    assert!(
        c.audio_frames.iter().all(|&n| n <= voice::FRAME_BYTES),
        "{:?}",
        c.audio_frames
    );
    assert!(c.audio_frames.len() >= 5, "{:?}", c.audio_frames);
    assert!(c.closed_stream);
    // The stream's contract, and the key as the header says, never in the URL.
    for p in [
        "encoding=linear16",
        "sample_rate=16000",
        "channels=1",
        "interim_results=true",
        "language=en",
    ] {
        assert!(c.path_and_query.contains(p), "{}", c.path_and_query);
    }
    assert!(!c.path_and_query.contains("sekrit"));
    assert_eq!(c.authorization.as_deref(), Some("Token sekrit-key"));
}

#[test]
fn early_connection_failures_are_retried_a_bounded_number_of_times() {
    let dir = scratch("voice-retry");
    let file = utterance(&dir, 300, 1200);
    let server = WsStt::start(vec![
        Behavior::Drop,
        Behavior::Reject(503, "warming up".into()),
        Behavior::Transcribe {
            words: words(&["run", "the", "tests"]),
            step_bytes: 16_000,
        },
    ]);
    let events = listen(config(&server.url(), &file));
    assert_eq!(
        final_text(&events).as_deref(),
        Some("run the tests"),
        "{events:?}"
    );
    let conns = server.wait_connections(3);
    assert_eq!(conns.len(), 3);
    assert!(conns[..2].iter().all(|c| c.audio.is_empty()));
    // The queue was kept through both failures: the third connection got
    // the audio from its first sample.
    let source = pcm(&file);
    assert!(conns[2].audio.len() >= (300 + 1200) * 32);
    assert_eq!(&source[..conns[2].audio.len()], &conns[2].audio[..]);
    assert_eq!(notes(&events).len(), 2, "{events:?}");

    // A server that never comes up: 1 + RECONNECTS attempts, then a clear error.
    let server = WsStt::start(vec![Behavior::Drop]);
    let events = listen(config(&server.url(), &file));
    assert!(
        matches!(failure(&events), Some(Error::Unreachable(_))),
        "{events:?}"
    );
    assert_eq!(final_text(&events), None);
    let tries = 1 + voice::RECONNECTS as usize;
    assert_eq!(server.wait_connections(tries).len(), tries);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        server.connections().len(),
        tries,
        "no attempt after giving up"
    );
}

#[test]
fn speech_finalized_with_no_data_is_replayed_exactly_once() {
    let dir = scratch("voice-replay");
    let file = utterance(&dir, 300, 1200);
    let server = WsStt::start(vec![
        Behavior::NoData,
        Behavior::Transcribe {
            words: words(&["open", "the", "readme"]),
            step_bytes: 1_000_000,
        },
    ]);
    let events = listen(config(&server.url(), &file));
    assert_eq!(
        final_text(&events).as_deref(),
        Some("open the readme"),
        "{events:?}"
    );
    let conns = server.wait_connections(2);
    assert_eq!(conns.len(), 2);
    // The replay is the whole utterance, as first sent.
    assert!(!conns[0].audio.is_empty());
    assert_eq!(conns[1].audio, conns[0].audio);

    // No data twice: no third try, and the error says the server gave nothing.
    let server = WsStt::start(vec![Behavior::NoData]);
    let events = listen(config(&server.url(), &file));
    assert_eq!(failure(&events), Some(Error::NoText), "{events:?}");
    assert_eq!(server.wait_connections(2).len(), 2);
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(server.connections().len(), 2);

    // Silence with no data: nothing to replay, and "no speech" is the cause.
    let quiet = utterance(&dir, 1500, 0);
    let server = WsStt::start(vec![Behavior::NoData]);
    let mut c = config(&server.url(), &quiet);
    c.wait_for_speech = Duration::from_secs(2);
    let events = listen(c);
    assert_eq!(failure(&events), Some(Error::NoSpeech), "{events:?}");
    assert_eq!(server.wait_connections(1).len(), 1);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(server.connections().len(), 1);
}

#[test]
fn a_failure_after_text_keeps_the_text_and_sends_nothing_again() {
    let dir = scratch("voice-salvage");
    let file = utterance(&dir, 300, 2000);
    let server = WsStt::start(vec![Behavior::FailAfterText {
        words: words(&["fix", "the", "build"]),
        after_bytes: 20_000,
    }]);
    let events = listen(config(&server.url(), &file));
    assert_eq!(
        final_text(&events).as_deref(),
        Some("fix the build"),
        "{events:?}"
    );
    assert!(
        notes(&events)
            .iter()
            .any(|n| n.contains("keeping the text")),
        "{events:?}"
    );
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(server.connections().len(), 1, "no resend after text");
}

#[test]
fn keepalive_goes_out_while_the_recorder_is_silent() {
    // A recorder (a real subprocess) that says something, then stalls.
    let dir = scratch("voice-keepalive");
    let file = utterance(&dir, 100, 800);
    let raw = dir.join("speech.raw");
    std::fs::write(&raw, pcm(&file)).unwrap();
    let server = WsStt::start(vec![Behavior::Transcribe {
        words: words(&["hello"]),
        step_bytes: 1_000_000,
    }]);
    let mut c = config(&server.url(), &file);
    c.source = Source::Command(Some(vec![
        "sh".into(),
        "-c".into(),
        format!("cat '{}'; sleep 5", raw.display()),
    ]));
    c.silence = Duration::from_secs(8);
    c.path = std::env::var_os("PATH");
    let events = listen(c);
    assert_eq!(final_text(&events).as_deref(), Some("hello"), "{events:?}");
    let conns = server.wait_connections(1);
    let texts = &conns[0].texts;
    let keepalive = texts.iter().position(|t| t.contains("KeepAlive"));
    let close = texts.iter().position(|t| t.contains("CloseStream"));
    assert!(keepalive.is_some() && keepalive < close, "{texts:?}");
}

#[test]
fn each_cause_of_failure_has_its_own_error() {
    let dir = scratch("voice-errors");
    let file = utterance(&dir, 200, 800);
    let mut seen: Vec<String> = Vec::new();
    let mut expect = |events: Vec<Event>, want: fn(&Error) -> bool| {
        let e = failure(&events).unwrap_or_else(|| panic!("no failure in {events:?}"));
        assert!(want(&e), "{e:?}");
        let said = e.to_string();
        assert!(!seen.contains(&said), "{said} twice");
        assert!(!said.contains("sekrit"), "{said}");
        seen.push(said);
    };

    // The key refused: said once, not retried.
    let server = WsStt::start(vec![Behavior::Reject(401, "bad key".into())]);
    expect(
        listen(config(&server.url(), &file)),
        |e| matches!(e, Error::Auth(m) if m.contains("401")),
    );
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(server.connections().len(), 1);

    // The server's own error message.
    let server = WsStt::start(vec![Behavior::Error("model not loaded".into())]);
    expect(
        listen(config(&server.url(), &file)),
        |e| matches!(e, Error::Server(m) if m.contains("model not loaded")),
    );

    // Nothing listening.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/v1/listen", free.local_addr().unwrap());
    drop(free);
    expect(listen(config(&url, &file)), |e| {
        matches!(e, Error::Unreachable(_))
    });

    let server = WsStt::start(vec![Behavior::Transcribe {
        words: words(&["x"]),
        step_bytes: 1,
    }]);
    let on = |source: Source| {
        let mut c = config(&server.url(), &file);
        c.source = source;
        c.path = std::env::var_os("PATH");
        listen(c)
    };
    // No recorder at all.
    expect(
        on(Source::Command(Some(vec!["/nonexistent/arecord".into()]))),
        |e| matches!(e, Error::NoRecorder(_)),
    );
    // A recorder that finds no device, and one that may not open it (what arecord says).
    let device =
        "echo 'arecord: main:831: audio open error: No such file or directory' >&2; exit 1";
    expect(
        on(Source::Command(Some(vec![
            "sh".into(),
            "-c".into(),
            device.into(),
        ]))),
        |e| matches!(e, Error::NoDevice(_)),
    );
    let denied = "echo 'arecord: main:831: audio open error: Permission denied' >&2; exit 1";
    expect(
        on(Source::Command(Some(vec![
            "sh".into(),
            "-c".into(),
            denied.into(),
        ]))),
        |e| matches!(e, Error::Permission(_)),
    );
    // A file that is not a WAV, and a FIFO where the file was expected.
    let mp3 = dir.join("speech.mp3");
    std::fs::write(&mp3, b"ID3\x04\0\0\0\0\0\0 not a wav").unwrap();
    expect(on(Source::File(mp3)), |e| matches!(e, Error::Format(_)));
    let fifo = dir.join("fifo.wav");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let events = on(Source::File(fifo));
    assert!(
        matches!(failure(&events), Some(Error::Format(ref m)) if m.contains("not a regular file")),
        "{events:?}"
    );
    // No speech, and no endpoint.
    let quiet = utterance(&dir, 800, 0);
    let mut c = config(&server.url(), &quiet);
    c.wait_for_speech = Duration::from_secs(1);
    c.backend = voice::Backend::Http;
    expect(listen(c), |e| *e == Error::NoSpeech);
    let mut c = config(&server.url(), &file);
    c.endpoint = None;
    expect(listen(c), |e| *e == Error::NotConfigured);
}

/// In the TUI: interim text is written into the composer as it comes
/// (the status line says it is interim), the final replaces it, nothing
/// is sent before Enter; Esc while listening gives the composer back as
/// it was.
#[cfg(feature = "tui")]
#[test]
fn the_tui_shows_interim_text_in_the_composer_and_esc_gives_it_back() {
    use support::standin::{self, StandIn};
    use support::tmux::{Tmux, unavailable};
    if let Some(why) = unavailable() {
        if support::runner().is_some() {
            return support::skip_emulated("tui voice", why);
        }
        return support::skip("tui voice", why);
    }
    let dir = scratch("voice-tui-interim");
    let file = utterance(&dir, 300, 3000);
    let server = WsStt::start(vec![
        Behavior::Transcribe {
            words: words(&["alpha", "bravo", "charlie", "delta", "echo"]),
            step_bytes: 20_000,
        },
        // The second session is cancelled before any text.
        Behavior::Late(Duration::from_secs(20), Box::new(Behavior::NoData)),
    ]);
    let api = StandIn::start(vec![standin::text_reply("Noted.")]);
    let env = format!(
        "TERN_VOICE_ENDPOINT={} TERN_VOICE_SILENCE_MS=500 TERN_VOICE_SOURCE=file:{}",
        server.url(),
        file.display()
    );
    let tmux = Tmux::start("voice-interim", &dir, &api, &env, "", (120, 30));
    tmux.wait_for("shift+tab: mode", 1);
    tmux.keys(&["C-Space"]);
    let interim = tmux.wait_until("interim text in the composer", |s| {
        s.contains("(interim text)") && s.contains("alpha bravo")
    });
    assert!(!interim.contains("echo"), "{interim}");
    let done = tmux.wait_until("the final text", |s| {
        s.contains("alpha bravo charlie delta echo") && !s.contains("● ")
    });
    assert!(!done.contains("(interim text)"), "{done}");
    assert_eq!(api.requests().len(), 0);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Noted.", 1);
    assert!(
        api.requests()[0]
            .body
            .contains("alpha bravo charlie delta echo")
    );

    // Listening again after typing: Esc cancels and the typed text stays.
    tmux.type_text("keep me");
    tmux.keys(&["C-Space"]);
    tmux.wait_until("listening", |s| s.contains("● "));
    tmux.keys(&["Escape"]);
    let after = tmux.wait_for("(voice cancelled)", 1);
    assert!(after.contains("keep me"), "{after}");
    assert!(!after.contains("● "), "{after}");
    assert_eq!(api.requests().len(), 1);
}
